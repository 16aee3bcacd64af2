/**
 * The charts: two that compare every column, and those of one column (its newest record), picked
 * from a list, optionally with another column's drawn over them, dashed.
 */
import { bytesScale, formatValue } from '../../core/units.ts';
import type { MemorySeries, PageData, PageDetail } from '../page-data.ts';
import { chart, COLORS, DASHES, type Series } from './chart.ts';
import { breakable, colName, el, link, num, table } from './dom.ts';

const sizeText = (bytes: number) => formatValue(bytes, 'bytes');

export function compareCharts(root: HTMLElement, data: PageData): void {
  const S = data.strs;
  const cols = data.columns;
  const metricValues = (name: string, label?: string) => {
    const m = data.metrics.filter((x) => S[x.metric] === name && (!label || S[x.label] === label))[0];
    return cols.map((_, i) => (m && m.cells[i] ? m.cells[i]![0] : null));
  };
  const cats = cols.map((_, i) => colName(i));
  const box = el('div', { class: 'charts' });
  box.appendChild(
    chart({
      id: 'compare-sync-latency',
      kind: 'bars',
      title: 'Launch + synchronize latency per column (C5)',
      cats,
      xLabel: 'column',
      yLabel: 'µs',
      unit: 'us',
      series: [
        { name: 'p50', ys: metricValues('sync-latency.p50_us') },
        { name: 'p99', ys: metricValues('sync-latency.p99_us') },
      ],
    }),
  );
  const bandwidth = 'transfer-bandwidth.bandwidth_gbps';
  box.appendChild(
    chart({
      id: 'compare-bandwidth',
      kind: 'bars',
      title: 'Copy bandwidth at the largest size per column (C8)',
      cats,
      xLabel: 'column',
      yLabel: 'GB/s',
      unit: 'GB/s',
      series: [
        { name: 'H2D pinned', ys: metricValues(bandwidth, 'H2D pinned') },
        { name: 'D2H pinned', ys: metricValues(bandwidth, 'D2H pinned') },
        { name: 'H2D pageable', ys: metricValues(bandwidth, 'H2D pageable') },
      ],
    }),
  );
  root.appendChild(box);
}

/** The "Charts of one column" section: its pickers, and the first column's charts. */
export function columnChartsSection(root: HTMLElement, data: PageData): void {
  const S = data.strs;
  const cols = data.columns;
  root.appendChild(el('h2', { id: 'details' }, ['Charts of one column']));
  const option = (c: PageData['columns'][number], i: number) => el('option', { value: i }, [colName(i) + ' ' + S[c.text]]);
  const picker = el('select', { id: 'column-picker' }, cols.map(option));
  const against = el('select', { id: 'compare-picker' }, [el('option', { value: '-1' }, ['nothing'])].concat(cols.map(option)));
  root.appendChild(
    el('p', { class: 'pickers' }, [el('label', {}, ['Column: ', picker]), ' ', el('label', {}, ['compared with: ', against])]),
  );
  const details = el('div', { id: 'column-details' });
  root.appendChild(details);
  const redraw = () => showColumn(details, data, Number(picker.value), Number(against.value));
  picker.addEventListener('change', redraw);
  against.addEventListener('change', redraw);
  showColumn(details, data, 0, -1);
}

function probeHeading(data: PageData, probe: string): HTMLElement {
  const p = data.probes[probe] || { title: '', claims: [] };
  return el('h3', {}, [probe + ': ' + p.title + (p.claims.length ? ' (' + p.claims.join(', ') + ')' : '')]);
}

/** A series of the compared column: the same colour, dashed, its name prefixed with the column. */
function other(s: Series, j: number): Series {
  return { name: colName(j) + ' ' + s.name, ys: s.ys, color: s.color, dash: '6 4', labels: s.labels };
}
/** A series of the shown column, named with the column where another is drawn over it. */
function ownName(s: Series, i: number, j: number): Series {
  return j >= 0 ? { ...s, name: colName(i) + ' ' + s.name } : s;
}

