/**
 * The cudamatrix GitHub Action (action.yml): runs the packaged cudamatrix CLI from its tarball.
 *
 * It has no dependencies and runs on the runner's own Node.js, so a self-hosted GPU runner needs
 * nothing but the runner: no npm, no tar, no shell (Windows runners included). It unpacks the
 * package under RUNNER_TEMP, once per job for each tarball (keyed by the tarball's sha256, so a
 * second step reuses it), and runs
 *
 *   <node> <package>/bin/cudamatrix.cjs <command words> [--matrix M] [--target T] [--probe P]
 *          [--results-dir D] <args, one per line>
 *
 * with its stdio, exiting with its status. Arguments are passed as argv, never through a shell,
 * so a path with spaces or a `$(...)` is one argument on every platform. The CLI itself writes the
 * step's outputs and summary (GITHUB_OUTPUT, GITHUB_STEP_SUMMARY).
 *
 * With ssh-private-key (known-hosts, ssh-key-passphrase) the CLI gets the SSH secrets as files
 * of this step under RUNNER_TEMP, removed when it ends (sshSecrets).
 *
 * Inputs arrive as INPUT_<NAME> environment variables (the name upper-cased, spaces made `_`,
 * hyphens kept: INPUT_RESULTS-DIR). A bad input is a `::error::` line naming the input and the fix,
 * and exit status 2, as the CLI's configuration errors.
 */
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, existsSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { constants, tmpdir } from 'node:os';
import path from 'node:path';
import { extractPackage, TarError } from './tar.mjs';

/** An input's value, trimmed ('' when not given). */
function input(name) {
  return (process.env[`INPUT_${name.replace(/ /g, '_').toUpperCase()}`] ?? '').trim();
}

/** Workflow-command escaping (what @actions/core does): the message, and a property value. */
const escapeData = (s) => s.replace(/%/g, '%25').replace(/\r/g, '%0D').replace(/\n/g, '%0A');
const escapeProperty = (s) => escapeData(s).replace(/:/g, '%3A').replace(/,/g, '%2C');

/** Stops the action: an error annotation naming the input, what is wrong and the fix; exit 2. */
function fail(name, problem, fix) {
  process.stdout.write(`::error title=${escapeProperty('cudamatrix action')}::${escapeData(`input "${name}": ${problem}; ${fix}`)}\n`);
  process.exit(2);
}

const PACK_FIX =
  'pass the tarball `pnpm pack` writes in a cudamatrix checkout (cudamatrix-<version>.tgz), or a folder that holds exactly one, such as where the cudamatrix-package artifact was downloaded';

/** The tarball the `package` input names: a .tgz file, or a folder holding exactly one. */
function findTarball(given) {
  if (!given) fail('package', 'is empty', PACK_FIX);
  const resolved = path.resolve(given);
  let stat;
  try {
    stat = statSync(resolved);
  } catch {
    fail('package', `${given} does not exist (${resolved})`, PACK_FIX);
  }
  if (stat.isDirectory()) {
    const found = readdirSync(resolved)
      .filter((f) => f.endsWith('.tgz'))
      .sort();
    if (found.length === 0) fail('package', `the folder ${given} holds no .tgz file`, PACK_FIX);
    if (found.length > 1)
      fail(
        'package',
        `the folder ${given} holds ${found.length} .tgz files (${found.join(', ')})`,
        'name one of them, or leave only one in the folder',
      );
    return path.join(resolved, found[0]);
  }
  if (!stat.isFile()) fail('package', `${given} is neither a file nor a folder`, PACK_FIX);
  return resolved;
}

/**
 * The unpacked package for the tarball: reused when this job already unpacked the same bytes,
 * else unpacked into a folder of its own and moved into place only once complete, so a step that
 * was killed while unpacking never leaves a half package to reuse.
 */
function unpack(tarball) {
  const bytes = readFileSync(tarball);
  const sha256 = createHash('sha256').update(bytes).digest('hex');
  const root = path.join(process.env.RUNNER_TEMP || tmpdir(), 'cudamatrix-action');
  const dir = path.join(root, sha256.slice(0, 16));
  const marker = path.join(dir, '.unpacked');
  if (existsSync(marker) && readFileSync(marker, 'utf8') === sha256) return { dir, sha256, reused: true };
  const partial = `${dir}.partial-${process.pid}`;
  rmSync(partial, { recursive: true, force: true });
  try {
    extractPackage(bytes, partial);
  } catch (error) {
    rmSync(partial, { recursive: true, force: true });
    if (error instanceof TarError)
      fail('package', `${tarball}: ${error.message}`, 'pack it again with `pnpm pack` (and download the artifact again)');
    throw error;
  }
  if (!existsSync(path.join(partial, 'package', 'bin', 'cudamatrix.cjs'))) {
    rmSync(partial, { recursive: true, force: true });
    fail('package', `${tarball} is not a cudamatrix package (it has no package/bin/cudamatrix.cjs)`, PACK_FIX);
  }
  writeFileSync(path.join(partial, '.unpacked'), sha256);
  rmSync(dir, { recursive: true, force: true });
  renameSync(partial, dir);
  return { dir, sha256, reused: false };
}

