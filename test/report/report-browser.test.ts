/**
 * behaviour.html in a real browser: headless Chromium (Debian's chromium) driven by
 * playwright-core. The page is opened from file:// with every request that is not for the page
 * itself refused and recorded, so a page that fetched anything (a CDN, a font) fails here. Checks
 * that nothing is logged as an error, that every chart is there and drawn inside its axes (the
 * y-axis ends on a labelled tick at or beyond the data), that the record's figures read as the
 * console writes them (core/units.ts formatValue), that a fact changed from the previous driver,
 * a metric drifted from the records before and a metric changed beyond its noise from the previous
 * driver (with the "Changed between drivers" section) are highlighted, that picking another column
 * redraws the charts from that column's record and another column can be drawn over it, that
 * at 420 px the page does not scroll sideways and every key metric's value is in view, that
 * names wrap only between the parts of an identifier, that at 1400 px and in print no table is
 * cut off, that null facts' reasons are text a reader sees, that a memory series with nothing to
 * chart is said in words, and saves screenshots (1400 and 420 px wide, printed) to
 * test-artifacts/report/. The claim pages (claims/index.html and a claim's page, of the fixture and
 * the committed records): offline, linked from behaviour.html and back, and at 1400 and 420 px
 * nothing cut off or out of view.
 */
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formatValue } from '../../core/units.ts';
import type { BehaviourRecord } from '../../behaviour/behaviour-record.ts';
import { HTML_FILE, renderReport, reportFiles, reportPaths } from '../../report/write-report.ts';
import { loadRecords } from '../../report/load.ts';
import { columnsOf, shownRecord } from '../../report/behaviour-table.ts';
import { commandsAvailable, findOnPath, repoRoot, tempDir } from '../helpers.ts';
import { seriesText } from '../../behaviour/diff.ts';
import { h200Records, variant, writeRecords } from '../report-fixture.ts';

const haveChromium = commandsAvailable('the report page in headless Chromium (test/report/report-browser.test.ts)', {
  chromium: 'chromium',
});
const artifacts = path.join(repoRoot, 'test-artifacts', 'report');

interface Opened {
  page: Page;
  errors: string[];
  requests: string[];
}

