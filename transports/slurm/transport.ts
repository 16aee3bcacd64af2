/**
 * The `slurm` transport: a node of a Slurm cluster. A session is one job: salloc, run from the
 * login node (this machine, or the previous hop's: [ssh, slurm]), asks for one node and one task
 * with the matrix's partition, account, QOS, GRES, constraint, nodelist and time limit, and runs
 * a lifeline step on it (scripts.ts LIFELINE) whose stdin and stdout are ours: the command agent
 * (../agent/), which runs the session's commands on the node one at a time, each in a process
 * group of its own, for the cost of a fork instead of an srun. A command with stdin (a file
 * copied in), and one asked for while the agent is busy, is a step of its own instead,
 * `srun --jobid=J --overlap`. Either way all of a target's probes, and whatever one probe
 * starts, run on the one node the job was given, with the job's GPUs.
 *
 * Nothing is left in the queue: the session's end closes the lifeline's stdin and salloc gives
 * the allocation back; so does cudamatrix killed or an SSH hop lost (the stdin ends with them). A
 * command stopped (a timeout, Ctrl-C) has its process group killed by the agent, or its step
 * cancelled (scancel J.S); a run interrupted its job, and the run is told so. A job that waits
 * in the queue longer than queueWait is cancelled, and the error gives Slurm's reason.
 */
import { randomBytes } from 'node:crypto';
import { readFile, rm, writeFile } from 'node:fs/promises';
import type { Duplex } from 'node:stream';
import { CudamatrixError } from '../../core/errors.ts';
import { DEADLINE, withDeadline } from '../../core/timeout.ts';
import { ShellAgent } from '../agent/controller.ts';
import { runOnAgent, withEnv } from '../agent/run.ts';
import { execProcessTree } from '../local.ts';
import { streamProcess } from '../stream.ts';
import type { StopReason } from '../supervise.ts';
import type { Connect, ExecOptions, ExecResult, Session } from '../transport.ts';
import { DEFAULT_GRES, DEFAULT_QUEUE_WAIT_S, type SlurmOptions } from './options.ts';
import { sallocFailed } from './salloc-failed.ts';
import { LIFELINE, LIFELINE_INFO_LINES, READ_FILE, STEP, WRITE_FILE } from './scripts.ts';

/** Slurm's client commands (squeue, scancel, scontrol): bounded, so that a slurmctld that hangs does not hold the run. */
const CLIENT_TIMEOUT_MS = 30_000;
/** Copying a file through a step's stdin or stdout. */
const COPY_TIMEOUT_MS = 5 * 60_000;
/** What the run is told of a command stopped early, by why. */
const STOPPED: Record<StopReason, string> = {
  timeout: 'ran past its timeout',
  cancel: 'was stopped: the run was interrupted',
  flood: 'printed more than the output cap',
};
/** How long salloc may take to give the allocation back once the lifeline's stdin is closed. */
const RELEASE_TIMEOUT_MS = 15_000;

/** Where salloc, srun and the client tools run: here, or through the previous hop's session. */
interface SlurmRunner {
  /** For messages: "this machine", "ssh login1:22". */
  where: string;
  run(argv: string[], options: ExecOptions): Promise<ExecResult>;
  /** A long-lived command with its stdin and stdout as a byte stream (the lifeline). */
  stream(argv: string[]): Promise<Duplex>;
}

function localRunner(): SlurmRunner {
  return {
    where: 'this machine',
    run: (argv, options) => execProcessTree(argv, options),
    // salloc forwards TERM to its command and waits on; HUP makes it give the allocation back and go.
    stream: (argv) => streamProcess(argv, { stopSignal: 'SIGHUP' }),
  };
}

function viaRunner(via: Session): SlurmRunner {
  if (!via.openStream || via.platform !== 'linux') {
    throw new CudamatrixError(
      'MATRIX_INVALID',
      `a slurm hop needs a Linux login node that can carry a byte stream (its lifeline); ${via.description} cannot: reach the login node with an ssh hop`,
    );
  }
  return { where: via.description, run: (argv, options) => via.exec(argv, options), stream: (argv) => via.openStream!(argv) };
}

