/**
 * The two ways a WSL session runs commands (transports/wsl/transport.ts), through the transport API
 * against the STAND-IN wsl.exe (test/wsl/wsl-standin: no Windows machine is reachable from this
 * project's machines; see test/wsl/wsl.test.ts):
 *   - the agent, one long-lived wsl.exe per session, with a command through a wsl.exe of its own
 *     when the agent is busy;
 *   - no agent, where the hop before cannot carry a byte stream (an SSH hop to a Windows host):
 *     here a hop made from the local session without openStream. Every command then goes
 *     through a wsl.exe of its own and a guardian owns the work folder.
 * Needs root, busybox-static, ldd and ps, as test/wsl/wsl.test.ts.
 */
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { readEventLog } from '../../events/events.ts';
import { buildProbe } from '../../probes/build.ts';
import { connectLocal, nodeArch } from '../../transports/local.ts';
import type { Session } from '../../transports/transport.ts';
import { connectWsl } from '../../transports/wsl/transport.ts';
import { startCli, whenOutput } from '../cli.ts';
import { commandsAvailable, integrationAvailable, tempDir, testCacheDir } from '../helpers.ts';
import { leftInDistro, makeStandinMachine, STANDIN_TOOLS, standinProcesses, type StandinMachine } from './wsl-standin/machine.ts';

const ready =
  commandsAvailable('the WSL tests (a stand-in wsl.exe that runs distributions with chroot)', { ...STANDIN_TOOLS, ps: 'procps' }) &&
  integrationAvailable(
    'root, for the WSL tests (the stand-in wsl.exe runs distributions with chroot)',
    process.getuid?.() === 0,
    'run the tests as root',
  );

let libsOf = '';
beforeAll(async () => {
  if (!ready) return;
  libsOf = (await buildProbe({ platform: 'linux', arch: nodeArch(), cacheDir: testCacheDir })).path;
}, 180_000);

let current: StandinMachine | undefined;
const opened: Session[] = [];
function machine(): StandinMachine {
  current = makeStandinMachine([{ name: 'Ubuntu', version: 2, default: true }], { libsOf });
  Object.assign(process.env, current.env());
  return current;
}

