/**
 * The run summary as JSON: targets, cells with their records (the samples counted, not given:
 * they are in the event log), verdicts and counts. Each verdict carries its evidence (every
 * matching sample within and outside the bounds, or the fact's value, reason and probe
 * evidence), the matrix's `why` and the event log's path.
 */
import { writeOutput } from '../core/fs.ts';
import { knownBadForSysinfo } from '../matrix/known-bad.ts';
import { sampleCount, type CellEndEvent } from '../events/events.ts';
import type { SyncReporter } from './reporter.ts';
import { withEventsFile, type RunSummary } from '../verdicts/verdicts.ts';

export function summaryJson(summary: RunSummary): string {
  return [...summaryJsonParts(summary)].join('');
}

/**
 * summaryJson in parts, target by target: a fleet's summary (111 MB for 2,000 targets) is
 * written as it is made, never held as one string. The text is JSON.stringify's, on one line
 * (indented, it took 1.6 times the CPU time and twice the bytes: bench/scale), and a newline.
 */
export function* summaryJsonParts(summary: RunSummary): Generator<string> {
  const head = JSON.stringify({
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
  });
  // "targets" is the last key: its "[]" becomes the list, an element at a time.
  yield `${head.slice(0, -']}'.length)}`;
  for (const [i, targetResult] of summary.targets.entries()) {
    const target = {
      name: targetResult.name,
      environment: {
        declared: targetResult.declaredEnvironment,
        detected: targetResult.detectedEnvironment,
        class: targetResult.environmentClass,
      },
      sysinfo: targetResult.sysinfo,
      // The known-bad driver registry's entries the target's driver matches (a warning, never a verdict).
      knownBad: knownBadOf(targetResult.sysinfo),
      error: targetResult.error ? { code: targetResult.error.code, message: targetResult.error.message } : null,
      // A target that cannot run probes by its nature (WSL 1): why its cells were skipped.
      skipped: targetResult.skipped ? { code: targetResult.skipped.code, reason: targetResult.skipped.message } : null,
      cells: targetResult.cells.filter((cell) => cell.planned).map(cellOf),
      verdicts: targetResult.verdicts,
    };
    yield `${i ? ',' : ''}${JSON.stringify(target)}`;
  }
  yield ']}\n';
}

/** The known-bad registry's entries for a target's sysinfo, as {id, source}; [] when none (or unreadable). */
function knownBadOf(sysinfo: Record<string, unknown>): { id: string; source: string }[] {
  try {
    return (knownBadForSysinfo(sysinfo)?.entries ?? []).map((e) => ({ id: e.id, source: e.source }));
  } catch {
    return [];
  }
}

/**
 * A cell as the summary gives it: the cell-end without its type, and with its records but the
 * samples (the readings behind the metrics: most of a run's bytes, every one in the event log
 * the summary names), counted in `samples` after them.
 */
function cellOf(cell: CellEndEvent): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(cell)) {
    if (key === 'type') continue;
    if (key !== 'records') {
      out[key] = value;
      continue;
    }
    out.records = cell.records.filter((record) => record.type !== 'sample');
    out.samples = sampleCount(cell);
  }
  return out;
}

export function jsonReporter(file: string | ((runDir: string) => string)): SyncReporter {
  return {
    name: 'json',
    onEnd(summary, context) {
      writeOutput(typeof file === 'string' ? file : file(context.runDir), summaryJsonParts(withEventsFile(summary, context.eventsFile)));
    },
  };
}
