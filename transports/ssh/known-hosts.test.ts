import { createHmac, randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { tempDir } from '../../test/helpers.ts';
import {
  appendKnownHost,
  checkHostKey,
  fingerprint,
  HOST_KEY_ALGORITHMS,
  hostKeyAlgorithmsFor,
  keyTypeOf,
  parseKnownHosts,
} from './known-hosts.ts';

// Public-key blobs in SSH wire format: a valid ssh-ed25519 / ssh-rsa header, arbitrary key bytes
// (the checks compare blobs; they never use the keys).
const KEY_A = 'AAAAC3NzaC1lZDI1NTE5AAAAIBsvR1Yw2Y8fDZ0h1m7a5mgUSvPSF9mU2n8H0r0q2yWQ';
const KEY_B = 'AAAAC3NzaC1lZDI1NTE5AAAAIOw7hA8F1m2B9FjRP7C1ZZg8mWQf2qk1y9n7s7cB4bX1';
const KEY_RSA = 'AAAAB3NzaC1yc2EAAAADAQABAAAAgQDGp2w2';
const blob = (b64: string) => Buffer.from(b64, 'base64');

function hashed(name: string): string {
  const salt = randomBytes(20);
  return `|1|${salt.toString('base64')}|${createHmac('sha1', salt).update(name).digest('base64')}`;
}

const text = [
  '# comment',
  `gpu-box,10.0.0.5 ssh-ed25519 ${KEY_A}`,
  `[127.0.0.1]:2222 ssh-ed25519 ${KEY_A}`,
  `${hashed('[lab.example]:2200')} ssh-ed25519 ${KEY_B}`,
  `*.farm,!bad.farm ssh-ed25519 ${KEY_B}`,
  `multi ssh-ed25519 ${KEY_A}`,
  `multi ssh-rsa ${KEY_RSA}`,
  `@revoked * ssh-ed25519 ${KEY_B}`,
  '@cert-authority *.ca ssh-ed25519 AAAA',
  'malformed-line-without-key',
  '',
].join('\n');
const entries = parseKnownHosts(text, '/home/u/.ssh/known_hosts');

describe('known_hosts', () => {
  it('parses plain, hashed, marked and multi-key entries, with their line numbers', () => {
    expect(entries.map((e) => [e.line, e.marker ?? '', e.hashed ? 'hashed' : e.patterns!.join(',')])).toEqual([
      [2, '', 'gpu-box,10.0.0.5'],
      [3, '', '[127.0.0.1]:2222'],
      [4, '', 'hashed'],
      [5, '', '*.farm,!bad.farm'],
      [6, '', 'multi'],
      [7, '', 'multi'],
      [8, 'revoked', '*'],
      [9, 'cert-authority', '*.ca'],
    ]);
  });

  it('accepts a known key by name, by address, by [host]:port and by hashed name', () => {
    expect(checkHostKey(entries, 'gpu-box', 22, blob(KEY_A)).status).toBe('ok');
    expect(checkHostKey(entries, '10.0.0.5', 22, blob(KEY_A)).status).toBe('ok');
    expect(checkHostKey(entries, '127.0.0.1', 2222, blob(KEY_A)).status).toBe('ok');
    expect(checkHostKey(entries, 'lab.example', 2200, blob(KEY_B)).status).toBe('revoked');
  });

  it('treats [host]:port and host:22 as different hosts', () => {
    expect(checkHostKey(entries, '127.0.0.1', 22, blob(KEY_A)).status).toBe('unknown');
    expect(checkHostKey(entries, 'gpu-box', 2222, blob(KEY_A)).status).toBe('unknown');
  });

  it('reports a changed key with the line that knows the old one', () => {
    const other = 'AAAAC3NzaC1lZDI1NTE5AAAAIHcG1u4n7k4Q0yC9y1H5wB8hU2pQm3vJ6fT0zX9aL2Rk';
    const check = checkHostKey(entries, 'gpu-box', 22, blob(other));
    expect(check.status).toBe('mismatch');
    if (check.status === 'mismatch') expect(check.known.map((k) => k.line)).toEqual([2]);
  });

  it('matches wildcards and honours negation', () => {
    expect(checkHostKey(entries, 'n1.farm', 22, blob(KEY_A)).status).toBe('mismatch');
    expect(checkHostKey(entries, 'bad.farm', 22, blob(KEY_A)).status).toBe('unknown');
  });

  it('accepts any of several keys of a host', () => {
    expect(checkHostKey(entries, 'multi', 22, blob(KEY_A)).status).toBe('ok');
    expect(checkHostKey(entries, 'multi', 22, blob(KEY_RSA)).status).toBe('ok');
  });

  it('refuses a key of another type from a host known by other keys, as OpenSSH 9 does (the host is not new)', () => {
    // gpu-box is known by its ed25519 key only; it now shows an RSA key.
    const check = checkHostKey(entries, 'gpu-box', 22, blob(KEY_RSA));
    expect(check).toMatchObject({ status: 'mismatch', sameType: false });
    if (check.status === 'mismatch') expect(check.known.map((k) => [k.line, k.keyType])).toEqual([[2, 'ssh-ed25519']]);
    // A host known only by a revoked key is unknown (OpenSSH then records a new key under accept-new).
    const onlyRevoked = parseKnownHosts(`@revoked gpu-box ssh-rsa ${KEY_RSA}\n`, 'kh');
    expect(checkHostKey(onlyRevoked, 'gpu-box', 22, blob(KEY_A)).status).toBe('unknown');
  });

  it("asks for the key types known for a host first, in ssh2's order of preference", () => {
    expect(hostKeyAlgorithmsFor(entries, 'gpu-box', 22)).toEqual(['ssh-ed25519']);
    expect(hostKeyAlgorithmsFor(entries, 'multi', 22)).toEqual(['ssh-ed25519', 'rsa-sha2-512', 'rsa-sha2-256', 'ssh-rsa']);
    expect(hostKeyAlgorithmsFor(parseKnownHosts(`h ecdsa-sha2-nistp256 AAAA\nh ssh-ed25519 AAAB\n`, 'kh'), 'h', 22)).toEqual([
      'ssh-ed25519',
      'ecdsa-sha2-nistp256',
    ]);
    expect(hostKeyAlgorithmsFor(entries, 'nowhere', 22)).toBeUndefined();
  });

  it("lists the same host-key algorithms as ssh2's default, in its order", () => {
    const require = createRequire(import.meta.url);
    const { DEFAULT_SERVER_HOST_KEY } = require('ssh2/lib/protocol/constants.js') as { DEFAULT_SERVER_HOST_KEY: string[] };
    expect(HOST_KEY_ALGORITHMS).toEqual(DEFAULT_SERVER_HOST_KEY);
  });

  it('refuses a @revoked key for every host', () => {
    expect(checkHostKey(entries, 'anything', 22, blob(KEY_B)).status).toBe('revoked');
  });

  it('prints fingerprints as OpenSSH does, and reads the key type from the blob', () => {
    expect(fingerprint(blob(KEY_A))).toMatch(/^SHA256:[A-Za-z0-9+/]{43}$/);
    expect(keyTypeOf(blob(KEY_A))).toBe('ssh-ed25519');
  });

  it('records an accepted key in the OpenSSH format, on its own line', () => {
    const file = path.join(tempDir(), 'known_hosts');
    writeFileSync(file, `gpu-box ssh-ed25519 ${KEY_A}`); // no final newline
    appendKnownHost(file, '127.0.0.1', 2200, blob(KEY_B));
    const lines = readFileSync(file, 'utf8').split('\n');
    expect(lines[1]).toBe(`[127.0.0.1]:2200 ssh-ed25519 ${KEY_B}`);
    expect(checkHostKey(parseKnownHosts(readFileSync(file, 'utf8'), file), '127.0.0.1', 2200, blob(KEY_B)).status).toBe('ok');
  });
});
