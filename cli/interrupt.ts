/**
 * Ctrl-C and SIGTERM, in two stages (as Playwright's sigIntWatcher does):
 *   - the first SIGINT or SIGTERM cancels the run: running probes and compiles are stopped,
 *     cells that have not started end as "not run", and every result file is still written;
 *   - a second Ctrl-C (SIGINT) quits at once, without waiting for results.
 * A SIGTERM after the first signal never quits at once: CI systems send it and then wait, and
 * the results are what they wait for. A SIGINT that arrives within DUPLICATE_MS of the first is
 * the same Ctrl-C seen twice (the terminal signals the whole process group, and wrappers such as
 * pnpm or npm may relay it once more), so it does not count as the second one.
 */
export const DUPLICATE_MS = 500;

export interface InterruptWatch {
  signal: AbortSignal;
  /** Stops listening (the run is over). */
  dispose(): void;
}

export function watchInterrupts(say: (message: string) => void, quitNow: () => never = () => process.exit(130)): InterruptWatch {
  const controller = new AbortController();
  let firstAt = 0;
  const onSignal = (name: NodeJS.Signals): void => {
    const now = Date.now();
    if (!controller.signal.aborted) {
      firstAt = now;
      say(
        `\n${name === 'SIGINT' ? 'interrupted' : 'terminated'}: stopping running probes and writing results (Ctrl-C again to quit at once)`,
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
    dispose() {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
    },
  };
}
