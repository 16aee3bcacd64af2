/**
 * The SSH tests' checks for what a run left behind (ssh-helpers.ts: leftovers, expectNothingLeft)
 * count only that run's own (issue 33, item 11): a probe of another test file's run, or of any
 * cudamatrix on the machine, runs from the same ~/.cache/cudamatrix/deployed/, and a doctor run
 * of another file may start in the same moments; under load they failed tests that had left
 * nothing. Stand-ins for those other runs are started here as plain processes.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, copyFileSync, mkdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findOnPath, tempDir } from '../helpers.ts';
import { sshdReady, startSshd, type Sshd } from '../sshd.ts';
import { doctor, expectNothingLeft, leftovers, sshMatrix } from './ssh-helpers.ts';

const ready = sshdReady();
let sshd: Sshd;
beforeAll(async () => {
  if (ready) sshd = await startSshd(1);
});
afterAll(async () => {
  await sshd?.stop();
});

/** Processes started here, killed after each test. */
const started: ChildProcess[] = [];
function start(file: string, args: string[], cwd: string): ChildProcess {
  // Without SSH_CONNECTION: not in a session of any sshd (as a shell's or another test's process).
  const { SSH_CONNECTION: _, ...env } = process.env;
  const child = spawn(file, args, { cwd, env, stdio: 'ignore' });
  started.push(child);
  return child;
}
function stopStarted(): void {
  for (const child of started.splice(0)) child.kill('SIGKILL');
}

describe.runIf(ready)("the SSH tests' leftover checks count only their own run's", () => {
  it("counts a process run from a cudamatrix/deployed/ folder only when it runs in the run's own directory", () => {
    // A "cudaprobe" in a cache of the kind every remote target has (it is sleep, copied).
    const deployed = path.join(tempDir('cm-home-'), '.cache', 'cudamatrix', 'deployed', 'linux-x64-0000');
    mkdirSync(deployed, { recursive: true });
    const probe = path.join(deployed, 'cudaprobe');
    copyFileSync(findOnPath('sleep')!, probe);
    chmodSync(probe, 0o755);
    const runId = `leftovers-${String(Date.now()).slice(-8)}`;
    const tag = runId.slice(-12);
    const runDir = `/tmp/cudamatrix-${tag}-${process.pid}`;
    try {
      start(probe, ['300'], tempDir());
      expect(leftovers(runId).processes).toEqual([]);
      // The same, left by this run (in its run directory): counted.
      mkdirSync(runDir);
      const own = start(probe, ['301'], runDir);
      expect(leftovers(runId)).toEqual({ dirs: [path.basename(runDir)], processes: [`${probe} 301`] });
      own.kill('SIGKILL');
    } finally {
      stopStarted();
      rmSync(runDir, { recursive: true, force: true });
    }
  });

  it("does not count another file's doctor helper that started while this file's doctor ran", async () => {
    const dir = tempDir();
    try {
      const running = doctor(['--target', 'here', '-m', sshMatrix(dir, sshd, [{ name: 'here' }])]);
      // A helper of a doctor run started now, elsewhere (its run id is doctor-<Date.now()>).
      const tag = String(Date.now() % 1e12).padStart(12, '0');
      start('sh', ['-c', 'sleep 300; :', 'cudamatrix-helper', tag, 'nonce'], dir);
      expect((await running).code).not.toBe(2);
      await expectNothingLeft();
    } finally {
      stopStarted();
    }
  }, 60_000);
});
