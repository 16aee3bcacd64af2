/**
 * Host keys checked the way OpenSSH checks them: known_hosts files with plain and hashed
 * (|1|salt|hash) names, [host]:port for other ports, several keys per host, wildcard and
 * negated patterns, and @revoked keys. A changed key (or a known host offering a key type it is
 * not known by) is refused with the fingerprints and the file and line to edit; an unknown host
 * is refused unless accept-new, which records it.
 */
import { createHash, createHmac } from 'node:crypto';
import { appendFileSync, existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { makeDir } from '../../core/fs.ts';
import type { HostKeyAdded } from '../transport.ts';
import { sshGlob } from './glob.ts';

export interface KnownHost {
  file: string;
  line: number;
  marker?: 'revoked' | 'cert-authority';
  /** Plain patterns ("gpu-box", "[10.0.0.5]:2222", "*.lab", "!bad.lab"), or a hashed name. */
  patterns?: string[];
  hashed?: { salt: Buffer; hash: Buffer };
  keyType: string;
  keyBase64: string;
}

export function parseKnownHosts(text: string, file: string): KnownHost[] {
  const entries: KnownHost[] = [];
  text.split('\n').forEach((raw, i) => {
    const line = raw.trim();
    if (!line || line.startsWith('#')) return;
    const fields = line.split(/\s+/);
    let marker: KnownHost['marker'];
    if (fields[0]?.startsWith('@')) {
      const markerField = fields.shift()!;
      if (markerField === '@revoked') marker = 'revoked';
      else if (markerField === '@cert-authority') marker = 'cert-authority';
      else return;
    }
    const [names, keyType, keyBase64] = fields;
    if (!names || !keyType || !keyBase64) return;
    const entry: KnownHost = { file, line: i + 1, marker, keyType, keyBase64 };
    const hashed = /^\|1\|([^|]+)\|([^|]+)$/.exec(names);
    if (hashed) entry.hashed = { salt: Buffer.from(hashed[1]!, 'base64'), hash: Buffer.from(hashed[2]!, 'base64') };
    else entry.patterns = names.split(',');
    entries.push(entry);
  });
  return entries;
}

/** The name OpenSSH looks a host up by: "host" on port 22, "[host]:port" otherwise. */
export function hostToken(host: string, port: number): string {
  return port === 22 ? host : `[${host}]:${port}`;
}

export function matchesHost(entry: KnownHost, host: string, port: number): boolean {
  const token = hostToken(host, port);
  if (entry.hashed) {
    const digest = createHmac('sha1', entry.hashed.salt).update(token).digest();
    return digest.equals(entry.hashed.hash);
  }
  let matched = false;
  for (const pattern of entry.patterns ?? []) {
    if (pattern.startsWith('!')) {
      if (sshGlob(pattern.slice(1)).test(token)) return false;
    } else if (sshGlob(pattern).test(token)) {
      matched = true;
    }
  }
  return matched;
}

/** OpenSSH's fingerprint: SHA256, base64 without padding. */
export function fingerprint(keyBlob: Buffer): string {
  return `SHA256:${createHash('sha256').update(keyBlob).digest('base64').replace(/=+$/, '')}`;
}

/** The key type as OpenSSH names it in messages: ED25519, ECDSA, RSA (the wire name otherwise). */
export function keyTypeLabel(keyBlob: Buffer): string {
  const type = keyTypeOf(keyBlob);
  if (type === 'ssh-ed25519') return 'ED25519';
  if (type.startsWith('ecdsa-sha2-')) return 'ECDSA';
  if (type === 'ssh-rsa' || type.startsWith('rsa-sha2-')) return 'RSA';
  return type;
}

export function hostKeyAdded(file: string, host: string, port: number, keyBlob: Buffer): HostKeyAdded {
  return { host: hostToken(host, port), keyType: keyTypeLabel(keyBlob), fingerprint: fingerprint(keyBlob), file };
}

/** The key type inside an SSH wire-format public key ("ssh-ed25519"). */
export function keyTypeOf(keyBlob: Buffer): string {
  const len = keyBlob.readUInt32BE(0);
  return keyBlob.subarray(4, 4 + len).toString('latin1');
}

export type HostKeyCheck =
  | { status: 'ok'; entry: KnownHost }
  | { status: 'revoked'; entry: KnownHost }
  /**
   * The host is known, but not by the offered key. `sameType`: a key of the offered type is
   * known (the key changed); otherwise only keys of other types are (OpenSSH 9 refuses that too,
   * under StrictHostKeyChecking=yes and accept-new alike: "REMOTE HOST IDENTIFICATION HAS CHANGED").
   */
  | { status: 'mismatch'; known: KnownHost[]; sameType: boolean }
  | { status: 'unknown' };

/** The plain (not @revoked, not @cert-authority) entries for a host: the keys it is known by. */
export function knownKeysFor(entries: KnownHost[], host: string, port: number): KnownHost[] {
  return entries.filter((e) => !e.marker && matchesHost(e, host, port));
}

/**
 * Checks an offered host key as OpenSSH 9 does (checked against its ssh client):
 *   - a @revoked key is refused, whatever else is known;
 *   - a known key for this host is accepted;
 *   - a host that has any known key (of any type) but not this one is a mismatch, also when
 *     only other key types are known: the host is not new, so accept-new must not record it;
 *   - a host with no plain entry (none, or only @revoked ones) is unknown.
 */
export function checkHostKey(entries: KnownHost[], host: string, port: number, keyBlob: Buffer): HostKeyCheck {
  const b64 = keyBlob.toString('base64');
  const revoked = entries.find((e) => e.marker === 'revoked' && e.keyBase64 === b64);
  if (revoked) return { status: 'revoked', entry: revoked };
  const forHost = knownKeysFor(entries, host, port);
  const same = forHost.find((e) => e.keyBase64 === b64);
  if (same) return { status: 'ok', entry: same };
  const sameType = forHost.filter((e) => e.keyType === keyTypeOf(keyBlob));
  if (sameType.length > 0) return { status: 'mismatch', known: sameType, sameType: true };
  if (forHost.length > 0) return { status: 'mismatch', known: forHost, sameType: false };
  return { status: 'unknown' };
}

/**
 * The host-key algorithms to offer, with those of the key types already known for the host
 * first (in ssh2's order of preference), as OpenSSH orders them: a host known by its ECDSA key
 * that also has an ed25519 key then shows the known one. Undefined: nothing known, ssh2's default.
 */
export function hostKeyAlgorithmsFor(entries: KnownHost[], host: string, port: number): string[] | undefined {
  const types = new Set(knownKeysFor(entries, host, port).map((e) => e.keyType));
  const known = HOST_KEY_ALGORITHMS.filter((algorithm) =>
    types.has(algorithm === 'rsa-sha2-512' || algorithm === 'rsa-sha2-256' ? 'ssh-rsa' : algorithm),
  );
  return known.length ? known : undefined;
}

/** ssh2's default host-key algorithms, in its order of preference (ssh2 1.x, Node with Ed25519). */
export const HOST_KEY_ALGORITHMS = [
  'ssh-ed25519',
  'ecdsa-sha2-nistp256',
  'ecdsa-sha2-nistp384',
  'ecdsa-sha2-nistp521',
  'rsa-sha2-512',
  'rsa-sha2-256',
  'ssh-rsa',
];

export function readKnownHosts(files: string[]): KnownHost[] {
  return files.flatMap((file) => (existsSync(file) ? parseKnownHosts(readFileSync(file, 'utf8'), file) : []));
}

/** Records a newly accepted key (accept-new), as `ssh -o StrictHostKeyChecking=accept-new` does. */
export function appendKnownHost(file: string, host: string, port: number, keyBlob: Buffer): void {
  makeDir(path.dirname(file), 'the folder of the known_hosts file');
  const text = existsSync(file) ? readFileSync(file, 'utf8') : '';
  const sep = text === '' || text.endsWith('\n') ? '' : '\n';
  appendFileSync(file, `${sep}${hostToken(host, port)} ${keyTypeOf(keyBlob)} ${keyBlob.toString('base64')}\n`, { mode: 0o600 });
}
