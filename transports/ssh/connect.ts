/**
 * Opening an SSH connection the way an engineer's own `ssh` would: ~/.ssh/config aliases,
 * keys from identity files (passphrase from a named environment variable) and the agent,
 * strict host-key checking against known_hosts, ProxyJump hops, a connect timeout, keepalives,
 * and bounded retries with backoff for connection failures only. Never a password.
 */
import { existsSync, readFileSync } from 'node:fs';
import type { Duplex } from 'node:stream';
import ssh2, { type AnyAuthMethod, type Client, type ConnectConfig } from 'ssh2';
import { CudamatrixError, type ErrorCode } from '../../core/errors.ts';
import type { HostKeyAdded } from '../transport.ts';
import {
  appendKnownHost,
  checkHostKey,
  fingerprint,
  hostKeyAdded,
  hostKeyAlgorithmsFor,
  hostToken,
  keyTypeOf,
  readKnownHosts,
} from './known-hosts.ts';
import { resolveEndpoint, SSH_ENV, sshEnv, type Endpoint, type SshConnectOptions } from './endpoint.ts';
import { parseJumpHop } from './ssh-config.ts';

// ssh2 is CommonJS; its named exports are reached through the default export.
const { Client: SshClient, utils } = ssh2;

interface Auth {
  methods: AnyAuthMethod[];
  description: string;
}

/** Reads and decrypts the identity files up front, so that a wrong passphrase is a clear error. */
function authFor(options: SshConnectOptions, e: Endpoint): Auth {
  const methods: AnyAuthMethod[] = [];
  const tried: string[] = [];
  const passphraseFrom = options.passphraseEnv ?? (sshEnv('passphrase') !== undefined ? SSH_ENV.passphrase : undefined);
  const passphrase = passphraseFrom ? process.env[passphraseFrom] : undefined;
  const keyFrom = options.identityFile ? 'identityFile' : sshEnv('identityFile') ? SSH_ENV.identityFile : undefined;
  if (options.passphraseEnv && passphrase === undefined) {
    throw new CudamatrixError(
      'AUTH_FAILED',
      `the environment variable ${options.passphraseEnv} (passphraseEnv) is not set; set it to the passphrase of ${e.identityFiles[0]}`,
    );
  }
  for (const file of e.identityFiles) {
    let text: Buffer;
    try {
      text = readFileSync(file);
    } catch {
      if (keyFrom)
        throw new CudamatrixError('AUTH_FAILED', `identity file ${file} cannot be read; check ${keyFrom} for target host ${options.host}`);
      continue;
    }
    const key = utils.parseKey(text, passphrase);
    const first = Array.isArray(key) ? key[0] : key;
    if (first && !(first instanceof Error) && !first.isPrivateKey()) {
      // A public key (e.g. the .pub file, under another name) cannot sign: say so, not "authorized_keys".
      throw new CudamatrixError(
        'AUTH_FAILED',
        `identity file ${file} holds a public key (${first.type}), the half that goes in the remote authorized_keys; identityFile names the private key` +
          `${existsSync(file.replace(/\.pub$/i, '')) && /\.pub$/i.test(file) ? ` (${file.replace(/\.pub$/i, '')})` : ''}`,
      );
    }
    if (key instanceof Error) {
      const encrypted = /encrypted|passphrase/i.test(key.message);
      const why = encrypted
        ? passphrase === undefined
          ? `is encrypted: name the environment variable that holds its passphrase with passphraseEnv`
          : `could not be decrypted with the passphrase from ${passphraseFrom}`
        : `is not a private key ssh2 can read (${key.message.replace(/passphrase.*$/i, '').trim()})`;
      throw new CudamatrixError('AUTH_FAILED', `identity file ${file} ${why}`);
    }
    methods.push({ type: 'publickey' as const, username: e.user, key: text, passphrase });
    tried.push(file);
  }
  if (options.agent !== false && process.env.SSH_AUTH_SOCK) {
    methods.push({ type: 'agent' as const, username: e.user, agent: process.env.SSH_AUTH_SOCK });
    tried.push(`the agent at $SSH_AUTH_SOCK`);
  }
  if (methods.length === 0) {
    throw new CudamatrixError(
      'AUTH_FAILED',
      `no key to authenticate to ${e.label} with: no identity file (${e.identityFiles.join(', ')}) and no SSH_AUTH_SOCK`,
    );
  }
  return { methods, description: tried.join(', ') };
}

