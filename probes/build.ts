/**
 * Builds cudaprobe for a platform and architecture, and caches the binary by a hash of its
 * sources, compiler and flags, so that it is compiled once and rebuilt only when one changes.
 */
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, readFile, rename, rm } from 'node:fs/promises';
import { availableParallelism, homedir } from 'node:os';
import path from 'node:path';
import { execa } from 'execa';
import { normaliseArch } from '../core/arch.ts';
import { CudamatrixError } from '../core/errors.ts';
import { makeDir } from '../core/fs.ts';
import { packageRoot } from '../core/package-root.ts';
import type { Platform } from '../transports/transport.ts';

export interface ProbeBinary {
  platform: Platform;
  arch: string;
  path: string;
  /** Hash of sources + compiler + flags: names the binary in caches, here and on targets. */
  hash: string;
  compiler: string;
  /** Whether this call compiled it (false: taken from the cache, or prebuilt). */
  built: boolean;
  /** The package's prebuilt binary (./binary.ts), not compiled on this machine. */
  prebuilt: boolean;
}

export interface BuildOptions {
  platform: Platform;
  arch: string;
  cacheDir?: string;
  /** Called with a line of progress ("compiling cudaprobe for linux/x86_64 ..."). */
  onProgress?: (message: string) => void;
  /** Aborting stops the compilers (Ctrl-C during the first build). */
  signal?: AbortSignal;
}

/** The folder with cudaprobe's C++ sources. */
export function probeSourceDir(): string {
  const dir = path.join(packageRoot(), 'probes', 'cudaprobe');
  if (!existsSync(path.join(dir, 'main.cpp'))) {
    throw new CudamatrixError('PROBE_BUILD_FAILED', `cannot find the cudaprobe sources (${dir}/main.cpp)`);
  }
  return dir;
}

/**
 * The cudamatrix cache folder, by one rule that bin/cudamatrix.cjs (its cacheRoot, V8's code
 * cache under v8/) follows too: CUDAMATRIX_CACHE; on Windows %LOCALAPPDATA%\cudamatrix\cache
 * (the folder Windows keeps per user and per machine, not roaming, with the cache in a folder of
 * its own beside whatever else cudamatrix may keep there); else $XDG_CACHE_HOME/cudamatrix,
 * ~/.cache/cudamatrix.
 */
export function defaultCacheDir(): string {
  if (process.env.CUDAMATRIX_CACHE) return process.env.CUDAMATRIX_CACHE;
  if (process.platform === 'win32' && process.env.LOCALAPPDATA) return path.join(process.env.LOCALAPPDATA, 'cudamatrix', 'cache');
  const base = process.env.XDG_CACHE_HOME || path.join(homedir(), '.cache');
  return path.join(base, 'cudamatrix');
}

interface Toolchain {
  compiler: string;
  flags: string[];
  libs: string[];
  exe: string;
}

/** Compilers tried for each platform/arch, in order; CXX overrides for the native build. */
function toolchains(platform: Platform, arch: string): Toolchain[] {
  const common = ['-std=c++17', '-O2', '-Wall', '-Wextra'];
  if (platform === 'windows') {
    if (arch !== 'x86_64') return [];
    // Windows 10's API: older MinGW headers (Debian 11's: 0x502) leave out PdhAddEnglishCounterW.
    const flags = [...common, '-static', '-D_WIN32_WINNT=0x0A00'];
    const libs = ['-lpsapi', '-lpdh', '-ldxgi', '-ladvapi32'];
    const native = process.platform === 'win32' ? [{ compiler: 'g++', flags, libs, exe: 'cudaprobe.exe' }] : [];
    return [
      ...native,
      { compiler: 'x86_64-w64-mingw32-g++-posix', flags, libs, exe: 'cudaprobe.exe' },
      { compiler: 'x86_64-w64-mingw32-g++', flags, libs, exe: 'cudaprobe.exe' },
    ];
  }
  // Static libstdc++ and libgcc: the binary needs only glibc, so it runs in slim containers. Not
  // on a glibc older than the build machine's, though: its symbols are versioned by the glibc
  // built against (Debian 12: 2.36; Debian 11: 2.17). The package records each binary's floor
  // (binary.ts, glibc); the GitHub workflow packs in Debian 11 for that reason.
  const flags = [...common, '-static-libstdc++', '-static-libgcc', '-pthread'];
  const libs = ['-ldl'];
  const hostArch = normaliseArch(process.arch);
  if (process.platform === 'linux' && arch === hostArch) {
    const own = process.env.CXX ? [process.env.CXX] : [];
    return [...own, 'g++', 'clang++'].map((compiler) => ({ compiler, flags, libs, exe: 'cudaprobe' }));
  }
  return [{ compiler: `${arch}-linux-gnu-g++`, flags, libs, exe: 'cudaprobe' }];
}

async function compilerIdentity(compiler: string): Promise<string | undefined> {
  const result = await execa(compiler, ['--version'], { reject: false });
  return result.exitCode === 0 ? String(result.stdout).split('\n')[0] : undefined;
}

/** The subfolder of cudaprobe's sources with the probes; the machinery they share is above it. */
const PROBES_SUBDIR = 'probes';

/**
 * cudaprobe's source files (*.cpp, *.hpp, *.inc) in `dir` and its probes/ folder, sorted: what a
 * build compiles and hashes.
 */
export async function sourceFiles(dir: string): Promise<string[]> {
  const isSource = (fileName: string) => /\.(cpp|hpp|inc)$/.test(fileName);
  const sub = path.join(dir, PROBES_SUBDIR);
  const own = existsSync(sub) ? (await readdir(sub)).filter(isSource).map((fileName) => `${PROBES_SUBDIR}/${fileName}`) : [];
  const names = [...(await readdir(dir)).filter(isSource), ...own].sort();
  return names.map((fileName) => path.join(dir, fileName));
}

