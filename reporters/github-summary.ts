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
  const cellCounts = summary.counts.cells;
  const verdictCounts = summary.counts.verdicts;
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
    `**Cells**: ${start.cells.length} planned: ${cellCounts.passed ?? 0} passed, ${cellCounts.skipped ?? 0} skipped, ${(cellCounts.error ?? 0) + (cellCounts.cancelled ?? 0)} errors${cellCounts['not-run'] ? `, ${cellCounts['not-run']} not run` : ''} · ` +
      `**Expectations**: ${verdictCounts.passed} passed, ${verdictCounts.failed} failed, ${verdictCounts.error} errors, ${verdictCounts.skipped} skipped`,
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
        `> Nothing was measured on ${empty.length === 1 ? 'target' : 'targets'} ${esc(empty.map((target) => target.name).join(', '))}: every probe there was skipped (see the table).`,
      );
  }
  if (unjudged) head.push('', '> [!WARNING]', `> ${esc(unjudged.finding)}`, `> Fix: ${esc(unjudged.fix)}.`);
  head.push('', ...table(summary.targets, Math.floor(SUMMARY_BUDGET_BYTES / 2), where), '');

  let extras = sections
    .map((section) => section.trim())
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
  for (const [i, target] of targets.entries()) {
    const sysinfo = target.sysinfo;
    const planned = target.cells.filter((cell) => cell.planned);
    const count = (...st: string[]) => planned.filter((cell) => st.includes(cell.status)).length;
    const vc = countVerdicts(target);
    const env = target.detectedEnvironment ?? 'unknown';
    const notRun = count('not-run');
    const status = targetStatus(target);
    const row = [
      target.name,
      target.declaredEnvironment === 'auto'
        ? env
        : target.declaredEnvironment === env
          ? env
          : `${target.declaredEnvironment} (detected ${env})`,
      str(sysinfo.gpu_name) ?? '—',
      str(sysinfo.driver_version) ?? (sysinfo.driver_found === false ? 'none found' : '—'),
      [str(sysinfo.os_name) ?? str(sysinfo.os_family), str(sysinfo.arch)].filter(Boolean).join(', ') || '—',
      `${count('passed')}/${count('skipped')}/${count('error', 'cancelled')}${notRun ? ` (${notRun} not run)` : ''}`,
      `${vc.passed}/${vc.failed}/${vc.error}/${vc.skipped}`,
      `${statusMark[status]} ${status}${target.error ? ` (${target.error.code})` : target.skipped ? ` (${target.skipped.code})` : ''}`,
    ].map((field) => cellText(field));
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
    (target) =>
      target.error ||
      probeErrors(target).length ||
      target.verdicts.some((verdict) => verdict.status === 'failed' || verdict.status === 'error'),
  );
  if (!bad.length) return '';
  const heading = '### Expectations not met, and errors';
  let left = budget - bytes(heading);
  let omitted = 0;
  const blocks: string[] = [heading];
  for (const [i, target] of bad.entries()) {
    const share = Math.floor(left / (bad.length - i));
    const verdicts = target.verdicts.filter((verdict) => verdict.status === 'failed' || verdict.status === 'error');
    const vc = countVerdicts(target);
    const what = [
      target.error && `target error ${target.error.code}`,
      vc.failed && `${vc.failed} failed`,
      vc.error && `${vc.error} not judged (error)`,
    ].filter(Boolean);
    const lines = [`#### ${statusMark[targetStatus(target)]} ${esc(target.name)}: ${esc(what.join(', ') || 'probe errors')}`];
    if (target.error) lines.push('', `**Target error** \`${esc(target.error.code)}\`: ${esc(oneLine(target.error.message, LINE_CHARS))}`);
    for (const cell of probeErrors(target))
      lines.push(
        '',
        `**Probe ${esc(cell.probe)} failed** \`${esc(cell.errorCode ?? 'PROBE_CRASHED')}\`: ${esc(oneLine(cell.reason ?? '', LINE_CHARS))}`,
      );
    let size = bytes(lines.join('\n'));
    let dropped = 0;
    for (const verdict of verdicts) {
      const item = detailItem(verdict, target);
      // Room is kept for the line that counts what is left out.
      if (dropped || size + bytes(item) + 300 > share) {
        dropped++;
        continue;
      }
      lines.push('', item);
      size += bytes(item) + 1;
    }
    if (dropped) lines.push('', `_${dropped} more of ${esc(target.name)}'s expectations not met are not shown here._`);
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

function detailItem(verdict: Verdict, target: TargetResult): string {
  const lines = evidenceLines(verdict, target);
  let shown = lines.slice(0, EVIDENCE_LINES).map((line) => cut(line, 300));
  let text = shown.join('\n');
  if (text.length > EVIDENCE_CHARS) {
    text = cut(text, EVIDENCE_CHARS);
    shown = text.split('\n');
  }
  const more = lines.length - shown.length;
  const evidence = `${esc(text)}${more > 0 ? `\n… ${more} more line${more === 1 ? '' : 's'}: the whole evidence is in junit.xml and summary.json in the run folder` : ''}`;
  return [
    `<details><summary>${verdictMark[verdict.status]} <code>${esc(cut(verdict.title, 300))}</code> [${esc(verdict.source)}]: ${verdict.status}</summary>`,
    '',
    `**Expected** <code>${esc(cut(verdict.title, 300))}</code> · ${observedText(verdict)}`,
    ...(verdict.why ? ['', `**Why**: ${esc(cut(oneLine(verdict.why, LINE_CHARS), LINE_CHARS))}`] : []),
    ...(evidence ? ['', `<pre>${evidence}</pre>`] : []),
    '</details>',
  ].join('\n');
}

/** What was observed: a fact's value; a metric's failing samples, as the verdict's message words them; or why nothing was judged. */
function observedText(verdict: Verdict): string {
  if (verdict.status === 'error') return `**not judged**: ${esc(oneLine(verdict.message, LINE_CHARS))}`;
  if (verdict.evidence?.kind === 'fact') return `**observed** <code>${esc(cut(verdict.actual, 400))}</code>`;
  const lead = `expected ${verdict.title}, observed `;
  return `**observed** ${esc(oneLine(verdict.message.startsWith(lead) ? verdict.message.slice(lead.length) : verdict.message, LINE_CHARS))}`;
}

function str(value: unknown): string | undefined {
  return typeof value === 'string' && value ? value : undefined;
}
