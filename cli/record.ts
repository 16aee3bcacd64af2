/**
 * cudamatrix record: turns event logs (or a file a user submitted) into behaviour records under
 * records/, one file per observation, each judged against the default expectations;
 * with --submit, into one file to attach to a pull request instead.
 */
import { existsSync, realpathSync, statSync } from 'node:fs';
import path from 'node:path';
import { checkOutputPath, isStdout, makeDir, writeOutput } from '../core/fs.ts';
import { withLock } from '../core/lock.ts';
import { CudamatrixError, ExitCode } from '../core/errors.ts';
import { TOOL_VERSION } from '../core/version.ts';
import { keyText, sameObservation, type BehaviourRecord } from '../behaviour/behaviour-record.ts';
import { measuredSomething, NOTHING_MEASURED, readInput, type Input } from '../behaviour/read.ts';
import { REDACTED, Redaction, thisMachine } from '../behaviour/redact.ts';
import { diffPair, sharedCells } from '../behaviour/diff.ts';
import { metricLines } from '../behaviour/diff-text.ts';
import { RecordStore, type Drift } from '../behaviour/store.ts';
import { leavingLines, renderSubmission } from '../behaviour/submit.ts';
import { refuseImplausible } from '../behaviour/plausibility.ts';
import { loadMatrixArg } from './matrix-arg.ts';

export interface RecordOptions {
  recordsDir: string;
  submit?: string;
}

/** The repository the records folder lies in (the nearest folder above it with a .git), if any. */
function repositoryOf(dir: string): string | null {
  let at = path.resolve(dir);
  for (;;) {
    if (existsSync(path.join(at, '.git'))) return at;
    const up = path.dirname(at);
    if (up === at) return null;
    at = up;
  }
}

/** The event log relative to the repository, / separated, where it lies inside it. */
function evidenceOf(log: string, repo: string | null): string | undefined {
  if (!repo) return undefined;
  const rel = path.relative(realpathSync(repo), realpathSync(log));
  return rel && !rel.startsWith('..') && !path.isAbsolute(rel) ? rel.split(path.sep).join('/') : undefined;
}

const show = (value: unknown) => (value === undefined ? '(absent)' : typeof value === 'string' ? value : JSON.stringify(value));

function describeInput(input: Input): string {
  const what = { 'event-log': 'event log', record: 'record file', submission: 'submitted file', 'records-folder': 'folder of records' }[
    input.kind
  ];
  return `${input.source} (${what}): ${input.records.length} observation${input.records.length === 1 ? '' : 's'}`;
}

/** --records-dir must be a folder (or not yet there), and the records root, not one driver-<version>/ of it. */
function checkRecordsDir(dir: string): void {
  const st = statSync(dir, { throwIfNoEntry: false });
  if (st && !st.isDirectory())
    throw new CudamatrixError(
      'USAGE',
      `--records-dir ${dir} is not a folder; pass the records folder (records), where record writes driver-<version>/*.json`,
    );
  if (/^driver-/.test(path.basename(path.resolve(dir)))) {
    throw new CudamatrixError(
      'USAGE',
      `--records-dir ${dir} is a driver folder; pass the records root (${path.dirname(dir)}): record writes each record under its own driver-<version>/ there`,
    );
  }
}

/** `machine`: the host and user names to redact wherever they appear (this machine's; a test passes its own). */
export async function recordCommand(sources: string[], opts: RecordOptions, machine = thisMachine()): Promise<number> {
  if (opts.submit) checkOutputPath(opts.submit, '--submit');
  else checkRecordsDir(opts.recordsDir);
  const defaults = (await loadMatrixArg(undefined)).expectations;
  // Every input is read before anything is written: a bad one stops the command with nothing half done.
  const inputs = sources.map((source) => readInput(source, defaults, { complete: true }));
  // A submission's pseudonyms are salted, the salt made here for this file alone and never written.
  const redaction = opts.submit ? Redaction.forSubmission(machine) : new Redaction(null, machine);
  const prepared = prepareInputs(inputs, opts.submit ? null : repositoryOf(opts.recordsDir), redaction);
  // A value that cannot be true refuses the whole command, as a bad input does: no record, no submission file.
  refuseImplausible(
    prepared.flatMap(({ input, records }) =>
      records.map((record) => ({ record, where: `${input.source}, target ${record.observed.target}` })),
    ),
  );
  const log = opts.submit && isStdout(opts.submit) ? process.stderr : process.stdout;
  const say = (line: string) => log.write(`${line}\n`);
  if (!reportUnrecorded(prepared, say)) return ExitCode.nothingMeasured;
  return opts.submit ? submit(prepared, opts.submit, redaction, say) : store(prepared, opts.recordsDir, say).status;
}

type Prepared = { input: Input; records: BehaviourRecord[]; empty: string[] };