describe.runIf(haveChromium)('behaviour.html in headless Chromium', () => {
  let browser: Browser;
  let dir: string;
  let first: BehaviourRecord;
  let second: BehaviourRecord;
  let wsl: BehaviourRecord;
  let slower: BehaviourRecord;
  /** A folder of two drivers of one environment and GPU, the newer with every pinned copy of 256 MiB or more 12 % slower. */
  let twoDrivers: string;
  let slowedSeries: string[];
  /** A folder of one record with memory series that have nothing to chart and a negative "allocated past free VRAM". */
  let edgeCases: string;

  beforeAll(async () => {
    [first, second] = await h200Records();
    // A second column with other numbers, and a record of the first column that disagrees on a fact.
    wsl = variant(first, 'a1a1a1a1a1a1a1a1', (record) => {
      record.key = { ...record.key, environment: 'wsl2', driver: '581.57', os: 'Ubuntu 24.04 LTS', container: null };
      for (const metric of record.metrics)
        if (metric.name === 'transfer-bandwidth.bandwidth_gbps' && metric.value !== null)
          metric.value = Math.round(metric.value * 0.71 * 1000) / 1000;
    });
    const conflicting = variant(second, 'b2b2b2b2b2b2b2b2', (record) => {
      record.observed.date = '2026-11-28T10:00:00.000Z';
      record.facts['pinned-release.released'] = { value: 'on-exit' };
    });
    // A newer driver of the first column's key where pinned-release.released changed, then a run of
    // it with the same facts and every pinned bandwidth halved (a drift).
    const newer = variant(first, 'c3c3c3c3c3c3c3c3', (record) => {
      record.key = { ...record.key, driver: '590.10' };
      record.facts['pinned-release.released'] = { value: 'on-exit' };
    });
    slower = variant(newer, 'd4d4d4d4d4d4d4d4', (record) => {
      record.observed.date = '2026-12-02T10:00:00.000Z';
      for (const metric of record.metrics)
        if (metric.name === 'transfer-bandwidth.bandwidth_gbps' && metric.attrs?.memory === 'pinned' && metric.value !== null)
          metric.value /= 2;
    });
    dir = tempDir('cm-report-page-');
    writeRecords(path.join(dir, 'records'), [first, second, wsl, conflicting, newer, slower]);
    const recordsDir = path.join(dir, 'records');
    // Every file of the report, the claim pages (claims/) with it.
    for (const [file, text] of reportFiles(renderReport(loadRecords(recordsDir), reportPaths(recordsDir, dir)))) {
      mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
      writeFileSync(path.join(dir, file), text);
    }
    const slowed = (record: BehaviourRecord) =>
      record.metrics.filter(
        (metric) =>
          metric.name === 'transfer-bandwidth.bandwidth_gbps' &&
          metric.attrs?.memory === 'pinned' &&
          Number(metric.attrs.size_bytes) >= 256 * 1024 * 1024 &&
          metric.value !== null,
      );
    const newerDriver = variant(first, 'e5e5e5e5e5e5e5e5', (record) => {
      record.key = { ...record.key, driver: '590.10' };
      record.observed.date = '2026-11-30T17:00:00.000Z';
      for (const metric of slowed(record)) metric.value = metric.value! * 0.88;
    });
    slowedSeries = slowed(first).map((metric) => seriesText(metric.name, metric.attrs));
    twoDrivers = tempDir('cm-report-drivers-');
    writeRecords(path.join(twoDrivers, 'records'), [first, newerDriver]);
    const twoRecords = path.join(twoDrivers, 'records');
    writeFileSync(path.join(twoDrivers, HTML_FILE), renderReport(loadRecords(twoRecords), reportPaths(twoRecords, twoDrivers)).html);
    // A record with nothing to chart in two memory series (one phase only; no source changed) and a
    // fill that stopped under free VRAM (a negative "allocated past free VRAM").
    const edge = variant(first, 'f7f7f7f7f7f7f7f7', (record) => {
      record.samples = record.samples.filter(
        (sample) => !(sample.probe === 'pinned-release' && sample.attrs?.api === 'runtime' && sample.phase !== 'baseline'),
      );
      const base = record.samples.find((sample) => sample.probe === 'pinned-release' && sample.attrs?.api === 'driver')!;
      for (const sample of record.samples)
        if (sample.probe === 'pinned-release' && sample.attrs?.api === 'driver') sample.readings = { ...base.readings };
      record.metrics.push({ name: 'sysmem-fallback.past_free_vram_bytes', value: -145262510080, unit: 'bytes', attrs: { api: 'runtime' } });
    });
    edgeCases = tempDir('cm-report-edge-');
    writeRecords(path.join(edgeCases, 'records'), [edge]);
    const edgeRecords = path.join(edgeCases, 'records');
    writeFileSync(path.join(edgeCases, HTML_FILE), renderReport(loadRecords(edgeRecords), reportPaths(edgeRecords, edgeCases)).html);
    browser = await chromium.launch({ executablePath: findOnPath('chromium'), headless: true, args: ['--no-sandbox'] });
  });

  afterAll(async () => {
    await browser?.close();
  });

  /** The page at `file`, every request aborted and listed but for the page and the `allowed` files beside it. */
  async function open(file: string, width = 1400, allowed: string[] = []): Promise<Opened> {
    const page = await browser.newPage({ viewport: { width, height: 1000 } });
    // What the checks wait for is there at once on a free machine; a full-page screenshot of a
    // long page took over 5 s on two cores shared with a CI run, so the limit is generous.
    page.setDefaultTimeout(60_000);
    const errors: string[] = [];
    const requests: string[] = [];
    page.on('console', (message) => {
      if (message.type() === 'error' || message.type() === 'warning') errors.push(`${message.type()}: ${message.text()}`);
    });
    page.on('pageerror', (e) => errors.push(`page error: ${e.message}`));
    const url = `file://${file}`;
    await page.route('**/*', (route) => {
      const requested = route.request().url();
      if (requested === url || allowed.some((name) => requested === `file://${path.join(path.dirname(file), name)}`))
        return route.continue();
      requests.push(route.request().url());
      return route.abort();
    });
    await page.goto(url);
    return { page, errors, requests };
  }

  /** Every chart's id, and how many drawn marks (lines, markers, bars with an area) it has. */
  async function charts(page: Page): Promise<{ id: string; marks: number }[]> {
    return page.$$eval('svg.chart', (svgs) =>
      svgs.map((svg) => {
        const marks = Array.from(svg.querySelectorAll('g.marks > *')).filter((mark) => {
          const box = (mark as SVGGraphicsElement).getBBox();
          return box.width > 0 || box.height > 0;
        });
        return { id: svg.getAttribute('data-chart') ?? '', marks: marks.length };
      }),
    );
  }

  /** Charts whose marks leave the plot area, and the y-axis range (lo, hi) and top tick label of each. */
  async function axes(page: Page): Promise<{ id: string; lo: number; hi: number; top: number; outside: string[] }[]> {
    return page.$$eval('svg.chart', (svgs) =>
      svgs.map((svg) => {
        const [lo, hi] = (svg.getAttribute('data-y-range') ?? '').split(' ').map(Number) as [number, number];
        const [left, top, right, bottom] = (svg.getAttribute('data-plot') ?? '').split(' ').map(Number) as [number, number, number, number];
        const labels = Array.from(svg.querySelectorAll('text.y-tick')).map((tick) => Number(tick.textContent));
        // Marks (bars, markers, lines) must lie in the plot area, give or take a marker's radius.
        const outside = Array.from(svg.querySelectorAll('g.marks > rect, g.marks > circle, g.marks > path')).flatMap((mark) => {
          const bounds = (mark as SVGGraphicsElement).getBBox();
          const slack = 6;
          return bounds.y < top - slack ||
            bounds.y + bounds.height > bottom + slack ||
            bounds.x < left - slack ||
            bounds.x + bounds.width > right + slack
            ? [`${mark.tagName} ${JSON.stringify([bounds.x, bounds.y, bounds.width, bounds.height])}`]
            : [];
        });
        return { id: svg.getAttribute('data-chart') ?? '', lo, hi, top: Math.max(...labels), outside };
      }),
    );
  }

  /**
   * Where the page's names wrap in the middle of an identifier: per fact name (the row's first
   * text) and key-metric name, each line break whose character before it is not a separator
   * (fact names: _ or .; metric names, which go on in words: also - , and spaces), as "befo|re".
   */
  async function midWordBreaks(page: Page): Promise<string[]> {
    return page.evaluate(() => {
      const textNodes = (node: Node): Text[] => {
        if (node.nodeType === Node.TEXT_NODE) return [node as Text];
        const out: Text[] = [];
        const walk = document.createTreeWalker(node, NodeFilter.SHOW_TEXT);
        while (walk.nextNode()) out.push(walk.currentNode as Text);
        return out;
      };
      const problems: string[] = [];
      const check = (node: Node, allowed: RegExp) => {
        // Each character's line (the top of its box); a new line starts where the top moves down.
        const chars: { c: string; top: number }[] = [];
        for (const textNode of textNodes(node))
          for (let i = 0; i < textNode.data.length; i++) {
            const range = document.createRange();
            range.setStart(textNode, i);
            range.setEnd(textNode, i + 1);
            const box = range.getClientRects()[0];
            if (box) chars.push({ c: textNode.data[i]!, top: box.top });
          }
        for (let i = 1; i < chars.length; i++)
          if (chars[i]!.top > chars[i - 1]!.top + 2 && !allowed.test(chars[i - 1]!.c) && !/\s/.test(chars[i]!.c)) {
            const text = chars.map((char) => char.c).join('');
            problems.push(`${text.slice(0, i)}|${text.slice(i)}`);
          }
      };
      for (const th of Array.from(document.querySelectorAll('table.facts tr[data-fact] > th:first-child'))) check(th.firstChild!, /[_.]/);
      for (const th of Array.from(document.querySelectorAll('table.metrics tr[data-metric] > th'))) check(th, /[_.,\s-]/);
      return problems;
    });
  }

  /** The boxes of tables (.scroll) whose table is wider than the box: a part of it cut off, reached only by scrolling it. */
  async function clippedTables(page: Page, selector = '.scroll'): Promise<string[]> {
    return page.$$eval(selector, (boxes) =>
      boxes
        .filter((box) => box.scrollWidth > box.clientWidth + 1)
        .map(
          (box) =>
            `${box.querySelector('table')?.className}: ${box.scrollWidth} > ${box.clientWidth}: ${(box.textContent ?? '').slice(0, 60)}`,
        ),
    );
  }

  /** Every null fact's reason (its title) as text a reader sees: the numbered note its cell points to. */
  async function nullReasonsShown(page: Page): Promise<{ reasons: number; hidden: string[] }> {
    const reasons = await page.$$eval('table.facts td a[title]', (as) =>
      as.map((link) => ({
        reason: link.getAttribute('title')!,
        note: link.parentElement!.querySelector('a.note-ref')?.getAttribute('href') ?? null,
      })),
    );
    const hidden: string[] = [];
    for (const { reason, note } of reasons) {
      const shown = page.getByText(reason, { exact: false }).filter({ visible: true });
      if ((await shown.count()) === 0) hidden.push(`${reason}: not shown`);
      else if (!note || !((await page.locator(note).textContent()) ?? '').includes(reason))
        hidden.push(`${reason}: the cell points to no note of it`);
    }
    return { reasons: reasons.length, hidden };
  }

  it('opens offline with no console error, every chart drawn inside its axes, the figures formatted as the console does; saves a screenshot', async () => {
    const { page, errors, requests } = await open(path.join(dir, HTML_FILE));
    try {
      expect(errors).toEqual([]);
      expect(requests).toEqual([]);
      const drawn = await charts(page);
      // The newest record of the first column (linux): its memory series, and one chart each for bandwidth, latency, events, the ceiling; two comparing the columns.
      const memory = drawn.filter((chart) => chart.id.startsWith('memory:'));
      expect(memory.map((chart) => chart.id.split(' · ')[0])).toEqual(
        expect.arrayContaining(['memory:pinned-vram', 'memory:pinned-release', 'memory:multi-process-pinned']),
      );
      expect(drawn.map((chart) => chart.id).filter((id) => !id.startsWith('memory:'))).toEqual([
        'compare-sync-latency',
        'compare-bandwidth',
        'bandwidth',
        'sync-latency',
        'event-timing',
        'pinned-ceiling',
      ]);
      for (const chart of drawn) expect(chart.marks, `chart ${chart.id} has nothing drawn`).toBeGreaterThan(0);

      // Every mark inside its chart; the bandwidth axes end on a labelled tick at or above the largest value (about 55 GB/s).
      const ax = await axes(page);
      for (const axis of ax) expect(axis.outside, `chart ${axis.id}: marks outside the plot`).toEqual([]);
      const bwMax = Math.max(
        ...second.metrics.filter((metric) => metric.name === 'transfer-bandwidth.bandwidth_gbps').map((metric) => metric.value ?? 0),
      );
      expect(bwMax).toBeGreaterThan(55);
      for (const id of ['bandwidth', 'compare-bandwidth']) {
        const axis = ax.find((candidate) => candidate.id === id)!;
        expect(axis.top, `${id}: top tick label`).toBeGreaterThanOrEqual(bwMax);
        expect(axis.hi).toBe(axis.top);
      }

      // Figures of the column's newest record (second), as the console writes them (exact on hover): a bandwidth, a sync latency, a memory reading; a fact value.
      const bw = second.metrics.find(
        (metric) =>
          metric.name === 'transfer-bandwidth.bandwidth_gbps' &&
          metric.attrs?.direction === 'h2d' &&
          metric.attrs.memory === 'pinned' &&
          metric.attrs.size_bytes === 1073741824,
      )!;
      const details = page.locator('#column-details');
      const shown = formatValue(bw.value, 'GB/s');
      expect(shown).toMatch(/^5\d\.\d GB\/s$/); // three significant digits, as the console writes it
      await expect(details.getByRole('cell', { name: shown, exact: true }).first().isVisible()).resolves.toBe(true);
      await expect(details.getByTitle(`${bw.value} GB/s`).first().isVisible()).resolves.toBe(true);
      const p50 = second.metrics.find((metric) => metric.name === 'sync-latency.p50_us')!;
      await expect(details.getByRole('cell', { name: formatValue(p50.value, 'us'), exact: true }).isVisible()).resolves.toBe(true);
      // (the charts show the largest size pinned: the one the facts are decided on)
      const vramSamples = second.samples.filter(
        (sample) => sample.probe === 'pinned-vram' && sample.attrs?.kind === 'pinned' && sample.attrs.api === 'driver',
      );
      const largest = Math.max(...vramSamples.map((sample) => Number(sample.attrs!.size_bytes)));
      const touch = vramSamples.find((sample) => sample.phase === 'after-touch' && sample.attrs!.size_bytes === largest)!;
      await expect(
        details
          .getByRole('cell', { name: formatValue(touch.readings.subject_rss_bytes!, 'bytes'), exact: true })
          .first()
          .isVisible(),
      ).resolves.toBe(true);
      // No table cell of the page shows a raw figure: a long integer or a number with more than three decimals, without its unit.
      const raw = await page.$$eval('td', (tds) =>
        tds.map((td) => td.textContent ?? '').filter((cellText) => /^-?(\d{7,}|\d[\d,]{8,}|\d*\.\d{4,})$/.test(cellText.trim())),
      );
      expect(raw).toEqual([]);
      await expect(page.locator('table.facts tr[data-fact="sysinfo.memory_total_bytes"] td').nth(1).textContent()).resolves.toBe(
        formatValue(Number(second.sysinfo.memory_total_bytes), 'bytes'),
      );
      const vram = String(second.facts['pinned-vram.counts_as_vram']!.value);
      const row = page.locator('table.facts tr[data-fact="pinned-vram.counts_as_vram"]');
      await expect(row.locator('td').nth(1).textContent()).resolves.toBe(vram);
      // The conflict: the first column's records disagree on pinned-release.released.
      const released = page.locator('table.facts tr[data-fact="pinned-release.released"]');
      await expect(released.locator('td').nth(1).textContent()).resolves.toBe(
        `⚠ conflict: on-exit ≠ ${second.facts['pinned-release.released']!.value}`,
      );
      // The change between drivers (580.159.04 on-free → 590.10 on-exit), highlighted; the unchanged wsl2 column not.
      const changed = released.locator('td').nth(2);
      await expect(changed.getAttribute('class')).resolves.toBe('changed');
      await expect(changed.textContent()).resolves.toBe('on-exitwas on-free in #1');
      await expect(changed.evaluate((td) => getComputedStyle(td).backgroundColor)).resolves.not.toBe(
        await released
          .locator('td')
          .nth(3)
          .evaluate((td) => getComputedStyle(td).backgroundColor),
      );
      await expect(page.locator('table.facts td.changed').count()).resolves.toBe(1);
      // The drift: the 590.10 column's newest record has the pinned bandwidth halved against the record before it.
      const drifted = page.locator('table.metrics tr[data-metric="transfer-bandwidth.bandwidth_gbps: H2D pinned"] td').nth(2);
      await expect(drifted.getAttribute('class')).resolves.toBe('drifted');
      const before = first.metrics.find(
        (metric) =>
          metric.name === bw.name &&
          metric.attrs?.direction === 'h2d' &&
          metric.attrs.memory === 'pinned' &&
          metric.attrs.size_bytes === 1073741824,
      )!.value!;
      await expect(drifted.textContent()).resolves.toBe(`⚠ ${formatValue(before / 2, 'GB/s')} (1 GiB)was ${formatValue(before, 'GB/s')}`);
      await expect(page.locator('p.drift-head').textContent()).resolves.toBe(
        `#2 linux · NVIDIA H200 · 590.10 · Ubuntu 24.04.3 LTS · in docker: 2026-12-02 d4d4d4d4 against 2026-11-29 c3c3c3c3: 8 metric series beyond their noise`,
      );
      await expect(page.locator('table.drift tbody tr').count()).resolves.toBe(8);
      await expect(page.locator('#summary').textContent()).resolves.toBe(
        '6 records in 3 columns; environments: linux, wsl2; driver versions: 580.159.04, 590.10, 581.57.',
      );

      mkdirSync(artifacts, { recursive: true });
      await page.screenshot({ path: path.join(artifacts, 'behaviour-1400.png'), fullPage: true });
    } finally {
      await page.close();
    }
  });

  it('a metric beyond its noise against the previous driver: its cell highlighted with the value there, and listed under Changed between drivers', async () => {
    const { page, errors } = await open(path.join(twoDrivers, HTML_FILE));
    try {
      expect(errors).toEqual([]);
      const bwRow = page.locator('table.metrics tr[data-metric="transfer-bandwidth.bandwidth_gbps: H2D pinned"] td');
      const h2d = first.metrics.find(
        (metric) =>
          metric.name === 'transfer-bandwidth.bandwidth_gbps' &&
          metric.attrs?.direction === 'h2d' &&
          metric.attrs.memory === 'pinned' &&
          metric.attrs.size_bytes === 1073741824,
      )!.value!;
      // td 0 is the claims; then #1 (580.159.04), #2 (590.10).
      const changed = bwRow.nth(2);
      await expect(changed.getAttribute('class')).resolves.toBe('changed-driver');
      await expect(changed.textContent()).resolves.toBe(
        `⚠ ${formatValue(h2d * 0.88, 'GB/s')} (1 GiB)was ${formatValue(h2d, 'GB/s')} (driver 580.159.04)`,
      );
      await expect(changed.evaluate((td) => getComputedStyle(td).backgroundColor)).resolves.not.toBe(
        await bwRow.nth(1).evaluate((td) => getComputedStyle(td).backgroundColor),
      );
      await expect(bwRow.nth(1).getAttribute('class')).resolves.toBeNull();
      // The pageable copy did not change: not highlighted.
      await expect(
        page.locator('table.metrics tr[data-metric="transfer-bandwidth.bandwidth_gbps: H2D pageable"] td.changed-driver').count(),
      ).resolves.toBe(0);
      // The section: the pair of drivers, and every slowed series in its table.
      await expect(page.locator('h2#between-drivers').textContent()).resolves.toBe('Changed between drivers');
      await expect(page.locator('p.change-head').textContent()).resolves.toMatch(
        new RegExp(
          `^linux · NVIDIA H200 · Ubuntu 24\\.04\\.3 LTS · in docker: driver 580\\.159\\.04 \\(#1\\) → 590\\.10 \\(#2\\): 0 facts changed, ${slowedSeries.length} metric series beyond their noise \\(of \\d+ facts and \\d+ series compared\\)$`,
        ),
      );
      const rows = await page.locator('table.changes tbody tr th').allTextContents();
      expect(rows).toEqual(slowedSeries);
      await expect(page.locator('table.changes tbody tr').first().locator('td').nth(2).textContent()).resolves.toBe('12 %');
      mkdirSync(artifacts, { recursive: true });
      await page.screenshot({ path: path.join(artifacts, 'behaviour-two-drivers.png'), fullPage: true });
    } finally {
      await page.close();
    }
  });

  it('at 420 px wide the page does not scroll sideways (the facts beside their names, tables of numbers as cards with every value in view), its charts inside their axes; saves a screenshot', async () => {
    const { page, errors } = await open(path.join(dir, HTML_FILE), 420);
    try {
      expect(errors).toEqual([]);
      const width = await page.evaluate(() => ({
        scroll: document.documentElement.scrollWidth,
        client: document.documentElement.clientWidth,
      }));
      expect(width.scroll).toBeLessThanOrEqual(width.client);
      for (const axis of await axes(page)) expect(axis.outside, `chart ${axis.id}`).toEqual([]);
      // Every column of the facts table can be read beside the fact names: scrolled into view in the
      // table's own box, each header and cell of it lies whole in the box, clear of the fact column,
      // which stays in view; nothing in them is cut off (long words wrap).
      const unreadable = await page.evaluate(() => {
        const table = document.querySelector('table.facts')!;
        const box = table.parentElement!;
        const inside = (rect: DOMRect, left: number, right: number) => rect.left >= left - 0.5 && rect.right <= right + 0.5;
        const problems: string[] = [];
        if (!['auto', 'scroll'].includes(getComputedStyle(box).overflowX)) problems.push('the box does not scroll');
        const rows = [table.querySelector('thead tr')!, ...Array.from(table.querySelectorAll('tbody tr:not(.group)'))];
        const columns = rows[0]!.children.length;
        for (let column = 0; column < columns; column++) {
          (rows[0]!.children[column] as HTMLElement).scrollIntoView({ inline: 'end', block: 'nearest' });
          const view = box.getBoundingClientRect();
          for (const row of rows) {
            const fact = row.children[0]!.getBoundingClientRect();
            const cell = row.children[column] as HTMLElement;
            const name = `column ${column}, row ${row.getAttribute('data-fact') ?? 'head'}`;
            if (!inside(fact, view.left, view.right)) problems.push(`${name}: the fact name is out of view`);
            if (!inside(cell.getBoundingClientRect(), column ? fact.right : view.left, view.right)) problems.push(`${name}: not in view`);
            if (cell.scrollWidth > cell.clientWidth) problems.push(`${name}: cut off`);
          }
        }
        return problems;
      });
      expect(unreadable.slice(0, 5), `${unreadable.length} problems`).toEqual([]);
      // The tables of numbers (Key metrics first) scroll nowhere: each row a card, every value cell whole in the viewport.
      await expect(clippedTables(page, '.scroll:has(table.numbers)')).resolves.toEqual([]);
      const outOfView = await page.$$eval('table.numbers td', (tds) =>
        tds
          .filter((td) => {
            const rect = td.getBoundingClientRect();
            return rect.left < 0 || rect.right > document.documentElement.clientWidth || td.scrollWidth > td.clientWidth;
          })
          .map((td) => `${td.closest('table')!.className}: ${td.textContent}`),
      );
      expect(await page.locator('table.metrics td').count()).toBeGreaterThan(20);
      expect(outOfView.slice(0, 5), `${outOfView.length} value cells out of view`).toEqual([]);
      // Names wrap only between the parts of an identifier; the reasons for null values are there to read.
      await expect(midWordBreaks(page)).resolves.toEqual([]);
      const nulls = await nullReasonsShown(page);
      expect(nulls.reasons).toBeGreaterThan(0);
      expect(nulls.hidden).toEqual([]);
      // Charts fill the width they get.
      const chartWidths = await page.$$eval('#column-details svg.chart', (svgs) => svgs.map((svg) => svg.getBoundingClientRect().width));
      for (const chartWidth of chartWidths) expect(chartWidth).toBeGreaterThan(300);
      mkdirSync(artifacts, { recursive: true });
      await page.screenshot({ path: path.join(artifacts, 'behaviour-420.png'), fullPage: true });
    } finally {
      await page.close();
    }
  });

  it('at 1400 px no table is cut off (the memory tables two a row show every phase), names wrap between their parts, null reasons are shown', async () => {
    for (const file of [path.join(dir, HTML_FILE), path.join(repoRoot, 'records', HTML_FILE)]) {
      const { page, errors } = await open(file, 1400);
      try {
        expect(errors).toEqual([]);
        expect(await page.locator('#column-details .charts .scroll').count()).toBeGreaterThan(3);
        await expect(clippedTables(page), file).resolves.toEqual([]);
        await expect(midWordBreaks(page)).resolves.toEqual([]);
        const nulls = await nullReasonsShown(page);
        expect(nulls.reasons).toBeGreaterThan(0);
        expect(nulls.hidden).toEqual([]);
      } finally {
        await page.close();
      }
    }
  });

  it('printed (A4, 718 px between the margins): nothing scrolls or is cut off, the null reasons are printed; saves a screenshot', async () => {
    const { page, errors } = await open(path.join(dir, HTML_FILE), 718);
    try {
      await page.emulateMedia({ media: 'print' });
      expect(errors).toEqual([]);
      const width = await page.evaluate(() => [document.documentElement.scrollWidth, document.documentElement.clientWidth]);
      expect(width[0]).toBeLessThanOrEqual(width[1]!);
      await expect(clippedTables(page)).resolves.toEqual([]);
      const nulls = await nullReasonsShown(page);
      expect(nulls.reasons).toBeGreaterThan(0);
      expect(nulls.hidden).toEqual([]);
      mkdirSync(artifacts, { recursive: true });
      await page.screenshot({ path: path.join(artifacts, 'behaviour-print.png'), fullPage: true });
    } finally {
      await page.close();
    }
  });

  it('a memory series with nothing to chart (one phase; no source changed) is said in words, not drawn on a 0–1 B axis; a fill that stopped under free VRAM says so', async () => {
    const { page, errors } = await open(path.join(edgeCases, HTML_FILE));
    try {
      expect(errors).toEqual([]);
      const plain = await page.$$eval('figure.plain', (fs) =>
        fs.map((figure) => [figure.getAttribute('data-plain'), figure.querySelector('p')!.textContent]),
      );
      expect(plain).toEqual([
        [
          'memory:pinned-release · pinned · driver API · 1 GiB',
          'No source changed from baseline on: nothing to draw; the readings are in the table.',
        ],
        [
          'memory:pinned-release · pinned · runtime API · 1 GiB',
          'One phase only (baseline): no change to draw; its readings are in the table.',
        ],
      ]);
      // No chart of theirs.
      const ax = await axes(page);
      expect(ax.map((axis) => axis.id).filter((id) => id.startsWith('memory:pinned-release'))).toEqual([]);
      expect(ax.map((axis) => axis.id)).toContain('memory:pinned-vram · pinned · driver API · 4 GiB');
      // Their readings are still in their tables.
      await expect(page.locator('figure.plain + .scroll table, figure.plain ~ .scroll table').count()).resolves.toBe(2);
      await expect(page.locator('tr[data-metric^="sysmem-fallback.past_free_vram_bytes"] td').nth(1).textContent()).resolves.toBe(
        'none: stopped 135 GiB under free VRAM',
      );
    } finally {
      await page.close();
    }
  });

  it("picking another column redraws its charts from that column's record; another column can be drawn over it", async () => {
    const { page, errors } = await open(path.join(dir, HTML_FILE));
    try {
      await page.selectOption('#column-picker', '2');
      const bw = wsl.metrics.find(
        (metric) =>
          metric.name === 'transfer-bandwidth.bandwidth_gbps' &&
          metric.attrs?.direction === 'd2h' &&
          metric.attrs.memory === 'pinned' &&
          metric.attrs.size_bytes === 16777216,
      )!;
      await expect(page.locator('#column-details').getByTitle(`${bw.value} GB/s`, { exact: true }).textContent()).resolves.toBe(
        formatValue(bw.value, 'GB/s'),
      );
      await expect(page.locator('#column-details p').first().textContent()).resolves.toContain('wsl2 · NVIDIA H200 · 581.57');
      for (const chart of await charts(page)) expect(chart.marks, `chart ${chart.id}`).toBeGreaterThan(0);
      // Drawn over another column: the bandwidth chart has both columns' series, the other's dashed, named in the legend.
      await page.selectOption('#compare-picker', '0');
      const legend = await page.locator('figure:has(svg[data-chart="bandwidth"]) .legend span').allTextContents();
      expect(legend.map((label) => label.trim())).toEqual([
        '#3 H2D pageable',
        '#3 H2D pinned',
        '#3 D2H pageable',
        '#3 D2H pinned',
        '#1 H2D pageable',
        '#1 H2D pinned',
        '#1 D2H pageable',
        '#1 D2H pinned',
      ]);
      await expect(page.locator('svg[data-chart="bandwidth"] g.marks > path[stroke-dasharray]').count()).resolves.toBe(4);
      for (const chart of await charts(page)) expect(chart.marks, `chart ${chart.id}`).toBeGreaterThan(0);
      expect(errors).toEqual([]);
      await page.screenshot({ path: path.join(artifacts, 'behaviour-third-column-over-first.png'), fullPage: true });
    } finally {
      await page.close();
    }
  });

  /** What of a claim page is cut off or out of view at its width: tables that scroll, cells past the viewport or clipped, a page wider than the window. */
  async function claimPageProblems(page: Page): Promise<string[]> {
    const clipped = await clippedTables(page);
    const cells = await page.$$eval('table.claim th, table.claim td', (cells) =>
      cells
        .filter((cell) => {
          const rect = cell.getBoundingClientRect();
          const hidden = getComputedStyle(cell.closest('thead') ?? cell).clipPath !== 'none';
          return (
            !hidden &&
            (rect.left < -0.5 || rect.right > document.documentElement.clientWidth + 0.5 || cell.scrollWidth > cell.clientWidth + 1)
          );
        })
        .map((cell) => `${cell.closest('table')!.className}: ${(cell.textContent ?? '').slice(0, 60)}`),
    );
    const wide = await page.evaluate(() => document.documentElement.scrollWidth > document.documentElement.clientWidth);
    return [...clipped, ...cells, ...(wide ? ['the page scrolls sideways'] : [])];
  }

  it('the claim pages: linked from behaviour.html and back, offline, "no observation yet" where none; at 1400 and 420 px nothing cut off or out of view', async () => {
    const { page: report } = await open(path.join(dir, HTML_FILE));
    try {
      await expect(report.locator('a[href="claims/index.html"]').count()).resolves.toBe(1);
    } finally {
      await report.close();
    }
    const pages = [
      path.join(dir, 'claims', 'index.html'),
      path.join(dir, 'claims', 'C1.html'),
      path.join(dir, 'claims', 'C5.html'),
      path.join(repoRoot, 'records', 'claims', 'index.html'),
      path.join(repoRoot, 'records', 'claims', 'C1.html'),
    ];
    for (const width of [1400, 420]) {
      for (const file of pages) {
        // The claim pages share one stylesheet beside them (claims.css), and ask for nothing else.
        const { page, errors, requests } = await open(file, width, ['claims.css']);
        const name = `${path.relative(repoRoot, file)} at ${width} px`;
        try {
          expect(errors, name).toEqual([]);
          expect(requests, name).toEqual([]);
          await expect(claimPageProblems(page), name).resolves.toEqual([]);
          // Back to the report; every environment without a record says so.
          await expect(page.locator('nav.crumbs a[href="../behaviour.html"]').count(), name).resolves.toBe(1);
          await expect(page.getByText('no observation yet', { exact: true }).first().isVisible(), name).resolves.toBe(true);
          await expect(page.locator('a[href$="/docs/measure-your-machine.md"]').count(), name).resolves.toBe(1);
          if (file.endsWith('C1.html')) {
            // The fixture's WSL2 record and its Docker-on-Linux ones, each with its own section and record links.
            const links = await page.$$eval('table.drivers a', (anchors) => anchors.map((anchor) => (anchor as HTMLAnchorElement).href));
            expect(links.length, name).toBeGreaterThan(0);
            for (const link of links) expect(existsSync(new URL(link).pathname), link).toBe(true);
          }
          mkdirSync(artifacts, { recursive: true });
          await page.screenshot({
            path: path.join(
              artifacts,
              `claims-${file.startsWith(dir) ? 'fixture' : 'committed'}-${path.basename(file, '.html')}-${width}.png`,
            ),
            fullPage: true,
          });
        } finally {
          await page.close();
        }
      }
    }
  });

  it('the committed records/behaviour.html opens offline without errors, its charts drawn', async () => {
    const { page, errors, requests } = await open(path.join(repoRoot, 'records', HTML_FILE));
    try {
      expect(errors).toEqual([]);
      expect(requests).toEqual([]);
      for (const chart of await charts(page)) expect(chart.marks, `chart ${chart.id}`).toBeGreaterThan(0);
      const records = loadRecords(path.join(repoRoot, 'records'));
      await expect(page.locator('#summary').textContent()).resolves.toMatch(new RegExp(`^${records.length} records? in `));
      // The first column as it is shown (each probe from its newest record): its figures, as text.
      const first = columnsOf(records)[0];
      const newest = first && shownRecord(first);
      if (newest) {
        const bw = newest.metrics.find(
          (metric) => metric.name === 'transfer-bandwidth.bandwidth_gbps' && metric.attrs?.memory === 'pinned',
        );
        if (bw)
          await expect(
            page
              .locator('#column-details')
              .getByRole('cell', { name: formatValue(bw.value, bw.unit), exact: true })
              .first()
              .isVisible(),
          ).resolves.toBe(true);
        await expect(page.locator('table.facts tr[data-fact="pinned-vram.counts_as_vram"] td').nth(1).textContent()).resolves.toBe(
          String(newest.facts['pinned-vram.counts_as_vram']?.value),
        );
      }
      mkdirSync(artifacts, { recursive: true });
      await page.screenshot({ path: path.join(artifacts, 'committed-behaviour.png'), fullPage: true });
    } finally {
      await page.close();
    }
  });
});
