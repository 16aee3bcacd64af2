/**
 * `cudamatrix run` with slurm targets on a real Slurm (test/slurm/slurm-lab.ts), cudamatrix on
 * the "login node" (this machine): the whole probe suite's no-driver path through srun, and
 * nothing left in the queue or on the node after a run, Ctrl-C, a probe past its timeout, or the
 * CLI killed (SIGKILL: the job ends with its lifeline). The nhc reporter's line per node.
 */
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { readEventLog, type RunEvent } from '../../events/events.ts';
import { cliEntry, runCli, startCli, tsxLoader } from '../cli.ts';
import { repoRoot, tempDir } from '../helpers.ts';
import { defaultProbeNames } from '../../probes/catalogue.ts';
import { freePort } from '../sshd.ts';
import { slurmReady, startSlurmLab, type SlurmLab } from './slurm-lab.ts';

/** The cells of probes: all (the catalogue's probes less the opt-in ones). */
const SUITE = defaultProbeNames().length;

const ready = slurmReady();
let lab: SlurmLab | undefined;

/** The steps' TMPDIR (passed on from the CLI by srun): this file's own, where their work directories go. */
let nodeTmp = '';
beforeAll(async () => {
  if (!ready) return;
  lab = await startSlurmLab(2);
  nodeTmp = tempDir('cm-node-tmp-');
}, 120_000);

afterAll(async () => {
  const left = await lab?.stop();
  expect(left ?? []).toEqual([]);
});

/** The work directories sessions made on the node. */
const workDirsLeft = () => readdirSync(nodeTmp).filter((name) => name.startsWith('cm-slurm-'));
/** The CLI's environment: the lab, and the steps' TMPDIR. */
const cliEnv = (more: Record<string, string> = {}) => ({ ...lab!.env, TMPDIR: nodeTmp, ...more });

/** CLIs a test started: one a failed test left running is killed (its job then ends with its lifeline). */
const started: ChildProcess[] = [];
function start(...args: Parameters<typeof startCli>): ReturnType<typeof startCli> {
  const run = startCli(...args);
  started.push(run.child);
  return run;
}

afterEach(async () => {
  for (const child of started.splice(0)) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  if (!lab) return;
  expect(await lab.settled()).toEqual({ queue: [], processes: [] });
  expect(workDirsLeft()).toEqual([]);
});

function writeMatrix(dir: string, hop: Record<string, unknown>, probes: string, extra: string[] = [], top: string[] = []): string {
  const file = path.join(dir, 'matrix.yaml');
  writeFileSync(
    file,
    [
      'version: 1',
      ...top,
      `defaults: {probes: ${probes}}`,
      'targets:',
      '  - name: node',
      `    transport: [${JSON.stringify({ kind: 'slurm', ...hop })}]`,
      ...extra,
      '',
    ].join('\n'),
  );
  return file;
}

function eventsOf(dir: string): RunEvent[] {
  const runs = readdirSync(path.join(dir, 'runs'));
  return readEventLog(path.join(dir, 'runs', runs[0]!, 'events.jsonl'));
}

const cells = (events: RunEvent[]) => events.flatMap((e) => (e.type === 'cell-end' && e.planned ? [e] : []));

/** Resolves once the probe runs on the node (a task of the job, under its slurmstepd). */
async function probeRunning(): Promise<void> {
  await expect
    .poll(() => lab!.jobProcesses().some((jobProcess) => / \S*cudaprobe run sysinfo /.test(`${jobProcess} `)), {
      timeout: 60_000,
      interval: 200,
    })
    .toBe(true);
}

