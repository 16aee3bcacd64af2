/**
 * The sections of numbers: the key metrics of every column, what changed between drivers and
 * what drifted within a column (both measured by cudamatrix diff's engine, in Node: page-data.ts).
 */
import { formatValue } from '../../core/units.ts';
import { keyMetricText } from '../value-text.ts';
import type { PageData } from '../page-data.ts';
import { breakable, colName, el, link, num, table, type Kid } from './dom.ts';

type Metric = PageData['metrics'][number];

export function keyMetricsSection(root: HTMLElement, data: PageData): void {
  const strs = data.strs;
  const cols = data.columns;
  root.appendChild(el('h2', { id: 'metrics' }, ['Key metrics']));
  root.appendChild(
    el('p', {}, [
      'From the newest record of each column, with units as the console writes them (hover a value for the exact one). ⚠ marks a value that moved beyond its noise against the column\'s earlier records (see "Metrics drifted", the value before under it) or against the previous driver\'s column of the same environment and GPU (see "Changed between drivers", its value there under it).',
    ]),
  );
  // A key metric's value as BEHAVIOUR.md writes it (value-text.ts): for a negative value of a
  // metric whose sign turns its meaning, what it means ("none: stopped 135 GiB under free VRAM").
  const keyText = (metric: Metric, value: number | null) =>
    keyMetricText({ negative: metric.negative !== undefined ? strs[metric.negative] : undefined }, value, strs[metric.unit]!);
  const keyValue = (metric: Metric, value: number | null) => {
    const span = num(value, strs[metric.unit]!);
    span.textContent = keyText(metric, value);
    return span;
  };
  const head = el(
    'tr',
    {},
    ['metric', 'claims'].concat(cols.map((_, i) => colName(i))).map((heading) => el('th', {}, [heading])),
  );
  const body = el(
    'tbody',
    {},
    data.metrics.map((metric) => {
      const was = new Map(metric.drifted ?? []);
      const before = new Map(metric.changed ?? []);
      return el(
        'tr',
        { 'data-metric': strs[metric.metric] + ': ' + strs[metric.label] },
        [
          el('th', {}, [breakable(strs[metric.metric]!), ': ' + strs[metric.label]]),
          el('td', { class: 'claims', 'data-label': 'claims' }, [metric.claims.map((claim) => strs[claim]).join(', ')]),
        ].concat(
          metric.cells.map((cell, i) => {
            if (cell === null) return el('td', { class: 'none', 'data-label': colName(i) }, ['–']);
            const td = el('td', { 'data-label': colName(i) }, [
              keyValue(metric, cell[0]),
              cell.length > 1 ? ' (' + strs[cell[1]!] + ')' : null,
            ]);
            if (was.has(i) || before.has(i)) td.insertBefore(document.createTextNode('⚠ '), td.firstChild);
            if (was.has(i)) {
              td.classList.add('drifted');
              td.appendChild(el('small', { class: 'was' }, ['was ' + keyText(metric, was.get(i) ?? null)]));
            }
            if (before.has(i)) {
              const prev = cols[i]!.prev;
              const driver = strs[cols[prev]!.driver];
              td.classList.add('changed-driver');
              td.setAttribute(
                'title',
                'beyond its noise against ' + colName(prev) + ' (driver ' + driver + '): see Changed between drivers',
              );
              td.appendChild(el('small', { class: 'was' }, ['was ' + keyText(metric, before.get(i) ?? null) + ' (driver ' + driver + ')']));
            }
            return td;
          }),
        ),
      );
    }),
  );
  root.appendChild(el('div', { class: 'scroll' }, [el('table', { class: 'numbers metrics' }, [el('thead', {}, [head]), body])]));
}

/** A series' move and noise, as fractions: in percent. */
const moved = (move: number | null) => (move === null ? '—' : formatValue(move * 100, 'percent'));
const noise = (fraction: number) => '±' + formatValue(fraction * 100, 'percent');

