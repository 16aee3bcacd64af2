/**
 * cudamatrix gha matrix and gha merge through the real CLI, with GITHUB_ACTIONS=true and the
 * runner's files pointing at temp files: the plan, jobs' logs merged back, lost jobs (no log; a log
 * killed mid-run) marked, and the behaviour records compared with those already committed — on
 * the real H200 logs committed under records. (test/gha/gha-e2e.test.ts plays the workflow
 * itself; this file covers what gha merge decides.)
 */
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { readEventLog } from '../../events/events.ts';
import { H200_RUNS, halvedBandwidthLog } from '../record-fixture.ts';
import { runCli, startCli, whenOutput } from '../cli.ts';
import { parseFileCommand } from '@cudamatrix/gha-player';
import { repoRoot, tempDir, validateJunit } from '../helpers.ts';

/** A step's runner files, as GitHub gives them: empty files named by the environment. */
function actionsEnv(dir: string) {
  const files = { GITHUB_OUTPUT: path.join(dir, 'output'), GITHUB_STEP_SUMMARY: path.join(dir, 'summary.md') };
  for (const file of Object.values(files)) writeFileSync(file, '');
  return {
    env: { GITHUB_ACTIONS: 'true', ...files },
    outputs: () => Object.fromEntries(parseFileCommand(readFileSync(files.GITHUB_OUTPUT, 'utf8'), 'GITHUB_OUTPUT')),
    summary: () => readFileSync(files.GITHUB_STEP_SUMMARY, 'utf8'),
  };
}

const LAB = `version: 1
defaults: {probes: [sysinfo, sync-latency]}
targets:
  - name: gpu-box
    runsOn: [self-hosted, linux, gpu]
    expect:
      - {fact: sysinfo.os_family, equals: windows, why: fails here on purpose}
  - name: shared-a
  - name: shared-b
`;

/** SIGKILL a process and every process under it (found by parent id), children first. */
function killTree(pid: number): void {
  // (ps exits 1 when there are none.)
  const children = spawnSync('ps', ['-o', 'pid=', '--ppid', String(pid)], { encoding: 'utf8' })
    .stdout.split('\n')
    .map(Number)
    .filter(Boolean);
  try {
    process.kill(pid, 'SIGSTOP');
  } catch {}
  for (const child of children) killTree(child);
  try {
    process.kill(pid, 'SIGKILL');
  } catch {}
}

/** The lab planned, and gpu-box's job started with every probe waiting a minute first (cudaprobe's test hook): for a test to stop it. */
async function labWithSlowGpuBox() {
  const dir = tempDir();
  const matrix = path.join(dir, 'lab.yaml');
  writeFileSync(matrix, LAB);
  const planned = await runCli(['gha', 'matrix', '-m', matrix]);
  const artifacts = path.join(dir, 'artifacts');
  const results = path.join(artifacts, 'cudamatrix-events-gpu-box');
  const { child, done } = startCli(['run', '-m', matrix, '--target', 'gpu-box', '--results-dir', results], {
    env: { CUDAPROBE_TEST_DELAY_MS: '60000' },
  });
  return { dir, matrix, planned, artifacts, results, child, done };
}

const PLAN_ONE_LOCAL = JSON.stringify({ include: [{ name: 'local', targets: 'local', runsOn: ['self-hosted', 'gpu'], labelled: true }] });

/**
 * The committed records as they were when the H200 runs these tests replay were made: no event
 * logs, and no record of a later run (2026-12-02: the newest of a key is what a new run is
 * compared with).
 */
const recordsOfTheseRuns = (src: string) => !src.endsWith('.jsonl') && !/linux-h200-docker-2026-12-0[2-9]/.test(path.basename(src));

