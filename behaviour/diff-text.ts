/** `cudamatrix diff` as people read it: per pair of records, what changed, then the verdict. */
import { formatValue } from '../core/units.ts';
import type { Scalar } from '../probes/protocol.ts';
import { noiseText, seriesText, type DiffSide, type MetricComparison, type PairDiff, type RecordsDiff } from './diff.ts';

const show = (v: Scalar | undefined) => (v === undefined ? '(absent)' : typeof v === 'string' ? v : JSON.stringify(v));
const pct = (x: number) => `${+(x * 100).toFixed(x < 0.1 ? 2 : 1)} %`;
const plural = (n: number, word: string) => `${n} ${word}${n === 1 || word.endsWith('series') ? '' : 's'}`;

function sideLine(s: DiffSide, file: string | undefined): string {
  return `driver ${s.driver}, run ${s.runId} (${s.date.slice(0, 10)}), target ${s.target}${file ? `, ${file}` : ''}`;
}

/** A compared series in two lines: its name and attrs, then the values, the move and the noise. */
export function metricLines(m: MetricComparison, indent: string): string[] {
  const values = `${formatValue(m.a, m.unit)} → ${formatValue(m.b, m.unit)}`;
  const ratio = m.a !== null && m.b !== null && m.a !== 0 ? ` (×${+(m.b / m.a).toPrecision(3)})` : '';
  const moved = m.move === null ? '' : `moved ${pct(m.move)}${ratio}, `;
  return [
    `${indent}${seriesText(m.name, m.attrs)}`,
    `${indent}    ${values}: ${moved}${m.problem ? m.problem : `no change up to ±${pct(m.noise)}: ${noiseText(m)}`}`,
  ];
}

/** Record id -> the file it was read from, per side: both sides may hold one id (a record against the log it came from, a doctored copy). */
export interface SideFiles {
  a: Map<string, string>;
  b: Map<string, string>;
}

/** The records a side's probes were taken from besides its own (an opt-in run's record over a full one). */
function takenLines(s: DiffSide, files: Map<string, string>): string[] {
  return (s.takenFrom ?? []).map((t) => `     with ${t.probes.join(', ')} from ${files.get(t.id) ?? t.id}`);
}

