/**
 * `cudamatrix doctor` through the real CLI: any ✗ is a non-zero exit (3) with what to fix,
 * the words fit the transport, and flags that would do nothing are usage errors (2).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli } from '../test/cli.ts';
import { hasCommand, tempDir } from '../test/helpers.ts';
import { checkLine, knownBadChecks } from './doctor.ts';

const noGpuHere = !hasCommand('nvidia-smi', ['-L']);

/** A TCP port of this machine that was free a moment ago (listened on, then closed). */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

describe('doctor refuses flags that would do nothing', () => {
  const cases: [string, string[], RegExp][] = [
    [
      '--endpoint without --reap',
      ['doctor', '--endpoint', 'unix:///nowhere/docker.sock'],
      /^error \[USAGE\]: --endpoint needs --reap\b.*unix:\/\/\/nowhere\/docker\.sock/m,
    ],
    ['--accept-new without --target or -m', ['doctor', '--accept-new'], /^error \[USAGE\]: --accept-new needs --target NAME or -m FILE\b/m],
    ['--reap with -m', ['doctor', '--reap', '-m', 'matrix.yaml'], /^error \[USAGE\]: --reap and -m\/--matrix do not go together/m],
    ['--reap with --target', ['doctor', '--reap', '--target', 'local'], /^error \[USAGE\]: --reap and --target do not go together/m],
    [
      '--reap with --target and --endpoint',
      ['doctor', '--reap', '--endpoint', 'unix:///nowhere/docker.sock', '--target', 'local'],
      /^error \[USAGE\]: --reap and --target do not go together/m,
    ],
  ];
  for (const [name, args, message] of cases) {
    it(`${name}: exit 2, says which flag needs what, checks nothing`, async () => {
      const result = await runCli(args);
      expect(result.stderr).toMatch(message);
      expect(result.stderr).not.toMatch(/\n\s+at /);
      expect(result.stdout).toBe('');
      expect(result.code).toBe(2);
    });
  }

  it('documents its exit statuses in --help', async () => {
    const result = await runCli(['doctor', '--help']);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('Exit status:');
    expect(result.stdout).toMatch(/^ {2}0 {2}every check passed/m);
    expect(result.stdout).toMatch(/^ {2}2 {2}usage error/m);
    expect(result.stdout).toMatch(/^ {2}3 {2}a check failed \(✗\)/m);
  });
});

