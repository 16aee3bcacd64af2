/**
 * The verdict engine: from an event log to, per target, the cells that ran and every
 * expectation judged against what the probes observed. Pure: the same log gives the same verdicts.
 */
import { packageFileForDisplay } from '../core/package-root.ts';
import { errorClassOf, ExitCode, isNotApplicable } from '../core/errors.ts';
import { formatValue, toUnit } from '../core/units.ts';
import type { Expectation } from '../matrix/schema.ts';
import { resolveResultName } from '../probes/catalogue.ts';
import type { MetricRecord, ProbeRecord, Scalar } from '../probes/protocol.ts';
import type {
  CellEndEvent,
  RunEndEvent,
  RunEvent,
  RunStartEvent,
  TargetErrorEvent,
  TargetReadyEvent,
  TargetStartEvent,
} from '../events/events.ts';
import { describeFactEvidence, sampleText, varyingAttrs, type SampleEvidence, type VerdictEvidence } from './evidence.ts';

export type { FactEvidence, MetricEvidence, SampleEvidence, VerdictEvidence } from './evidence.ts';

export type VerdictStatus = 'passed' | 'failed' | 'skipped' | 'error';

export interface Verdict {
  target: string;
  /** Where the expectation came from: the target itself, or an environment class / "all". */
  source: string;
  expectation: Expectation;
  /** "pinned-vram.counts_as_vram == false", "sync-latency.p50_us <= 50 us" */
  title: string;
  status: VerdictStatus;
  actual: string;
  message: string;
  /** The matrix's `why` for the expectation, where it gives one. */
  why?: string;
  /**
   * What the verdict rests on: for a metric every matching sample, within and outside the bounds;
   * for a fact its value, reason and the probe's evidence. Absent where nothing was judged
   * (skipped, the probe failed or did not report the result).
   */
  evidence?: VerdictEvidence;
  /** The run's event log, with every record and reading behind the verdict (when known). */
  eventsFile?: string;
}

export interface TargetResult {
  name: string;
  declaredEnvironment: string;
  detectedEnvironment: string | null;
  /** The environment class whose expectations apply (declared, or detected for auto). */
  environmentClass: string | null;
  sysinfo: Record<string, Scalar>;
  ready?: TargetReadyEvent;
  /** What made the target unusable (its cells are errors); not a not-applicable code. */
  error?: TargetErrorEvent;
  /**
   * The target cannot run these probes by its nature (a target-error of class not-applicable,
   * such as WSL_VERSION_1): its cells are skipped with the message as the reason, and the run
   * does not fail because of it.
   */
  skipped?: TargetErrorEvent;
  /** The target asks for no GPU (docker gpus: none): nothing measured there is as asked, not a lost driver. */
  asksForNoGpu: boolean;
  cells: CellEndEvent[];
  verdicts: Verdict[];
}

export interface RunSummary {
  start: RunStartEvent;
  end?: RunEndEvent;
  targets: TargetResult[];
  counts: { cells: Record<string, number>; verdicts: Record<VerdictStatus, number> };
  /** Nothing was measured: every planned cell was skipped (no driver anywhere, or a target that cannot run probes). */
  nothingMeasured: boolean;
  /**
   * The run judged nothing, and why: the matrix has no expectations at all (no `extends: default`,
   * no `expectations:`, no target's `expect:`), or none applies to the probes and environments
   * that ran. Such a run passes whatever the driver does. Absent when something was judged (or
   * nothing was planned, or the run was interrupted).
   */
  judgedNothing?: 'no-expectations' | 'none-applied';
  hasConfigurationError: boolean;
  hasInfrastructureError: boolean;
  interrupted: boolean;
  /** The event log the summary was made from, when the caller gave it. */
  eventsFile?: string;
}

