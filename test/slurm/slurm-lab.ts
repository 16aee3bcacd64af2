/**
 * A real Slurm cluster on 127.0.0.1 for the tests: munged with a key, socket and pid file of its
 * own, slurmctld, and one slurmd per node on the same host (`slurmd -N n1`, a Port= each), with
 * state, spool, log and pid files in a temp folder of its own, free ports, and fake GPUs: character
 * devices made with mknod, listed with File= in gres.conf (one per node). Every process runs with
 * SLURM_CONF naming this lab's slurm.conf, which is how the lab finds what it (and the jobs the
 * tests submit) left behind. Started as root (slurmd runs job steps as their user); stopped by PID.
 */
import { execFile, execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import path from 'node:path';
import { commandsAvailable, integrationAvailable, tempDir } from '../helpers.ts';
import { freePort } from '../sshd.ts';

export const SLURM_LAB_TOOLS = {
  munged: 'munge',
  slurmctld: 'slurmctld',
  slurmd: 'slurmd',
  srun: 'slurm-client',
  salloc: 'slurm-client',
  sinfo: 'slurm-client',
  squeue: 'slurm-client',
  scancel: 'slurm-client',
  scontrol: 'slurm-client',
  mknod: 'coreutils',
};

/** Whether a lab can start here: the daemons and client tools, and root; else skip (or fail in CI) saying so. */
export function slurmReady(): boolean {
  return (
    commandsAvailable('the Slurm tests (a real slurmctld/slurmd/munge on 127.0.0.1)', SLURM_LAB_TOOLS) &&
    integrationAvailable(
      'root, for the Slurm tests (slurmd runs job steps as their user)',
      process.getuid?.() === 0,
      'run the tests as root',
    )
  );
}

export interface SlurmLab {
  dir: string;
  /** The lab's slurm.conf: SLURM_CONF for every Slurm command of the tests. */
  conf: string;
  /** { SLURM_CONF }: the environment a CLI run (or an sshd's sessions) needs to reach this lab. */
  env: Record<string, string>;
  nodes: string[];
  partition: string;
  /** Runs a Slurm client command against the lab; resolves with its stdout (rejects on a failure). */
  slurm(command: string, ...args: string[]): Promise<string>;
  /** The jobs in the queue, one line each: "ID NAME STATE REASON NODES". */
  queue(): Promise<string[]>;
  /** `sinfo` states per node: { n1: 'idle', n2: 'drain' }. */
  nodeStates(): Promise<Record<string, string>>;
  /** Processes started by the lab's jobs (steps, their tasks, sruns and sallocs), not the daemons: "PID ARGS". */
  jobProcesses(): string[];
  /**
   * Polls until the queue is empty and no job process is left, for `ms` at most; returns what
   * is left then (both empty when all is gone).
   */
  settled(ms?: number): Promise<{ queue: string[]; processes: string[] }>;
  /** Stops the lab's munged (by PID) and waits for it to exit: the cluster's authentication down. */
  stopMunge(): Promise<void>;
  /** Starts the lab's munged again after stopMunge(), and waits until it answers. */
  startMunge(): Promise<void>;
  /** Puts a node back to idle after a test drained it or took it down. */
  resume(node: string): Promise<void>;
  /**
   * Kills what jobs left (by PID), stops every daemon by PID and waits for each to exit; returns
   * the job processes it had to kill and the lab's processes left after (both none normally).
   */
  stop(): Promise<string[]>;
}

const PARTITION = 'gpu';

/** Runs a command with the lab's environment; stdout, or a rejection with its stderr. */
function run(file: string, args: string[], env: Record<string, string>, timeoutMs = 30_000): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(file, args, { env: { ...process.env, ...env }, timeout: timeoutMs, encoding: 'utf8' }, (error, stdout, stderr) => {
      if (error) reject(new Error(`${file} ${args.join(' ')}: ${stderr.trim() || error.message}`));
      else resolve(stdout);
    });
  });
}

