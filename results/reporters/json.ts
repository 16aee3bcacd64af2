/**
 * The run summary as JSON: targets, cells with their records, verdicts and counts. Each verdict
 * carries its evidence (every matching sample within and outside the bounds, or the fact's value,
 * reason and probe evidence), the matrix's `why` and the event log's path.
 */
import { writeOutput } from '../../core/fs.ts';
import type { Reporter } from '../reporter.ts';
import { withEventsFile, type RunSummary } from '../verdicts.ts';

export function summaryJson(summary: RunSummary): string {
  return `${JSON.stringify(
    {
      runId: summary.start.runId,
      events: summary.eventsFile ?? null,
      tool: { name: summary.start.tool, version: summary.start.version },
      started: summary.start.started,
      finished: summary.end?.finished ?? null,
      shard: summary.start.shard,
      matrix: summary.start.matrix.file,
      counts: summary.counts,
      nothingMeasured: summary.nothingMeasured,
      interrupted: summary.interrupted,
      targets: summary.targets.map((t) => ({
        name: t.name,
        environment: { declared: t.declaredEnvironment, detected: t.detectedEnvironment, class: t.environmentClass },
        sysinfo: t.sysinfo,
        error: t.error ? { code: t.error.code, message: t.error.message } : null,
        // A target that cannot run probes by its nature (WSL 1): why its cells were skipped.
        skipped: t.skipped ? { code: t.skipped.code, reason: t.skipped.message } : null,
        cells: t.cells.filter((c) => c.planned).map(({ type: _t, ...c }) => c),
        verdicts: t.verdicts,
      })),
    },
    null,
    2,
  )}\n`;
}

export function jsonReporter(file: string | ((runDir: string) => string)): Reporter {
  return {
    name: 'json',
    onEnd(summary, context) {
      writeOutput(typeof file === 'string' ? file : file(context.runDir), summaryJson(withEventsFile(summary, context.eventsFile)));
    },
  };
}
