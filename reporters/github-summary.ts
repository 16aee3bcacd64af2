/**
 * The job summary of a run (GITHUB_STEP_SUMMARY): the counts, a table with a row per target,
 * then the failed expectations with their evidence, kept under SUMMARY_BUDGET_BYTES (GitHub
 * refuses a step's summary over 1 MiB): what does not fit is counted and pointed to (junit.xml
 * and summary.json in the run folder hold every one).
 */
import type { RunContext } from './reporter.ts';
import { judgedNothingWords, type RunSummary, type TargetResult, type Verdict } from '../verdicts/verdicts.ts';
import { countVerdicts, evidenceLines, measuredNothing, probeErrors, statusMark, targetStatus, verdictMark } from './github-targets.ts';
import { bytes, cellText, cut, cutBytes, esc, LINE_CHARS, oneLine } from './github-text.ts';

/** The job summary this reporter writes, extras included: half of GitHub's 1 MiB per step. */
export const SUMMARY_BUDGET_BYTES = 512 * 1024;
/** The evidence of one expectation in the summary: lines and characters. */
const EVIDENCE_LINES = 24;
const EVIDENCE_CHARS = 2400;

const exitWords: Record<number, string> = {
  0: 'every expectation met',
  1: 'expectations not met',
  2: 'a configuration error',
  3: 'a target or a probe failed',
  4: 'nothing measured (--strict)',
  5: 'behaviour changed against the committed records (--fail-on-change)',
  6: 'an output could not be written',
  130: 'interrupted',
};

export function summaryMarkdown(summary: RunSummary, code: number, context: RunContext, sections: string[]): string {
  const runDir = context.runDir;
  const where = `\`junit.xml\` and \`summary.json\` in the run folder \`${esc(runDir)}\``;
  const start = summary.start as RunSummary['start'] & { mergedFrom?: unknown[] };
  const c = summary.counts.cells;
  const v = summary.counts.verdicts;
  const what = start.mergedFrom
    ? ` (merged from ${start.mergedFrom.length} log${start.mergedFrom.length === 1 ? '' : 's'})`
    : start.shard
      ? ` (shard ${start.shard.index}/${start.shard.total})`
      : '';
  const unjudged = judgedNothingWords(summary);
  const head = [
    `## ${statusMark[code === 0 ? (unjudged ? 'skipped' : 'passed') : code === 1 || code === 5 ? 'failed' : code === 130 ? 'interrupted' : code === 4 ? 'skipped' : 'error']} cudamatrix run \`${esc(start.runId)}\`${what}`,
    '',
    `**Exit status ${code}**: ${code === 0 && unjudged ? 'nothing judged' : (exitWords[code] ?? 'see the table')} · ${summary.targets.length} target${summary.targets.length === 1 ? '' : 's'} from \`${esc(start.matrix.file)}\``,
    '',
    `**Cells**: ${start.cells.length} planned: ${c.passed ?? 0} passed, ${c.skipped ?? 0} skipped, ${(c.error ?? 0) + (c.cancelled ?? 0)} errors${c['not-run'] ? `, ${c['not-run']} not run` : ''} · ` +
      `**Expectations**: ${v.passed} passed, ${v.failed} failed, ${v.error} errors, ${v.skipped} skipped`,
  ];
  head.push('', `**Run folder**: \`${esc(runDir)}\`: \`events.jsonl\` (every sample and reading), \`junit.xml\`, \`summary.json\``);
  if (summary.interrupted) head.push('', '> [!WARNING]', '> The run was interrupted: the results cover what finished.');
  if (summary.nothingMeasured)
    head.push(
      '',
      code === 4 ? '> [!CAUTION]' : '> [!NOTE]',
      `> Nothing was measured: every probe was skipped (no usable NVIDIA driver, or targets that cannot run probes)${code === 4 ? ', and --strict fails such a run' : ''}.`,
    );
  else {
    const empty = measuredNothing(summary);
    if (empty.length)
      head.push(
        '',
        '> [!WARNING]',
        `> Nothing was measured on ${empty.length === 1 ? 'target' : 'targets'} ${esc(empty.map((t) => t.name).join(', '))}: every probe there was skipped (see the table).`,
      );
  }
  if (unjudged) head.push('', '> [!WARNING]', `> ${esc(unjudged.finding)}`, `> Fix: ${esc(unjudged.fix)}.`);
  head.push('', ...table(summary.targets, Math.floor(SUMMARY_BUDGET_BYTES / 2), where), '');

  let extras = sections
    .map((s) => s.trim())
    .filter(Boolean)
    .join('\n\n');
  const maxExtras = Math.floor(SUMMARY_BUDGET_BYTES / 4);
  if (bytes(extras) > maxExtras)
    extras = `${cutBytes(extras, maxExtras - 200)}\n\n_(cut here: this section passed its share of the job summary)_`;
  const headText = head.join('\n');
  const detailBudget = SUMMARY_BUDGET_BYTES - bytes(headText) - bytes(extras) - 2048;
  const detail = details(summary.targets, detailBudget, where);
  return [headText, detail, extras].filter(Boolean).join('\n\n').concat('\n');
}

