/**
 * A login shell that prints (issue 9, SSH part, defect 3), against a real sshd: root's bash
 * reads ~/.bashrc for commands sshd runs, and many hosts greet from there ("Welcome to
 * gpu-node-7"), on stdout or stderr, or hang in it. OpenSSH's `ssh host cmd` works in that state
 * (its sftp does not); cudamatrix must work too, and never leave a run directory behind.
 *
 * The test environment: the test sshd sets HOME for its sessions (sshd_config `SetEnv
 * HOME=<temp dir>`), so root's login shell reads a throw-away ~/.bashrc there. The real
 * /root/.bashrc is neither read nor touched. Plus a pre-auth `Banner`. And a login shell that
 * refuses (nologin, issue 33 item 5): its test makes a user of its own and removes it after.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { connectChain } from '../../transports/registry.ts';
import { integrationAvailable, tempDir } from '../helpers.ts';
import {
  doctor,
  expectNothingLeft,
  leftovers,
  openssh,
  runIdOf,
  runMatrix,
  settle,
  sshHop,
  sshMatrix,
  targetErrors,
  track,
} from './ssh-helpers.ts';
import { sshdReady, startSshd, type Sshd } from '../sshd.ts';

const rootShell = (() => {
  try {
    return execFileSync('getent', ['passwd', 'root'], { encoding: 'utf8' }).trim().split(':').at(-1) ?? '';
  } catch {
    return '';
  }
})();
const ready =
  sshdReady() &&
  integrationAvailable("root's login shell bash (it reads $HOME/.bashrc)", rootShell.endsWith('/bash'), "make bash root's login shell");

const GREETING = 'Welcome to gpu-node-7';

/** A home whose .bashrc prints on stdout (a line, then text without a newline) and on stderr. */
function chattyHome(rc: string): string {
  const home = tempDir('cm-home-');
  writeFileSync(path.join(home, '.bashrc'), rc);
  mkdirSync(path.join(home, '.ssh'));
  return home;
}

let chatty: Sshd;
let home: string;
beforeAll(async () => {
  if (!ready) return;
  home = chattyHome(`echo "${GREETING}"\necho "Last backup: never (cm-setup 1 2 /x)" >&2\nprintf 'motd without a newline'\n`);
  const banner = path.join(home, 'banner.txt');
  writeFileSync(banner, 'Authorized use only. cm-setup Linux x86_64 /not/a/dir\n');
  chatty = await startSshd(1, [`SetEnv HOME=${home}`, `Banner ${banner}`]);
});
afterAll(async () => {
  await chatty?.stop();
});
afterEach(async () => {
  await expectNothingLeft();
});