async function poll<T>(what: string, ms: number, check: () => Promise<T | undefined>): Promise<T> {
  const until = Date.now() + ms;
  let last: unknown;
  for (;;) {
    try {
      const outcome = await check();
      if (outcome !== undefined) return outcome;
    } catch (error) {
      last = error;
    }
    if (Date.now() > until)
      throw new Error(`the Slurm lab: ${what} did not happen within ${ms / 1000} s${last ? ` (${String(last)})` : ''}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/** What a job leaves running: Slurm's own processes of a job, and every task (they have SLURM_JOB_ID). */
const JOB_COMMANDS = new Set(['srun', 'salloc', 'sbatch', 'slurmstepd']);

/**
 * The processes of this lab's jobs (their environment names this slurm.conf: the lab's daemons
 * and the tests' processes pass it on), less `except`: "PID ARGS".
 */
function processesWithConf(conf: string, except: Set<number>): string[] {
  const found: string[] = [];
  const needle = Buffer.from(`SLURM_CONF=${conf}\0`);
  for (const entry of readdirSync('/proc')) {
    const pid = Number(entry);
    if (!Number.isInteger(pid) || pid === process.pid || except.has(pid)) continue;
    try {
      const environ = readFileSync(`/proc/${pid}/environ`);
      if (!environ.includes(needle)) continue;
      const comm = readFileSync(`/proc/${pid}/comm`, 'utf8').trim();
      const ofJob = JOB_COMMANDS.has(comm) || comm.startsWith('slurmstepd') || environ.includes('\0SLURM_JOB_ID=');
      // Once the daemons are stopped (no exceptions), they count too.
      const daemon = except.size === 0 && ['munged', 'slurmctld', 'slurmd', 'slurmscriptd'].includes(comm);
      if (!ofJob && !daemon) continue;
      const args = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ').trim();
      found.push(`${pid} ${args}`);
    } catch {
      // gone meanwhile, or a zombie
    }
  }
  return found;
}

export async function startSlurmLab(nodeCount = 2): Promise<SlurmLab> {
  const dir = tempDir('cm-slurm-lab-');
  const nodes = Array.from({ length: nodeCount }, (_, i) => `n${i + 1}`);
  const mungeDir = path.join(dir, 'munge');
  for (const subdir of ['state', 'spool', 'log', 'dev']) mkdirSync(path.join(dir, subdir));
  // munged wants its key private and its socket's folder reachable by everyone.
  mkdirSync(mungeDir, { mode: 0o755 });
  chmodSync(mungeDir, 0o755);
  const key = path.join(mungeDir, 'munge.key');
  writeFileSync(key, Buffer.from(Array.from({ length: 1024 }, () => Math.floor(Math.random() * 256))), { mode: 0o600 });
  const socket = path.join(mungeDir, 'munge.socket');
  const conf = path.join(dir, 'slurm.conf');
  const env = { SLURM_CONF: conf };
  const host = hostname().split('.')[0]!;
  const [ctldPort, slurmdPort, ...nodePorts] = await Promise.all(Array.from({ length: nodeCount + 2 }, () => freePort()));

  // One fake GPU per node: NVIDIA's character device numbers (195, n), under the lab's folder.
  const gpus = nodes.map((node, i) => {
    const file = path.join(dir, 'dev', `nvidia${i}`);
    execFileSync('mknod', [file, 'c', '195', String(i)]);
    return { node: node, file };
  });
  writeFileSync(
    path.join(dir, 'gres.conf'),
    ['AutoDetect=off', ...gpus.map((gpu) => `NodeName=${gpu.node} Name=gpu File=${gpu.file}`), ''].join('\n'),
  );
  writeFileSync(
    conf,
    [
      'ClusterName=cmlab',
      `SlurmctldHost=${host}(127.0.0.1)`,
      `SlurmctldPort=${ctldPort}`,
      `SlurmdPort=${slurmdPort}`,
      'SlurmUser=root',
      'SlurmdUser=root',
      'AuthType=auth/munge',
      'CredType=cred/munge',
      `AuthInfo=socket=${socket}`,
      `StateSaveLocation=${path.join(dir, 'state')}`,
      `SlurmdSpoolDir=${path.join(dir, 'spool', '%n')}`,
      `SlurmctldPidFile=${path.join(dir, 'slurmctld.pid')}`,
      `SlurmdPidFile=${path.join(dir, 'slurmd.%n.pid')}`,
      `SlurmctldLogFile=${path.join(dir, 'log', 'slurmctld.log')}`,
      `SlurmdLogFile=${path.join(dir, 'log', 'slurmd.%n.log')}`,
      'ProctrackType=proctrack/linuxproc',
      'TaskPlugin=task/none',
      'SelectType=select/cons_tres',
      'SelectTypeParameters=CR_Core',
      'GresTypes=gpu',
      // The nodes as written here, not the host's own count (both share one machine).
      'SlurmdParameters=config_overrides',
      'ReturnToService=1',
      'MpiDefault=none',
      'JobAcctGatherType=jobacct_gather/none',
      'AccountingStorageType=accounting_storage/none',
      // Slurm's default is 30 s; 2 s may SIGKILL a lifeline under load before its trap removes the
      // work directory (one was left once in a full CI run).
      'KillWait=10',
      'MinJobAge=2',
      ...nodes.map(
        (node, i) =>
          `NodeName=${node} NodeHostname=${host} NodeAddr=127.0.0.1 Port=${nodePorts[i]} CPUs=2 RealMemory=1000 Gres=gpu:1 State=UNKNOWN`,
      ),
      `PartitionName=${PARTITION} Nodes=${nodes.join(',')} Default=YES MaxTime=INFINITE State=UP`,
      '',
    ].join('\n'),
  );

  const daemons: ChildProcess[] = [];
  const daemonEnv = { ...process.env, ...env };
  const startDaemon = (file: string, args: string[], log: string): ChildProcess => {
    const out = path.join(dir, 'log', log);
    const child = spawn(file, args, { env: daemonEnv, stdio: ['ignore', 'pipe', 'pipe'] });
    const chunks: Buffer[] = [];
    child.stdout!.on('data', (chunk: Buffer) => chunks.push(chunk));
    child.stderr!.on('data', (chunk: Buffer) => chunks.push(chunk));
    child.once('exit', () => writeFileSync(out, Buffer.concat(chunks)));
    daemons.push(child);
    return child;
  };
  const daemonPids = () => new Set(daemons.map((daemon) => daemon.pid!).filter(Boolean));

  const stopDaemon = async (daemon: ChildProcess): Promise<void> => {
    if (daemon.exitCode !== null || daemon.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => daemon.once('exit', () => resolve()));
    daemon.kill('SIGTERM');
    const timer = setTimeout(() => daemon.kill('SIGKILL'), 20_000);
    await exited;
    clearTimeout(timer);
  };
  let munged: ChildProcess | undefined;
  const startMunged = async (): Promise<void> => {
    const child = startDaemon(
      'munged',
      [
        '-F',
        '--force',
        `--key-file=${key}`,
        `--socket=${socket}`,
        `--pid-file=${path.join(mungeDir, 'munged.pid')}`,
        `--log-file=${path.join(dir, 'log', 'munged.log')}`,
        `--seed-file=${path.join(mungeDir, 'munged.seed')}`,
      ],
      'munged.out',
    );
    munged = child;
    // Answering: a credential made and decoded (its socket alone may be a stopped one's).
    await poll('munged answering', 30_000, async () => {
      if (child.exitCode !== null) throw new Error('munged exited');
      if (!existsSync(socket)) return undefined;
      const credential = await run('munge', [`--socket=${socket}`, '--no-input'], env);
      await new Promise<void>((resolve, reject) => {
        const unmunge = execFile('unmunge', [`--socket=${socket}`], (error) => (error ? reject(error) : resolve()));
        unmunge.stdin!.end(credential);
      });
      return true;
    });
  };

  const lab: SlurmLab = {
    dir,
    conf,
    env,
    nodes,
    partition: PARTITION,
    slurm: (command, ...args) => run(command, args, env),
    async queue() {
      const out = await run('squeue', ['-h', '-o', '%i %j %T %r %N'], env);
      return out.split('\n').filter((line) => line.trim());
    },
    async nodeStates() {
      const out = await run('sinfo', ['-h', '-N', '-o', '%N %t'], env);
      return Object.fromEntries(
        out
          .split('\n')
          .filter((line) => line.trim())
          .map((line) => line.trim().split(/\s+/) as [string, string]),
      );
    },
    jobProcesses: () => processesWithConf(conf, daemonPids()),
    async settled(ms = 60_000) {
      const until = Date.now() + ms;
      for (;;) {
        const queue = await lab.queue();
        const processes = lab.jobProcesses();
        if ((queue.length === 0 && processes.length === 0) || Date.now() > until) return { queue, processes };
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
    },
    async stopMunge() {
      if (munged) await stopDaemon(munged);
    },
    startMunge: () => startMunged(),
    async resume(node) {
      await run('scontrol', ['update', `nodename=${node}`, 'state=resume'], env).catch(() => undefined);
      await poll(`node ${node} idle again`, 60_000, async () => ((await lab.nodeStates())[node] === 'idle' ? true : undefined));
    },
    async stop() {
      // A job's process left by a failed test: killed, so that it does not outlive the lab, and reported.
      const left = lab.jobProcesses();
      for (const line of left) {
        try {
          process.kill(Number(line.split(' ')[0]), 'SIGKILL');
        } catch {
          // gone meanwhile
        }
      }
      for (const daemon of [...daemons].reverse()) await stopDaemon(daemon);
      return [...left, ...processesWithConf(conf, new Set())];
    },
  };

  try {
    await startMunged();
    startDaemon('slurmctld', ['-D', '-f', conf], 'slurmctld.out');
    for (const node of nodes) startDaemon('slurmd', ['-D', '-N', node, '-f', conf], `slurmd.${node}.out`);
    await poll(`nodes ${nodes.join(', ')} idle`, 90_000, async () => {
      const states = await lab.nodeStates();
      return nodes.every((node) => states[node] === 'idle') ? true : undefined;
    });
  } catch (error) {
    await lab.stop();
    const logs = ['slurmctld.log', ...nodes.map((node) => `slurmd.${node}.log`)]
      .map((name) => path.join(dir, 'log', name))
      .filter(existsSync);
    throw new Error(
      `${String(error)}; the logs: ${logs.map((log) => `${log}: ${readFileSync(log, 'utf8').trim().split('\n').slice(-5).join(' | ')}`).join('; ')}`,
    );
  }
  return lab;
}
