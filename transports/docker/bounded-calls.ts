/**
 * Every call to a Docker engine, bounded: an engine that is frozen (dockerd stopped), overloaded,
 * or not an engine at all (a TCP port that accepts and never answers) must not hang a run. Each
 * call gets an AbortSignal that fires at its bound (the HTTP request is destroyed) and fails with
 * "the Docker engine at X did not answer within N s (what it was asked)".
 *
 * A frozen engine is noticed sooner than a call's bound, without failing a call that is only
 * slow: while anything waits on the engine (a call, a build's progress, a command's output), a
 * watchdog pings it (GET /_ping, a connection of its own) every few seconds. An engine that
 * answers no ping for FROZEN_AFTER_S is frozen: everything waiting on it fails at once, and so
 * does every later call (the target fails, and its container is left to the engine or reap).
 */
import type { Readable } from 'node:stream';
import type Dockerode from 'dockerode';
import { CudamatrixError, type ErrorCode } from '../../core/errors.ts';
import type { ResolvedEngine } from './engine.ts';

/** Seconds to wait for the engine's first answers (ping, info), unless the matrix says otherwise. */
export const DEFAULT_CONNECT_TIMEOUT_S = 15;
/** Seconds to wait for any later call (inspect, create, start, exec, kill, remove, archive). */
export const DEFAULT_CALL_TIMEOUT_S = 60;
/** Seconds without an answer to a ping after which the engine is taken for frozen. */
export const FROZEN_AFTER_S = 30;
/** How often the watchdog pings while something waits on the engine. */
const PING_EVERY_MS = 5_000;

/** Longest silence of an image build or pull (a pull reports progress every few seconds). */
export const PROGRESS_SILENCE_MS = 5 * 60_000;

/** An engine call that did not answer in time. */
export class EngineTimeout extends CudamatrixError {}

export const isEngineTimeout = (error: unknown): error is EngineTimeout => error instanceof EngineTimeout;

const seconds = (ms: number) => `${Number((ms / 1000).toFixed(3))} s`;

/** The engine's own words in a dockerode error: "(HTTP code 409) conflict - Container … is not running " → "Container … is not running". */
export function engineWords(error: unknown): string {
  const e = error as { json?: { message?: unknown }; message?: string };
  if (e?.json && typeof e.json.message === 'string') return e.json.message.trim();
  return String(e?.message ?? error)
    .replace(/^\(HTTP code \d+\) [^-]*- /, '')
    .trim();
}

export const httpStatus = (error: unknown): number | undefined => (error as { statusCode?: number })?.statusCode;

export class BoundedEngine {
  /** Set once the engine answered no ping for frozenMs: every wait fails with it from then on. */
  private frozen: EngineTimeout | undefined;
  /** What waits on the engine now, each with how to fail it when the engine freezes. */
  private readonly waiting = new Set<{ what: string; fail: (error: EngineTimeout) => void }>();
  private watchdog: NodeJS.Timeout | undefined;
  private lastAnswer = 0;
  /** The ping in flight, if one is: aborted when the watch ends, so that it keeps nothing alive. */
  private ping: AbortController | undefined;
  /** Whether the watchdog runs: only where the call bound is longer (else the bound notices first). */
  private readonly watching: boolean;

  constructor(
    readonly docker: Dockerode,
    readonly engine: ResolvedEngine,
    /** The bound of the first calls (ping, info). */
    readonly connectMs: number,
    /** The bound of every other call. */
    readonly callMs: number,
    /** The watchdog's bound: pings unanswered for this long mean frozen. */
    readonly frozenMs = FROZEN_AFTER_S * 1000,
  ) {
    this.watching = callMs > frozenMs;
  }

  /**
   * Watches the engine while something waits on it: `fail` is called (once) when the engine
   * freezes, at once when it is known frozen already. Returns the end of the wait.
   */
  watch(what: string, fail: (error: EngineTimeout) => void): () => void {
    const entry = { what, fail };
    if (!this.watching) return () => undefined;
    if (this.frozen) {
      fail(this.frozenError(what));
      return () => undefined;
    }
    this.waiting.add(entry);
    if (!this.watchdog) {
      this.lastAnswer = Date.now();
      this.watchdog = setInterval(() => this.tick(), Math.min(PING_EVERY_MS, this.frozenMs / 3));
      this.watchdog.unref();
    }
    return () => {
      this.waiting.delete(entry);
      if (this.waiting.size === 0) this.stopWatchdog();
    };
  }

  private stopWatchdog(): void {
    clearInterval(this.watchdog);
    this.watchdog = undefined;
    this.ping?.abort();
  }

  private frozenError(what: string): EngineTimeout {
    return new EngineTimeout(
      'TRANSPORT_FAILED',
      `the Docker engine at ${this.engine.endpoint} (from ${this.engine.source}) answered no ping for ${seconds(this.frozenMs)} (${what}); is it frozen (dockerd stopped) or overloaded? An engine that is only slow answers pings, and its calls are waited for up to callTimeout`,
    );
  }

  /** One beat of the watchdog: frozen when no ping was answered for frozenMs, else one ping (one at a time). */
  private tick(): void {
    if (Date.now() - this.lastAnswer >= this.frozenMs) {
      this.frozen = this.frozenError('frozen');
      this.stopWatchdog();
      for (const waiter of [...this.waiting]) waiter.fail(this.frozenError(waiter.what));
      this.waiting.clear();
      return;
    }
    if (this.ping) return;
    const abort = (this.ping = new AbortController());
    (this.docker as unknown as { ping(options: { abortSignal: AbortSignal }): Promise<unknown> })
      .ping({ abortSignal: abort.signal })
      .then(
        () => void (this.lastAnswer = Date.now()),
        () => undefined, // an engine that refuses is not frozen: the calls fail on their own
      )
      .finally(() => {
        if (this.ping === abort) this.ping = undefined;
      });
  }

