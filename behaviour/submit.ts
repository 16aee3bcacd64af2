/**
 * The submitted file: what a user who measured a machine we cannot reach (Windows, WSL2, another
 * GPU) attaches to a pull request in one step, and what a maintainer commits with one command
 * (`cudamatrix record FILE`). One Markdown file: a short summary a reviewer reads on GitHub
 * (the observation, its facts, the verdicts against the default expectations, what was removed
 * for privacy), then the records themselves, as `record` would write them, in a fenced JSON
 * block. A marker comment carries the format version and the sha256 of the records (of their
 * canonical JSON, so that line endings an editor changes do not matter): a file whose records
 * were edited by hand is refused, not committed.
 */
import { createHash } from 'node:crypto';
import { CudamatrixError } from '../core/errors.ts';
import { keyText, recordJson, type BehaviourRecord } from './behaviour-record.ts';
import { checkRecord } from './validate-record.ts';
import { REDACTED } from './redact.ts';

export const SUBMISSION_VERSION = 1;
const MARKER = '<!-- cudamatrix-submission';
const FENCE_INFO = 'json cudamatrix-records';

/** The records' canonical JSON (each as its committed file would hold it, compact), hashed. */
function digest(records: BehaviourRecord[]): string {
  const canonical = records.map((record) => JSON.stringify(JSON.parse(recordJson(record)))).join('\n');
  return createHash('sha256').update(canonical).digest('hex');
}

const cell = (value: unknown) => (typeof value === 'string' ? value : JSON.stringify(value)).replace(/\r?\n/g, ' ').replace(/\|/g, '\\|');

function summary(record: BehaviourRecord): string[] {
  const counts = new Map<string, number>();
  for (const verdict of record.verdicts) counts.set(verdict.status, (counts.get(verdict.status) ?? 0) + 1);
  const out = [
    `## ${keyText(record.key)}`,
    '',
    `Run ${record.observed.runId} (${record.observed.date.slice(0, 10)}), target \`${record.observed.target}\` reached through ${record.observed.session ?? record.observed.transport.join(' → ')}; ` +
      `cudamatrix ${record.tool.cudamatrix}, cudaprobe ${record.tool.cudaprobe ?? 'unknown'}. ${Object.keys(record.facts).length} facts, ${record.metrics.length} metrics, ${record.samples.length} memory samples.`,
    '',
  ];
  const facts = Object.keys(record.facts).sort();
  if (facts.length > 0) {
    out.push('| fact | value |', '| --- | --- |');
    for (const factName of facts) out.push(`| \`${factName}\` | ${cell(record.facts[factName]!.value)} |`);
    out.push('');
  }
  const tally = [...counts].map(([status, count]) => `${count} ${status}`).join(', ') || 'none apply';
  out.push(`Against the default expectations (matrix/default.yaml): ${tally}.`, '');
  if (record.verdicts.length > 0) {
    out.push('| expectation | verdict | observed |', '| --- | --- | --- |');
    for (const verdict of record.verdicts) out.push(`| ${cell(verdict.title)} | ${verdict.status} | ${cell(verdict.actual)} |`);
    out.push('');
  }
  return out;
}

/**
 * The submitted file for these records (already redacted: see redact.ts). Deterministic: the
 * same records give the same file.
 */
