/**
 * One line per target in the form node health checkers read (NHC, a Slurm HealthCheckProgram
 * wrapper): the node, the exit status this target alone gives, and one reason.
 *
 *   n1 0 OK: 13 cells (12 skipped), 4 expectations passed
 *   n2 1 ERROR: nhc: Health check failed: pinned-vram.counts_as_vram == false: got true
 *
 * The node is the Slurm node the target ran on ("slurm job 12 on n2"), else the target's name.
 * docs/transports/slurm.md#a-health-check says how a wrapper drains on it.
 */
import { errorClassOf, ExitCode } from '../../core/errors.ts';
import { writeOutput } from '../../core/fs.ts';
import { nodeOf } from '../fleet.ts';
import type { Reporter } from '../reporter.ts';
import type { RunSummary, TargetResult } from '../verdicts.ts';

const oneLine = (text: string) => text.replace(/\s+/g, ' ').trim();

/** A target's own exit status (as a run of it alone would end, --strict included) and its reason. */
export function targetHealth(t: TargetResult, options: { strict: boolean }): { status: number; reason: string } {
  const failed = (reason: string) => `ERROR: nhc: Health check failed: ${t.name}: ${oneLine(reason)}`;
  if (t.error) {
    const status = errorClassOf(t.error.code) === 'configuration' ? ExitCode.configuration : ExitCode.infrastructure;
    return { status, reason: failed(`${t.error.code}: ${t.error.message}`) };
  }
  const planned = t.cells.filter((c) => c.planned);
  const broken = planned.find((c) => c.status === 'error');
  if (broken)
    return { status: ExitCode.infrastructure, reason: failed(`${broken.probe} ${broken.errorCode ?? 'error'}: ${broken.reason ?? ''}`) };
  const verdict = t.verdicts.find((v) => v.status === 'failed') ?? t.verdicts.find((v) => v.status === 'error');
  if (verdict) return { status: ExitCode.expectationFailed, reason: failed(`${verdict.title}: ${verdict.message}`) };
  const skipped = planned.filter((c) => c.status === 'skipped');
  // --strict: a node that measured nothing (no driver, no GPU) is not healthy.
  if (options.strict && planned.length > 0 && skipped.length === planned.length)
    return {
      status: ExitCode.nothingMeasured,
      reason: failed(`nothing measured (--strict): ${planned.length} cells skipped, ${skipped[0]!.probe}: ${skipped[0]!.reason ?? ''}`),
    };
  const passed = t.verdicts.filter((v) => v.status === 'passed').length;
  return {
    status: ExitCode.ok,
    reason: `OK: ${planned.length} cells${skipped.length ? ` (${skipped.length} skipped)` : ''}, ${passed} expectations passed`,
  };
}

export function nhcLines(summary: RunSummary, options: { strict: boolean }): string {
  return summary.targets
    .map((t) => {
      const { status, reason } = targetHealth(t, options);
      return `${nodeOf(t)} ${status} ${reason}\n`;
    })
    .join('');
}

export function nhcReporter(file: string): Reporter {
  return {
    name: 'nhc',
    onEnd(summary, context) {
      writeOutput(file, nhcLines(summary, { strict: context.strict }));
    },
  };
}
