/**
 * What the GitHub reporter's annotations and job summary both say of a target: its status in a
 * word, its counts, the probe errors no verdict covers, and the evidence behind a verdict.
 */
import { attrsText, readingLabels, sampleValueText } from '../verdicts/evidence.ts';
import type { RunSummary, TargetResult, Verdict } from '../verdicts/verdicts.ts';

export type Status = 'passed' | 'failed' | 'error' | 'interrupted' | 'skipped';
export const statusMark: Record<Status, string> = { passed: '✅', failed: '❌', error: '💥', interrupted: '⏹️', skipped: '⏭️' };
export const verdictMark = { passed: '✓', failed: '✗', error: '✗', skipped: '-' } as const;

/** A target in a word: an error (of the target, a probe or an expectation) first, as the exit status ranks them. */
export function targetStatus(target: TargetResult): Status {
  const planned = target.cells.filter((cell) => cell.planned);
  if (target.error || planned.some((cell) => cell.status === 'error') || target.verdicts.some((verdict) => verdict.status === 'error'))
    return 'error';
  if (target.verdicts.some((verdict) => verdict.status === 'failed')) return 'failed';
  if (planned.some((cell) => cell.status === 'cancelled' || cell.status === 'not-run')) return 'interrupted';
  if (planned.length > 0 && planned.every((cell) => cell.status === 'skipped')) return 'skipped';
  return 'passed';
}

/** The targets whose every planned cell was skipped: nothing measured there (no usable driver, or a target that cannot have a GPU). */
export function measuredNothing(summary: RunSummary): TargetResult[] {
  // As RunSummary.nothingMeasured, per target: whatever its verdicts (a fact of a skipped sysinfo is still judged).
  return summary.targets.filter((target) => {
    const planned = target.cells.filter((cell) => cell.planned);
    return !target.error && planned.length > 0 && planned.every((cell) => cell.status === 'skipped');
  });
}

/** Why a target measured nothing: its not-applicable error, or its first skipped probe's reason. */
export function skipReason(target: TargetResult): string {
  return (
    target.skipped?.message ?? target.cells.find((cell) => cell.planned && cell.status === 'skipped')?.reason ?? 'every probe was skipped'
  );
}

/** The probes that failed where no target error or errored expectation says so already. */
export function probeErrors(target: TargetResult): TargetResult['cells'] {
  if (target.error) return [];
  const judged = new Set(target.verdicts.filter((verdict) => verdict.status === 'error').map((verdict) => probeOf(verdict)));
  return target.cells.filter((cell) => cell.planned && cell.status === 'error' && !judged.has(cell.probe));
}

export function countVerdicts(target: TargetResult): Record<Verdict['status'], number> {
  const counts = { passed: 0, failed: 0, error: 0, skipped: 0 };
  for (const verdict of target.verdicts) counts[verdict.status]++;
  return counts;
}

function probeOf(verdict: Verdict): string {
  const name = (verdict.expectation.fact ?? verdict.expectation.metric)!;
  return name.slice(0, name.indexOf('.'));
}

/**
 * The evidence behind a verdict as lines: for a metric every matching sample, those outside the
 * bounds first (marked FAIL); for a fact the value, its source and the probe's evidence; for a
 * probe that failed, the end of its stderr; then the event log.
 */
export function evidenceLines(verdict: Verdict, target: TargetResult): string[] {
  const lines: string[] = [];
  const e = verdict.evidence;
  if (e?.kind === 'metric') {
    const row = (mark: string, sample: (typeof e.outside)[number]) =>
      `${mark.padEnd(4)}  ${sampleValueText(sample)}${Object.keys(sample.attrs).length ? `  ${attrsText(sample.attrs)}` : ''}`;
    for (const sample of e.outside) lines.push(row('FAIL', sample));
    for (const sample of e.within) lines.push(row('ok', sample));
  } else if (e?.kind === 'fact') {
    if (e.summary) lines.push(`evidence: ${e.summary}`);
    const deciding = e.evidence?.source;
    if (typeof deciding === 'string')
      lines.push(`deciding source: ${readingLabels[deciding] ? `${readingLabels[deciding]} (${deciding})` : deciding}`);
    if (e.source) lines.push(`source: ${e.source}`);
    lines.push(`observed: ${JSON.stringify(e.value)}${e.reason ? ` (${e.reason})` : ''}`);
  } else if (verdict.status === 'error') {
    const cell = target.cells.find((candidate) => candidate.planned && candidate.probe === probeOf(verdict));
    const tail = cell?.stderrTail?.trim();
    if (tail)
      lines.push(
        'probe stderr (the end):',
        ...tail
          .split('\n')
          .slice(-8)
          .map((line) => `  ${line}`),
      );
  }
  if (verdict.eventsFile) lines.push(`event log: ${verdict.eventsFile}`);
  return lines;
}
