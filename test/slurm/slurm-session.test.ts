/**
 * The slurm transport's session on a real Slurm (test/slurm/slurm-lab.ts): a job per session, a
 * step per command on the job's node with its GPU, files both ways, the queue wait bounded with
 * Slurm's reason, a step past its timeout cancelled, a node taken down under a step named, and
 * nothing left in the queue or on the node after each.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { CudamatrixError } from '../../core/errors.ts';
import { connectChain, type Hop } from '../../transports/registry.ts';
import type { Session } from '../../transports/transport.ts';
import { tempDir } from '../helpers.ts';
import { slurmReady, startSlurmLab, type SlurmLab } from './slurm-lab.ts';

const ready = slurmReady();
let lab: SlurmLab | undefined;

beforeAll(async () => {
  if (!ready) return;
  lab = await startSlurmLab(2);
  // The client tools this process starts (salloc, srun, squeue) find the lab by it.
  process.env.SLURM_CONF = lab.conf;
}, 120_000);

afterAll(async () => {
  delete process.env.SLURM_CONF;
  const left = await lab?.stop();
  expect(left ?? []).toEqual([]);
});

afterEach(async () => {
  if (lab) expect(await lab.settled()).toEqual({ queue: [], processes: [] });
});

const messages: string[] = [];
function connect(options: Record<string, unknown> = {}, signal?: AbortSignal): Promise<Session> {
  const hops: Hop[] = [{ kind: 'slurm', queueWait: 60, ...options }];
  return connectChain(hops, {
    target: 'node',
    runId: `t${randomBytes(3).toString('hex')}`,
    signal,
    onProgress: (message) => messages.push(message),
  });
}

async function rejection(pending: Promise<unknown>): Promise<CudamatrixError> {
  const error = await pending.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(CudamatrixError);
  return error as CudamatrixError;
}

describe.skipIf(!ready)('kind slurm: a session is a job on one node', () => {
  it('runs every command in one job, on its node with its GPU, and removes the work directory at the end', async () => {
    const session = await connect({ nodelist: 'n2' });
    let workDir: string;
    try {
      expect(session.description).toMatch(/^slurm job \d+ on n2$/);
      expect(session.platform).toBe('linux');
      workDir = session.workDir;
      const jobId = /job (\d+)/.exec(session.description)![1];
      const echoed = await session.exec(['sh', '-c', 'echo "$SLURM_JOB_ID $SLURMD_NODENAME $CUDA_VISIBLE_DEVICES $(pwd)"']);
      expect(echoed).toMatchObject({ exitCode: 0, stderr: '', stdout: `${jobId} n2 0 ${workDir}\n` });
      // Exit statuses, stderr as the command wrote it (no srun lines), stdin, env, cwd.
      const failing = await session.exec(['sh', '-c', 'echo oops >&2; exit 3']);
      expect(failing).toMatchObject({ exitCode: 3, stderr: 'oops\n', timedOut: false });
      expect((await session.exec(['cat'], { stdin: 'through srun\n' })).stdout).toBe('through srun\n');
      expect((await session.exec(['sh', '-c', 'echo "$CM_X"'], { env: { CM_X: 'a b' } })).stdout).toBe('a b\n');
      expect((await session.exec(['pwd'], { cwd: '/no/such/dir' })).exitCode).toBe(125);
      expect((await session.exec(['no-such-command-cm'])).exitCode).toBe(127);
      // Files both ways, byte for byte.
      const dir = tempDir();
      const bytes = randomBytes(200_000);
      writeFileSync(path.join(dir, 'in.bin'), bytes);
      await session.put(path.join(dir, 'in.bin'), session.joinPath(workDir, 'x.bin'), { executable: true });
      expect((await session.exec(['sh', '-c', 'stat -c %a x.bin'])).stdout.trim()).toBe('755');
      await session.get(session.joinPath(workDir, 'x.bin'), path.join(dir, 'out.bin'));
      expect(readFileSync(path.join(dir, 'out.bin')).equals(bytes)).toBe(true);
      expect(existsSync(workDir)).toBe(true);
    } finally {
      await session[Symbol.asyncDispose]();
    }
    expect(existsSync(workDir)).toBe(false);
  });

  it('cancels a step past its timeout (scancel) and says so; the job goes on', async () => {
    messages.length = 0;
    const session = await connect();
    try {
      // With stdin a command is a step of its own (srun), not the agent's.
      const result = await session.exec(['sleep', '120'], { timeoutMs: 1500, stdin: '' });
      expect(result.timedOut).toBe(true);
      expect(messages.join('\n')).toMatch(
        /^node: sleep ran past its timeout: its step of Slurm job \d+ (was cancelled \(scancel \d+\.\d+\)|ended with its srun)$/m,
      );
      const steps = await lab!.slurm('squeue', '--noheader', '--steps', '--format=%i %j');
      expect(steps).not.toMatch(/cm-step-/);
      expect((await session.exec(['true'])).exitCode).toBe(0);
      // Under load the step's shell can print its exit marker (143) as srun ends the step; the
      // command here prints that marker itself (the nonce is its parent's argument) to make it
      // certain. It is still a timeout, said as one, and the marker is not in stderr.
      messages.length = 0;
      const fakeMarker =
        "n=$(tr '\\0' '\\n' < /proc/$PPID/cmdline | grep -xE '[0-9a-f]{12}'); printf 'cm-slurm-exit-%s 143\\n' \"$n\" >&2; exec sleep 120";
      const marked = await session.exec(['sh', '-c', fakeMarker], { timeoutMs: 1500, stdin: '' });
      expect(marked.timedOut).toBe(true);
      expect(marked.exitCode).not.toBe(143);
      expect(marked.stderr).not.toMatch(/cm-slurm-exit-/);
      expect(messages.join('\n')).toMatch(/^node: sh ran past its timeout: its step of Slurm job \d+ /m);
    } finally {
      await session[Symbol.asyncDispose]();
    }
  });

  it("a job that waits past queueWait is cancelled, and the error gives Slurm's reason (Resources)", async () => {
    // Both GPUs held by another job: ours pends for Resources.
    const holder = lab!.slurm('srun', '-N2', '--gres=gpu:1', '-J', 'holder', 'sleep', '300').catch(() => undefined);
    try {
      await expect.poll(async () => (await lab!.queue()).some((line) => line.includes(' holder RUNNING ')), { timeout: 60_000 }).toBe(true);
      const error = await rejection(connect({ queueWait: 3 }));
      expect(error.code).toBe('SLURM_QUEUE_TIMEOUT');
      expect(error.message).toMatch(
        /^target "node": Slurm job \d+ waited 3 s \(queueWait\) and is still PENDING, Slurm's reason: Resources; it was cancelled \(scancel\)/,
      );
      expect((await lab!.queue()).filter((line) => !line.includes(' holder '))).toEqual([]);
    } finally {
      await lab!.slurm('scancel', '--name=holder');
      await holder;
    }
  });

  it('Ctrl-C while the job waits in the queue: it is cancelled, and said', async () => {
    messages.length = 0;
    await lab!.slurm('scontrol', 'update', 'nodename=n1', 'state=drain', 'reason=cm-test-wait');
    try {
      const abort = new AbortController();
      const connecting = connect({ nodelist: 'n1', queueWait: 120 }, abort.signal);
      await expect.poll(async () => (await lab!.queue()).some((line) => / PENDING /.test(line)), { timeout: 30_000 }).toBe(true);
      abort.abort(new Error('interrupted'));
      await expect(connecting).rejects.toThrow('interrupted');
      expect(messages.join('\n')).toMatch(/^node: Slurm job \d+ cancelled \(scancel\) while PENDING: the run was interrupted$/m);
    } finally {
      await lab!.resume('n1');
    }
  });

  it('a waiting job cancelled from outside (scancel by a user or an admin) is SLURM_JOB_ENDED, not a refusal', async () => {
    await lab!.slurm('scontrol', 'update', 'nodename=n1', 'state=drain', 'reason=cm-test-outside-cancel');
    try {
      const connecting = rejection(connect({ nodelist: 'n1', queueWait: 120 }));
      let pending = '';
      await expect
        .poll(async () => (pending = (await lab!.queue()).find((line) => / PENDING /.test(line)) ?? ''), { timeout: 30_000 })
        .not.toBe('');
      await lab!.slurm('scancel', pending.split(' ')[0]!);
      const error = await connecting;
      expect(error.code).toBe('SLURM_JOB_ENDED');
      expect(error.message).toMatch(
        /^target "node": Slurm job cm-\S+ ended before it started: cancelled from outside \(scancel\), or by the cluster/,
      );
      expect(error.message).not.toMatch(/Fix: check the target's partition/);
    } finally {
      await lab!.resume('n1');
    }
  });

  it('a drained node asked for by nodelist: the job pends with ReqNodeNotAvail, said in the error', async () => {
    await lab!.slurm('scontrol', 'update', 'nodename=n1', 'state=drain', 'reason=cm-test-maintenance');
    try {
      const error = await rejection(connect({ nodelist: 'n1', queueWait: 3 }));
      expect(error.code).toBe('SLURM_QUEUE_TIMEOUT');
      expect(error.message).toMatch(/Slurm's reason: ReqNodeNotAvail.*drained, down or reserved/);
    } finally {
      await lab!.resume('n1');
    }
  });

  it('a node taken down under a running step is SLURM_NODE_DOWN naming the node and the reason', async () => {
    const session = await connect({ nodelist: 'n2' });
    try {
      // Through the lifeline's agent: no step of its own, a process on the node.
      const running = session.exec(['sleep', '121'], { timeoutMs: 90_000 });
      await expect.poll(() => lab!.jobProcesses().some((line) => / sleep 121$/.test(line)), { timeout: 30_000 }).toBe(true);
      await lab!.slurm('scontrol', 'update', 'nodename=n2', 'state=down', 'reason=cm-test-gpu-fell-off');
      const error = await rejection(running);
      expect(error.code).toBe('SLURM_NODE_DOWN');
      expect(error.message).toMatch(/^node n2 is DOWN\S* \(reason: cm-test-gpu-fell-off\): Slurm job \d+ ended while sleep ran there/);
    } finally {
      await session[Symbol.asyncDispose]();
      await lab!.resume('n2');
    }
  });

  it('a copy whose srun dies mid-way while the job runs is run once more, and said (srun seen losing its I/O under load)', async () => {
    messages.length = 0;
    const session = await connect({ nodelist: 'n2' });
    try {
      const dir = tempDir();
      const bytes = randomBytes(16_000_000);
      writeFileSync(path.join(dir, 'big.bin'), bytes);
      // A put is a step of its own (its stdin carries the file): its srun, killed as soon as it is seen.
      const copying = session.put(path.join(dir, 'big.bin'), session.joinPath(session.workDir, 'big.bin'));
      let killed = false;
      for (let i = 0; i < 1000 && !killed; i++) {
        const srun = lab!.jobProcesses().find((jobProcess) => /^\d+ srun .*cm-step-.*base64 -d >/.test(jobProcess));
        if (srun) {
          process.kill(Number(srun.split(' ')[0]), 'SIGKILL');
          killed = true;
        } else await new Promise((resolve) => setTimeout(resolve, 2));
      }
      expect(killed).toBe(true);
      await copying;
      await session.get(session.joinPath(session.workDir, 'big.bin'), path.join(dir, 'out.bin'));
      expect(readFileSync(path.join(dir, 'out.bin')).equals(bytes)).toBe(true);
      expect(messages.join('\n')).toMatch(/^node: a copy's step of Slurm job \d+ failed \(.*\); the job still runs: trying once more$/m);
    } finally {
      await session[Symbol.asyncDispose]();
    }
  }, 120_000);

  it('a salloc that does not give the allocation back: the job is cancelled and salloc killed, said', async () => {
    // Seen in CI: salloc stayed after its node went down and its command had ended, and ignores
    // TERM while it runs one. Stopped here (SIGSTOP), it answers nothing but KILL.
    messages.length = 0;
    const session = await connect({ nodelist: 'n2' });
    const jobId = /job (\d+)/.exec(session.description)![1];
    const salloc = lab!.jobProcesses().find((jobProcess) => / salloc /.test(` ${jobProcess.split(' ').slice(1).join(' ')}`));
    expect(salloc).toBeDefined();
    const pid = Number(salloc!.split(' ')[0]);
    process.kill(pid, 'SIGSTOP');
    await session[Symbol.asyncDispose]();
    expect(messages.join('\n')).toContain(
      `node: Slurm job ${jobId} cancelled (scancel): salloc did not give the allocation back within 15 s`,
    );
    await expect.poll(() => existsSync(`/proc/${pid}`), { timeout: 15_000, interval: 200 }).toBe(false);
  }, 60_000);

  it("refuses a partition that is not there, with salloc's words", async () => {
    const error = await rejection(connect({ partition: 'nosuch' }));
    expect(error.code).toBe('SLURM_JOB_REFUSED');
    expect(error.message).toMatch(/invalid partition/i);
  });
});

describe.skipIf(!ready)("kind slurm: commands run through the agent in the job's lifeline step", () => {
  const stepOf = async (session: Session, options: { stdin?: string } = {}) =>
    (await session.exec(['sh', '-c', 'echo "$SLURM_STEP_ID"'], options)).stdout.trim();

  it('runs the commands in the lifeline step (step 0): no step is made for them; one with stdin is a step of its own', async () => {
    const session = await connect();
    try {
      // Slurm numbers a job's steps in order: were any made for these five, the step with stdin would not be step 1.
      for (let i = 0; i < 5; i++) expect(await stepOf(session)).toBe('0');
      expect(await stepOf(session, { stdin: '' })).toBe('1');
      // Output that does not end in a newline, on both streams, comes back whole and at once.
      const unended = await session.exec(['sh', '-c', 'printf out; printf err >&2; exit 4'], { timeoutMs: 20_000 });
      expect(unended).toMatchObject({ stdout: 'out', stderr: 'err', exitCode: 4, timedOut: false });
    } finally {
      await session[Symbol.asyncDispose]();
    }
  });

  it('a command stopped through the agent (timeout, Ctrl-C) leaves no process on the node, and the job goes on', async () => {
    messages.length = 0;
    const session = await connect();
    try {
      const timedOut = await session.exec(['sh', '-c', 'sleep 131 & sleep 132; wait'], { timeoutMs: 1500 });
      expect(timedOut.timedOut).toBe(true);
      expect(messages.join('\n')).toMatch(/^node: sh ran past its timeout: the agent of Slurm job \d+ killed its process group$/m);
      const abort = new AbortController();
      const interrupted = session.exec(['sh', '-c', 'sleep 133 & sleep 134; wait'], { signal: abort.signal });
      await expect.poll(() => lab!.jobProcesses().some((line) => / sleep 134$/.test(line)), { timeout: 30_000 }).toBe(true);
      abort.abort(new Error('interrupted'));
      expect((await interrupted).cancelled).toBe(true);
      expect(messages.join('\n')).toMatch(
        /^node: sh was stopped: the run was interrupted: the agent of Slurm job \d+ killed its process group$/m,
      );
      expect(lab!.jobProcesses().filter((line) => / sleep 13\d$/.test(line))).toEqual([]);
      expect(await stepOf(session)).toBe('0');
    } finally {
      await session[Symbol.asyncDispose]();
    }
  });

  it('a command asked for while the agent is busy runs as a step of its own, side by side', async () => {
    const session = await connect();
    try {
      const long = session.exec(['sh', '-c', 'sleep 3; echo "long $SLURM_STEP_ID"'], { timeoutMs: 60_000 });
      const meanwhile = await stepOf(session);
      expect(meanwhile).not.toBe('0');
      expect(meanwhile).toMatch(/^\d+$/);
      expect((await long).stdout).toBe('long 0\n');
      expect(await stepOf(session)).toBe('0');
    } finally {
      await session[Symbol.asyncDispose]();
    }
  });
});
