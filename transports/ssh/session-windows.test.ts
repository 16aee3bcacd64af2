/**
 * SshSession on a Windows host, through a real sshd and ssh2: no Windows machine is reachable
 * from here, so the host's side is test/fixtures/windows-ssh-host.mjs, sshd's ForceCommand, which
 * answers the scripts session.ts sends as Win32-OpenSSH with DefaultShell PowerShell does
 * (documented behaviour, said there): PowerShell's OEM code page unless a script sets UTF-8
 * output, a command that begins with a quote split again, and a command that keeps running when
 * its channel closes. What is proved: the setup scripts' answers read back exactly for a profile
 * C:\Users\Jürgen, every script begins with `$null;` and sets UTF-8 output, a probe's stdin is
 * closed, and a timed-out or cancelled probe is ended with `taskkill /F /T /PID` of the shell PID
 * its begin marker carried, over a second channel. Not proved: what a real Windows does.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sshdReady, startSshd, type Sshd } from '../../test/sshd.ts';
import { repoRoot, tempDir } from '../../test/helpers.ts';
import { connectChain } from '../registry.ts';
import type { Session } from '../transport.ts';
import { MarkerStrip } from './channel.ts';
import { POWERSHELL_PRELUDE } from './windows-host.ts';

const ready = sshdReady();
const HOST = path.join(repoRoot, 'test', 'fixtures', 'windows-ssh-host.mjs');

interface Logged {
  pid: number;
  command?: string;
  probe?: number;
  killed?: number[];
  stdinEnded?: boolean;
}
const readLog = (file: string): Logged[] =>
  readFileSync(file, 'utf8')
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as Logged);
const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};
/** Polls until `check` holds, 20 s at most (a loaded machine is slow, never wrong). */
async function until(check: () => boolean): Promise<boolean> {
  for (let i = 0; i < 200 && !check(); i++) await new Promise((resolve) => setTimeout(resolve, 100));
  return check();
}

describe.runIf(ready).each([
  ['taskkill works', ''],
  ["taskkill fails (as Wine 8's, without /T)", 'taskkill-fails'],
])('SshSession on a Windows host with PowerShell as its shell (%s)', (_label, mode) => {
  let sshd: Sshd;
  let session: Session;
  let log: string;
  beforeAll(async () => {
    log = path.join(tempDir(), 'host.log');
    sshd = await startSshd(1, [`ForceCommand ${process.execPath} ${HOST} ${log} ${mode}`]);
    const hop = {
      kind: 'ssh',
      host: '127.0.0.1',
      port: sshd.ports[0],
      identityFile: sshd.key,
      knownHosts: sshd.knownHosts,
      sshConfig: false,
      retries: 0,
    };
    session = await connectChain([hop], { target: 't', runId: 'session-windows' });
  }, 60_000);
  afterAll(async () => {
    await session?.[Symbol.asyncDispose]();
    await sshd?.stop();
  });

  it('reads the run folder under C:\\Users\\Jürgen exactly: the scripts ask for UTF-8 output and begin with $null;', () => {
    expect(session.platform).toBe('windows');
    expect(session.workDir).toBe('C:\\Users\\Jürgen\\AppData\\Local\\Temp\\cudamatrix-6f1c2d3e-0000-4000-8000-000000000001');
    const scripts = readLog(log).flatMap((record) =>
      record.command && !record.command.startsWith('echo cm-shell-') ? [record.command] : [],
    );
    expect(scripts.length).toBeGreaterThanOrEqual(3);
    for (const script of scripts) expect(script.startsWith(POWERSHELL_PRELUDE)).toBe(true);
  });

  it("ends a timed-out probe's tree with taskkill /F /T /PID of the shell its marker named, over a second channel, and closed its stdin", async () => {
    const before = readLog(log).length;
    const result = await session.exec(['C:\\cm\\cudaprobe.exe', 'cm-timeout-probe'], { timeoutMs: 1500 });
    expect(result).toMatchObject({ timedOut: true, exitCode: null });
    const logged = readLog(log).slice(before);
    const probeShell = logged.find((record) => record.command?.includes("'cm-timeout-probe'"))!;
    const probe = logged.find((record) => record.probe !== undefined && record.pid === probeShell.pid)!.probe!;
    expect(await until(() => readLog(log).some((record) => record.pid === probeShell.pid && record.stdinEnded))).toBe(true);
    const taskkill = logged.filter((record) => record.command?.startsWith('taskkill'));
    expect(taskkill.map((record) => record.command)).toEqual([`taskkill /F /T /PID ${probeShell.pid}`]);
    if (mode === 'taskkill-fails') {
      // Nothing ended it: the run says so, on the command's stderr.
      expect(result.stderr).toContain(`cudamatrix: taskkill /F /T /PID ${probeShell.pid} on ssh `);
      expect(result.stderr).toContain(
        "failed (exit status 1: ERROR: Invalid argument/option - '/T'.); the command's processes may still be running there",
      );
      expect(alive(probe)).toBe(true);
      // Clean up what the failed taskkill left; the shell may end on its own once its probe is gone.
      for (const pid of [probe, probeShell.pid]) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch (error) {
          if ((error as NodeJS.ErrnoException).code !== 'ESRCH') throw error;
        }
      }
    } else {
      expect(await until(() => !alive(probe) && !alive(probeShell.pid))).toBe(true);
      expect(result.stderr).not.toContain('taskkill');
    }
  }, 60_000);

  it.runIf(mode === '')(
    'ends a cancelled probe the same way',
    async () => {
      const before = readLog(log).length;
      const controller = new AbortController();
      const running = session.exec(['C:\\cm\\cudaprobe.exe', 'cm-cancel-probe'], { signal: controller.signal });
      expect(
        await until(() =>
          readLog(log)
            .slice(before)
            .some((record) => record.probe !== undefined),
        ),
      ).toBe(true);
      controller.abort();
      const result = await running;
      expect(result).toMatchObject({ cancelled: true, exitCode: null });
      const logged = readLog(log).slice(before);
      const shell = logged.find((record) => record.command?.includes("'cm-cancel-probe'"))!;
      expect(logged.filter((record) => record.command?.startsWith('taskkill')).map((record) => record.command)).toEqual([
        `taskkill /F /T /PID ${shell.pid}`,
      ]);
      const probe = logged.find((record) => record.probe !== undefined)!.probe!;
      expect(await until(() => !alive(probe))).toBe(true);
    },
    60_000,
  );
});

describe("the begin marker's line", () => {
  it('gives the PID after the marker, however the line is cut, and passes what follows', () => {
    const text = 'profile\r\ncm-begin-abc 4711\r\nout\r\n';
    for (let size = 1; size <= text.length; size++) {
      const strip = new MarkerStrip('cm-begin-abc');
      const seen: string[] = [];
      strip.onLine = (rest) => seen.push(rest);
      const chunks = text.match(new RegExp(`[\\s\\S]{1,${size}}`, 'g'))!;
      expect(chunks.map((chunk) => strip.feed(chunk)).join('') + strip.end(), `chunks of ${size}`).toBe('out\r\n');
      expect(seen).toEqual(['4711']);
    }
  });
});
