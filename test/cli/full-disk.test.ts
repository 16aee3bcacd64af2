/**
 * A full disk (issue 22, item 2): every command that writes, on a 24 KiB tmpfs. An output that
 * could not be written fails with exit 6 and a message naming the file and the cause; no
 * temporary file is left; what was written is whole (the event log ends in a whole line).
 * Needs root to mount (skipped with the reason otherwise, failed under
 * CUDAMATRIX_REQUIRE_INTEGRATION=1).
 */
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { H200_RUNS } from '../record-fixture.ts';
import { runCli } from '../cli.ts';
import { hasCommand, integrationAvailable, tempDir } from '../helpers.ts';

const noGpuHere = !hasCommand('nvidia-smi', ['-L']);
const mounted: string[] = [];

/** A new 24 KiB tmpfs, unmounted after the test; undefined where this process cannot mount. */
function smallDisk(): string | undefined {
  const dir = tempDir('cm-full-disk-');
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=24k', 'tmpfs', dir], { stdio: 'pipe' });
  } catch (error) {
    integrationAvailable(
      `a 24 KiB tmpfs (mount: ${(error as Error).message.split('\n')[0]})`,
      false,
      'run the tests as root, or in a container with CAP_SYS_ADMIN',
    );
    return undefined;
  }
  mounted.push(dir);
  return dir;
}

/** Fills the disk to the last byte, so that the next write fails with ENOSPC. */
function fill(disk: string): void {
  for (let i = 0; ; i++) {
    try {
      writeFileSync(path.join(disk, `filler-${i}`), Buffer.alloc(i === 0 ? 16384 : 512));
    } catch {
      return;
    }
  }
}

/** Every file under `dir`, relative. */
function filesUnder(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => path.relative(dir, path.join(e.parentPath, e.name)));
}

function unmountAll(): void {
  for (const dir of mounted.splice(0)) execFileSync('umount', [dir]);
}

const canMount = smallDisk() !== undefined;
unmountAll();
afterEach(unmountAll);

describe('exit status 6 in --help', () => {
  it('run, record and report list it', async () => {
    const [run, record, report] = await Promise.all([
      runCli(['run', '--help']),
      runCli(['record', '--help']),
      runCli(['report', '--help']),
    ]);
    expect(run.stdout).toContain('  6    an output could not be written (a full disk, no permission)');
    expect(record.stdout).toContain('  6  a record could not be written (a full disk, no permission');
    expect(report.stdout).toContain('  6  a file of the report could not be written');
  }, 60_000);
});

