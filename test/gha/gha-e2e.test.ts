/**
 * The GitHub Actions workflow end to end, played here with the real commands (tools/gha-player/player.ts):
 * the example caller (docs/examples/driver-matrix.yml, byte for byte docs/github-actions.md's snippet) calls
 * .github/workflows/gpu-matrix.yml, whose plan job runs `cudamatrix gha matrix` through the action
 * (action.yml) on the packed package, whose probe jobs run `cudamatrix run --target` per entry on
 * their runners, and whose merge job runs `cudamatrix gha merge`, uploads the results and opens the
 * pull request with the records. Every step runs as GitHub would run it (GITHUB_ACTIONS=true, a
 * GITHUB_OUTPUT and GITHUB_STEP_SUMMARY per step, workflow commands read from the output).
 *
 * The lab (matrix/gpu-lab.yaml of the caller's repository):
 *   local       runsOn [.., h200]  the H200 runner: this machine has no GPU, so its job's run step is
 *                                  replaced by the event log the real H200 wrote (committed under
 *                                  records/driver-580.159.04/h200-linux-2026-12-01-run2),
 *                                  one fact changed, as a new driver would: behaviour changed
 *   gpu-box     runsOn [.., gpu]   a real local run with an expectation that fails here
 *   killed-box  runsOn [.., flaky] a real local run whose runner is lost mid-probe (its process tree
 *                                  SIGKILLed, nothing after that step runs: no artifact)
 *   ssh-box     no runsOn          reached over SSH (a real sshd on 127.0.0.1) from the shared job, with
 *                                  the key (encrypted), known_hosts and passphrase the caller passes as
 *                                  secrets: the target names none of them
 *
 * Declared stand-ins (the player logs each): the plan job's node:20-bullseye container (its steps run
 * on this machine); actions/checkout, setup-node, upload-/download-artifact
 * (folders, see tools/gha-player/standins.ts); the plan job's package build (pnpm pack on GitHub's
 * runner) replaced by the tarball test/package.ts packs from this checkout; `gh`, which would talk
 * to GitHub, by a script that records its arguments (git itself is real: the pull request's branch
 * is pushed to a bare repository standing for the caller's GitHub repository).
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, cpSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parse as parseYaml, stringify as toYaml } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readEventLog, type RunStartEvent } from '../../events/events.ts';
import { H200_RUNS } from '../record-fixture.ts';
import { playWorkflow, type JobPlay, type LegInfo, type WorkflowPlay } from '@cudamatrix/gha-player';
import { repoRoot, tempDir, validateJunit } from '../helpers.ts';
import { git, makeLab } from './gha-lab.ts';
import { packCheckout } from '../package.ts';
import { sshdReady, startSshd, TEST_PASSPHRASE, type Sshd } from '../sshd.ts';

const ready = sshdReady();
const H200_LOG = H200_RUNS[3]!;

/** The caller's lab matrix: the H200 log's own expectations (a merged run is judged against one matrix). */
function labMatrix(sshd: Sshd): string {
  const start = readEventLog(H200_LOG)[0] as RunStartEvent;
  const probes = [...new Set(start.cells.map((cellName) => cellName.split('/')[1]!))];
  return toYaml({
    version: 1,
    description: 'The lab of the end-to-end test',
    expectations: start.matrix.expectations,
    targets: [
      { name: 'local', runsOn: ['self-hosted', 'linux', 'gpu', 'h200'], probes },
      {
        name: 'gpu-box',
        runsOn: ['self-hosted', 'linux', 'gpu'],
        probes: ['sysinfo', 'sync-latency'],
        expect: [{ fact: 'sysinfo.os_family', equals: 'windows', why: 'fails on this Linux machine, on purpose' }],
      },
      { name: 'killed-box', runsOn: ['self-hosted', 'linux', 'flaky'], probes: ['sysinfo', 'sync-latency'] },
      // No identityFile, knownHosts or passphraseEnv: the shared job's secrets give them.
      {
        name: 'ssh-box',
        transport: { kind: 'ssh', host: '127.0.0.1', port: sshd.ports[0], sshConfig: false, retries: 0 },
        probes: ['sysinfo'],
      },
    ],
  });
}

/** The leg of a called job by its matrix entry's name (or the job's only leg). */
function leg(play: WorkflowPlay, jobId: string, name?: string): JobPlay {
  const called = play.jobs['gpu-lab']!.calls[0]!;
  const legs = called.jobs[jobId]!.legs;
  const found = name === undefined ? legs[0] : legs.find((jobLeg) => (jobLeg.matrix as { name?: string } | null)?.name === name);
  if (!found) throw new Error(`no leg ${jobId} ${name ?? ''}: ${legs.map((jobLeg) => jobLeg.name).join(', ')}`);
  return found;
}

