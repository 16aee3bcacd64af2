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
const { existsSync, mkdirSync, readFileSync, renameSync, statSync, writeFileSync } = require('node:fs');
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

function runBundle() {
  const stat = statSync(bundle);
  // One cache per command: each holds the code that command compiled, and no more.
  const command = /^[a-z-]+$/.test(process.argv[2] ?? '') ? process.argv[2] : 'other';
  const key = `${process.version}-${process.arch}-${stat.size}-${Math.trunc(stat.mtimeMs)}-${command}`;
  const cacheFile = path.join(cacheRoot(), 'v8', `cli-${key}.bin`);
  let cachedData;
  try {
    cachedData = readFileSync(cacheFile);
  } catch {
    cachedData = undefined;
  }
  // The bundle as Node.js would wrap a CommonJS module (its first line is a #! line).
  const source = readFileSync(bundle, 'utf8').replace(/^#!.*/, '');
  const script = new vm.Script(Module.wrap(source), { filename: bundle, cachedData });
  if (!cachedData || script.cachedDataRejected) {
    // Written at exit, so that it holds the code this command compiled while it ran.
    process.once('exit', () => {
      try {
        makeCacheDir(path.dirname(cacheFile));
        const partial = `${cacheFile}.${process.pid}.tmp`;
        writeFileSync(partial, script.createCachedData());
        renameSync(partial, cacheFile);
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
