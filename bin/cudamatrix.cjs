#!/usr/bin/env node
// The cudamatrix command. It runs the bundled CLI (dist/cudamatrix.cjs, from pnpm build; the
// package ships it) and, without a bundle (a development checkout), the TypeScript sources
// through tsx.
//
// The bundle is run through vm.Script with V8's code cache, kept per command under the user's
// cache folder: Node.js 20 has no compile cache of its own (NODE_COMPILE_CACHE is Node.js 22),
// and compiling the bundle's code anew is most of what `--version` and `plan` would cost. A
// cache that is missing, stale (another bundle or Node.js) or unwritable only costs that time.
// This file is CommonJS too: an ES module entry costs Node's ES module loader, a few ms more.
'use strict';
const { createHash } = require('node:crypto');
const { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } = require('node:fs');
const { createRequire, Module } = require('node:module');
const { homedir } = require('node:os');
const path = require('node:path');
const vm = require('node:vm');

const bundle = path.join(__dirname, '..', 'dist', 'cudamatrix.cjs');

/** The cudamatrix cache folder (as probes/build.ts defaultCacheDir). */
function cacheRoot() {
  if (process.env.CUDAMATRIX_CACHE) return process.env.CUDAMATRIX_CACHE;
  if (process.platform === 'win32' && process.env.LOCALAPPDATA) return path.join(process.env.LOCALAPPDATA, 'cudamatrix', 'cache');
  return path.join(process.env.XDG_CACHE_HOME || path.join(homedir(), '.cache'), 'cudamatrix');
}

/**
 * Makes the folder and its missing parents, one level at a time and at most eight: Node's own
 * recursive mkdir spins forever under /proc (HOME=/proc/nope), and a cache is not worth a hang.
 */
function makeCacheDir(dir) {
  const missing = [];
  for (let d = dir; !existsSync(d); d = path.dirname(d)) {
    if (missing.length === 8 || d === path.dirname(d)) throw new Error(`cannot make ${dir}`);
    missing.push(d);
  }
  for (const d of missing.reverse()) mkdirSync(d);
}

const sha256 = (data) => createHash('sha256').update(data).digest();

/** Code cache files of other bundles or Node.js versions, unused for this long, are removed. */
const STALE_MS = 14 * 24 * 3600 * 1000;

/**
 * Reads a code cache file: a sha256 of the data, then the data. V8 checks little of what it is
 * given (a damaged cache crashed Node in a test), so a file whose hash does not match is not used.
 */
function readCache(file) {
  try {
    const content = readFileSync(file);
    const data = content.subarray(32);
    return content.length > 32 && sha256(data).equals(content.subarray(0, 32)) ? data : undefined;
  } catch {
    return undefined;
  }
}

function writeCache(file, data, keep) {
  const dir = path.dirname(file);
  makeCacheDir(dir);
  const partial = `${file}.${process.pid}.tmp`;
  writeFileSync(partial, Buffer.concat([sha256(data), data]));
  renameSync(partial, file);
  for (const name of readdirSync(dir)) {
    const other = path.join(dir, name);
    if (!name.startsWith(keep) && Date.now() - statSync(other).mtimeMs > STALE_MS) rmSync(other, { force: true });
  }
}

function runBundle() {
  // The bundle's first line names its content hash (scripts/build-bundle.ts): the cache is keyed by what
  // the code is, not by a file date that tar, Docker or Nix may have reset.
  const source = readFileSync(bundle, 'utf8');
  const bundleHash = /^\/\/ cudamatrix bundle ([0-9a-f]{16})/.exec(source)?.[1] ?? `size${source.length}`;
  const keep = `cli-${process.version}-${process.arch}-${bundleHash}-`;
  // One cache per command: each holds the code that command compiled, and no more.
  const command = /^[a-z-]+$/.test(process.argv[2] ?? '') ? process.argv[2] : 'other';
  const cacheFile = path.join(cacheRoot(), 'v8', `${keep}${command}.bin`);
  const cachedData = readCache(cacheFile);
  const script = new vm.Script(Module.wrap(source), { filename: bundle, cachedData });
  if (!cachedData || script.cachedDataRejected) {
    // Written at exit, so that it holds the code this command compiled while it ran.
    process.once('exit', () => {
      try {
        writeCache(cacheFile, script.createCachedData(), keep);
      } catch {
        // A read-only home or a full disk: the next start compiles again, nothing else.
      }
    });
  }
  const module = new Module(bundle);
  module.filename = bundle;
  module.paths = Module._nodeModulePaths(path.dirname(bundle));
  script.runInThisContext()(module.exports, createRequire(bundle), module, bundle, path.dirname(bundle));
}

if (existsSync(bundle)) {
  runBundle();
} else {
  import('tsx/esm').then(() => import('../cli/entry.ts'));
}