/** The CLI's arguments from the inputs. */
function cliArguments() {
  const words = (input('command') || 'run').split(/\s+/);
  const options = [];
  for (const [name, flag] of [
    ['matrix', '--matrix'],
    ['targets', '--target'],
    ['probes', '--probe'],
    ['results-dir', '--results-dir'],
  ]) {
    const value = input(name);
    if (value) options.push(flag, value);
  }
  // One argument a line: no shell splits or expands anything, on any platform.
  const args = (process.env['INPUT_ARGS'] ?? '')
    .split(/\r?\n/)
    .map((line) => line.trim())
    .filter((line) => line !== '');
  return [...words, ...options, ...args];
}

/**
 * The SSH secrets of the inputs ssh-private-key, known-hosts and ssh-key-passphrase, for the CLI:
 * masked before anything prints (a key line by line: the runner matches a mask within a line);
 * the key and known_hosts written to files of their own (0600, created new) in a folder of this
 * step (0700) under RUNNER_TEMP, named by CUDAMATRIX_SSH_IDENTITY_FILE and
 * CUDAMATRIX_SSH_KNOWN_HOSTS; the passphrase in CUDAMATRIX_SSH_PASSPHRASE. `remove` deletes the
 * folder (the runner empties RUNNER_TEMP at the job's end too, should this process be killed).
 */
function sshSecrets() {
  const key = input('ssh-private-key');
  const knownHosts = input('known-hosts');
  const passphrase = input('ssh-key-passphrase');
  if (!key && !knownHosts && !passphrase) return { env: {}, remove() {} };
  if (passphrase && !key)
    fail(
      'ssh-key-passphrase',
      'is set but ssh-private-key is empty',
      'pass the key it unlocks as ssh-private-key (or leave the passphrase out)',
    );
  for (const value of [passphrase, ...key.split(/\r?\n/)].map((v) => v.trim()).filter(Boolean))
    process.stdout.write(`::add-mask::${value}\n`);
  const dir = mkdtempSync(path.join(process.env.RUNNER_TEMP || tmpdir(), 'cudamatrix-ssh-'));
  chmodSync(dir, 0o700);
  const env = {};
  const write = (name, text, variable) => {
    const file = path.join(dir, name);
    writeFileSync(file, text.endsWith('\n') ? text : `${text}\n`, { mode: 0o600, flag: 'wx' });
    env[variable] = file;
  };
  if (key) write('id_key', key, 'CUDAMATRIX_SSH_IDENTITY_FILE');
  if (knownHosts) write('known_hosts', knownHosts, 'CUDAMATRIX_SSH_KNOWN_HOSTS');
  if (passphrase) env.CUDAMATRIX_SSH_PASSPHRASE = passphrase;
  console.log(
    `SSH ${[key && 'key', knownHosts && 'known_hosts', passphrase && 'passphrase'].filter(Boolean).join(', ')} from the inputs, for this step: ${dir} (removed when it ends)`,
  );
  return { env, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

function main() {
  const tarball = findTarball(input('package'));
  const { dir, sha256, reused } = unpack(tarball);
  const pkg = path.join(dir, 'package');
  const version = JSON.parse(readFileSync(path.join(pkg, 'package.json'), 'utf8')).version;
  console.log(
    `cudamatrix ${version} from ${path.basename(tarball)} (sha256 ${sha256.slice(0, 16)}…): ${reused ? 'reusing' : 'unpacked into'} ${dir}`,
  );

  const argv = [path.join(pkg, 'bin', 'cudamatrix.cjs'), ...cliArguments()];
  // The action's inputs are the action's: the CLI reads its own options, not INPUT_*.
  // Last before the CLI starts: nothing that can stop the action comes between writing the files and removing them.
  const ssh = sshSecrets();
  const env = { ...Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('INPUT_'))), ...ssh.env };
  let child;
  try {
    child = spawn(process.execPath, argv, { stdio: 'inherit', env });
  } catch (error) {
    ssh.remove();
    throw error;
  }

  // A cancelled job: the runner signals this process (SIGINT, then SIGTERM), not necessarily its
  // children. The CLI stops its probes, writes its results and exits 130 on either, so they are
  // passed on and this process waits for it: the results are what the job's artifact uploads.
  // On Windows there are no signals to pass (child.kill would end the CLI at once, unwritten):
  // the console's Ctrl-C reaches the CLI itself, and this process only waits.
  for (const signal of ['SIGINT', 'SIGTERM']) {
    process.on(signal, () => {
      if (process.platform !== 'win32') child.kill(signal);
    });
  }
  child.on('error', (error) => {
    ssh.remove();
    console.log(`::error title=cudamatrix action::${escapeData(`could not start ${process.execPath}: ${error.message}`)}`);
    process.exit(1);
  });
  child.on('exit', (code, signal) => {
    ssh.remove();
    process.exitCode = code ?? 128 + (constants.signals[signal] ?? 0);
  });
}

main();