describe.runIf(ready)('the GPU matrix workflow, played from the example caller (docs/github-actions.md)', () => {
  let sshd: Sshd;
  let tarball: string;
  let play: WorkflowPlay;
  let dir: string;
  let origin: string;
  let ghCalls: string;
  /** The run id of the job whose runner is lost: what that machine would have taken down with it is cleared after. */
  let lostRun = '';
  /** The caller's secrets (the repository's): the SSH key, known_hosts and passphrase. */
  let secrets: Record<string, string>;
  /** The shared job's secret files as its run step saw them (path -> mode), and what was left of them once it ended. */
  const secretFiles = new Map<string, number>();
  let secretFilesLeft: string[] | undefined;

  beforeAll(async () => {
    sshd = await startSshd(1);
    tarball = packCheckout();
    dir = tempDir('cm-gha-e2e-');

    // cudamatrix as the caller names it (your-org/cudamatrix), and the caller's repository (your-org/lab) with its origin.
    const made = makeLab(dir, labMatrix(sshd));
    const { cudamatrix, lab } = made;
    origin = made.origin;

    // gh talks to GitHub: a script stands in that records what it was asked (and says so).
    const bin = path.join(dir, 'bin');
    mkdirSync(bin);
    ghCalls = path.join(dir, 'gh-calls.jsonl');
    writeFileSync(
      path.join(bin, 'gh'),
      `#!/usr/bin/env node\n// [player] gh stand-in: records its arguments; nothing reaches GitHub\nrequire('fs').appendFileSync(${JSON.stringify(ghCalls)}, JSON.stringify(process.argv.slice(2)) + '\\n');\nif (process.argv[2] === 'pr') console.log('https://github.com/your-org/lab/pull/7');\n`,
    );
    chmodSync(path.join(bin, 'gh'), 0o755);

    let legs = 0;
    // Each job gets a fresh runner: a clone of the lab's repository (as actions/checkout gives).
    const workspace = (legInfo: LegInfo) => {
      const ws = path.join(dir, 'runners', `${legInfo.jobId}-${legInfo.index}-${legs++}`);
      git(dir, 'clone', '-q', origin, ws);
      return ws;
    };
    const h200Log = readFileSync(H200_LOG, 'utf8');
    // A driver that starts counting pinned host memory as VRAM: one fact changed (and its run id, so that it is another run).
    const newDriver = h200Log.replace(/("name":"counts_as_vram","value":)false/, '$1true').replace(/"runId":"([^"]+)"/, '"runId":"$1-e2e"');
    expect(newDriver).not.toBe(h200Log);

    secrets = {
      LAB_SSH_PRIVATE_KEY: readFileSync(sshd.encryptedKey, 'utf8'),
      LAB_SSH_KNOWN_HOSTS: readFileSync(sshd.knownHosts, 'utf8'),
      LAB_SSH_KEY_PASSPHRASE: TEST_PASSPHRASE,
    };
    play = await playWorkflow({
      secrets,
      workflowFile: path.join(lab, '.github/workflows/driver-matrix.yml'),
      event: 'workflow_dispatch',
      github: { repository: 'your-org/lab' },
      workspace,
      artifactsDir: path.join(dir, 'artifacts'),
      repos: { 'your-org/cudamatrix': cudamatrix },
      // The plan job packs in a node:20-bullseye container on GitHub; here its steps run on this
      // machine (Debian 12, Node.js 20), and the packing step itself is replaced below.
      containers: 'run-here',
      // The runner machine's environment: gh (the SSH secrets come from the caller's secrets).
      env: { ...process.env, PATH: `${bin}:${process.env.PATH}`, NO_COLOR: '1' },
      replaceSteps: {
        // The package GitHub's runner would pack (the step's contract: one cudamatrix-*.tgz in .cudamatrix/, output tarball).
        'plan.package': (ctx) => {
          const dest = path.join(ctx.workspace, '.cudamatrix', path.basename(tarball));
          cpSync(tarball, dest);
          ctx.log(`[player] the package step is replaced: ${tarball} (packed from this checkout by test/package.ts)`);
          ctx.setOutput('tarball', dest);
        },
      },
      perLeg: (legInfo) => {
        const name = (legInfo.matrix as { name?: string } | null)?.name;
        if (legInfo.jobId === 'probe' && name === 'local') {
          return {
            replaceSteps: {
              // No GPU here: the H200 runner's run step writes what the real H200 wrote.
              'probe.run': (ctx) => {
                const runDir = path.join(ctx.with['results-dir']!, 'h200-run');
                mkdirSync(runDir, { recursive: true });
                writeFileSync(path.join(runDir, 'events.jsonl'), newDriver);
                ctx.log(
                  `[player] no GPU here: the run step is replaced by the H200's event log (${path.relative(repoRoot, H200_LOG)}, one fact changed)`,
                );
              },
            },
          };
        }
        if (legInfo.jobId === 'probe' && name === 'shared') {
          return {
            hooks: {
              // What the action writes for the step, while the CLI runs, and what is left when it has ended.
              onStepSpawn: (step, child) => {
                if (step.stepId !== 'run') return;
                const runnerTemp = readFileSync(`/proc/${child.pid}/environ`, 'utf8')
                  .split('\0')
                  .find((variable) => variable.startsWith('RUNNER_TEMP='))!
                  .slice('RUNNER_TEMP='.length);
                const look = () => {
                  const dirs = readdirSync(runnerTemp)
                    .filter((entryName) => entryName.startsWith('cudamatrix-ssh-'))
                    .map((entryName) => path.join(runnerTemp, entryName));
                  for (const sshDir of dirs)
                    for (const secretFile of [sshDir, ...readdirSync(sshDir).map((entryName) => path.join(sshDir, entryName))])
                      secretFiles.set(secretFile, statSync(secretFile).mode & 0o777);
                  return dirs;
                };
                const timer = setInterval(() => {
                  try {
                    look();
                  } catch {
                    // removed between the listing and the stat: the step is ending
                  }
                }, 20);
                child.once('exit', () => {
                  clearInterval(timer);
                  secretFilesLeft = look();
                });
              },
            },
          };
        }
        if (legInfo.jobId === 'probe' && name === 'killed-box') {
          return {
            // Each probe waits a minute first (cudaprobe's test hook), so the runner is lost mid-probe.
            env: { ...process.env, CUDAPROBE_TEST_DELAY_MS: '60000' },
            hooks: {
              onStepSpawn: (step, child, control) => {
                if (step.stepId !== 'run') return;
                // The step's results folder is under its job's RUNNER_TEMP (read from the process's environment).
                const runnerTemp = readFileSync(`/proc/${child.pid}/environ`, 'utf8')
                  .split('\0')
                  .find((variable) => variable.startsWith('RUNNER_TEMP='))!
                  .slice('RUNNER_TEMP='.length);
                const results = path.join(runnerTemp, 'cudamatrix-results');
                const timer = setInterval(() => {
                  const runs = existsSync(results) ? readdirSync(results) : [];
                  const log = runs.length ? path.join(results, runs[0]!, 'events.jsonl') : '';
                  if (log && existsSync(log) && readFileSync(log, 'utf8').includes('"cell-start"')) {
                    clearInterval(timer);
                    lostRun = runs[0]!;
                    control.loseRunner();
                  }
                }, 50);
                child.once('exit', () => clearInterval(timer));
              },
            },
          };
        }
        return undefined;
      },
    });
  }, 600_000);

  afterAll(async () => {
    await sshd?.stop();
    // A lost machine takes its processes and temp folders with it; this one is still here. The
    // probe runs in a session of its own (so the step's process group did not take it): kill it,
    // and remove the local session's work folder.
    if (lostRun) {
      spawnSync('pkill', ['-KILL', '-f', `cudamatrix-${lostRun}-`]);
      for (const entryName of readdirSync(tmpdir()))
        if (entryName.startsWith(`cudamatrix-${lostRun}-`)) rmSync(path.join(tmpdir(), entryName), { recursive: true, force: true });
    }
  });

  it('plans one job per labelled target and one shared job, each on its labels', () => {
    const plan = leg(play, 'plan');
    expect(plan.status).toBe('success');
    const jobs = JSON.parse(plan.outputs.matrix!) as { include: { name: string; targets: string; runsOn: string[] }[] };
    expect(jobs.include.map((e) => [e.name, e.targets, e.runsOn.join(',')])).toEqual([
      ['local', 'local', 'self-hosted,linux,gpu,h200'],
      ['gpu-box', 'gpu-box', 'self-hosted,linux,gpu'],
      ['killed-box', 'killed-box', 'self-hosted,linux,flaky'],
      ['shared', 'ssh-box', 'self-hosted,linux,cudamatrix-shared'],
    ]);
    expect(plan.summary).toContain('| shared | ssh-box | self-hosted, linux, cudamatrix-shared |');
    const probes = play.jobs['gpu-lab']!.calls[0]!.jobs.probe!.legs;
    expect(probes.map((probeLeg) => probeLeg.runsOn.join(','))).toEqual(jobs.include.map((e) => e.runsOn.join(',')));
  });

  it('runs each probe job: a failed expectation fails its job (annotated), a lost runner leaves nothing, the SSH job reaches its target with the secrets', () => {
    const gpu = leg(play, 'probe', 'gpu-box');
    expect(gpu.status).toBe('failure');
    expect(gpu.steps.find((step) => step.id === 'run')!.exitCode).toBe(1);
    expect(gpu.annotations).toContainEqual(expect.objectContaining({ level: 'error', title: 'gpu-box: sysinfo.os_family == "windows"' }));
    expect(gpu.groups.map((group) => group.title)).toContainEqual(expect.stringMatching(/^gpu-box: failed/));
    // The upload runs after a failed step (if: always()).
    expect(gpu.steps.find((step) => step.id === 'upload-events')!.outcome).toBe('success');
    expect(gpu.summary).toContain('sysinfo.os_family == "windows"');

    const killed = leg(play, 'probe', 'killed-box');
    expect(killed.status).toBe('killed');
    expect(killed.steps.map((step) => step.id)).not.toContain('upload-events');
    expect(existsSync(path.join(dir, 'artifacts', 'cudamatrix-events-killed-box'))).toBe(false);

    // The key, known_hosts and passphrase of the caller's secrets reached the run: the target connected
    // (its sshd knows only that key, and the key only opens with the passphrase). No driver there:
    // strict fails the job (exit 4) and names the target.
    const shared = leg(play, 'probe', 'shared');
    const run = shared.steps.find((step) => step.id === 'run')!;
    expect(run.log).toMatch(/reached ssh \S+@127\.0\.0\.1:\d+ \(linux/);
    expect(run.log).toMatch(/SSH key, known_hosts, passphrase from the inputs, for this step: .*cudamatrix-ssh-/);
    expect(run.exitCode).toBe(4);
    expect(shared.annotations).toContainEqual(expect.objectContaining({ level: 'error', title: 'ssh-box: measured nothing' }));
  });

  it('writes the SSH secrets in the shared job only, as files only its user can read, removed when the step ends', () => {
    const modes = [...secretFiles.entries()].map(([file, mode]) => [
      path.basename(file).replace(/^cudamatrix-ssh-.*/, 'dir'),
      mode.toString(8),
    ]);
    expect(modes.sort()).toEqual([
      ['dir', '700'],
      ['id_key', '600'],
      ['known_hosts', '600'],
    ]);
    expect(secretFilesLeft).toEqual([]);
    // The labelled jobs got none: their run steps wrote no secret files.
    for (const name of ['gpu-box', 'local']) expect(leg(play, 'probe', name).log).not.toMatch(/from the inputs, for this step/);
  });

  it('never shows a secret in any log, summary or output, nor leaves one in a file', () => {
    const called = play.jobs['gpu-lab']!.calls[0]!;
    const everything = Object.values(called.jobs).flatMap((j) =>
      j.legs.flatMap((jobLeg) => [jobLeg.log, jobLeg.summary, JSON.stringify(jobLeg.outputs), JSON.stringify(jobLeg.annotations)]),
    );
    const keyLines = secrets.LAB_SSH_PRIVATE_KEY!.split('\n').filter((line) => line.length > 20 && !line.startsWith('-----'));
    expect(keyLines.length).toBeGreaterThan(2);
    for (const text of everything) {
      expect(text).not.toContain(TEST_PASSPHRASE);
      for (const line of keyLines) expect(text).not.toContain(line);
    }
    // Nowhere in the runners' workspaces, the artifacts, the repositories (the runners' temp folders are gone with their jobs).
    const found = spawnSync('grep', ['-rlF', '-e', keyLines[1]!, '-e', TEST_PASSPHRASE, dir], { encoding: 'utf8' });
    expect(found.stdout).toBe('');
    expect(found.status).toBe(1);
  });

  it('merges after failed and lost jobs: the lost target marked, the failed expectation and the changed behaviour reported', () => {
    const merge = leg(play, 'merge');
    const out = merge.outputs;
    expect(out).toMatchObject({ lost: 'killed-box', 'behaviour-changed': 'true', 'records-written': '1', 'exit-code': '3', failed: '2' });
    // The H200's 15 expectations less the one the changed fact breaks, and none of the others'.
    expect(out.passed).toBe('14');
    const mergeStep = merge.steps.find((step) => step.id === 'merge')!;
    expect(mergeStep.exitCode).toBe(3);
    expect(merge.summary).toMatch(/\| local \| linux \| NVIDIA H200 \| 580\.159\.04 \|/);
    expect(merge.summary).toMatch(/\| gpu-box \| linux \|/);
    expect(merge.summary).toContain('| killed-box | killed-box | no event log (artifact missing) | 2 |');
    expect(merge.summary).toMatch(/\*\*Behaviour changed\.\*\*[\s\S]*fact `pinned-vram\.counts_as_vram`: false -> true/);
    // The runners that measured nothing (no driver on this machine), by job and labels: the H200 did measure, so a warning.
    expect(merge.summary).toContain('### Measured nothing: 2 targets');
    expect(merge.summary).toMatch(/^\| gpu-box \| job gpu-box on \[self-hosted, linux, gpu\] \| no NVIDIA driver found/m);
    expect(merge.summary).toMatch(/^\| ssh-box \| job shared on \[self-hosted, linux, cudamatrix-shared\] \| no NVIDIA driver found/m);
    expect(merge.annotations).toContainEqual(expect.objectContaining({ level: 'warning', title: 'gpu-box: measured nothing' }));
    const titles = merge.annotations.map((annotation) => `${annotation.level} ${annotation.title}`);
    expect(titles).toEqual(
      expect.arrayContaining([
        'error gpu-box: sysinfo.os_family == "windows"',
        'error killed-box: JOB_LOST',
        'error local: pinned-vram.counts_as_vram == false',
      ]),
    );
    // The reusable workflow's outputs reach the caller.
    expect(play.jobs['gpu-lab']!.outputs).toMatchObject({ lost: 'killed-box', 'behaviour-changed': 'true', 'exit-code': '3' });
  });

  it('uploads the merged run (JUnit), the new record and the regenerated report', async () => {
    const results = path.join(dir, 'artifacts', 'cudamatrix-results');
    const files = execFileSync('find', [results, '-type', 'f'], { encoding: 'utf8' })
      .split('\n')
      .filter(Boolean)
      .map((file) => path.relative(results, file));
    const junit = files.find((file) => file.endsWith('junit.xml'))!;
    const xml = readFileSync(path.join(results, junit), 'utf8');
    await validateJunit(xml);
    expect(xml).toMatch(/<testsuite name="killed-box"[^>]*errors="2"/);
    expect(xml).toContain('type="JOB_LOST"');
    const record = files.find((file) => /records\/driver-580\.159\.04\/linux-h200-docker-.*\.json$/.test(file))!;
    expect(record).toBeDefined();
    const data = JSON.parse(readFileSync(path.join(results, record), 'utf8')) as { facts: Record<string, { value: unknown }> };
    expect(data.facts['pinned-vram.counts_as_vram']!.value).toBe(true);
    expect(files).toEqual(expect.arrayContaining(['records/BEHAVIOUR.md', 'records/behaviour.html']));
    // The new record conflicts with the committed one of the same key: the report says so.
    expect(readFileSync(path.join(results, 'records/BEHAVIOUR.md'), 'utf8')).toContain('⚠ conflict');
  });

  it('opens the pull request with the records and the report, nothing else (git real, gh a stand-in)', () => {
    const merge = leg(play, 'merge');
    const pr = merge.steps.find((step) => step.id === 'pull-request')!;
    expect(pr.outcome).toBe('success');
    expect(merge.outputs['pull-request'] ?? play.jobs['gpu-lab']!.outputs['pull-request']).toBe('https://github.com/your-org/lab/pull/7');
    const calls = readFileSync(ghCalls, 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as string[]);
    const create = calls.find((call) => call[0] === 'pr' && call[1] === 'create')!;
    expect(create).toEqual(expect.arrayContaining(['--base', 'main']));
    const branch = create[create.indexOf('--head') + 1]!;
    expect(branch).toMatch(/^cudamatrix\/records-/);
    expect(create[create.indexOf('--body') + 1]).toContain('Behaviour changed against the committed records');
    const changed = git(origin, 'diff', '--name-only', 'main', branch).trim().split('\n');
    expect(changed.length).toBeGreaterThanOrEqual(2);
    // The records, and the report made from them: BEHAVIOUR.md, behaviour.html and the claim pages.
    for (const changedFile of changed)
      expect(changedFile).toMatch(
        /^records\/(driver-580\.159\.04\/linux-h200-docker-.*\.json|BEHAVIOUR\.md|behaviour\.html|claims\/(C\d+\.html|index\.html|claims\.json))$/,
      );
  });
});