/** The first line of what a command said, made one line. */
function oneLine(text: string): string {
  return text.replace(/\s+/g, ' ').trim().slice(0, 600);
}

/** salloc's options from the matrix's. */
export function allocationArgs(options: SlurmOptions, jobName: string): string[] {
  const gres = options.gres ?? DEFAULT_GRES;
  return [
    `--job-name=${jobName}`,
    '--nodes=1',
    '--ntasks=1',
    ...(options.partition ? [`--partition=${options.partition}`] : []),
    ...(options.account ? [`--account=${options.account}`] : []),
    ...(options.qos ? [`--qos=${options.qos}`] : []),
    ...(gres !== 'none' ? [`--gres=${gres}`] : []),
    ...(options.constraint ? [`--constraint=${options.constraint}`] : []),
    ...(options.nodelist ? [`--nodelist=${options.nodelist}`] : []),
    ...(options.timeLimit ? [`--time=${options.timeLimit}`] : []),
  ];
}

/** Opens a session on a node of a Slurm cluster: a job of its own, from this machine or through the previous hop. */
export const connectSlurm: Connect<SlurmOptions> = async (options, context) => {
  const runner = context.via ? viaRunner(context.via) : localRunner();
  const nonce = randomBytes(6).toString('hex');
  const jobName = `cm-${context.runId}-${nonce}`;
  // --kill-command: when Slurm revokes the allocation (scancel, the time limit, the node down),
  // salloc kills the lifeline's srun at once instead of waiting for it.
  const argv = [
    'salloc',
    '--quiet',
    '--kill-command=KILL',
    ...allocationArgs(options, jobName),
    'srun',
    '--overlap',
    '--quiet',
    '--nodes=1',
    '--ntasks=1',
    'sh',
    '-c',
    LIFELINE,
    'sh',
    nonce,
    `cm-slurm-${nonce}`,
  ];
  let lifeline: Duplex;
  try {
    lifeline = await runner.stream(argv);
  } catch (error) {
    throw sallocFailed(runner.where, options, error, { target: context.target, name: jobName });
  }
  const queueWaitMs = (options.queueWait ?? DEFAULT_QUEUE_WAIT_S) * 1000;
  // How the lifeline ended: before the hello, salloc's own failure (sallocFailed reads it); after,
  // the session asks Slurm why (whyJobEnded).
  const agent = new ShellAgent(
    lifeline,
    nonce,
    { tag: 'slurm', infoLines: LIFELINE_INFO_LINES, trailer: true, name: "the Slurm job's agent" },
    (cause) => cause ?? new Error('salloc ended before the job started'),
  );
  const ready = await waitReady(agent, queueWaitMs, context.signal).catch(async (error: unknown) => {
    // Still in the queue (or never let in): why, said by Slurm (asked before salloc goes, which
    // takes the job with it), then cancelled.
    const job = await jobByName(runner, jobName);
    lifeline.destroy();
    if (job) await runner.run(['scancel', '--quiet', job.id], { timeoutMs: CLIENT_TIMEOUT_MS }).catch(() => undefined);
    if (error === DEADLINE) {
      throw new CudamatrixError(
        'SLURM_QUEUE_TIMEOUT',
        `target "${context.target}": Slurm job ${job?.id ?? jobName} waited ${queueWaitMs / 1000} s (queueWait) ${job ? `and is still ${job.state}, Slurm's reason: ${job.reason}` : 'and never started'}; it was cancelled (scancel). ${job?.reason.startsWith('ReqNodeNotAvail') ? 'The nodes it asked for are drained, down or reserved (sinfo -R says why)' : 'Allow a longer queueWait, or ask for a partition, QOS or GRES that is free sooner'}`,
      );
    }
    if (context.signal?.aborted) {
      // A Ctrl-C at a terminal reaches salloc too (one process group), which cancels the job itself.
      context.onProgress?.(
        job
          ? `${context.target}: Slurm job ${job.id} cancelled (scancel) while ${job.state}: the run was interrupted`
          : `${context.target}: Slurm job ${jobName} ended with the run: salloc cancelled it on the interrupt while it waited`,
      );
      throw error;
    }
    throw sallocFailed(runner.where, options, error, { target: context.target, name: jobName });
  });
  return new SlurmSession(runner, lifeline, agent, ready, context.target, context.signal, context.onProgress);
};

