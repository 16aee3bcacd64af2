/**
 * Host keys against a real sshd, compared with OpenSSH's own ssh client run on the same
 * known_hosts (issue 9, SSH part, defects 1 and 2):
 *   - a host known by a key of another type than the one it shows is a changed key, refused
 *     under strict and accept-new alike, and never recorded (ssh: "REMOTE HOST IDENTIFICATION
 *     HAS CHANGED", also with StrictHostKeyChecking=accept-new);
 *   - a host known only by its ECDSA key, which also has an ed25519 key, is reached under strict
 *     (ssh asks for the known key types first).
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { tempDir } from '../helpers.ts';
import {
  doctor,
  expectNothingLeft,
  fingerprintOf,
  leftovers,
  openssh,
  runIdOf,
  runMatrix,
  settle,
  sshMatrix,
  targetErrors,
} from './ssh-helpers.ts';
import { sshdReady, startSshd, type Sshd } from '../sshd.ts';

const ready = sshdReady();

/** A throw-away ECDSA key pair: its private file and its public "type base64". */
function ecdsaKey(dir: string, name: string): { file: string; pub: string } {
  const file = path.join(dir, name);
  execFileSync('ssh-keygen', ['-q', '-t', 'ecdsa', '-N', '', '-C', 'cudamatrix-test', '-f', file]);
  return { file, pub: readFileSync(`${file}.pub`, 'utf8').trim().split(' ').slice(0, 2).join(' ') };
}

/** ed25519 only (test/sshd.ts's host key). */
let edOnly: Sshd;
/** ed25519 and ECDSA host keys. */
let both: Sshd;
let bothEcdsa: { file: string; pub: string };
beforeAll(async () => {
  if (!ready) return;
  bothEcdsa = ecdsaKey(tempDir('cm-hostkey-'), 'host_ecdsa');
  [edOnly, both] = await Promise.all([startSshd(1), startSshd(1, [`HostKey ${bothEcdsa.file}`])]);
});
afterAll(async () => {
  await Promise.all([edOnly?.stop(), both?.stop()]);
});
afterEach(async () => {
  await expectNothingLeft();
});

