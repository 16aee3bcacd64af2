/**
 * A real Docker engine for the tests, and a base image made here: no image can be pulled, so the
 * base is built FROM scratch from a root filesystem assembled from this machine: busybox-static,
 * the shared libraries cudaprobe needs (as ldd names them) and /etc/os-release.
 */
import { execFileSync, spawn } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, realpathSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { tempDir } from './helpers.ts';

export function dockerReachable(): boolean {
  try {
    execFileSync('docker', ['info', '--format', '{{.ServerVersion}}'], { stdio: 'pipe', timeout: 10_000 });
    return true;
  } catch {
    return false;
  }
}

/** Starts dockerd the way .ci/run does, when it is installed, not running, and we are root. */
export async function ensureDocker(): Promise<boolean> {
  if (dockerReachable()) return true;
  if (!existsSync('/usr/sbin/dockerd') || process.getuid?.() !== 0) return false;
  const log = path.join(tempDir('cm-dockerd-'), 'dockerd.log');
  const child = spawn('sh', ['-c', `dockerd --bridge=none --iptables=false > ${log} 2>&1`], { detached: true, stdio: 'ignore' });
  child.unref();
  for (let i = 0; i < 60; i++) {
    await new Promise((r) => setTimeout(r, 500));
    if (dockerReachable()) return true;
  }
  return false;
}

const BUSYBOX = ['/bin/busybox', '/usr/bin/busybox'].find((p) => existsSync(p));

export function busyboxAvailable(): boolean {
  return BUSYBOX !== undefined;
}

/** Builds (once per content) an image with busybox and the libraries `binary` needs. */
export function buildTestBase(binary: string, tag = 'cudamatrix-test-base'): string {
  const dir = tempDir('cm-rootfs-');
  const root = path.join(dir, 'rootfs');
  mkdirSync(path.join(root, 'bin'), { recursive: true });
  mkdirSync(path.join(root, 'etc'), { recursive: true });
  mkdirSync(path.join(root, 'tmp'), { recursive: true });
  copyFileSync(BUSYBOX!, path.join(root, 'bin', 'busybox'));
  if (existsSync('/etc/os-release')) copyFileSync(realpathSync('/etc/os-release'), path.join(root, 'etc', 'os-release'));
  const libs = execFileSync('ldd', [binary], { encoding: 'utf8' })
    .split('\n')
    .map((l) => /(\/\S+) \(0x/.exec(l)?.[1])
    .filter((p): p is string => Boolean(p));
  for (const lib of libs) {
    mkdirSync(path.join(root, path.dirname(lib)), { recursive: true });
    copyFileSync(realpathSync(lib), path.join(root, lib));
  }
  // VOLUME: every container gets an anonymous volume, so that the tests see it removed too.
  writeFileSync(path.join(dir, 'Dockerfile'), 'FROM scratch\nCOPY rootfs/ /\nVOLUME /data\n');
  execFileSync('docker', ['build', '-q', '-t', tag, dir], { stdio: 'pipe' });
  return tag;
}

/** Containers and volumes a run left on the engine. */
export function leftoversOf(runId: string): { containers: string[]; volumes: string[] } {
  const containers = execFileSync('docker', ['ps', '-aq', '--filter', `label=cudamatrix.run-id=${runId}`], { encoding: 'utf8' }).trim().split('\n').filter(Boolean);
  const volumes = execFileSync('docker', ['volume', 'ls', '-q', '--filter', 'dangling=true'], { encoding: 'utf8' }).trim().split('\n').filter(Boolean);
  return { containers, volumes };
}

/** An image with busybox alone: no C library, so cudaprobe cannot start in it. */
export function buildBareImage(tag = 'cudamatrix-test-bare'): string {
  const dir = tempDir('cm-bare-');
  mkdirSync(path.join(dir, 'rootfs', 'bin'), { recursive: true });
  copyFileSync(BUSYBOX!, path.join(dir, 'rootfs', 'bin', 'busybox'));
  writeFileSync(path.join(dir, 'Dockerfile'), 'FROM scratch\nCOPY rootfs/ /\nVOLUME /data\n');
  execFileSync('docker', ['build', '-q', '-t', tag, dir], { stdio: 'pipe' });
  return tag;
}