/** The table: a row per target; over `budget` (hundreds of targets), the rest is counted instead. */
function table(targets: TargetResult[], budget: number, where: string): string[] {
  const rows = [
    '| target | environment | GPU | driver | OS | cells<br>pass/skip/err | expectations<br>pass/fail/err/skip | status |',
    '|---|---|---|---|---|---|---|---|',
  ];
  let size = bytes(rows.join('\n'));
  for (const [i, t] of targets.entries()) {
    const s = t.sysinfo;
    const planned = t.cells.filter((x) => x.planned);
    const count = (...st: string[]) => planned.filter((x) => st.includes(x.status)).length;
    const vc = countVerdicts(t);
    const env = t.detectedEnvironment ?? 'unknown';
    const notRun = count('not-run');
    const status = targetStatus(t);
    const row = [
      t.name,
      t.declaredEnvironment === 'auto' ? env : t.declaredEnvironment === env ? env : `${t.declaredEnvironment} (detected ${env})`,
      str(s.gpu_name) ?? '—',
      str(s.driver_version) ?? (s.driver_found === false ? 'none found' : '—'),
      [str(s.os_name) ?? str(s.os_family), str(s.arch)].filter(Boolean).join(', ') || '—',
      `${count('passed')}/${count('skipped')}/${count('error', 'cancelled')}${notRun ? ` (${notRun} not run)` : ''}`,
      `${vc.passed}/${vc.failed}/${vc.error}/${vc.skipped}`,
      `${statusMark[status]} ${status}${t.error ? ` (${t.error.code})` : t.skipped ? ` (${t.skipped.code})` : ''}`,
    ].map((x) => cellText(x));
    const line = `| ${row.join(' | ')} |`;
    if (size + bytes(line) > budget) {
      rows.push(
        '',
        `_${targets.length - i} more targets are not in this table (it would pass its share of the job summary): see ${where}._`,
      );
      break;
    }
    rows.push(line);
    size += bytes(line) + 1;
  }
  return rows;
}

/**
 * The targets with failed or errored expectations (or a target error), each with every such
 * expectation in a <details>: expected and observed, its why, its evidence. The budget is shared
 * out: each target may take an equal part of what is left, so that one target's long evidence
 * cannot push the others out; what a target's part cannot hold is counted.
 */
