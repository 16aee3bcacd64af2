/**
 * One line per target in the form node health checkers read (NHC, a Slurm HealthCheckProgram
 * wrapper): the node, the exit status this target alone gives, and one reason.
 *
 *   n1 0 OK: 13 cells (12 skipped), 4 expectations passed
 *   n2 1 ERROR: nhc: Health check failed: pinned-vram.counts_as_vram == false: got true
 *   n3 7 ERROR: nhc: Health check failed: n3: known-bad driver 591.32: ... (source ...)
 *   n4 4 ERROR: nhc: Health check failed: n4: nothing measured: 13 cells skipped, sysinfo: no NVIDIA driver found ...
 *
 * The third as `cudamatrix gate` fails a run (its exit status 7): the driver is in the known-bad
 * registry for a behaviour the node checked, by more than a single report. The last is the
 * status `--strict` gives a run that measured nothing (4), with or without --strict: a node that
 * lost its driver is the first thing a health check is for. A target that asks for no GPU
 * (docker gpus: none) measuring nothing is as asked, and OK.
 * The node is the Slurm node the target ran on ("slurm job 12 on n2"), else the target's name.
 * docs/transports/slurm.md#a-health-check says how a wrapper drains on it.
 */
import { errorClassOf, ExitCode } from '../core/errors.ts';
import { writeOutput } from '../core/fs.ts';
import { knownBadFails, knownBadForSysinfo, type KnownBadEntry } from '../matrix/known-bad.ts';
import { nodeOf } from '../verdicts/fleet-outliers.ts';
import type { Reporter } from './reporter.ts';
import type { RunSummary, TargetResult } from '../verdicts/verdicts.ts';

const oneLine = (text: string) => text.replace(/\s+/g, ' ').trim();

/** A target's health as an exit status (as a run of it alone would end, measuring nothing as --strict counts it) and its reason. */
export function targetHealth(
  target: TargetResult,
  options: { knownBad?: readonly KnownBadEntry[] } = {},
): { status: number; reason: string } {
  const failed = (reason: string) => `ERROR: nhc: Health check failed: ${target.name}: ${oneLine(reason)}`;
  if (target.error) {
    const status = errorClassOf(target.error.code) === 'configuration' ? ExitCode.configuration : ExitCode.infrastructure;
    return { status, reason: failed(`${target.error.code}: ${target.error.message}`) };
  }
  const planned = target.cells.filter((cell) => cell.planned);
  const broken = planned.find((cell) => cell.status === 'error');
  if (broken)
    return { status: ExitCode.infrastructure, reason: failed(`${broken.probe} ${broken.errorCode ?? 'error'}: ${broken.reason ?? ''}`) };
  const verdict =
    target.verdicts.find((candidate) => candidate.status === 'failed') ?? target.verdicts.find((candidate) => candidate.status === 'error');
  if (verdict) return { status: ExitCode.expectationFailed, reason: failed(`${verdict.title}: ${verdict.message}`) };
  // As `cudamatrix gate` fails it: a known-bad driver for a behaviour this node checked.
  const ran = new Set(planned.filter((cell) => cell.status === 'passed').map((cell) => cell.probe));
  const bad = knownBadForSysinfo(target.sysinfo, options.knownBad)?.entries.find((e) => knownBadFails(e, ran));
  if (bad)
    return {
      status: ExitCode.knownBad,
      reason: failed(`known-bad driver ${String(target.sysinfo.driver_version)}: ${bad.symptom} (source ${bad.source})`),
    };
  const skipped = planned.filter((cell) => cell.status === 'skipped');
  const nothingMeasured = planned.length > 0 && skipped.length === planned.length;
  // A node that measured nothing (no usable driver, no GPU) is not healthy, --strict or not,
  // unless its target asks for no GPU.
  if (nothingMeasured && !target.asksForNoGpu) {
    const why = target.skipped ? `${target.skipped.code}: ${target.skipped.message}` : `${skipped[0]!.probe}: ${skipped[0]!.reason ?? ''}`;
    return { status: ExitCode.nothingMeasured, reason: failed(`nothing measured: ${planned.length} cells skipped, ${why}`) };
  }
  const passed = target.verdicts.filter((candidate) => candidate.status === 'passed').length;
  const asked = nothingMeasured ? ': the target asks for no GPU' : '';
  return {
    status: ExitCode.ok,
    reason: `OK: ${planned.length} cells${skipped.length ? ` (${skipped.length} skipped${asked})` : ''}, ${passed} expectations passed`,
  };
}

export function nhcLines(summary: RunSummary, options: { knownBad?: readonly KnownBadEntry[] } = {}): string {
  return summary.targets
    .map((target) => {
      const { status, reason } = targetHealth(target, options);
      return `${nodeOf(target)} ${status} ${reason}\n`;
    })
    .join('');
}

export function nhcReporter(file: string): Reporter {
  return {
    name: 'nhc',
    onEnd(summary) {
      writeOutput(file, nhcLines(summary));
    },
  };
}
