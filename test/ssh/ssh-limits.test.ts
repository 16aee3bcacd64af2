/**
 * SSH targets at the edges (issue 9, SSH part, defects 4, 5 and 6), against a real sshd:
 *   - a 700 h probe timeout (over the 2^31-1 ms a Node timer takes) runs normally;
 *   - configuration mistakes in an ssh target ("gpu box", "host:port", "user@host", a .pub
 *     identity file) are refused when the matrix is loaded (exit 2), not reported as an
 *     unreachable host (exit 3); a public key under another name is a clear AUTH_FAILED;
 *   - a refused connection: retried (an sshd being restarted refuses for a moment), and the
 *     message says how many times, for how long, and that retries: 0 fails at once as ssh does.
 */
import { copyFileSync, existsSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { connectChain } from '../../transports/registry.ts';
import { runCli } from '../cli.ts';
import { tempDir } from '../helpers.ts';
import { expectNothingLeft, openssh, runMatrix, sshHop, sshMatrix, targetErrors, track } from './ssh-helpers.ts';
import { sshdReady, startSshd, type Sshd } from '../sshd.ts';

const ready = sshdReady();

let sshd: Sshd;
beforeAll(async () => {
  if (ready) sshd = await startSshd(1);
});
afterAll(async () => {
  await sshd?.stop();
});
afterEach(async () => {
  await expectNothingLeft();
});

describe.runIf(ready)('a probe timeout longer than a Node timer takes (defect 4)', () => {
  it('runs sysinfo over SSH with timeout: 700h as with the default, and Node does not warn', async () => {
    const dir = tempDir();
    const result = await runMatrix(sshMatrix(dir, sshd, [{ name: 'patient', lines: ['    timeout: 700h'] }]), dir);
    expect(result.stderr).not.toContain('TimeoutOverflowWarning');
    expect(targetErrors(result.events)).toEqual([]);
    const cell = result.events.find((e) => e.type === 'cell-end' && e.probe === 'sysinfo');
    expect(cell).toMatchObject({ status: expect.stringMatching(/^(passed|skipped)$/) });
    expect(cell).not.toMatchObject({ errorCode: 'PROBE_TIMEOUT' });
    expect(result.code).toBe(0);
  });

  it('refuses a timeout over 30 days when the matrix is loaded (exit 2), with the line and what to write', async () => {
    const dir = tempDir();
    const file = sshMatrix(dir, sshd, [{ name: 'slip', lines: ['    timeout: 7000h'] }]);
    const result = await runCli(['run', '-m', file, '--results-dir', path.join(dir, 'runs')]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(`${file}:7:14: targets[0].timeout: "7000h" is longer than 30 days`);
    expect(result.stderr).toContain('fix: write at most 720h (30 days)');
    expect(existsSync(path.join(dir, 'runs'))).toBe(false);
  });
});

describe.runIf(ready)('configuration mistakes in an ssh target (defect 5)', () => {
  it('refuses "gpu box", "host:port", "user@host" and a .pub identity file at load: exit 2, file:line:col, what to write instead', async () => {
    const cases = [
      { extra: { host: 'gpu box' }, says: '"gpu box" is not a host name: a host name or address has no spaces' },
      { extra: { host: `127.0.0.1:${sshd.ports[0]}` }, says: `fix: write host: 127.0.0.1 and port: ${sshd.ports[0]}` },
      { extra: { host: 'root@127.0.0.1' }, says: 'fix: write user: root and host: 127.0.0.1' },
      {
        extra: { host: `ssh://root@127.0.0.1:${sshd.ports[0]}` },
        says: `fix: write user: root, host: 127.0.0.1 and port: ${sshd.ports[0]}`,
      },
      { extra: { identityFile: `${sshd.key}.pub` }, says: `fix: write identityFile: ${sshd.key} (the same name without .pub)` },
    ];
    for (const { extra, says } of cases) {
      const dir = tempDir();
      const file = sshMatrix(dir, sshd, [{ name: 'lab', extra }]);
      const result = await runCli(['run', '-m', file, '--results-dir', path.join(dir, 'runs')]);
      expect(result.code, JSON.stringify(extra)).toBe(2);
      expect(result.stderr).toMatch(
        new RegExp(`${file.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}:6:\\d+: targets\\[0\\]\\.transport\\.(host|identityFile): `),
      );
      expect(result.stderr).toContain(says);
      expect(result.stderr).not.toMatch(/root@root@|TARGET_UNREACHABLE|authorized_keys/);
      expect(existsSync(path.join(dir, 'runs')), JSON.stringify(extra)).toBe(false);
    }
  });

  it('says a public key is the public half when it is the identity file under another name, or comes from an ssh_config (AUTH_FAILED, no authorized_keys advice)', async () => {
    const dir = tempDir();
    const disguised = path.join(dir, 'id_lab');
    copyFileSync(`${sshd.key}.pub`, disguised);
    const result = await runMatrix(sshMatrix(dir, sshd, [{ name: 'pubkey', extra: { identityFile: disguised, agent: false } }]), dir);
    expect(result.code).toBe(3);
    const error = targetErrors(result.events)[0]!;
    expect(error).toMatchObject({ code: 'AUTH_FAILED' });
    expect(error.message).toContain(
      `identity file ${disguised} holds a public key (ssh-ed25519), the half that goes in the remote authorized_keys; identityFile names the private key`,
    );
    expect(error.message).not.toContain('check that the key is in the remote');

    const dir2 = tempDir();
    const config = path.join(dir2, 'ssh_config');
    writeFileSync(config, `Host 127.0.0.1\n  IdentityFile ${sshd.key}.pub\n`);
    const r2 = await runMatrix(
      sshMatrix(dir2, sshd, [{ name: 'from-config', extra: { identityFile: undefined, sshConfig: config, agent: false } }]),
      dir2,
    );
    expect(r2.code).toBe(3);
    expect(targetErrors(r2.events)[0]).toMatchObject({
      code: 'AUTH_FAILED',
      message: expect.stringContaining(
        `holds a public key (ssh-ed25519), the half that goes in the remote authorized_keys; identityFile names the private key (${sshd.key})`,
      ),
    });
  });
});

describe.runIf(ready)('a refused connection (defect 6)', () => {
  let down: Sshd;
  beforeAll(async () => {
    down = await startSshd(1);
    await down.stop();
  });

  it("fails at once with retries: 0, as OpenSSH's ssh does; with retries: 2 it says it was refused 3 times over 1.5 s", async () => {
    const port = down.ports[0]!;
    const ssh = openssh(down, { knownHosts: down.knownHosts, strict: 'yes' });
    expect(ssh.code).toBe(255);
    expect(ssh.stderr).toContain('Connection refused');

    // Refused once (the message counts the refusals when there are more): no retry.
    await expect(
      connectChain([sshHop(down, { name: 'x', extra: { retries: 0 } }) as { kind: string }], { target: 'x', runId: track('refused-0') }),
    ).rejects.toMatchObject({
      code: 'TARGET_UNREACHABLE',
      message: `cannot reach root@127.0.0.1:${port}: connect ECONNREFUSED 127.0.0.1:${port} (refused: nothing listens on that port: is sshd running there, and is the port right?)`,
    });

    const startedAt = Date.now();
    const retried = connectChain([sshHop(down, { name: 'x', extra: { retries: 2 } }) as { kind: string }], {
      target: 'x',
      runId: track('refused-2'),
    });
    await expect(retried).rejects.toMatchObject({
      code: 'TARGET_UNREACHABLE',
      message: expect.stringMatching(
        new RegExp(
          `^cannot reach root@127\\.0\\.0\\.1:${port}: connect ECONNREFUSED 127\\.0\\.0\\.1:${port} \\(refused 3 times over \\d+\\.\\d s; nothing listens on that port: is sshd running there, and is the port right\\? With retries: 0 it fails at once, as OpenSSH's ssh does\\)$`,
        ),
      ),
    });
    const ms = Date.now() - startedAt;
    expect(ms).toBeGreaterThanOrEqual(1500);
  });

  it('reaches an sshd that comes back while the retries wait (what the retries are for)', async () => {
    const back = await startSshd(1);
    await back.stop();
    const pending = connectChain([sshHop(back, { name: 'x', extra: { retries: 2 } }) as { kind: string }], {
      target: 'x',
      runId: track('refused-then-up'),
    });
    await new Promise((resolve) => setTimeout(resolve, 200));
    await back.restart();
    const session = await pending;
    try {
      expect((await session.exec(['echo', 'back'])).stdout).toBe('back\n');
    } finally {
      await session[Symbol.asyncDispose]();
      await back.stop();
    }
  });
});