export function renderSubmission(records: BehaviourRecord[], toolVersion: string): string {
  const json = JSON.stringify(
    records.map((record) => JSON.parse(recordJson(record))),
    null,
    2,
  );
  // A fence longer than any run of backticks inside, so that no string in a record can end it.
  const fence = '`'.repeat(Math.max(3, ...[...json.matchAll(/`+/g)].map((backticks) => backticks[0].length + 1)));
  const targets = [...new Set(records.map((record) => record.observed.target))].map((target) => `\`${target}\``).join(', ');
  return [
    `# cudamatrix behaviour records: ${records.length} observation${records.length === 1 ? '' : 's'}`,
    '',
    `${MARKER} ${SUBMISSION_VERSION} sha256:${digest(records)} -->`,
    '',
    `Made by \`cudamatrix record --submit\` (cudamatrix ${toolVersion}). To commit these records, a maintainer runs`,
    '`cudamatrix record THIS-FILE` in the repository and commits what it writes under records/.',
    '',
    ...records.flatMap(summary),
    '## What this file holds',
    '',
    'The records below, as `cudamatrix record` writes them: the sysinfo, facts, metrics, memory readings, cell outcomes and',
    'verdicts of each observation. Nothing else from the machine: no event log, no probe output, no environment variables.',
    `Removed first: ${REDACTED.join('; ')}. Kept: the target names of the matrix (${targets}).`,
    '',
    `<details><summary>The records (JSON, ${(Buffer.byteLength(json) / 1024).toFixed(0)} KiB)</summary>`,
    '',
    `${fence}${FENCE_INFO}`,
    json,
    fence,
    '',
    '</details>',
    '',
  ].join('\n');
}

export function isSubmission(text: string): boolean {
  return text.includes(MARKER);
}

/** The records of a submitted file, checked against the marker's digest. */
export function parseSubmission(text: string, file: string): BehaviourRecord[] {
  const normalized = text.replace(/\r\n?/g, '\n');
  const marker = new RegExp(`${MARKER} (\\d+) sha256:([0-9a-f]{64}) -->`).exec(normalized);
  if (!marker)
    throw new CudamatrixError(
      'RECORD_INVALID',
      `${file}: the cudamatrix-submission marker is damaged (expected "${MARKER} ${SUBMISSION_VERSION} sha256:<64 hex digits> -->"); ask for the file as \`cudamatrix record --submit\` wrote it`,
    );
  if (Number(marker[1]) > SUBMISSION_VERSION) {
    throw new CudamatrixError(
      'RECORD_INVALID',
      `${file} is a submission of format ${marker[1]}; this cudamatrix reads format ${SUBMISSION_VERSION}: upgrade cudamatrix to read it`,
    );
  }
  const block = new RegExp(`^(\`{3,})${FENCE_INFO}\\n([\\s\\S]*?)\\n\\1[ \\t]*$`, 'm').exec(normalized);
  if (!block)
    throw new CudamatrixError(
      'RECORD_INVALID',
      `${file}: no \`\`\`${FENCE_INFO} block with the records; ask for the file as \`cudamatrix record --submit\` wrote it`,
    );
  const line = normalized.slice(0, block.index).split('\n').length + 1;
  let data: unknown;
  try {
    data = JSON.parse(block[2]!);
  } catch (e) {
    throw new CudamatrixError(
      'RECORD_INVALID',
      `${file}:${line}: the records block is not JSON (${(e as Error).message}); ask for the file as \`cudamatrix record --submit\` wrote it`,
    );
  }
  if (!Array.isArray(data))
    throw new CudamatrixError('RECORD_INVALID', `${file}:${line}: the records block is not a JSON array of records`);
  const records = data.map((recordData, i) => checkRecord(recordData, `${file} (record ${i + 1} of the block at line ${line})`));
  if (digest(records) !== marker[2]) {
    throw new CudamatrixError(
      'RECORD_INVALID',
      `${file}: the records were changed after cudamatrix wrote them (their sha256 is not the marker's); records are committed as measured: ask the submitter for the file as \`cudamatrix record --submit\` wrote it`,
    );
  }
  // The summary is not in the digest: it must be the one these records give, or a reviewer reads what is not committed.
  const version = /Made by `cudamatrix record --submit` \(cudamatrix ([^)\s]+)\)/.exec(normalized)?.[1] ?? '';
  const head = (submission: string) => submission.slice(0, submission.indexOf('<details>')).replace(/[ \t]+$/gm, '');
  if (head(renderSubmission(records, version)) !== head(normalized)) {
    throw new CudamatrixError(
      'RECORD_INVALID',
      `${file}: the summary was changed after cudamatrix wrote it (it is not what the records give); ask the submitter for the file as \`cudamatrix record --submit\` wrote it`,
    );
  }
  return records;
}

/** Every string in a value (keys of maps included), and how many numbers it holds. */
function contents(value: unknown, strings: Set<string>): number {
  if (typeof value === 'string') {
    strings.add(value);
    return 0;
  }
  if (typeof value === 'number') return 1;
  if (Array.isArray(value)) return value.reduce<number>((sum, child) => sum + contents(child, strings), 0);
  if (value === null || typeof value !== 'object') return 0;
  let numbers = 0;
  for (const [k, child] of Object.entries(value)) {
    strings.add(k);
    numbers += contents(child, strings);
  }
  return numbers;
}

/** Strings as JSON, two spaces apart, in lines of about `width` characters. */
function wrapped(strings: string[], indent: string, width = 110): string[] {
  const lines: string[] = [];
  let line = '';
  for (const quoted of strings.map((text) => JSON.stringify(text))) {
    if (line && indent.length + line.length + 2 + quoted.length > width) {
      lines.push(indent + line);
      line = '';
    }
    line = line ? `${line}  ${quoted}` : quoted;
  }
  if (line) lines.push(indent + line);
  return lines;
}

/**
 * What leaves the machine, for the console before the file is written: the file and its size,
 * what redaction replaced (the originals stay on this console, never in the file), and every
 * text the records hold, each once, keys included (the summary is made from them alone;
 * numbers are measurements, counted). The strings are those of `text`'s records block.
 */
export function leavingLines(records: BehaviourRecord[], replaced: ReadonlyMap<string, string>, where: string, text: string): string[] {
  const strings = new Set<string>();
  const numbers = contents(
    records.map((record) => JSON.parse(recordJson(record))),
    strings,
  );
  const lines = [
    `What leaves this machine: ${where} (${(Buffer.byteLength(text) / 1024).toFixed(0)} KiB), nothing else: a Markdown summary made from the records, and the records.`,
  ];
  if (replaced.size) {
    lines.push(`Replaced in it (found on this machine → written in the file; this list is not written):`);
    const width = Math.min(60, Math.max(...[...replaced.keys()].map((original) => original.length)));
    for (const [original, replacement] of replaced) lines.push(`  ${original.padEnd(width)}  →  ${replacement}`);
  } else lines.push('Nothing in the records needed replacing (no host, user, path, address, UUID or serial number found).');
  lines.push(`Every text in the records, each once (${strings.size}):`);
  lines.push(...wrapped([...strings].sort(), '  '));
  lines.push(`and ${numbers} numbers (the measurements: sizes, times, rates, counts).`);
  return lines;
}
