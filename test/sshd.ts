/**
 * A real OpenSSH sshd on 127.0.0.1 for the tests: its own throw-away host key, user keys (one
 * plain, one with a passphrase), authorized_keys and known_hosts, on one or more ports. Runs
 * as the current user, who must be root (sshd's privilege separation); .ci/run is.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, connect } from 'node:net';
import path from 'node:path';
import { commandsAvailable, findOnPath, integrationAvailable, tempDir } from './helpers.ts';

/** Found on PATH (root's PATH has /usr/sbin), so that a narrowed PATH hides it. */
export const SSHD = findOnPath('sshd') ?? 'sshd';
export const SFTP_SERVER =
  ['/usr/lib/openssh/sftp-server', '/usr/libexec/openssh/sftp-server'].find((candidate) => existsSync(candidate)) ??
  '/usr/lib/openssh/sftp-server';

export function sshdAvailable(): boolean {
  return findOnPath('sshd') !== undefined && typeof process.getuid === 'function' && process.getuid() === 0;
}

/**
 * Whether the SSH tests can run here: sshd, OpenSSH's client tools (the keys are made with
 * ssh-keygen; behaviour is compared with ssh and sftp; ssh-agent serves a key), ps (what a session
 * left behind is looked for among the processes), and root (sshd's privilege separation). When
 * not, they skip saying what is missing, or fail under CUDAMATRIX_REQUIRE_INTEGRATION=1.
 */
export function sshdReady(): boolean {
  const tools = {
    sshd: 'openssh-server',
    ssh: 'openssh-client',
    sftp: 'openssh-client',
    'ssh-keygen': 'openssh-client',
    'ssh-agent': 'openssh-client',
    'ssh-add': 'openssh-client',
    ps: 'procps',
  };
  return (
    commandsAvailable('the SSH tests (a real sshd on 127.0.0.1)', tools) &&
    integrationAvailable('root, for the SSH tests (sshd is started as root)', process.getuid?.() === 0, 'run the tests as root')
  );
}

export const TEST_PASSPHRASE = 'correct horse battery staple 7f3a';

export interface Sshd {
  dir: string;
  ports: number[];
  /** An unencrypted user key, and one encrypted with TEST_PASSPHRASE. */
  key: string;
  encryptedKey: string;
  /** known_hosts with this server's key for every port. */
  knownHosts: string;
  hostKeyPub: string;
  /** One sshd per 16 ports (OpenSSH listens on at most 16 sockets per process). */
  processes: ChildProcess[];
  stop(): Promise<void>;
  /** Kills the listener and every session process it started (a crash, not a shutdown). */
  killAll(): void;
  restart(): Promise<void>;
}

/**
 * The ports of the sshds this process started: a remote command of this process's tests runs
 * under one of them (SSH_CONNECTION names it), where another's tests or a shell's `sleep` do not.
 */
export const sshdPorts = new Set<number>();

export async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer();
    server.listen(0, '127.0.0.1', () => {
      const port = (server.address() as { port: number }).port;
      server.close(() => resolve(port));
    });
  });
}

