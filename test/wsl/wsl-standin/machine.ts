/**
 * A Windows machine's WSL, as the stand-in wsl.exe (./wsl.exe) sees it: a folder with
 * distros.json (the distributions: name, state, version, default) and one root filesystem per
 * distribution, assembled here from busybox-static, the shared libraries cudaprobe needs (as
 * ldd names them), /etc/passwd and a /dev/null. A WSL 2 distribution gets /dev/dxg and
 * /usr/lib/wsl/lib/libcuda.so.1 as empty files unless told otherwise: cudaprobe then finds the
 * paravirtualised GPU's device and driver, fails to load the driver, and takes its no-driver path.
 *
 * A distribution made with `docker: true` also has this machine's docker CLI at /usr/bin/docker
 * (with the shared libraries it needs, if any) and a /var/run (a link to /run, as in Ubuntu) for
 * an engine's API socket: ./engine.ts starts a dockerd of the test's own that listens there too,
 * so that `docker` in the distribution reaches it at its default unix:///var/run/docker.sock, as
 * Docker Engine installed in a WSL 2 distribution is reached there.
 *
 * This is a stand-in because no Windows machine is reachable from this project's machines; see
 * the header of ./wsl.exe for what it does like the real wsl.exe, and where that comes from.
 */
import { execFileSync } from 'node:child_process';
import {
  chmodSync,
  chownSync,
  copyFileSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  realpathSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import path from 'node:path';
import { findOnPath, tempDir } from '../../helpers.ts';

/** The folder of the stand-in wsl.exe: put it on PATH. */
export const STANDIN_BIN = path.resolve(import.meta.dirname);
export const STANDIN_WSL = path.join(STANDIN_BIN, 'wsl.exe');
/** The program ./wsl.exe runs (with node): what a running stand-in shows in ps. */
export const STANDIN_PROGRAM = path.join(STANDIN_BIN, 'standin.mjs');

export interface StandinDistro {
  name: string;
  version: 1 | 2;
  state?: 'Running' | 'Stopped';
  default?: boolean;
  defaultUser?: string;
  /** What of WSL's GPU paravirtualisation the distribution has (default for WSL 2: both). */
  gpu?: { dxg: boolean; libcuda: boolean };
  /** The docker CLI at /usr/bin/docker and a /var/run for an engine's socket (see ./engine.ts). */
  docker?: boolean;
}

/** distros.json: the machine's WSL. */
export interface MachineFile {
  installed?: boolean;
  locale?: string;
  /** The stand-in's own messages in a legacy code page ("cp850", "windows-1252") instead of UTF-16LE (./standin.mjs). */
  messageEncoding?: string;
  /** A missing user in a WSL 2 distribution is said by its init first, in UTF-8 (./standin.mjs). */
  initSays?: boolean;
  distros: { name: string; state: string; version: number; default?: boolean; defaultUser?: string }[];
}

export interface StandinMachine {
  /** CUDAMATRIX_WSL_STANDIN_ROOT. */
  root: string;
  /** The environment for a process that runs the stand-in: PATH with it first, and the root. */
  env(extra?: Record<string, string>): Record<string, string>;
  /** A distribution's root filesystem, as a folder of this machine. */
  distroRoot(name: string): string;
  /** The machine as distros.json has it now (states change when a command starts a distribution). */
  read(): MachineFile;
  write(machine: MachineFile): void;
}

/** The tools the stand-in machine is made from and runs with; each with its Debian package. */
export const STANDIN_TOOLS = {
  busybox: 'busybox-static',
  ldd: 'libc-bin',
  chroot: 'coreutils',
  mknod: 'coreutils',
  unshare: 'util-linux',
  mount: 'mount',
};

/** What a distribution with `docker: true` is made with (and its engine run by), besides STANDIN_TOOLS. */
export const STANDIN_DOCKER_TOOLS = { docker: 'docker.io', dockerd: 'docker.io' };

/** The shared libraries `binary` needs, as ldd names them; none for a static binary (ldd then fails). */
function sharedLibraries(binary: string): string[] {
  let out: string;
  try {
    out = execFileSync('ldd', [binary], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (error) {
    const said = `${(error as { stdout?: string }).stdout ?? ''}${(error as { stderr?: string }).stderr ?? ''}`;
    if (/not a dynamic executable|statically linked/.test(said)) return [];
    throw error;
  }
  return out
    .split('\n')
    .map((line) => /(\/\S+) \(0x/.exec(line)?.[1])
    .filter((libPath): libPath is string => Boolean(libPath));
}

/** Copies `lib` (a path ldd named) into the root filesystem `fs` at the same path. */
function copyLibrary(fs: string, lib: string): void {
  mkdirSync(path.join(fs, path.dirname(lib)), { recursive: true });
  copyFileSync(realpathSync(lib), path.join(fs, lib));
}

/**
 * Makes a machine with these distributions. `libsOf`: a binary (cudaprobe) whose shared libraries
 * each distribution gets, so that it runs there.
 */
export function makeStandinMachine(
  distros: StandinDistro[],
  options: { libsOf: string; locale?: 'en-US' | 'de-DE'; installed?: boolean },
): StandinMachine {
  const root = tempDir('cm-wsl-machine-');
  const busybox = findOnPath('busybox');
  if (!busybox) throw new Error('busybox (busybox-static) is needed for the WSL stand-in');
  const applets = execFileSync(busybox, ['--list'], { encoding: 'utf8' }).split('\n').filter(Boolean);
  const libs = sharedLibraries(options.libsOf);
  const dockerCli = distros.some((distro) => distro.docker) ? findOnPath('docker') : undefined;
  if (distros.some((distro) => distro.docker) && !dockerCli)
    throw new Error('the docker CLI (docker.io) is needed for a stand-in distribution with docker: true');
  for (const distro of distros) {
    const fs = path.join(root, distro.name);
    for (const dir of ['bin', 'etc', 'root', 'home/builder', 'tmp', 'dev', 'proc', 'usr/bin'])
      mkdirSync(path.join(fs, dir), { recursive: true });
    chmodSync(path.join(fs, 'tmp'), 0o1777);
    chownSync(path.join(fs, 'home/builder'), 1000, 1000);
    copyFileSync(busybox, path.join(fs, 'bin', 'busybox'));
    chmodSync(path.join(fs, 'bin', 'busybox'), 0o755);
    for (const applet of applets) {
      if (applet === 'busybox') continue;
      try {
        symlinkSync('busybox', path.join(fs, 'bin', applet));
      } catch {
        // listed twice
      }
    }
    for (const lib of libs) copyLibrary(fs, lib);
    if (distro.docker && dockerCli) {
      copyFileSync(realpathSync(dockerCli), path.join(fs, 'usr/bin/docker'));
      chmodSync(path.join(fs, 'usr/bin/docker'), 0o755);
      for (const lib of sharedLibraries(dockerCli)) copyLibrary(fs, lib);
      // /var/run -> /run, as in Ubuntu: the engine's socket goes in /run (./engine.ts).
      mkdirSync(path.join(fs, 'run'), { recursive: true });
      mkdirSync(path.join(fs, 'var'), { recursive: true });
      symlinkSync('../run', path.join(fs, 'var/run'));
    }
    writeFileSync(path.join(fs, 'etc', 'passwd'), 'root:x:0:0:root:/root:/bin/sh\nbuilder:x:1000:1000:builder:/home/builder:/bin/sh\n');
    writeFileSync(path.join(fs, 'etc', 'group'), 'root:x:0:\nbuilder:x:1000:\n');
    writeFileSync(
      path.join(fs, 'etc', 'os-release'),
      `NAME="Stand-in ${distro.name}"\nID=standin\nPRETTY_NAME="${distro.name} (cudamatrix's WSL stand-in)"\n`,
    );
    execFileSync('mknod', ['-m', '666', path.join(fs, 'dev', 'null'), 'c', '1', '3']);
    const gpu = distro.gpu ?? { dxg: distro.version === 2, libcuda: distro.version === 2 };
    if (gpu.dxg) writeFileSync(path.join(fs, 'dev', 'dxg'), '');
    if (gpu.libcuda) {
      mkdirSync(path.join(fs, 'usr/lib/wsl/lib'), { recursive: true });
      writeFileSync(path.join(fs, 'usr/lib/wsl/lib/libcuda.so.1'), '');
    }
  }
  const machineFile = path.join(root, 'distros.json');
  const machine: StandinMachine = {
    root,
    env: (extra = {}) => ({
      PATH: `${STANDIN_BIN}${path.delimiter}${process.env.PATH ?? ''}`,
      CUDAMATRIX_WSL_STANDIN_ROOT: root,
      ...extra,
    }),
    distroRoot: (name) => path.join(root, name),
    read: () => JSON.parse(readFileSync(machineFile, 'utf8')),
    write: (state) => writeFileSync(machineFile, `${JSON.stringify(state, null, 2)}\n`),
  };
  machine.write({
    installed: options.installed ?? true,
    locale: options.locale ?? 'en-US',
    distros: distros.map((distro) => ({
      name: distro.name,
      state: distro.state ?? 'Stopped',
      version: distro.version,
      default: distro.default ?? false,
      defaultUser: distro.defaultUser ?? 'root',
    })),
  });
  return machine;
}

/** Work folders of cudamatrix sessions left in a distribution's /tmp. */
export function leftInDistro(machine: StandinMachine, name: string): string[] {
  return readdirSync(path.join(machine.distroRoot(name), 'tmp')).filter((folder) => folder.startsWith('cudamatrix-'));
}

/**
 * Ends every process running in a distribution, as `wsl.exe --terminate` (and --unregister)
 * does on Windows: the stand-in starts no long-lived instance of its own to stop.
 */
export function terminateDistro(machine: StandinMachine, name: string): void {
  const root = realpathSync(machine.distroRoot(name));
  for (const pid of readdirSync('/proc').filter((entryName) => /^\d+$/.test(entryName))) {
    try {
      if (realpathSync(`/proc/${pid}/root`) === root) process.kill(Number(pid), 'SIGKILL');
    } catch {
      // gone, or not ours
    }
  }
}

/**
 * Processes still running from this machine's stand-in: wsl.exe itself (a stand-in whose
 * environment names this machine), or anything chrooted into one of its distributions. Other
 * machines' (other tests running at the same time) are not counted.
 */
export function standinProcesses(machine: StandinMachine): string[] {
  const table = execFileSync('ps', ['-eo', 'pid=,args='], { encoding: 'utf8' }).split('\n');
  const mine: string[] = [];
  for (const line of table) {
    const pid = Number(line.trim().split(/\s+/)[0]);
    if (!pid || pid === process.pid) continue;
    try {
      if (line.includes(STANDIN_PROGRAM) || line.includes(STANDIN_WSL)) {
        const env = readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0');
        if (env.includes(`CUDAMATRIX_WSL_STANDIN_ROOT=${machine.root}`)) mine.push(line.trim());
      } else if (realpathSync(`/proc/${pid}/root`).startsWith(`${machine.root}/`)) {
        mine.push(line.trim());
      }
    } catch {
      // gone, or not ours to look at
    }
  }
  return mine;
}
