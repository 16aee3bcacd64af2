/**
 * The record intake's judge: the validate job of .github/workflows/record-intake.yml runs it on
 * an issue made with the form "Submit a behaviour record" (.github/ISSUE_TEMPLATE/), in the
 * checkout, with a read-only token and no secret:
 *
 *   node --import tsx scripts/record-intake.ts ISSUE-BODY-FILE OUT-DIR
 *
 * It finds the submission in the issue (pasted, or one file attached to it on GitHub), runs
 * `cudamatrix record FILE --records-dir records` in the checkout (the CLI's checks: the records'
 * sha256, the summary, the record schema) and writes into OUT-DIR what the later jobs take:
 * comment.md (the outcome, said to the submitter), and, when records were stored, records/ with
 * the files `record` wrote or replaced. `outcome` (accepted, counted, refused) goes to
 * GITHUB_OUTPUT. The issue text is untrusted: it is only read as data, never run.
 */
import { spawnSync } from 'node:child_process';
import { appendFileSync, cpSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { isSubmission } from '../behaviour/submit.ts';

const RECORDS_DIR = 'records';
/** A submission of many observations is a few MiB at most (one H200 observation: 115 KiB). */
const MAX_BYTES = 8 * 1024 * 1024;
const TITLE = /^# cudamatrix behaviour records:/m;
const HOW =
  'paste the file that `cudamatrix record <run folder> --submit cudamatrix-records.txt` wrote into the form, or attach that file (drag it into the field)';

type Outcome = 'accepted' | 'counted' | 'refused';
interface Judgement {
  outcome: Outcome;
  comment: string;
}

/**
 * Files attached to an issue on GitHub, the only links the intake fetches: the attachment store
 * answers them with the file itself, over https, and never asks for a token. Any other link
 * could point anywhere (an internal address, a huge file), so it is refused, not fetched.
 */
function attachmentPattern(repository: string): RegExp {
  const escaped = repository.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  return new RegExp(`^https://github\\.com/(?:user-attachments/files|${escaped}/files)/\\d+/[A-Za-z0-9._-]+$`);
}

/** The submission in the issue body, as a file: pasted (cut from its title on), or fetched from its one attachment. */
function findSubmission(body: string, file: string, repository: string): string | null {
  if (isSubmission(body)) {
    const start = body.search(TITLE);
    writeFileSync(file, body.slice(Math.max(start, 0)));
    return null;
  }
  const links = [...new Set([...body.matchAll(/https?:\/\/[^\s)<>\]"']+/g)].map((match) => match[0]))];
  const attachments = links.filter((link) => attachmentPattern(repository).test(link));
  if (attachments.length === 0) {
    const others = links.length ? ` The links in it (${links.join(', ')}) are not files attached to this issue, and are not fetched.` : '';
    return `No submission found in the issue.${others} To submit, ${HOW}.`;
  }
  if (attachments.length > 1)
    return `The issue links ${attachments.length} attached files (${attachments.join(', ')}); attach one submission per issue.`;
  const url = attachments[0]!;
  // curl: https only (redirects too, to GitHub's file store), bounded in size and time, no credentials.
  const curl = spawnSync(
    'curl',
    ['--fail', '--silent', '--show-error', '--location', '--proto', '=https', '--proto-redir', '=https', '--max-redirs', '3'].concat([
      '--max-filesize',
      String(MAX_BYTES),
      '--max-time',
      '60',
      '--output',
      file,
      url,
    ]),
    { encoding: 'utf8' },
  );
  if (curl.status !== 0)
    return `The attached file ${url} could not be downloaded (${curl.stderr.trim() || `curl exit ${curl.status}`}); attach it again.`;
  if (statSync(file).size > MAX_BYTES) return `The attached file ${url} is over ${MAX_BYTES / 1024 / 1024} MiB; a submission is smaller.`;
  if (!isSubmission(readFileSync(file, 'utf8')))
    return `The attached file ${url} is not a file made by \`cudamatrix record --submit\` (it has no cudamatrix-submission marker). To submit, ${HOW}.`;
  return null;
}

/** The record files `record` wrote or replaced under records/, from git's view of the checkout. */
function changedRecords(): string[] {
  const status = spawnSync('git', ['status', '--porcelain=v1', '-z', '--untracked-files=all', '--', RECORDS_DIR], { encoding: 'utf8' });
  if (status.status !== 0) throw new Error(`git status failed: ${status.stderr}`);
  const files = status.stdout
    .split('\0')
    .filter(Boolean)
    .map((entry) => entry.slice(3));
  const unexpected = files.filter((file) => !/^records\/driver-[^/]+\/[^/]+\.json$/.test(file));
  if (unexpected.length) throw new Error(`record changed files other than records: ${unexpected.join(', ')}`);
  return files.sort();
}

/** A fence longer than any run of backticks in the text, so that the text cannot close it. */
function fenced(text: string): string {
  const fence = '`'.repeat(Math.max(3, ...[...text.matchAll(/`+/g)].map((run) => run[0].length + 1)));
  return `${fence}text\n${text.trim()}\n${fence}`;
}

function judge(bodyFile: string, outDir: string): Judgement {
  const repository = process.env.GITHUB_REPOSITORY ?? '';
  const submission = path.join(path.dirname(path.resolve(outDir)), 'cudamatrix-records.txt');
  const notFound = findSubmission(readFileSync(bodyFile, 'utf8'), submission, repository);
  if (notFound) return { outcome: 'refused', comment: `**Not taken.** ${notFound}` };
  const before = new Set(changedRecords());
  const cli = spawnSync(process.execPath, ['bin/cudamatrix.cjs', 'record', submission, '--records-dir', RECORDS_DIR], {
    encoding: 'utf8',
    env: { ...process.env, NO_COLOR: '1' },
  });
  // The CLI names the file by its path on the runner: the submitter knows it as the submitted file.
  const said = `${cli.stdout}${cli.stderr}`.split(submission).join('the submitted file');
  if (cli.status !== 0) {
    const reason = /error \[[A-Z_]+\]: .*/.exec(said)?.[0] ?? said.trim().split('\n').at(-1) ?? `exit ${cli.status}`;
    return {
      outcome: 'refused',
      comment: `**Not taken.** \`cudamatrix record\` refused the submission:\n\n${fenced(reason)}\n\nWhat it said:\n\n${fenced(said)}`,
    };
  }
  const written = changedRecords().filter((file) => !before.has(file));
  mkdirSync(path.join(outDir, RECORDS_DIR), { recursive: true });
  for (const file of written) cpSync(file, path.join(outDir, file));
  const repeats = [...said.matchAll(/already recorded: (\S+) is the record of this run/g)].map((match) => match[1]!);
  const counted = repeats.length
    ? `Counted: ${repeats.length === 1 ? 'an observation' : `${repeats.length} observations`} of it ${repeats.length === 1 ? 'repeats' : 'repeat'} a record already under records/ (${repeats.map((file) => `\`${file}\``).join(', ')}), not stored twice; the label \`record-repeat\` counts such submissions.`
    : '';
  if (written.length === 0) return { outcome: 'counted', comment: `**Nothing new to store.** ${counted}\n\n${fenced(said)}` };
  const list = written.map((file) => `- \`${file}\``).join('\n');
  return {
    outcome: 'accepted',
    comment: `**Taken.** \`cudamatrix record\` checked the submission and stored:\n\n${list}\n\n${counted}\n\n${fenced(said)}`.replace(
      /\n{3,}/g,
      '\n\n',
    ),
  };
}

function main(): void {
  const [bodyFile, outDir] = process.argv.slice(2);
  if (!bodyFile || !outDir) {
    process.stderr.write('usage: node --import tsx scripts/record-intake.ts ISSUE-BODY-FILE OUT-DIR\n');
    process.exit(2);
  }
  mkdirSync(outDir, { recursive: true });
  const { outcome, comment } = judge(bodyFile, outDir);
  writeFileSync(path.join(outDir, 'comment.md'), `${comment}\n`);
  writeFileSync(path.join(outDir, 'outcome'), `${outcome}\n`);
  if (process.env.GITHUB_OUTPUT) appendFileSync(process.env.GITHUB_OUTPUT, `outcome=${outcome}\n`);
  process.stdout.write(`outcome: ${outcome}\n\n${comment}\n`);
}

main();
