/**
 * Shared by the SSH test files: matrix files whose targets reach a test sshd (test/sshd.ts),
 * running them through the real CLI, the remote leftovers every test checks for (run
 * directories, probes, helpers), and OpenSSH's own client run the same way, to compare with.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, readlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { readEventLog, type RunEvent } from '../../events/events.ts';
import { runCli, type CliResult } from '../cli.ts';
import { sshdPorts, type Sshd } from '../sshd.ts';

export interface SshTarget {
  name: string;
  port?: number;
  extra?: Record<string, unknown>;
  /** More lines under the target (already indented by the caller), e.g. "    timeout: 700h". */
  lines?: string[];
}

/** The ssh hop of a target on `sshd`: its user key and known_hosts, no ssh_config, no retries. */
export function sshHop(sshd: Sshd, target: SshTarget): Record<string, unknown> {
  return {
    kind: 'ssh',
    host: '127.0.0.1',
    port: target.port ?? sshd.ports[0],
    identityFile: sshd.key,
    knownHosts: sshd.knownHosts,
    sshConfig: false,
    retries: 0,
    ...target.extra,
  };
}

/** Writes dir/matrix.yaml with these targets (each on `sshd` unless `local`). */
export function sshMatrix(dir: string, sshd: Sshd, targets: (SshTarget | { name: string; local: true })[], probes = '[sysinfo]'): string {
  const file = path.join(dir, 'matrix.yaml');
  const lines = ['version: 1', 'concurrency: 8', `defaults: {probes: ${probes}}`, 'targets:'];
  for (const target of targets) {
    lines.push(`  - name: ${target.name}`);
    lines.push(`    transport: ${'local' in target ? 'local' : JSON.stringify(sshHop(sshd, target))}`);
    if (!('local' in target)) lines.push(...(target.lines ?? []));
  }
  writeFileSync(file, `${lines.join('\n')}\n`);
  return file;
}

/** `cudamatrix run` on a matrix file, with its results in dir/runs; the run's events, if any. */
export async function runMatrix(file: string, dir: string, args: string[] = [], env: NodeJS.ProcessEnv = {}) {
  const result = await runCli(
    ['run', '-m', file, '--results-dir', path.join(dir, 'runs'), '--junit', path.join(dir, 'junit.xml'), ...args],
    {
      env,
    },
  );
  const runs = existsSync(path.join(dir, 'runs')) ? readdirSync(path.join(dir, 'runs')) : [];
  const events: RunEvent[] = runs.length ? readEventLog(path.join(dir, 'runs', runs[0]!, 'events.jsonl')) : [];
  if (events.length) runIdOf(events);
  return { ...result, events, runDir: runs.length ? path.join(dir, 'runs', runs[0]!) : '' };
}

export const runIdOf = (events: RunEvent[]): string => track((events[0] as { runId: string }).runId);

/** The run ids (and session run ids) used by the current test, checked by expectNothingLeft(). */
const used = new Set<string>();

/** Notes a run id whose leftovers expectNothingLeft() checks after the test. */
export function track(runId: string): string {
  used.add(runId);
  return runId;
}

/** The times `cudamatrix doctor --target` ran (through doctor()): its run id is "doctor-<Date.now()>". */
const doctorRuns: [number, number][] = [];

/** `cudamatrix doctor ARGS`, its run directories and helpers checked by expectNothingLeft(). */
export async function doctor(args: string[]): Promise<CliResult> {
  const from = Date.now();
  const result = await runCli(['doctor', ...args]);
  doctorRuns.push([from, Date.now()]);
  return result;
}

/**
 * The run ids of the doctor runs whose run directories or helpers are still there. Only this
 * process's: a doctor run of another test file in the same moments has a tag in the same span,
 * and its session may well still be open.
 */
function doctorIds(runs: [number, number][]): string[] {
  if (runs.length === 0) return [];
  // leftovers() looks for the last 12 characters of the run id: the last 12 digits of the time.
  const inSpan = (tag: string) => runs.some(([from, to]) => Number(tag) >= from % 1e12 && Number(tag) <= to % 1e12);
  const tags = new Set<string>();
  // A run directory is cudamatrix-TAG-PID, PID the helper that made it: ours unless that helper
  // still runs, under another sshd.
  for (const name of readdirSync('/tmp')) {
    const match = /^cudamatrix-(\d{12})-(\d+)$/.exec(name);
    if (match && inSpan(match[1]!) && (!existsSync(`/proc/${match[2]}`) || underOurSshd(match[2]!))) tags.add(match[1]!);
  }
  for (const [pid, args] of processTable()) {
    const tag = /cudamatrix-helper '?(\d{12})\b/.exec(args)?.[1];
    if (tag && inSpan(tag) && underOurSshd(pid)) tags.add(tag);
  }
  return [...tags].map((tag) => `doctor-${tag}`);
}

/** Every process of this machine's own root: [pid, args]. */
function processTable(): [string, string][] {
  // The WSL tests' stand-in distributions run cudaprobe from the same cache path inside a chroot
  // of their own, and are not an SSH test's.
  return execFileSync('ps', ['-eo', 'pid=,args='], { encoding: 'utf8' })
    .split('\n')
    .map((line) => /^\s*(\d+)\s(.*)$/.exec(line))
    .filter((match): match is RegExpExecArray => match !== null && rootOf(match[1]!) === '/')
    .map((match) => [match[1]!, match[2]!]);
}