export function summarize(events: RunEvent[], options: { eventsFile?: string } = {}): RunSummary {
  const start = events.find((e): e is RunStartEvent => e.type === 'run-start');
  if (!start) throw new Error('event log without run-start');
  const end = events.find((e): e is RunEndEvent => e.type === 'run-end');
  const byName = new Map<string, TargetResult>();
  const target = (name: string): TargetResult => {
    let targetResult = byName.get(name);
    if (!targetResult) {
      targetResult = {
        name,
        declaredEnvironment: 'auto',
        detectedEnvironment: null,
        environmentClass: null,
        sysinfo: {},
        asksForNoGpu: false,
        cells: [],
        verdicts: [],
      };
      byName.set(name, targetResult);
    }
    return targetResult;
  };
  const starts = new Map<string, TargetStartEvent>();
  for (const e of events) {
    if (e.type === 'target-start') {
      starts.set(e.target, e);
      target(e.target).declaredEnvironment = e.environment;
      target(e.target).asksForNoGpu = e.noGpu === true;
    } else if (e.type === 'target-ready') {
      target(e.target).ready = e;
    } else if (e.type === 'target-error') {
      if (isNotApplicable(e.code)) target(e.target).skipped ??= e;
      else target(e.target).error ??= e;
    } else if (e.type === 'cell-end') {
      const targetResult = target(e.target);
      // Merged shards may each carry the target's sysinfo run; one is enough.
      if (targetResult.cells.some((existing) => existing.cell === e.cell && existing.planned === e.planned)) continue;
      targetResult.cells.push(e);
      if (e.probe === 'sysinfo') {
        for (const record of e.records)
          if (record.type === 'sysinfo' && !(record.name in targetResult.sysinfo)) targetResult.sysinfo[record.name] = record.value;
      }
    }
  }
  for (const targetResult of byName.values()) {
    const detected = targetResult.sysinfo.environment;
    targetResult.detectedEnvironment = typeof detected === 'string' ? detected : null;
    targetResult.environmentClass =
      targetResult.declaredEnvironment !== 'auto' ? targetResult.declaredEnvironment : targetResult.detectedEnvironment;
    const targetStart = starts.get(targetResult.name);
    if (targetStart) targetResult.verdicts = judgeTarget(targetResult, start, targetStart);
  }
  const targets = [...byName.values()];
  const planned = targets.flatMap((targetResult) => targetResult.cells.filter((cell) => cell.planned));
  const cells: Record<string, number> = {};
  for (const cell of planned) cells[cell.status] = (cells[cell.status] ?? 0) + 1;
  const verdicts: Record<VerdictStatus, number> = { passed: 0, failed: 0, skipped: 0, error: 0 };
  for (const verdict of targets.flatMap((targetResult) => targetResult.verdicts)) verdicts[verdict.status]++;
  // A target skipped by its nature (TargetResult.skipped) is no error: its cells are skipped, as on a
  // machine without a driver, and count as such (nothingMeasured and --strict included).
  const errors = targets.flatMap((targetResult) => [
    ...(targetResult.error ? [targetResult.error.code] : []),
    ...targetResult.cells.filter((cell) => cell.status === 'error').map((cell) => cell.errorCode ?? 'PROBE_CRASHED'),
  ]);
  const summary: RunSummary = {
    start,
    end,
    targets,
    counts: { cells, verdicts },
    nothingMeasured: planned.length > 0 && planned.every((cell) => cell.status === 'skipped'),
    hasConfigurationError: errors.some((code) => errorClassOf(code) === 'configuration'),
    hasInfrastructureError: errors.some((code) => errorClassOf(code) !== 'configuration'),
    interrupted: Boolean(end?.interrupted) || !end,
  };
  const judgedNothing = whyNothingJudged(summary, [...starts.values()]);
  if (judgedNothing) summary.judgedNothing = judgedNothing;
  return options.eventsFile === undefined ? summary : withEventsFile(summary, options.eventsFile);
}

/** RunSummary.judgedNothing: why a run that planned cells and ended judged no expectation. */
function whyNothingJudged(summary: RunSummary, starts: TargetStartEvent[]): RunSummary['judgedNothing'] {
  if (summary.interrupted || summary.start.cells.length === 0) return undefined;
  if (Object.values(summary.counts.verdicts).some((count) => count > 0)) return undefined;
  const inMatrix = Object.values(summary.start.matrix.expectations).some((list) => (list?.length ?? 0) > 0);
  return inMatrix || starts.some((targetStart) => targetStart.expect.length > 0) ? 'none-applied' : 'no-expectations';
}

/**
 * What the reporters say of a run that judged nothing (RunSummary.judgedNothing): the finding and
 * its fix, naming the matrix file. Its exit status stays 0: a matrix without expectations is also
 * how behaviour is only measured (for `record`), so the run does not fail, but it must not look
 * like one whose expectations were met.
 */