describe('gha matrix and gha merge', () => {
  it('plans, runs each job, and merges the jobs back into one judged run with the job summary and outputs', async () => {
    const dir = tempDir();
    const matrix = path.join(dir, 'lab.yaml');
    writeFileSync(matrix, LAB);
    const plan = actionsEnv(path.join(dir));
    const planned = await runCli(['gha', 'matrix', '-m', matrix], { env: plan.env });
    expect(planned.code).toBe(0);
    const jobs = JSON.parse(planned.stdout) as { include: { name: string; targets: string }[] };
    expect(jobs.include.map((e) => [e.name, e.targets])).toEqual([
      ['gpu-box', 'gpu-box'],
      ['shared', 'shared-a,shared-b'],
    ]);
    expect(JSON.parse(plan.outputs().matrix!)).toEqual(jobs);
    expect(plan.summary()).toContain('| shared | shared-a, shared-b | self-hosted, linux, cudamatrix-shared |');

    const artifacts = path.join(dir, 'artifacts');
    for (const job of jobs.include) {
      const step = actionsEnv(tempDir());
      const result = await runCli(
        ['run', '-m', matrix, '--target', job.targets, '--results-dir', path.join(artifacts, `cudamatrix-events-${job.name}`)],
        { env: step.env },
      );
      expect(result.code).toBe(job.name === 'gpu-box' ? 1 : 0);
    }

    const merge = actionsEnv(tempDir());
    const junit = path.join(dir, 'junit.xml');
    const merged = await runCli(
      [
        'gha',
        'merge',
        artifacts,
        '--plan',
        planned.stdout.trim(),
        '-m',
        matrix,
        '--results-dir',
        path.join(dir, 'merged'),
        '--junit',
        junit,
        '--records-dir',
        path.join(dir, 'records'),
        '--report-dir',
        path.join(dir, 'report'),
      ],
      { env: merge.env },
    );
    expect(merged.code).toBe(1);
    expect(merged.stderr).toContain('merged 2 event logs of 2 jobs');
    const out = merge.outputs();
    expect(out).toMatchObject({
      total: '1',
      failed: '1',
      cells: '6',
      lost: '',
      'behaviour-changed': 'false',
      'records-written': '0',
      'exit-code': '1',
    });
    expect(readdirSync(out['run-dir']!)).toEqual(expect.arrayContaining(['events.jsonl', 'junit.xml', 'summary.json']));
    expect(merged.stdout).toMatch(/^::error title=gpu-box%3A sysinfo.os_family == "windows"::/m);
    expect(merge.summary()).toContain('Nothing recorded: no target of this run observed a GPU');
    await validateJunit(readFileSync(junit, 'utf8'));
  });

  it('marks a job that left no log, and one killed mid-run, as lost: the merge still ends, judged', async () => {
    // gpu-box's job is killed (SIGKILL, as a runner that dies) while its second probe runs; the
    // shared job never uploads anything.
    const { dir, matrix, planned, artifacts, results, child, done } = await labWithSlowGpuBox();
    const started = Date.now();
    for (;;) {
      const runs = existsSync(results) ? readdirSync(results) : [];
      const log = runs.length ? path.join(results, runs[0]!, 'events.jsonl') : '';
      if (log && existsSync(log) && readFileSync(log, 'utf8').includes('"cell-start"')) break;
      if (Date.now() - started > 30_000) throw new Error('the run never started a probe');
      await new Promise((res) => setTimeout(res, 50));
    }
    // The whole tree, as when the machine goes: the probe runs in a session of its own.
    killTree(child.pid!);
    await done;
    // What a dead runner leaves in its temp folder (the local session's work folder) goes with the test's.
    const runId = readdirSync(results)[0]!;
    for (const entryName of readdirSync(tmpdir()))
      if (entryName.startsWith(`cudamatrix-${runId}-`)) rmSync(path.join(tmpdir(), entryName), { recursive: true, force: true });

    const merge = actionsEnv(tempDir());
    const junit = path.join(dir, 'junit.xml');
    const result = await runCli(
      [
        'gha',
        'merge',
        artifacts,
        '--plan',
        planned.stdout.trim(),
        '-m',
        matrix,
        '--results-dir',
        path.join(dir, 'merged'),
        '--junit',
        junit,
        '--no-record',
      ],
      { env: merge.env },
    );
    expect(result.code).toBe(3);
    const out = merge.outputs();
    expect(out.lost).toBe('gpu-box,shared-a,shared-b');
    expect(out.interrupted).toBe('false');
    expect(result.stderr).toMatch(/LOST: target gpu-box \(job gpu-box\): its event log stops without an end; 2 cells ended as JOB_LOST/);
    expect(result.stderr).toMatch(/LOST: target shared-a \(job shared\): no event log/);
    const events = readEventLog(out['events-file']!);
    expect(events.at(-1)).toMatchObject({ type: 'run-end', interrupted: false });
    expect(events.filter((e) => e.type === 'cell-end' && e.errorCode === 'JOB_LOST')).toHaveLength(6);
    const xml = readFileSync(junit, 'utf8');
    await validateJunit(xml);
    // Six cells, and gpu-box's expectation on sysinfo, which never finished.
    expect(xml).toMatch(/<testsuites [^>]*errors="7"/);
    expect(xml).toContain('job &quot;shared&quot; left no event log for target shared-a');
    expect(merge.summary()).toContain('| gpu-box | gpu-box | its event log stops without an end | 2 |');
    // The annotations name the lost targets (a job of its own for each).
    expect(result.stdout).toMatch(/^::error title=shared-b%3A JOB_LOST::job "shared" left no event log/m);
  });

  it("counts a job that timed out or was cancelled (its run interrupted by the runner's Ctrl-C) as lost, not the merge as interrupted", async () => {
    const { dir, matrix, planned, artifacts, child, done } = await labWithSlowGpuBox();
    await whenOutput(child, '▶ gpu-box', () => setTimeout(() => child.kill('SIGINT'), 300));
    expect((await done).code).toBe(130);
    const shared = await runCli([
      'run',
      '-m',
      matrix,
      '--target',
      'shared-a,shared-b',
      '--results-dir',
      path.join(artifacts, 'cudamatrix-events-shared'),
    ]);
    expect(shared.code).toBe(0);

    const merge = actionsEnv(tempDir());
    const result = await runCli(
      ['gha', 'merge', artifacts, '--plan', planned.stdout.trim(), '-m', matrix, '--results-dir', path.join(dir, 'merged'), '--no-record'],
      { env: merge.env },
    );
    expect(result.code).toBe(3);
    expect(merge.outputs()).toMatchObject({ lost: 'gpu-box', interrupted: 'false', 'exit-code': '3' });
    expect(result.stderr).toMatch(
      /LOST: target gpu-box \(job gpu-box\): stopped before it finished \(timed out or cancelled\); 2 cells ended as JOB_LOST/,
    );
    expect(merge.summary()).toContain('| gpu-box | gpu-box | stopped before it finished (timed out or cancelled) | 2 |');
  });

  it('refuses logs of targets the plan does not list, naming the log', async () => {
    const dir = tempDir();
    const matrix = path.join(dir, 'lab.yaml');
    writeFileSync(matrix, LAB);
    const artifacts = path.join(dir, 'artifacts');
    expect((await runCli(['run', '-m', matrix, '--target', 'shared-a', '--results-dir', artifacts])).code).toBe(0);
    // The default matrix's plan (target local) with the lab's log.
    const result = await runCli([
      'gha',
      'merge',
      artifacts,
      '--plan',
      PLAN_ONE_LOCAL,
      '--results-dir',
      path.join(dir, 'merged'),
      '--no-record',
    ]);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(
      /events\.jsonl holds target shared-a, which the plan does not list \(it lists local\): the log is of another run or another matrix/,
    );
    expect(existsSync(path.join(dir, 'merged'))).toBe(false);
  });

  it("keeps gha matrix's stdout the JSON alone under GitHub Actions, secrets masked on stderr", async () => {
    const step = actionsEnv(tempDir());
    const result = await runCli(['gha', 'matrix'], { env: { ...step.env, LAB_API_TOKEN: 's3cr3t-value-123' } });
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout)).toEqual({
      include: [{ name: 'shared', targets: 'local', runsOn: ['self-hosted', 'linux', 'cudamatrix-shared'], labelled: false }],
    });
    expect(result.stderr).toContain('::add-mask::s3cr3t-value-123');
  });

  it('on the real H200 logs: the same behaviour as the committed record is no change; a changed fact is, and is recorded and reported', async () => {
    const dir = tempDir();
    const records = path.join(dir, 'records');
    cpSync(path.join(repoRoot, 'records'), records, { recursive: true, filter: recordsOfTheseRuns });
    const artifacts = path.join(dir, 'artifacts', 'cudamatrix-events-local');
    mkdirSync(artifacts, { recursive: true });
    cpSync(H200_RUNS[3]!, path.join(artifacts, 'events.jsonl'));
    const same = actionsEnv(tempDir());
    const args = (results: string) => [
      'gha',
      'merge',
      path.dirname(artifacts),
      '--plan',
      PLAN_ONE_LOCAL,
      '--results-dir',
      results,
      '--records-dir',
      records,
      '--report-dir',
      path.join(dir, 'report'),
      '-q',
    ];
    const r1 = await runCli(args(path.join(dir, 'merged-1')), { env: same.env });
    expect(r1.code).toBe(0);
    expect(same.outputs()).toMatchObject({
      passed: '15',
      failed: '0',
      'behaviour-changed': 'false',
      'new-observations': '0',
      // The merged run is one more run of the observation: a repeat, which measures the key's noise.
      'records-written': '1',
    });
    expect(r1.stdout).toMatch(
      /a repeat of .*linux-h200-docker-2026-12-01-\w+\.json \(same key and facts, metrics within their noise\): \d+ runs of this observation now measure its run-to-run noise/,
    );
    expect(same.summary()).toContain('No behaviour changed');
    // The repeat was written, so the report was regenerated with it.
    expect(existsSync(path.join(dir, 'report', 'BEHAVIOUR.md'))).toBe(true);

    // The same run with one fact changed (as a driver that started counting pinned memory as VRAM).
    const text = readFileSync(H200_RUNS[3]!, 'utf8');
    const doctored = text.replace(/("name":"counts_as_vram","value":)false/, '$1true');
    expect(doctored).not.toBe(text);
    writeFileSync(path.join(artifacts, 'events.jsonl'), doctored.replace(/"runId":"([^"]+)"/, '"runId":"$1-doctored"'));
    const changed = actionsEnv(tempDir());
    const r2 = await runCli(args(path.join(dir, 'merged-2')), { env: changed.env });
    const out = changed.outputs();
    expect(out).toMatchObject({ 'behaviour-changed': 'true', 'records-written': '1' });
    expect(r2.stdout).toMatch(/CONFLICT with .*linux-h200-docker-2026-11-29-01c49d70\.json/);
    expect(existsSync(out.records!)).toBe(true);
    expect(changed.summary()).toMatch(/\*\*Behaviour changed\.\*\*[\s\S]*fact `pinned-vram\.counts_as_vram`: false -> true/);
    // The report was regenerated from the records folder as it now is.
    expect(readFileSync(path.join(dir, 'report', 'BEHAVIOUR.md'), 'utf8')).toContain(path.basename(out.records!, '.json').slice(0, 20));
    // An expectation of the default matrix fails on the changed fact, as it should.
    expect(r2.code).toBe(1);
  });

  it('--strict: a lab whose runners all found no driver fails (exit 4), each runner that measured nothing named; without it the same merge passes, with warnings', async () => {
    const dir = tempDir();
    const matrix = path.join(dir, 'lab.yaml');
    // The lab without gpu-box's failing expectation: nothing is judged, nothing fails.
    writeFileSync(matrix, LAB.replace(/    expect:\n.*\n/, ''));
    const planned = await runCli(['gha', 'matrix', '-m', matrix]);
    const jobs = JSON.parse(planned.stdout) as { include: { name: string; targets: string }[] };
    const artifacts = path.join(dir, 'artifacts');
    // The probe jobs as a workflow without strict runs them: no driver here, so every cell is skipped and each job passes.
    for (const job of jobs.include)
      expect(
        (
          await runCli([
            'run',
            '-m',
            matrix,
            '--target',
            job.targets,
            '--results-dir',
            path.join(artifacts, `cudamatrix-events-${job.name}`),
          ])
        ).code,
      ).toBe(0);
    const merge = (extra: string[]) => {
      const step = actionsEnv(tempDir());
      const args = [
        'gha',
        'merge',
        artifacts,
        '--plan',
        planned.stdout.trim(),
        '-m',
        matrix,
        '--results-dir',
        path.join(dir, `merged${extra.length}`),
        '--no-record',
        ...extra,
      ];
      return runCli(args, { env: step.env }).then((result) => ({ ...result, outputs: step.outputs(), summary: step.summary() }));
    };

    const lax = await merge([]);
    expect(lax.code).toBe(0);
    expect(lax.outputs).toMatchObject({ 'exit-code': '0', skipped: '0', passed: '0' });
    expect(lax.summary).toContain('### Measured nothing: 3 targets');
    expect(lax.summary).toContain('with strict this run would fail (exit 4)');
    expect(lax.stdout).toMatch(
      /^::warning title=gpu-box%3A measured nothing::job gpu-box on \[self-hosted, linux, gpu\]: every probe was skipped, nothing was measured: no NVIDIA driver found/m,
    );

    const strict = await merge(['--strict']);
    expect(strict.code).toBe(4);
    expect(strict.outputs['exit-code']).toBe('4');
    expect(strict.summary).toMatch(/^## ⏭️ cudamatrix run .*\n\n\*\*Exit status 4\*\*: nothing measured \(--strict\)/m);
    expect(strict.summary).not.toContain('every expectation met');
    expect(strict.summary).toContain('so the run fails (strict: exit 4)');
    // Per target, the job and the labels of the runner that measured nothing, and why.
    expect(strict.summary).toMatch(/^\| gpu-box \| job gpu-box on \[self-hosted, linux, gpu\] \| no NVIDIA driver found/m);
    expect(strict.summary).toMatch(/^\| shared-a \| job shared on \[self-hosted, linux, cudamatrix-shared\] \| no NVIDIA driver found/m);
    expect(strict.summary).toMatch(/^\| shared-b \| job shared on \[self-hosted, linux, cudamatrix-shared\] \|/m);
    for (const target of ['gpu-box', 'shared-a', 'shared-b'])
      expect(strict.stdout).toMatch(new RegExp(`^::error title=${target}%3A measured nothing::job `, 'm'));
    expect(strict.stdout).toContain('Exit status: 4 (--strict: nothing was measured)');
    // The merged run says it was strict: merge and record read it so.
    expect((readEventLog(strict.outputs['events-file']!)[0] as { options: { strict: boolean } }).options.strict).toBe(true);
  });

  it('--fail-on-change: changed behaviour is exit 5 with an error annotation naming the change; without it the same merge passes', async () => {
    const dir = tempDir();
    const records = path.join(dir, 'records');
    cpSync(path.join(repoRoot, 'records'), records, { recursive: true, filter: recordsOfTheseRuns });
    const artifacts = path.join(dir, 'artifacts', 'cudamatrix-events-local');
    mkdirSync(artifacts, { recursive: true });
    // A fact no expectation covers changed: every expectation is still met.
    const text = readFileSync(H200_RUNS[3]!, 'utf8');
    const doctored = text
      .replace(/("name":"registered_counts_as_vram","value":)false/, '$1true')
      .replace(/"runId":"([^"]+)"/, '"runId":"$1-registered"');
    expect(doctored).not.toBe(text);
    writeFileSync(path.join(artifacts, 'events.jsonl'), doctored);
    const merge = (name: string, extra: string[]) => {
      const step = actionsEnv(tempDir());
      const args = [
        'gha',
        'merge',
        path.dirname(artifacts),
        '--plan',
        PLAN_ONE_LOCAL,
        '--results-dir',
        path.join(dir, name),
        '--records-dir',
        path.join(dir, name, 'records'),
        '--report-dir',
        path.join(dir, name, 'report'),
        '-q',
        ...extra,
      ];
      cpSync(records, path.join(dir, name, 'records'), { recursive: true });
      return runCli(args, { env: step.env }).then((result) => ({ ...result, outputs: step.outputs(), summary: step.summary() }));
    };

    const lax = await merge('lax', []);
    expect(lax.code).toBe(0);
    expect(lax.outputs).toMatchObject({ 'behaviour-changed': 'true', failed: '0', 'exit-code': '0' });
    expect(lax.stdout).not.toMatch(/^::error/m);

    const strict = await merge('fail', ['--fail-on-change']);
    expect(strict.code).toBe(5);
    expect(strict.outputs).toMatchObject({ 'behaviour-changed': 'true', failed: '0', 'exit-code': '5' });
    const annotation = /^::error title=cudamatrix%3A behaviour changed%3A ([^:]+)::(.*)$/m.exec(strict.stdout);
    expect(annotation, strict.stdout).not.toBeNull();
    expect(annotation![1]).toMatch(/linux.*H200/i);
    expect(annotation![2]).toMatch(
      /driver 580\.159\.04 .*against the committed record \(fail-on-change\):%0Afact `pinned-vram\.registered_counts_as_vram`: false -> true/,
    );
    expect(strict.summary).toMatch(
      /^## ❌ cudamatrix run .*\n\n\*\*Exit status 5\*\*: behaviour changed against the committed records \(--fail-on-change\)/m,
    );
    expect(strict.stdout).toContain('Exit status: 5 (--fail-on-change: behaviour changed)');

    const refused = await runCli([
      'gha',
      'merge',
      path.dirname(artifacts),
      '--plan',
      PLAN_ONE_LOCAL,
      '--results-dir',
      path.join(dir, 'refused'),
      '--no-record',
      '--fail-on-change',
    ]);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain(
      "--fail-on-change compares the run's records with the committed ones, and --no-record makes none: drop one of the two",
    );
  });

  it('on the real H200 logs: the same facts with pinned bandwidth halved (a same-driver regression) is recorded, so the pull request is opened', async () => {
    const dir = tempDir();
    const records = path.join(dir, 'records');
    // The records of the runs before it (the halved log is run2's: its own record, and the
    // later runs of 2026-12-01, are left out), so that the halved run is the newest.
    const otherRuns = (src: string) => recordsOfTheseRuns(src) && !/(09a87af3|5015ce14|ae090e26)\.json$/.test(src);
    cpSync(path.join(repoRoot, 'records'), records, { recursive: true, filter: otherRuns });
    const artifacts = path.join(dir, 'artifacts', 'cudamatrix-events-local');
    mkdirSync(artifacts, { recursive: true });
    writeFileSync(path.join(artifacts, 'events.jsonl'), halvedBandwidthLog());
    const step = actionsEnv(tempDir());
    const result = await runCli(
      [
        'gha',
        'merge',
        path.dirname(artifacts),
        '--plan',
        PLAN_ONE_LOCAL,
        '--results-dir',
        path.join(dir, 'merged'),
        '--records-dir',
        records,
        '--report-dir',
        path.join(dir, 'report'),
        '-q',
      ],
      { env: step.env },
    );
    // Every default expectation is met: the regression is in the metrics.
    expect(result.code, result.stderr).toBe(0);
    const out = step.outputs();
    expect(out).toMatchObject({ 'behaviour-changed': 'true', 'new-observations': '0', 'records-written': '1' });
    expect(result.stdout).toMatch(
      /DRIFTED from .*linux-h200-docker-2026-12-01-104a0175\.json \(same key and facts; 8 metric series beyond their noise\)/,
    );
    expect(existsSync(out.records!)).toBe(true);
    expect(step.summary()).toMatch(
      /\*\*Behaviour changed\.\*\*[\s\S]*metric `transfer-bandwidth\.bandwidth_gbps` \{"direction":"h2d","memory":"pinned","size_bytes":1073741824\}: 55\.\d GB\/s -> 27\.8 GB\/s/,
    );
    expect(readFileSync(path.join(dir, 'report', 'BEHAVIOUR.md'), 'utf8')).toMatch(
      /against \d+ earlier records? \(the newest .*\): 8 metric series beyond their noise/,
    );
  });

  it('refuses a --plan that is not a plan, or names a target the matrix lacks, naming the fix', async () => {
    const dir = tempDir();
    const step = actionsEnv(tempDir());
    const bad = await runCli(['gha', 'merge', dir, '--plan', '{"jobs":[]}'], { env: step.env });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--plan is not a gha matrix plan');
    // In a step, also an annotation (on stderr: stdout stays empty).
    expect(bad.stderr).toMatch(/^::error title=cudamatrix%3A USAGE::--plan is not a gha matrix plan/m);
    expect(bad.stdout).toBe('');
    const empty = await runCli(['gha', 'merge', dir, '--plan', '']);
    expect(empty.stderr).toContain("--plan is empty (did the plan job's matrix output reach this step?)");
    const missing = await runCli(['gha', 'merge', dir, '--plan', path.join(dir, 'nope.json')]);
    expect(missing.stderr).toContain(
      `--plan ${path.join(dir, 'nope.json')}: no such file, and not JSON; pass the JSON that cudamatrix gha matrix printed`,
    );
    const other = await runCli([
      'gha',
      'merge',
      dir,
      '--plan',
      JSON.stringify({ include: [{ name: 'x', targets: 'elsewhere', runsOn: ['a'] }] }),
    ]);
    expect(other.code).toBe(2);
    expect(other.stderr).toMatch(
      /job "x" owes target "elsewhere", which .*default\.yaml does not define; pass the matrix the plan was made from \(--matrix\)/,
    );
  });
});
