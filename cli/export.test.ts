/**
 * `cudamatrix export` in-process: the capability table it makes from the fixture log (values,
 * usable, evidence, undecided and unmeasured features), the inputs it takes and refuses, and the
 * catalogue it reads by default. Its files under pytest and CMake: test/export/export-tools.test.ts.
 */
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { CudamatrixError } from '../core/errors.ts';
import { readEventLog } from '../events/events.ts';
import { recordJson, recordsFromEvents } from '../behaviour/behaviour-record.ts';
import { catalogueCapabilities, targetFolder, type TargetCapabilities } from '../behaviour/export-capabilities.ts';
import { cmakeFeatureName } from '../behaviour/export-cmake.ts';
import { pythonLiteral } from '../behaviour/export-pytest.ts';
import { catalogue, probeSpec } from '../probes/catalogue.ts';
import { capabilityFact, CAPABILITY_VALUES, isCapabilityFact } from '../probes/spec-helpers.ts';
import { cell, runEnd, runStart, sysinfo, targetStart } from '../test/events-fixture.ts';
import { EXPORT_FIXTURE_LOG, fixtureCapabilities, POOL_POSIX_FD_REASON } from '../test/export-fixture.ts';
import { tempDir } from '../test/helpers.ts';
import { exportCommand } from './export.ts';
import { main } from './main.ts';

let said: string[];
beforeEach(() => {
  said = [];
  const keep = (text: string | Uint8Array) => (said.push(String(text)), true);
  vi.spyOn(process.stdout, 'write').mockImplementation(keep);
  vi.spyOn(process.stderr, 'write').mockImplementation(keep);
});
afterEach(() => vi.restoreAllMocks());

const read = (out: string, target: string): TargetCapabilities =>
  JSON.parse(readFileSync(path.join(out, target, 'capabilities.json'), 'utf8'));

