/**
 * The scheduler: at most `limit` jobs at once overall and `hostLimit` at once per host. When a
 * slot frees, it goes to the first waiting job (in the given order) whose host has room, so a
 * busy host holds only its own slots and never keeps an idle host waiting.
 */
export interface ScheduleOptions<T> {
  limit: number;
  hostLimit: number;
  hostOf(item: T): string;
  run(item: T): Promise<void>;
}

export function schedule<T>(items: T[], options: ScheduleOptions<T>): Promise<void> {
  const waiting = [...items];
  const busy = new Map<string, number>();
  let active = 0;
  return new Promise((resolve, reject) => {
    const pump = (): void => {
      if (waiting.length === 0 && active === 0) return resolve();
      while (active < options.limit) {
        const i = waiting.findIndex((item) => (busy.get(options.hostOf(item)) ?? 0) < options.hostLimit);
        if (i < 0) return;
        const [item] = waiting.splice(i, 1) as [T];
        const host = options.hostOf(item);
        busy.set(host, (busy.get(host) ?? 0) + 1);
        active++;
        options
          .run(item)
          .then(() => {
            busy.set(host, busy.get(host)! - 1);
            active--;
            pump();
          })
          .catch(reject);
      }
    };
    pump();
  });
}
