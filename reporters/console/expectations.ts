/**
 * The expectations not met, as the console lists them: those of one target that failed for one
 * reason together, and under each the evidence it rests on.
 */
import { attrText, attrsText, rangeText, sampleText, varyingAttrs, type SampleEvidence } from '../../verdicts/evidence.ts';
import type { Verdict } from '../../verdicts/verdicts.ts';
import type { Line } from './target-block.ts';

/**
 * Failed and unjudged expectations, those of one target that failed for one reason (its probes
 * all failed the same way, the target unreachable) together: the reason is said once.
 */
export function groupVerdicts(bad: Verdict[]): { target: string; status: Verdict['status']; reason: string; verdicts: Verdict[] }[] {
  const groups = new Map<string, { target: string; status: Verdict['status']; reason: string; verdicts: Verdict[] }>();
  for (const verdict of bad) {
    // "probe X failed: CODE: ..." differs only by its probe when the target is the cause.
    const reason = verdict.status === 'error' ? verdict.message.replace(/^probe \S+ failed: /, '') : verdict.message;
    const key = verdict.status === 'error' ? `${verdict.target}\n${reason}` : `${verdict.target}\n${verdict.title}\n${groups.size}`;
    const group = groups.get(key) ?? { target: verdict.target, status: verdict.status, reason, verdicts: [] };
    group.verdicts.push(verdict);
    groups.set(key, group);
  }
  return [...groups.values()];
}

/**
 * Under a failed expectation: the matrix's why, then for a metric the samples outside the bounds
 * (with the attributes that set them apart) and the range of those within; for a fact what was
 * observed and the probe's evidence, or a sysinfo value's source.
 */
export function evidenceOf(verdict: Verdict): Line[] {
  const lines: Line[] = [];
  if (verdict.why) lines.push(['why', verdict.why]);
  const e = verdict.evidence;
  if (e?.kind === 'metric') {
    const all = [...e.outside, ...e.within];
    // The attributes that tell the samples apart; for a lone sample, those "where" did not fix.
    const varying = varyingAttrs(all);
    const where = Object.keys(verdict.expectation.where ?? {});
    const keys = varying.length ? varying : Object.keys(all[0]?.attrs ?? {}).filter((k) => !where.includes(k));
    const shown = e.outside.slice(0, 5).map((sample) => sampleText(sample, keys));
    lines.push(['outside', `${shown.join(', ')}${e.outside.length > shown.length ? ` and ${e.outside.length - shown.length} more` : ''}`]);
    if (e.within.length)
      lines.push([
        'within',
        `${rangeText(e.within)} (${e.within.length} of ${all.length}${keys.length ? `: ${pointsText(e.within, keys)}` : ''})`,
      ]);
  } else if (e?.kind === 'fact') {
    lines.push(['observed', verdict.actual]);
    if (e.summary) lines.push(['evidence', e.summary.length > 240 ? `${e.summary.slice(0, 239)}…` : e.summary]);
    if (e.source) lines.push(['source', e.source]);
  }
  return lines;
}

/** Where the samples were taken: "size 16 MiB, 256 MiB, 1 GiB" for one attribute, else "a 1, b 2; a 3, b 4". */
function pointsText(samples: SampleEvidence[], keys: string[]): string {
  const cut = samples.slice(0, 8);
  const more = samples.length > cut.length ? `, and ${samples.length - cut.length} more` : '';
  if (keys.length === 1) {
    const [key] = keys as [string];
    const texts = cut.map((sample) => attrText(key, sample.attrs[key]));
    const name = texts[0]!.split(' ')[0]!;
    // "size 16 MiB, 256 MiB": the attribute's name once, when every text starts with it.
    if (texts.every((text) => text.startsWith(`${name} `)))
      return `${name} ${texts.map((text) => text.slice(name.length + 1)).join(', ')}${more}`;
    return `${texts.join(', ')}${more}`;
  }
  return `${cut.map((sample) => attrsText(sample.attrs, keys)).join('; ')}${more}`;
}