describe('cudamatrix export', () => {
  it('writes per target the capability of every capability fact: value, usable, what was claimed, the call and its result', () => {
    const out = path.join(tempDir('cm-export-'), 'out');
    expect(exportCommand([EXPORT_FIXTURE_LOG], { out }, fixtureCapabilities())).toBe(0);
    expect(readdirSync(out).sort()).toEqual(['h200', 'wsl-box']);
    for (const target of ['h200', 'wsl-box'])
      expect(readdirSync(path.join(out, target)).sort()).toEqual(['capabilities.json', 'conftest_cudamatrix.py', 'cudamatrix.cmake']);
    const wsl = read(out, 'wsl-box');
    expect(wsl).toMatchObject({
      schema: 'cudamatrix-capabilities/1',
      target: 'wsl-box',
      driver: '581.15',
      gpu: 'NVIDIA GeForce RTX 4070',
      environment: 'wsl2',
      os: 'Ubuntu 24.04.1 LTS',
      source: { runId: '2026-12-05T10-00-00-000Z-fixture', file: 'test/fixtures/export/events.jsonl', kind: 'event-log' },
    });
    // Every capability fact of the catalogue, sorted; the fact that is no capability is not there.
    expect(Object.keys(wsl.features)).toEqual([
      'host-register-flags.read_only',
      'ipc-handles.posix_fd',
      'ipc-handles.win32',
      'memory-pools.device_pool',
      'memory-pools.host_pool',
      'memory-pools.pool_posix_fd',
      'virtual-memory.vmm',
    ]);
    expect(wsl.features['memory-pools.pool_posix_fd']).toMatchObject({
      value: 'claimed-but-fails',
      usable: false,
      measured: true,
      claimed: true,
      attribute: 'CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES',
      attributeValue: 1,
      call: 'cuMemPoolCreate',
      result: 'CUDA_ERROR_INVALID_VALUE',
      agrees: false,
      reason: null,
      summary: POOL_POSIX_FD_REASON,
    });
    const usable = Object.entries(wsl.features).map(([name, feature]) => [name, feature.value, feature.usable]);
    expect(usable).toEqual([
      ['host-register-flags.read_only', 'unsupported', false],
      ['ipc-handles.posix_fd', 'works-unclaimed', true],
      ['ipc-handles.win32', null, false],
      ['memory-pools.device_pool', 'works', true],
      ['memory-pools.host_pool', null, false],
      ['memory-pools.pool_posix_fd', 'claimed-but-fails', false],
      ['virtual-memory.vmm', null, false],
    ]);
    expect(wsl.features['ipc-handles.win32']).toMatchObject({
      measured: true,
      reason: 'a Windows handle type: not decidable on Linux',
      summary: 'ipc-handles.win32: undecided (a Windows handle type: not decidable on Linux) on driver 581.15, wsl2',
    });
    expect(wsl.features['virtual-memory.vmm']).toMatchObject({ measured: false, claimed: null, call: null });
    expect(wsl.features['virtual-memory.vmm']!.summary).toBe(
      "virtual-memory.vmm: not measured (probe virtual-memory did not run on this target: add it to the matrix's probes) on driver 581.15, wsl2",
    );
    // The other target, from the same log: its own driver and values.
    const h200 = read(out, 'h200');
    expect([h200.driver, h200.environment, h200.features['memory-pools.pool_posix_fd']!.usable]).toEqual(['580.159.04', 'linux', true]);
    expect(said.join('')).toMatch(/wrote .*wsl-box\/ .*7 features, 6 measured, 2 usable/);
  });

  it('gives the same bytes for the same input however its path is typed, from the event log or the record made of it', () => {
    const dir = tempDir('cm-export-');
    const [wslRecord] = recordsFromEvents(readEventLog(EXPORT_FIXTURE_LOG), {}).filter((record) => record.observed.target === 'wsl-box');
    const recordFile = path.join(dir, 'wsl-box.json');
    writeFileSync(recordFile, recordJson(wslRecord!));
    for (const [out, input] of [
      ['a', EXPORT_FIXTURE_LOG],
      ['b', `./${path.relative(process.cwd(), EXPORT_FIXTURE_LOG)}`],
      ['c', recordFile],
    ] as const)
      expect(exportCommand([input], { out: path.join(dir, out) }, fixtureCapabilities())).toBe(0);
    const files = (out: string) =>
      ['capabilities.json', 'conftest_cudamatrix.py', 'cudamatrix.cmake'].map((file) =>
        readFileSync(path.join(dir, out, 'wsl-box', file), 'utf8'),
      );
    expect(files('b')).toEqual(files('a'));
    const fromRecord = read(path.join(dir, 'c'), 'wsl-box');
    // Outside the working folder: its folder and name, no runner's path.
    expect(fromRecord.source).toMatchObject({ file: `${path.basename(dir)}/wsl-box.json`, kind: 'record' });
    expect(fromRecord.features).toEqual(read(path.join(dir, 'a'), 'wsl-box').features);
  });

  it('refuses a folder of records, an --out that is a file, and two inputs with one target; exits 4 with no GPU observation', () => {
    const dir = tempDir('cm-export-');
    const records = path.join(dir, 'records');
    const recordFile = path.join(dir, 'record.json');
    writeFileSync(recordFile, recordJson(recordsFromEvents(readEventLog(EXPORT_FIXTURE_LOG), {})[0]!));
    expect(exportCommand([recordFile], { out: records }, fixtureCapabilities())).toBe(0);
    const thrown = (run: () => unknown) => {
      try {
        run();
      } catch (error) {
        expect(error).toBeInstanceOf(CudamatrixError);
        return `${(error as CudamatrixError).code}: ${(error as Error).message}`;
      }
      throw new Error('no error');
    };
    writeFileSync(path.join(records, 'driver-1.json'), readFileSync(recordFile));
    expect(thrown(() => exportCommand([records], { out: path.join(dir, 'o1') }))).toMatch(/^USAGE: .*records is a folder of records/);
    expect(thrown(() => exportCommand([EXPORT_FIXTURE_LOG], { out: recordFile }))).toMatch(/^USAGE: --out .*record\.json is a file/);
    const twice = thrown(() => exportCommand([EXPORT_FIXTURE_LOG, recordFile], { out: path.join(dir, 'o2') }, fixtureCapabilities()));
    expect(twice).toMatch(/^EXPORT_DUPLICATE_TARGET: .*record\.json and .*events\.jsonl both hold target wsl-box/);
    // Nothing written before every input was read.
    expect(existsSync(path.join(dir, 'o2'))).toBe(false);

    const noDriver = path.join(dir, 'no-driver.jsonl');
    const events = [runStart(), targetStart('laptop'), cell('laptop', 'sysinfo', 'passed', sysinfo({ driver_found: false })), runEnd];
    writeFileSync(noDriver, events.map((e) => JSON.stringify(e)).join('\n') + '\n');
    expect(exportCommand([noDriver], { out: path.join(dir, 'o3') }, fixtureCapabilities())).toBe(4);
    expect(existsSync(path.join(dir, 'o3'))).toBe(false);
    expect(said.join('')).toContain('laptop: no NVIDIA driver');
  });

  it('exports the capability facts of the catalogue by default: every one, measured or not', async () => {
    const probeFacts = probeSpec('host-register-flags')!.facts.map((fact) => `host-register-flags.${fact.name}`);
    expect(catalogueCapabilities().map((spec) => spec.name)).toEqual(expect.arrayContaining(probeFacts));
    const dir = tempDir('cm-export-');
    const log = path.join(dir, 'events.jsonl');
    const fact = (name: string, value: string, evidence: Record<string, unknown>) =>
      ({ schema: 'cudaprobe/1', probe: 'host-register-flags', type: 'fact', name, value, evidence }) as const;
    const facts = [
      fact('default', 'works', { claimed: true, call: 'cuMemHostUnregister', result: 'CUDA_SUCCESS', agrees: true }),
      fact('portable', 'claimed-but-fails', {
        claimed: true,
        call: 'cuMemHostRegister',
        result: 'CUDA_ERROR_INVALID_VALUE',
        agrees: false,
      }),
    ];
    const events = [
      runStart(),
      targetStart('box'),
      cell(
        'box',
        'sysinfo',
        'passed',
        sysinfo({ driver_found: true, driver_version: '590.1', gpu_name: 'NVIDIA L4', environment: 'linux' }),
      ),
      cell('box', 'host-register-flags', 'passed', facts),
      runEnd,
    ];
    writeFileSync(log, events.map((e) => JSON.stringify(e)).join('\n') + '\n');
    expect(await main(['node', 'cudamatrix', 'export', log, '--out', path.join(dir, 'out')])).toBe(0);
    const exported = read(path.join(dir, 'out'), 'box');
    expect(exported.features['host-register-flags.default']).toMatchObject({ value: 'works', usable: true });
    expect(exported.features['host-register-flags.portable']).toMatchObject({ value: 'claimed-but-fails', usable: false });
    expect(exported.features['host-register-flags.portable']!.summary).toBe(
      'host-register-flags.portable: claimed-but-fails (cuMemHostRegister → CUDA_ERROR_INVALID_VALUE) on driver 590.1, linux',
    );
    // The probe's other features were not in the log: there, not measured, not usable.
    expect(exported.features['host-register-flags.read_only']).toMatchObject({ usable: false, measured: false });
    // Only facts made by capabilityFact count, not a look-alike value list.
    expect(isCapabilityFact({ name: 'copy', description: '', values: [...CAPABILITY_VALUES] })).toBe(false);
    expect(catalogue.flatMap((probe) => probe.facts).filter(isCapabilityFact).length).toBe(catalogueCapabilities().length);
  });

  it('--out is required, and --help says what each file is for', async () => {
    expect(await main(['node', 'cudamatrix', 'export', EXPORT_FIXTURE_LOG])).toBe(2);
    expect(said.join('')).toContain("required option '--out <dir>' not specified");
    expect(await main(['node', 'cudamatrix', 'export', '--help'])).toBe(0);
    for (const phrase of ['conftest_cudamatrix.py', 'requires_cuda', 'cudamatrix_requires', 'claimed-but-fails', 'Exit status:'])
      expect(said.join('')).toContain(phrase);
  });
});

describe('export names', () => {
  it('make CMake stems and target folders of any name, and Python literals of any JSON', () => {
    expect(cmakeFeatureName('memory-pools.pool_posix_fd')).toBe('MEMORY_POOLS_POOL_POSIX_FD');
    expect(cmakeFeatureName('host-register-flags.read_only')).toBe('HOST_REGISTER_FLAGS_READ_ONLY');
    expect(targetFolder('gpu-box.lab_1')).toBe('gpu-box.lab_1');
    expect(targetFolder('../a b/c')).toBe('a-b-c');
    expect(targetFolder('..')).toBe('target');
    expect(pythonLiteral({ yes: true, no: false, none: null, list: [1, 2.5], text: 'a "b" \\ \n' })).toBe(
      '{\n    "yes": True,\n    "no": False,\n    "none": None,\n    "list": [\n        1,\n        2.5,\n    ],\n    "text": "a \\"b\\" \\\\ \\n",\n}',
    );
  });
});
