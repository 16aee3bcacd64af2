/**
 * The GPU run, on the lent H200 machine, from the installed package (scripts/gpu-prepare.ts
 * makes .gpu/; this file travels bundled as .gpu/gpu-suite.mjs):
 *   1. npm install -g .gpu/cudamatrix.tgz into an empty prefix, offline;
 *   2. a PATH with Node.js and nvidia-smi alone, shown to have no compiler; cudamatrix doctor;
 *   3. the whole default matrix (every probe) through the installed `cudamatrix run`, timed;
 *   4. bench/probe-accuracy against PyTorch, on the package's prebuilt cudaprobe;
 *   4b. with --new-probes: bench/memory-checks (issue 24's memory probes against their ctypes
 *       peer, with caps safe on the shared card), then the same probes and caps through the
 *       installed `cudamatrix run` (new-probes/runs/, for `cudamatrix record`);
 *   4c. with --behaviour-checks: bench/behaviour-checks (issue 24's event-host-gap, watchdog,
 *       runtime-init, filled transfer-bandwidth and display facts against their peer,
 *       bench/behaviour_peer.py: ctypes, PyTorch, nvidia-smi), on the same binary;
 *   4d. with --capability-checks: bench/capability-check (issue 36's capability facts, C33's
 *       failure_poisons and C34's IOMMU facts against bench/capability_peer.py: ctypes, its own
 *       buffers and calls, a second Python process for IPC), on the same binary;
 *   5. nvidia-smi's and PyTorch's own view of the machine (peers for sysinfo);
 *   6. with --p2p (two or more GPUs): the p2p probe, its independent check (.gpu/p2p-check,
 *      bench/p2p-check.cu) and nvidia-smi topo -m on the same pairs, compared
 *      (bench/p2p-compare.ts) into p2p-compare.json.
 * Everything lands in $OUT/gpu-suite.tgz (the device returns at most 8 files), with the log of
 * the steps beside it as $OUT/gpu-suite.log; a step that fails is recorded and the next one
 * still runs.
 *
 *   /tmp/node .gpu/gpu-suite.mjs [--skip-accuracy] [--skip-suite] [--gha] [--new-probes] [--p2p] [--behaviour-checks] [--capability-checks] [cudamatrix run options ...]
 *
 * --gha plays the GitHub Actions workflow's commands (3b); --skip-suite leaves out step 3; --p2p
 * adds step 6. Only the capability checks: --skip-accuracy --skip-suite --capability-checks.
 */