describe.runIf(ready)('a login shell that prints text (real sshd, ~/.bashrc chatter on stdout and stderr, a Banner)', () => {
  it("is the state we mean: OpenSSH's ssh runs a command there (its sftp breaks)", () => {
    const ssh = openssh(chatty, { knownHosts: chatty.knownHosts, strict: 'yes', command: 'echo reached' });
    expect(ssh.code, ssh.stderr).toBe(0);
    expect(ssh.stdout).toBe(`${GREETING}\nmotd without a newlinereached\n`);
    expect(ssh.stderr).toContain('Last backup: never');
    const sftp = spawnSync(
      'sftp',
      [
        '-F',
        '/dev/null',
        '-b',
        '-',
        '-o',
        'BatchMode=yes',
        '-o',
        `UserKnownHostsFile=${chatty.knownHosts}`,
        '-o',
        'GlobalKnownHostsFile=/dev/null',
        '-i',
        chatty.key,
        '-P',
        String(chatty.ports[0]),
        'root@127.0.0.1',
      ],
      { input: 'pwd\n', encoding: 'utf8', timeout: 30_000 },
    );
    expect(sftp.status).not.toBe(0);
    expect(sftp.stderr).toMatch(/Received message too long|Connection closed/);
  });

  it('runs the probes, uploads and then reuses the probe, and leaves nothing behind', async () => {
    const uploaded: unknown[] = [];
    for (let i = 0; i < 2; i++) {
      const dir = tempDir();
      const result = await runMatrix(sshMatrix(dir, chatty, [{ name: 'chatty' }]), dir);
      expect(targetErrors(result.events)).toEqual([]);
      expect(result.code).toBe(0);
      const ready = result.events.find((e) => e.type === 'target-ready');
      if (ready?.type !== 'target-ready') throw new Error('no target-ready');
      expect(ready).toMatchObject({ session: `ssh root@127.0.0.1:${chatty.ports[0]}`, platform: 'linux' });
      expect(String(ready.probe.path).startsWith(path.join(home, '.cache', 'cudamatrix', 'deployed'))).toBe(true);
      uploaded.push(ready.probe.uploaded);
      expect(result.events.find((e) => e.type === 'cell-end' && e.probe === 'sysinfo')).toMatchObject({
        status: expect.stringMatching(/^(passed|skipped)$/),
      });
      expect(`${result.stdout}${result.stderr}${readFileSync(path.join(result.runDir, 'events.jsonl'), 'utf8')}`).not.toMatch(
        /Welcome to gpu-node-7|Last backup|motd without|Authorized use/,
      );
      await settle();
      expect(leftovers(runIdOf(result.events))).toEqual({ dirs: [], processes: [] });
    }
    expect(uploaded).toEqual([true, false]);
  });

  it("keeps the rc files' output out of every command's output, on the helper and on channels of their own, and copies files both ways", async () => {
    const session = await connectChain([sshHop(chatty, { name: 'x' }) as { kind: string }], {
      target: 't',
      runId: track('chatty-session'),
    });
    const workDir = session.workDir;
    try {
      expect(existsSync(workDir)).toBe(true);
      expect(await session.exec(['sh', '-c', 'echo out; echo err >&2'])).toMatchObject({ exitCode: 0, stdout: 'out\n', stderr: 'err\n' });
      // A command that reads stdin runs on a channel of its own, through the login shell again.
      expect(await session.exec(['sh', '-c', 'cat; echo err >&2; exit 3'], { stdin: 'from stdin\n' })).toMatchObject({
        exitCode: 3,
        stdout: 'from stdin\n',
        stderr: 'err\n',
      });
      expect(await session.exec(['true'], { stdin: '' })).toMatchObject({ exitCode: 0, stdout: '', stderr: '' });
      const dir = tempDir();
      const local = path.join(dir, 'up.bin');
      // Bytes that look like what the transport looks for, and every byte value.
      const payload = Buffer.concat([
        Buffer.from('cm-get-0000\ncm-put-1111\n'),
        Buffer.from(Array.from({ length: 300_000 }, (_, i) => (i * 31) % 256)),
      ]);
      writeFileSync(local, payload);
      const remote = session.joinPath(workDir, 'up.bin');
      await session.put(local, remote, { executable: true });
      expect((await session.exec(['sh', '-c', 'test -x up.bin && wc -c < up.bin'])).stdout.trim()).toBe(String(payload.length));
      const back = path.join(dir, 'down.bin');
      await session.get(remote, back);
      expect(readFileSync(back).equals(payload)).toBe(true);
      await expect(session.get(session.joinPath(workDir, 'missing'), path.join(dir, 'missing'))).rejects.toMatchObject({
        code: 'TRANSPORT_FAILED',
        message: expect.stringContaining('No such file'),
      });
      await expect(session.put(local, '/nonexistent-cm-dir/x')).rejects.toMatchObject({
        code: 'TRANSPORT_FAILED',
        message: expect.not.stringMatching(/Welcome|Last backup/),
      });
    } finally {
      await session[Symbol.asyncDispose]();
    }
    expect(existsSync(workDir)).toBe(false);
    await settle();
    expect(leftovers('chatty-session')).toEqual({ dirs: [], processes: [] });
  });

  it('doctor --target says each step worked (not "the connection broke")', async () => {
    const dir = tempDir();
    const result = await doctor(['--target', 'chatty', '-m', sshMatrix(dir, chatty, [{ name: 'chatty' }])]);
    expect(result.stdout).toMatch(/✓ reachable\s+ssh root@127\.0\.0\.1:\d+: host key verified, authenticated/);
    expect(result.stdout).toMatch(/✓ platform\s+linux\/\w+, shell posix/);
    expect(result.stdout).toMatch(/✓ cudaprobe\s+/);
    expect(result.stdout).not.toMatch(/TRANSPORT_FAILED|connection broke/);
  });
});

