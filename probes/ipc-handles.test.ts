/**
 * ipc-handles (C31): its facts decided by `cudaprobe judge ipc-handles` from attempt samples
 * written by hand in the shapes the sources report for Windows and WSL2, and the probe itself run
 * against a stand-in driver whose "device" memory is shared memory (test/fixtures/stub-libcuda-ipc.c),
 * so that its two processes really hand over a file descriptor and read the bytes back.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { hasCommand, integrationAvailable, repoRoot, tempDir, testCacheDir } from '../test/helpers.ts';
import { nodeArch } from '../transports/local.ts';
import { buildProbe, type ProbeBinary } from './build.ts';
import { parseProbeOutput, type FactRecord, type ProbeRecord } from './protocol.ts';

const fixtures = path.join(repoRoot, 'test', 'fixtures', 'capability');

let probe: ProbeBinary;
beforeAll(async () => {
  probe = await buildProbe({ platform: 'linux', arch: nodeArch(), cacheDir: testCacheDir });
}, 600_000);

function factsOf(records: ProbeRecord[]): Record<string, FactRecord> {
  return Object.fromEntries(records.filter((record): record is FactRecord => record.type === 'fact').map((fact) => [fact.name, fact]));
}

function judge(lines: string): Record<string, FactRecord> {
  const result = spawnSync(probe.path, ['judge', 'ipc-handles'], { input: lines, encoding: 'utf8' });
  expect(result.status, result.stderr).toBe(0);
  const out = parseProbeOutput(result.stdout);
  expect(out.problems).toEqual([]);
  return factsOf(out.records);
}

const judgeFixture = (name: string) => judge(readFileSync(path.join(fixtures, name), 'utf8'));

describe('cudaprobe judge ipc-handles on hand-written logs', () => {
  it(
    'a Windows-shaped log (NVIDIA/cuda-python#1028: IPC blocked on Windows; numba/numba#8004: legacy IPC not supported there): ' +
      'win32 claimed and works, posix_fd and fabric not applicable, legacy_ipc refused is unsupported with no attribute to agree',
    () => {
      const facts = judgeFixture('ipc-handles-windows.jsonl');
      expect(Object.keys(facts)).toEqual(['posix_fd', 'win32', 'win32_kmt', 'fabric', 'legacy_ipc']);
      expect(facts.win32).toMatchObject({
        value: 'works',
        evidence: { claimed: true, attribute_value: 1, call: 'cuStreamSynchronize (importer)', result: 'CUDA_SUCCESS', agrees: true },
      });
      expect(facts.posix_fd).toMatchObject({ value: null, reason: expect.stringContaining('Linux handle type') });
      expect(facts.fabric).toMatchObject({ value: null, reason: expect.stringContaining('IMEX') });
      expect(facts.win32_kmt).toMatchObject({ value: 'unsupported', evidence: { claimed: false, call: 'cuMemCreate', agrees: true } });
      expect(facts.legacy_ipc).toMatchObject({
        value: 'unsupported',
        evidence: { claimed: null, attribute: null, call: 'cuIpcGetMemHandle', result: 'CUDA_ERROR_NOT_SUPPORTED', agrees: null },
      });
    },
  );

  it(
    'a WSL2-shaped log (NVIDIA/cuda-python#1045: POSIX fd handles claimed under WSL2 and refused; #1264: attributes differ from ' +
      "Windows'): posix_fd claimed but the importer fails, so claimed-but-fails and the attribute does not agree",
    () => {
      const facts = judgeFixture('ipc-handles-wsl2.jsonl');
      expect(facts.posix_fd).toMatchObject({
        value: 'claimed-but-fails',
        evidence: {
          claimed: true,
          attribute: 'CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED',
          call: 'cuMemImportFromShareableHandle (importer)',
          result: 'CUDA_ERROR_NOT_SUPPORTED',
          agrees: false,
        },
      });
      expect(facts.win32).toMatchObject({ value: null, reason: expect.stringContaining('Windows only') });
      expect(facts.fabric).toMatchObject({ value: 'unsupported', evidence: { claimed: false, agrees: true } });
      expect(facts.legacy_ipc).toMatchObject({
        value: 'unsupported',
        evidence: { call: 'cuIpcOpenMemHandle_v2 (importer)', agrees: null },
      });
    },
  );

  it('decides the same facts whatever other probes and record types the log holds', () => {
    const windows = readFileSync(path.join(fixtures, 'ipc-handles-windows.jsonl'), 'utf8');
    const mixed = windows.replaceAll('"probe":"ipc-handles"', '"probe":"virtual-memory"') + windows;
    expect(judge(mixed)).toEqual(judge(windows));
  });
});

const haveGcc = integrationAvailable('gcc, for ipc-handles against a stand-in driver', hasCommand('gcc'), 'apt-get install gcc');

describe.runIf(haveGcc && process.platform === 'linux')(
  'ipc-handles against a stand-in driver with shared "device" memory (test/fixtures/stub-libcuda-ipc.c)',
  () => {
    let stubDir: string;
    beforeAll(() => {
      stubDir = tempDir('cm-ipc-stub-');
      const source = path.join(repoRoot, 'test', 'fixtures', 'stub-libcuda-ipc.c');
      execFileSync('gcc', ['-shared', '-fPIC', '-O1', '-o', path.join(stubDir, 'libcuda.so.1'), source]);
    });

    function runIpc(env: NodeJS.ProcessEnv, params: string[] = []) {
      const args = ['run', 'ipc-handles', ...params.flatMap((param) => ['--param', param])];
      const started = Date.now();
      const result = spawnSync(probe.path, args, {
        encoding: 'utf8',
        env: { ...process.env, LD_LIBRARY_PATH: stubDir, ...env },
        timeout: 60_000,
      });
      const parsed = parseProbeOutput(result.stdout);
      expect(parsed.problems, result.stdout).toEqual([]);
      return {
        code: result.status,
        records: parsed.records,
        facts: factsOf(parsed.records),
        ms: Date.now() - started,
        stdout: result.stdout,
      };
    }

    it('posix_fd works: the importer inherits the fd, maps it and reads back every word; the other types as the stand-in answers', () => {
      const run = runIpc({});
      expect(run.code).toBe(0);
      expect(run.facts.posix_fd).toMatchObject({
        value: 'works',
        evidence: { claimed: true, call: 'cuStreamSynchronize (importer)', result: 'CUDA_SUCCESS', agrees: true },
      });
      expect(run.facts.win32).toMatchObject({ value: null, reason: expect.stringContaining('Windows only') });
      expect(run.facts.win32_kmt).toMatchObject({ value: null, reason: expect.stringContaining('Windows only') });
      // The stand-in claims fabric and cuMemCreate refuses it, as a card without an IMEX channel could.
      expect(run.facts.fabric).toMatchObject({ value: 'claimed-but-fails', evidence: { call: 'cuMemCreate', agrees: false } });
      expect(run.facts.legacy_ipc).toMatchObject({
        value: 'unsupported',
        evidence: { call: 'cuIpcGetMemHandle', result: 'CUDA_ERROR_NOT_SUPPORTED', agrees: null },
      });
      // Judged again from its own samples, the run gives the same facts.
      expect(judge(run.stdout)).toEqual(run.facts);
    });

    it('an attribute that denies posix_fd while the import works is works-unclaimed', () => {
      expect(runIpc({ STUB_IPC_POSIX_CLAIM: '0' }).facts.posix_fd).toMatchObject({
        value: 'works-unclaimed',
        evidence: { claimed: false, agrees: false },
      });
    });

    it("the importer's failure comes back as the attempt's call and result (claimed-but-fails)", () => {
      expect(runIpc({ STUB_IPC_IMPORT_FAIL: '1' }).facts.posix_fd).toMatchObject({
        value: 'claimed-but-fails',
        evidence: { call: 'cuMemImportFromShareableHandle (importer)', result: 'CUDA_ERROR_NOT_SUPPORTED', agrees: false },
      });
    });

    it('bytes that arrive wrong fail the attempt, with the count and both checksums', () => {
      const fact = runIpc({ STUB_IPC_CORRUPT: '1' }, ['size_mib=2']).facts.posix_fd!;
      expect(fact).toMatchObject({ value: 'claimed-but-fails', evidence: { call: 'read back (importer)', agrees: false } });
      expect(fact.evidence?.result).toMatch(
        /^the importing process read 1 of 524288 words wrong \(checksum [0-9a-f]{16}, written [0-9a-f]{16}\)$/,
      );
    });

    it('an importer that hangs is killed after timeout_s and recorded as not answering', () => {
      const run = runIpc({ STUB_IPC_IMPORT_HANG: '1' }, ['timeout_s=1']);
      expect(run.facts.posix_fd).toMatchObject({
        value: 'claimed-but-fails',
        evidence: { call: 'the importing process', result: 'the importing process did not answer within 1 s' },
      });
      expect(run.ms).toBeLessThan(20_000);
    });
  },
);
