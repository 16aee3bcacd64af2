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
  const strs = data.strs;
  const cols = data.columns;
  const metricValues = (name: string, label?: string) => {
    const metricRow = data.metrics.filter((row) => strs[row.metric] === name && (!label || strs[row.label] === label))[0];
    return cols.map((_, i) => (metricRow && metricRow.cells[i] ? metricRow.cells[i]![0] : null));
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
  const strs = data.strs;
  const cols = data.columns;
  root.appendChild(el('h2', { id: 'details' }, ['Charts of one column']));
  const option = (column: PageData['columns'][number], i: number) => el('option', { value: i }, [colName(i) + ' ' + strs[column.text]]);
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
  const spec = data.probes[probe] || { title: '', claims: [] };
  return el('h3', {}, [probe + ': ' + spec.title + (spec.claims.length ? ' (' + spec.claims.join(', ') + ')' : '')]);
}

/** A series of the compared column: the same colour, dashed, its name prefixed with the column. */
function other(series: Series, j: number): Series {
  return { name: colName(j) + ' ' + series.name, ys: series.ys, color: series.color, dash: '6 4', labels: series.labels };
}
/** A series of the shown column, named with the column where another is drawn over it. */
function ownName(series: Series, i: number, j: number): Series {
  return j >= 0 ? { ...series, name: colName(i) + ' ' + series.name } : series;
}

/** Column i's charts and tables, with column j's drawn over the charts (j -1: none). */
function showColumn(details: HTMLElement, data: PageData, i: number, j: number): void {
  const strs = data.strs;
  const cols = data.columns;
  const column = cols[i]!;
  const detail = data.details[i]!;
  const comparedDetail = j >= 0 ? data.details[j]! : null;
  while (details.firstChild) details.removeChild(details.firstChild);
  const records =
    column.records > 1
      ? ' (the newest of ' +
        column.records +
        ' records' +
        (column.conflicts ? ', which disagree on ' + column.conflicts + ' fact' + (column.conflicts > 1 ? 's' : '') : '') +
        ')'
      : '';
  const compared =
    j >= 0
      ? '; drawn over it, dashed: ' +
        colName(j) +
        ' ' +
        strs[cols[j]!.text] +
        ' (record ' +
        strs[cols[j]!.date] +
        '). The tables are ' +
        colName(i) +
        "'s."
      : '';
  const events = column.events >= 0 ? [' (', link('event log', strs[column.events]!), ')'] : [null, null, null];
  details.appendChild(
    el('p', {}, [
      colName(i) + ' ' + strs[column.text] + ': record ',
      link(strs[column.date]!, strs[column.link]!),
      ...events,
      records,
      compared,
    ]),
  );

  detail.mem.forEach((probeMemory) => {
    details.appendChild(probeHeading(data, strs[probeMemory.probe]!));
    const box = el('div', { class: 'charts' });
    probeMemory.series.forEach((subject) => box.appendChild(memoryChart(data, probeMemory, subject, j)));
    details.appendChild(box);
  });

  const box = el('div', { class: 'charts' });
  if (detail.bw.length) box.appendChild(bandwidthCharts(data, detail, comparedDetail, i, j));
  if (detail.sync.length) box.appendChild(syncCharts(data, detail, comparedDetail, i, j));
  if (detail.ev) box.appendChild(eventTimingCharts(data, detail.ev, comparedDetail, i, j));
  if (detail.ceil) box.appendChild(ceilingCharts(data, detail.ceil, comparedDetail, i, j));
  details.appendChild(box);
  document.body.setAttribute('data-charts', String(document.querySelectorAll('svg.chart').length));
}

