/**
 * The run as a good citizen, end to end through the real CLI on this machine (no driver here):
 * a reader that goes away, SIGTERM and Ctrl-C at every stage, outputs that are not files, and
 * the command-line conventions. CUDAPROBE_TEST_DELAY_MS (cudaprobe's test hook) makes each probe
 * wait before it starts, so that there is a run to interrupt.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, lstatSync, readdirSync, readFileSync, readlinkSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { readEventLog, type RunEvent } from '../../events/events.ts';
import { cliEntry, runCli, startCli, tsxLoader, whenOutput } from '../cli.ts';
import { commandsAvailable, repoRoot, tempDir, validateJunit } from '../helpers.ts';

function writeMatrix(dir: string, targets: number, probes = '[sysinfo]'): string {
  const file = path.join(dir, 'matrix.yaml');
  const list = Array.from({ length: targets }, (_, i) => `  - name: t${i}`).join('\n');
  writeFileSync(file, `version: 1\nconcurrency: 1\ndefaults: {probes: ${probes}}\ntargets:\n${list}\n`);
  return file;
}

function runFolder(dir: string): { runDir: string; events: RunEvent[] } {
  const runs = readdirSync(path.join(dir, 'runs'));
  expect(runs).toHaveLength(1);
  const runDir = path.join(dir, 'runs', runs[0]!);
  return { runDir, events: readEventLog(path.join(runDir, 'events.jsonl')) };
}

/** Every result file of the run is there, and the log ends with run-end. */
async function expectResultsWritten(dir: string, interrupted: boolean): Promise<RunEvent[]> {
  const { runDir, events } = runFolder(dir);
  for (const fileName of ['events.jsonl', 'junit.xml', 'summary.json'])
    expect(existsSync(path.join(runDir, fileName)), fileName).toBe(true);
  await validateJunit(readFileSync(path.join(runDir, 'junit.xml'), 'utf8'));
  expect(JSON.parse(readFileSync(path.join(runDir, 'summary.json'), 'utf8')).interrupted).toBe(interrupted);
  expect(events.at(-1)).toMatchObject({ type: 'run-end', interrupted });
  return events;
}

/** Live processes whose environment holds `marker` (probes started with a unique test delay). */
function processesWith(marker: string): string[] {
  const found: string[] = [];
  for (const pid of readdirSync('/proc').filter((entryName) => /^\d+$/.test(entryName))) {
    try {
      if (readFileSync(`/proc/${pid}/environ`, 'utf8').includes(marker))
        found.push(`${pid}: ${readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ')}`);
    } catch {
      // gone, or not ours
    }
  }
  return found;
}

/** A delay no other test uses, so that its probes can be told apart in /proc. */
function uniqueDelay(ms: number): string {
  return String(ms + Math.floor(Math.random() * 1000) / 1000);
}

/** Waits until `check` is true (a process tree takes a moment to go). */
async function eventually(check: () => boolean, ms = 5000): Promise<boolean> {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    if (check()) return true;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return check();
}

/**
 * Starts a run of `targets` local targets whose probes hang (a unique delay, so that they can be
 * found in /proc), and resolves once the first probe runs. `stubborn`: they also ignore SIGTERM.
 */
async function startHangingRun(targets: number, stubborn = false) {
  const dir = tempDir();
  const matrixFile = writeMatrix(dir, targets);
  const marker = `CUDAPROBE_TEST_DELAY_MS=${uniqueDelay(600_000)}`;
  const env: NodeJS.ProcessEnv = { CUDAPROBE_TEST_DELAY_MS: marker.split('=')[1] };
  if (stubborn) env.CUDAPROBE_TEST_IGNORE_SIGTERM = '1';
  const { child, done } = startCli(['run', '-m', matrixFile, '--results-dir', path.join(dir, 'runs')], { env });
  await whenOutput(child, '▶ t0', () => undefined);
  await eventually(() => processesWith(marker).some((processLine) => processLine.includes('cudaprobe')));
  const probesGone = (ms?: number) => eventually(() => processesWith(marker).length === 0, ms);
  return { dir, child, done, probesGone };
}

