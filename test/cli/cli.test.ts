/**
 * The CLI end to end, on this machine (no NVIDIA driver here): exit codes, what is printed,
 * what is written. Every run is real: the real cudaprobe, through the local transport.
 */
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { defaultProbeNames } from '../../probes/catalogue.ts';
import { readEventLog } from '../../events/events.ts';
import { runCli, startCli, whenOutput } from '../cli.ts';
import { hasCommand, repoRoot, tempDir, validateJunit } from '../helpers.ts';

const noGpuHere = !hasCommand('nvidia-smi', ['-L']);

function writeMatrix(dir: string, body: string): string {
  const file = path.join(dir, 'matrix.yaml');
  writeFileSync(file, body);
  return file;
}

function onlyRunDir(resultsDir: string): string {
  const runs = readdirSync(resultsDir);
  expect(runs).toHaveLength(1);
  return path.join(resultsDir, runs[0]!);
}

describe.runIf(noGpuHere)('cudamatrix run on a machine without a driver', () => {
  it('completes, says plainly that nothing was measured, writes valid JUnit, and exits 0', async () => {
    const dir = tempDir();
    const result = await runCli(['run', '--results-dir', path.join(dir, 'runs'), '--junit', path.join(dir, 'junit.xml')]);
    expect(result.stderr).not.toMatch(/\n\s+at /);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('local/sysinfo skipped');
    expect(result.stdout).toContain('No usable NVIDIA driver was found: nothing was measured, and every probe was skipped.');
    expect(result.stdout).toMatch(/reason: no NVIDIA driver found/);
    expect(result.stdout).toContain('Exit status: 0');
    const xml = readFileSync(path.join(dir, 'junit.xml'), 'utf8');
    await validateJunit(xml);
    expect(xml).toContain('<skipped/>');
    const runDir = onlyRunDir(path.join(dir, 'runs'));
    for (const fileName of ['events.jsonl', 'junit.xml', 'summary.json'])
      expect(existsSync(path.join(runDir, fileName)), fileName).toBe(true);
    const events = readEventLog(path.join(runDir, 'events.jsonl'));
    expect(events[0]).toMatchObject({ type: 'run-start', schemaVersion: 2, tool: 'cudamatrix', shard: null });
    expect((events[0] as { cells: string[] }).cells).toEqual(defaultProbeNames().map((probe) => `local/${probe}`));
    // Every probe ran (and was skipped: no driver), each with the parameters it was given.
    const cells = events.filter((e) => e.type === 'cell-end');
    expect(cells.map((cell) => cell.type === 'cell-end' && cell.status)).toEqual(defaultProbeNames().map(() => 'skipped'));
    expect(cells.find((cell) => cell.type === 'cell-end' && cell.probe === 'pinned-vram')).toMatchObject({
      params: { sizes_gib: [1, 2, 4] },
    });
    expect(events.at(-1)).toMatchObject({ type: 'run-end', interrupted: false });
  });

  it("runs the --quick profile, and the matrix's own parameters still win", async () => {
    const dir = tempDir();
    const matrixFile = writeMatrix(
      dir,
      'version: 1\ndefaults:\n  probes: [pinned-vram, sync-latency]\n  params:\n    sync-latency: {iterations: 500}\ntargets:\n  - name: here\n',
    );
    const result = await runCli([
      'run',
      '--quick',
      '-m',
      matrixFile,
      '--results-dir',
      path.join(dir, 'runs'),
      '--junit',
      path.join(dir, 'j.xml'),
    ]);
    expect(result.code).toBe(0);
    const events = readEventLog(path.join(onlyRunDir(path.join(dir, 'runs')), 'events.jsonl'));
    const params = Object.fromEntries(events.flatMap((e) => (e.type === 'cell-end' ? [[e.probe, e.params]] : [])));
    expect(params['pinned-vram']).toMatchObject({ sizes_gib: [0.25], register_size_gib: 0.25 });
    expect(params['sync-latency']).toEqual({ iterations: 500 });
  });

  it('exits 4 under --strict when nothing was measured', async () => {
    const dir = tempDir();
    const result = await runCli(['run', '--strict', '--results-dir', path.join(dir, 'runs'), '--junit', path.join(dir, 'j.xml')]);
    expect(result.code).toBe(4);
    expect(result.stdout).toContain('Exit status: 4 (--strict: nothing was measured)');
  });

  it('exits 1 when an expectation fails', async () => {
    const dir = tempDir();
    const matrixFile = writeMatrix(
      dir,
      'version: 1\ntargets:\n  - name: here\n    expect:\n      - fact: sysinfo.os_family\n        equals: windows\n',
    );
    const result = await runCli(['run', '-m', matrixFile, '--results-dir', path.join(dir, 'runs'), '--junit', path.join(dir, 'j.xml')]);
    expect(result.code).toBe(1);
    expect(result.stdout).toContain('Expectations not met:');
    expect(result.stdout).toContain(
      'here: sysinfo.os_family == "windows" [target] — expected sysinfo.os_family to be "windows", observed "linux"',
    );
    expect(readFileSync(path.join(dir, 'j.xml'), 'utf8')).toContain('<failure message="expected sysinfo.os_family');
  });

  it('exits 3 when cudaprobe cannot be built for a target, and says what to install', async () => {
    const dir = tempDir();
    // A fresh build cache and no compiler on PATH (node itself is started by absolute path).
    const env = { CUDAMATRIX_CACHE: path.join(dir, 'cache'), PATH: '/nonexistent', CXX: '' };
    const result = await runCli(['run', '--results-dir', path.join(dir, 'runs'), '--junit', path.join(dir, 'j.xml')], { env });
    expect(result.code).toBe(3);
    expect(result.stdout).toContain(
      '✗ local: PROBE_BUILD_FAILED: no compiler for cudaprobe on linux/x86_64 (tried g++, clang++): install a C++17 compiler for linux/x86_64 (Debian: apt-get install g++)',
    );
    expect(readFileSync(path.join(dir, 'j.xml'), 'utf8')).toContain('type="PROBE_BUILD_FAILED"');
  });

  it('exits 2 when the declared environment is not the detected one, and runs nothing more there', async () => {
    const dir = tempDir();
    const matrixFile = writeMatrix(dir, 'version: 1\ntargets:\n  - name: fake-windows\n    environment: wddm\n');
    const result = await runCli(['run', '-m', matrixFile, '--results-dir', path.join(dir, 'runs'), '--junit', path.join(dir, 'j.xml')]);
    expect(result.code).toBe(2);
    expect(result.stdout).toContain('ENVIRONMENT_MISMATCH: target "fake-windows" is declared as wddm, but the probe detected linux');
  });

  it('stops on Ctrl-C, still writes results for what finished, and exits 130', async () => {
    const dir = tempDir();
    const targets = Array.from({ length: 60 }, (_, i) => `  - name: t${i}`).join('\n');
    const matrixFile = writeMatrix(dir, `version: 1\ndefaults: {probes: [sysinfo]}\ntargets:\n${targets}\n`);
    const { child, done } = startCli([
      'run',
      '-m',
      matrixFile,
      '--results-dir',
      path.join(dir, 'runs'),
      '--junit',
      path.join(dir, 'j.xml'),
    ]);
    // 60 targets: the console collapses (COLLAPSE_ABOVE), and its first cell count is a progress line.
    await whenOutput(child, /\[\d+\/60\]/, () => child.kill('SIGINT'));
    const result = await done;
    expect(result.code).toBe(130);
    expect(result.stderr).toContain('interrupted: stopping running probes and writing results');
    expect(result.stdout).toContain('The run was interrupted');
    const events = readEventLog(path.join(onlyRunDir(path.join(dir, 'runs')), 'events.jsonl'));
    expect(events.at(-1)).toMatchObject({ type: 'run-end', interrupted: true });
    const cells = events.filter((e) => e.type === 'cell-end');
    expect(cells.length).toBe(60);
    // Cells that never started are "not run", not errors; none is reported line by line.
    const notRun = cells.filter((cell) => cell.type === 'cell-end' && cell.status === 'not-run').length;
    expect(notRun).toBeGreaterThan(0);
    expect(cells.filter((cell) => cell.type === 'cell-end' && cell.status === 'error')).toEqual([]);
    expect(result.stdout).not.toContain('cancelled before this probe started');
    const xml = readFileSync(path.join(dir, 'j.xml'), 'utf8');
    await validateJunit(xml);
    expect(xml).toMatch(/<testsuites [^>]*errors="0"/);
  });
});