interface Ready {
  jobId: string;
  node: string;
  arch: string;
  workDir: string;
}

/** The agent's hello (the job started, the work directory made); rejects with DEADLINE after `ms`, or with why the lifeline ended. */
async function waitReady(agent: ShellAgent, ms: number, signal?: AbortSignal): Promise<Ready> {
  const hello = await withDeadline(agent.hello, ms, signal);
  const [jobId, node, arch] = hello.lookAround;
  if (!jobId || !node || !arch || !hello.workDir.startsWith('/'))
    throw new Error(`the lifeline step said what cudamatrix does not expect: ${JSON.stringify(hello)}`);
  return { jobId, node, arch, workDir: hello.workDir };
}

interface QueuedJob {
  id: string;
  state: string;
  reason: string;
}

/** The job of that name in the queue, or undefined. */
async function jobByName(runner: SlurmRunner, name: string): Promise<QueuedJob | undefined> {
  const result = await runner
    .run(['squeue', '--noheader', `--name=${name}`, '--format=%i|%T|%r'], { timeoutMs: CLIENT_TIMEOUT_MS })
    .catch(() => undefined);
  const line = result?.stdout.split('\n').find((row) => row.includes('|'));
  if (!line) return undefined;
  const [id, state, reason] = line.trim().split('|');
  return { id: id!, state: state!, reason: reason ?? '' };
}

class SlurmSession implements Session {
  readonly description: string;
  readonly hostKey: string;
  readonly platform = 'linux' as const;
  readonly shell = 'posix' as const;
  readonly arch: string;
  readonly workDir: string;
  private readonly jobId: string;
  private readonly node: string;
  /** Why the lifeline ended before the session did (the job was cancelled, its node went down). */
  private lifelineEnded = false;
  private readonly released: Promise<void>;
  private disposed = false;

  constructor(
    private readonly runner: SlurmRunner,
    private readonly lifeline: Duplex,
    /** The agent in the lifeline step: it runs the commands while it is idle. */
    private readonly agent: ShellAgent,
    ready: Ready,
    private readonly target: string,
    private readonly signal: AbortSignal | undefined,
    private readonly onProgress: ((message: string) => void) | undefined,
  ) {
    this.jobId = ready.jobId;
    this.node = ready.node;
    this.arch = ready.arch;
    this.workDir = ready.workDir;
    this.description = `slurm job ${ready.jobId} on ${ready.node}${runner.where === 'this machine' ? '' : ` via ${runner.where}`}`;
    this.hostKey = `slurm:${ready.node}`;
    lifeline.on('error', () => undefined);
    lifeline.resume();
    this.released = new Promise((resolve) => lifeline.once('close', () => resolve()));
    void this.released.then(() => (this.lifelineEnded = true));
  }

  /**
   * Through the lifeline's agent when it is idle and the command needs no stdin; else as a step
   * of its own (srun).
   */
  async exec(argv: string[], options: ExecOptions = {}): Promise<ExecResult> {
    if (this.lifelineEnded || this.agent.failure) throw await this.whyJobEnded(argv, '');
    if (!this.agent.busy && options.stdin === undefined) {
      return runOnAgent(
        this.agent,
        argv,
        options,
        options.cwd ?? this.workDir,
        () => this.whyJobEnded(argv, ''),
        (why) =>
          this.onProgress?.(
            `${this.target}: ${argv[0] ?? 'a command'} ${STOPPED[why]}: the agent of Slurm job ${this.jobId} killed its process group`,
          ),
      );
    }
    return this.execStep(argv, options);
  }