/** The records of each input that hold an observation, redacted, with their evidence (the log inside the repository). */
function prepareInputs(inputs: Input[], repo: string | null, redaction: Redaction): Prepared[] {
  // Names found in any record (a host in one's session) are redacted in all of them.
  redaction.learnFrom(inputs.flatMap((input) => input.records.map(({ record }) => record)));
  return inputs.map((input) => ({
    input,
    // A record of nothing (no fact, no metric) would, being newer, hide a full record of its key: never written.
    empty: input.records
      .filter(({ record }) => !measuredSomething(record))
      .map(({ record, file }) => `${file ?? record.observed.target} (${keyText(record.key)}): ${NOTHING_MEASURED}`),
    records: input.records
      .filter(({ record }) => measuredSomething(record))
      .map(({ record }) => {
        const evidence = input.eventLog ? evidenceOf(input.eventLog, repo) : record.evidence;
        const clean = redaction.record(record);
        return evidence ? { ...clean, evidence } : clean;
      }),
  }));
}

/** Says what was not recorded and why; false when nothing at all is to be recorded (said on stderr unless `quiet`). */
function reportUnrecorded(prepared: Prepared[], say: (line: string) => void, quiet = false): boolean {
  let total = 0;
  for (const { input, records, empty } of prepared) {
    total += records.length;
    const why = [...input.unrecorded, ...empty];
    if (records.length === 0) {
      say(`${input.source}: no GPU observation, nothing to record${why.length ? `: ${why.join('; ')}` : ''}`);
    } else if (empty.length) say(`${input.source}: not recorded: ${empty.join('; ')}`);
  }
  if (total === 0 && !quiet) {
    process.stderr.write(
      `nothing recorded: no input holds an observation of a GPU (a record needs a target whose sysinfo found a driver and a GPU, and a probe that measured a fact or a metric)\n`,
    );
  }
  return total > 0;
}

/**
 * Records inputs already read (gha merge: the merged run, less its lost targets) into the records
 * folder as `cudamatrix record` does, saying what it did; returns the records it made and the files
 * it wrote.
 */
export function recordInputs(
  inputs: Input[],
  recordsDir: string,
  say: (line: string) => void,
): { status: number; records: BehaviourRecord[]; written: string[] } {
  checkRecordsDir(recordsDir);
  const prepared = prepareInputs(inputs, repositoryOf(recordsDir), new Redaction());
  // (The lines already say that nothing is recorded, and why.)
  if (!reportUnrecorded(prepared, say, true)) return { status: ExitCode.nothingMeasured, records: [], written: [] };
  return { ...store(prepared, recordsDir, say), records: prepared.flatMap((preparedInput) => preparedInput.records) };
}

function submit(prepared: Prepared[], file: string, redaction: Redaction, say: (line: string) => void): number {
  const chosen: BehaviourRecord[] = [];
  for (const { input, records } of prepared) {
    say(describeInput(input));
    for (const record of records) {
      // A drifted copy of an observation (metrics beyond their noise) is kept, as `record` keeps it.
      const same = chosen.find((kept) => sameObservation(kept, record) && !diffPair(kept, record).changed);
      say(
        `  ${keyText(record.key)} (target ${record.observed.target}, run ${record.observed.runId})${same ? `: the same observation as run ${same.observed.runId}, left out` : ''}`,
      );
      if (!same) chosen.push(record);
    }
  }
  const text = renderSubmission(chosen, TOOL_VERSION);
  // What leaves the machine is said before it is written: every text in it, and what was replaced.
  say('');
  for (const line of leavingLines(chosen, redaction.replaced, isStdout(file) ? 'standard output' : file, text)) say(line);
  writeOutput(file, text);
  if (!isStdout(file))
    say(
      `\nwrote ${file}: ${chosen.length} observation${chosen.length === 1 ? '' : 's'} with a summary. Send it with the issue form "Submit a behaviour record" of the cudamatrix repository (attach the file): a workflow checks it and answers on the issue (docs/measure-your-machine.md).`,
    );
  say(`Removed from it: ${REDACTED.join('; ')}. Read it before you send it: it is Markdown and JSON, nothing else.`);
  return ExitCode.ok;
}

/**
 * Stores the records holding the records folder's lock: many `record`s at once into one folder
 * do what they would one after the other (an observation written once, never overwritten).
 */
function store(prepared: Prepared[], dir: string, say: (line: string) => void): { status: number; written: string[] } {
  if (!prepared.some((preparedInput) => preparedInput.records.length)) return storeUnlocked(prepared, dir, say);
  makeDir(dir, '--records-dir');
  return withLock(path.join(dir, '.record.lock'), `recording into ${dir}`, () => storeUnlocked(prepared, dir, say));
}

