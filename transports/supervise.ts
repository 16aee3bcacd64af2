/**
 * The control logic every transport's exec shares: the timeout, cancellation through an
 * AbortSignal, the output cap, the duration and the ExecResult. A transport only starts the
 * command, pushes its decoded output through `io`, says how it ended, and knows how to stop it
 * (a process group signalled, a "stop" line to a helper, a channel closed, a container killed).
 */
import type { ExecOptions, ExecResult } from './transport.ts';

/** Cap on stdout and on stderr when ExecOptions.maxOutput is not given, in characters. */
export const DEFAULT_MAX_OUTPUT = 64 * 1024 * 1024;

/**
 * The longest delay setTimeout takes (2^31-1 ms, about 24.8 days). Above it Node warns
 * (TimeoutOverflowWarning) and fires at once; a timeout that long means "no practical limit".
 */
export const MAX_TIMER_MS = 2 ** 31 - 1;

/** Why a command is being stopped. */
export type StopReason = 'timeout' | 'cancel' | 'flood';

/** Where a transport pushes the command's output, as decoded text, in the order it came. */
export interface ExecIo {
  stdout(text: string): void;
  stderr(text: string): void;
  /** The transport kept as much of the output as it may (bytes it decodes at the end): stop it as a flood. */
  overflow(): void;
}

/** How a command ended, as its transport saw it. */
export interface ExecEnd {
  exitCode: number | null;
  signal: string | null;
}

/** A started command: its end, and how to stop it early. */
export interface Launched {
  /** Settles when the command has ended and its output is all pushed; rejects when the transport failed. */
  done: Promise<ExecEnd>;
  /** Stops the command (called at most once; the first reason wins). */
  stop(why: StopReason): void;
}

/**
 * Runs a command under a timeout, a cancellation signal and an output cap. `launch` starts it
 * (it may be async: a stop asked for meanwhile is delivered as soon as it has started). A
 * non-zero exit is data; a transport failure (`launch` or `done` rejecting) rejects as it is.
 */
export async function supervise(
  argv: string[],
  options: ExecOptions,
  launch: (io: ExecIo) => Launched | Promise<Launched>,
): Promise<ExecResult> {
  const max = options.maxOutput ?? DEFAULT_MAX_OUTPUT;
  const started = performance.now();
  let stdout = '';
  let stderr = '';
  let timedOut = false;
  let cancelled = false;
  let truncated = false;
  let finished = false;
  let launched: Launched | undefined;
  /** The first reason to stop; the command is stopped once, for it. */
  let stopping: StopReason | undefined;
  let stopDelivered = false;

  const deliverStop = (): void => {
    if (stopping && launched && !stopDelivered && !finished) {
      stopDelivered = true;
      launched.stop(stopping);
    }
  };
  const requestStop = (why: StopReason): void => {
    stopping ??= why;
    deliverStop();
  };
  const take = (which: 'out' | 'err', text: string): void => {
    if (finished || !text) return;
    const kept = which === 'out' ? stdout : stderr;
    // Past the cap nothing more is kept: a flood costs neither memory nor time.
    if (kept.length >= max) return overflow();
    const next = kept + text;
    const cut = next.length > max ? next.slice(0, max) : next;
    if (which === 'out') {
      stdout = cut;
      options.onStdout?.(text);
    } else stderr = cut;
    if (next.length > max) overflow();
  };
  const overflow = (): void => {
    truncated = true;
    requestStop('flood');
  };
  const io: ExecIo = { stdout: (text) => take('out', text), stderr: (text) => take('err', text), overflow };

  const timeout = options.timeoutMs;
  const timer =
    timeout !== undefined && timeout > 0 && timeout !== Infinity
      ? setTimeout(
          () => {
            timedOut = true;
            requestStop('timeout');
          },
          Math.min(timeout, MAX_TIMER_MS),
        )
      : undefined;
  const onAbort = (): void => {
    cancelled = true;
    requestStop('cancel');
  };
  const signal = options.signal;
  signal?.addEventListener('abort', onAbort, { once: true });
  try {
    if (signal?.aborted) onAbort();
    launched = await launch(io);
    deliverStop();
    const end = await launched.done;
    return {
      command: argv,
      exitCode: end.exitCode,
      signal: end.signal,
      timedOut,
      cancelled,
      truncated,
      durationMs: performance.now() - started,
      stdout,
      stderr,
    };
  } finally {
    finished = true;
    if (timer) clearTimeout(timer);
    signal?.removeEventListener('abort', onAbort);
  }
}
