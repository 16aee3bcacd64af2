import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { commandsAvailable, tempDir } from '../test/helpers.ts';
import { execProcessTree, connectLocal, parseProcessTable, processTableCommands, processTree } from './local.ts';
import type { Session } from './transport.ts';

/** ps lists the processes, to prove a killed tree is gone. */
const havePs = commandsAvailable('the tests that kill process trees', { ps: 'procps' });

/** Processes whose command line contains `marker` (to prove a tree was really killed). */
function processesWith(marker: string): string[] {
  const out = execFileSync('ps', ['-eo', 'pid,args'], { encoding: 'utf8' });
  return out.split('\n').filter((line) => line.includes(marker) && !line.includes('ps -eo'));
}

describe('local transport', () => {
  let session: Session;
  beforeAll(async () => {
    session = await connectLocal({}, { target: 't', runId: 'test' });
  });
  afterAll(async () => {
    await session[Symbol.asyncDispose]();
  });

  it('passes argv through without a shell', async () => {
    const tricky = ['a b', '"q"', "'s'", '$HOME', '`id`', '; rm -rf /', '&&', '\n', 'ünï'];
    const result = await session.exec(['printf', '%s|', ...tricky]);
    expect(result).toMatchObject({ exitCode: 0, signal: null, timedOut: false, cancelled: false, truncated: false });
    expect(result.stdout).toBe(`${tricky.join('|')}|`);
    expect(result.command).toEqual(['printf', '%s|', ...tricky]);
  });

  it('records a non-zero exit as data', async () => {
    const result = await session.exec(['sh', '-c', 'echo out; echo err >&2; exit 7']);
    expect(result).toMatchObject({ exitCode: 7, stdout: 'out\n', stderr: 'err\n' });
    expect(result.durationMs).toBeGreaterThan(0);
  });

  it('reports a command that cannot be started', async () => {
    const result = await session.exec(['/nonexistent/cudaprobe']);
    expect(result.exitCode).toBeNull();
    expect(result.stderr).toMatch(/ENOENT|not found|no such file/i);
  });

  it('sets cwd, env and stdin', async () => {
    const result = await session.exec(['sh', '-c', 'pwd; echo "$CM_X"; cat'], {
      cwd: session.workDir,
      env: { CM_X: 'x y' },
      stdin: 'from stdin',
    });
    expect(result.stdout).toBe(`${session.workDir}\nx y\nfrom stdin`);
  });

  it.runIf(havePs)('kills the whole process tree on timeout', async () => {
    // Durations of this process's own, so that sleeps of another test run on the machine never count.
    const [firstSeconds, secondSeconds] = [300_000 + (process.pid % 100_000), 400_000 + (process.pid % 100_000)];
    const result = await session.exec(['sh', '-c', `sleep ${firstSeconds} & sleep ${secondSeconds}`], { timeoutMs: 300 });
    expect(result.timedOut).toBe(true);
    // Killed: the sleeps would run for days.
    expect(result.exitCode === null || result.signal !== null).toBe(true);
    // Both sleeps (the background one too) must be gone: polled, the kill is asynchronous.
    const mine = new RegExp(`^sleep (${firstSeconds}|${secondSeconds})$`);
    const left = () =>
      execFileSync('ps', ['-eo', 'args'], { encoding: 'utf8' })
        .split('\n')
        .filter((line) => mine.test(line.trim()));
    for (let i = 0; i < 300 && left().length > 0; i++) await new Promise((res) => setTimeout(res, 100));
    expect(left()).toEqual([]);
  });

  it('caps the output, stops the flood and says so', async () => {
    const result = await session.exec(['sh', '-c', 'yes cudamatrix'], { maxOutput: 10_000, timeoutMs: 10_000 });
    expect(result.truncated).toBe(true);
    expect(result.timedOut).toBe(false);
    expect(result.stdout.length).toBeLessThanOrEqual(10_000);
  });

  it.runIf(havePs)('stops on cancellation and returns what was printed so far', async () => {
    const controller = new AbortController();
    const marker = `cm-cancel-${process.pid}`;
    const pending = session.exec(['sh', '-c', `echo started; sleep 300; echo ${marker}`], { signal: controller.signal });
    await new Promise((res) => setTimeout(res, 300));
    controller.abort();
    const result = await pending;
    expect(result.cancelled).toBe(true);
    expect(result.stdout).toBe('started\n');
    expect(processesWith(marker)).toEqual([]);
  });

  it('copies files in and out, keeping the executable bit', async () => {
    const dir = tempDir();
    const src = path.join(dir, 'tool.sh');
    writeFileSync(src, '#!/bin/sh\necho hello from tool\n');
    const remote = session.joinPath(session.workDir, 'tool.sh');
    await session.put(src, remote, { executable: true });
    expect(statSync(remote).mode & 0o111).not.toBe(0);
    expect((await session.exec([remote])).stdout).toBe('hello from tool\n');
    const back = path.join(dir, 'back.sh');
    await session.get(remote, back);
    expect(readFileSync(back, 'utf8')).toContain('hello from tool');
  });

  it('removes its work directory when disposed', async () => {
    const localSession = await connectLocal({}, { target: 't', runId: 'dispose' });
    expect(existsSync(localSession.workDir)).toBe(true);
    await localSession[Symbol.asyncDispose]();
    expect(existsSync(localSession.workDir)).toBe(false);
  });

  it('hands the bytes whole to ExecOptions.decode: a character cut between two writes stays whole (issue 22.7)', async () => {
    // UTF-16LE of "找不到用户。" written in two pieces, the cut inside its third character.
    const bytes = Buffer.from('找不到用户。', 'utf16le');
    const script = `const b = Buffer.from('${bytes.toString('hex')}', 'hex'); process.stderr.write(b.subarray(0, 5)); setTimeout(() => process.stderr.write(b.subarray(5)), 200);`;
    const result = await execProcessTree([process.execPath, '-e', script], { decode: (buffer) => buffer.toString('utf16le') });
    expect(result.stderr).toBe('找不到用户。');
    expect(result.truncated).toBe(false);
    // Past four bytes a character of the cap, the command is stopped as a flood.
    const flood = await execProcessTree(['sh', '-c', 'while :; do echo xxxxxxxx; done'], {
      decode: (buffer) => buffer.toString('utf8'),
      maxOutput: 1000,
    });
    expect(flood.truncated).toBe(true);
    expect(flood.stdout.length).toBeLessThanOrEqual(1000);
  });

  it('runs argv directly with execProcessTree as well', async () => {
    expect((await execProcessTree(['echo', 'ok'])).stdout).toBe('ok\n');
  });
});