/** A memory probe's subject: each source's change since the first phase, the deciding one on top; its readings in a table. */
function memoryChart(data: PageData, probeMemory: PageDetail['mem'][number], subject: MemorySeries, j: number): HTMLElement {
  const strs = data.strs;
  const phases = subject.phases.map((phase) => strs[phase]!);
  const deltas = (series: MemorySeries) =>
    series.values.map((vals) => {
      const base = vals[0];
      return vals.map((reading) => (typeof reading === 'number' && typeof base === 'number' ? reading - base : null));
    });
  const own = deltas(subject);
  const deciding = probeMemory.deciding >= 0 ? strs[probeMemory.deciding] : null;
  const lines: Series[] = subject.sources.map((src, k) => {
    const isDeciding = strs[src] === deciding;
    return {
      name: strs[src] + (isDeciding ? ' (deciding)' : ''),
      ys: own[k]!,
      color: COLORS[k % COLORS.length],
      width: isDeciding ? 4 : 1.5,
      dash: isDeciding ? undefined : DASHES[k % DASHES.length],
      strong: isDeciding,
      deciding: isDeciding,
    };
  });
  // The compared column's deciding source, for the series of the same subject (same label).
  const om = j >= 0 ? data.details[j]!.mem.filter((memory) => memory.probe === probeMemory.probe)[0] : null;
  const os = om
    ? om.series.filter((series) => strs[series.label] === strs[subject.label] && series.phases.length === subject.phases.length)[0]
    : null;
  if (om && os && om.deciding >= 0) {
    const k = os.sources.map((source) => strs[source]).indexOf(strs[om.deciding]);
    if (k >= 0)
      lines.push({
        name: colName(j) + ' ' + strs[om.deciding] + ' (deciding)',
        ys: deltas(os)[k]!,
        color: '#000',
        width: 2.5,
        dash: '6 4',
        strong: true,
      });
  }
  let maxAbs = 0;
  lines.forEach((line) =>
    line.ys.forEach((value) => {
      if (typeof value === 'number') maxAbs = Math.max(maxAbs, Math.abs(value));
    }),
  );
  const [unit, size] = bytesScale(maxAbs);
  lines.forEach((line) => (line.ys = line.ys.map((value) => (value === null ? null : value / size))));
  // Drawn with the deciding source last (on top): sources that read 0 throughout would hide it.
  const order = lines.map((_, k) => k);
  const drawn = order.filter((k) => !lines[k]!.deciding).concat(order.filter((k) => lines[k]!.deciding));
  const title = strs[probeMemory.probe] + ' · ' + strs[subject.label];
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
      legendOrder: drawn.map((_, at) => at).sort((left, right) => drawn[left]! - drawn[right]!),
    }),
    table(
      ['source (as read)'].concat(phases),
      subject.sources.map((src, k) =>
        [
          el('span', { title: data.sources[strs[src]!] || '' }, [breakable(strs[src]!), strs[src] === deciding ? ' (deciding)' : '']),
        ].concat(subject.values[k]!.map((reading) => num(reading, 'bytes'))),
      ),
    ),
  ]);
}

function bandwidthCharts(data: PageData, detail: PageDetail, comparedDetail: PageDetail | null, i: number, j: number): HTMLElement {
  const strs = data.strs;
  const sizes: number[] = [];
  detail.bw.concat(comparedDetail ? comparedDetail.bw : []).forEach((series) =>
    series.points.forEach((point) => {
      if (sizes.indexOf(point[0]) < 0) sizes.push(point[0]);
    }),
  );
  sizes.sort((left, right) => left - right);
  const at = (series: PageDetail['bw'][number], size: number) => {
    const point = series.points.filter((candidate) => candidate[0] === size)[0];
    return point ? point[1] : null;
  };
  const bwSeries = (list: PageDetail['bw']): Series[] =>
    list.map((series, k) => ({ name: strs[series.name]!, ys: sizes.map((size) => at(series, size)), color: COLORS[k % COLORS.length] }));
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
      series: bwSeries(detail.bw)
        .map((series) => ownName(series, i, j))
        .concat(comparedDetail ? bwSeries(comparedDetail.bw).map((series) => other(series, j)) : []),
    }),
    table(
      ['size'].concat(detail.bw.map((series) => strs[series.name]!)),
      sizes.map((size) => [sizeText(size), ...detail.bw.map((series) => num(at(series, size), 'GB/s'))]),
    ),
  ]);
}