describe('doctor exits non-zero on any ✗, and says what to fix', () => {
  it.runIf(noGpuHere)('on this machine (no NVIDIA driver): exit 3, the ✗ lines, and the fixes at the end', async () => {
    const result = await runCli(['doctor']);
    expect(result.stdout).toMatch(/✓ compiler\s+(g\+\+|clang)/);
    expect(result.stdout).toMatch(/✓ environment\s+linux/);
    expect(result.stdout).toMatch(/✗ driver\s+no NVIDIA driver found/);
    expect(result.stdout).toMatch(/✗ NVML\s+NVML library not found/);
    expect(result.stdout).toMatch(/✗ GPU\s+/);
    expect(result.stdout).toContain('3 problem(s): probes that need them will be skipped. To fix:');
    expect(result.stdout).toMatch(/^ {2}driver\s+install the NVIDIA driver/m);
    expect(result.stdout).toMatch(/^ {2}NVML\s+NVML \(libnvidia-ml\.so\.1, nvml\.dll\) comes with the NVIDIA driver/m);
    expect(result.code).toBe(3);
  });

  it('when the build cache cannot be made (HOME under /proc): exit 3 at once, and says to set CUDAMATRIX_CACHE', async () => {
    // Node's recursive mkdir spins forever under /proc; this used to hang.
    const result = await runCli(['doctor'], { env: { HOME: '/proc/nope', CUDAMATRIX_CACHE: '', XDG_CACHE_HOME: '' } });
    expect(result.stdout).toMatch(
      /✗ cudaprobe\s+build failed: the cudaprobe build cache .* \/proc\/nope\/\.cache\/cudamatrix\/.* cannot be made \(ENOENT at \/proc\/nope\)/,
    );
    expect(result.stdout).toMatch(/^ {2}cudaprobe\s+set CUDAMATRIX_CACHE to a folder you can write to$/m);
    expect(result.code).toBe(3);
  }, 30_000);

  it('when cudaprobe cannot be built (no compiler, nothing cached): exit 3, the build ✗, and what to fix', async () => {
    // CXX names no compiler, PATH has neither g++ nor clang++, and the cache is empty.
    const emptyBin = tempDir('cm-nobin-');
    const cache = tempDir('cm-emptycache-');
    mkdirSync(path.join(cache, 'cudaprobe'));
    const result = await runCli(['doctor'], { env: { CXX: '/nonexistent/bin/c++', PATH: emptyBin, CUDAMATRIX_CACHE: cache } });
    expect(result.stderr).not.toMatch(/\n\s+at /);
    expect(result.stdout).toMatch(
      /✗ cudaprobe\s+build failed: no compiler for cudaprobe on linux\/\w+ \(tried \/nonexistent\/bin\/c\+\+, g\+\+, clang\+\+\)/,
    );
    expect(result.stdout).not.toMatch(/✓ compiler/);
    expect(result.stdout).toMatch(/i driver, GPU\s+not checked: cudaprobe measures them, and there is none for this machine/);
    expect(result.stdout).toContain('1 problem(s): probes that need them will be skipped. To fix:');
    expect(result.stdout).toMatch(/^ {2}cudaprobe\s+CXX is set to "\/nonexistent\/bin\/c\+\+", which did not work/m);
    // Targets of the other platforms: which compiler they would need, since none is there.
    expect(result.stdout).toMatch(
      /i linux-arm64 targets\s+no compiler for cudaprobe on linux\/aarch64 .*apt-get install g\+\+-aarch64-linux-gnu/,
    );
    expect(result.stdout).toMatch(/i windows-x64 targets\s+no compiler for cudaprobe on windows\/x86_64 .*g\+\+-mingw-w64-x86-64-posix/);
    expect(result.code).toBe(3);
  });

  it('--target local speaks of this machine, not of host keys or authentication', async () => {
    const result = await runCli(['doctor', '--target', 'local']);
    expect(result.stderr).not.toMatch(/\n\s+at /);
    expect(result.stdout).toMatch(/✓ reachable\s+this machine: probes run here as child processes/);
    expect(result.stdout).not.toMatch(/host key|authenticat/i);
    expect(result.stdout).toMatch(/✓ cudaprobe\s+/);
    if (noGpuHere) {
      expect(result.stdout).toMatch(/✗ driver\s+no NVIDIA driver found/);
      expect(result.stdout).toMatch(
        /problem\(s\): probes that need them will be skipped\. To fix:\n {2}driver\s+install the NVIDIA driver/,
      );
      expect(result.code).toBe(3);
    } else {
      expect(result.code).toBe(0);
    }
  });

  it('-m FILE alone checks every target of the matrix, in order, names those with problems, and exits with the worst status', async () => {
    // The second target is an SSH host on a port nobody listens on: it fails (no key, or refused).
    const port = await freePort();
    const dir = tempDir('cm-doctor-all-');
    const matrix = path.join(dir, 'lab.yaml');
    writeFileSync(
      matrix,
      `version: 1\ntargets:\n  - {name: here, transport: local}\n  - {name: nobody-home, transport: {kind: ssh, host: 127.0.0.1, port: ${port}, user: nobody}}\n`,
    );
    const result = await runCli(['doctor', '-m', matrix]);
    expect(result.stderr).not.toMatch(/\n\s+at /);
    expect(result.stdout).toMatch(/^target here \(1 of 2\)\n. transport\s+local\n✓ reachable\s+this machine/m);
    expect(result.stdout).toMatch(
      /^target nobody-home \(2 of 2\)\n. transport\s+ssh \(host 127\.0\.0\.1, port \d+, user nobody\)\n✗ [A-Z_]+ /m,
    );
    expect(result.stdout.indexOf('target here')).toBeLessThan(result.stdout.indexOf('target nobody-home'));
    const problems = noGpuHere ? 'here, nobody-home' : 'nobody-home';
    expect(result.stdout).toContain(`target(s) of ${matrix} have problems (each said above, with its fix): ${problems}\n`);
    expect(result.code).toBe(3);
  });

  it.runIf(hasCommand('docker', ['--version']))(
    'puts a failure at the hop that failed: a Docker engine missing behind a local hop gets the Docker fix',
    async () => {
      // No dockerd needed: the docker CLI of the first hop is asked for an engine that is not there.
      const dir = tempDir('cm-doctor-chain-');
      const matrix = path.join(dir, 'chain.yaml');
      writeFileSync(
        matrix,
        `version: 1\ntargets:\n  - {name: chained, transport: [local, {kind: docker, endpoint: "unix://${dir}/no.sock", gpus: none}]}\n`,
      );
      const result = await runCli(['doctor', '--target', 'chained', '-m', matrix]);
      expect(result.stdout).toMatch(
        /^✗ TARGET_UNREACHABLE cannot reach the Docker engine at docker --host unix:\/\/\S+\/no\.sock system dial-stdio on local/m,
      );
      expect(result.stdout).toMatch(/^ {2}fix: check the endpoint: that dockerd runs/m);
      // The guess for the first hop (a host and its port) would send the user the wrong way.
      expect(result.stdout).not.toContain('check the host name and port');
      expect(result.code).toBe(3);
    },
  );
});

describe('doctor warns of a known-bad driver, and does not fail on it', () => {
  it('a driver the registry names: a ! line with the symptom, range, fix, source and trust', () => {
    // sysinfo's facts as cudaprobe reports them for a WSL 2 target on the driver of an entry.
    const checks = knownBadChecks({
      environment: 'wsl2',
      driver_version: '591.86',
      gpu_name: 'NVIDIA GeForce RTX 3090',
      driver_found: true,
    });
    const lines = checks.map((check) => checkLine(check, 12));
    expect(lines).toContainEqual(
      expect.stringMatching(
        /^! known-bad {5}known-bad driver: Under WSL2, after heavy allocation .* \(wsl2, from 591\.86 on; not fixed; source https:\/\/github\.com\/FlashML-org\/FreeToken\/issues\/291, single-report\)\n$/,
      ),
    );
    expect(checks.every((check) => check.ok === 'warning')).toBe(true);
  });

  it('a Windows driver is matched with its model, and a GPU-limited entry only on that GPU', () => {
    const rtx50 = (gpu: string) =>
      knownBadChecks({ environment: 'wddm', driver_model: 'wddm', driver_version: '576.02', gpu_name: gpu }).map((check) => check.detail);
    expect(rtx50('NVIDIA GeForce RTX 5090')).toContainEqual(expect.stringContaining('lower idle GPU clock speeds'));
    expect(rtx50('NVIDIA GeForce RTX 4090')).not.toContainEqual(expect.stringContaining('lower idle GPU clock speeds'));
  });

  it('a driver no entry names, or no driver at all: nothing', () => {
    expect(knownBadChecks({ environment: 'linux', driver_version: '550.54.15', gpu_name: 'NVIDIA H200' })).toEqual([]);
    expect(knownBadChecks({ environment: 'linux', driver_version: null })).toEqual([]);
  });
});
