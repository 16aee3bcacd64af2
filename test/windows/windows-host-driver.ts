/**
 * Runs the local transport's own code as a Windows process, for test/windows/windows-host.test.ts: the
 * test bundles this file with esbuild and runs it with the Windows node.exe under Wine. It prints
 * one JSON line of what it saw; the test also looks from the Linux side (ps).
 *
 *   node.exe driver.cjs paths           the cache folder and temp folder cudamatrix uses here
 *   node.exe driver.cjs timeout MARK    a tree (node -> node -> node) past its timeout
 *   node.exe driver.cjs cancel MARK     the same tree, cancelled (what a Ctrl-C does to a cell)
 *   node.exe driver.cjs exit MARK       the same tree, and this process exits while it runs
 *   node.exe driver.cjs no-tools MARK   the timeout, with neither taskkill, PowerShell nor wmic
 *                                       (SystemRoot an empty folder)
 *
 *   node.exe driver.cjs vm-memory EXE   a WSL target's Windows host as this machine (cudamatrix on
 *                                       Windows): pinned-vram of EXE run with the host's sampler
 *                                       (probes/host-vm-memory.ts), EXE deployed to it as to a target
 *
 * The tree's processes carry MARK in their command lines, so that the test finds them with ps.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { defaultCacheDir } from '../../probes/build.ts';
import { HostVmMemory } from '../../probes/host-vm-memory.ts';
import { runProbe } from '../../probes/run-probe.ts';
import { connectLocal, execProcessTree } from '../../transports/local.ts';

const [mode, mark = 'cm-mark'] = process.argv.slice(2);

/**
 * The tree: a node that starts a grandchild, prints both PIDs, and waits. The grandchild is
 * started detached, outside the child's job object: a node.exe's own children are in its job
 * (libuv's, killed when the job's handle closes), which would end them with the child whatever
 * ended the child, as it would not end a probe's subjects (cudaprobe starts them with plain
 * CreateProcess). So only a walk of the tree ends this grandchild.
 */
const grandchild = `setInterval(() => {}, 1000); // ${mark}-grandchild`;
const child = `
const g = require('node:child_process').spawn(process.execPath, ['-e', ${JSON.stringify(grandchild)}], { stdio: 'ignore', detached: true });
console.log(JSON.stringify({ child: process.pid, grandchild: g.pid }));
setInterval(() => {}, 1000); // ${mark}-child`;

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const say = (what: object) => console.log(JSON.stringify(what));

async function tree(options: { timeoutMs?: number; signal?: AbortSignal }) {
  const result = await execProcessTree([process.execPath, '-e', child], options);
  const pids = JSON.parse(result.stdout.trim().split(/\r?\n/)[0] || '{}') as { child?: number; grandchild?: number };
  // Terminated processes take a moment to go.
  await sleep(1000);
  return {
    timedOut: result.timedOut,
    cancelled: result.cancelled,
    exitCode: result.exitCode,
    durationMs: Math.round(result.durationMs),
    pids,
    alive: Object.values(pids).filter(alive),
    stderr: result.stderr,
  };
}

async function main(): Promise<void> {
  switch (mode) {
    case 'paths': {
      const session = await connectLocal({}, { target: 't', runId: 'paths' });
      say({
        platform: process.platform,
        cacheDir: defaultCacheDir(),
        tmpdir: tmpdir(),
        localAppData: process.env.LOCALAPPDATA,
        workDir: session.workDir,
        joined: session.joinPath(session.workDir, 'cudaprobe.exe'),
        sessionPlatform: session.platform,
        shell: session.shell,
      });
      await session[Symbol.asyncDispose]();
      break;
    }
    case 'timeout':
      say(await tree({ timeoutMs: 3000 }));
      break;
    case 'no-tools': {
      // Once the tree has started (its processes keep the real SystemRoot).
      const empty = mkdtempSync(path.join(tmpdir(), 'cm-no-tools-'));
      setTimeout(() => (process.env.SystemRoot = empty), 1000);
      say(await tree({ timeoutMs: 3000 }));
      break;
    }
    case 'cancel': {
      const controller = new AbortController();
      setTimeout(() => controller.abort(), 3000);
      say(await tree({ signal: controller.signal }));
      break;
    }
    case 'exit': {
      // Started, then this process exits with the tree running: the exit handler ends it.
      void execProcessTree([process.execPath, '-e', child]);
      await sleep(3000);
      say({ exiting: process.pid });
      process.exit(0);
    }
    case 'vm-memory': {
      const exe = mark; // its second argument is EXE
      const host = await connectLocal({}, { target: 'host', runId: 'vm-memory' });
      const binary = {
        platform: 'windows' as const,
        arch: 'x86_64',
        path: mark,
        hash: 'driver',
        compiler: 'prebuilt',
        built: false,
        prebuilt: true,
      };
      const hostVm = new HostVmMemory({ session: host }, () => Promise.resolve(binary));
      const params = { sizes_gib: [0.25], register_size_gib: 0 };
      const probeRun = await hostVm.around(
        'pinned-vram',
        () => runProbe(host, { binary, remotePath: exe, uploaded: false }, 'pinned-vram', { params }),
        {},
      );
      const hostMetrics = probeRun.records.filter((record) => record.type === 'metric' && record.name.startsWith('host_vm_'));
      say({ status: probeRun.status, hostMetrics, workDir: host.workDir });
      await host[Symbol.asyncDispose]();
      break;
    }
    default:
      throw new Error(`unknown mode ${mode}`);
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
