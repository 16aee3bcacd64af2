/**
 * behaviour.html in a real browser: headless Chromium (Debian's chromium) driven by
 * playwright-core. The page is opened from file:// with every request that is not for the page
 * itself refused and recorded, so a page that fetched anything (a CDN, a font) fails here. Checks
 * that nothing is logged as an error, that every chart is there and drawn, that the record's
 * figures can be read as text, that picking another column redraws the charts from that
 * column's record, and saves a screenshot to test-artifacts/report/.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BehaviourRecord } from '../results/record/format.ts';
import { HTML_FILE, renderReport, reportPaths } from '../results/report/index.ts';
import { loadRecords } from '../results/report/load.ts';
import { columnsOf } from '../results/report/table.ts';
import { commandsAvailable, findOnPath, repoRoot, tempDir } from './helpers.ts';
import { h200Records, variant, writeRecords } from './report-fixture.ts';

const haveChromium = commandsAvailable('the report page in headless Chromium (test/report-browser.test.ts)', { chromium: 'chromium' });
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

  beforeAll(async () => {
    [first, second] = await h200Records();
    // A second column with other numbers, and a record of the first column that disagrees on a fact.
    wsl = variant(first, 'a1a1a1a1a1a1a1a1', (r) => {
      r.key = { ...r.key, environment: 'wsl2', driver: '581.57', os: 'Ubuntu 24.04 LTS', container: null };
      for (const m of r.metrics) if (m.name === 'transfer-bandwidth.bandwidth_gbps' && m.value !== null) m.value = Math.round(m.value * 0.71 * 1000) / 1000;
    });
    const conflicting = variant(second, 'b2b2b2b2b2b2b2b2', (r) => {
      r.observed.date = '2026-11-28T10:00:00.000Z';
      r.facts['pinned-release.released'] = { value: 'on-exit' };
    });
    dir = tempDir('cm-report-page-');
    writeRecords(path.join(dir, 'records'), [first, second, wsl, conflicting]);
    const recordsDir = path.join(dir, 'records');
    writeFileSync(path.join(dir, HTML_FILE), renderReport(loadRecords(recordsDir), reportPaths(recordsDir, dir)).html);
    browser = await chromium.launch({ executablePath: findOnPath('chromium'), headless: true, args: ['--no-sandbox'] });
  });

  afterAll(async () => {
    await browser?.close();
  });

  async function open(file: string): Promise<Opened> {
    const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
    page.setDefaultTimeout(5000);
    const errors: string[] = [];
    const requests: string[] = [];
    page.on('console', (m) => {
      if (m.type() === 'error' || m.type() === 'warning') errors.push(`${m.type()}: ${m.text()}`);
    });
    page.on('pageerror', (e) => errors.push(`page error: ${e.message}`));
    const url = `file://${file}`;
    await page.route('**/*', (route) => {
      if (route.request().url() === url) return route.continue();
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
        const marks = Array.from(svg.querySelectorAll('g.marks > *')).filter((m) => {
          const box = (m as SVGGraphicsElement).getBBox();
          return box.width > 0 || box.height > 0;
        });
        return { id: svg.getAttribute('data-chart') ?? '', marks: marks.length };
      }),
    );
  }

  it('opens offline with no console error, every chart drawn, the record figures as text; saves a screenshot', async () => {
    const { page, errors, requests } = await open(path.join(dir, HTML_FILE));
    try {
      expect(errors).toEqual([]);
      expect(requests).toEqual([]);
      const drawn = await charts(page);
      // The newest record of the first column (linux): its memory series, and one chart each for bandwidth, latency, events, the ceiling; two comparing the columns.
      const memory = drawn.filter((c) => c.id.startsWith('memory:'));
      expect(memory.map((c) => c.id.split(' · ')[0])).toEqual(expect.arrayContaining(['memory:pinned-vram', 'memory:pinned-release', 'memory:multi-process-pinned']));
      expect(drawn.map((c) => c.id).filter((id) => !id.startsWith('memory:'))).toEqual(['compare-sync-latency', 'compare-bandwidth', 'bandwidth', 'sync-latency', 'event-timing', 'pinned-ceiling']);
      for (const c of drawn) expect(c.marks, `chart ${c.id} has nothing drawn`).toBeGreaterThan(0);

      // Figures of the column's newest record (second), exact: a bandwidth, a sync latency, a memory reading; a fact value.
      const bw = second.metrics.find((m) => m.name === 'transfer-bandwidth.bandwidth_gbps' && m.attrs?.direction === 'h2d' && m.attrs.memory === 'pinned' && m.attrs.size_bytes === 1073741824)!;
      await expect(page.getByRole('cell', { name: String(bw.value), exact: true }).first().isVisible()).resolves.toBe(true);
      const p50 = second.metrics.find((m) => m.name === 'sync-latency.p50_us')!;
      await expect(page.locator('#column-details').getByRole('cell', { name: String(p50.value), exact: true }).isVisible()).resolves.toBe(true);
      // (the charts show the largest size pinned: the one the facts are decided on)
      const vramSamples = second.samples.filter((s) => s.probe === 'pinned-vram' && s.attrs?.kind === 'pinned' && s.attrs.api === 'driver');
      const largest = Math.max(...vramSamples.map((s) => Number(s.attrs!.size_bytes)));
      const touch = vramSamples.find((s) => s.phase === 'after-touch' && s.attrs!.size_bytes === largest)!;
      const rss = touch.readings.subject_rss_bytes!.toLocaleString('en-US');
      await expect(page.getByRole('cell', { name: rss, exact: true }).first().isVisible()).resolves.toBe(true);
      const vram = String(second.facts['pinned-vram.counts_as_vram']!.value);
      const row = page.locator('table.facts tr[data-fact="pinned-vram.counts_as_vram"]');
      await expect(row.locator('td').nth(1).textContent()).resolves.toBe(vram);
      // The conflict: the first column's records disagree on pinned-release.released.
      const released = page.locator('table.facts tr[data-fact="pinned-release.released"]');
      await expect(released.locator('td').nth(1).textContent()).resolves.toBe(`⚠ conflict: on-exit ≠ ${second.facts['pinned-release.released']!.value}`);
      await expect(page.locator('#summary').textContent()).resolves.toBe('4 records in 2 columns; environments: linux, wsl2; driver versions: 580.159.04, 581.57.');

      mkdirSync(artifacts, { recursive: true });
      await page.screenshot({ path: path.join(artifacts, 'behaviour.png'), fullPage: true });
    } finally {
      await page.close();
    }
  });

  it('picking another column redraws its charts from that column\'s record', async () => {
    const { page, errors } = await open(path.join(dir, HTML_FILE));
    try {
      await page.selectOption('#column-picker', '1');
      const bw = wsl.metrics.find((m) => m.name === 'transfer-bandwidth.bandwidth_gbps' && m.attrs?.direction === 'd2h' && m.attrs.memory === 'pinned' && m.attrs.size_bytes === 16777216)!;
      await expect(page.locator('#column-details').getByRole('cell', { name: String(bw.value), exact: true }).isVisible()).resolves.toBe(true);
      await expect(page.locator('#column-details p').first().textContent()).resolves.toContain('wsl2 · NVIDIA H200 · 581.57');
      for (const c of await charts(page)) expect(c.marks, `chart ${c.id}`).toBeGreaterThan(0);
      expect(errors).toEqual([]);
      await page.screenshot({ path: path.join(artifacts, 'behaviour-second-column.png'), fullPage: true });
    } finally {
      await page.close();
    }
  });

  it('the committed results/behaviour.html opens offline without errors, its charts drawn', async () => {
    const { page, errors, requests } = await open(path.join(repoRoot, 'results', HTML_FILE));
    try {
      expect(errors).toEqual([]);
      expect(requests).toEqual([]);
      for (const c of await charts(page)) expect(c.marks, `chart ${c.id}`).toBeGreaterThan(0);
      const records = loadRecords(path.join(repoRoot, 'results', 'records'));
      await expect(page.locator('#summary').textContent()).resolves.toMatch(new RegExp(`^${records.length} records? in `));
      // The first column's newest record: its figures, as text.
      const newest = columnsOf(records)[0]?.chosen.record;
      if (newest) {
        const bw = newest.metrics.find((m) => m.name === 'transfer-bandwidth.bandwidth_gbps' && m.attrs?.memory === 'pinned');
        if (bw) await expect(page.locator('#column-details').getByRole('cell', { name: String(bw.value), exact: true }).first().isVisible()).resolves.toBe(true);
        await expect(page.locator('table.facts tr[data-fact="pinned-vram.counts_as_vram"] td').nth(1).textContent()).resolves.toBe(String(newest.facts['pinned-vram.counts_as_vram']?.value));
      }
      mkdirSync(artifacts, { recursive: true });
      await page.screenshot({ path: path.join(artifacts, 'committed-behaviour.png'), fullPage: true });
    } finally {
      await page.close();
    }
  });
});
