/**
 * Declared stand-ins for third-party actions, for the workflow player (player.ts). A
 * stand-in does on this machine what the action would do on a runner, as far as a test needs:
 *   actions/checkout           nothing for the workflow's own repository (the workspace is the
 *                              checkout the test made); `repository:` (or `path:`) copies that
 *                              repository's files from the local folder `repos` names
 *   actions/setup-node         nothing: this machine's node is used
 *   actions/upload-artifact    v4+: copies `path` into <artifactsDir>/<name> (the least common
 *                              ancestor of the paths as its root; hidden files and folders, the
 *                              searched folder's own name included, left out unless
 *                              include-hidden-files; if-no-files-found; overwrite; a name used
 *                              twice refused as GitHub refuses it)
 *   actions/download-artifact  v4+: `name`, or `pattern` (each artifact in its own folder unless
 *                              merge-multiple) into `path`
 * Each logs that it is a stand-in. Nothing is fetched, no ref is checked out, no token is used.
 */
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readdirSync, rmSync, statSync } from 'node:fs';
import path from 'node:path';
import picomatch from 'picomatch';

export interface StandInContext {
  /** The `uses:` as written (owner/repo[/path]@ref). */
  uses: string;
  /** The ref after '@'. */
  ref: string;
  /** The step's `with:`, evaluated (strings, as an action's inputs are). */
  with: Record<string, string>;
  workspace: string;
  runnerTemp: string;
  artifactsDir: string;
  /** 'owner/repo' -> a local folder holding that repository. */
  repos: Record<string, string>;
  /** The github context (repository, sha...). */
  github: Record<string, unknown>;
  /** The environment the step's process would get. */
  env: Record<string, string>;
  log(line: string): void;
  warning(message: string): void;
  setOutput(name: string, value: string): void;
}

/** A stand-in: throwing fails the step with the error's message. */
export type StandIn = (ctx: StandInContext) => void | Promise<void>;

function majorAtLeast(ref: string, major: number): boolean {
  const match = /^v(\d+)/.exec(ref);
  return !match || Number(match[1]) >= major; // a SHA or a branch: taken as current
}

function insideOf(root: string, target: string): boolean {
  const rel = path.relative(root, target);
  return rel === '' || (!rel.startsWith('..') && !path.isAbsolute(rel));
}

/** The files of a repository as a checkout has them: git's tracked and unignored files, else all. */
function repositoryFiles(dir: string): string[] | undefined {
  try {
    const out = execFileSync('git', ['-C', dir, 'ls-files', '-z', '--cached', '--others', '--exclude-standard'], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
      maxBuffer: 64 << 20,
    });
    return out.split('\0').filter((file) => file !== '' && existsSync(path.join(dir, file)));
  } catch {
    return undefined;
  }
}

const checkout: StandIn = (ctx) => {
  const own = String(ctx.github.repository ?? '');
  const repository = ctx.with.repository || own;
  const dest = path.resolve(ctx.workspace, ctx.with.path || '.');
  if (!insideOf(ctx.workspace, dest)) throw new Error(`Repository path '${dest}' is not under '${ctx.workspace}'`);
  if (repository === own && dest === ctx.workspace) {
    ctx.log(`[player] actions/checkout@${ctx.ref} is a stand-in: the workspace ${ctx.workspace} is the checkout of ${own} the test made`);
    return;
  }
  const src = ctx.repos[repository];
  if (!src)
    throw new Error(
      `[player] actions/checkout stand-in: no local folder for repository '${repository}'; pass repos: { '${repository}': <folder> } to the player`,
    );
  if (ctx.with.ref) ctx.log(`[player] ref '${ctx.with.ref}' is not checked out: the folder's files are copied as they are`);
  mkdirSync(dest, { recursive: true });
  const files = repositoryFiles(src);
  if (files) {
    for (const file of files) cpSync(path.join(src, file), path.join(dest, file), { recursive: true, verbatimSymlinks: true });
  } else {
    cpSync(src, dest, { recursive: true, verbatimSymlinks: true });
  }
  ctx.log(
    `[player] actions/checkout@${ctx.ref} is a stand-in: copied ${files ? `${files.length} files` : 'the folder'} of ${repository} from ${src} to ${dest}`,
  );
  ctx.setOutput('ref', ctx.with.ref ?? '');
};

