// The entry of cudamatrix's single executables (scripts/build-sea.ts injects it, with the package's
// files as assets, into a copy of the Node.js binary). The bundled CLI finds matrix/default.yaml,
// package.json and the prebuilt cudaprobe beside it on disk, as in the npm package, so the files
// are unpacked once into the cache folder (sea/<id>, the id a hash of their sha256 list) and the
// package's own bin/cudamatrix.cjs is run from there: what runs is the package, byte for byte.
// CommonJS, as Node.js requires of an executable's entry; only built-in modules can be required.
'use strict';
const { createHash } = require('node:crypto');
const { existsSync, mkdirSync, renameSync, rmSync, writeFileSync } = require('node:fs');
const { createRequire } = require('node:module');
const { homedir } = require('node:os');
const path = require('node:path');
const sea = require('node:sea');

/** The cudamatrix cache folder (as probes/build.ts defaultCacheDir and bin/cudamatrix.cjs). */
function cacheRoot() {
  if (process.env.CUDAMATRIX_CACHE) return process.env.CUDAMATRIX_CACHE;
  if (process.platform === 'win32' && process.env.LOCALAPPDATA) return path.join(process.env.LOCALAPPDATA, 'cudamatrix', 'cache');
  return path.join(process.env.XDG_CACHE_HOME || path.join(homedir(), '.cache'), 'cudamatrix');
}

/** Makes a folder and at most eight missing parents, one at a time (a recursive mkdir spins under /proc). */
function makeDir(dir) {
  const missing = [];
  for (let parent = dir; !existsSync(parent); parent = path.dirname(parent)) {
    if (missing.length === 8 || parent === path.dirname(parent)) throw Object.assign(new Error(`cannot make ${dir}`), { code: 'ENOENT' });
    missing.push(parent);
  }
  for (const folder of missing.reverse()) mkdirSync(folder);
}

/**
 * Unpacks the files into a folder of this process's own, checks each against its sha256 (a damaged
 * executable stops here, not in the middle of a run), then renames the folder into place: two
 * starts at once both succeed, and a folder that exists is whole.
 */
function unpack(files, root) {
  const partial = `${root}.${process.pid}.partial`;
  rmSync(partial, { recursive: true, force: true });
  for (const [name, sha256] of Object.entries(files)) {
    const content = new Uint8Array(sea.getRawAsset(name));
    if (createHash('sha256').update(content).digest('hex') !== sha256) {
      throw Object.assign(new Error(`its file ${name} is damaged (its sha256 is not the one it was built with)`), { code: 'DAMAGED' });
    }
    const file = path.join(partial, ...name.split('/'));
    makeDir(path.dirname(file));
    writeFileSync(file, content);
  }
  try {
    renameSync(partial, root);
  } catch (error) {
    rmSync(partial, { recursive: true, force: true });
    // Another start unpacked the same files first.
    if (!existsSync(root)) throw error;
  }
}

function main() {
  const index = sea.getAsset('files.json', 'utf8');
  const id = createHash('sha256').update(index).digest('hex').slice(0, 16);
  const root = path.join(cacheRoot(), 'sea', id);
  const bin = path.join(root, 'bin', 'cudamatrix.cjs');
  if (!existsSync(bin)) {
    try {
      makeDir(path.dirname(root));
      unpack(JSON.parse(index), root);
    } catch (error) {
      const why = error.code === 'DAMAGED' ? error.message : `${error.code || error.message}`;
      process.stderr.write(
        error.code === 'DAMAGED'
          ? `error: this cudamatrix executable is damaged: ${why}; download it again and check its .sha256\n`
          : `error: cudamatrix cannot unpack its files into ${root} (${why}); set CUDAMATRIX_CACHE to a folder you can write to\n`,
      );
      process.exit(1);
    }
  }
  createRequire(bin)(bin);
}

main();