function pairLines(p: PairDiff, files: SideFiles, all: boolean): string[] {
  const out = [
    p.key,
    ...(p.a.id === p.b.id ? ['  a and b are the same run (one record on both sides): nothing to compare but the record with itself'] : []),
    `  a  ${sideLine(p.a, files.a.get(p.a.id))}`,
    ...takenLines(p.a, files.a),
    `  b  ${sideLine(p.b, files.b.get(p.b.id))}`,
    ...takenLines(p.b, files.b),
  ];
  if (p.environment.length)
    out.push(
      `  around the driver, also different: ${p.environment.map((e) => `${e.field} ${show(e.a)} → ${show(e.b)}`).join('; ')} (a change below may be theirs)`,
    );
  for (const [name, cells] of [
    ['a', p.shared.a],
    ['b', p.shared.b],
  ] as const) {
    if (!cells.length) continue;
    const most = Math.max(...cells.map((c) => c.processes));
    const pids = [...new Set(cells.flatMap((c) => c.pids))];
    out.push(
      `  ${name} shared the GPU with ${plural(most, 'other process')}${pids.length ? ` (pid ${pids.join(', ')})` : ''} during ${plural(cells.length, 'cell')} (${cells.map((c) => `${c.probe}${c.inferred ? ' (inferred: it takes no look itself)' : ''}`).join(', ')}): a change there is not called the driver's`,
    );
  }
  const sharedNote = (n: number | undefined) => (n ? `  (shared GPU: ${plural(n, 'other process')}; not the driver's)` : '');
  out.push(`  facts    ${p.factsCompared} compared: ${p.facts.length === 0 ? 'none changed' : `${p.facts.length} changed`}`);
  const width = Math.max(0, ...p.facts.map((f) => f.name.length));
  for (const f of p.facts) out.push(`    ${f.name.padEnd(width)}  ${show(f.a)} → ${show(f.b)}${sharedNote(f.shared)}`);
  if (p.decided.length)
    out.push(`  decided  ${plural(p.decided.length, 'fact')} decided on one side only (null on the other; not a change):`);
  const dw = Math.max(0, ...p.decided.map((f) => f.name.length));
  for (const f of p.decided)
    out.push(`    ${f.name.padEnd(dw)}  ${show(f.a)} → ${show(f.b)} (${f.a === null ? 'newly decided' : 'no longer decided'})`);
  out.push(`  cells    ${p.cellsCompared} compared: ${p.cells.length === 0 ? 'same outcomes' : `${p.cells.length} changed`}`);
  const sharedProbes = new Set([...p.shared.a, ...p.shared.b].map((c) => c.probe));
  for (const c of p.cells)
    out.push(`    ${c.probe}  ${c.a} → ${c.b}${sharedProbes.has(c.probe) ? "  (shared GPU: not the driver's)" : ''}`);
  if (p.verdicts.length) {
    out.push(`  expectations  ${plural(p.verdicts.length, 'outcome')} changed (the fact or metric under each decides):`);
    for (const v of p.verdicts) out.push(`    ${v.title}  ${v.a} → ${v.b}`);
  }
  const t = p.metricTally;
  out.push(
    `  metrics  ${t.compared} compared: ${t.flagged === 0 ? 'none beyond noise' : `${t.flagged} beyond noise`}${t.explained ? `; ${t.explained} moved with the host or a shared GPU (not the driver's)` : ''}${t.undecided ? `; ${t.undecided} too noisy to tell` : ''}`,
  );
  for (const m of p.metrics.filter((x) => x.flagged || x.explained)) out.push(...metricLines(m, '    '));
  const sides = p.runs.a > 1 || p.runs.b > 1 ? `; a is ${plural(p.runs.a, 'run')}, b ${plural(p.runs.b, 'run')}` : '';
  out.push(
    `    noise: ${p.history.runs ? `${plural(p.history.runs, 'other run')} of this key (${plural(p.history.groups, 'group')} by driver and kernel)` : 'no other runs of this key'}${sides}, and the runs' own repetitions where they have them`,
  );
  const tested = t.noiseFrom.runs + t.noiseFrom.repeats + t.noiseFrom.none;
  if (tested)
    out.push(
      `    ${plural(tested, 'series')} moved beyond their minimum effect and were tested against their noise: ${[
        t.noiseFrom.runs ? `${t.noiseFrom.runs} against the runs of the key` : '',
        t.noiseFrom.repeats ? `${t.noiseFrom.repeats} against the runs' repetitions` : '',
        t.noiseFrom.none ? `${t.noiseFrom.none} with no noise measured (the minimum effect alone decided)` : '',
      ]
        .filter(Boolean)
        .join(', ')}`,
    );
  const n = t.nearest;
  if (n)
    out.push(
      `    nearest a change: ${seriesText(n.name, n.attrs)} moved ${pct(n.move)}${n.absolute ? ` (${formatValue(n.delta, n.unit)})` : ''}, no change up to ±${pct(n.noise)}${n.absolute ? ` or ${formatValue(n.absolute, n.unit)}` : ''}`,
    );
  if (all) {
    out.push('  every metric compared:');
    for (const m of p.metrics) out.push(...metricLines(m, `    ${m.flagged ? '✗ ' : '  '}`));
  }
  for (const [name, only] of [
    ['a', p.onlyA],
    ['b', p.onlyB],
  ] as const) {
    // A few facts named beside their count, before the next part.
    const factNames = only.facts.length && only.facts.length <= 5 ? ` (${only.facts.join(', ')})` : '';
    const parts = [
      only.facts.length ? `${plural(only.facts.length, 'fact')}${factNames}` : '',
      only.metrics.length ? plural(only.metrics.length, 'metric series') : '',
      only.cells.length ? `cells ${only.cells.join(', ')}` : '',
    ].filter(Boolean);
    if (parts.length) out.push(`  only in ${name} (not compared): ${parts.join('; ')}`);
  }
  return out;
}

/** The whole diff as text; `files`: record id -> the file it was read from, where it was (one map for both sides, or one per side). */
export function formatDiff(
  d: RecordsDiff,
  inputs: { a: string; b: string },
  filesOf: Map<string, string> | SideFiles,
  all = false,
): string {
  const files = filesOf instanceof Map ? { a: filesOf, b: filesOf } : filesOf;
  const out = [`a: ${inputs.a}`, `b: ${inputs.b}`, ''];
  for (const p of d.pairs) out.push(...pairLines(p, files, all), '');
  for (const [name, list] of [
    ['a', d.onlyA],
    ['b', d.onlyB],
  ] as const) {
    for (const u of list)
      out.push(
        `${u.comparedInstead ? `also in ${name}, not compared` : `only in ${name}`}: ${u.key} (${sideLine(u.record, files[name].get(u.record.id))}): ${u.reason}`,
      );
  }
  for (const c of d.conflicts ?? []) {
    const ids = c.records.map((r) => `${r.id.slice(0, 8)} (${r.date.slice(0, 10)})`).join(', ');
    out.push(
      `CONFLICT in ${c.side}: ${c.key}: ${c.records.length} records disagree on ${plural(c.facts.length, 'fact')} (${c.facts.join(', ')}): ${ids}; only one of them was compared: look at both before trusting the diff`,
    );
  }
  if (d.onlyA.length || d.onlyB.length || d.conflicts?.length) out.push('');
  const facts = d.pairs.reduce((n, p) => n + p.facts.length, 0);
  const cells = d.pairs.reduce((n, p) => n + p.cells.length, 0);
  const metrics = d.pairs.reduce((n, p) => n + p.metricTally.flagged, 0);
  const explained = d.pairs.reduce((n, p) => n + p.metricTally.explained + p.facts.filter((f) => f.shared).length, 0);
  const shared = d.pairs.some((p) => p.shared.a.length || p.shared.b.length);
  const pairs = plural(d.pairs.length, 'pair');
  out.push(
    d.changed
      ? `Behaviour changed (${pairs} of records compared): ${[facts ? plural(facts, 'fact') + ' changed' : '', cells ? plural(cells, 'cell outcome') + ' changed' : '', metrics ? plural(metrics, 'metric') + ' beyond noise' : ''].filter(Boolean).join(', ')}.`
      : `Same behaviour (${pairs} of records compared): no fact or cell outcome changed, no metric beyond its noise${explained ? ` (${explained} moved with the host or ${shared ? 'while the GPU was shared' : 'a shared GPU'}: not the driver's)` : ''}.`,
  );
  if (shared) out.push("The GPU was shared with other processes during some cells (above): their numbers are not the driver's alone.");
  return `${out.join('\n')}\n`;
}
