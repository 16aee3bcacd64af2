/**
 * Which cudaprobe binary a target gets. The package ships one per platform, prebuilt, with its
 * content hash and the hashes of the sources it was built from (prebuilt/manifest.json, written
 * by scripts/prepare-package.ts), so that a machine with nothing but Node.js can run the probes.
 * A development checkout has the sources too: there the prebuilt binary is used only while the
 * sources are the ones it was built from, and cudaprobe is compiled (./build.ts) once they change.
 */
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { CudamatrixError } from '../core/errors.ts';
import { packageRoot } from '../core/package-root.ts';
import type { Platform } from '../transports/transport.ts';
import { buildProbe, sourceFiles, sourceName, type BuildOptions, type ProbeBinary } from './build.ts';

/** The package's folder of prebuilt binaries. */
export const PREBUILT_DIR = 'prebuilt';

export interface PrebuiltBinary {
  /** Path inside prebuilt/, with "/" separators. */
  file: string;
  sha256: string;
  /** The compiler that built it (its --version line). */
  compiler: string;
  /**
   * Linux: the oldest glibc it runs on (the highest GLIBC_x.y symbol version it needs): that of
   * the machine that packed it, since glibc's own symbols and those the static libstdc++ uses
   * are versioned by the glibc built against.
   */
  glibc?: string;
}

/** The highest GLIBC_x.y version an ELF binary asks for (its version-needed strings), if any. */
export function glibcFloor(binary: Buffer): string | undefined {
  const versions = [...new Set(binary.toString('latin1').match(/GLIBC_2\.\d+(?:\.\d+)?/g) ?? [])].map((tag) => tag.slice('GLIBC_'.length));
  const key = (version: string) => version.split('.').map(Number);
  versions.sort((left, right) => {
    const [leftParts, rightParts] = [key(left), key(right)];
    for (let i = 0; i < Math.max(leftParts.length, rightParts.length); i++)
      if ((leftParts[i] ?? 0) !== (rightParts[i] ?? 0)) return (leftParts[i] ?? 0) - (rightParts[i] ?? 0);
    return 0;
  });
  return versions.at(-1);
}

export interface PrebuiltManifest {
  /** The cudamatrix version the binaries were built for. */
  version: string;
  /** sha256 of each source file they were built from, by its name in probes/cudaprobe/ ("probes/p2p.cpp"). */
  sources: Record<string, string>;
  /** By platform key: linux-x64, linux-arm64, windows-x64. */
  binaries: Record<string, PrebuiltBinary>;
}

/** The platform key of a platform and architecture, as Node.js names them: linux-x64, windows-x64. */
export function platformKey(platform: Platform, arch: string): string {
  const nodeArch = ({ x86_64: 'x64', aarch64: 'arm64' } as Record<string, string>)[arch] ?? arch;
  return `${platform}-${nodeArch}`;
}

const sha256 = (data: Buffer | string) => createHash('sha256').update(data).digest('hex');

/** The folder with cudaprobe's C++ sources, when this is a development checkout. */
export function sourceDirIfAny(root = packageRoot()): string | undefined {
  const dir = path.join(root, 'probes', 'cudaprobe');
  return existsSync(path.join(dir, 'main.cpp')) ? dir : undefined;
}

/** sha256 of each source file of cudaprobe, by its name relative to `dir`. */
export async function sourceHashes(dir: string): Promise<Record<string, string>> {
  const hashes: Record<string, string> = {};
  for (const file of await sourceFiles(dir)) hashes[sourceName(dir, file)] = sha256(await readFile(file));
  return hashes;
}

export function readManifest(root = packageRoot()): PrebuiltManifest | undefined {
  const file = path.join(root, PREBUILT_DIR, 'manifest.json');
  if (!existsSync(file)) return undefined;
  try {
    return JSON.parse(readFileSync(file, 'utf8')) as PrebuiltManifest;
  } catch (error) {
    throw new CudamatrixError('PROBE_MISSING', `${file} is not valid JSON (${(error as Error).message}): reinstall cudamatrix`);
  }
}