describe.runIf(canMount)('a full disk', () => {
  it.runIf(noGpuHere)(
    'run: an event log that does not fit is cut back to its whole lines, every output named, exit 6, no temp file',
    async () => {
      const disk = smallDisk()!;
      const result = await runCli(['run', '--results-dir', path.join(disk, 'runs'), '--junit', path.join(disk, 'junit.xml')]);
      expect(result.stderr).not.toMatch(/\n\s+at |internal error/);
      expect(result.code, result.stdout + result.stderr).toBe(6);
      const [runId] = readdirSync(path.join(disk, 'runs'));
      const log = path.join(disk, 'runs', runId!, 'events.jsonl');
      expect(result.stdout).toMatch(
        new RegExp(
          `Not written: ${log.replace(/[.]/g, '\\.')} could not be written \\(ENOSPC: no space left on the device\\); it holds the first \\d+ events`,
        ),
      );
      expect(result.stdout).toContain(`Not written: ${path.join(disk, 'junit.xml')} could not be written (ENOSPC`);
      expect(result.stdout).toContain('Exit status: 6 (an output could not be written)');
      const text = readFileSync(log, 'utf8');
      expect(text.endsWith('\n')).toBe(true);
      const lines = text.slice(0, -1).split('\n');
      expect(lines.length).toBeGreaterThan(1);
      for (const line of lines) expect(() => JSON.parse(line)).not.toThrow();
      expect(filesUnder(disk).filter((file) => file.endsWith('.tmp'))).toEqual([]);
      expect(filesUnder(disk)).toEqual([path.join('runs', runId!, 'events.jsonl')]);
    },
    120_000,
  );

  it.runIf(noGpuHere)(
    'run with no console (--reporter json:FILE alone): the event log cut short is named on stderr too',
    async () => {
      const disk = smallDisk()!;
      const result = await runCli(['run', '--results-dir', path.join(disk, 'runs'), '--reporter', `json:${path.join(disk, 's.json')}`]);
      expect(result.code, result.stdout + result.stderr).toBe(6);
      const [runId] = readdirSync(path.join(disk, 'runs'));
      const log = path.join(disk, 'runs', runId!, 'events.jsonl');
      expect(result.stderr).toContain(`error: ${log} could not be written (ENOSPC: no space left on the device); it holds the first`);
      expect(result.stderr).toContain(`${path.join(disk, 's.json')} could not be written (ENOSPC`);
      expect(filesUnder(disk).filter((file) => file.endsWith('.tmp'))).toEqual([]);
    },
    120_000,
  );

  it.runIf(noGpuHere)(
    'run: --junit on a full disk fails the run (exit 6, naming it) and the run folder keeps its whole record',
    async () => {
      const disk = smallDisk()!;
      fill(disk);
      const roomy = tempDir('cm-full-disk-runs-');
      const junit = path.join(disk, 'junit.xml');
      const result = await runCli(['run', '-p', 'sysinfo', '--results-dir', roomy, '--junit', junit]);
      expect(result.code, result.stdout + result.stderr).toBe(6);
      expect(result.stderr).toContain(
        `error: reporter "junit": ${junit} could not be written (ENOSPC: no space left on the device); nothing of it was written.`,
      );
      expect(result.stdout).toContain('Exit status: 6');
      expect(filesUnder(disk).every((file) => file.startsWith('filler-'))).toBe(true);
      const [runId] = readdirSync(roomy);
      expect(filesUnder(path.join(roomy, runId!)).sort()).toEqual(['events.jsonl', 'junit.xml', 'summary.json']);
      expect(() => JSON.parse(readFileSync(path.join(roomy, runId!, 'summary.json'), 'utf8'))).not.toThrow();
    },
    120_000,
  );

  it('merge, record and report on a full disk: exit 6 naming the file, nothing half-written, no temp file', async () => {
    const disk = smallDisk()!;
    fill(disk);
    const merge = await runCli(['merge', '--results-dir', path.join(disk, 'runs'), H200_RUNS[0]!]);
    expect(merge.code, merge.stderr).toBe(6);
    expect(merge.stderr).toMatch(/error \[OUTPUT_FAILED\]: \S+events\.jsonl could not be written \(ENOSPC: no space left on the device\)/);

    const record = await runCli(['record', '--records-dir', path.join(disk, 'records'), H200_RUNS[0]!]);
    expect(record.code, record.stderr).toBe(6);
    expect(record.stderr).toMatch(/error \[OUTPUT_FAILED\]: \S+\.json could not be written \(ENOSPC/);

    const roomy = tempDir('cm-full-disk-records-');
    expect((await runCli(['record', '--records-dir', roomy, H200_RUNS[0]!])).code).toBe(0);
    const report = await runCli(['report', '--records-dir', roomy, '--out', path.join(disk, 'out')]);
    expect(report.code, report.stderr).toBe(6);
    expect(report.stderr).toMatch(/error \[OUTPUT_FAILED\]: \S+BEHAVIOUR\.md could not be written \(ENOSPC/);

    for (const result of [merge, record, report]) expect(result.stderr).not.toMatch(/\n\s+at |internal error/);
    const left = filesUnder(disk).filter((file) => !file.startsWith('filler-'));
    expect(left).toEqual([]);
  }, 120_000);
});