/** A source file's name relative to the source folder, with / on every platform ("probes/p2p.cpp"). */
export function sourceName(dir: string, file: string): string {
  return path.relative(dir, file).split(path.sep).join('/');
}

/** The first compiler for the platform that answers --version, or why there is none. */
async function chooseToolchain(platform: Platform, arch: string): Promise<{ tc: Toolchain; identity: string } | { missing: string }> {
  for (const tc of toolchains(platform, arch)) {
    const identity = await compilerIdentity(tc.compiler);
    if (identity) return { tc, identity };
  }
  const tried = toolchains(platform, arch).map((toolchain) => toolchain.compiler);
  const hint =
    platform === 'windows'
      ? 'install MinGW-w64 (Debian: apt-get install g++-mingw-w64-x86-64-posix)'
      : process.platform === 'linux' && tried.includes(`${arch}-linux-gnu-g++`)
        ? `install a C++17 cross compiler for linux/${arch} (Debian: apt-get install g++-${arch.replace(/_/g, '-')}-linux-gnu)`
        : `install a C++17 compiler for ${platform}/${arch} (Debian: apt-get install g++)`;
  return { missing: `no compiler for cudaprobe on ${platform}/${arch}${tried.length ? ` (tried ${tried.join(', ')})` : ''}: ${hint}` };
}

/** The compiler a build for the platform would use (its --version line), or why there is none. */
export async function compilerFor(platform: Platform, arch: string): Promise<{ compiler: string } | { missing: string }> {
  const chosen = await chooseToolchain(platform, arch);
  return 'missing' in chosen ? chosen : { compiler: chosen.identity };
}

export async function buildProbe(options: BuildOptions): Promise<ProbeBinary> {
  const { platform, arch } = options;
  const sourceDir = probeSourceDir();
  const sources = await sourceFiles(sourceDir);
  const chosen = await chooseToolchain(platform, arch);
  if ('missing' in chosen) throw new CudamatrixError('PROBE_BUILD_FAILED', chosen.missing);
  const { tc, identity } = chosen;
  const hasher = createHash('sha256');
  hasher.update(`${platform}/${arch}\n${identity}\n${tc.flags.join(' ')}\n${tc.libs.join(' ')}\n`);
  for (const file of sources) {
    hasher.update(`${sourceName(sourceDir, file)}\n`);
    hasher.update(await readFile(file));
  }
  const hash = hasher.digest('hex').slice(0, 16);
  const dir = path.join(options.cacheDir ?? defaultCacheDir(), 'cudaprobe', `${platform}-${arch}-${hash}`);
  const binary = path.join(dir, tc.exe);
  if (existsSync(binary)) return { platform, arch, path: binary, hash, compiler: identity, built: false, prebuilt: false };

  options.onProgress?.(`compiling cudaprobe for ${platform}/${arch} with ${tc.compiler} ...`);
  makeDir(dir, 'the cudaprobe build cache (CUDAMATRIX_CACHE, else ~/.cache/cudamatrix)');
  // Objects and the binary get private names first and are renamed at the end: a build
  // interrupted half-way never poisons the cache.
  const work = await mkdtemp(path.join(dir, `build-${process.pid}-`));
  try {
    const cppFiles = sources.filter((source) => source.endsWith('.cpp'));
    // probes/p2p.cpp -> probes__p2p.o: one folder of objects, no two with one name.
    const objectOf = (file: string) =>
      `${sourceName(sourceDir, file)
        .replace(/\.cpp$/, '')
        .replace(/\//g, '__')}.o`;
    const objects = cppFiles.map((cppFile) => path.join(work, objectOf(cppFile)));
    // One compiler per source file, as many at once as there are cores: the link is quick.
    const jobs = cppFiles.map((file, i) => () => compile(tc, [...tc.flags, '-c', file, '-o', objects[i]!], platform, arch, options.signal));
    await runLimited(jobs, Math.max(1, availableParallelism()));
    const partial = path.join(work, tc.exe);
    await compile(tc, [...tc.flags, '-o', partial, ...objects, ...tc.libs], platform, arch, options.signal);
    await rename(partial, binary);
  } finally {
    await rm(work, { recursive: true, force: true });
  }
  return { platform, arch, path: binary, hash, compiler: identity, built: true, prebuilt: false };
}

async function compile(tc: Toolchain, args: string[], platform: Platform, arch: string, signal?: AbortSignal): Promise<void> {
  if (signal?.aborted) throw interrupted(platform, arch);
  const result = await execa(tc.compiler, args, { reject: false, all: true, cancelSignal: signal });
  if (signal?.aborted) throw interrupted(platform, arch);
  if (result.exitCode !== 0) {
    throw new CudamatrixError(
      'PROBE_BUILD_FAILED',
      `compiling cudaprobe for ${platform}/${arch} with ${tc.compiler} failed (exit ${result.exitCode}):\n${String(result.all ?? '').slice(0, 4000)}`,
    );
  }
}

function interrupted(platform: Platform, arch: string): CudamatrixError {
  return new CudamatrixError('INTERRUPTED', `the build of cudaprobe for ${platform}/${arch} was interrupted`);
}

/** Runs the jobs with at most `limit` at once; the first failure is thrown once all settle. */
async function runLimited(jobs: (() => Promise<void>)[], limit: number): Promise<void> {
  let next = 0;
  const failures: unknown[] = [];
  await Promise.all(
    Array.from({ length: Math.min(limit, jobs.length) }, async () => {
      while (next < jobs.length) {
        try {
          await jobs[next++]!();
        } catch (error) {
          failures.push(error);
        }
      }
    }),
  );
  if (failures.length) throw failures[0];
}
