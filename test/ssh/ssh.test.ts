/**
 * The SSH transport against a real OpenSSH sshd on 127.0.0.1 (started here, with its own host
 * and user keys; strict host-key checking in every test). Each failure is provoked for real, and
 * every test checks that nothing is left behind on the "remote" side: no process, no run directory.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { homedir } from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { buildProbe } from '../../probes/build.ts';
import { defaultProbeNames } from '../../probes/catalogue.ts';
import type { FactRecord, SysinfoRecord } from '../../probes/protocol.ts';
import { readEventLog, type RunEvent } from '../../events/events.ts';
import { connectChain } from '../../transports/registry.ts';
import { nodeArch } from '../../transports/local.ts';
import { startCli, whenOutput } from '../cli.ts';
import { commandsAvailable, tempDir, testCacheDir, validateJunit } from '../helpers.ts';
import {
  doctor,
  expectNothingLeft,
  leftovers,
  runIdOf,
  runMatrix,
  settle,
  sshHop as sshHopOn,
  sshMatrix,
  targetErrors,
  track,
  type SshTarget,
} from './ssh-helpers.ts';
import { freePort, keygen, sshdReady, startSshd, TEST_PASSPHRASE, type Sshd } from '../sshd.ts';

const ready = sshdReady();

let sshd: Sshd;
beforeAll(async () => {
  if (ready) sshd = await startSshd(1);
});
afterAll(async () => {
  await sshd?.stop();
});
// After every test: no run directory, helper or probe process of its runs left on the "remote" side.
afterEach(async () => {
  await expectNothingLeft();
});

function sshHop(target: SshTarget): Record<string, unknown> {
  return sshHopOn(sshd, target);
}

function matrix(dir: string, targets: (SshTarget | { name: string; local: true })[], probes = '[sysinfo]'): string {
  return sshMatrix(dir, sshd, targets, probes);
}

describe.runIf(ready)('cudamatrix run over SSH to a real sshd', () => {
  it('produces the same facts as the local run, and leaves nothing behind', async () => {
    const dir = tempDir();
    const file = matrix(dir, [{ name: 'over-ssh' }, { name: 'here', local: true }], 'all');
    const result = await runMatrix(file, dir);
    expect(result.stderr).not.toMatch(/\n\s+at /);
    expect(result.code).toBe(0);
    const cells = result.events.flatMap((e) => (e.type === 'cell-end' && e.planned ? [e] : []));
    const by = (target: string) => cells.filter((cell) => cell.target === target);
    expect(by('over-ssh').map((cell) => [cell.probe, cell.status, cell.reason])).toEqual(
      by('here').map((cell) => [cell.probe, cell.status, cell.reason]),
    );
    const facts = (target: string) =>
      by(target).flatMap((cell) =>
        cell.records
          .filter((record): record is SysinfoRecord | FactRecord => record.type === 'sysinfo' || record.type === 'fact')
          .map((record) => [cell.probe, record.name, record.value]),
      );
    expect(facts('over-ssh')).toEqual(facts('here'));
    expect(facts('over-ssh').length).toBeGreaterThan(15);
    const ready = result.events.find((e) => e.type === 'target-ready' && e.target === 'over-ssh');
    expect(ready).toMatchObject({ session: `ssh root@127.0.0.1:${sshd.ports[0]}`, platform: 'linux' });
    await validateJunit(readFileSync(path.join(dir, 'junit.xml'), 'utf8'));
    await settle();
    expect(leftovers(runIdOf(result.events))).toEqual({ dirs: [], processes: [] });
  });

  it('uploads the probe once to a per-hash cache on the remote, and a warm run skips the upload', async () => {
    const binary = await buildProbe({ platform: 'linux', arch: nodeArch(), cacheDir: testCacheDir });
    rmSync(path.join(homedir(), '.cache', 'cudamatrix', 'deployed', `linux-${nodeArch()}-${binary.hash}`), {
      recursive: true,
      force: true,
    });
    const uploaded: (boolean | undefined)[] = [];
    for (let i = 0; i < 2; i++) {
      const dir = tempDir();
      const result = await runMatrix(matrix(dir, [{ name: 'cache' }]), dir);
      expect(result.code).toBe(0);
      const ready = result.events.find((e) => e.type === 'target-ready');
      if (ready?.type !== 'target-ready') throw new Error('no target-ready');
      uploaded.push(ready.probe.uploaded);
      expect(ready.probe.path).toBe(
        path.join(homedir(), '.cache', 'cudamatrix', 'deployed', `linux-${nodeArch()}-${binary.hash}`, 'cudaprobe'),
      );
    }
    expect(uploaded).toEqual([true, false]);
  });

  it('re-uploads a cached probe whose hash no longer matches', async () => {
    const binary = await buildProbe({ platform: 'linux', arch: nodeArch(), cacheDir: testCacheDir });
    const cached = path.join(homedir(), '.cache', 'cudamatrix', 'deployed', `linux-${nodeArch()}-${binary.hash}`, 'cudaprobe');
    const dir = tempDir();
    await runMatrix(matrix(dir, [{ name: 'fill' }]), dir);
    writeFileSync(cached, '#!/bin/sh\necho tampered\n');
    const dir2 = tempDir();
    const result = await runMatrix(matrix(dir2, [{ name: 'tampered' }]), dir2);
    expect(result.code).toBe(0);
    expect(result.events.find((e) => e.type === 'target-ready')).toMatchObject({ probe: { uploaded: true } });
    expect(readFileSync(cached).equals(readFileSync(binary.path))).toBe(true);
  });

  it('authenticates with an encrypted key whose passphrase comes from the named environment variable, and never prints it', async () => {
    const dir = tempDir();
    const file = matrix(dir, [{ name: 'enc', extra: { identityFile: sshd.encryptedKey, passphraseEnv: 'CM_TEST_PASSPHRASE' } }]);
    const result = await runMatrix(file, dir, [], { CM_TEST_PASSPHRASE: TEST_PASSPHRASE });
    expect(result.code).toBe(0);
    const everything = [
      result.stdout,
      result.stderr,
      ...['events.jsonl', 'junit.xml', 'summary.json'].map((fileName) => readFileSync(path.join(result.runDir, fileName), 'utf8')),
      readFileSync(path.join(dir, 'junit.xml'), 'utf8'),
    ];
    for (const text of everything) expect(text).not.toContain(TEST_PASSPHRASE);
    // A wrong passphrase is a clear authentication error that does not repeat it either.
    const wrong = 'not-the-passphrase-42';
    const dir2 = tempDir();
    const bad = await runMatrix(
      matrix(dir2, [{ name: 'enc', extra: { identityFile: sshd.encryptedKey, passphraseEnv: 'CM_TEST_PASSPHRASE' } }]),
      dir2,
      [],
      { CM_TEST_PASSPHRASE: wrong },
    );
    expect(bad.code).toBe(3);
    expect(targetErrors(bad.events)[0]).toMatchObject({
      code: 'AUTH_FAILED',
      message: expect.stringContaining(`could not be decrypted with the passphrase from CM_TEST_PASSPHRASE`),
    });
    for (const text of [bad.stdout, bad.stderr, readFileSync(path.join(bad.runDir, 'events.jsonl'), 'utf8')]) {
      expect(text).not.toContain(wrong);
      expect(text).not.toContain(TEST_PASSPHRASE);
    }
  });

  it('authenticates through ssh-agent when no identity file is named', async () => {
    const dir = tempDir();
    const sock = path.join(dir, 'agent.sock');
    const agent = execFileSync('ssh-agent', ['-a', sock], { encoding: 'utf8' });
    const pid = /SSH_AGENT_PID=(\d+)/.exec(agent)![1]!;
    try {
      execFileSync('ssh-add', [sshd.key], { env: { ...process.env, SSH_AUTH_SOCK: sock }, stdio: 'ignore' });
      // No identity file anywhere: only the agent can authenticate.
      const file = matrix(dir, [{ name: 'via-agent', extra: { identityFile: undefined } }]);
      const result = await runMatrix(file, dir, [], { SSH_AUTH_SOCK: sock, HOME: dir });
      expect(result.code).toBe(0);
      expect(result.events.some((e) => e.type === 'target-ready')).toBe(true);
    } finally {
      process.kill(Number(pid));
    }
  });

  it('refuses a key the server does not know: AUTH_FAILED, exit 3', async () => {
    const dir = tempDir();
    const stranger = path.join(dir, 'stranger');
    keygen(stranger);
    const result = await runMatrix(matrix(dir, [{ name: 'wrong-key', extra: { identityFile: stranger } }]), dir);
    expect(result.code).toBe(3);
    expect(targetErrors(result.events)[0]).toMatchObject({
      code: 'AUTH_FAILED',
      message: expect.stringContaining(`authentication to root@127.0.0.1:${sshd.ports[0]} failed with ${stranger}`),
    });
    expect(readFileSync(path.join(dir, 'junit.xml'), 'utf8')).toContain('type="AUTH_FAILED"');
  });

  it('refuses a changed host key with both fingerprints and the line to edit, and runs nothing', async () => {
    const dir = tempDir();
    const other = path.join(dir, 'other_host');
    keygen(other);
    const otherPub = readFileSync(`${other}.pub`, 'utf8').trim().split(' ').slice(0, 2).join(' ');
    const kh = path.join(dir, 'known_hosts');
    writeFileSync(kh, `# first line\n[127.0.0.1]:${sshd.ports[0]} ${otherPub}\n`);
    const before = readFileSync(kh, 'utf8');
    const result = await runMatrix(matrix(dir, [{ name: 'mitm', extra: { knownHosts: kh } }]), dir);
    expect(result.code).toBe(3);
    const error = targetErrors(result.events)[0]!;
    expect(error.code).toBe('HOST_KEY_MISMATCH');
    const fp = (pub: string) => execFileSync('ssh-keygen', ['-lf', '-'], { input: pub, encoding: 'utf8' }).split(' ')[1]!;
    expect(error.message).toContain(fp(sshd.hostKeyPub)); // offered
    expect(error.message).toContain(`${fp(otherPub)} at ${kh}:2`); // known, with file and line
    expect(error.message).toContain(`remove line 2 of ${kh}`);
    expect(result.events.some((e) => e.type === 'target-ready')).toBe(false);
    expect(readFileSync(kh, 'utf8')).toBe(before);
    expect(leftovers(runIdOf(result.events)).dirs).toEqual([]);
  });

  it('refuses an unknown host, and with --accept-new records it and runs', async () => {
    const dir = tempDir();
    const kh = path.join(dir, 'known_hosts');
    writeFileSync(kh, '');
    const file = matrix(dir, [{ name: 'new-host', extra: { knownHosts: kh } }]);
    const refused = await runMatrix(file, dir);
    expect(refused.code).toBe(3);
    expect(targetErrors(refused.events)[0]).toMatchObject({ code: 'HOST_KEY_UNKNOWN', message: expect.stringContaining('--accept-new') });
    const dir2 = tempDir();
    const accepted = await runMatrix(file, dir2, ['--accept-new']);
    expect(accepted.code).toBe(0);
    expect(readFileSync(kh, 'utf8')).toBe(`[127.0.0.1]:${sshd.ports[0]} ${sshd.hostKeyPub}\n`);
    // Said as OpenSSH says it, with the fingerprint ssh-keygen shows, on stderr and in the log.
    const fp = execFileSync('ssh-keygen', ['-lf', '-'], { input: sshd.hostKeyPub, encoding: 'utf8' }).split(' ')[1]!;
    const added = `Permanently added '[127.0.0.1]:${sshd.ports[0]}' (ED25519, ${fp}) to ${kh}`;
    expect(accepted.stderr).toContain(`new-host: ${added}`);
    expect(accepted.stdout).not.toContain('Permanently added');
    const ready = accepted.events.find((e) => e.type === 'target-ready');
    expect(ready).toMatchObject({
      hostKeysAdded: [{ host: `[127.0.0.1]:${sshd.ports[0]}`, keyType: 'ED25519', fingerprint: fp, file: kh }],
    });
    // A key already known is not added again, and nothing is said.
    const again = await runMatrix(file, tempDir(), ['--accept-new']);
    expect(again.stderr).not.toContain('Permanently added');
    expect(again.events.find((e) => e.type === 'target-ready')).not.toHaveProperty('hostKeysAdded');
  });

  it("when sshd is killed in the middle of a run: that target's remaining cells are errors, the others finish, nothing is left behind", async () => {
    const own = await startSshd(1);
    const dir = tempDir();
    const file = matrix(
      dir,
      [
        { name: 'doomed', port: own.ports[0], extra: { knownHosts: own.knownHosts, identityFile: own.key } },
        { name: 'here', local: true },
      ],
      'all',
    );
    const { child, done } = startCli(['run', '-m', file, '--results-dir', path.join(dir, 'runs'), '--junit', path.join(dir, 'junit.xml')]);
    await whenOutput(child, /doomed\/pinned-vram/, () => own.killAll());
    const result = await done;
    const events = readEventLog(path.join(dir, 'runs', readdirSync(path.join(dir, 'runs'))[0]!, 'events.jsonl'));
    expect(result.code).toBe(3);
    const doomed = events.flatMap((e) => (e.type === 'cell-end' && e.target === 'doomed' && e.planned ? [e] : []));
    expect(doomed.length).toBe(defaultProbeNames().length);
    expect(doomed.filter((cell) => cell.status === 'error').every((cell) => cell.errorCode === 'TRANSPORT_FAILED')).toBe(true);
    // Once its connection failed, every remaining cell of the target is an error (how many cells
    // finished before the kill landed depends on the machine's load: no count is asserted).
    const firstError = doomed.findIndex((cell) => cell.status === 'error');
    expect(firstError).toBeGreaterThan(-1);
    expect(doomed.slice(firstError).map((cell) => cell.status)).toEqual(doomed.slice(firstError).map(() => 'error'));
    expect(targetErrors(events)[0]).toMatchObject({
      target: 'doomed',
      code: 'TRANSPORT_FAILED',
      message: expect.stringContaining('the SSH connection failed'),
    });
    expect(events.filter((e) => e.type === 'cell-end' && e.target === 'here' && e.planned).length).toBe(defaultProbeNames().length);
    await new Promise((res) => setTimeout(res, 2500));
    expect(leftovers(runIdOf(events))).toEqual({ dirs: [], processes: [] });
  });

  it('reports a stopped sshd as unreachable after bounded retries, while the other targets finish', async () => {
    const down = await startSshd(1);
    await down.stop();
    const dir = tempDir();
    const file = matrix(dir, [
      { name: 'down', port: down.ports[0], extra: { knownHosts: down.knownHosts, identityFile: down.key, retries: 2 } },
      { name: 'up' },
    ]);
    const started = Date.now();
    const result = await runMatrix(file, dir);
    expect(result.code).toBe(3);
    expect(targetErrors(result.events)).toEqual([
      expect.objectContaining({
        target: 'down',
        code: 'TARGET_UNREACHABLE',
        message: expect.stringMatching(
          /connect ECONNREFUSED 127\.0\.0\.1:\d+ \(refused 3 times over 1\.\d s; nothing listens on that port/,
        ),
      }),
    ]);
    expect(result.events.find((e) => e.type === 'cell-end' && e.target === 'up')).toMatchObject({ status: 'skipped' });
    // Backoff 0.5 s + 1 s between the three attempts.
    expect(Date.now() - started).toBeGreaterThan(1400);
  });

  it('does not let a host that accepts but never answers stall the others', async () => {
    const port = await freePort();
    const silent: Server = createServer(() => undefined);
    await new Promise<void>((resolve) => silent.listen(port, '127.0.0.1', () => resolve()));
    try {
      const dir = tempDir();
      const file = matrix(dir, [{ name: 'blackhole', port, extra: { connectTimeout: 1 } }, { name: 'fine' }]);
      const result = await runMatrix(file, dir);
      expect(result.code).toBe(3);
      expect(targetErrors(result.events)[0]).toMatchObject({
        target: 'blackhole',
        code: 'TARGET_UNREACHABLE',
        message: expect.stringContaining('no SSH handshake within 1000 ms'),
      });
      const fine = result.events.find((e) => e.type === 'cell-end' && e.target === 'fine');
      expect(fine).toMatchObject({ status: 'skipped' });
    } finally {
      silent.close();
    }
  });

  it('a host that accepts and then closes before the handshake: said so, retried as a reset is', async () => {
    const port = await freePort();
    let accepted = 0;
    const closing: Server = createServer((socket) => {
      accepted++;
      socket.destroy();
    });
    await new Promise<void>((resolve) => closing.listen(port, '127.0.0.1', () => resolve()));
    try {
      const dir = tempDir();
      const result = await runMatrix(matrix(dir, [{ name: 'closer', port, extra: { retries: 2 } }]), dir);
      expect(result.code).toBe(3);
      const [error] = targetErrors(result.events);
      expect(error).toMatchObject({ target: 'closer', code: 'TARGET_UNREACHABLE' });
      expect(error!.message).toMatch(
        /accepted the connection and closed or reset it before the SSH handshake 3 times over [\d.]+ s: something other than sshd listens on that port, or a firewall or proxy cuts the connection/,
      );
      // retries: 2 (the default; these tests' matrices say 0) retries it, as a reset is.
      expect(accepted).toBe(3);
    } finally {
      closing.close();
    }
  });

  it('goes through a ProxyJump host, and reads a Host alias from an ssh_config', async () => {
    const dir = tempDir();
    const config = path.join(dir, 'ssh_config');
    writeFileSync(
      config,
      [
        `Host gpu-lab`,
        `  HostName 127.0.0.1`,
        `  Port ${sshd.ports[0]}`,
        `  User root`,
        `  IdentityFile ${sshd.key}`,
        `  UserKnownHostsFile ${sshd.knownHosts}`,
        '',
      ].join('\n'),
    );
    const file = path.join(dir, 'matrix.yaml');
    writeFileSync(
      file,
      [
        'version: 1',
        'defaults: {probes: [sysinfo]}',
        'targets:',
        `  - name: alias`,
        `    transport: {kind: ssh, host: gpu-lab, sshConfig: ${config}}`,
        `  - name: jumped`,
        `    transport: {kind: ssh, host: 127.0.0.1, port: ${sshd.ports[0]}, identityFile: ${sshd.key}, knownHosts: ${sshd.knownHosts}, sshConfig: false, proxyJump: "root@127.0.0.1:${sshd.ports[0]}"}`,
        '',
      ].join('\n'),
    );
    const result = await runMatrix(file, dir);
    expect(result.code).toBe(0);
    expect(result.events.filter((e) => e.type === 'target-ready').map((e) => e.type === 'target-ready' && e.session)).toEqual([
      `ssh root@127.0.0.1:${sshd.ports[0]}`,
      `ssh root@127.0.0.1:${sshd.ports[0]}`,
    ]);
  });

  it('doctor --target checks each step and says what to fix', async () => {
    const dir = tempDir();
    const good = await doctor(['--target', 'remote', '-m', matrix(dir, [{ name: 'remote' }])]);
    // Reached, but no driver there: a ✗ line, so exit 3.
    expect(good.code).toBe(3);
    expect(good.stdout).toMatch(/✓ reachable\s+ssh root@127\.0\.0\.1:\d+: host key verified, authenticated/);
    expect(good.stdout).toMatch(/✓ platform\s+linux\/x86_64, shell posix/);
    expect(good.stdout).toMatch(/✓ cudaprobe\s+/);
    expect(good.stdout).toMatch(/✗ driver\s+no NVIDIA driver found/);
    const dir2 = tempDir();
    const stranger = path.join(dir2, 'stranger');
    keygen(stranger);
    const bad = await doctor(['--target', 'remote', '-m', matrix(dir2, [{ name: 'remote', extra: { identityFile: stranger } }])]);
    expect(bad.code).toBe(3);
    expect(bad.stdout).toContain('✗ AUTH_FAILED');
    expect(bad.stdout).toContain('fix: put the public key in the remote ~/.ssh/authorized_keys');
  });
});

describe.runIf(ready)('SSH runs: concurrency and interruption', () => {
  // ss counts the connections the run holds open.
  it.runIf(commandsAvailable('the test of one SSH connection per host', { ss: 'iproute2' }))(
    'shares one connection between the targets on one host, and runs them one at a time by default',
    async () => {
      const dir = tempDir();
      const file = matrix(dir, [{ name: 'a' }, { name: 'b' }, { name: 'c' }], 'all');
      const port = sshd.ports[0]!;
      const pending = runMatrix(file, dir);
      // Sampled until the run ends, not for a fixed 6 s: on a busy machine the run may not have
      // connected by then.
      let finished = false;
      void pending.finally(() => (finished = true));
      let most = 0;
      while (!finished) {
        await new Promise((resolve) => setTimeout(resolve, 100));
        const established = execFileSync('ss', ['-Htn', 'state', 'established', `( dport = :${port} )`], { encoding: 'utf8' }).trim();
        most = Math.max(most, established ? established.split('\n').length : 0);
      }
      const result = await pending;
      expect(result.code).toBe(0);
      expect(most).toBe(1);
      // hostConcurrency 1: a target starts only after the previous one on the host ended.
      const order = result.events
        .filter((e) => e.type === 'target-start' || (e.type === 'cell-end' && e.probe === 'windows-registry'))
        .map((e) => ('target' in e ? `${e.type}:${e.target}` : ''));
      expect(order).toEqual(['target-start:a', 'cell-end:a', 'target-start:b', 'cell-end:b', 'target-start:c', 'cell-end:c']);
    },
  );

  it('stops on Ctrl-C, writes the results of what finished, and leaves nothing on the remote side', async () => {
    const dir = tempDir();
    const file = matrix(
      dir,
      Array.from({ length: 6 }, (_, i) => ({ name: `t${i}` })),
      'all',
    );
    const { child, done } = startCli(['run', '-m', file, '--results-dir', path.join(dir, 'runs'), '--junit', path.join(dir, 'junit.xml')]);
    await whenOutput(child, '[3/', () => child.kill('SIGINT'));
    const result = await done;
    expect(result.code).toBe(130);
    const runs = readdirSync(path.join(dir, 'runs'));
    const events = readEventLog(path.join(dir, 'runs', runs[0]!, 'events.jsonl'));
    expect(events.at(-1)).toMatchObject({ type: 'run-end', interrupted: true });
    expect(events.filter((e) => e.type === 'cell-end' && e.status === 'cancelled').length).toBeGreaterThan(0);
    await validateJunit(readFileSync(path.join(dir, 'junit.xml'), 'utf8'));
    await settle();
    expect(leftovers(runIdOf(events))).toEqual({ dirs: [], processes: [] });
  });
});

describe.runIf(ready)('SSH sessions: timeouts, drops and cleanup on the remote side', () => {
  const hop = () => sshHop({ name: 'x' }) as { kind: string };

  it('kills the whole remote process tree when a command times out', async () => {
    const session = await connectChain([hop()], { target: 't', runId: track('timeout-test') });
    try {
      const result = await session.exec(['sh', '-c', 'sleep 401 & sleep 402; echo never'], { timeoutMs: 500 });
      // Ended by the TERM at its timeout (sleep 402 would run for minutes), not before it.
      expect(result).toMatchObject({ timedOut: true, exitCode: null, signal: 'SIGTERM', stdout: '' });
      expect(result.durationMs).toBeGreaterThanOrEqual(500);
      await settle();
      expect(leftovers('timeout-test', { sessionOpen: true }).processes).toEqual([]);
    } finally {
      await session[Symbol.asyncDispose]();
    }
    expect(leftovers('timeout-test')).toEqual({ dirs: [], processes: [] });
  });

  it('stops the remote tree on cancellation, and returns what was printed', async () => {
    const session = await connectChain([hop()], { target: 't', runId: track('cancel-test') });
    try {
      const controller = new AbortController();
      const pending = session.exec(['sh', '-c', 'echo started; sleep 403'], { signal: controller.signal });
      await new Promise((resolve) => setTimeout(resolve, 500));
      controller.abort();
      const result = await pending;
      expect(result).toMatchObject({ cancelled: true, stdout: 'started\n' });
      await settle();
      expect(leftovers('cancel-test', { sessionOpen: true }).processes).toEqual([]);
    } finally {
      await session[Symbol.asyncDispose]();
    }
    expect(leftovers('cancel-test')).toEqual({ dirs: [], processes: [] });
  });

  it('when sshd is killed mid-command: a transport error, and no remote process or run directory left', async () => {
    const own = await startSshd(1);
    const session = await connectChain(
      [
        {
          kind: 'ssh',
          host: '127.0.0.1',
          port: own.ports[0],
          identityFile: own.key,
          knownHosts: own.knownHosts,
          sshConfig: false,
          retries: 0,
          keepalive: 1,
        },
      ],
      { target: 't', runId: track('dropped-test') },
    );
    const workDir = session.workDir;
    expect(existsSync(workDir)).toBe(true);
    const pending = session.exec(['sh', '-c', 'sleep 404'], {});
    await new Promise((resolve) => setTimeout(resolve, 500));
    own.killAll();
    await expect(pending).rejects.toMatchObject({ code: 'TRANSPORT_FAILED' });
    await session[Symbol.asyncDispose]();
    await new Promise((resolve) => setTimeout(resolve, 2500));
    expect(leftovers('dropped-test')).toEqual({ dirs: [], processes: [] });
    expect(existsSync(workDir)).toBe(false);
  });

  it('keeps stdout, stderr and the exit status apart, and caps a flood of output', async () => {
    const session = await connectChain([hop()], { target: 't', runId: track('streams-test') });
    try {
      const result = await session.exec(['sh', '-c', 'echo out; echo err >&2; printf no-newline; exit 7']);
      expect(result).toMatchObject({ exitCode: 7, signal: null, stdout: 'out\nno-newline', stderr: 'err\n', timedOut: false });
      const flood = await session.exec(['sh', '-c', 'yes cudamatrix-flood'], { maxOutput: 100_000, timeoutMs: 20_000 });
      expect(flood).toMatchObject({ truncated: true, timedOut: false, exitCode: null });
      expect(flood.stdout.length).toBeLessThanOrEqual(100_000);
      await settle();
      expect(execFileSync('ps', ['-eo', 'args'], { encoding: 'utf8' })).not.toContain('yes cudamatrix-flood');
      // A command that reads stdin gets its own channel.
      const cat = await session.exec(['cat'], { stdin: 'from stdin\n' });
      expect(cat).toMatchObject({ exitCode: 0, stdout: 'from stdin\n' });
    } finally {
      await session[Symbol.asyncDispose]();
    }
  });

  it('copies files both ways (through cat on POSIX hosts, not SFTP)', async () => {
    const session = await connectChain([hop()], { target: 't', runId: track('sftp-test') });
    const dir = tempDir();
    try {
      const local = path.join(dir, 'up.bin');
      const payload = Buffer.from(Array.from({ length: 300_000 }, (_, i) => (i * 31) % 256));
      writeFileSync(local, payload);
      const remote = session.joinPath(session.workDir, 'up.bin');
      await session.put(local, remote, { executable: true });
      expect((await session.exec(['sh', '-c', 'test -x up.bin && wc -c < up.bin'])).stdout.trim()).toBe('300000');
      const back = path.join(dir, 'down.bin');
      await session.get(remote, back);
      expect(readFileSync(back).equals(payload)).toBe(true);
    } finally {
      await session[Symbol.asyncDispose]();
    }
  });

  it('passes adversarial arguments through the remote shell unchanged', async () => {
    const session = await connectChain([hop()], { target: 't', runId: track('quote-test') });
    try {
      const args = ['two words', "it's", 'a"b', '$HOME', '`id`', '$(id)', 'semi;colon', 'amp&', 'new\nline', 'ünï ✓', '%PATH%', '^'];
      const result = await session.exec(['printf', '%s\\0', ...args]);
      expect(result.stdout.split('\0').slice(0, -1)).toEqual(args);
      const env = await session.exec(['sh', '-c', 'printf %s "$CM_VAR"; pwd'], { env: { CM_VAR: "x 'y' $z" } });
      expect(env.stdout).toBe(`x 'y' $z${session.workDir}\n`);
    } finally {
      await session[Symbol.asyncDispose]();
    }
  });
});