async function waitForPort(port: number, ms = 10000): Promise<void> {
  const until = Date.now() + ms;
  for (;;) {
    const ok = await new Promise<boolean>((resolve) => {
      const socket = connect(port, '127.0.0.1');
      socket.once('connect', () => (socket.destroy(), resolve(true)));
      socket.once('error', () => resolve(false));
    });
    if (ok) return;
    if (Date.now() > until) throw new Error(`sshd did not listen on ${port}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

export function keygen(file: string, passphrase = ''): void {
  execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', passphrase, '-C', 'cudamatrix-test', '-f', file]);
}

export interface SshdOptions {
  /** Listen on portBase, portBase + 1, ... (the benches' --port-base); default: free ports from the kernel. */
  portBase?: number;
  /** sshd_config lines for one port, in a Match LocalPort block (e.g. a probe cache of its own per target). */
  perPort?: (port: number, index: number) => string[];
}

function portIsFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

async function choosePorts(count: number, portBase: number | undefined): Promise<number[]> {
  const ports: number[] = [];
  for (let i = 0; i < count; i++) {
    if (portBase === undefined) {
      ports.push(await freePort());
      continue;
    }
    const port = portBase + i;
    if (!(await portIsFree(port))) throw new Error(`port ${port} on 127.0.0.1 is in use (port base ${portBase} needs ${count} free ports)`);
    ports.push(port);
  }
  return ports;
}

/** `extraConfig`: more sshd_config lines (e.g. "SetEnv NAME=VALUE" for the sessions' environment). */
export async function startSshd(portCount = 1, extraConfig: string[] = [], options: SshdOptions = {}): Promise<Sshd> {
  const dir = tempDir('cm-sshd-');
  mkdirSync('/run/sshd', { recursive: true });
  keygen(path.join(dir, 'host_ed25519'));
  keygen(path.join(dir, 'user_ed25519'));
  keygen(path.join(dir, 'user_encrypted'), TEST_PASSPHRASE);
  writeFileSync(
    path.join(dir, 'authorized_keys'),
    ['user_ed25519', 'user_encrypted'].map((k) => readFileSync(path.join(dir, `${k}.pub`), 'utf8')).join(''),
  );
  const ports = await choosePorts(portCount, options.portBase);
  for (const port of ports) sshdPorts.add(port);
  const groups: number[][] = [];
  for (let i = 0; i < ports.length; i += 16) groups.push(ports.slice(i, i + 16));
  const configs = groups.map((group, groupIndex) => {
    const config = path.join(dir, `sshd_config.${groupIndex}`);
    const matches = group.flatMap((port) => {
      const lines = options.perPort?.(port, ports.indexOf(port)) ?? [];
      return lines.length ? [`Match LocalPort ${port}`, ...lines.map((line) => `  ${line}`)] : [];
    });
    writeFileSync(
      config,
      [
        ...group.map((port) => `Port ${port}`),
        'ListenAddress 127.0.0.1',
        `HostKey ${path.join(dir, 'host_ed25519')}`,
        `AuthorizedKeysFile ${path.join(dir, 'authorized_keys')}`,
        `PidFile ${path.join(dir, `sshd.${groupIndex}.pid`)}`,
        'StrictModes no',
        'UsePAM no',
        'PasswordAuthentication no',
        'KbdInteractiveAuthentication no',
        'PermitRootLogin prohibit-password',
        `Subsystem sftp ${SFTP_SERVER}`,
        'LogLevel ERROR',
        'MaxSessions 100',
        'MaxStartups 200:30:400',
        ...extraConfig,
        // Match blocks last: they run to the end of the file.
        ...matches,
        '',
      ].join('\n'),
    );
    return config;
  });
  const hostKeyPub = readFileSync(path.join(dir, 'host_ed25519.pub'), 'utf8').trim().split(' ').slice(0, 2).join(' ');
  const knownHosts = path.join(dir, 'known_hosts');
  writeFileSync(knownHosts, ports.map((port) => `[127.0.0.1]:${port} ${hostKeyPub}\n`).join(''));
  const start = async (): Promise<ChildProcess[]> => {
    const children = configs.map((config) => {
      const child = spawn(SSHD, ['-D', '-e', '-f', config], { stdio: ['ignore', 'ignore', 'pipe'] });
      child.stderr!.on('data', () => undefined);
      return child;
    });
    for (const port of ports) await waitForPort(port);
    return children;
  };
  const sshd: Sshd = {
    dir,
    ports,
    key: path.join(dir, 'user_ed25519'),
    encryptedKey: path.join(dir, 'user_encrypted'),
    knownHosts,
    hostKeyPub,
    processes: await start(),
    async stop() {
      await Promise.all(
        sshd.processes.map(async (child) => {
          if (child.exitCode !== null || child.signalCode !== null) return;
          await new Promise<void>((resolve) => {
            child.once('exit', () => resolve());
            child.kill('SIGTERM');
          });
        }),
      );
    },
    killAll() {
      // The listener, and the per-connection sshd processes it forked (its descendants).
      const table = execFileSync('ps', ['-eo', 'pid=,ppid='], { encoding: 'utf8' })
        .trim()
        .split('\n')
        .map((line) => line.trim().split(/\s+/).map(Number) as [number, number]);
      const doomed = new Set(sshd.processes.map((child) => child.pid!));
      for (let grew = true; grew;) {
        grew = false;
        for (const [pid, ppid] of table) {
          if (doomed.has(ppid) && !doomed.has(pid)) {
            const comm = execFileSync('ps', ['-o', 'comm=', '-p', String(pid)], { encoding: 'utf8' }).trim();
            if (comm.startsWith('sshd')) {
              doomed.add(pid);
              grew = true;
            }
          }
        }
      }
      for (const pid of doomed) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // gone already
        }
      }
    },
    async restart() {
      await sshd.stop();
      sshd.processes = await start();
    },
  };
  return sshd;
}
