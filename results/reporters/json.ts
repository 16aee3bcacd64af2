/**
 * The run summary as JSON: targets, cells with their records, verdicts and counts. Each verdict
 * carries its evidence (every matching sample within and outside the bounds, or the fact's value,
 * reason and probe evidence), the matrix's `why` and the event log's path.
 */
import { writeOutput } from '../../core/fs.ts';
import type { Reporter } from '../reporter.ts';
import { withEventsFile, type RunSummary } from '../verdicts.ts';

export function summaryJson(summary: RunSummary): string {
  return [...summaryJsonParts(summary)].join('');
}

/**
 * summaryJson in parts, target by target: a fleet's summary (470 MB for 2,000 targets) is
 * written as it is made, never held as one string. The text is JSON.stringify(…, null, 2)'s.
 */
export function* summaryJsonParts(summary: RunSummary): Generator<string> {
  const head = JSON.stringify(
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
      targets: [],
    },
    null,
    2,
  );
  const targets = summary.targets.map((t) => () => ({
    name: t.name,
    environment: { declared: t.declaredEnvironment, detected: t.detectedEnvironment, class: t.environmentClass },
    sysinfo: t.sysinfo,
    error: t.error ? { code: t.error.code, message: t.error.message } : null,
    // A target that cannot run probes by its nature (WSL 1): why its cells were skipped.
    skipped: t.skipped ? { code: t.skipped.code, reason: t.skipped.message } : null,
    cells: t.cells.filter((c) => c.planned).map(({ type: _t, ...c }) => c),
    verdicts: t.verdicts,
  }));
  if (targets.length === 0) {
    yield `${head}\n`;
    return;
  }
  // "targets" is the last key: its "[]" becomes the list. Each element is cut out of a list
  // at the same place, so that JSON.stringify indents it as it would in the whole.
  const [open, close] = ['{\n  "targets": [\n', '\n  ]\n}'];
  yield `${head.slice(0, -'[]\n}'.length)}[\n`;
  for (const [i, target] of targets.entries()) {
    const text = JSON.stringify({ targets: [target()] }, null, 2);
    yield `${i ? ',\n' : ''}${text.slice(open.length, -close.length)}`;
  }
  yield `${close}\n`;
}

export function jsonReporter(file: string | ((runDir: string) => string)): Reporter {
  return {
    name: 'json',
    onEnd(summary, context) {
      writeOutput(typeof file === 'string' ? file : file(context.runDir), summaryJsonParts(withEventsFile(summary, context.eventsFile)));
    },
  };
}