/** Column i's charts and tables, with column j's drawn over the charts (j -1: none). */
function showColumn(details: HTMLElement, data: PageData, i: number, j: number): void {
  const S = data.strs;
  const cols = data.columns;
  const c = cols[i]!;
  const d = data.details[i]!;
  const e = j >= 0 ? data.details[j]! : null;
  while (details.firstChild) details.removeChild(details.firstChild);
  const records =
    c.records > 1
      ? ' (the newest of ' +
        c.records +
        ' records' +
        (c.conflicts ? ', which disagree on ' + c.conflicts + ' fact' + (c.conflicts > 1 ? 's' : '') : '') +
        ')'
      : '';
  const compared =
    j >= 0
      ? '; drawn over it, dashed: ' +
        colName(j) +
        ' ' +
        S[cols[j]!.text] +
        ' (record ' +
        S[cols[j]!.date] +
        '). The tables are ' +
        colName(i) +
        "'s."
      : '';
  const events = c.events >= 0 ? [' (', link('event log', S[c.events]!), ')'] : [null, null, null];
  details.appendChild(
    el('p', {}, [colName(i) + ' ' + S[c.text] + ': record ', link(S[c.date]!, S[c.link]!), ...events, records, compared]),
  );

  d.mem.forEach((m) => {
    details.appendChild(probeHeading(data, S[m.probe]!));
    const box = el('div', { class: 'charts' });
    m.series.forEach((s) => box.appendChild(memoryChart(data, m, s, j)));
    details.appendChild(box);
  });

  const box = el('div', { class: 'charts' });
  if (d.bw.length) box.appendChild(bandwidthCharts(data, d, e, i, j));
  if (d.sync.length) box.appendChild(syncCharts(data, d, e, i, j));
  if (d.ev) box.appendChild(eventTimingCharts(data, d.ev, e, i, j));
  if (d.ceil) box.appendChild(ceilingCharts(data, d.ceil, e, i, j));
  details.appendChild(box);
  document.body.setAttribute('data-charts', String(document.querySelectorAll('svg.chart').length));
}

/** A memory probe's subject: each source's change since the first phase, the deciding one on top; its readings in a table. */
function memoryChart(data: PageData, m: PageDetail['mem'][number], s: MemorySeries, j: number): HTMLElement {
  const S = data.strs;
  const phases = s.phases.map((p) => S[p]!);
  const deltas = (series: MemorySeries) =>
    series.values.map((vals) => {
      const base = vals[0];
      return vals.map((v) => (typeof v === 'number' && typeof base === 'number' ? v - base : null));
    });
  const own = deltas(s);
  const deciding = m.deciding >= 0 ? S[m.deciding] : null;
  const lines: Series[] = s.sources.map((src, k) => {
    const isDeciding = S[src] === deciding;
    return {
      name: S[src] + (isDeciding ? ' (deciding)' : ''),
      ys: own[k]!,
      color: COLORS[k % COLORS.length],
      width: isDeciding ? 4 : 1.5,
      dash: isDeciding ? undefined : DASHES[k % DASHES.length],
      strong: isDeciding,
      deciding: isDeciding,
    };
  });
  // The compared column's deciding source, for the series of the same subject (same label).
  const om = j >= 0 ? data.details[j]!.mem.filter((x) => x.probe === m.probe)[0] : null;
  const os = om ? om.series.filter((x) => S[x.label] === S[s.label] && x.phases.length === s.phases.length)[0] : null;
  if (om && os && om.deciding >= 0) {
    const k = os.sources.map((x) => S[x]).indexOf(S[om.deciding]);
    if (k >= 0)
      lines.push({
        name: colName(j) + ' ' + S[om.deciding] + ' (deciding)',
        ys: deltas(os)[k]!,
        color: '#000',
        width: 2.5,
        dash: '6 4',
        strong: true,
      });
  }
  let maxAbs = 0;
  lines.forEach((l) =>
    l.ys.forEach((v) => {
      if (typeof v === 'number') maxAbs = Math.max(maxAbs, Math.abs(v));
    }),
  );
  const [unit, size] = bytesScale(maxAbs);
  lines.forEach((l) => (l.ys = l.ys.map((v) => (v === null ? null : v / size))));
  // Drawn with the deciding source last (on top): sources that read 0 throughout would hide it.
  const order = lines.map((_, k) => k);
  const drawn = order.filter((k) => !lines[k]!.deciding).concat(order.filter((k) => lines[k]!.deciding));
  const title = S[m.probe] + ' · ' + S[s.label];
  return el('div', { class: 'chart-and-table' }, [
    chart({
      id: 'memory:' + title,
      kind: 'line',
      title: title + ': change since ' + phases[0] + ', per source',
      cats: phases,
      xLabel: 'phase',
      yLabel: unit,
      unit: unit === 'B' ? 'bytes' : unit,
      flat:
        phases.length < 2
          ? 'One phase only (' + phases[0] + '): no change to draw; its readings are in the table.'
          : 'No source changed from ' + phases[0] + ' on: nothing to draw; the readings are in the table.',
      series: drawn.map((k) => lines[k]!),
      legendOrder: drawn.map((_, at) => at).sort((a, b) => drawn[a]! - drawn[b]!),
    }),
    table(
      ['source (as read)'].concat(phases),
      s.sources.map((src, k) =>
        [el('span', { title: data.sources[S[src]!] || '' }, [breakable(S[src]!), S[src] === deciding ? ' (deciding)' : ''])].concat(
          s.values[k]!.map((v) => num(v, 'bytes')),
        ),
      ),
    ),
  ]);
}