const setupNode: StandIn = (ctx) => {
  ctx.log(
    `[player] actions/setup-node@${ctx.ref} is a stand-in: this machine's node ${process.version} is used${ctx.with['node-version'] ? ` (node-version '${ctx.with['node-version']}' asked)` : ''}`,
  );
  ctx.setOutput('node-version', process.version);
};

const INVALID_NAME_CHARS = ['"', ':', '<', '>', '|', '*', '?', '\r', '\n', '\\', '/'];

function checkArtifactName(name: string): void {
  const bad = INVALID_NAME_CHARS.filter((char) => name.includes(char));
  if (bad.length)
    throw new Error(
      `The artifact name is not valid: ${name}. Contains the following character: ${bad.map((char) => JSON.stringify(char)).join(', ')}`,
    );
}

function refuseOldArtifactAction(ctx: StandInContext, action: string): void {
  if (!majorAtLeast(ctx.ref, 4)) {
    throw new Error(
      `This request has been automatically failed because it uses a deprecated version of \`${action}: ${ctx.ref}\`. (the stand-in plays v4 and later)`,
    );
  }
}

function allFiles(dir: string): string[] {
  if (!existsSync(dir)) return [];
  if (statSync(dir).isFile()) return [dir];
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? allFiles(path.join(dir, e.name)) : e.isFile() ? [path.join(dir, e.name)] : [],
  );
}

const GLOB = /[*?[\]{}]/;

/** The folder a pattern searches (its path before the first segment holding a glob character). */
function searchPath(pattern: string): string {
  const segments = pattern.split('/');
  const first = segments.findIndex((segment) => GLOB.test(segment));
  return first < 0 ? pattern : segments.slice(0, first).join('/') || '/';
}

function commonAncestor(paths: string[]): string {
  let common = paths[0]!.split(path.sep);
  for (const otherPath of paths.slice(1)) {
    const parts = otherPath.split(path.sep);
    let i = 0;
    while (i < common.length && i < parts.length && common[i] === parts[i]) i++;
    common = common.slice(0, i);
  }
  return common.join(path.sep) || path.sep;
}