/**
 * A local run of pinned-vram whose subject is busy for 10 minutes before it answers (cudaprobe's
 * test hook), as in a long allocation: it does not see its stdin close. Resolves once the subject runs.
 */
async function startRunWithBusySubject() {
  const dir = tempDir();
  const matrixFile = writeMatrix(dir, 1, '[pinned-vram]');
  const delay = uniqueDelay(600_000);
  const marker = `CUDAPROBE_TEST_SUBJECT_DELAY_MS=${delay}`;
  const { child, done } = startCli(['run', '-m', matrixFile, '--results-dir', path.join(dir, 'runs')], {
    env: { CUDAPROBE_TEST_SUBJECT_DELAY_MS: delay },
  });
  const subjects = () => processesWith(marker).filter((processLine) => processLine.includes('cudaprobe subject'));
  const probes = () => processesWith(marker).filter((processLine) => processLine.includes('cudaprobe run'));
  expect(await eventually(() => subjects().length > 0, 120_000)).toBe(true);
  const gone = () => eventually(() => processesWith(marker).length === 0);
  return { dir, child, done, gone, subjects, probes };
}

const noStackTrace = /\n\s+at .+:\d+:\d+/;

describe('a reader that goes away (defect 2)', () => {
  it("stops the printing, not the run: every result file is written and the exit status is the run's", async () => {
    const dir = tempDir();
    const matrixFile = writeMatrix(dir, 4);
    const { child, done } = startCli(['run', '-m', matrixFile, '--results-dir', path.join(dir, 'runs')], {
      env: { CUDAPROBE_TEST_DELAY_MS: '300' },
    });
    // Like `| head -3`: the reader takes the first lines and closes its end of the pipe.
    await whenOutput(child, '▶ t0', () => child.stdout!.destroy());
    const result = await done;
    expect(result.stderr).not.toMatch(noStackTrace);
    expect(result.stderr).not.toContain('EPIPE');
    expect(result.code).toBe(0);
    const events = await expectResultsWritten(dir, false);
    expect(events.filter((e) => e.type === 'cell-end' && e.status === 'skipped')).toHaveLength(4);
    // The local session's work folders went away too.
    const runId = (events[0] as { runId: string }).runId;
    expect(readdirSync(tmpdir()).filter((folderName) => folderName.startsWith(`cudamatrix-${runId}-`))).toEqual([]);
  });

  // bash tells the exit status of the first command of a pipeline (PIPESTATUS).
  it.runIf(commandsAvailable('the "| head -1" tests', { bash: 'bash' })).each([
    ['plan', ['plan', '-m', '@big']],
    ['probes list --facts', ['probes', 'list', '--facts']],
    ['run', ['run', '-m', '@big', '-p', 'windows-registry', '--concurrency', '8', '--results-dir', '@runs']],
  ])(
    '%s | head -1 exits cleanly',
    async (_name, args) => {
      const dir = tempDir();
      const big = path.join(dir, 'big.yaml');
      writeFileSync(big, `version: 1\ntargets:\n${Array.from({ length: 300 }, (_, i) => `  - name: t${i}`).join('\n')}\n`);
      const argv = args.map((arg) => (arg === '@big' ? big : arg === '@runs' ? path.join(dir, 'runs') : arg));
      const quoted = [process.execPath, '--import', tsxLoader, cliEntry, ...argv].map((arg) => JSON.stringify(arg)).join(' ');
      const cmd = `${quoted} 2>${JSON.stringify(path.join(dir, 'err'))} | head -1 >/dev/null; echo "\${PIPESTATUS[0]}"`;
      const result = spawnSync('bash', ['-c', cmd], { cwd: repoRoot, encoding: 'utf8', env: { ...process.env, NO_COLOR: '1' } });
      const stderr = readFileSync(path.join(dir, 'err'), 'utf8');
      expect(stderr).not.toMatch(noStackTrace);
      expect(stderr).not.toContain('EPIPE');
      expect(result.stdout.trim()).toBe('0');
      if (args[0] === 'run') await expectResultsWritten(dir, false);
      // 300 targets: a minute or more on a busy 2-core machine (beside two busy loops: over 60 s).
    },
    240_000,
  );
});

