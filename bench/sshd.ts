/** The benches' --port-base option: sshd listens on N, N+1, ... (test/sshd.ts startSshd takes it as portBase). */

/** Parses --port-base (undefined when absent); exits 2 on a bad value. */
export function portBaseOption(value: string | undefined, count: number): number | undefined {
  if (value === undefined) return undefined;
  const base = Number(value);
  if (!Number.isInteger(base) || base < 1024 || base + count - 1 > 65535) {
    console.error(`--port-base takes a port from 1024 such that ${count} ports fit below 65536, got ${value}`);
    process.exit(2);
  }
  return base;
}