const uploadArtifact: StandIn = (ctx) => {
  refuseOldArtifactAction(ctx, 'actions/upload-artifact');
  const name = ctx.with.name || 'artifact';
  checkArtifactName(name);
  const lines = (ctx.with.path ?? '')
    .split('\n')
    .map((line) => line.trim())
    .filter(Boolean);
  if (lines.length === 0) throw new Error('Input required and not supplied: path');
  const ifNone = ctx.with['if-no-files-found'] || 'warn';
  if (!['warn', 'error', 'ignore'].includes(ifNone))
    throw new Error(`Unrecognized if-no-files-found input. Provided: ${ifNone}. Available options: warn, error, ignore`);
  const resolve = (pathPattern: string) => path.resolve(ctx.workspace, pathPattern.replace(/^~(?=\/|$)/, process.env.HOME ?? '~'));
  const includes = lines.filter((line) => !line.startsWith('!')).map(resolve);
  const excludes = lines.filter((line) => line.startsWith('!')).map((line) => picomatch(resolve(line.slice(1)), { dot: true }));
  const searchPaths = includes.map(searchPath);
  const found = new Set<string>();
  includes.forEach((pattern, i) => {
    const base = searchPaths[i]!;
    const match = GLOB.test(pattern) ? picomatch(pattern, { dot: true }) : () => true;
    for (const file of allFiles(base)) {
      // As @actions/glob's excludeHiddenFiles: the search path's own name counts too (.cudamatrix/x is hidden).
      const hidden = [path.basename(base), ...path.relative(base, file).split(path.sep)].some((segment) => segment.startsWith('.'));
      if (match(file) && !excludes.some((isExcluded) => isExcluded(file)) && (!hidden || ctx.with['include-hidden-files'] === 'true'))
        found.add(file);
    }
  });
  const files = [...found].sort();
  if (files.length === 0) {
    const message = `No files were found with the provided path: ${lines.join('\n')}. No artifacts will be uploaded.`;
    if (ifNone === 'error') throw new Error(message);
    if (ifNone === 'warn') ctx.warning(message);
    else ctx.log(message);
    return;
  }
  // One file named by its path: its folder is the root; one search path: that; several: their common ancestor.
  const single = includes.length === 1 && files.length === 1 && files[0] === includes[0];
  const root = single ? path.dirname(files[0]!) : searchPaths.length === 1 ? searchPaths[0]! : commonAncestor(searchPaths);
  const dest = path.join(ctx.artifactsDir, name);
  mkdirSync(ctx.artifactsDir, { recursive: true });
  if (existsSync(dest) && ctx.with.overwrite === 'true') rmSync(dest, { recursive: true, force: true });
  try {
    mkdirSync(dest); // the claim on the name: fails if another job of the run took it
  } catch {
    throw new Error(
      'Failed to CreateArtifact: Received non-retryable error: Failed request: (409) Conflict: an artifact with this name already exists on the workflow run',
    );
  }
  for (const file of files) cpSync(file, path.join(dest, path.relative(root, file)));
  const id = readdirSync(ctx.artifactsDir).length;
  ctx.log(`[player] actions/upload-artifact@${ctx.ref} is a stand-in: ${files.length} file(s) from ${root} copied to ${dest}`);
  ctx.log(
    `Artifact ${name} has been successfully uploaded! Final size is ${files.reduce((total, file) => total + statSync(file).size, 0)} bytes. Artifact ID is ${id}`,
  );
  ctx.setOutput('artifact-id', String(id));
  ctx.setOutput('artifact-url', `file://${dest}`);
};

const downloadArtifact: StandIn = (ctx) => {
  refuseOldArtifactAction(ctx, 'actions/download-artifact');
  if (ctx.with['run-id'])
    throw new Error(`[player] actions/download-artifact stand-in: artifacts of another run (run-id ${ctx.with['run-id']}) are not played`);
  const dest = path.resolve(ctx.workspace, (ctx.with.path || '.').replace(/^~(?=\/|$)/, process.env.HOME ?? '~'));
  const available = existsSync(ctx.artifactsDir) ? readdirSync(ctx.artifactsDir).sort() : [];
  const name = ctx.with.name;
  if (name) {
    if (!available.includes(name)) throw new Error(`Unable to download artifact(s): Artifact not found for name: ${name}`);
    cpSync(path.join(ctx.artifactsDir, name), dest, { recursive: true });
    ctx.log(`[player] actions/download-artifact@${ctx.ref} is a stand-in: artifact ${name} copied to ${dest}`);
  } else {
    const pattern = ctx.with.pattern;
    const isMatch = picomatch(pattern || '*', { dot: true });
    const matches = available.filter((artifact) => isMatch(artifact));
    const merge = ctx.with['merge-multiple'] === 'true';
    for (const artifact of matches)
      cpSync(path.join(ctx.artifactsDir, artifact), merge ? dest : path.join(dest, artifact), { recursive: true });
    ctx.log(
      `[player] actions/download-artifact@${ctx.ref} is a stand-in: ${matches.length} artifact(s) ${pattern ? `matching '${pattern}' ` : ''}copied to ${dest}${merge ? ' (merged)' : ''}: ${matches.join(', ')}`,
    );
    ctx.log(`Total of ${matches.length} artifact(s) downloaded`);
  }
  ctx.setOutput('download-path', dest);
};

/** The stand-ins the player knows without being told, by 'owner/repo'. */
export const defaultStandIns: Record<string, StandIn> = {
  'actions/checkout': checkout,
  'actions/setup-node': setupNode,
  'actions/upload-artifact': uploadArtifact,
  'actions/download-artifact': downloadArtifact,
};