describe.runIf(ready)("host keys of another type than the known ones (real sshd, compared with OpenSSH's ssh)", () => {
  it('refuses a host known by an ECDSA key that shows an ed25519 key, under accept-new too; records nothing and runs nothing', async () => {
    const dir = tempDir();
    const known = ecdsaKey(dir, 'old_host_ecdsa');
    const kh = path.join(dir, 'known_hosts');
    const port = edOnly.ports[0]!;
    writeFileSync(kh, `[127.0.0.1]:${port} ${known.pub}\n`);
    const before = readFileSync(kh, 'utf8');

    // OpenSSH first: both StrictHostKeyChecking=yes and accept-new refuse, as a changed key.
    for (const strict of ['yes', 'accept-new'] as const) {
      const ssh = openssh(edOnly, { knownHosts: kh, strict });
      expect(ssh.code, ssh.stderr).toBe(255);
      expect(ssh.stderr).toContain('REMOTE HOST IDENTIFICATION HAS CHANGED');
      expect(ssh.stderr).toContain(`Offending ECDSA key in ${kh}:1`);
      expect(readFileSync(kh, 'utf8')).toBe(before);
    }

    const offered = fingerprintOf(edOnly.hostKeyPub);
    const knownFp = fingerprintOf(known.pub);
    const runs = [
      { how: '--accept-new', extra: {}, args: ['--accept-new'] },
      { how: 'hostKeyPolicy: accept-new', extra: { hostKeyPolicy: 'accept-new' }, args: [] },
      { how: 'strict', extra: {}, args: [] },
    ];
    for (const { how, extra, args } of runs) {
      const attemptDir = tempDir();
      const result = await runMatrix(
        sshMatrix(attemptDir, edOnly, [{ name: 'impostor', extra: { knownHosts: kh, ...extra } }]),
        attemptDir,
        args,
      );
      expect(result.code, how).toBe(3);
      const error = targetErrors(result.events)[0]!;
      expect(error.code, how).toBe('HOST_KEY_MISMATCH');
      expect(error.message).toContain(`ssh-ed25519 ${offered}`);
      expect(error.message).toContain(`ecdsa-sha2-nistp256 ${knownFp} at ${kh}:1`);
      expect(error.message).toContain('Nothing was run');
      expect(error.message).not.toMatch(/accept-new in the matrix|--accept-new|ssh-keyscan/);
      expect(
        result.events.some((e) => e.type === 'target-ready'),
        how,
      ).toBe(false);
      expect(readFileSync(kh, 'utf8'), how).toBe(before);
      await settle(100);
      expect(leftovers(runIdOf(result.events))).toEqual({ dirs: [], processes: [] });
    }

    // doctor says the same, and its fix does not suggest accepting the key either.
    const doctorDir = tempDir();
    const checked = await doctor([
      '--target',
      'impostor',
      '--accept-new',
      '-m',
      sshMatrix(doctorDir, edOnly, [{ name: 'impostor', extra: { knownHosts: kh } }]),
    ]);
    expect(checked.code).toBe(3);
    expect(checked.stdout).toContain('✗ HOST_KEY_MISMATCH');
    expect(checked.stdout).not.toMatch(/ssh-keyscan|--accept-new/);
    expect(readFileSync(kh, 'utf8')).toBe(before);
  });

  it('reaches a host known only by its ECDSA key, which also has an ed25519 key, under strict (as ssh -o StrictHostKeyChecking=yes does)', async () => {
    const dir = tempDir();
    const kh = path.join(dir, 'known_hosts');
    const port = both.ports[0]!;
    writeFileSync(kh, `[127.0.0.1]:${port} ${bothEcdsa.pub}\n`);
    const ssh = openssh(both, { knownHosts: kh, strict: 'yes', command: 'echo reached' });
    expect(ssh.code, ssh.stderr).toBe(0);
    expect(ssh.stdout).toBe('reached\n');

    const result = await runMatrix(sshMatrix(dir, both, [{ name: 'ecdsa-known', extra: { knownHosts: kh } }]), dir);
    expect(targetErrors(result.events)).toEqual([]);
    expect(result.code).toBe(0);
    expect(result.events.some((e) => e.type === 'target-ready')).toBe(true);
    // sysinfo ran (this machine has no driver: its no-driver path skips).
    expect(result.events.find((e) => e.type === 'cell-end' && e.probe === 'sysinfo')).toMatchObject({
      status: expect.stringMatching(/^(passed|skipped)$/),
    });
    expect(readFileSync(kh, 'utf8')).toBe(`[127.0.0.1]:${port} ${bothEcdsa.pub}\n`);
    await settle(100);
    expect(leftovers(runIdOf(result.events))).toEqual({ dirs: [], processes: [] });
  });

  it('with both types known and one of them wrong, takes the preferred type, as ssh does (ed25519 right: connects; ed25519 wrong: refused)', async () => {
    const dir = tempDir();
    const port = both.ports[0]!;
    const stranger = ecdsaKey(dir, 'stranger_ecdsa');
    const otherEd = path.join(dir, 'other_ed25519');
    execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', otherEd]);
    const otherEdPub = readFileSync(`${otherEd}.pub`, 'utf8').trim().split(' ').slice(0, 2).join(' ');

    // The right ed25519 key and a wrong ECDSA key: ssh and cudamatrix both connect.
    const good = path.join(dir, 'known_hosts.good');
    writeFileSync(good, `[127.0.0.1]:${port} ${stranger.pub}\n[127.0.0.1]:${port} ${both.hostKeyPub}\n`);
    expect(openssh(both, { knownHosts: good, strict: 'yes' }).code).toBe(0);
    const d1 = tempDir();
    const r1 = await runMatrix(sshMatrix(d1, both, [{ name: 'ed-right', extra: { knownHosts: good } }]), d1);
    expect(r1.code).toBe(0);

    // A wrong ed25519 key and the right ECDSA key: ssh shows ed25519 first and refuses; so does cudamatrix.
    const bad = path.join(dir, 'known_hosts.bad');
    writeFileSync(bad, `[127.0.0.1]:${port} ${bothEcdsa.pub}\n[127.0.0.1]:${port} ${otherEdPub}\n`);
    const ssh = openssh(both, { knownHosts: bad, strict: 'accept-new' });
    expect(ssh.code).toBe(255);
    expect(ssh.stderr).toContain(`Offending ED25519 key in ${bad}:2`);
    const d2 = tempDir();
    const r2 = await runMatrix(sshMatrix(d2, both, [{ name: 'ed-wrong', extra: { knownHosts: bad } }]), d2, ['--accept-new']);
    expect(r2.code).toBe(3);
    expect(targetErrors(r2.events)[0]).toMatchObject({
      code: 'HOST_KEY_MISMATCH',
      message: expect.stringContaining(`${fingerprintOf(otherEdPub)} at ${bad}:2`),
    });
  });

  it('refuses a @revoked host key under accept-new, as ssh does', async () => {
    const dir = tempDir();
    const kh = path.join(dir, 'known_hosts');
    writeFileSync(kh, `@revoked * ${edOnly.hostKeyPub}\n`);
    const before = readFileSync(kh, 'utf8');
    const ssh = openssh(edOnly, { knownHosts: kh, strict: 'accept-new' });
    expect(ssh.code).toBe(255);
    expect(ssh.stderr).toContain('is marked as revoked');
    const result = await runMatrix(sshMatrix(dir, edOnly, [{ name: 'revoked', extra: { knownHosts: kh } }]), dir, ['--accept-new']);
    expect(result.code).toBe(3);
    expect(targetErrors(result.events)[0]).toMatchObject({
      code: 'HOST_KEY_MISMATCH',
      message: expect.stringContaining(`marked @revoked at ${kh}:1`),
    });
    expect(readFileSync(kh, 'utf8')).toBe(before);
  });
});