/** The source files whose content differs between two sets of hashes (added and removed included). */
export function changedSources(built: Record<string, string>, now: Record<string, string>): string[] {
  const names = new Set([...Object.keys(built), ...Object.keys(now)]);
  return [...names].filter((name) => built[name] !== now[name]).sort();
}

/** What probeBinary will do for a platform, and why: for doctor, and to decide. */
export type ProbeChoice =
  | { use: 'prebuilt'; key: string; entry: PrebuiltBinary; why: string }
  | { use: 'compile'; key: string; why: string }
  | { use: 'none'; key: string; why: string };

/** `root`: the cudamatrix folder (the package, or the checkout) to look in. */
export async function chooseProbe(platform: Platform, arch: string, root = packageRoot()): Promise<ProbeChoice> {
  const key = platformKey(platform, arch);
  const manifest = readManifest(root);
  const entry = manifest?.binaries[key];
  const sources = sourceDirIfAny(root);
  if (!sources) {
    if (entry) return { use: 'prebuilt', key, entry, why: `the package's prebuilt ${key} binary` };
    const have = Object.keys(manifest?.binaries ?? {}).join(', ') || 'none';
    return {
      use: 'none',
      key,
      why: `this cudamatrix package has no cudaprobe for ${key} (it has: ${have}) and no sources to compile one from`,
    };
  }
  if (!manifest) return { use: 'compile', key, why: 'this is a development checkout, which compiles cudaprobe from its sources' };
  if (!entry) return { use: 'compile', key, why: `the prebuilt binaries have no ${key} build` };
  const changed = changedSources(manifest.sources, await sourceHashes(sources));
  if (changed.length)
    return { use: 'compile', key, why: `the probe sources changed since the prebuilt binaries were made: ${changed.join(', ')}` };
  return { use: 'prebuilt', key, entry, why: `the prebuilt ${key} binary (the sources are the ones it was built from)` };
}

/**
 * The cudaprobe binary for a platform: the prebuilt one, checked against its hash, or one
 * compiled from the checkout's sources (cached by ./build.ts).
 */
export async function probeBinary(options: BuildOptions & { root?: string }): Promise<ProbeBinary> {
  const { platform, arch, root = packageRoot() } = options;
  const choice = await chooseProbe(platform, arch, root);
  if (choice.use === 'none') {
    throw new CudamatrixError(
      'PROBE_MISSING',
      `${choice.why}; build cudamatrix from a checkout with a compiler for ${choice.key}, or run this target's probes from another machine`,
    );
  }
  if (choice.use === 'compile') return buildProbe(options);
  const file = path.join(root, PREBUILT_DIR, ...choice.entry.file.split('/'));
  let content: Buffer;
  try {
    content = await readFile(file);
  } catch (error) {
    throw new CudamatrixError(
      'PROBE_MISSING',
      `the prebuilt cudaprobe ${file} cannot be read (${(error as NodeJS.ErrnoException).code}): reinstall cudamatrix`,
    );
  }
  const hash = sha256(content);
  if (hash !== choice.entry.sha256) {
    throw new CudamatrixError(
      'PROBE_MISSING',
      `the prebuilt cudaprobe ${file} is not the one the package was made with (sha256 ${hash.slice(0, 16)}…, expected ${choice.entry.sha256.slice(0, 16)}…): reinstall cudamatrix`,
    );
  }
  return { platform, arch, path: file, hash: hash.slice(0, 16), compiler: choice.entry.compiler, built: false, prebuilt: true };
}

/** Resolves each platform/arch once per run, however many targets need it at the same time. */
export function probeBinaries(options: Omit<BuildOptions, 'platform' | 'arch'> = {}) {
  const binaries = new Map<string, Promise<ProbeBinary>>();
  return (platform: Platform, arch: string): Promise<ProbeBinary> => {
    const key = `${platform}/${arch}`;
    let binary = binaries.get(key);
    if (!binary) {
      binary = probeBinary({ ...options, platform, arch });
      binaries.set(key, binary);
    }
    return binary;
  };
}
