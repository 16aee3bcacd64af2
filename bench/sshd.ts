/**
 * A real OpenSSH sshd on 127.0.0.1 for the benches, like test/sshd.ts's (throw-away host and
 * user keys, known_hosts, one sshd process per 16 ports, run as root) with two more things the
 * benches need: the ports can be given (--port-base N: N, N+1, ...; default: free ports from the
 * kernel), and each port can have sshd_config lines of its own (a Match LocalPort block: e.g.
 * SetEnv XDG_CACHE_HOME=... so that every port is a target with its own probe cache).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { connect, createServer } from 'node:net';
import path from 'node:path';
import { tempDir } from '../test/helpers.ts';
import { SFTP_SERVER, SSHD, freePort, keygen } from '../test/sshd.ts';

export interface BenchSshd {
  dir: string;
  ports: number[];
  /** The user's private key (no passphrase). */
  key: string;
  /** known_hosts with the server's key for every port. */
  knownHosts: string;
  stop(): Promise<void>;
}

export interface BenchSshdOptions {
  count: number;
  /** Listen on portBase, portBase + 1, ...; default: free ports from the kernel. */
  portBase?: number;
  /** More sshd_config lines for every port. */
  extraConfig?: string[];
  /** sshd_config lines for one port (put in a Match LocalPort block). */
  perPort?: (port: number, index: number) => string[];
}

function portIsFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = createServer();
    s.once('error', () => resolve(false));
    s.listen(port, '127.0.0.1', () => s.close(() => resolve(true)));
  });
}

async function waitForPort(port: number, ms = 10_000): Promise<void> {
  const until = Date.now() + ms;
  for (;;) {
    const ok = await new Promise<boolean>((resolve) => {
      const c = connect(port, '127.0.0.1');
      c.once('connect', () => (c.destroy(), resolve(true)));
      c.once('error', () => resolve(false));
    });
    if (ok) return;
    if (Date.now() > until) throw new Error(`sshd did not listen on 127.0.0.1:${port} within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Parses --port-base (undefined when absent); exits 2 on a bad value. */
export function portBaseOption(value: string | undefined, count: number): number | undefined {
  if (value === undefined) return undefined;
  const base = Number(value);
  if (!Number.isInteger(base) || base < 1024 || base + count - 1 > 65535) {
    console.error(`--port-base takes a port from 1024 such that ${count} ports fit below 65536, got ${value}`);
    process.exit(2);
  }
  return base;
}

export async function startBenchSshd(options: BenchSshdOptions): Promise<BenchSshd> {
  const dir = tempDir('cm-bench-sshd-');
  mkdirSync('/run/sshd', { recursive: true });
  keygen(path.join(dir, 'host_ed25519'));
  keygen(path.join(dir, 'user_ed25519'));
  writeFileSync(path.join(dir, 'authorized_keys'), readFileSync(path.join(dir, 'user_ed25519.pub'), 'utf8'));
  const ports: number[] = [];
  for (let i = 0; i < options.count; i++) {
    if (options.portBase === undefined) {
      ports.push(await freePort());
      continue;
    }
    const port = options.portBase + i;
    if (!(await portIsFree(port))) throw new Error(`port ${port} on 127.0.0.1 is in use (--port-base ${options.portBase} needs ${options.count} free ports)`);
    ports.push(port);
  }
  const groups: number[][] = [];
  for (let i = 0; i < ports.length; i += 16) groups.push(ports.slice(i, i + 16));
  const configs = groups.map((group, g) => {
    const config = path.join(dir, `sshd_config.${g}`);
    const matches = group.flatMap((port) => {
      const lines = options.perPort?.(port, ports.indexOf(port)) ?? [];
      return lines.length ? [`Match LocalPort ${port}`, ...lines.map((l) => `  ${l}`)] : [];
    });
    writeFileSync(
      config,
      [
        ...group.map((p) => `Port ${p}`),
        'ListenAddress 127.0.0.1',
        `HostKey ${path.join(dir, 'host_ed25519')}`,
        `AuthorizedKeysFile ${path.join(dir, 'authorized_keys')}`,
        `PidFile ${path.join(dir, `sshd.${g}.pid`)}`,
        'StrictModes no',
        'UsePAM no',
        'PasswordAuthentication no',
        'KbdInteractiveAuthentication no',
        'PermitRootLogin prohibit-password',
        `Subsystem sftp ${SFTP_SERVER}`,
        'LogLevel ERROR',
        'MaxSessions 100',
        'MaxStartups 200:30:400',
        ...(options.extraConfig ?? []),
        // Match blocks last: they run to the end of the file.
        ...matches,
        '',
      ].join('\n'),
    );
    return config;
  });
  const hostKeyPub = readFileSync(path.join(dir, 'host_ed25519.pub'), 'utf8').trim().split(' ').slice(0, 2).join(' ');
  const knownHosts = path.join(dir, 'known_hosts');
  writeFileSync(knownHosts, ports.map((p) => `[127.0.0.1]:${p} ${hostKeyPub}\n`).join(''));
  const processes: ChildProcess[] = configs.map((config) => {
    const child = spawn(SSHD, ['-D', '-e', '-f', config], { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr!.on('data', (d) => (stderr = (stderr + d).slice(-2000)));
    child.once('exit', (code) => {
      if (code) console.error(`sshd (${config}) exited ${code}: ${stderr.trim()}`);
    });
    return child;
  });
  const stop = async (): Promise<void> => {
    await Promise.all(
      processes.map(async (p) => {
        if (p.exitCode !== null || p.signalCode !== null) return;
        await new Promise<void>((resolve) => {
          p.once('exit', () => resolve());
          p.kill('SIGTERM');
        });
      }),
    );
  };
  try {
    for (const p of ports) await waitForPort(p);
  } catch (error) {
    await stop();
    throw error;
  }
  return { dir, ports, key: path.join(dir, 'user_ed25519'), knownHosts, stop };
}