function bandwidthCharts(data: PageData, d: PageDetail, e: PageDetail | null, i: number, j: number): HTMLElement {
  const S = data.strs;
  const sizes: number[] = [];
  d.bw.concat(e ? e.bw : []).forEach((s) =>
    s.points.forEach((p) => {
      if (sizes.indexOf(p[0]) < 0) sizes.push(p[0]);
    }),
  );
  sizes.sort((a, b) => a - b);
  const at = (s: PageDetail['bw'][number], size: number) => {
    const p = s.points.filter((q) => q[0] === size)[0];
    return p ? p[1] : null;
  };
  const bwSeries = (list: PageDetail['bw']): Series[] =>
    list.map((s, k) => ({ name: S[s.name]!, ys: sizes.map((z) => at(s, z)), color: COLORS[k % COLORS.length] }));
  return el('div', { class: 'chart-and-table' }, [
    probeHeading(data, 'transfer-bandwidth'),
    chart({
      id: 'bandwidth',
      kind: 'line',
      title: 'Copy bandwidth against transfer size',
      xs: sizes,
      logX: true,
      xFmt: sizeText,
      xLabel: 'transfer size',
      yLabel: 'GB/s',
      unit: 'GB/s',
      series: bwSeries(d.bw)
        .map((s) => ownName(s, i, j))
        .concat(e ? bwSeries(e.bw).map((s) => other(s, j)) : []),
    }),
    table(
      ['size'].concat(d.bw.map((s) => S[s.name]!)),
      sizes.map((z) => [sizeText(z), ...d.bw.map((s) => num(at(s, z), 'GB/s'))]),
    ),
  ]);
}

function syncCharts(data: PageData, d: PageDetail, e: PageDetail | null, i: number, j: number): HTMLElement {
  const S = data.strs;
  const stats = d.sync.map((p) => S[p[0]]!);
  const syncOf = (list: PageDetail['sync']) =>
    stats.map((name) => {
      const p = list.filter((q) => S[q[0]] === name)[0];
      return p ? p[1] : null;
    });
  return el('div', { class: 'chart-and-table' }, [
    probeHeading(data, 'sync-latency'),
    chart({
      id: 'sync-latency',
      kind: 'bars',
      title: 'No-op kernel + stream synchronize: the latency distribution',
      cats: stats,
      xLabel: 'statistic',
      yLabel: 'µs',
      unit: 'us',
      series: [ownName({ name: 'latency', ys: syncOf(d.sync) }, i, j)].concat(
        e ? [other({ name: 'latency', ys: syncOf(e.sync), color: COLORS[0] }, j)] : [],
      ),
    }),
    table(
      ['statistic', 'latency'],
      d.sync.map((p) => [S[p[0]], num(p[1], 'us')]),
    ),
  ]);
}