afterEach(async () => {
  for (const session of opened.splice(0)) await session[Symbol.asyncDispose]();
  const host = current;
  current = undefined;
  if (!host) return;
  const until = Date.now() + 8000;
  for (;;) {
    const left = { processes: standinProcesses(host), dirs: leftInDistro(host, 'Ubuntu') };
    if (left.processes.length === 0 && left.dirs.length === 0) return;
    if (Date.now() > until) throw new Error(`left behind by the WSL stand-in: ${JSON.stringify(left)}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
});

/** A hop that runs commands here but cannot stream bytes (as an SSH hop to a Windows host). */
async function hopWithoutStreams(): Promise<Session> {
  const local = await connectLocal({}, { target: 'hop', runId: 'nostream' });
  opened.push(local);
  return {
    description: 'a hop without streams',
    hostKey: 'nostream',
    platform: 'linux',
    arch: local.arch,
    shell: 'posix',
    workDir: local.workDir,
    exec: (argv, options) => local.exec(argv, options),
    put: (from, to, options) => local.put(from, to, options),
    get: (from, to) => local.get(from, to),
    joinPath: (...parts) => local.joinPath(...parts),
    [Symbol.asyncDispose]: async () => undefined,
  };
}

/** The machine's stand-in wsl.exe processes (not what runs in the distribution). */
function running(host: StandinMachine): string[] {
  return standinProcesses(host).filter((processLine) => processLine.includes('standin.mjs'));
}

describe.skipIf(!ready)('a WSL session with its agent', () => {
  it('runs commands through one wsl.exe, and one of its own for a command while the agent is busy', async () => {
    const host = machine();
    const session = await connectWsl({}, { target: 't', runId: 'agent-00000001' });
    opened.push(session);
    // The agent's wsl.exe is the session's only one while nothing runs.
    expect(running(host)).toHaveLength(1);
    for (let i = 0; i < 5; i++)
      expect(await session.exec(['sh', '-c', `echo ${i}; echo e${i} >&2; exit ${i}`])).toMatchObject({
        exitCode: i,
        stdout: `${i}\n`,
        stderr: `e${i}\n`,
      });
    expect(running(host)).toHaveLength(1);
    // Two at once: both answer, each with its own output.
    const [slow, quick] = await Promise.all([session.exec(['sh', '-c', 'sleep 0.5; echo a']), session.exec(['sh', '-c', 'echo b'])]);
    expect([slow.stdout, quick.stdout]).toEqual(['a\n', 'b\n']);
    // Output that is not text, and a lot of it, arrives whole (the answer is framed by byte counts).
    const big = await session.exec(['sh', '-c', 'i=0; while [ $i -lt 20000 ]; do echo "line $i"; i=$((i+1)); done']);
    expect(big.stdout.split('\n')).toHaveLength(20001);
    expect(big.stdout.endsWith('line 19999\n')).toBe(true);
  });

  it('stops a command at its timeout and on cancellation, and keeps serving', async () => {
    machine();
    const session = await connectWsl({}, { target: 't', runId: 'agent-00000002' });
    opened.push(session);
    const slow = await session.exec(['sh', '-c', 'trap "" TERM; sleep 30; echo woke'], { timeoutMs: 1000 });
    // TERM is ignored: the KILL that follows 2 s later ends it, before its 30 s are up.
    expect(slow).toMatchObject({ timedOut: true, stdout: '' });
    const abort = new AbortController();
    setTimeout(() => abort.abort(), 500);
    expect(await session.exec(['sleep', '30'], { signal: abort.signal })).toMatchObject({ cancelled: true });
    expect(await session.exec(['echo', 'still here'])).toMatchObject({ exitCode: 0, stdout: 'still here\n' });
  });
});

describe.skipIf(!ready)('cudamatrix killed while a probe runs in the distribution', () => {
  it('leaves nothing: the agent sees its stdin end, kills the probe and removes the work folder', async () => {
    const host = machine();
    const dir = tempDir();
    const file = path.join(dir, 'matrix.yaml');
    writeFileSync(file, 'version: 1\ntargets:\n  - name: w\n    transport: {kind: wsl}\n    probes: [sysinfo]\n');
    // The probe waits 30 s before it starts (the test hook reaches the distribution through WSLENV).
    const { child, done } = startCli(['run', '-m', file, '--results-dir', path.join(dir, 'runs')], {
      env: { ...process.env, ...host.env({ CUDAPROBE_TEST_DELAY_MS: '30000', WSLENV: 'CUDAPROBE_TEST_DELAY_MS' }) },
    });
    const until = Date.now() + 60_000;
    while (!standinProcesses(host).some((processLine) => processLine.includes('cudaprobe run sysinfo')) && Date.now() < until)
      await new Promise((resolve) => setTimeout(resolve, 100));
    expect(standinProcesses(host).some((processLine) => processLine.includes('cudaprobe run sysinfo'))).toBe(true);
    child.kill('SIGKILL');
    await done;
    // afterEach: no stand-in, no probe, no folder left within 8 s (the probe would run 30 s more).
  });
});

describe.skipIf(!ready)('Ctrl-C while a probe runs in the distribution, and wsl.exe dies of it (issue 22.6)', () => {
  it('ends the started cell "cancelled", not "not run", and leaves nothing', async () => {
    // A real wsl.exe sets no console control handler: Windows' Ctrl-C, sent to every process
    // of the console, ends it, so the agent's stream ends before it reports the stopped probe
    // and the exec rejects. With the STAND-IN wsl.exe: frozen (SIGSTOP) so that it relays
    // nothing, cudamatrix interrupted, then the stand-in killed.
    const host = machine();
    const dir = tempDir();
    const file = path.join(dir, 'matrix.yaml');
    writeFileSync(file, 'version: 1\ntargets:\n  - name: w\n    transport: {kind: wsl}\n    probes: [sysinfo, event-timing]\n');
    const env = { ...process.env, ...host.env({ CUDAPROBE_TEST_DELAY_MS: '30000', WSLENV: 'CUDAPROBE_TEST_DELAY_MS' }) };
    const { child, done } = startCli(['run', '-m', file, '--results-dir', path.join(dir, 'runs')], { env });
    const until = Date.now() + 60_000;
    while (!standinProcesses(host).some((processLine) => processLine.includes('cudaprobe run sysinfo')) && Date.now() < until)
      await new Promise((resolve) => setTimeout(resolve, 100));
    const wslExes = standinProcesses(host)
      .filter((processLine) => processLine.includes('standin.mjs'))
      .map((processLine) => Number(processLine.split(/\s+/)[0]));
    expect(wslExes.length).toBeGreaterThan(0);
    for (const pid of wslExes) process.kill(pid, 'SIGSTOP');
    // Once cudamatrix says so, the run is cancelled; the frozen stand-in reported nothing.
    const stopping = whenOutput(child, 'stopping running probes', () => undefined, 'stderr');
    child.kill('SIGINT');
    await stopping;
    for (const pid of wslExes) process.kill(pid, 'SIGKILL');
    const result = await done;
    expect(result.code).toBe(130);
    const runDir = path.join(dir, 'runs', readdirSync(path.join(dir, 'runs'))[0]!);
    const cells = readEventLog(path.join(runDir, 'events.jsonl')).flatMap((e) => (e.type === 'cell-end' ? [`${e.cell}:${e.status}`] : []));
    expect(cells).toEqual(['w/sysinfo:cancelled', 'w/event-timing:not-run']);
    expect(result.stdout).not.toMatch(/2 cells not run/);
    // afterEach: no stand-in, no probe, no folder left.
  });
});

describe.skipIf(!ready)('a WSL session behind a hop that cannot stream (no agent)', () => {
  it('runs commands, moves files, passes env and stdin, stops a command at its timeout, and cleans up', async () => {
    const host = machine();
    const via = await hopWithoutStreams();
    const session = await connectWsl({}, { target: 't', runId: 'noagent-0000001', via });
    opened.push(session);
    expect(session.openStream).toBeDefined();
    await expect(session.openStream!(['cat'])).rejects.toMatchObject({ code: 'MATRIX_INVALID' });
    expect(leftInDistro(host, 'Ubuntu')).toHaveLength(1);
    const dir = tempDir();
    const bytes = Buffer.from(Array.from({ length: 5000 }, (_, i) => (i * 31) % 256));
    writeFileSync(path.join(dir, 'in.bin'), bytes);
    const remote = session.joinPath(session.workDir, 'in.bin');
    await session.put(path.join(dir, 'in.bin'), remote);
    await session.get(remote, path.join(dir, 'out.bin'));
    expect(readFileSync(path.join(dir, 'out.bin')).equals(bytes)).toBe(true);
    expect(await session.exec(['sh', '-c', 'echo "$G $(pwd)"; cat; exit 3'], { env: { G: 'a  b' }, stdin: 'in\n' })).toMatchObject({
      exitCode: 3,
      stdout: `a  b ${session.workDir}\nin\n`,
    });
    expect(await session.exec(['sleep', '30'], { timeoutMs: 1000 })).toMatchObject({ timedOut: true });
    await session[Symbol.asyncDispose]();
    opened.splice(opened.indexOf(session), 1);
    // The guardian removes nothing more: the folder is gone already (afterEach checks processes too).
    expect(leftInDistro(host, 'Ubuntu')).toHaveLength(0);
  });
});