function storeUnlocked(prepared: Prepared[], dir: string, say: (line: string) => void): { status: number; written: string[] } {
  const records = new RecordStore(dir);
  const written: string[] = [];
  let clashes = 0;
  let conflicts = 0;
  for (const { input, records: list } of prepared) {
    if (list.length === 0) continue;
    say(describeInput(input));
    for (const record of list) {
      say(`  ${keyText(record.key)} (target ${record.observed.target}, run ${record.observed.runId})`);
      const outcome = records.store(record);
      if (outcome.kind === 'duplicate') {
        say(`    already recorded: ${outcome.existing} is the record of this run; not written`);
        continue;
      }
      if (outcome.kind === 'clash') {
        clashes++;
        say(
          `    NOT WRITTEN: ${outcome.file} already holds a record of this run and target with other facts; a run's record does not change (remove that file first if this one is right)`,
        );
        continue;
      }
      const passed = record.verdicts.filter((verdict) => verdict.status === 'passed').length;
      const counts = `${Object.keys(record.facts).length} facts, ${record.metrics.length} metrics; default expectations: ${passed} of ${record.verdicts.length} passed${record.evidence ? `; evidence ${record.evidence}` : ''}`;
      written.push(outcome.file);
      if (outcome.kind === 'written') say(`    written ${outcome.file}: ${counts}`);
      else {
        say(
          `    REPLACED ${outcome.file}: ${counts}; it held a record of this run and target with fewer facts or cells (${outcome.before.facts} facts, ${outcome.before.cells} cells), none different: made from a truncated log of the run`,
        );
      }
      for (const conflict of outcome.conflicts) {
        conflicts++;
        say(`    CONFLICT with ${conflict.file} (same key, different facts; both are kept and the report shows the conflict):`);
        const width = Math.max(...conflict.facts.map((fact) => fact.name.length));
        for (const fact of conflict.facts) say(`      ${fact.name.padEnd(width)}  ${show(fact.there)} there, ${show(fact.here)} here`);
      }
      for (const decision of outcome.decided) {
        const newly = decision.facts.some((fact) => fact.there === null && fact.here !== null && fact.here !== undefined);
        say(
          `    ${newly ? 'NEWLY DECIDED' : 'LEFT UNDECIDED'} against ${decision.file} (same key; a fact decided in one record is null in the other, none decided differently: not a conflict):`,
        );
        const width = Math.max(...decision.facts.map((fact) => fact.name.length));
        for (const fact of decision.facts)
          say(
            `      ${fact.name.padEnd(width)}  ${show(fact.there)} there, ${show(fact.here)} here${fact.here === undefined || fact.there === undefined ? '' : fact.there === null ? ' (newly decided)' : fact.here === null ? ' (undecided here)' : ''}`,
          );
      }
      for (const line of partialLines(outcome.partial)) say(line);
      if (outcome.kind === 'written' && outcome.drift) for (const line of driftLines(outcome.drift)) say(line);
      const shared = sharedCells(record);
      if (shared.length)
        say(
          `    shared the GPU with ${Math.max(...shared.map((cell) => cell.processes))} other process(es) (pid ${[...new Set(shared.flatMap((cell) => cell.pids))].join(', ') || 'unknown'}) during ${shared.length} cells: kept, but not a baseline nor a measurement of the key's noise, and what moved there is not called the driver's`,
        );
      if (outcome.kind === 'written' && outcome.repeatOf)
        say(
          `    a repeat of ${outcome.repeatOf.file} (same key and facts, metrics within their noise): ${outcome.repeatOf.runs} runs of this observation now measure its run-to-run noise`,
        );
    }
  }
  if (conflicts)
    say(
      `\n${conflicts} conflict${conflicts === 1 ? '' : 's'}: the same observation key with other fact values. Look for what the key does not say (a setting, a reboot, hardware) before trusting either.`,
    );
  return { status: clashes ? ExitCode.configuration : ExitCode.ok, written };
}

/** The same observation with metrics (or cells) beyond their noise: why it was written. */
function driftLines(drift: Drift): string[] {
  const what = [
    drift.metrics.some((metric) => metric.flagged)
      ? `${drift.metrics.filter((metric) => metric.flagged).length} metric series beyond their noise`
      : '',
    drift.cells.length ? `${drift.cells.length} probe outcome${drift.cells.length === 1 ? '' : 's'} changed` : '',
  ]
    .filter(Boolean)
    .join(', ');
  return [
    `    DRIFTED from ${drift.file} (same key and facts; ${what}): kept as the newest record of this observation, which the report and diff use`,
    ...drift.cells.map((cell) => `      ${cell.probe}  ${cell.a} → ${cell.b}`),
    ...drift.metrics.filter((metric) => metric.flagged).flatMap((metric) => metricLines(metric, '      ')),
  ];
}

/** Records of the same key that only lack or add facts (a run of other probes): not a conflict. */
function partialLines(partial: { file: string; facts: { name: string; here: unknown; there: unknown }[] }[]): string[] {
  return partial.map((partialRecord) => {
    const here = partialRecord.facts.filter((fact) => fact.there === undefined).length;
    const there = partialRecord.facts.filter((fact) => fact.here === undefined).length;
    return `    same key as ${partialRecord.file}, no fact in both that differs (${here} only here, ${there} only there: other probes ran); not a conflict`;
  });
}
