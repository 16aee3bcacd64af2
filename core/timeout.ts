/** Waiting for a promise, bounded. */

/** Waits for `p`, or `ms` at most; the timer does not keep the process alive after. */
export async function withTimeout(promise: Promise<unknown> | undefined, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([promise, new Promise((resolve) => (timer = setTimeout(resolve, ms)))]);
  clearTimeout(timer);
}

/** Thrown by withDeadline when the time is up. */
export const DEADLINE = new Error('deadline');

/** `p`, or DEADLINE thrown after `ms`, or the signal's reason when it is aborted first. */
export async function withDeadline<T>(promise: Promise<T>, ms: number, signal?: AbortSignal): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  let onAbort: (() => void) | undefined;
  try {
    return await Promise.race([
      promise,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(DEADLINE), ms);
        onAbort = () => reject(signal!.reason);
        if (signal?.aborted) onAbort();
        signal?.addEventListener('abort', onAbort, { once: true });
      }),
    ]);
  } finally {
    clearTimeout(timer);
    if (onAbort) signal?.removeEventListener('abort', onAbort);
  }
}