import { chmodSync, copyFileSync, cpSync, existsSync, mkdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { $ } from 'zx';
import { compareP2p } from '../bench/p2p-compare.ts';

const result = process.env.OUT ?? '/tmp/gpu-out';
const out = '/tmp/cudamatrix-gpu-out';
const root = process.cwd();
const gpu = path.join(root, '.gpu');
const work = '/tmp/cudamatrix-gpu';
// A fresh start each time (the same machine may run this twice).
for (const dir of [out, work]) rmSync(dir, { recursive: true, force: true });
mkdirSync(out, { recursive: true });
mkdirSync(result, { recursive: true });
mkdirSync(work, { recursive: true });
const args = process.argv.slice(2);
const skipAccuracy = args.includes('--skip-accuracy');
const skipSuite = args.includes('--skip-suite');
const gha = args.includes('--gha');
const newProbes = args.includes('--new-probes');
const p2p = args.includes('--p2p');
const behaviourChecks = args.includes('--behaviour-checks');
const capabilityChecks = args.includes('--capability-checks');
const runArgs = args.filter(
  (arg) =>
    !['--skip-accuracy', '--skip-suite', '--gha', '--new-probes', '--p2p', '--behaviour-checks', '--capability-checks'].includes(arg),
);

const log: string[] = [];
function note(line: string): void {
  console.log(line);
  log.push(line);
  writeFileSync(path.join(out, 'gpu-suite.log'), `${log.join('\n')}\n`);
}

/** Runs a step, saves its output to $OUT/<name>.txt, and returns its exit code and wall time. */
async function step(
  name: string,
  command: () => Promise<{ stdout: string; stderr: string; exitCode: number | null }>,
): Promise<number | null> {
  const t0 = performance.now();
  const commandResult = await command();
  const ms = Math.round(performance.now() - t0);
  writeFileSync(
    path.join(out, `${name}.txt`),
    `${commandResult.stdout}${commandResult.stderr ? `\n--- stderr ---\n${commandResult.stderr}` : ''}`,
  );
  note(`${name}: exit ${commandResult.exitCode}, ${ms} ms`);
  return commandResult.exitCode;
}

// 1. The package, installed as a user would; npm itself is carried too (the machine has none).
const node = process.execPath;
await $`tar -C ${work} -xJf ${path.join(gpu, 'npm.tar.xz')}`;
const prefix = path.join(work, 'prefix');
await step(
  'install',
  () =>
    $({
      nothrow: true,
    })`${node} ${path.join(work, 'npm', 'bin', 'npm-cli.js')} install --global --prefix ${prefix} --offline --no-audit --no-fund --cache ${path.join(work, 'npm-cache')} ${path.join(gpu, 'cudamatrix.tgz')}`,
);
const installed = path.join(prefix, 'lib', 'node_modules', 'cudamatrix');
const cudamatrix = path.join(prefix, 'bin', 'cudamatrix');

// 2. Node.js and nvidia-smi (for the peer facts) are all there is on this PATH.
const bin = path.join(work, 'bin');
mkdirSync(bin, { recursive: true });
symlinkSync(node, path.join(bin, 'node'));
const smi = (await $({ nothrow: true })`command -v nvidia-smi`).stdout.trim();
if (smi) symlinkSync(smi, path.join(bin, 'nvidia-smi'));
const env = { PATH: bin, HOME: work, TMPDIR: '/tmp', CUDAMATRIX_CACHE: path.join(work, 'cache'), NO_COLOR: '1' };
const withEnv = $({ nothrow: true, env, cwd: work });
await step(
  'no-compiler',
  () =>
    $({
      nothrow: true,
      env,
    })`/bin/sh -c ${'echo "PATH=$PATH"; /bin/ls -la "$PATH"; for c in g++ c++ clang++ cc gcc nvcc; do command -v $c || echo "$c: not found"; done'}`,
);
await step('version', () => withEnv`${cudamatrix} --version`);
await step('doctor', () => withEnv`${cudamatrix} doctor`);

// 3. The whole default matrix.
if (!skipSuite) {
  await step(
    'suite',
    () => withEnv`${cudamatrix} run --results-dir ${path.join(out, 'runs')} --junit ${path.join(out, 'junit.xml')} ${runArgs}`,
  );
  await step('compile-cache', () => $({ nothrow: true })`ls -laR ${path.join(work, 'cache')}`);
}

// 3b. --gha: the GitHub Actions workflow's commands as its jobs run them (gpu-matrix.yml: plan ->
// one probe job per entry -> merge), each step with GITHUB_ACTIONS=true and its own output and
// summary files, merged against a copy of the records committed in this checkout.
if (gha) {
  const dir = path.join(out, 'gha');
  mkdirSync(dir, { recursive: true });
  const records = path.join(work, 'records');
  cpSync(path.join(root, 'records'), records, { recursive: true, filter: (src) => !src.endsWith('.jsonl') });
  const actions = (name: string) => {
    for (const suffix of ['output', 'summary.md']) writeFileSync(path.join(dir, `${name}.${suffix}`), '');
    return {
      ...env,
      GITHUB_ACTIONS: 'true',
      GITHUB_OUTPUT: path.join(dir, `${name}.output`),
      GITHUB_STEP_SUMMARY: path.join(dir, `${name}.summary.md`),
    };
  };
  const planned = await $({ nothrow: true, env: actions('plan'), cwd: work })`${cudamatrix} gha matrix`;
  writeFileSync(path.join(dir, 'plan.json'), planned.stdout);
  note(`gha-plan: exit ${planned.exitCode}: ${planned.stdout.trim()}`);
  const entries = (JSON.parse(planned.stdout || '{"include":[]}') as { include: { name: string; targets: string }[] }).include;
  for (const e of entries) {
    await step(
      `gha-probe-${e.name}`,
      () =>
        $({
          nothrow: true,
          env: actions(`probe-${e.name}`),
          cwd: work,
        })`${cudamatrix} run --target ${e.targets} --results-dir ${path.join(dir, 'artifacts', `cudamatrix-events-${e.name}`)}`,
    );
  }
  await step(
    'gha-merge',
    () =>
      $({
        nothrow: true,
        env: actions('merge'),
        cwd: work,
      })`${cudamatrix} gha merge ${path.join(dir, 'artifacts')} --plan ${planned.stdout.trim()} --results-dir ${path.join(dir, 'merged')} --junit ${path.join(dir, 'junit.xml')} --records-dir ${records} --report-dir ${path.join(dir, 'report')}`,
  );
}

// 4. Accuracy against PyTorch, on the package's own binary (copied with the execute bit, which
// the package's files do not carry; cudamatrix sets it when it deploys the binary too).
const probe = path.join(work, 'cudaprobe');
if (!skipAccuracy || newProbes || p2p || behaviourChecks || capabilityChecks) {
  copyFileSync(path.join(installed, 'prebuilt', 'linux-x64', 'cudaprobe'), probe);
  chmodSync(probe, 0o755);
}
if (!skipAccuracy) {
  await step(
    'probe-accuracy',
    () =>
      $({ nothrow: true })`${node} ${path.join(gpu, 'probe-accuracy.mjs')} --probe ${probe} --out ${path.join(out, 'probe-accuracy.json')}`,
  );
}

// 4b. Issue 24's memory probes: checked against their peer (which also writes the capped matrix),
// then run and recorded through the installed package with the same caps.
if (newProbes) {
  const dir = path.join(out, 'new-probes');
  mkdirSync(dir, { recursive: true });
  await step(
    'new-probes-checks',
    () =>
      $({ nothrow: true })`${node} ${path.join(gpu, 'memory-checks.mjs')} --probe ${probe} --out ${path.join(dir, 'memory-checks.json')}`,
  );
  const matrix = path.join(dir, 'new-probes.yaml');
  if (existsSync(matrix)) {
    await step(
      'new-probes-run',
      () => withEnv`${cudamatrix} run -m ${matrix} --results-dir ${path.join(dir, 'runs')} --junit ${path.join(dir, 'junit.xml')}`,
    );
  } else {
    note('new-probes-run: not run (memory-checks wrote no matrix: see new-probes-checks.txt)');
  }
}

// 4c. Issue 24's other probes against their peer (its script is read from the checkout beside .gpu/).
if (behaviourChecks) {
  await step(
    'behaviour-checks',
    () =>
      $({
        nothrow: true,
      })`${node} ${path.join(gpu, 'behaviour-checks.mjs')} --probe ${probe} --out ${path.join(out, 'behaviour-checks.json')}`,
  );
}

// 4d. Issue 36's capability facts against their peer (its script is read from the checkout beside .gpu/).
if (capabilityChecks) {
  await step(
    'capability-checks',
    () =>
      $({
        nothrow: true,
      })`${node} ${path.join(gpu, 'capability-check.mjs')} --probe ${probe} --out ${path.join(out, 'capability-checks.json')}`,
  );
}

// 5. The machine as nvidia-smi and PyTorch see it.
await step(
  'peer',
  () =>
    $({ nothrow: true })`/bin/sh -c ${[
      'nvidia-smi --query-gpu=name,uuid,driver_version,memory.total,pcie.link.gen.current,pcie.link.gen.max,pcie.link.width.current,pcie.link.width.max,compute_cap --format=csv',
      'nvidia-smi | head -5',
      'cat /proc/driver/nvidia/version',
      'uname -a',
      'python3 -c "import torch; print(\'torch\', torch.__version__, torch.version.cuda, torch.cuda.get_device_name(0))"',
    ].join('; ')}`,
);

// 6. --p2p: the same pairs through the p2p probe, the CUDA runtime API and nvidia-smi.
if (p2p) {
  const run = async (name: string, argv: string[]) => {
    let stdout = '';
    await step(name, async () => {
      const commandResult = await $({ nothrow: true })`${argv}`;
      stdout = commandResult.stdout;
      return commandResult;
    });
    return stdout;
  };
  const probeOut = await run('p2p-probe', [probe, 'run', 'p2p']);
  const checkOut = await run('p2p-check', [path.join(gpu, 'p2p-check'), '256', '10']);
  const topo = await run('p2p-topo', ['nvidia-smi', 'topo', '-m']);
  await run('p2p-topo-p2p', ['nvidia-smi', 'topo', '-p2p', 'r']);
  const compared = compareP2p(probeOut, checkOut, topo);
  writeFileSync(path.join(out, 'p2p-compare.json'), `${JSON.stringify(compared, null, 2)}\n`);
  for (const row of compared.rows) {
    note(
      `p2p ${row.src} to ${row.dst} peer ${row.peer ? 'on' : 'off'}: probe ${row.probeGbps?.toFixed(1)} GB/s, check ${row.checkGbps?.toFixed(1)} GB/s, intact ${row.probeIntact}/${row.checkIntact}${row.agrees ? '' : ' DISAGREE'}`,
    );
  }
  note(`p2p-compare: ${compared.agrees ? 'agrees' : 'disagrees'}${compared.problems.length ? `: ${compared.problems.join('; ')}` : ''}`);
}

await $`tar -C ${out} -czf ${path.join(result, 'gpu-suite.tgz')} .`;
copyFileSync(path.join(out, 'gpu-suite.log'), path.join(result, 'gpu-suite.log'));