  /** One step of the job, under STEP: its exit status from the marker, srun's own lines left in stderr. */
  private async execStep(argv: string[], options: ExecOptions): Promise<ExecResult> {
    const nonce = randomBytes(6).toString('hex');
    const command = withEnv(argv, options.env);
    const step = [
      'srun',
      `--jobid=${this.jobId}`,
      '--overlap',
      '--quiet',
      '--nodes=1',
      '--ntasks=1',
      `--job-name=cm-step-${nonce}`,
      'sh',
      '-c',
      STEP,
      'sh',
      nonce,
      options.cwd ?? this.workDir,
      ...command,
    ];
    const result = await this.runner.run(step, {
      stdin: options.stdin,
      timeoutMs: options.timeoutMs,
      signal: options.signal,
      maxOutput: options.maxOutput,
    });
    // The last marker of this nonce is the step's; every one is taken out (a command stopped as
    // srun ends its step can leave one of its own killed shell's, seen under load).
    const markers = [...result.stderr.matchAll(new RegExp(`cm-slurm-exit-${nonce} (\\d+)\\n`, 'g'))];
    const match = markers.at(-1);
    const stderr = result.stderr.replace(new RegExp(`cm-slurm-exit-${nonce} \\d+\\n`, 'g'), '');
    // Stopped by this side first: as srun ends the step, the step's shell can still print the
    // marker of its killed command (seen under load), and the run must be told all the same.
    if (result.timedOut || result.cancelled || result.truncated) {
      await this.stopped(argv, nonce, STOPPED[result.timedOut ? 'timeout' : result.cancelled ? 'cancel' : 'flood']);
      return { ...result, command: argv, stderr };
    }
    if (match) {
      // Killed by a signal: Slurm may be ending the step as its node goes down, and the step's
      // shell can print the marker before its own signal lands (seen under load). Ask the node.
      const down = Number(match[1]) > 128 ? await this.nodeDown(argv, result.stderr) : null;
      if (down) throw down;
      return { ...result, command: argv, exitCode: Number(match[1]), signal: null, stderr };
    }
    throw await this.whyJobEnded(argv, result.stderr);
  }

  /**
   * After a stopped step's srun has ended: a step still there (an srun killed before it could
   * end it) is cancelled. Either way the run is told.
   */
  private async stopped(argv: string[], nonce: string, why: string): Promise<void> {
    const result = await this.runner
      .run(['squeue', '--noheader', '--steps', `--jobs=${this.jobId}`, '--format=%i %j'], { timeoutMs: CLIENT_TIMEOUT_MS })
      .catch(() => undefined);
    const stepId = result?.stdout
      .split('\n')
      .map((line) => line.trim().split(/\s+/))
      .find((fields) => fields[1] === `cm-step-${nonce}`)?.[0];
    if (stepId) await this.runner.run(['scancel', '--quiet', stepId], { timeoutMs: CLIENT_TIMEOUT_MS }).catch(() => undefined);
    this.onProgress?.(
      `${this.target}: ${argv[0] ?? 'a command'} ${why}: its step of Slurm job ${this.jobId} ${stepId ? `was cancelled (scancel ${stepId})` : 'ended with its srun'}`,
    );
  }

  /** The job went away under a step: its node down or drained, the job cancelled or past its time limit. */
  private async whyJobEnded(argv: string[], srunSaid: string): Promise<CudamatrixError> {
    const said = oneLine(srunSaid);
    return (
      (await this.nodeDown(argv, srunSaid)) ??
      new CudamatrixError(
        'SLURM_JOB_ENDED',
        `Slurm job ${this.jobId} on ${this.node} ended while ${argv[0] ?? 'a command'} ran (cancelled, or past its time limit: "sacct -j ${this.jobId}" says which)${said ? `; srun said: ${said}` : ''}`,
      )
    );
  }

