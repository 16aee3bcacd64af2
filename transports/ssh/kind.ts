/** The `ssh` transport as the rest of cudamatrix knows it (transports/transport.ts says what each entry is for). */
import type { TransportKind } from '../transport.ts';
import { resolveEndpoint } from './endpoint.ts';
import { connectOptions, sshOptions, type SshOptions } from './options.ts';

/** The host an SSH login reaches, as user@host:port after ~/.ssh/config; docker's ssh:// engines name theirs so too. */
export function sshHost(options: Pick<SshOptions, 'host' | 'port' | 'user'>): string {
  return `ssh:${resolveEndpoint(connectOptions(options as SshOptions)).label}`;
}

export const ssh: TransportKind<SshOptions> = {
  description: 'a host reached over SSH (OpenSSH server on Linux or Windows)',
  options: sshOptions,
  chainable: false,
  localFiles: {
    identityFile: {
      fix: () =>
        "write the path of the private key (a relative path is taken from the matrix file's folder), or remove identityFile to use ~/.ssh/config and the default keys",
    },
    sshConfig: {
      fix: () =>
        "write the path of an existing file (a relative path is taken from the matrix file's folder), or sshConfig: false for none",
    },
    knownHosts: {
      // accept-new creates it and records the key on first use.
      createdWhen: (hop, run) => run.acceptNew || hop.hostKeyPolicy === 'accept-new',
      fix: (file, hop) =>
        `add the host's key to it (ssh-keyscan -p ${typeof hop.port === 'number' ? hop.port : 22} ${String(hop.host ?? 'HOST')} >> ${file}), or let cudamatrix create it and record the key on first use: --accept-new (or hostKeyPolicy: accept-new)`,
    },
  },
  hostKey: (options) => sshHost(options),
  machine: (options) => sshHost(options),
  secretEnvs: (options) => (options.passphraseEnv ? [options.passphraseEnv] : []),
  reached: 'host key verified, authenticated',
  fixes: {
    TARGET_UNREACHABLE: 'check the host name and port, that sshd runs there, and that no firewall is in the way',
    HOST_KEY_UNKNOWN: 'add the host key to known_hosts (ssh-keyscan), or run once with --accept-new',
    HOST_KEY_MISMATCH: 'find out why the host key changed before removing the old line from known_hosts',
    AUTH_FAILED:
      'put the public key in the remote ~/.ssh/authorized_keys, and check identityFile (the private key, not the .pub), passphraseEnv and user',
  },
  load: async () => (await import('./transport.ts')).connectSsh,
};