function details(targets: TargetResult[], budget: number, where: string): string {
  const bad = targets.filter(
    (t) => t.error || probeErrors(t).length || t.verdicts.some((v) => v.status === 'failed' || v.status === 'error'),
  );
  if (!bad.length) return '';
  const heading = '### Expectations not met, and errors';
  let left = budget - bytes(heading);
  let omitted = 0;
  const blocks: string[] = [heading];
  for (const [i, t] of bad.entries()) {
    const share = Math.floor(left / (bad.length - i));
    const verdicts = t.verdicts.filter((v) => v.status === 'failed' || v.status === 'error');
    const vc = countVerdicts(t);
    const what = [
      t.error && `target error ${t.error.code}`,
      vc.failed && `${vc.failed} failed`,
      vc.error && `${vc.error} not judged (error)`,
    ].filter(Boolean);
    const lines = [`#### ${statusMark[targetStatus(t)]} ${esc(t.name)}: ${esc(what.join(', ') || 'probe errors')}`];
    if (t.error) lines.push('', `**Target error** \`${esc(t.error.code)}\`: ${esc(oneLine(t.error.message, LINE_CHARS))}`);
    for (const c of probeErrors(t))
      lines.push(
        '',
        `**Probe ${esc(c.probe)} failed** \`${esc(c.errorCode ?? 'PROBE_CRASHED')}\`: ${esc(oneLine(c.reason ?? '', LINE_CHARS))}`,
      );
    let size = bytes(lines.join('\n'));
    let dropped = 0;
    for (const v of verdicts) {
      const item = detailItem(v, t);
      // Room is kept for the line that counts what is left out.
      if (dropped || size + bytes(item) + 300 > share) {
        dropped++;
        continue;
      }
      lines.push('', item);
      size += bytes(item) + 1;
    }
    if (dropped) lines.push('', `_${dropped} more of ${esc(t.name)}'s expectations not met are not shown here._`);
    omitted += dropped;
    const block = lines.join('\n');
    left -= bytes(block) + 2;
    blocks.push(block);
  }
  if (omitted)
    blocks.push(
      `**${omitted} failed or errored expectation${omitted === 1 ? ' is' : 's are'} not shown** (the summary is kept under ${SUMMARY_BUDGET_BYTES / 1024} KiB; GitHub takes 1 MiB per step): every one, with its evidence, is in ${where}.`,
    );
  return blocks.join('\n\n');
}

function detailItem(v: Verdict, t: TargetResult): string {
  const lines = evidenceLines(v, t);
  let shown = lines.slice(0, EVIDENCE_LINES).map((l) => cut(l, 300));
  let text = shown.join('\n');
  if (text.length > EVIDENCE_CHARS) {
    text = cut(text, EVIDENCE_CHARS);
    shown = text.split('\n');
  }
  const more = lines.length - shown.length;
  const evidence = `${esc(text)}${more > 0 ? `\n… ${more} more line${more === 1 ? '' : 's'}: the whole evidence is in junit.xml and summary.json in the run folder` : ''}`;
  return [
    `<details><summary>${verdictMark[v.status]} <code>${esc(cut(v.title, 300))}</code> [${esc(v.source)}]: ${v.status}</summary>`,
    '',
    `**Expected** <code>${esc(cut(v.title, 300))}</code> · ${observedText(v)}`,
    ...(v.why ? ['', `**Why**: ${esc(cut(oneLine(v.why, LINE_CHARS), LINE_CHARS))}`] : []),
    ...(evidence ? ['', `<pre>${evidence}</pre>`] : []),
    '</details>',
  ].join('\n');
}

/** What was observed: a fact's value; a metric's failing samples, as the verdict's message words them; or why nothing was judged. */
function observedText(v: Verdict): string {
  if (v.status === 'error') return `**not judged**: ${esc(oneLine(v.message, LINE_CHARS))}`;
  if (v.evidence?.kind === 'fact') return `**observed** <code>${esc(cut(v.actual, 400))}</code>`;
  const lead = `expected ${v.title}, observed `;
  return `**observed** ${esc(oneLine(v.message.startsWith(lead) ? v.message.slice(lead.length) : v.message, LINE_CHARS))}`;
}

function str(v: unknown): string | undefined {
  return typeof v === 'string' && v ? v : undefined;
}
