/** `cudamatrix diff` as people read it: per pair of records, what changed, then the verdict. */
import { formatValue } from '../core/units.ts';
import type { Scalar } from '../probes/protocol.ts';
import { noiseText, seriesText, type DiffSide, type MetricComparison, type PairDiff, type RecordsDiff } from './diff.ts';

const show = (value: Scalar | undefined) => (value === undefined ? '(absent)' : typeof value === 'string' ? value : JSON.stringify(value));
const pct = (fraction: number) => `${+(fraction * 100).toFixed(fraction < 0.1 ? 2 : 1)} %`;
const plural = (count: number, word: string) => `${count} ${word}${count === 1 || word.endsWith('series') ? '' : 's'}`;

function sideLine(side: DiffSide, file: string | undefined): string {
  return `driver ${side.driver}, run ${side.runId} (${side.date.slice(0, 10)}), target ${side.target}${file ? `, ${file}` : ''}`;
}

/** A compared series in two lines: its name and attrs, then the values, the move and the noise. */
export function metricLines(comparison: MetricComparison, indent: string): string[] {
  const values = `${formatValue(comparison.a, comparison.unit)} → ${formatValue(comparison.b, comparison.unit)}`;
  const ratio =
    comparison.a !== null && comparison.b !== null && comparison.a !== 0 ? ` (×${+(comparison.b / comparison.a).toPrecision(3)})` : '';
  const moved = comparison.move === null ? '' : `moved ${pct(comparison.move)}${ratio}, `;
  return [
    `${indent}${seriesText(comparison.name, comparison.attrs)}`,
    `${indent}    ${values}: ${moved}${comparison.problem ? comparison.problem : `no change up to ±${pct(comparison.noise)}: ${noiseText(comparison)}`}`,
  ];
}

/** Record id -> the file it was read from, per side: both sides may hold one id (a record against the log it came from, a doctored copy). */
export interface SideFiles {
  a: Map<string, string>;
  b: Map<string, string>;
}

/** The records a side's probes were taken from besides its own (an opt-in run's record over a full one). */
function takenLines(side: DiffSide, files: Map<string, string>): string[] {
  return (side.takenFrom ?? []).map((source) => `     with ${source.probes.join(', ')} from ${files.get(source.id) ?? source.id}`);
}

