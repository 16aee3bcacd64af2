/** The `ssh` transport's options, checked when the matrix is loaded (the kind is in ./kind.ts). */
import { z } from 'zod';
import type { SshConnectOptions } from './endpoint.ts';

const seconds = z.number().positive().max(3600);

/**
 * A file on this machine; a relative path is taken from the matrix file's folder, and a missing
 * file is refused at load (matrix/load.ts). cudamatrix expands "~/" but not "~user/" (which OpenSSH would): such
 * a path could only fail when the target connects, so it is refused when the matrix is loaded.
 */
const localFile = z
  .string()
  .min(1)
  .superRefine((value, ctx) => {
    if (/^~[^/]/.test(value)) {
      ctx.addIssue({
        code: 'custom',
        message: `${JSON.stringify(value)}: only "~/" (your own home) is expanded in a path, not "~user/"`,
        params: { fix: 'write the full path, or one starting with ~/' },
      });
    }
  })
  .meta({ not: { pattern: '^~[^/]' } });

/**
 * What the user meant when `host:` holds more than a host ("root@gpu-box", "10.0.0.5:2222",
 * "[::1]:2222", "ssh://gpu-box", "gpu box"): such a value could only fail at connect time (as
 * an unreachable host, exit 3); it is refused when the matrix is loaded, saying what to write.
 */
export function hostProblem(value: string): { message: string; fix: string } | undefined {
  const quoted = JSON.stringify(value);
  if (/\s/.test(value.trim()) || value.trim() !== value) {
    return {
      message: `${quoted} is not a host name: a host name or address has no spaces`,
      fix: 'write the host name, the address, or a Host alias from ~/.ssh/config alone (none has spaces)',
    };
  }
  let rest = value.replace(/^ssh:\/\//i, '');
  const parts: string[] = [];
  const at = rest.lastIndexOf('@');
  if (at > 0) {
    parts.push(`user: ${rest.slice(0, at)}`);
    rest = rest.slice(at + 1);
  }
  const bracketed = /^\[([^\]]+)\](?::(\d+))?$/.exec(rest);
  const withPort = /^([^:[\]]+):(\d+)$/.exec(rest);
  let port: string | undefined;
  if (bracketed) [rest, port] = [bracketed[1]!, bracketed[2]];
  else if (withPort) [rest, port] = [withPort[1]!, withPort[2]];
  if (parts.length === 0 && port === undefined && rest === value) return undefined;
  const what = [value.startsWith('ssh://') ? 'a URL' : '', parts.length ? 'a user' : '', port !== undefined ? 'a port' : '']
    .filter(Boolean)
    .join(' and ');
  const write = [...parts, `host: ${rest}`, ...(port !== undefined ? [`port: ${port}`] : [])];
  return {
    message: `${quoted} is not a host name: it has ${what || 'brackets'} in it (cudamatrix takes the user and the port as keys of their own)`,
    fix: `write ${write.slice(0, -1).join(', ')}${write.length > 1 ? ' and ' : ''}${write.at(-1)}`,
  };
}

const hostName = z
  .string()
  .min(1)
  .superRefine((value, ctx) => {
    const problem = hostProblem(value);
    if (problem) ctx.addIssue({ code: 'custom', message: problem.message, params: { fix: problem.fix } });
  })
  .meta({ not: { pattern: '\\s|@|^ssh://|^\\[|^[^:]*:[0-9]+$' } });

/** A private key file: a ".pub" name is the public half, which cannot authenticate. */
const identityFile = localFile
  .superRefine((value, ctx) => {
    if (/\.pub$/i.test(value)) {
      ctx.addIssue({
        code: 'custom',
        message: `${JSON.stringify(value)} is the public half of a key pair; identityFile names the private key, which stays on this machine`,
        params: { fix: `write identityFile: ${value.replace(/\.pub$/i, '')} (the same name without .pub)` },
      });
    }
  })
  .meta({ not: { pattern: '^~[^/]|\\.[pP][uU][bB]$' } });

export const sshOptions = z.strictObject({
  host: hostName.describe('Host name, address, or a Host alias from ~/.ssh/config (the user and the port go in user: and port:)'),
  port: z.number().int().min(1).max(65535).optional(),
  user: z.string().min(1).optional(),
  identityFile: identityFile
    .optional()
    .describe(
      "Private key file, not the .pub; a relative path is taken from the matrix file's folder (default: ~/.ssh/config, then ~/.ssh/id_ed25519, id_ecdsa, id_rsa)",
    ),
  passphraseEnv: z
    .string()
    .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'the name of an environment variable')
    .optional()
    .describe("Environment variable holding the identity file's passphrase (never the passphrase itself)"),
  agent: z.boolean().optional().describe('Use ssh-agent ($SSH_AUTH_SOCK) too (default true)'),
  knownHosts: localFile
    .optional()
    .describe(
      "known_hosts file; a relative path is taken from the matrix file's folder; created by accept-new when missing (default: ~/.ssh/config, then ~/.ssh/known_hosts)",
    ),
  hostKeyPolicy: z
    .enum(['strict', 'accept-new'])
    .optional()
    .describe('strict (default): unknown hosts are refused; accept-new: recorded on first use'),
  sshConfig: z
    .union([localFile, z.literal(false)])
    .optional()
    .describe('ssh_config file for aliases (default ~/.ssh/config; false: none)'),
  proxyJump: z.string().min(1).optional().describe('Jump hosts, as ssh -J takes them: user@host:port,...'),
  shell: z.enum(['auto', 'posix', 'powershell', 'cmd']).optional().describe('The remote shell (default: detected)'),
  connectTimeout: seconds.optional().describe('Seconds to wait for the SSH handshake (default 15)'),
  keepalive: seconds.optional().describe('Seconds between keepalives (default 15)'),
  retries: z
    .number()
    .int()
    .min(0)
    .max(10)
    .optional()
    .describe('Retries of a failed connection, with backoff (default 2); a probe is never re-run'),
});
export type SshOptions = z.infer<typeof sshOptions>;

export function connectOptions(options: SshOptions): SshConnectOptions {
  return {
    ...options,
    connectTimeoutMs: options.connectTimeout !== undefined ? options.connectTimeout * 1000 : undefined,
    keepaliveMs: options.keepalive !== undefined ? options.keepalive * 1000 : undefined,
  };
}