/**
 * For afterEach: no run directory, helper or probe process of any run id the test used (its
 * CLI runs through runMatrix and doctor(), and those passed to track()). Waits up to `ms` for
 * them to go.
 */
export async function expectNothingLeft(ms = 3000): Promise<void> {
  const runs = doctorRuns.splice(0);
  const until = Date.now() + ms;
  for (;;) {
    const ids = [...used, ...doctorIds(runs)];
    const left = ids.map((id) => ({ id, ...leftovers(id) })).filter((leftover) => leftover.dirs.length || leftover.processes.length);
    if (left.length === 0) return used.clear();
    if (Date.now() > until) {
      used.clear();
      throw new Error(`left behind on the remote side: ${JSON.stringify(left)}`);
    }
    await settle(100);
  }
}

export const targetErrors = (events: RunEvent[]) => events.flatMap((e) => (e.type === 'target-error' ? [e] : []));

/**
 * Remote leftovers of one run: its run directories (in /tmp, the sessions' TMPDIR), the helpers
 * that made them (unless `sessionOpen`: a live session has one), and the processes started from
 * the probe cache in them (a command runs in its session's run directory; one left by another
 * run, of this file or another, or by any cudamatrix on the machine, is not this run's), or the
 * tests' "sleep 4NN" under this process's sshds.
 */
export function leftovers(runId: string, options: { sessionOpen?: boolean } = {}): { dirs: string[]; processes: string[] } {
  const tag = runId.replace(/[^A-Za-z0-9-]/g, '').slice(-12);
  const runDir = `/tmp/cudamatrix-${tag}-`;
  const dirs = readdirSync('/tmp').filter((name) => name.startsWith(`cudamatrix-${tag}-`));
  const helper = new RegExp(`cudamatrix-helper '?${tag}'? `);
  const processes = processTable()
    .filter(([pid, args]) => {
      if (!options.sessionOpen && helper.test(`${args} `)) return true;
      if ((args.trim().split(' ')[0] ?? '').includes('cudamatrix/deployed/')) return cwdOf(pid)?.startsWith(runDir) ?? false;
      // The tests' remote `sleep 4xx` commands: only those under this process's sshds (a
      // machine shared with other test runs and shells has sleeps of its own).
      return /^sleep 4[0-9]{2}$/.test(args.trim()) && underOurSshd(pid);
    })
    .map(([, args]) => args);
  return { dirs, processes };
}

/** The process's working directory (" (deleted)" after it when removed), or undefined when gone. */
function cwdOf(pid: string): string | undefined {
  try {
    return readlinkSync(`/proc/${pid}/cwd`);
  } catch {
    return undefined; // gone, or not ours to look at
  }
}

/** Whether the process runs in a session of one of this process's sshds (SSH_CONNECTION's server port). */
function underOurSshd(pid: string): boolean {
  try {
    const port = /(?:^|\0)SSH_CONNECTION=\S+ \d+ \S+ (\d+)(?:\0|$)/.exec(readFileSync(`/proc/${pid}/environ`, 'utf8'))?.[1];
    return port !== undefined && sshdPorts.has(Number(port));
  } catch {
    return false; // gone, or not ours to look at
  }
}

function rootOf(pid: string): string | undefined {
  try {
    return readlinkSync(`/proc/${pid}/root`);
  } catch {
    return undefined; // gone, or not ours to look at
  }
}

export async function settle(ms = 300): Promise<void> {
  await new Promise((resolve) => setTimeout(resolve, ms));
}

/** OpenSSH's fingerprint of a public key ("type base64"). */
export function fingerprintOf(pub: string): string {
  return execFileSync('ssh-keygen', ['-lf', '-'], { input: pub, encoding: 'utf8' }).split(' ')[1]!;
}

/**
 * OpenSSH's own client, run against the test sshd the way cudamatrix connects: this key, this
 * known_hosts only, no ssh_config, never a prompt. For comparing behaviour.
 */
export function openssh(
  sshd: Sshd,
  options: { port?: number; knownHosts: string; strict: 'yes' | 'accept-new'; command?: string; key?: string },
): { code: number | null; stdout: string; stderr: string } {
  const result = spawnSync(
    'ssh',
    [
      '-F',
      '/dev/null',
      '-o',
      'BatchMode=yes',
      '-o',
      'IdentitiesOnly=yes',
      '-o',
      `StrictHostKeyChecking=${options.strict}`,
      '-o',
      `UserKnownHostsFile=${options.knownHosts}`,
      '-o',
      'GlobalKnownHostsFile=/dev/null',
      '-o',
      'HashKnownHosts=no',
      '-o',
      'UpdateHostKeys=no',
      '-o',
      'ConnectTimeout=10',
      '-i',
      options.key ?? sshd.key,
      '-p',
      String(options.port ?? sshd.ports[0]),
      'root@127.0.0.1',
      options.command ?? 'true',
    ],
    { encoding: 'utf8', timeout: 30_000 },
  );
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}