function syncCharts(data: PageData, detail: PageDetail, comparedDetail: PageDetail | null, i: number, j: number): HTMLElement {
  const strs = data.strs;
  const stats = detail.sync.map((stat) => strs[stat[0]]!);
  const syncOf = (list: PageDetail['sync']) =>
    stats.map((name) => {
      const match = list.filter((stat) => strs[stat[0]] === name)[0];
      return match ? match[1] : null;
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
      series: [ownName({ name: 'latency', ys: syncOf(detail.sync) }, i, j)].concat(
        comparedDetail ? [other({ name: 'latency', ys: syncOf(comparedDetail.sync), color: COLORS[0] }, j)] : [],
      ),
    }),
    table(
      ['statistic', 'latency'],
      detail.sync.map((stat) => [strs[stat[0]], num(stat[1], 'us')]),
    ),
  ]);
}

function eventTimingCharts(
  data: PageData,
  ev: NonNullable<PageDetail['ev']>,
  comparedDetail: PageDetail | null,
  i: number,
  j: number,
): HTMLElement {
  const targets = ev.points.map((point) => point[0]);
  const evOf = (timing: NonNullable<PageDetail['ev']>, k: 1 | 2) =>
    targets.map((target) => {
      const point = timing.points.filter((candidate) => candidate[0] === target)[0];
      return point ? point[k] : null;
    });
  const evSeries = (timing: NonNullable<PageDetail['ev']>): Series[] => [
    { name: 'event-timed', ys: evOf(timing, 1), color: COLORS[0] },
    { name: 'host-timed (launch to completion)', ys: evOf(timing, 2), color: COLORS[1] },
  ];
  const theirs = comparedDetail && comparedDetail.ev;
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
        .map((series) => ownName(series, i, j))
        .concat(theirs ? evSeries(theirs).map((series) => other(series, j)) : [])
        .concat([{ name: 'target', ys: targets, color: COLORS[2] }]),
      note:
        'Event resolution (smallest step between distinct event-timed values): ' +
        formatValue(ev.resolution, 'us') +
        (theirs ? '; ' + colName(j) + ': ' + formatValue(theirs.resolution, 'us') : ''),
    }),
    table(
      ['target', 'event-timed', 'host-timed'],
      ev.points
        .map((point) => [formatValue(point[0], 'us'), num(point[1], 'us'), num(point[2], 'us')])
        .concat([['resolution', num(ev.resolution, 'us'), '']]),
    ),
  ]);
}

function ceilingCharts(
  data: PageData,
  cl: NonNullable<PageDetail['ceil']>,
  comparedDetail: PageDetail | null,
  i: number,
  j: number,
): HTMLElement {
  const strs = data.strs;
  const GIB = 1024 ** 3;
  type Ceiling = NonNullable<PageDetail['ceil']>;
  const ceilSeries = (ceiling: Ceiling, name: string): Series => ({
    name,
    ys: ceiling.levels.map((level) => (level[2] === null ? null : level[2] / GIB)),
    labels: ceiling.levels.map((level) => level[0] + ' % pre-filled'),
  });
  const freeOf = (ceiling: Ceiling) => ceiling.levels.map((level) => (level[1] || 0) / GIB);
  const theirs = comparedDetail && comparedDetail.ceil ? comparedDetail.ceil : null;
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
    .map((level) => [
      'driver API, ' + level[0] + ' % pre-filled',
      num(level[1], 'bytes'),
      num(level[2], 'bytes'),
      strs[level[3]],
      num(level[4], 'ms'),
    ])
    .concat(
      cl.variants.map((variant) => [
        'runtime API, ' + strs[variant[0]] + ', round ' + variant[1],
        num(variant[2], 'bytes'),
        num(variant[3], 'bytes'),
        strs[variant[4]],
        num(variant[5], 'ms'),
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
      hline: cl.cap !== null ? { y: cl.cap / GIB, label: 'safety cap ' + sizeText(cl.cap) } : undefined,
      note: cl.levels.every((level) => strs[level[3]] === 'safety-cap')
        ? 'Every level stopped at the safety cap: the real ceiling is higher than measured.'
        : undefined,
    }),
    table(['measurement', 'free VRAM', 'pinned before it stopped', 'stopped by', 'time per chunk'], rows),
  ]);
}
