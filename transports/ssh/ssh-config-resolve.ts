/**
 * An SSH target's ssh_config options, resolved by OpenSSH itself where `ssh` is on PATH:
 * `ssh -G` prints the options a login would use (Host and Match blocks, Include, defaults) and
 * exits without connecting. Where it cannot be run (no ssh, as under Wine), the parser of
 * ssh-config.ts stands in. ssh's answers are given back as the parser gives them, so that the
 * transport treats both alike: an option the config does not set is left out, and the
 * transport's own defaults (endpoint.ts) fill it in, not ssh's.
 */
import { spawnSync } from 'node:child_process';
import { statSync } from 'node:fs';
import { homedir, userInfo } from 'node:os';
import path from 'node:path';
import { CudamatrixError } from '../../core/errors.ts';
import { expandPathTokens, parseSshConfig, type GivenOptions, type ResolvedHost } from './ssh-config.ts';
import { SharedResolutions } from './ssh-config-shared.ts';

/** ssh -G reads files and runs only Match exec commands: seconds are plenty, and a hang is the config's. */
const SSH_G_TIMEOUT_MS = 5000;

/** ssh -G's output: each lowercase keyword with its values (IdentityFile once a line, so several). */
type SshGOutput = Map<string, string[]>;

const cache = new Map<string, ResolvedHost>();
const shared = new SharedResolutions();
const defaultsOf = new Map<string, SshGOutput | undefined>();

/**
 * `alias` after ssh_config: configFile undefined reads what `ssh alias` reads (~/.ssh/config,
 * /etc/ssh/ssh_config), false reads none, a path reads that file. `ssh` is the program to run
 * (tests name one that is not there to get the parser).
 */
export function resolveSshConfig(alias: string, configFile?: string | false, given: GivenOptions = {}, ssh = 'ssh'): ResolvedHost {
  const key = JSON.stringify([ssh, alias, configFile ?? null, given.port ?? null, given.user ?? null, modified(configFile)]);
  let resolved = cache.get(key);
  if (!resolved) {
    // An alias the same config lines apply to as one resolved before shares its ssh -G (ssh-config-shared.ts).
    const group = shared.groupOf(ssh, alias, configFile, given);
    resolved = group && shared.derive(group.key, group.byParser);
    if (!resolved) {
      const bySsh = resolveWithOpenSsh(alias, configFile, given, ssh);
      if (bySsh && group) shared.remember(group.key, bySsh, group.byParser);
      resolved = bySsh ?? parseSshConfig(alias, configFile, given);
    }
    cache.set(key, resolved);
  }
  return resolved;
}

/** `alias` as ssh -G resolves it, or undefined when ssh cannot be run here. */
export function resolveWithOpenSsh(
  alias: string,
  configFile?: string | false,
  given: GivenOptions = {},
  ssh = 'ssh',
): ResolvedHost | undefined {
  const output = runSshG(ssh, alias, configFile, given);
  return output && fromSshG(alias, output, sshDefaults(ssh), given);
}

function modified(configFile: string | false | undefined): number | null {
  try {
    return configFile ? statSync(configFile).mtimeMs : null;
  } catch {
    return null;
  }
}

/** What ssh lists when no config sets an option: its defaults, to tell them from the config's values. */
function sshDefaults(ssh: string): SshGOutput | undefined {
  if (!defaultsOf.has(ssh)) defaultsOf.set(ssh, runSshG(ssh, 'cudamatrix-defaults', false, {}));
  return defaultsOf.get(ssh);
}

/** ssh -G's options for alias, or undefined when ssh cannot be run here. A config ssh refuses is an error naming it. */
function runSshG(ssh: string, alias: string, configFile: string | false | undefined, given: GivenOptions): SshGOutput | undefined {
  const args = ['-G'];
  if (configFile !== undefined) args.push('-F', configFile === false ? 'none' : configFile);
  if (given.port !== undefined) args.push('-p', String(given.port));
  if (given.user !== undefined) args.push('-l', given.user);
  args.push('--', alias);
  const run = spawnSync(ssh, args, {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
    timeout: SSH_G_TIMEOUT_MS,
    windowsHide: true,
  });
  const config = configFile === undefined ? '~/.ssh/config (or /etc/ssh/ssh_config)' : configFile === false ? 'no ssh_config' : configFile;
  if (run.error) {
    const code = (run.error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'EACCES') return undefined;
    if (code === 'ETIMEDOUT')
      throw new CudamatrixError(
        'MATRIX_INVALID',
        `ssh_config ${config}: ssh -G took more than ${SSH_G_TIMEOUT_MS / 1000} s to resolve host "${alias}" (a Match exec command that hangs?); fix the file, or set sshConfig to another file or false`,
      );
    return undefined;
  }
  if (run.status !== 0) {
    const why = run.stderr
      .split('\n')
      .map((line) => line.trim())
      .filter((line) => line && !line.startsWith('Pseudo-terminal') && !/: terminating, \d+ bad configuration options/.test(line))
      .join('; ');
    throw new CudamatrixError(
      'MATRIX_INVALID',
      `ssh_config ${config}: OpenSSH cannot read it for host "${alias}": ${why || `ssh -G exited with status ${run.status}`}; fix the file (ssh -G ${alias} shows what ssh makes of it), or set sshConfig to another file or false`,
    );
  }
  const output: SshGOutput = new Map();
  for (const line of run.stdout.split(/\r?\n/)) {
    const match = /^(\S+) (.*)$/.exec(line);
    if (!match) continue;
    const keyword = match[1]!.toLowerCase();
    output.set(keyword, [...(output.get(keyword) ?? []), match[2]!]);
  }
  return output;
}

/** The home folder OpenSSH expands ~ with: the password file's, whatever $HOME says. */
const passwdHome = userInfo().homedir;

/**
 * ssh -G's options as the parser gives them. ssh prints IdentityFile as written (its ~ and
 * %-tokens are expanded here, as ssh would when it loads the keys) and UserKnownHostsFile
 * expanded; where either equals ssh's own default, the config set none.
 */
function fromSshG(alias: string, output: SshGOutput, defaults: SshGOutput | undefined, given: GivenOptions): ResolvedHost {
  const first = (keyword: string) => output.get(keyword)?.[0];
  const sameAsDefault = (keyword: string) => JSON.stringify(output.get(keyword) ?? []) === JSON.stringify(defaults?.get(keyword) ?? []);
  const hostName = first('hostname') ?? alias;
  const port = first('port') === undefined ? given.port : Number(first('port'));
  const user = first('user') ?? given.user;
  const identityFiles = sameAsDefault('identityfile')
    ? []
    : (output.get('identityfile') ?? []).map((file) => expandPathTokens(file, { hostName, port, user }));
  const knownHosts = sameAsDefault('userknownhostsfile') ? undefined : first('userknownhostsfile');
  // ssh expanded its ~ with the password file's home; cudamatrix's ~ is $HOME (as for IdentityFile
  // above and every default path), which differs where HOME was set to another folder.
  const asHome = (file: string) =>
    file === passwdHome ? homedir() : file.startsWith(`${passwdHome}/`) ? path.join(homedir(), file.slice(passwdHome.length + 1)) : file;
  const proxyJump = first('proxyjump');
  return {
    alias,
    hostName,
    port,
    user,
    identityFiles,
    proxyJump: proxyJump && proxyJump.toLowerCase() !== 'none' ? proxyJump : undefined,
    userKnownHostsFiles: knownHosts ? knownHosts.split(/\s+/).map(asHome) : [],
    identitiesOnly: first('identitiesonly') === 'yes',
    notes: [],
  };
}