export function judgedNothingWords(summary: RunSummary): { finding: string; fix: string } | undefined {
  const file = summary.start.matrix.file;
  if (summary.judgedNothing === 'no-expectations')
    return {
      finding: 'This matrix judges nothing: it has no expectations, so the run passes whatever the driver does.',
      fix: `add "extends: default" to ${file} for the default expectations of each environment, or your own ("expectations:" per environment, "expect:" per target): docs/matrix.md#expectations`,
    };
  if (summary.judgedNothing === 'none-applied') {
    const classes = [...new Set(summary.targets.map((target) => target.environmentClass ?? 'unknown'))].join(', ');
    return {
      finding:
        "No expectation was judged: none of the matrix's expectations is on a probe this run ran, in an environment it ran in, so the run passes whatever the driver does.",
      // The embedded default is the package's own file: a user does not edit it, but brings a matrix.
      fix:
        file === packageFileForDisplay('matrix', 'default.yaml')
          ? `the default matrix has no expectation on what ran here (${classes}); measuring is all it does there. To judge it, pass a matrix of your own with expectations (cudamatrix init writes one), or leave out --probe: docs/matrix.md#expectations`
          : `give ${file} expectations for the environments that ran (${classes}) or "extends: default", and check --probe: docs/matrix.md#expectations`,
    };
  }
  return undefined;
}

/**
 * The summary with the event log's path on it and on every verdict (the reporters know the path
 * only at the end of a run). A summary that already names one keeps it, and is returned as it
 * is: only this names one, so its verdicts name theirs (a fleet's are not copied once more by
 * each reporter).
 */
export function withEventsFile(summary: RunSummary, eventsFile: string): RunSummary {
  if (summary.eventsFile !== undefined) return summary;
  return {
    ...summary,
    eventsFile,
    targets: summary.targets.map((target) => ({
      ...target,
      verdicts: target.verdicts.map((verdict) => ({ ...verdict, eventsFile: verdict.eventsFile ?? eventsFile })),
    })),
  };
}

export function exitCodeOf(summary: RunSummary, options: { strict: boolean; unwritten?: readonly string[] }): number {
  if (summary.interrupted) return ExitCode.interrupted;
  // An output the user asked for that is not there fails the job, whatever was measured.
  if (options.unwritten?.length) return ExitCode.outputFailed;
  if (summary.hasConfigurationError) return ExitCode.configuration;
  if (summary.hasInfrastructureError) return ExitCode.infrastructure;
  if (summary.counts.verdicts.failed > 0 || summary.counts.verdicts.error > 0) return ExitCode.expectationFailed;
  if (options.strict && summary.nothingMeasured) return ExitCode.nothingMeasured;
  return ExitCode.ok;
}

/**
 * The status a command exits with and its reporters show: the run's own, or the caller's where it
 * decides more (gha merge: a record clash, --fail-on-change), except that an interrupt and an
 * output not written always win.
 */
export function shownExitCode(summary: RunSummary, context: { strict: boolean; exitCode?: number; unwritten?: readonly string[] }): number {
  const own = exitCodeOf(summary, { strict: context.strict, unwritten: context.unwritten });
  if (own === ExitCode.interrupted || own === ExitCode.outputFailed) return own;
  return context.exitCode ?? own;
}

/** Key under which a target's expectation replaces a class expectation on the same result. */
function expectationKey(e: Expectation): string {
  return e.fact !== undefined ? `fact:${e.fact}` : `metric:${e.metric}:${JSON.stringify(e.where ?? {})}`;
}

function effectiveExpectations(
  targetResult: TargetResult,
  start: RunStartEvent,
  targetStart: TargetStartEvent,
): { source: string; e: Expectation }[] {
  const merged = new Map<string, { source: string; e: Expectation }>();
  const add = (source: string, list: Expectation[] | undefined) => list?.forEach((e) => merged.set(expectationKey(e), { source, e }));
  add('all', start.matrix.expectations.all);
  if (targetResult.environmentClass) add(targetResult.environmentClass, start.matrix.expectations[targetResult.environmentClass]);
  add('target', targetStart.expect);
  return [...merged.values()];
}

