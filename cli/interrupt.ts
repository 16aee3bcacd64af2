/**
 * Ctrl-C and SIGTERM, in two stages (as Playwright's sigIntWatcher does):
 *   - the first SIGINT or SIGTERM cancels the run: running probes and compiles are stopped,
 *     cells that have not started end as "not run", and every result file is still written;
 *   - a second Ctrl-C (SIGINT) quits at once, without waiting for results.
 * A SIGTERM after the first signal never quits at once: CI systems send it and then wait, and
 * the results are what they wait for. A SIGINT that arrives within DUPLICATE_MS of the first is
 * the same Ctrl-C seen twice (the terminal signals the whole process group, and wrappers such as
 * pnpm or npm may relay it once more), so it does not count as the second one.
 *
 * Once the run has ended, a first signal has nothing left to stop: the results are being written
 * and the verdict stands. Once the exit status is decided (and printed), a signal quits at once
 * with that status: the process may take a few hundred ms to wind down (open handles close), and
 * without a listener Node would die of the signal then (130) while every file said otherwise.
 */
export const DUPLICATE_MS = 500;

export interface InterruptWatch {
  signal: AbortSignal;
  /** The run has ended: its outcome is decided, only its results are being written. */
  ended(): void;
  /** The exit status is decided and shown: from now on a signal exits at once with it. */
  settle(code: number): void;
  /** Stops listening (the run failed before it settled). */
  dispose(): void;
}

export function watchInterrupts(
  say: (message: string) => void,
  quitNow: () => never = () => process.exit(130),
  exitWith: (code: number) => never = (code) => process.exit(code),
): InterruptWatch {
  const controller = new AbortController();
  let firstAt = 0;
  let runEnded = false;
  let settled: number | undefined;
  const onSignal = (name: NodeJS.Signals): void => {
    if (settled !== undefined) exitWith(settled);
    const now = Date.now();
    if (!controller.signal.aborted) {
      firstAt = now;
      say(
        runEnded
          ? `\n${name === 'SIGINT' ? 'interrupted' : 'terminated'} after the run ended: its results stand and are being written (Ctrl-C again to quit at once)`
          : `\n${name === 'SIGINT' ? 'interrupted' : 'terminated'}: stopping running probes and writing results (Ctrl-C again to quit at once)`,
      );
      controller.abort();
      return;
    }
    if (name === 'SIGINT' && now - firstAt > DUPLICATE_MS) {
      say('second Ctrl-C: quitting now; results of this run may be incomplete');
      quitNow();
    }
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  return {
    signal: controller.signal,
    ended() {
      runEnded = true;
    },
    // The listeners stay until the process exits (Node's signal handles do not keep it alive).
    settle(code: number) {
      settled = code;
    },
    dispose() {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
    },
  };
}