describe.runIf(ready)('a login shell that hangs (real sshd, ~/.bashrc sleeps longer than connectTimeout)', () => {
  let slow: Sshd;
  let woke: string;
  beforeAll(async () => {
    const home = chattyHome(`echo "${GREETING}"\nsleep 6\ntouch "$HOME/woke"\n`);
    woke = path.join(home, 'woke');
    slow = await startSshd(1, [`SetEnv HOME=${home}`]);
  });
  afterAll(async () => {
    await slow?.stop();
  });

  it('fails within connectTimeout with what the shell printed, and leaves no run directory once the shell goes on', async () => {
    for (const shell of ['auto', 'posix']) {
      const runId = track(`slow-shell-${shell}`);
      rmSync(woke, { force: true });
      const attempt = connectChain([sshHop(slow, { name: 'x', extra: { connectTimeout: 1, shell } }) as { kind: string }], {
        target: 't',
        runId,
      });
      await expect(attempt).rejects.toMatchObject({ code: 'TRANSPORT_FAILED', message: expect.stringMatching(/within 1000 ms/) });
      await expect(attempt).rejects.toMatchObject({ message: expect.stringContaining(GREETING) });
      // It did not wait for the shell: that is still asleep.
      expect(existsSync(woke)).toBe(false);
      // The shell wakes up and starts the helper on a channel that is gone.
      await vi.waitUntil(() => existsSync(woke), { timeout: 60_000, interval: 250 });
      await settle(1000);
      expect(leftovers(runId), shell).toEqual({ dirs: [], processes: [] });
    }
  });
});

describe.runIf(ready)('an account with a nologin shell and a missing home (real sshd, a user made for the test)', () => {
  // A name of this process's own, so that parallel runs do not share (or remove) one another's.
  const user = `cmnl${process.pid}`;
  let sshd: Sshd;
  beforeAll(async () => {
    // -p '*': no password, but not locked (sshd without PAM refuses a locked account's keys).
    execFileSync('useradd', ['--no-create-home', '--home-dir', '/nonexistent', '--shell', '/usr/sbin/nologin', '-p', '*', user]);
    // The test keys' authorized_keys lies in folders only root may enter: sshd reads it for the
    // user as root, through a command.
    const keys = path.join(tempDir('cm-keys-'), 'authorized_keys');
    sshd = await startSshd(1, [`Match User ${user}`, `  AuthorizedKeysCommand /bin/cat ${keys}`, '  AuthorizedKeysCommandUser root']);
    copyFileSync(path.join(sshd.dir, 'authorized_keys'), keys);
  });
  afterAll(async () => {
    await sshd?.stop();
    spawnSync('userdel', [user]);
  });

  it("says what the account's shell and sshd printed, each once and whole", async () => {
    const dir = tempDir();
    const result = await runMatrix(sshMatrix(dir, sshd, [{ name: 'nologin', extra: { user } }]), dir);
    expect(result.code).toBe(3);
    const [error] = targetErrors(result.events);
    const printed = /it printed: (.*)$/.exec(error?.message ?? '')?.[1];
    expect(printed, error?.message).toBe(
      'This account is currently not available. | Could not chdir to home directory /nonexistent: No such file or directory',
    );
    const out = `${result.stdout}${result.stderr}`;
    expect(out.split('Could not chdir').length - 1, out).toBe(out.split('This account is currently').length - 1);
  });
});