class HostKeyRefusal extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
  ) {
    super(message);
  }
}

/** Checks the offered host key; accept-new records an unknown host. Returns a refusal or undefined. */
function verifyHostKey(
  e: Endpoint,
  key: Buffer,
  policy: 'strict' | 'accept-new',
  host: string,
  port: number,
  onAdded?: (added: HostKeyAdded) => void,
): HostKeyRefusal | undefined {
  const entries = readKnownHosts(e.knownHostsFiles);
  const check = checkHostKey(entries, host, port, key);
  const offered = `${keyTypeOf(key)} ${fingerprint(key)}`;
  const token = hostToken(host, port);
  switch (check.status) {
    case 'ok':
      return undefined;
    case 'revoked':
      return new HostKeyRefusal(
        'HOST_KEY_MISMATCH',
        `the host key of ${token} (${offered}) is marked @revoked at ${check.entry.file}:${check.entry.line}; nothing was run`,
      );
    case 'mismatch': {
      const known = check.known
        .map((k) => `${k.keyType} ${fingerprint(Buffer.from(k.keyBase64, 'base64'))} at ${k.file}:${k.line}`)
        .join('; ');
      const lines = [...new Set(check.known.map((k) => k.file))]
        .map(
          (file) =>
            `line ${check.known
              .filter((k) => k.file === file)
              .map((k) => k.line)
              .join(', ')} of ${file}`,
        )
        .join(' and ');
      const first = check.known[0]!;
      const what = check.sameType
        ? `the host key of ${token} has changed: it offered ${offered}, but known_hosts has ${known}`
        : `the host key of ${token} has changed: it offered ${offered}, but known_hosts knows ${token} by another key: ${known}. ` +
          `A known host that shows a key it is not known by is refused as a changed key, as OpenSSH's ssh does (StrictHostKeyChecking=yes and accept-new alike)`;
      return new HostKeyRefusal(
        'HOST_KEY_MISMATCH',
        `${what}. Nothing was run. Someone may be intercepting the connection: find out why the key changed. ` +
          `Only if the host really has a new key, remove ${lines} (ssh-keygen -R '${token}' -f ${first.file}) and add the new key`,
      );
    }
    case 'unknown':
      if (policy === 'accept-new') {
        appendKnownHost(e.knownHostsFiles[0]!, host, port, key);
        onAdded?.(hostKeyAdded(e.knownHostsFiles[0]!, host, port, key));
        return undefined;
      }
      return new HostKeyRefusal(
        'HOST_KEY_UNKNOWN',
        `${token} is not in ${e.knownHostsFiles.join(', ')} (it offered ${offered}); nothing was run. ` +
          `Add its key (ssh-keyscan -p ${port} ${host} >> ${e.knownHostsFiles[0]}), or allow it once with hostKeyPolicy: accept-new in the matrix or --accept-new`,
      );
  }
}

/**
 * ssh2's list operations: "remove" then "prepend" moves the known algorithms to the front and
 * keeps ssh2's order for the rest. (Its typings want all three operations in every such object.)
 */
function knownFirst(known: string[]): NonNullable<ConnectConfig['algorithms']>['serverHostKey'] {
  return { remove: known, prepend: known } as unknown as NonNullable<ConnectConfig['algorithms']>['serverHostKey'];
}

/**
 * The wait before retry number `attempt + 1`: 0.5 s, 1 s, 2 s, 4 s, then 5 s each (at most 10
 * retries: about 40 s of waiting in all).
 */
export function backoffMs(attempt: number): number {
  return Math.min(5000, 500 * 2 ** attempt);
}

