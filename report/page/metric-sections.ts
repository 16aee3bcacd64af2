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
  const S = data.strs;
  const cols = data.columns;
  root.appendChild(el('h2', { id: 'metrics' }, ['Key metrics']));
  root.appendChild(
    el('p', {}, [
      'From the newest record of each column, with units as the console writes them (hover a value for the exact one). ⚠ marks a value that moved beyond its noise against the column\'s earlier records (see "Metrics drifted", the value before under it) or against the previous driver\'s column of the same environment and GPU (see "Changed between drivers", its value there under it).',
    ]),
  );
  // A key metric's value as BEHAVIOUR.md writes it (value-text.ts): for a negative value of a
  // metric whose sign turns its meaning, what it means ("none: stopped 135 GiB under free VRAM").
  const keyText = (m: Metric, v: number | null) =>
    keyMetricText({ negative: m.negative !== undefined ? S[m.negative] : undefined }, v, S[m.unit]!);
  const keyValue = (m: Metric, v: number | null) => {
    const span = num(v, S[m.unit]!);
    span.textContent = keyText(m, v);
    return span;
  };
  const head = el(
    'tr',
    {},
    ['metric', 'claims'].concat(cols.map((_, i) => colName(i))).map((h) => el('th', {}, [h])),
  );
  const body = el(
    'tbody',
    {},
    data.metrics.map((m) => {
      const was = new Map(m.drifted ?? []);
      const before = new Map(m.changed ?? []);
      return el(
        'tr',
        { 'data-metric': S[m.metric] + ': ' + S[m.label] },
        [
          el('th', {}, [breakable(S[m.metric]!), ': ' + S[m.label]]),
          el('td', { class: 'claims', 'data-label': 'claims' }, [m.claims.map((c) => S[c]).join(', ')]),
        ].concat(
          m.cells.map((v, i) => {
            if (v === null) return el('td', { class: 'none', 'data-label': colName(i) }, ['–']);
            const td = el('td', { 'data-label': colName(i) }, [keyValue(m, v[0]), v.length > 1 ? ' (' + S[v[1]!] + ')' : null]);
            if (was.has(i) || before.has(i)) td.insertBefore(document.createTextNode('⚠ '), td.firstChild);
            if (was.has(i)) {
              td.classList.add('drifted');
              td.appendChild(el('small', { class: 'was' }, ['was ' + keyText(m, was.get(i) ?? null)]));
            }
            if (before.has(i)) {
              const p = cols[i]!.prev;
              const driver = S[cols[p]!.driver];
              td.classList.add('changed-driver');
              td.setAttribute('title', 'beyond its noise against ' + colName(p) + ' (driver ' + driver + '): see Changed between drivers');
              td.appendChild(el('small', { class: 'was' }, ['was ' + keyText(m, before.get(i) ?? null) + ' (driver ' + driver + ')']));
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
  const S = data.strs;
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
    const from = S[cols[ch.from]!.driver];
    const to = S[cols[ch.to]!.driver];
    root.appendChild(
      el('p', { class: 'change-head' }, [
        el('strong', {}, [S[ch.key]]),
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
      .map(([name, a, b]): Kid[] => [S[name], S[a], S[b], '', ''])
      .concat(ch.cells.map(([probe, a, b]): Kid[] => ['cell ' + S[probe], S[a], S[b], '', '']))
      .concat(
        ch.series.map(([name, unit, a, b, move, fraction, how]): Kid[] => [
          S[name],
          num(a, S[unit]!),
          num(b, S[unit]!),
          moved(move),
          el('span', { title: S[how] }, [noise(fraction)]),
        ]),
      );
    if (rows.length)
      root.appendChild(table(['fact, cell or series', 'driver ' + from, 'driver ' + to, 'moved', 'noise'], rows, 'numbers changes'));
  });
}

export function driftSection(root: HTMLElement, data: PageData): void {
  const S = data.strs;
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
    const c = cols[i]!;
    c.drift.forEach((d) => {
      const against: Kid[] =
        d.earlier === 1 ? [link(S[d.from]!, S[d.link]!)] : [d.earlier + ' earlier records (the newest ', link(S[d.from]!, S[d.link]!), ')'];
      const count =
        ': ' +
        (d.series.length + d.more) +
        ' metric series beyond their noise' +
        (d.more ? ' (the first ' + d.series.length + ' here; cudamatrix diff lists them all)' : '');
      root.appendChild(
        el('p', { class: 'drift-head' }, [
          el('strong', {}, [colName(i) + ' ' + S[c.text]]),
          ': ',
          link(S[d.to]!, S[d.toLink]!),
          ' against ',
          ...against,
          count,
        ]),
      );
      const rows = d.series.map(([name, unit, a, b, move, fraction]): Kid[] => [
        S[name],
        num(a, S[unit]!),
        num(b, S[unit]!),
        moved(move),
        noise(fraction),
      ]);
      root.appendChild(table(['series', 'before', 'newest', 'moved', 'noise'], rows, 'numbers drift'));
    });
  });
}