function eventTimingCharts(data: PageData, ev: NonNullable<PageDetail['ev']>, e: PageDetail | null, i: number, j: number): HTMLElement {
  const targets = ev.points.map((p) => p[0]);
  const evOf = (x: NonNullable<PageDetail['ev']>, k: 1 | 2) =>
    targets.map((t) => {
      const p = x.points.filter((q) => q[0] === t)[0];
      return p ? p[k] : null;
    });
  const evSeries = (x: NonNullable<PageDetail['ev']>): Series[] => [
    { name: 'event-timed', ys: evOf(x, 1), color: COLORS[0] },
    { name: 'host-timed (launch to completion)', ys: evOf(x, 2), color: COLORS[1] },
  ];
  const theirs = e && e.ev;
  return el('div', { class: 'chart-and-table' }, [
    probeHeading(data, 'event-timing'),
    chart({
      id: 'event-timing',
      kind: 'line',
      title: 'Spin kernels timed with events and with the host clock',
      xs: targets,
      xLabel: 'spin target (µs)',
      yLabel: 'measured µs',
      unit: 'us',
      series: evSeries(ev)
        .map((s) => ownName(s, i, j))
        .concat(theirs ? evSeries(theirs).map((s) => other(s, j)) : [])
        .concat([{ name: 'target', ys: targets, color: COLORS[2] }]),
      note:
        'Event resolution (smallest step between distinct event-timed values): ' +
        formatValue(ev.resolution, 'us') +
        (theirs ? '; ' + colName(j) + ': ' + formatValue(theirs.resolution, 'us') : ''),
    }),
    table(
      ['target', 'event-timed', 'host-timed'],
      ev.points
        .map((p) => [formatValue(p[0], 'us'), num(p[1], 'us'), num(p[2], 'us')])
        .concat([['resolution', num(ev.resolution, 'us'), '']]),
    ),
  ]);
}

function ceilingCharts(data: PageData, cl: NonNullable<PageDetail['ceil']>, e: PageDetail | null, i: number, j: number): HTMLElement {
  const S = data.strs;
  const G = 1024 ** 3;
  type Ceiling = NonNullable<PageDetail['ceil']>;
  const ceilSeries = (x: Ceiling, name: string): Series => ({
    name,
    ys: x.levels.map((l) => (l[2] === null ? null : l[2] / G)),
    labels: x.levels.map((l) => l[0] + ' % pre-filled'),
  });
  const freeOf = (x: Ceiling) => x.levels.map((l) => (l[1] || 0) / G);
  const theirs = e && e.ceil ? e.ceil : null;
  // With another column's drawn over it: one x axis of both columns' levels, each series null at the other's.
  const series = theirs
    ? [
        ownName({ ...ceilSeries(cl, 'ceiling'), ys: ceilSeries(cl, '').ys.concat(theirs.levels.map(() => null)) }, i, j),
        other(
          {
            ...ceilSeries(theirs, 'ceiling'),
            ys: cl.levels.map((): number | null => null).concat(ceilSeries(theirs, '').ys),
            labels: cl.levels.map(() => '').concat(ceilSeries(theirs, '').labels!),
            color: COLORS[0],
          },
          j,
        ),
      ]
    : [ceilSeries(cl, 'ceiling')];
  const rows = cl.levels
    .map((l) => ['driver API, ' + l[0] + ' % pre-filled', num(l[1], 'bytes'), num(l[2], 'bytes'), S[l[3]], num(l[4], 'ms')])
    .concat(
      cl.variants.map((v) => [
        'runtime API, ' + S[v[0]] + ', round ' + v[1],
        num(v[2], 'bytes'),
        num(v[3], 'bytes'),
        S[v[4]],
        num(v[5], 'ms'),
      ]),
    );
  return el('div', { class: 'chart-and-table' }, [
    probeHeading(data, 'pinned-ceiling'),
    chart({
      id: 'pinned-ceiling',
      kind: 'points',
      title: 'Pinned ceiling against free VRAM (VRAM pre-filled to each level)',
      xs: freeOf(cl).concat(theirs ? freeOf(theirs) : []),
      xLabel: 'free VRAM after the pre-fill (GiB)',
      yLabel: 'pinned before it stopped (GiB)',
      unit: 'GiB',
      series,
      hline: cl.cap !== null ? { y: cl.cap / G, label: 'safety cap ' + sizeText(cl.cap) } : undefined,
      note: cl.levels.every((l) => S[l[3]] === 'safety-cap')
        ? 'Every level stopped at the safety cap: the real ceiling is higher than measured.'
        : undefined,
    }),
    table(['measurement', 'free VRAM', 'pinned before it stopped', 'stopped by', 'time per chunk'], rows),
  ]);
}