  get endpoint(): string {
    return this.engine.endpoint;
  }

  /** "did not answer within N s (what)", with what to do about it. */
  timeout(what: string, ms: number, code: ErrorCode, option: 'connectTimeout' | 'callTimeout' | 'silence'): EngineTimeout {
    const hint =
      option === 'silence'
        ? 'it said nothing for that long: is it frozen or overloaded?'
        : `is it frozen (dockerd stopped), overloaded, or is something other than a Docker engine listening there? If it is only slow, raise ${option} (seconds) in the target's transport options`;
    return new EngineTimeout(
      code,
      `the Docker engine at ${this.engine.endpoint} (from ${this.engine.source}) did not answer within ${seconds(ms)} (${what}); ${hint}`,
    );
  }

  /**
   * One call, bounded by `ms` (default: the call bound). `fn` gets the signal to hand to dockerode
   * (abortSignal), which destroys the request at the bound; the call fails with an EngineTimeout
   * whether or not the library noticed. Other errors are passed on as the engine gave them.
   */
  async call<T>(
    what: string,
    fn: (abortSignal: AbortSignal) => Promise<T>,
    options: { ms?: number; code?: ErrorCode; connect?: boolean } = {},
  ): Promise<T> {
    const ms = options.ms ?? (options.connect ? this.connectMs : this.callMs);
    const abort = new AbortController();
    let timer: NodeJS.Timeout | undefined;
    let unwatch = () => undefined as void;
    const timedOut = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        reject(
          this.timeout(
            what,
            ms,
            options.code ?? (options.connect ? 'TARGET_UNREACHABLE' : 'TRANSPORT_FAILED'),
            options.connect ? 'connectTimeout' : 'callTimeout',
          ),
        );
        abort.abort();
      }, ms);
      // A bound longer than the watchdog's: a frozen engine is noticed by its pings first.
      if (ms > this.frozenMs) {
        unwatch = this.watch(what, (error) => {
          reject(error);
          abort.abort();
        });
      }
    });
    try {
      return await Promise.race([fn(abort.signal), timedOut]);
    } finally {
      clearTimeout(timer);
      unwatch();
    }
  }

  /** Waits for `promise` (something the engine must do: end a stream), bounded by the call bound. */
  within<T>(what: string, promise: Promise<T>, ms = this.callMs): Promise<T> {
    return this.call(what, () => promise, { ms });
  }

  /**
   * Follows a build or pull stream to its end, reporting each step; fails with the first error
   * it reports, or when it says nothing for PROGRESS_SILENCE_MS (the stream is destroyed then).
   */
  follow(what: string, stream: NodeJS.ReadableStream, report: (line: string) => void, silenceMs = PROGRESS_SILENCE_MS): Promise<void> {
    return new Promise((resolve, reject) => {
      let timer: NodeJS.Timeout | undefined;
      const quiet = () => {
        clearTimeout(timer);
        timer = setTimeout(() => {
          settle(this.timeout(`${what}: no progress`, silenceMs, 'TRANSPORT_FAILED', 'silence'));
          (stream as Readable).destroy?.();
        }, silenceMs);
      };
      let settled = false;
      let unwatch = () => undefined as void;
      const settle = (error?: Error) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        unwatch();
        stream.removeListener('data', quiet);
        if (error) reject(error);
        else resolve();
      };
      quiet();
      stream.on('data', quiet);
      // Progress says the engine lives; so does a ping between (a long step prints nothing).
      unwatch = this.watch(what, (error) => {
        settle(error);
        (stream as Readable).destroy?.();
      });
      this.docker.modem.followProgress(
        stream,
        (err: Error | null, output: { error?: string }[]) => {
          const failed = err ?? output.find((message) => message.error);
          settle(failed ? new Error(err ? err.message : (failed as { error: string }).error) : undefined);
        },
        (event: { stream?: string; status?: string; progress?: string }) => {
          const line = (event.stream ?? event.status ?? '').trim();
          if (line) report(line);
        },
      );
    });
  }
}

/**
 * Whether an engine error says that a container is not there (404), or is being removed already
 * (409 "removal of container … is already in progress": by the engine itself, AutoRemove, once
 * its main process ended).
 */
export const goneOrGoing = (error: unknown): boolean =>
  httpStatus(error) === 404 || (httpStatus(error) === 409 && /already in progress/i.test(engineWords(error)));

/**
 * Removes a container (force: stopped first; v: its anonymous volumes too), each call bounded.
 * 'removed': by this call; 'gone': it was not there, or the engine was removing it already and
 * has now (waited for within the call bound, so that either way it is gone, not going).
 */
export async function removeContainer(e: BoundedEngine, container: Dockerode.Container, what: string): Promise<'removed' | 'gone'> {
  try {
    await e.call(what, (abortSignal) => container.remove({ force: true, v: true, abortSignal }));
    return 'removed';
  } catch (error) {
    if (!goneOrGoing(error)) throw error;
    if (httpStatus(error) === 404) return 'gone';
    await e.call(`${what}: waiting for the engine's own removal of it to end`, async (abortSignal) => {
      for (;;) {
        try {
          await container.inspect({ abortSignal });
        } catch (lookedUp) {
          if (httpStatus(lookedUp) === 404) return;
          throw lookedUp;
        }
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    });
    return 'gone';
  }
}