/**
 * What the attempts were, for the final message. A refused connection (nothing listens on the
 * port) is retried like the other connection failures: an sshd being restarted (a package
 * upgrade, systemctl restart) refuses for a moment, and the default 2 retries cost 1.5 s. But
 * OpenSSH's ssh tries once (ConnectionAttempts 1), so the message says how long the retries took
 * and that retries: 0 fails at once.
 */
export function attemptsSummary(codes: (string | undefined)[], elapsedMs: number): string | undefined {
  const attempts = codes.length;
  const over = `${(elapsedMs / 1000).toFixed(1)} s`;
  if (codes.every((code) => code === CLOSED_BEFORE_HANDSHAKE)) {
    const why = 'something other than sshd listens on that port, or a firewall or proxy cuts the connection';
    return `accepted the connection and closed or reset it before the SSH handshake${attempts === 1 ? '' : ` ${attempts} times over ${over}`}: ${why}`;
  }
  if (codes.every((code) => code === 'ECONNREFUSED')) {
    const why = 'nothing listens on that port: is sshd running there, and is the port right?';
    return attempts === 1
      ? `refused: ${why}`
      : `refused ${attempts} times over ${over}; ${why} With retries: 0 it fails at once, as OpenSSH's ssh does`;
  }
  return attempts === 1 ? undefined : `${attempts} attempts over ${over}: ${codes.map((code) => code ?? 'failed').join(', ')}`;
}

/** A host that accepted the TCP connection and closed or reset it before the handshake (ssh2: "Connection lost before handshake"). */
const CLOSED_BEFORE_HANDSHAKE = 'closed before the handshake';

const RETRYABLE = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN', CLOSED_BEFORE_HANDSHAKE]);

function connectOnce(
  e: Endpoint,
  options: SshConnectOptions,
  auth: Auth,
  policy: 'strict' | 'accept-new',
  sock?: Duplex,
  onAdded?: (added: HostKeyAdded) => void,
): Promise<Client> {
  // The key types known for this host are asked for first, as OpenSSH does: otherwise a host
  // known by its ECDSA key would show its ed25519 key (ssh2's first choice) and be refused.
  const knownAlgorithms = hostKeyAlgorithmsFor(readKnownHosts(e.knownHostsFiles), e.host, e.port);
  return new Promise((resolve, reject) => {
    const client = new SshClient();
    let refusal: HostKeyRefusal | undefined;
    let settled = false;
    const fail = (err: Error & { level?: string; code?: string }) => {
      if (settled) return;
      settled = true;
      client.end();
      if (refusal) return reject(new CudamatrixError(refusal.code, refusal.message));
      if (err.level === 'client-authentication') {
        return reject(
          new CudamatrixError(
            'AUTH_FAILED',
            `authentication to ${e.label} failed with ${auth.description}: check that the key is in the remote ~/.ssh/authorized_keys and the user is right`,
          ),
        );
      }
      // Closed (ssh2's words) or reset (an RST, which only comes once TCP was accepted) before
      // the handshake: the same for the user, and which one a host gives varies with timing.
      const closedEarly = err.message === 'Connection lost before handshake' || err.code === 'ECONNRESET';
      const code = closedEarly ? CLOSED_BEFORE_HANDSHAKE : (err.code ?? (err.level === 'client-timeout' ? 'ETIMEDOUT' : undefined));
      const what =
        err.level === 'client-timeout'
          ? `no SSH handshake within ${options.connectTimeoutMs ?? 15000} ms`
          : closedEarly
            ? 'the connection was closed or reset before the SSH handshake'
            : err.message;
      const error = new CudamatrixError('TARGET_UNREACHABLE', `cannot reach ${e.label}: ${what}`, { cause: err });
      Object.assign(error, { retryable: code !== undefined && (RETRYABLE.has(code) || err.level === 'client-timeout'), errno: code });
      reject(error);
    };
    client.on('ready', () => {
      settled = true;
      resolve(client);
    });
    client.on('error', fail);
    client.on('close', () => fail(new Error('the connection closed during the handshake')));
    const config: ConnectConfig = {
      host: e.host,
      port: e.port,
      username: e.user,
      sock,
      readyTimeout: options.connectTimeoutMs ?? 15000,
      keepaliveInterval: options.keepaliveMs ?? 15000,
      keepaliveCountMax: 3,
      authHandler: [...auth.methods],
      algorithms: knownAlgorithms ? { serverHostKey: knownFirst(knownAlgorithms) } : undefined,
      hostVerifier: (key: Buffer) => {
        refusal = verifyHostKey(e, key, policy, e.host, e.port, onAdded);
        return refusal === undefined;
      },
    };
    client.connect(config);
    // Commands are small request/answer exchanges: without this, Nagle's algorithm and delayed
    // ACKs add tens of milliseconds to every round trip (measured: ~165 ms per exec, ~90 without).
    client.setNoDelay(true);
  });
}