describe('signals (defects 6 and 11)', () => {
  it('SIGTERM mid-run cancels, keeps every result, leaves no probe behind, and a second SIGTERM does not cut it short', async () => {
    const { dir, child, done, probesGone } = await startHangingRun(3);
    child.kill('SIGTERM');
    await new Promise((resolve) => setTimeout(resolve, 700));
    child.kill('SIGTERM');
    const result = await done;
    expect(result.code).toBe(130);
    expect(result.stderr).toContain('terminated: stopping running probes and writing results');
    const events = await expectResultsWritten(dir, true);
    const statuses = events.flatMap((e) => (e.type === 'cell-end' ? [e.status] : []));
    expect(statuses).toEqual(['cancelled', 'not-run', 'not-run']);
    expect(await probesGone()).toBe(true);
  });

  it('one Ctrl-C seen twice (the terminal signals the group, a wrapper relays it) cancels once and keeps the results', async () => {
    // Through tsx's CLI wrapper or pnpm, node could get the same Ctrl-C twice within milliseconds;
    // before, the second counted as "quit at once", and everything was lost (defect 11). The
    // probes ignore SIGTERM: stopping them takes the 2 s grace, so the run is still going when
    // the copy of the Ctrl-C arrives.
    const { dir, child, done } = await startHangingRun(2, true);
    child.kill('SIGINT');
    await new Promise((resolve) => setTimeout(resolve, 30));
    child.kill('SIGINT');
    const result = await done;
    expect(result.code).toBe(130);
    expect(result.stderr).not.toContain('second Ctrl-C');
    await expectResultsWritten(dir, true);
  });

  it('pnpm matrix and pnpm cudamatrix start node itself, not a wrapper that relays signals and SIGKILLs', () => {
    const scripts = JSON.parse(readFileSync(path.join(repoRoot, 'package.json'), 'utf8')).scripts as Record<string, string>;
    for (const name of ['matrix', 'cudamatrix']) expect(scripts[name]).toMatch(/^node --import tsx cli\/entry\.ts\b/);
  });

  it('a second Ctrl-C quits at once, and still leaves no probe behind', async () => {
    // The probes ignore SIGTERM, so the first Ctrl-C waits out the 2 s grace before SIGKILL; the
    // second quits at once, and the probes' process groups must not outlive cudamatrix.
    const { dir, child, done, probesGone } = await startHangingRun(2, true);
    child.kill('SIGINT');
    await new Promise((resolve) => setTimeout(resolve, 600));
    child.kill('SIGINT');
    const result = await done;
    expect(result.code).toBe(130);
    expect(result.stderr).toContain('second Ctrl-C: quitting now');
    expect(await probesGone(1000)).toBe(true);
    // The local session's work folder goes on the way out too.
    const runId = readdirSync(path.join(dir, 'runs'))[0]!;
    expect(readdirSync(tmpdir()).filter((folderName) => folderName.startsWith(`cudamatrix-${runId}-`))).toEqual([]);
  });

  it('a SIGKILLed cudamatrix (no exit handler runs) leaves no probe, no guardian and no work folder behind (issue 22.1)', async () => {
    // Its probes run in process groups of their own: only the guardian, which sees its stdin
    // end when the kernel closes cudamatrix's end, can stop them. The marker is in the
    // environment of the probes and of the guardian, which cudamatrix started.
    const { dir, child, done, probesGone } = await startHangingRun(2);
    const runId = readdirSync(path.join(dir, 'runs'))[0]!;
    const workFolders = () => readdirSync(tmpdir()).filter((folderName) => folderName.startsWith(`cudamatrix-${runId}-`));
    expect(workFolders()).toHaveLength(1);
    child.kill('SIGKILL');
    expect((await done).code).toBe(null);
    expect(await probesGone()).toBe(true);
    expect(await eventually(() => workFolders().length === 0)).toBe(true);
  });

  it("a SIGKILLed cudamatrix takes the memory probes' subjects with the probe (issue 22.1)", async () => {
    const { child, done, gone, subjects } = await startRunWithBusySubject();
    expect(subjects()).toHaveLength(1);
    child.kill('SIGKILL');
    await done;
    expect(await gone()).toBe(true);
  });

  it('a probe killed alone takes its busy subject with it (PR_SET_PDEATHSIG), and the run goes on to its end', async () => {
    const { child, done, gone, subjects, probes } = await startRunWithBusySubject();
    const [probe] = probes();
    expect(subjects()).toHaveLength(1);
    process.kill(Number(probe!.split(':')[0]), 'SIGKILL');
    expect(await eventually(() => subjects().length === 0)).toBe(true);
    expect((await done).code).not.toBe(null);
    expect(await gone()).toBe(true);
  });

  // ps finds a compiler still working for the interrupted run.
  it.runIf(commandsAvailable('the test of Ctrl-C during the first compile', { ps: 'procps' }))(
    'Ctrl-C during the first compile stops the compiler and reads as "not run", not as errors',
    async () => {
      const dir = tempDir();
      const cache = tempDir('cm-fresh-cache-');
      const matrixFile = path.join(dir, 'matrix.yaml');
      writeFileSync(matrixFile, 'version: 1\ntargets:\n  - name: here\n');
      const { child, done } = startCli(
        ['run', '-m', matrixFile, '--results-dir', path.join(dir, 'runs'), '--junit', path.join(dir, 'j.xml')],
        {
          env: { CUDAMATRIX_CACHE: cache },
        },
      );
      await whenOutput(child, 'compiling cudaprobe', () => child.kill('SIGINT'), 'stderr');
      const result = await done;
      expect(result.code).toBe(130);
      const events = await expectResultsWritten(dir, true);
      const cells = events.filter((e) => e.type === 'cell-end');
      expect(cells.length).toBeGreaterThan(0);
      expect(cells.every((cell) => cell.type === 'cell-end' && cell.status === 'not-run')).toBe(true);
      expect(events.some((e) => e.type === 'target-error')).toBe(false);
      const xml = readFileSync(path.join(dir, 'j.xml'), 'utf8');
      expect(xml).toMatch(/<testsuites [^>]*errors="0"/);
      expect(xml).toMatch(/<testsuites [^>]*failures="0"/);
      // No compiler is still working for the interrupted run.
      const compilers = () =>
        execFileSync('ps', ['-eo', 'args'], { encoding: 'utf8' })
          .split('\n')
          .filter((line) => line.includes(cache));
      expect(await eventually(() => compilers().length === 0)).toBe(true);
    },
  );
});