function judgeTarget(targetResult: TargetResult, start: RunStartEvent, targetStart: TargetStartEvent): Verdict[] {
  const plannedProbes = new Set(targetResult.cells.filter((cell) => cell.planned).map((cell) => cell.probe));
  const verdicts: Verdict[] = [];
  for (const { source, e } of effectiveExpectations(targetResult, start, targetStart)) {
    const name = (e.fact ?? e.metric)!;
    const probe = name.split('.')[0]!;
    // Class expectations only apply to the probes this target ran in this run or shard.
    if (!plannedProbes.has(probe)) continue;
    const cell = targetResult.cells.find((candidate) => candidate.probe === probe && candidate.planned)!;
    const base: VerdictBase = { target: targetResult.name, source, expectation: e, title: titleOf(e), ...(e.why ? { why: e.why } : {}) };
    // An interrupted run is not a failure of the driver: what it did not finish is not judged.
    if (cell.status === 'not-run' || cell.status === 'cancelled') {
      const what = cell.status === 'not-run' ? 'did not run' : 'was stopped before it finished';
      verdicts.push({ ...base, status: 'skipped', actual: '—', message: `not judged: the run was interrupted and probe ${probe} ${what}` });
      continue;
    }
    if (cell.status === 'error') {
      verdicts.push({
        ...base,
        status: 'error',
        actual: '—',
        message: `probe ${probe} failed: ${cell.errorCode ? `${cell.errorCode}: ` : ''}${cell.reason ?? ''}`,
      });
      continue;
    }
    // A skipped probe (no driver) may still have measured some facts (the OS, the environment):
    // those are judged; what it could not measure is skipped with the probe's reason.
    if (cell.status === 'skipped' && !measured(cell, e)) {
      verdicts.push({ ...base, status: 'skipped', actual: '—', message: `probe ${probe} was skipped: ${cell.reason ?? ''}` });
      continue;
    }
    verdicts.push(e.fact !== undefined ? judgeFact(base, cell, e.fact, e.equals ?? null) : judgeMetric(base, cell, e));
  }
  return verdicts;
}

/** Whether the cell carries a non-null value for the expectation's fact or metric. */
function measured(cell: CellEndEvent, e: Expectation): boolean {
  const qualified = (e.fact ?? e.metric)!;
  const name = qualified.slice(qualified.indexOf('.') + 1);
  const kinds = e.fact !== undefined ? ['fact', 'sysinfo'] : ['metric'];
  return recordsNamed(cell, name).some((record) => kinds.includes(record.type) && 'value' in record && record.value !== null);
}

/**
 * Per list of a cell-end's records (a list replaced is a new key), those that have a name, by
 * name: a fleet's verdicts look each up (2,000 targets: bench/scale).
 */
const namedRecords = new WeakMap<ProbeRecord[], Map<string, ProbeRecord[]>>();

function recordsNamed(cell: CellEndEvent, name: string): ProbeRecord[] {
  let byName = namedRecords.get(cell.records);
  if (!byName) {
    byName = new Map();
    for (const record of cell.records) {
      if (!('name' in record) || typeof record.name !== 'string') continue;
      const list = byName.get(record.name);
      if (list) list.push(record);
      else byName.set(record.name, [record]);
    }
    namedRecords.set(cell.records, byName);
  }
  return byName.get(name) ?? [];
}

type VerdictBase = Omit<Verdict, 'status' | 'actual' | 'message' | 'evidence' | 'eventsFile'>;

function judgeFact(base: VerdictBase, cell: CellEndEvent, qualified: string, equals: Scalar): Verdict {
  const name = qualified.slice(qualified.indexOf('.') + 1);
  const rec = recordsNamed(cell, name).find((record) => record.type === 'fact' || record.type === 'sysinfo') as
    { value: Scalar; reason?: string; source?: string; evidence?: Record<string, unknown> } | undefined;
  if (!rec) {
    return { ...base, status: 'error', actual: '—', message: `probe ${cell.probe} did not report ${qualified}` };
  }
  const hasEvidence = rec.evidence !== undefined && Object.keys(rec.evidence).length > 0;
  const evidence: VerdictEvidence = {
    kind: 'fact',
    value: rec.value,
    ...(rec.reason ? { reason: rec.reason } : {}),
    ...(rec.source ? { source: rec.source } : {}),
    ...(hasEvidence ? { evidence: rec.evidence, summary: describeFactEvidence(rec.evidence!) } : {}),
  };
  const actual = rec.value === null ? `null${rec.reason ? ` (${rec.reason})` : ''}` : JSON.stringify(rec.value);
  if (rec.value === equals) return { ...base, status: 'passed', actual, message: `${qualified} is ${actual}`, evidence };
  return {
    ...base,
    status: 'failed',
    actual,
    message: `expected ${qualified} to be ${JSON.stringify(equals)}, observed ${actual}`,
    evidence,
  };
}