function pairLines(pair: PairDiff, files: SideFiles, all: boolean): string[] {
  const out = [
    pair.key,
    ...(pair.a.id === pair.b.id
      ? ['  a and b are the same run (one record on both sides): nothing to compare but the record with itself']
      : []),
    `  a  ${sideLine(pair.a, files.a.get(pair.a.id))}`,
    ...takenLines(pair.a, files.a),
    `  b  ${sideLine(pair.b, files.b.get(pair.b.id))}`,
    ...takenLines(pair.b, files.b),
  ];
  if (pair.environment.length)
    out.push(
      `  around the driver, also different: ${pair.environment.map((e) => `${e.field} ${show(e.a)} → ${show(e.b)}`).join('; ')} (a change below may be theirs)`,
    );
  for (const [name, cells] of [
    ['a', pair.shared.a],
    ['b', pair.shared.b],
  ] as const) {
    if (!cells.length) continue;
    const most = Math.max(...cells.map((cell) => cell.processes));
    const pids = [...new Set(cells.flatMap((cell) => cell.pids))];
    out.push(
      `  ${name} shared the GPU with ${plural(most, 'other process')}${pids.length ? ` (pid ${pids.join(', ')})` : ''} during ${plural(cells.length, 'cell')} (${cells.map((cell) => `${cell.probe}${cell.inferred ? ' (inferred: it takes no look itself)' : ''}`).join(', ')}): a change there is not called the driver's`,
    );
  }
  const sharedNote = (otherProcesses: number | undefined) =>
    otherProcesses ? `  (shared GPU: ${plural(otherProcesses, 'other process')}; not the driver's)` : '';
  out.push(`  facts    ${pair.factsCompared} compared: ${pair.facts.length === 0 ? 'none changed' : `${pair.facts.length} changed`}`);
  const width = Math.max(0, ...pair.facts.map((fact) => fact.name.length));
  for (const fact of pair.facts) out.push(`    ${fact.name.padEnd(width)}  ${show(fact.a)} → ${show(fact.b)}${sharedNote(fact.shared)}`);
  if (pair.decided.length)
    out.push(`  decided  ${plural(pair.decided.length, 'fact')} decided on one side only (null on the other; not a change):`);
  const dw = Math.max(0, ...pair.decided.map((fact) => fact.name.length));
  for (const fact of pair.decided)
    out.push(`    ${fact.name.padEnd(dw)}  ${show(fact.a)} → ${show(fact.b)} (${fact.a === null ? 'newly decided' : 'no longer decided'})`);
  out.push(`  cells    ${pair.cellsCompared} compared: ${pair.cells.length === 0 ? 'same outcomes' : `${pair.cells.length} changed`}`);
  const sharedProbes = new Set([...pair.shared.a, ...pair.shared.b].map((sharedCell) => sharedCell.probe));
  for (const cell of pair.cells)
    out.push(`    ${cell.probe}  ${cell.a} → ${cell.b}${sharedProbes.has(cell.probe) ? "  (shared GPU: not the driver's)" : ''}`);
  if (pair.verdicts.length) {
    out.push(`  expectations  ${plural(pair.verdicts.length, 'outcome')} changed (the fact or metric under each decides):`);
    for (const verdict of pair.verdicts) out.push(`    ${verdict.title}  ${verdict.a} → ${verdict.b}`);
  }
  const tally = pair.metricTally;
  out.push(
    `  metrics  ${tally.compared} compared: ${tally.flagged === 0 ? 'none beyond noise' : `${tally.flagged} beyond noise`}${tally.explained ? `; ${tally.explained} moved with the host or a shared GPU (not the driver's)` : ''}${tally.undecided ? `; ${tally.undecided} too noisy to tell` : ''}`,
  );
  for (const comparison of pair.metrics.filter((metric) => metric.flagged || metric.explained))
    out.push(...metricLines(comparison, '    '));
  const sides = pair.runs.a > 1 || pair.runs.b > 1 ? `; a is ${plural(pair.runs.a, 'run')}, b ${plural(pair.runs.b, 'run')}` : '';
  out.push(
    `    noise: ${pair.history.runs ? `${plural(pair.history.runs, 'other run')} of this key (${plural(pair.history.groups, 'group')} by driver and kernel)` : 'no other runs of this key'}${sides}, and the runs' own repetitions where they have them`,
  );
  const tested = tally.noiseFrom.runs + tally.noiseFrom.repeats + tally.noiseFrom.none;
  if (tested)
    out.push(
      `    ${plural(tested, 'series')} moved beyond their minimum effect and were tested against their noise: ${[
        tally.noiseFrom.runs ? `${tally.noiseFrom.runs} against the runs of the key` : '',
        tally.noiseFrom.repeats ? `${tally.noiseFrom.repeats} against the runs' repetitions` : '',
        tally.noiseFrom.none ? `${tally.noiseFrom.none} with no noise measured (the minimum effect alone decided)` : '',
      ]
        .filter(Boolean)
        .join(', ')}`,
    );
  const nearest = tally.nearest;
  if (nearest)
    out.push(
      `    nearest a change: ${seriesText(nearest.name, nearest.attrs)} moved ${pct(nearest.move)}${nearest.absolute ? ` (${formatValue(nearest.delta, nearest.unit)})` : ''}, no change up to ±${pct(nearest.noise)}${nearest.absolute ? ` or ${formatValue(nearest.absolute, nearest.unit)}` : ''}`,
    );
  if (all) {
    out.push('  every metric compared:');
    for (const comparison of pair.metrics) out.push(...metricLines(comparison, `    ${comparison.flagged ? '✗ ' : '  '}`));
  }
  for (const [name, only] of [
    ['a', pair.onlyA],
    ['b', pair.onlyB],
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
  diff: RecordsDiff,
  inputs: { a: string; b: string },
  filesOf: Map<string, string> | SideFiles,
  all = false,
): string {
  const files = filesOf instanceof Map ? { a: filesOf, b: filesOf } : filesOf;
  const out = [`a: ${inputs.a}`, `b: ${inputs.b}`, ''];
  for (const pair of diff.pairs) out.push(...pairLines(pair, files, all), '');
  for (const [name, list] of [
    ['a', diff.onlyA],
    ['b', diff.onlyB],
  ] as const) {
    for (const unpaired of list)
      out.push(
        `${unpaired.comparedInstead ? `also in ${name}, not compared` : `only in ${name}`}: ${unpaired.key} (${sideLine(unpaired.record, files[name].get(unpaired.record.id))}): ${unpaired.reason}`,
      );
  }
  for (const conflict of diff.conflicts ?? []) {
    const ids = conflict.records.map((record) => `${record.id.slice(0, 8)} (${record.date.slice(0, 10)})`).join(', ');
    out.push(
      `CONFLICT in ${conflict.side}: ${conflict.key}: ${conflict.records.length} records disagree on ${plural(conflict.facts.length, 'fact')} (${conflict.facts.join(', ')}): ${ids}; only one of them was compared: look at both before trusting the diff`,
    );
  }
  if (diff.onlyA.length || diff.onlyB.length || diff.conflicts?.length) out.push('');
  const facts = diff.pairs.reduce((total, pair) => total + pair.facts.length, 0);
  const cells = diff.pairs.reduce((total, pair) => total + pair.cells.length, 0);
  const metrics = diff.pairs.reduce((total, pair) => total + pair.metricTally.flagged, 0);
  const explained = diff.pairs.reduce(
    (total, pair) => total + pair.metricTally.explained + pair.facts.filter((fact) => fact.shared).length,
    0,
  );
  const shared = diff.pairs.some((pair) => pair.shared.a.length || pair.shared.b.length);
  const pairs = plural(diff.pairs.length, 'pair');
  out.push(
    diff.changed
      ? `Behaviour changed (${pairs} of records compared): ${[facts ? plural(facts, 'fact') + ' changed' : '', cells ? plural(cells, 'cell outcome') + ' changed' : '', metrics ? plural(metrics, 'metric') + ' beyond noise' : ''].filter(Boolean).join(', ')}.`
      : `Same behaviour (${pairs} of records compared): no fact or cell outcome changed, no metric beyond its noise${explained ? ` (${explained} moved with the host or ${shared ? 'while the GPU was shared' : 'a shared GPU'}: not the driver's)` : ''}.`,
  );
  if (shared) out.push("The GPU was shared with other processes during some cells (above): their numbers are not the driver's alone.");
  return `${out.join('\n')}\n`;
}