describe.skipIf(!ready)('cudamatrix run on a Slurm node (kind slurm, from the login node)', () => {
  it('runs the whole probe suite through srun on one node, writes the results, and leaves nothing in the queue or on the node', async () => {
    const dir = tempDir();
    const file = writeMatrix(dir, { partition: lab!.partition }, 'all');
    const nhc = path.join(dir, 'health.txt');
    const result = await runCli(
      [
        'run',
        '-m',
        file,
        '--results-dir',
        path.join(dir, 'runs'),
        '--junit',
        path.join(dir, 'junit.xml'),
        '--reporter',
        'console',
        '--reporter',
        `nhc:${nhc}`,
      ],
      { env: cliEnv() },
    );
    expect(result.code, result.stderr).toBe(0);
    // The health checker's line: the node the job ran on, its status, why: no driver there, so
    // nothing was measured, and the node is not healthy (the run itself passes without --strict).
    expect(readFileSync(nhc, 'utf8')).toMatch(
      new RegExp(
        `^n[12] 4 ERROR: nhc: Health check failed: node: nothing measured: ${SUITE} cells skipped, sysinfo: no NVIDIA driver found: .*\n$`,
      ),
    );
    const events = eventsOf(dir);
    expect(events.find((e) => e.type === 'target-ready')).toMatchObject({
      session: expect.stringMatching(/^slurm job \d+ on n[12]$/),
      platform: 'linux',
    });
    const suite = cells(events);
    expect(suite.length).toBe(SUITE);
    // No driver here: every probe skips, each having run on the node (sysinfo says where).
    expect(
      suite.every((cell) => cell.status === 'skipped'),
      JSON.stringify(suite.map((cell) => [cell.probe, cell.status, cell.reason])),
    ).toBe(true);
    expect(existsSync(path.join(dir, 'junit.xml'))).toBe(true);
    expect(events.at(-1)).toMatchObject({ type: 'run-end' });
  });

  it('fans a target out over a hostlist: one target per node, pinned there, in one run with a line per node', async () => {
    const dir = tempDir();
    const file = writeMatrix(dir, { nodes: 'n[1-2]' }, '[sysinfo]', [], ['concurrency: 2']);
    const plan = await runCli(['plan', '-m', file]);
    expect(plan.stdout).toMatch(/node@n1/);
    expect(plan.stdout).toMatch(/node@n2/);
    const nhc = path.join(dir, 'health.txt');
    const result = await runCli(
      ['run', '-m', file, '--results-dir', path.join(dir, 'runs'), '--reporter', 'console', '--reporter', `nhc:${nhc}`],
      { env: cliEnv() },
    );
    expect(result.code, result.stderr).toBe(0);
    const ready = Object.fromEntries(eventsOf(dir).flatMap((e) => (e.type === 'target-ready' ? [[e.target, e.session]] : [])));
    expect(ready).toEqual({
      'node@n1': expect.stringMatching(/^slurm job \d+ on n1$/),
      'node@n2': expect.stringMatching(/^slurm job \d+ on n2$/),
    });
    const lines = readFileSync(nhc, 'utf8').split('\n').filter(Boolean).sort();
    expect(lines.map((line) => line.replace(/: no NVIDIA driver found: .*/, ''))).toEqual([
      'n1 4 ERROR: nhc: Health check failed: node@n1: nothing measured: 1 cells skipped, sysinfo',
      'n2 4 ERROR: nhc: Health check failed: node@n2: nothing measured: 1 cells skipped, sysinfo',
    ]);
    expect(result.stdout).toMatch(/node@n1/);
    // The two lab nodes are alike: none is named as differing (verdicts/fleet-outliers.test.ts has ones that do).
    expect(result.stdout).not.toMatch(/Nodes that differ/);
  });

  it('the drain wrapper of docs/transports/slurm.md, run by sh as written, drains the node that has no driver', async () => {
    // The block as the page shows it, with this test's matrix for cluster.yaml and a cudamatrix
    // on PATH that runs the sources.
    const page = readFileSync(path.join(repoRoot, 'docs', 'transports', 'slurm.md'), 'utf8');
    const block = [...page.matchAll(/```sh\n([\s\S]*?)```/g)].map((match) => match[1]!).find((snippet) => snippet.includes('state=drain'));
    expect(block).toBeDefined();
    const dir = tempDir();
    const bin = path.join(dir, 'bin');
    mkdirSync(bin);
    writeFileSync(path.join(bin, 'cudamatrix'), `#!/bin/sh\nexec '${process.execPath}' --import '${tsxLoader}' '${cliEntry}' "$@"\n`);
    chmodSync(path.join(bin, 'cudamatrix'), 0o755);
    const file = writeMatrix(dir, { nodelist: 'n1' }, '[sysinfo]');
    const script = block!.replaceAll('cluster.yaml', file);
    expect(script).not.toContain('--strict');
    try {
      const out = await new Promise<string>((resolve, reject) =>
        execFile(
          'sh',
          ['-c', script],
          { cwd: dir, env: { ...process.env, ...cliEnv(), NO_COLOR: '1', PATH: `${bin}:${process.env.PATH}` }, timeout: 120_000 },
          (error, stdout, stderr) => (error ? reject(new Error(`${error.message}\n${stderr}`)) : resolve(stdout + stderr)),
        ),
      );
      expect(out).not.toMatch(/Bad substitution|Invalid/i);
      expect((await lab!.nodeStates()).n1).toMatch(/^drain/);
      const reason = await lab!.slurm('sinfo', '-h', '-R', '-n', 'n1', '-o', '%E');
      expect(reason.trim()).toMatch(
        /^cudamatrix: ERROR: nhc: Health check failed: node: nothing measured: 1 cells skipped, sysinfo: no NVIDIA/,
      );
      expect((await lab!.nodeStates()).n2).toBe('idle');
    } finally {
      await lab!.resume('n1');
    }
  });

  it("nodes: all asks sinfo for the partition's nodes when the run starts: one target per node", async () => {
    const dir = tempDir();
    const file = writeMatrix(dir, { partition: lab!.partition, nodes: 'all' }, '[sysinfo]', [], ['concurrency: 2']);
    const result = await runCli(['run', '-m', file, '--results-dir', path.join(dir, 'runs')], { env: cliEnv() });
    expect(result.code, result.stderr).toBe(0);
    const ready = Object.fromEntries(eventsOf(dir).flatMap((e) => (e.type === 'target-ready' ? [[e.target, e.session]] : [])));
    expect(ready).toEqual({ 'node@n1': expect.stringMatching(/ on n1$/), 'node@n2': expect.stringMatching(/ on n2$/) });
    // A partition sinfo does not know: the run does not start, and says why.
    const bad = await runCli(
      ['run', '-m', writeMatrix(dir, { partition: 'nosuch', nodes: 'all' }, '[sysinfo]'), '--results-dir', path.join(dir, 'runs2')],
      { env: cliEnv() },
    );
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/SLURM_JOB_REFUSED.*nodes: all: "sinfo --noheader --Node --format=%N --partition=nosuch" listed no node/);
  });

  it('doctor --target: the job granted, cudaprobe on the node, and the missing driver said', async () => {
    const dir = tempDir();
    const result = await runCli(['doctor', '--target', 'node', '-m', writeMatrix(dir, { nodelist: 'n2' }, '[sysinfo]')], { env: cliEnv() });
    expect(result.code).toBe(3);
    expect(result.stdout).toMatch(/✓ reachable +slurm job \d+ on n2: job granted, its lifeline step runs on the node/);
    expect(result.stdout).toMatch(/✗ driver +no NVIDIA driver found/);
  });

  it('refuses a hostlist that does not expand, at its line, with the fix', async () => {
    const dir = tempDir();
    const result = await runCli(['plan', '-m', writeMatrix(dir, { nodes: 'n[1-' }, '[sysinfo]')]);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/matrix\.yaml:5:\d+: .*not a Slurm hostlist: "n\[1-" has an unclosed or stray bracket/);
    expect(result.stderr).toMatch(/fix: write node names, or ranges in brackets/);
  });

  it('a job Slurm refuses: what it asked for (gres gpu:1 by default) and the fix, exit 2, and no internal script', async () => {
    for (const [hop, said, asked] of [
      [
        { constraint: 'nosuchfeature' },
        /Invalid feature specification/,
        /--gres=gpu:1 \(gres's default\), the cluster's default partition, --constraint=nosuchfeature/,
      ],
      [{ gres: 'gpu:2', partition: lab!.partition }, /Requested node configuration is not available/, /--gres=gpu:2, --partition=gpu\b/],
    ] as const) {
      const dir = tempDir();
      const result = await runCli(['run', '-m', writeMatrix(dir, hop, '[sysinfo]'), '--results-dir', path.join(dir, 'runs')], {
        env: cliEnv(),
      });
      const out = `${result.stdout}\n${result.stderr}`;
      expect(result.code, out).toBe(2);
      expect(out).toMatch(/SLURM_JOB_REFUSED: Slurm refused the job \(salloc on this machine\): /);
      expect(out).toMatch(said);
      expect(out).toMatch(new RegExp(`It asked for one node, one task, ${asked.source}`));
      expect(out).toMatch(/Fix: no node of the partition has all it asks for: "sinfo -N -o '%N %P %G %f'" lists/);
      // The lifeline (transports/slurm/scripts.ts) and salloc's command line are cudamatrix's own.
      expect(out).not.toMatch(/sh -c|cm-slurm-ready|cm-slurm-[0-9a-f]{12}|cat >\/dev\/null|--kill-command|--job-name/);
    }
  }, 120_000);

  it("the cluster's munged stopped: an infrastructure failure that names munge (exit 3), no internal script", async () => {
    const dir = tempDir();
    await lab!.stopMunge();
    try {
      const result = await runCli(['run', '-m', writeMatrix(dir, {}, '[sysinfo]'), '--results-dir', path.join(dir, 'runs')], {
        env: cliEnv(),
      });
      const out = `${result.stdout}\n${result.stderr}`;
      expect(result.code, out).toBe(3);
      expect(out).toMatch(/SLURM_AUTH_FAILED: Slurm's authentication \(munge\) failed on this machine: .*Munge encode failed/);
      expect(out).toMatch(/Start munged there/);
      expect(out).not.toMatch(
        /SLURM_JOB_REFUSED|sh -c|cm-slurm-ready|cm-slurm-[0-9a-f]{12}|cat >\/dev\/null|--kill-command|--job-name|restart with|slurm_send_node_msg/,
      );
    } finally {
      await lab!.startMunge();
    }
  }, 120_000);

  it("the cluster's slurmctld out of reach: an infrastructure failure that names it (exit 3)", async () => {
    const dir = tempDir();
    // The lab's slurm.conf with the controller on a port nothing listens on.
    const conf = path.join(dir, 'slurm.conf');
    const closed = await freePort();
    writeFileSync(conf, readFileSync(lab!.conf, 'utf8').replace(/^SlurmctldPort=\d+$/m, `SlurmctldPort=${closed}`));
    const result = await runCli(['run', '-m', writeMatrix(dir, {}, '[sysinfo]'), '--results-dir', path.join(dir, 'runs')], {
      env: cliEnv({ SLURM_CONF: conf }),
    });
    const out = `${result.stdout}\n${result.stderr}`;
    expect(result.code, out).toBe(3);
    expect(out).toMatch(/SLURM_CONTROLLER_UNREACHABLE: Slurm's controller \(slurmctld\) did not answer salloc on this machine: /);
    expect(out).not.toMatch(/SLURM_JOB_REFUSED|sh -c|cm-slurm-ready|--kill-command|--job-name/);
  }, 120_000);

  it('Ctrl-C at a terminal (the whole process group) while the job waits: the job is gone, and the run says so', async () => {
    await lab!.slurm('scontrol', 'update', 'nodename=n1', 'state=drain', 'reason=cm-test-group-sigint');
    try {
      const dir = tempDir();
      const file = writeMatrix(dir, { nodelist: 'n1', queueWait: 120 }, '[sysinfo]');
      // A group of its own, as a terminal's foreground job: salloc gets the SIGINT too.
      const child = spawn(process.execPath, ['--import', tsxLoader, cliEntry, 'run', '-m', file, '--results-dir', path.join(dir, 'runs')], {
        env: { ...process.env, ...cliEnv(), NO_COLOR: '1' },
        detached: true,
      });
      started.push(child);
      let out = '';
      child.stdout!.on('data', (chunk) => (out += chunk));
      child.stderr!.on('data', (chunk) => (out += chunk));
      const exited = new Promise<number | null>((resolve) => child.on('close', resolve));
      await expect.poll(async () => (await lab!.queue()).some((line) => / PENDING /.test(line)), { timeout: 30_000 }).toBe(true);
      process.kill(-child.pid!, 'SIGINT');
      expect(await exited, out).toBe(130);
      expect(out).toMatch(
        /node: Slurm job (\d+|cm-\S+) (cancelled \(scancel\)|ended with the run: salloc cancelled it on the interrupt) while (it waited|PENDING)/,
      );
      expect(await lab!.queue()).toEqual([]);
    } finally {
      await lab!.resume('n1');
    }
  }, 120_000);

  it('Ctrl-C: the job is cancelled (scancel), the run says so and exits 130', async () => {
    const dir = tempDir();
    const file = writeMatrix(dir, {}, '[sysinfo]');
    const { child, done } = start(['run', '-m', file, '--results-dir', path.join(dir, 'runs')], {
      env: cliEnv({ CUDAPROBE_TEST_DELAY_MS: '120000' }),
    });
    await probeRunning();
    child.kill('SIGINT');
    const result = await done;
    expect(result.code).toBe(130);
    expect(`${result.stdout}\n${result.stderr}`).toMatch(/node: Slurm job \d+ cancelled \(scancel\): the run was interrupted/);
    expect(cells(eventsOf(dir))).toMatchObject([{ probe: 'sysinfo', status: 'cancelled' }]);
  }, 120_000);

  it('a probe past its timeout: it is stopped, the run says so, the cell is PROBE_TIMEOUT', async () => {
    const dir = tempDir();
    const file = writeMatrix(dir, {}, '[sysinfo]', ['    timeout: 2s']);
    const result = await runCli(
      ['run', '-m', file, '--results-dir', path.join(dir, 'runs'), '--reporter', 'console', '--reporter', 'nhc:-'],
      {
        env: cliEnv({ CUDAPROBE_TEST_DELAY_MS: '120000' }),
      },
    );
    expect(result.code).toBe(3);
    // nhc on stdout (the console moves to stderr): the node, exit status 3, the cell that failed.
    expect(result.stdout).toMatch(/^n[12] 3 ERROR: nhc: Health check failed: node: sysinfo PROBE_TIMEOUT: timed out after \d+ ms/);
    expect(`${result.stdout}\n${result.stderr}`).toMatch(
      // Through the lifeline's agent, or a step of its own when the agent was busy.
      /node: \S*cudaprobe\S* ran past its timeout: (the agent of Slurm job \d+ killed its process group|its step of Slurm job \d+ (was cancelled \(scancel \d+\.\d+\)|ended with its srun))/,
    );
    expect(cells(eventsOf(dir))).toMatchObject([{ probe: 'sysinfo', status: 'error', errorCode: 'PROBE_TIMEOUT' }]);
  });

  it('the CLI killed (SIGKILL) mid-probe: the job ends with its lifeline, nothing is left', async () => {
    const dir = tempDir();
    const file = writeMatrix(dir, {}, '[sysinfo]');
    const { child, done } = start(['run', '-m', file, '--results-dir', path.join(dir, 'runs')], {
      env: cliEnv({ CUDAPROBE_TEST_DELAY_MS: '120000' }),
    });
    await probeRunning();
    child.kill('SIGKILL');
    expect((await done).code).toBe(null);
    // afterEach: the queue empty, no step or task left, no work directory.
  }, 120_000);
});