  /** SLURM_NODE_DOWN when the step's node is down, drained or failing (or srun said so); null when it is not. */
  private async nodeDown(argv: string[], srunSaid: string): Promise<CudamatrixError | null> {
    const what = `${argv[0] ?? 'a command'}`;
    const result = await this.runner
      .run(['scontrol', '--oneliner', 'show', 'node', this.node], { timeoutMs: CLIENT_TIMEOUT_MS })
      .catch(() => undefined);
    const state = /\bState=(\S+)/.exec(result?.stdout ?? '')?.[1] ?? '';
    const reason = /\bReason=([^\n]*?)(?= \w+=|\s*$)/
      .exec(result?.stdout ?? '')?.[1]
      ?.replace(/\s*\[[^\]]*\]$/, '')
      .trim();
    const said = oneLine(srunSaid);
    // The node's state now, or srun's word for it (a node back in service already).
    if (/DOWN|DRAIN|FAIL|NOT_RESPONDING|\*/.test(state) || /Node failure on/.test(said)) {
      return new CudamatrixError(
        'SLURM_NODE_DOWN',
        `node ${this.node} is ${state || 'unknown'}${reason ? ` (reason: ${reason})` : ''}: Slurm job ${this.jobId} ended while ${what} ran there${said ? `; srun said: ${said}` : ''}`,
      );
    }
    return null;
  }

  /**
   * A copy's step (put, get: each may run again). One whose srun ended without the exit marker
   * while the job still runs is run once more: under load srun was seen to lose its I/O with
   * slurmstepd ("step_launch_notify_io_failure") on a healthy node.
   */
  private async copyStep(argv: string[], options: ExecOptions): Promise<ExecResult> {
    try {
      return await this.exec(argv, options);
    } catch (error) {
      if (!(error instanceof CudamatrixError) || error.code !== 'SLURM_JOB_ENDED' || !(await this.jobRunning())) throw error;
      this.onProgress?.(
        `${this.target}: a copy's step of Slurm job ${this.jobId} failed (${error.message}); the job still runs: trying once more`,
      );
      return this.exec(argv, options);
    }
  }

  private async jobRunning(): Promise<boolean> {
    if (this.lifelineEnded) return false;
    const result = await this.runner
      .run(['squeue', '--noheader', `--jobs=${this.jobId}`, '--format=%T'], { timeoutMs: CLIENT_TIMEOUT_MS })
      .catch(() => undefined);
    return result?.stdout.trim() === 'RUNNING';
  }

  async put(localPath: string, remotePath: string, options: { executable?: boolean } = {}): Promise<void> {
    const data = await readFile(localPath);
    const result = await this.copyStep(['sh', '-c', WRITE_FILE, 'sh', remotePath, options.executable ? '755' : '644'], {
      cwd: '/',
      stdin: data.toString('base64'),
      timeoutMs: COPY_TIMEOUT_MS,
    });
    if (result.exitCode !== 0)
      throw new CudamatrixError(
        'TRANSPORT_FAILED',
        `could not write ${remotePath} on ${this.description}: ${oneLine(result.stderr) || `exit status ${result.exitCode}`}`,
      );
  }

  async get(remotePath: string, localPath: string): Promise<void> {
    const result = await this.copyStep(['sh', '-c', READ_FILE, 'sh', remotePath], { cwd: '/', timeoutMs: COPY_TIMEOUT_MS });
    if (result.exitCode !== 0) {
      await rm(localPath, { force: true });
      throw new CudamatrixError(
        'TRANSPORT_FAILED',
        `could not read ${remotePath} on ${this.description}: ${oneLine(result.stderr) || `exit status ${result.exitCode}`}`,
      );
    }
    await writeFile(localPath, Buffer.from(result.stdout, 'base64'));
  }

  joinPath(...parts: string[]): string {
    return parts.join('/').replace(/\/+/g, '/');
  }

  /**
   * Closes the lifeline's stdin: it removes the work directory, salloc gives the allocation back.
   * A run interrupted cancels the job first; a job still there after RELEASE_TIMEOUT_MS is
   * cancelled too. Either is said.
   */
  async [Symbol.asyncDispose](): Promise<void> {
    if (this.disposed) return;
    this.disposed = true;
    if (this.signal?.aborted && !this.lifelineEnded) await this.cancelJob('the run was interrupted');
    this.lifeline.end();
    let timer: NodeJS.Timeout | undefined;
    const inTime = await Promise.race([
      this.released.then(() => true),
      new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), RELEASE_TIMEOUT_MS))),
    ]);
    clearTimeout(timer);
    if (!inTime) {
      await this.cancelJob(`salloc did not give the allocation back within ${RELEASE_TIMEOUT_MS / 1000} s`);
      this.lifeline.destroy();
    }
  }

  private async cancelJob(why: string): Promise<void> {
    const result = await this.runner.run(['scancel', this.jobId], { timeoutMs: CLIENT_TIMEOUT_MS }).catch(() => undefined);
    if (result?.exitCode === 0) this.onProgress?.(`${this.target}: Slurm job ${this.jobId} cancelled (scancel): ${why}`);
  }
}