function judgeMetric(base: VerdictBase, cell: CellEndEvent, e: Expectation): Verdict {
  const qualified = e.metric!;
  const name = qualified.slice(qualified.indexOf('.') + 1);
  const unit = resolveResultName(qualified, 'metric')?.metric?.unit ?? 'count';
  const matches = recordsNamed(cell, name).filter(
    (record): record is MetricRecord =>
      record.type === 'metric' && Object.entries(e.where ?? {}).every(([k, wanted]) => record.attrs?.[k] === wanted),
  );
  if (matches.length === 0) {
    return {
      ...base,
      status: 'error',
      actual: '—',
      message: `probe ${cell.probe} did not report ${qualified}${e.where ? ` where ${JSON.stringify(e.where)}` : ''}`,
    };
  }
  // The matrix may give ">=" or "<=" beside "between"; the title joins them with "and", so each
  // applies (before, "between" was ignored on a side that ">=" or "<=" also bounded).
  const bound = (values: (number | string | undefined)[], pick: (...candidates: number[]) => number, open: number) => {
    const given = values.filter((value): value is number | string => value !== undefined).map((value) => toUnit(value, unit));
    return given.length ? pick(...given) : open;
  };
  const low = bound([e['>='], e.between?.[0]], Math.max, -Infinity);
  const high = bound([e['<='], e.between?.[1]], Math.min, Infinity);
  // Every matching sample must be within the bounds, and one without a value fails: an
  // expectation on a series (every transfer size, say) holds for each of its samples.
  const isOutside = (record: MetricRecord) => record.value === null || record.value < low || record.value > high;
  const sample = (record: MetricRecord): SampleEvidence => ({
    attrs: record.attrs ?? {},
    value: record.value,
    unit: record.unit,
    ...(record.reason ? { reason: record.reason } : {}),
  });
  const within = matches.filter((match) => !isOutside(match)).map(sample);
  const outside = matches.filter(isOutside).map(sample);
  const evidence: VerdictEvidence = {
    kind: 'metric',
    bounds: { low: Number.isFinite(low) ? low : null, high: Number.isFinite(high) ? high : null, unit },
    within,
    outside,
  };
  const actual = matches
    .map(
      (match) =>
        formatValue(match.value, match.unit) + (match.attrs && Object.keys(match.attrs).length ? ` ${JSON.stringify(match.attrs)}` : ''),
    )
    .join(', ');
  if (outside.length === 0) return { ...base, status: 'passed', actual, message: `${qualified} = ${actual}`, evidence };
  return { ...base, status: 'failed', actual, message: `expected ${base.title}, observed ${failedSamplesText(outside, within)}`, evidence };
}

/**
 * "36.7 GB/s at size 1 MiB; 3 of 4 matching samples within": the failing samples (at most three
 * named), each with the attributes that set the matching samples apart, and how many passed.
 */
function failedSamplesText(outside: SampleEvidence[], within: SampleEvidence[]): string {
  const keys = varyingAttrs([...outside, ...within]);
  const shown = outside.slice(0, 3).map((sample) => sampleText(sample, keys));
  const more = outside.length > shown.length ? ` and ${outside.length - shown.length} more` : '';
  const total = outside.length + within.length;
  return `${shown.join(', ')}${more}${total > 1 ? `; ${within.length} of ${total} matching samples within` : ''}`;
}

export function titleOf(e: Expectation): string {
  if (e.fact !== undefined) return `${e.fact} == ${JSON.stringify(e.equals ?? null)}`;
  const where = e.where ? ` ${JSON.stringify(e.where)}` : '';
  const parts: string[] = [];
  if (e['>='] !== undefined) parts.push(`>= ${e['>=']}`);
  if (e['<='] !== undefined) parts.push(`<= ${e['<=']}`);
  if (e.between) parts.push(`between ${e.between[0]} and ${e.between[1]}`);
  return `${e.metric}${where} ${parts.join(' and ')}`;
}
