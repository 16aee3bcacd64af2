import { createHash } from 'node:crypto';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { tempDir } from '../test/helpers.ts';
import { chooseProbe, probeBinary, sourceHashes, type PrebuiltManifest } from './binary.ts';

const sha256 = (content: string) => createHash('sha256').update(content).digest('hex');

/** A cudamatrix folder: a package (prebuilt binaries only) or a checkout (sources too). */
async function fakeRoot(options: { sources: boolean; binaries: Record<string, string> }): Promise<string> {
  const root = tempDir();
  const src = path.join(root, 'probes', 'cudaprobe');
  mkdirSync(src, { recursive: true });
  writeFileSync(path.join(src, 'main.cpp'), 'int main() {}\n');
  writeFileSync(path.join(src, 'probe.hpp'), '#pragma once\n');
  const manifest: PrebuiltManifest = { version: '0.0.0', sources: await sourceHashes(src), binaries: {} };
  mkdirSync(path.join(root, 'prebuilt'));
  for (const [key, content] of Object.entries(options.binaries)) {
    const name = key.startsWith('windows') ? 'cudaprobe.exe' : 'cudaprobe';
    mkdirSync(path.join(root, 'prebuilt', key), { recursive: true });
    writeFileSync(path.join(root, 'prebuilt', key, name), content);
    manifest.binaries[key] = { file: `${key}/${name}`, sha256: sha256(content), compiler: 'g++ (test)' };
  }
  writeFileSync(path.join(root, 'prebuilt', 'manifest.json'), JSON.stringify(manifest));
  if (!options.sources) rmSync(src, { recursive: true });
  return root;
}

describe('which cudaprobe binary a target gets', () => {
  it('an installed package uses its prebuilt binary, checked against its sha256, and never compiles', async () => {
    const root = await fakeRoot({ sources: false, binaries: { 'linux-x64': 'elf-x64', 'windows-x64': 'pe-x64' } });
    const linuxBinary = await probeBinary({ platform: 'linux', arch: 'x86_64', root });
    expect(linuxBinary).toMatchObject({ prebuilt: true, built: false, compiler: 'g++ (test)', hash: sha256('elf-x64').slice(0, 16) });
    expect(linuxBinary.path).toBe(path.join(root, 'prebuilt', 'linux-x64', 'cudaprobe'));
    const windowsBinary = await probeBinary({ platform: 'windows', arch: 'x86_64', root });
    expect(windowsBinary.path).toBe(path.join(root, 'prebuilt', 'windows-x64', 'cudaprobe.exe'));
  });

  it('a platform the package has no binary for is a PROBE_MISSING error that lists what it has', async () => {
    const root = await fakeRoot({ sources: false, binaries: { 'linux-x64': 'elf-x64' } });
    await expect(probeBinary({ platform: 'linux', arch: 'aarch64', root })).rejects.toMatchObject({
      code: 'PROBE_MISSING',
      message: expect.stringMatching(/no cudaprobe for linux-arm64 \(it has: linux-x64\)/),
    });
  });

  it('a prebuilt binary that is not the one the package was made with is refused', async () => {
    const root = await fakeRoot({ sources: false, binaries: { 'linux-x64': 'elf-x64' } });
    writeFileSync(path.join(root, 'prebuilt', 'linux-x64', 'cudaprobe'), 'something else');
    await expect(probeBinary({ platform: 'linux', arch: 'x86_64', root })).rejects.toMatchObject({
      code: 'PROBE_MISSING',
      message: expect.stringMatching(/not the one the package was made with/),
    });
  });

  it('a checkout uses the prebuilt binary while its sources are the ones it was built from, and compiles once one changes (naming it)', async () => {
    const root = await fakeRoot({ sources: true, binaries: { 'linux-x64': 'elf-x64' } });
    expect(await chooseProbe('linux', 'x86_64', root)).toMatchObject({ use: 'prebuilt' });
    writeFileSync(path.join(root, 'probes', 'cudaprobe', 'probe.hpp'), '#pragma once\n// changed\n');
    const choice = await chooseProbe('linux', 'x86_64', root);
    expect(choice).toMatchObject({ use: 'compile' });
    expect(choice.why).toMatch(/sources changed since the prebuilt binaries were made: probe\.hpp$/);
    writeFileSync(path.join(root, 'probes', 'cudaprobe', 'new.cpp'), '');
    expect((await chooseProbe('linux', 'x86_64', root)).why).toMatch(/: new\.cpp, probe\.hpp$/);
  });

  it("counts a probe's own sources in probes/cudaprobe/probes/ and the generated probe table, named by their path there", async () => {
    const root = await fakeRoot({ sources: true, binaries: { 'linux-x64': 'elf-x64' } });
    const src = path.join(root, 'probes', 'cudaprobe');
    mkdirSync(path.join(src, 'probes'));
    writeFileSync(path.join(src, 'probes', 'p2p.cpp'), '');
    writeFileSync(path.join(src, 'probe_table.inc'), '');
    expect((await chooseProbe('linux', 'x86_64', root)).why).toMatch(/: probe_table\.inc, probes\/p2p\.cpp$/);
    expect(Object.keys(await sourceHashes(src))).toEqual(['main.cpp', 'probe.hpp', 'probe_table.inc', 'probes/p2p.cpp']);
  });

  it('a checkout without prebuilt binaries compiles', async () => {
    const root = await fakeRoot({ sources: true, binaries: {} });
    rmSync(path.join(root, 'prebuilt'), { recursive: true });
    expect(await chooseProbe('linux', 'x86_64', root)).toMatchObject({
      use: 'compile',
      why: expect.stringMatching(/development checkout, which compiles cudaprobe from its sources/),
    });
    expect(await chooseProbe('windows', 'x86_64', root)).toMatchObject({ use: 'compile' });
  });
});