export function betweenDriversSection(root: HTMLElement, data: PageData): void {
  const strs = data.strs;
  const cols = data.columns;
  root.appendChild(el('h2', { id: 'between-drivers' }, ['Changed between drivers']));
  const changed = data.changes.filter((ch) => ch.facts.length || ch.cells.length || ch.series.length);
  if (!data.changes.length)
    root.appendChild(el('p', {}, ['None: no environment and GPU (with the same OS and container) has records of two driver versions.']));
  else
    root.appendChild(
      el('p', {}, [
        (changed.length
          ? ''
          : 'None: every driver has the facts, cell outcomes and metrics (within their noise) of the driver before it. ') +
          "Per environment, GPU, OS and container with records of two or more drivers: each driver's column against the previous driver's, by cudamatrix diff's engine. Each column is compared as one record (each probe from its newest record, as the column shows it); a metric with several runs in a column as their geometric mean, its noise measured from the runs of both columns. Every fact and cell outcome is compared; of the metrics, the series of the key metrics (every attribute, e.g. every transfer size).",
      ]),
    );
  data.changes.forEach((ch) => {
    const count = (k: number, one: string, more: string) => k + ' ' + (k === 1 ? one : more);
    const series = ch.series.length + ch.more;
    const from = strs[cols[ch.from]!.driver];
    const to = strs[cols[ch.to]!.driver];
    root.appendChild(
      el('p', { class: 'change-head' }, [
        el('strong', {}, [strs[ch.key]]),
        ': driver ' +
          from +
          ' (' +
          colName(ch.from) +
          ') → ' +
          to +
          ' (' +
          colName(ch.to) +
          '): ' +
          count(ch.facts.length, 'fact', 'facts') +
          ' changed' +
          (ch.cells.length ? ', ' + count(ch.cells.length, 'cell outcome', 'cell outcomes') + ' changed' : '') +
          ', ' +
          series +
          ' metric series beyond their noise (of ' +
          ch.compared[0] +
          ' facts and ' +
          ch.compared[1] +
          ' series compared)' +
          (ch.more ? '; the first ' + ch.series.length + ' here, cudamatrix diff lists them all' : ''),
      ]),
    );
    const rows: Kid[][] = ch.facts
      .map(([name, before, after]): Kid[] => [strs[name], strs[before], strs[after], '', ''])
      .concat(ch.cells.map(([probe, before, after]): Kid[] => ['cell ' + strs[probe], strs[before], strs[after], '', '']))
      .concat(
        ch.series.map(([name, unit, before, after, move, fraction, how]): Kid[] => [
          strs[name],
          num(before, strs[unit]!),
          num(after, strs[unit]!),
          moved(move),
          el('span', { title: strs[how] }, [noise(fraction)]),
        ]),
      );
    if (rows.length)
      root.appendChild(table(['fact, cell or series', 'driver ' + from, 'driver ' + to, 'moved', 'noise'], rows, 'numbers changes'));
  });
}

export function driftSection(root: HTMLElement, data: PageData): void {
  const strs = data.strs;
  const cols = data.columns;
  const drifted = cols.map((_, i) => i).filter((i) => cols[i]!.drift.length);
  root.appendChild(el('h2', { id: 'drift' }, ['Metrics drifted']));
  if (!drifted.length)
    root.appendChild(
      el('p', {}, [
        "None: in every column with several records, each metric series' newest value is within its noise of the column's earlier records.",
      ]),
    );
  else
    root.appendChild(
      el('p', {}, [
        "Per metric series, a column's newest value (from the newest record that measured its probe) against the column's earlier records of that probe (the newest 16, since the last drift before them), where it moved beyond its noise (cudamatrix diff's engine). Earlier records are compared by their key metrics. The same facts with other numbers (a same-driver regression) is kept as a newer record of the column.",
      ]),
    );
  drifted.forEach((i) => {
    const column = cols[i]!;
    column.drift.forEach((drift) => {
      const against: Kid[] =
        drift.earlier === 1
          ? [link(strs[drift.from]!, strs[drift.link]!)]
          : [drift.earlier + ' earlier records (the newest ', link(strs[drift.from]!, strs[drift.link]!), ')'];
      const count =
        ': ' +
        (drift.series.length + drift.more) +
        ' metric series beyond their noise' +
        (drift.more ? ' (the first ' + drift.series.length + ' here; cudamatrix diff lists them all)' : '');
      root.appendChild(
        el('p', { class: 'drift-head' }, [
          el('strong', {}, [colName(i) + ' ' + strs[column.text]]),
          ': ',
          link(strs[drift.to]!, strs[drift.toLink]!),
          ' against ',
          ...against,
          count,
        ]),
      );
      const rows = drift.series.map(([name, unit, before, newest, move, fraction]): Kid[] => [
        strs[name],
        num(before, strs[unit]!),
        num(newest, strs[unit]!),
        moved(move),
        noise(fraction),
      ]);
      root.appendChild(table(['series', 'before', 'newest', 'moved', 'noise'], rows, 'numbers drift'));
    });
  });
}
