/**
 * Shakedown on the GPU machine: every probe run directly by the package's prebuilt cudaprobe,
 * without cudamatrix around it, each timed; the raw JSON lines and stderr of each go to
 * $OUT/raw/<probe>.jsonl / .err and a summary line per probe to $OUT/raw/summary.txt.
 * Extra arguments go to every probe (e.g. --param size_gib=1). Travels bundled as
 * .gpu/gpu-probes-raw.mjs (scripts/gpu-prepare.ts); the package is unpacked from .gpu/.
 *
 *   /tmp/node .gpu/gpu-probes-raw.mjs [cudaprobe run options ...]
 */
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { $ } from 'zx';

const out = path.join(process.env.OUT ?? '/tmp/gpu-out', 'raw');
const work = '/tmp/cudamatrix-raw';
mkdirSync(out, { recursive: true });
mkdirSync(work, { recursive: true });
await $`tar -C ${work} -xzf ${path.join(process.cwd(), '.gpu', 'cudamatrix.tgz')}`;
const probe = path.join(work, 'package', 'prebuilt', 'linux-x64', 'cudaprobe');
chmodSync(probe, 0o755);

const list = (await $`${probe} list`).stdout.trim().split('\n');
const names = list.map((line) => (JSON.parse(line) as { probe: string }).probe);
const summary: string[] = [];
for (const name of names) {
  const t0 = performance.now();
  const result = await $({ nothrow: true, timeout: '300s' })`${probe} run ${name} ${process.argv.slice(2)}`;
  const seconds = ((performance.now() - t0) / 1000).toFixed(1);
  writeFileSync(path.join(out, `${name}.jsonl`), result.stdout);
  writeFileSync(path.join(out, `${name}.err`), result.stderr);
  const records = result.stdout
    .split('\n')
    .filter(Boolean)
    .map((jsonLine) => JSON.parse(jsonLine) as { type: string; name?: string; value?: unknown; message?: string });
  const facts = records.filter((record) => record.type === 'fact').map((record) => `${record.name}=${JSON.stringify(record.value)}`);
  const errors = records.filter((record) => record.type === 'error').map((record) => record.message);
  const line = `${name.padEnd(22)} rc=${result.exitCode} ${seconds.padStart(6)}s facts: ${facts.join(' ')}${errors.length ? `\n  errors: ${errors.slice(0, 3).join('; ')}` : ''}`;
  console.log(line);
  summary.push(line);
}
writeFileSync(path.join(out, 'summary.txt'), `${summary.join('\n')}\n`);
