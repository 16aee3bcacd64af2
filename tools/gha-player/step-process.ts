/**
 * A step's process: spawned in its own process group with its output read line by line into the
 * step's log, cancelled and timed out as the runner does (SIGINT, SIGTERM, SIGKILL), killed by the
 * test's hooks; and the step's outcome from how the process ended.
 */
import { spawn } from 'node:child_process';
import { constants } from 'node:os';
import type { JobState } from './job-state.ts';
import type { StepLog } from './log.ts';
import type { StepControl, StepInfo, StepOutcome } from './play-types.ts';

export function killGroup(pid: number | undefined, signal: NodeJS.Signals): void {
  if (!pid) return;
  try {
    process.kill(-pid, signal);
  } catch {
    // gone already
  }
}

/** A stream's text cut into lines as they come (the last partial line kept until the end). */
function lines(onLine: (line: string) => void): { push(chunk: string): void; end(): void } {
  let rest = '';
  return {
    push(chunk) {
      const parts = (rest + chunk).split('\n');
      rest = parts.pop()!;
      for (const line of parts) onLine(line);
    },
    end() {
      if (rest !== '') onLine(rest);
      rest = '';
    },
  };
}

export interface ProcessEnd {
  exitCode: number;
  /** Why the player (or the test) ended it, if it did. */
  ended?: 'cancel' | 'timeout' | 'lost' | 'killed';
}

/** Runs one process of a step in its own process group, its output through the step's log. */
export async function runProcess(
  state: JobState,
  info: StepInfo,
  slog: StepLog,
  file: string,
  args: string[],
  cwd: string,
  env: Record<string, string>,
  timeoutMs: number | undefined,
): Promise<ProcessEnd> {
  const child = spawn(file, args, { cwd, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  let ended: ProcessEnd['ended'];
  const pid = child.pid;
  if (pid) state.groups.add(pid);
  const out = lines((line) => slog.processLine(line));
  const err = lines((line) => slog.processLine(line));
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => out.push(chunk));
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => err.push(chunk));
  // The runner's cancel: SIGINT, then SIGTERM after 7.5 s, then SIGKILL after 2.5 s more.
  const timers: NodeJS.Timeout[] = [];
  const interrupt = (why: 'cancel' | 'timeout') => {
    if (ended) return;
    ended = why;
    killGroup(pid, 'SIGINT');
    timers.push(
      setTimeout(() => killGroup(pid, 'SIGTERM'), 7500),
      setTimeout(() => killGroup(pid, 'SIGKILL'), 10_000),
    );
  };
  state.interrupt = interrupt;
  if (timeoutMs !== undefined) timers.push(setTimeout(() => interrupt('timeout'), timeoutMs));
  const control: StepControl = {
    loseRunner: () => {
      ended = 'lost';
      killGroup(pid, 'SIGKILL');
    },
    killStep: (signal = 'SIGKILL') => {
      ended ??= 'killed';
      killGroup(pid, signal);
    },
  };
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (code, signal) => resolve({ code, signal }));
  });
  const closed = new Promise((resolve) => child.once('close', resolve));
  state.common.hooks?.onStepSpawn?.(info, child, control);
  let status: { code: number | null; signal: NodeJS.Signals | null };
  try {
    status = await exited;
  } catch (e) {
    slog.annotate('error', `An error occurred trying to start process '${file}' with working directory '${cwd}'. ${(e as Error).message}`);
    return { exitCode: 1 };
  } finally {
    for (const timer of timers) clearTimeout(timer);
    state.interrupt = undefined;
  }
  // The step ends when its output is read; a grandchild holding the pipes open gets a second.
  await Promise.race([closed, new Promise((resolve) => setTimeout(resolve, 1000).unref())]);
  child.stdout!.destroy();
  child.stderr!.destroy();
  out.end();
  err.end();
  // A group with no process left is forgotten (its id may be reused); one with orphans is killed at the job's end.
  try {
    process.kill(-pid!, 0);
  } catch {
    state.groups.delete(pid!);
  }
  if (status.signal && !ended) ended = state.common.killMeans === 'step-failed' ? 'killed' : 'lost';
  const exitCode = status.code ?? 128 + (constants.signals[status.signal!] ?? 0);
  return ended ? { exitCode, ended } : { exitCode };
}

/** The step's outcome from how its process ended (the annotations GitHub adds included). */
export function ended(
  state: JobState,
  slog: StepLog,
  name: string,
  end: ProcessEnd,
  timeoutMs: number | undefined,
  exitAnnotation: boolean,
): StepOutcome {
  if (end.ended === 'lost') {
    state.lost = true;
    slog.annotate(
      'error',
      "The self-hosted runner: gha-player lost communication with the server. Verify the machine is running and has a healthy network connection. [player: the step's process tree was killed]",
    );
    return 'failure';
  }
  if (end.ended === 'cancel') return 'cancelled';
  if (end.ended === 'timeout') {
    slog.annotate('error', `The action '${name}' has timed out after ${(timeoutMs ?? 0) / 60_000} minutes.`);
    return 'failure';
  }
  if (end.exitCode !== 0) {
    if (exitAnnotation) slog.annotate('error', `Process completed with exit code ${end.exitCode}.`);
    return 'failure';
  }
  return 'success';
}