function forwardOut(via: Client, host: string, port: number): Promise<Duplex> {
  return new Promise((resolve, reject) => {
    via.forwardOut('127.0.0.1', 0, host, port, (err, stream) =>
      err
        ? reject(new CudamatrixError('TARGET_UNREACHABLE', `the jump host could not reach ${host}:${port}: ${err.message}`))
        : resolve(stream),
    );
  });
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener(
      'abort',
      () => {
        clearTimeout(timer);
        resolve();
      },
      { once: true },
    );
  });
}

export interface OpenedConnection {
  client: Client;
  endpoint: Endpoint;
  /** The jump hosts' connections, closed with it. */
  jumps: Client[];
}

/** Connects (through ProxyJump hops), retrying connection failures only, with backoff. */
export async function openConnection(
  options: SshConnectOptions,
  ctx: { acceptNewHostKeys?: boolean; signal?: AbortSignal; onHostKeyAdded?: (added: HostKeyAdded) => void } = {},
): Promise<OpenedConnection> {
  const e = resolveEndpoint(options);
  const policy = ctx.acceptNewHostKeys ? 'accept-new' : (options.hostKeyPolicy ?? 'strict');
  const auth = authFor(options, e);
  const retries = options.retries ?? 2;
  const started = Date.now();
  /** The error code of each failed attempt, for the final message. */
  const codes: (string | undefined)[] = [];
  for (let attempt = 0; ; attempt++) {
    const jumps: Client[] = [];
    try {
      let sock: Duplex | undefined;
      for (const hop of e.jumps) {
        const j = parseJumpHop(hop);
        const jumpOptions: SshConnectOptions = {
          ...options,
          host: j.host,
          port: j.port,
          user: j.user,
          proxyJump: undefined,
          identityFile: options.identityFile,
        };
        const je = resolveEndpoint(jumpOptions);
        const jc = await connectOnce(je, jumpOptions, authFor(jumpOptions, je), policy, sock, ctx.onHostKeyAdded);
        jumps.push(jc);
        sock = undefined;
        // The next hop (or the target) is reached through this one.
        const next = jumps.length < e.jumps.length ? parseJumpHop(e.jumps[jumps.length]!) : { host: e.host, port: e.port };
        sock = await forwardOut(
          jc,
          resolveEndpoint({ ...options, host: next.host, port: next.port, proxyJump: undefined }).host,
          next.port ?? 22,
        );
      }
      const client = await connectOnce(e, options, auth, policy, sock, ctx.onHostKeyAdded);
      return { client, endpoint: e, jumps };
    } catch (error) {
      for (const j of jumps) j.end();
      const retryable = (error as { retryable?: boolean }).retryable === true;
      codes.push((error as { errno?: string }).errno);
      if (!retryable || attempt >= retries || ctx.signal?.aborted) {
        const summary = retryable ? attemptsSummary(codes, Date.now() - started) : undefined;
        if (error instanceof CudamatrixError && summary)
          throw new CudamatrixError(error.code, `${error.message} (${summary})`, { cause: error.cause });
        throw error;
      }
      await sleep(backoffMs(attempt), ctx.signal);
    }
  }
}