describe('cudamatrix command line', () => {
  it('exits 2 on a bad matrix with file:line:col, the fix, and no stack trace', async () => {
    const dir = tempDir();
    const matrixFile = writeMatrix(dir, 'version: 1\ntargets:\n  - name: a\n    timout: 5m\n');
    const result = await runCli(['run', '-m', matrixFile, '--results-dir', path.join(dir, 'runs')]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(
      `error [MATRIX_UNKNOWN_KEY]: the matrix file has an error:\n${matrixFile}:4:5: unknown key "timout" in targets[0] (did you mean "timeout"?)\n    fix: rename it to "timeout"`,
    );
    expect(result.stderr).not.toMatch(/\n\s+at /);
    expect(existsSync(path.join(dir, 'runs'))).toBe(false);
  });

  it('plans cells with filters and shards, without running anything', async () => {
    const dir = tempDir();
    const matrixFile = writeMatrix(
      dir,
      'version: 1\ndefaults: {probes: [sysinfo]}\ntargets:\n  - name: lab-a\n  - name: lab-b\n  - name: ci-1\n',
    );
    const result = await runCli(['plan', '-m', matrixFile, '--target', 'lab-*', '--json']);
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout).cells.map((cell: { name: string }) => cell.name)).toEqual(['lab-a/sysinfo', 'lab-b/sysinfo']);
    // The three targets are on one host (this machine): one shard gets all of them.
    const first = await runCli(['plan', '-m', matrixFile, '--shard', '1/3']);
    expect(first.stdout).toMatch(/lab-b\/sysinfo\s+auto\s+local\s+600 s/);
    expect(first.stdout).toContain('3 cells on 3 targets (shard 1/3)');
    const empty = await runCli(['plan', '-m', matrixFile, '--shard', '2/3']);
    expect(empty.code).toBe(0);
    expect(empty.stdout).toContain('shard 2/3 has no cells');
  });

  it.each([
    [['run', '--shard', '3/2'], 'error [USAGE]: --shard "3/2" is not of the form i/n'],
    [['run', '--target', 'nothing-matches'], 'error [NO_CELLS]'],
    [['run', '--concurrency', '0'], '--concurrency needs a whole number of at least 1'],
    [['frobnicate'], "unknown command 'frobnicate'"],
    [['run', '--colour'], "unknown option '--colour'"],
    // Typos get the name they were probably meant to be (issue 20).
    [['run', '-p', 'pinnedvram'], '"pinnedvram" matches no probe (did you mean "pinned-vram"?)'],
    [['plan', '-t', 'lcal'], '"lcal" matches no target (did you mean "local"?)'],
    [['run', '--reporter', 'jsn'], '--reporter "jsn": did you mean "json"?'],
    [['doctor', '--targt', 'x'], '(Did you mean --target?)'],
    [['gha', 'matrx'], '(Did you mean matrix?)'],
    [['gha', 'matrix', '--shard', '2'], '(Did you mean --shards?)'],
    [['doctor', '--target', 'locl'], 'no target "locl" in matrix/default.yaml (did you mean "local"?)'],
  ])('exits 2 on %j', async (args, message) => {
    const result = await runCli(args);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(message);
    expect(result.stderr).not.toMatch(/\n\s+at /);
  });

  it('explains itself in --help, with the exit codes', async () => {
    const result = await runCli(['run', '--help']);
    expect(result.code).toBe(0);
    for (const text of [
      '--matrix <file>',
      '--target <glob>',
      '--shard <i/n>',
      '--strict',
      '--junit <file>',
      '--reporter <name[:path]>',
      'Exit status:',
      '130  interrupted',
    ]) {
      expect(result.stdout).toContain(text);
    }
  });

  it('names the record files in record --help as record writes them, the container part included (issue 20)', async () => {
    const result = await runCli(['record', '--help']);
    const pattern = /<dir>\/(driver-<version>\/\S+\.json)/.exec(result.stdout.replace(/\s+/g, ' '))?.[1];
    expect(pattern).toBe('driver-<version>/<environment>-<gpu>[-<container>]-<date>-<id>.json');
    const asRegex = new RegExp(
      `^${pattern!
        .replace(/[.]/g, '\\.')
        .replace(/\[-<container>\]/, '(-[a-z0-9.-]+)?')
        .replace(/<date>/, '\\d{4}-\\d{2}-\\d{2}')
        .replace(/<[a-z]+>/g, '[a-z0-9.-]+')}$`,
    );
    const committed = readdirSync(path.join(repoRoot, 'records'))
      .filter((folder) => folder.startsWith('driver-'))
      .flatMap((driverFolder) =>
        readdirSync(path.join(repoRoot, 'records', driverFolder))
          .filter((fileName) => fileName.endsWith('.json'))
          .map((fileName) => `${driverFolder}/${fileName}`),
      );
    expect(committed.some((recordPath) => recordPath.includes('-docker-'))).toBe(true);
    for (const recordPath of committed) expect(recordPath).toMatch(asRegex);
  });

  it('lists probes with their facts', async () => {
    const result = await runCli(['probes', 'list', '--facts']);
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/^sysinfo\s+C4\s+linux, windows/m);
    expect(result.stdout).toContain('fact   sysinfo.environment ["linux" | "wsl2" | "wsl2-docker" | "wddm" | "tcc" | "mcdm"]');
  });

  it.runIf(noGpuHere)('doctor says what this machine has and lacks', async () => {
    const result = await runCli(['doctor']);
    // A ✗ line (no driver here) is a problem: doctor exits 3 (before, it exited 0).
    expect(result.code).toBe(3);
    expect(result.stdout).toMatch(/✓ compiler\s+g\+\+/);
    expect(result.stdout).toMatch(/✗ driver\s+no NVIDIA driver found/);
    expect(result.stdout).toMatch(/✓ environment\s+linux/);
  });
});
