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
export function targetStatus(t: TargetResult): Status {
  const planned = t.cells.filter((c) => c.planned);
  if (t.error || planned.some((c) => c.status === 'error') || t.verdicts.some((v) => v.status === 'error')) return 'error';
  if (t.verdicts.some((v) => v.status === 'failed')) return 'failed';
  if (planned.some((c) => c.status === 'cancelled' || c.status === 'not-run')) return 'interrupted';
  if (planned.length > 0 && planned.every((c) => c.status === 'skipped')) return 'skipped';
  return 'passed';
}

/** The targets whose every planned cell was skipped: nothing measured there (no usable driver, or a target that cannot have a GPU). */
export function measuredNothing(summary: RunSummary): TargetResult[] {
  // As RunSummary.nothingMeasured, per target: whatever its verdicts (a fact of a skipped sysinfo is still judged).
  return summary.targets.filter((t) => {
    const planned = t.cells.filter((c) => c.planned);
    return !t.error && planned.length > 0 && planned.every((c) => c.status === 'skipped');
  });
}

/** Why a target measured nothing: its not-applicable error, or its first skipped probe's reason. */
export function skipReason(t: TargetResult): string {
  return t.skipped?.message ?? t.cells.find((c) => c.planned && c.status === 'skipped')?.reason ?? 'every probe was skipped';
}

/** The probes that failed where no target error or errored expectation says so already. */
export function probeErrors(t: TargetResult): TargetResult['cells'] {
  if (t.error) return [];
  const judged = new Set(t.verdicts.filter((v) => v.status === 'error').map((v) => probeOf(v)));
  return t.cells.filter((c) => c.planned && c.status === 'error' && !judged.has(c.probe));
}

export function countVerdicts(t: TargetResult): Record<Verdict['status'], number> {
  const n = { passed: 0, failed: 0, error: 0, skipped: 0 };
  for (const v of t.verdicts) n[v.status]++;
  return n;
}

function probeOf(v: Verdict): string {
  const name = (v.expectation.fact ?? v.expectation.metric)!;
  return name.slice(0, name.indexOf('.'));
}

/**
 * The evidence behind a verdict as lines: for a metric every matching sample, those outside the
 * bounds first (marked FAIL); for a fact the value, its source and the probe's evidence; for a
 * probe that failed, the end of its stderr; then the event log.
 */
export function evidenceLines(v: Verdict, t: TargetResult): string[] {
  const lines: string[] = [];
  const e = v.evidence;
  if (e?.kind === 'metric') {
    const row = (mark: string, s: (typeof e.outside)[number]) =>
      `${mark.padEnd(4)}  ${sampleValueText(s)}${Object.keys(s.attrs).length ? `  ${attrsText(s.attrs)}` : ''}`;
    for (const s of e.outside) lines.push(row('FAIL', s));
    for (const s of e.within) lines.push(row('ok', s));
  } else if (e?.kind === 'fact') {
    if (e.summary) lines.push(`evidence: ${e.summary}`);
    const deciding = e.evidence?.source;
    if (typeof deciding === 'string')
      lines.push(`deciding source: ${readingLabels[deciding] ? `${readingLabels[deciding]} (${deciding})` : deciding}`);
    if (e.source) lines.push(`source: ${e.source}`);
    lines.push(`observed: ${JSON.stringify(e.value)}${e.reason ? ` (${e.reason})` : ''}`);
  } else if (v.status === 'error') {
    const cell = t.cells.find((c) => c.planned && c.probe === probeOf(v));
    const tail = cell?.stderrTail?.trim();
    if (tail)
      lines.push(
        'probe stderr (the end):',
        ...tail
          .split('\n')
          .slice(-8)
          .map((l) => `  ${l}`),
      );
  }
  if (v.eventsFile) lines.push(`event log: ${v.eventsFile}`);
  return lines;
}
