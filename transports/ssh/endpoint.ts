/**
 * Where an SSH target's options lead (host, port, user, key and known_hosts files, jumps), after
 * ~/.ssh/config. Light: it reads files and runs at most `ssh -G` (which connects nowhere), so that
 * the plan can group targets by host without loading the SSH client.
 */
import { homedir, userInfo } from 'node:os';
import path from 'node:path';
import { expandHome } from './ssh-config.ts';
import { resolveSshConfig } from './ssh-config-resolve.ts';

export interface SshConnectOptions {
  host: string;
  port?: number;
  user?: string;
  identityFile?: string;
  /** The environment variable that holds the identity file's passphrase. */
  passphraseEnv?: string;
  /** Use ssh-agent (SSH_AUTH_SOCK) when it is set (default true). */
  agent?: boolean;
  knownHosts?: string;
  hostKeyPolicy?: 'strict' | 'accept-new';
  /** ssh_config file to read aliases from (default ~/.ssh/config); false: none. */
  sshConfig?: string | false;
  proxyJump?: string;
  connectTimeoutMs?: number;
  keepaliveMs?: number;
  retries?: number;
}

export interface Endpoint {
  host: string;
  port: number;
  user: string;
  /** "user@host:port", for messages and as the connection's identity. */
  label: string;
  identityFiles: string[];
  knownHostsFiles: string[];
  jumps: string[];
}

const DEFAULT_IDENTITIES = ['id_ed25519', 'id_ecdsa', 'id_rsa'].map((fileName) => path.join(homedir(), '.ssh', fileName));

/**
 * Where a job's key, known_hosts and passphrase are when the target names none: the cudamatrix
 * action sets these from its ssh-* inputs (the reusable workflow's secrets, written to files under
 * RUNNER_TEMP). A target's own identityFile, knownHosts and passphraseEnv win; ~/.ssh/config and
 * the defaults come after.
 */
export const SSH_ENV = {
  identityFile: 'CUDAMATRIX_SSH_IDENTITY_FILE',
  knownHosts: 'CUDAMATRIX_SSH_KNOWN_HOSTS',
  passphrase: 'CUDAMATRIX_SSH_PASSPHRASE',
} as const;

/** The value of one of SSH_ENV's variables, or undefined when it is not set (or empty). */
export function sshEnv(name: keyof typeof SSH_ENV): string | undefined {
  return process.env[SSH_ENV[name]] || undefined;
}

/** Where the options lead, after ~/.ssh/config (OpenSSH's ssh -G where it runs). Opens no connection. */
export function resolveEndpoint(options: SshConnectOptions): Endpoint {
  const fromConfig = resolveSshConfig(options.host, options.sshConfig, { port: options.port, user: options.user });
  const host = fromConfig.hostName;
  const port = options.port ?? fromConfig.port ?? 22;
  const user = options.user ?? fromConfig.user ?? userInfo().username;
  const key = options.identityFile ?? sshEnv('identityFile');
  const knownHosts = options.knownHosts ?? sshEnv('knownHosts');
  const identityFiles = key ? [expandHome(key)] : fromConfig.identityFiles.length ? fromConfig.identityFiles : DEFAULT_IDENTITIES;
  const knownHostsFiles = knownHosts
    ? [expandHome(knownHosts)]
    : fromConfig.userKnownHostsFiles.length
      ? fromConfig.userKnownHostsFiles
      : [path.join(homedir(), '.ssh', 'known_hosts')];
  const jumpSpec = options.proxyJump ?? fromConfig.proxyJump;
  return {
    host,
    port,
    user,
    label: `${user}@${host}:${port}`,
    identityFiles,
    knownHostsFiles,
    jumps: jumpSpec ? jumpSpec.split(',').map((jump) => jump.trim()) : [],
  };
}
