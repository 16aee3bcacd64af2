/**
 * The chain [ssh, slurm]: SSH to a login node, then salloc/srun there, on a real sshd
 * (test/sshd.ts) whose sessions reach the lab's cluster (test/slurm/slurm-lab.ts) through
 * SLURM_CONF, set with sshd_config's SetEnv. The whole suite through both hops, and the SSH hop
 * lost mid-probe: the job ends with its lifeline (salloc's stdin is the SSH channel).
 */
import { readdirSync, writeFileSync } from 'node:fs';
import type { ChildProcess } from 'node:child_process';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { readEventLog, type RunEvent } from '../../events/events.ts';
import { runCli, startCli } from '../cli.ts';
import { tempDir } from '../helpers.ts';
import { sshHop } from '../ssh/ssh-helpers.ts';
import { sshdReady, startSshd, type Sshd } from '../sshd.ts';
import { defaultProbeNames } from '../../probes/catalogue.ts';
import { slurmReady, startSlurmLab, type SlurmLab } from './slurm-lab.ts';

/** The cells of probes: all (the catalogue's probes less the opt-in ones). */
const SUITE = defaultProbeNames().length;

const ready = sshdReady() && slurmReady();
let lab: SlurmLab | undefined;
let sshd: Sshd | undefined;
/** An sshd of its own for the test that kills it. */
let doomed: Sshd | undefined;
/** The steps' TMPDIR, where their work directories go. */
let nodeTmp = '';

beforeAll(async () => {
  if (!ready) return;
  lab = await startSlurmLab(2);
  nodeTmp = tempDir('cm-node-tmp-');
  // The login node's sessions: the lab's cluster, and a TMPDIR of this file's own for the steps.
  const env = [`SetEnv SLURM_CONF=${lab.conf} TMPDIR=${nodeTmp}`];
  // The doomed one's probes wait (the test hook, passed on by srun) until it is killed.
  [sshd, doomed] = await Promise.all([startSshd(1, env), startSshd(1, [`${env[0]} CUDAPROBE_TEST_DELAY_MS=120000`])]);
}, 120_000);

afterAll(async () => {
  await sshd?.stop();
  await doomed?.stop();
  const left = await lab?.stop();
  expect(left ?? []).toEqual([]);
});

const workDirsLeft = () => readdirSync(nodeTmp).filter((name) => name.startsWith('cm-slurm-'));

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

function writeMatrix(dir: string, server: Sshd, probes: string, slurm: Record<string, unknown> = {}): string {
  const file = path.join(dir, 'matrix.yaml');
  const hops = [sshHop(server, { name: 'login' }), { kind: 'slurm', partition: lab!.partition, ...slurm }];
  writeFileSync(
    file,
    [
      'version: 1',
      'concurrency: 2',
      `defaults: {probes: ${probes}}`,
      'targets:',
      '  - name: node',
      `    transport: ${JSON.stringify(hops)}`,
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

describe.skipIf(!ready)('[ssh, slurm]: a Slurm node reached through an SSH login node', () => {
  it('runs the whole probe suite through the login node on one node, and leaves nothing in the queue or on the node', async () => {
    const dir = tempDir();
    const result = await runCli(['run', '-m', writeMatrix(dir, sshd!, 'all'), '--results-dir', path.join(dir, 'runs')]);
    expect(result.code, result.stderr).toBe(0);
    const events = eventsOf(dir);
    expect(events.find((e) => e.type === 'target-ready')).toMatchObject({
      session: expect.stringMatching(new RegExp(`^slurm job \\d+ on n[12] via ssh (\\S+@)?127\\.0\\.0\\.1:${sshd!.ports[0]}$`)),
    });
    const suite = cells(events);
    expect(suite.length).toBe(SUITE);
    expect(
      suite.every((cell) => cell.status === 'skipped'),
      JSON.stringify(suite.map((cell) => [cell.probe, cell.status, cell.reason])),
    ).toBe(true);
  });

  it('nodes: all through the login node: sinfo there lists the nodes, one target per node', async () => {
    const dir = tempDir();
    const result = await runCli([
      'run',
      '-m',
      writeMatrix(dir, sshd!, '[sysinfo]', { nodes: 'all' }),
      '--results-dir',
      path.join(dir, 'runs'),
    ]);
    expect(result.code, result.stderr).toBe(0);
    const ready = Object.fromEntries(eventsOf(dir).flatMap((e) => (e.type === 'target-ready' ? [[e.target, e.session]] : [])));
    expect(ready).toEqual({
      'node@n1': expect.stringMatching(/^slurm job \d+ on n1 via ssh /),
      'node@n2': expect.stringMatching(/^slurm job \d+ on n2 via ssh /),
    });
  });

  it('the SSH hop lost mid-probe: the target ends with an error, the job ends with its lifeline', async () => {
    const dir = tempDir();
    const { done } = start(['run', '-m', writeMatrix(dir, doomed!, '[sysinfo]'), '--results-dir', path.join(dir, 'runs')]);
    await expect
      .poll(() => lab!.jobProcesses().some((jobProcess) => / \S*cudaprobe run sysinfo /.test(`${jobProcess} `)), {
        timeout: 60_000,
        interval: 200,
      })
      .toBe(true);
    doomed!.killAll();
    const result = await done;
    expect(result.code).toBe(3);
    const [cell] = cells(eventsOf(dir));
    expect(cell).toMatchObject({ probe: 'sysinfo', status: 'error' });
    // afterEach: the queue empty, no step, task, srun or salloc left, no work directory.
  }, 120_000);
});