describe('outputs (defects 1 and 10)', () => {
  it('never replaces a link, a device or a FIFO named as an output, and "-" is stdout', async () => {
    const dir = tempDir();
    const matrixFile = writeMatrix(dir, 1);
    const real = path.join(dir, 'real.json');
    writeFileSync(real, '');
    const link = path.join(dir, 'stdout-link');
    symlinkSync(real, link);
    const result = await runCli([
      'run',
      '-m',
      matrixFile,
      '--results-dir',
      path.join(dir, 'runs'),
      '--reporter',
      `json:${link}`,
      '--reporter',
      'junit:/dev/null',
      '--reporter',
      'junit:-',
    ]);
    expect(result.code).toBe(0);
    expect(lstatSync(link).isSymbolicLink()).toBe(true);
    expect(readlinkSync(link)).toBe(real);
    expect(JSON.parse(readFileSync(real, 'utf8')).targets[0].name).toBe('t0');
    expect(lstatSync('/dev/null').isCharacterDevice()).toBe(true);
    expect(existsSync(path.join(repoRoot, '-'))).toBe(false);
    expect(result.stdout).toMatch(/^<\?xml/);
    await validateJunit(result.stdout);
  });

  it('writes no ./junit.xml unless asked; --junit FILE and --reporter NAME=PATH write where they say', async () => {
    const dir = tempDir();
    const matrixFile = writeMatrix(dir, 1);
    const plain = await runCli(['run', '-m', matrixFile, '--results-dir', path.join(dir, 'runs')], { cwd: dir });
    expect(plain.code).toBe(0);
    expect(existsSync(path.join(dir, 'junit.xml'))).toBe(false);
    const result = await runCli(
      [
        'run',
        '-m',
        matrixFile,
        '--results-dir',
        path.join(dir, 'runs2'),
        '--junit',
        path.join(dir, 'a.xml'),
        '--reporter',
        `json=${path.join(dir, 'b.json')}`,
        '--reporter',
        'console',
      ],
      { cwd: dir },
    );
    expect(result.code).toBe(0);
    await validateJunit(readFileSync(path.join(dir, 'a.xml'), 'utf8'));
    expect(JSON.parse(readFileSync(path.join(dir, 'b.json'), 'utf8')).counts).toBeDefined();
    expect(result.stdout).toContain('Exit status: 0');
  });

  it('--json prints the summary on stdout (as plan --json does) and moves the console to stderr', async () => {
    const dir = tempDir();
    const matrixFile = writeMatrix(dir, 1);
    const result = await runCli(['run', '-m', matrixFile, '--results-dir', path.join(dir, 'runs'), '--json']);
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout).targets[0].name).toBe('t0');
    expect(result.stderr).toContain('Exit status: 0');
  });

  it('checks outputs before the run: an unmakeable --results-dir, a folder as a file, two reporters on stdout (exit 2, nothing run)', async () => {
    const dir = tempDir();
    const matrixFile = writeMatrix(dir, 1);
    const cases: [string[], string][] = [
      [['--results-dir', '/proc/cudamatrix-x'], '--results-dir /proc/cudamatrix-x cannot be made'],
      [['--results-dir', '/dev/null'], '/dev/null is not a folder'],
      [['--junit', dir], `is a folder; name a file`],
      [['--json', '--junit', '/dev/stdout'], 'would both print to stdout'],
    ];
    for (const [args, text] of cases) {
      const result = await runCli(['run', '-m', matrixFile, ...args]);
      expect(result.code, args.join(' ')).toBe(2);
      expect(result.stderr).toContain(text);
      expect(result.stderr).not.toMatch(noStackTrace);
    }
  });

  it('--junit /dev/stdout, with stdout a file: the file holds the whole XML alone, the console goes to stderr', async () => {
    const dir = tempDir();
    const matrixFile = writeMatrix(dir, 1);
    const out = path.join(dir, 'out.xml');
    const err = path.join(dir, 'err.txt');
    const quoted = [
      process.execPath,
      '--import',
      tsxLoader,
      cliEntry,
      'run',
      '-m',
      matrixFile,
      '--results-dir',
      path.join(dir, 'runs'),
      '--junit',
      '/dev/stdout',
    ]
      .map((arg) => JSON.stringify(arg))
      .join(' ');
    const result = spawnSync('sh', ['-c', `${quoted} > ${JSON.stringify(out)} 2> ${JSON.stringify(err)}`], {
      cwd: repoRoot,
      encoding: 'utf8',
      env: { ...process.env, NO_COLOR: '1' },
    });
    expect(result.status).toBe(0);
    // Before, opening /dev/stdout truncated the file and the console lines in it were lost.
    await validateJunit(readFileSync(out, 'utf8'));
    expect(readFileSync(err, 'utf8')).toContain('Exit status: 0');
  });

  it('refuses an unknown reporter with the known ones', async () => {
    const result = await runCli(['run', '--reporter', 'xml:out.xml']);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('error [USAGE]: --reporter "xml:out.xml": the reporters are console, junit, json');
  });

  it('ignores a leading "--" (pnpm matrix -- --quick)', async () => {
    const dir = tempDir();
    const matrixFile = writeMatrix(dir, 1, '[sync-latency]');
    const result = await runCli(['run', '--', '--quick', '-m', matrixFile, '--results-dir', path.join(dir, 'runs')]);
    expect(result.code).toBe(0);
    const { events } = runFolder(dir);
    expect(events[0]).toMatchObject({ options: { quick: true } });
  });
});