describe('the process table of a Windows host (the tree walk where taskkill has no /T)', () => {
  /** What Wine 8's wmic printed (UTF-16LE with a byte order mark; no space after the wide name). */
  const wine = Buffer.from(
    '\uFEFFParentProcessIDProcessID\r\n40    56    \r\n56    84    \r\n0     1248  \r\n1248  1280  \r\n1280  1316  \r\n1248  1352  \r\n',
    'utf16le',
  );
  /** What Windows' wmic writes to a pipe: the ANSI code page, CR CR LF line ends, padded columns. */
  const windows = Buffer.from(
    'ParentProcessId  ProcessId  \r\r\n0                0          \r\r\n0                4          \r\r\n4                96         \r\r\n652              7720       \r\r\n7720             7740       \r\r\n\r\r\n',
    'latin1',
  );

  it('reads both encodings and either column order, in the order listed', () => {
    expect(parseProcessTable(wine)).toEqual([
      [56, 40],
      [84, 56],
      [1248, 0],
      [1280, 1248],
      [1316, 1280],
      [1352, 1248],
    ]);
    expect(parseProcessTable(windows)).toEqual([
      [0, 0],
      [4, 0],
      [96, 4],
      [7720, 652],
      [7740, 7720],
    ]);
    const pidFirst = Buffer.from('ProcessId  ParentProcessId\r\n10         2\r\nbogus line\r\n11         10\r\n', 'latin1');
    expect(parseProcessTable(pidFirst)).toEqual([
      [10, 2],
      [11, 10],
    ]);
    expect(parseProcessTable(Buffer.from('Error: Command line not supported\r\n'))).toEqual([]);
    expect(parseProcessTable(Buffer.alloc(0))).toEqual([]);
  });

  it("lists the processes with PowerShell's Get-CimInstance first (Windows 11 24H2 has no wmic), then wmic", () => {
    // The command lines only: no PowerShell runs here (Wine's powershell.exe is a stub that prints
    // nothing, so under Wine the walk falls through to wmic, as test/windows shows).
    const [cim, wmic] = processTableCommands();
    expect(cim!.file).toBe('C:\\Windows\\System32\\WindowsPowerShell\\v1.0\\powershell.exe');
    expect(cim!.args.slice(0, 3)).toEqual(['-NoProfile', '-NonInteractive', '-Command']);
    const script = cim!.args[3]!;
    expect(script).toContain('Get-CimInstance Win32_Process | Sort-Object CreationDate |');
    expect(wmic).toEqual({
      what: 'wmic',
      file: 'C:\\Windows\\System32\\wbem\\WMIC.exe',
      args: ['process', 'get', 'ParentProcessId,ProcessId'],
    });
    // What the script writes: its header line, then its format's columns, as parseProcessTable reads them.
    const header = /^'([^']+)';/.exec(script)![1]!;
    const columns = /'\{0\} \{1\}' -f \$_\.(\w+), \$_\.(\w+)/.exec(script)!.slice(1);
    expect(header.split(' ')).toEqual(columns);
    const row = (pid: number, parent: number) => (columns[0] === 'ProcessId' ? `${pid} ${parent}` : `${parent} ${pid}`);
    expect(parseProcessTable(Buffer.from([header, row(4, 0), row(96, 4)].join('\r\n'), 'latin1'))).toEqual([
      [4, 0],
      [96, 4],
    ]);
  });

  it('takes the root and its descendants, root first, and never a process older than its named parent', () => {
    expect(processTree(1280, parseProcessTable(wine))).toEqual([1280, 1316]);
    expect(processTree(1248, parseProcessTable(wine))).toEqual([1248, 1280, 1316, 1352]);
    // services.exe (56) names 40 as its parent, a process long gone. A probe that now has PID 40
    // is listed after services.exe: services.exe is not its child.
    const reused: [number, number][] = [
      [56, 40],
      [84, 56],
      [40, 1248],
      [500, 40],
    ];
    expect(processTree(40, reused)).toEqual([40, 500]);
    // Not in the table (it could not be read): the root alone.
    expect(processTree(7, [])).toEqual([7]);
  });
});
