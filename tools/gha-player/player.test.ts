/**
 * The workflow player (player.ts) on tiny fixture workflows (fixtures/): what cudamatrix's
 * end-to-end tests of its GitHub Actions workflows rely on it for.
 */
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { evaluateIf, evaluateTemplate, expandMatrix, hashFiles, splitTemplate } from './expr.ts';
import { parseFileCommand, parseWorkflowCommand } from './log.ts';
import {
  loadWorkflow,
  matrixEntries,
  playJob,
  playWorkflow,
  resolveInputs,
  resolveWorkflowUses,
  type JobPlay,
  type PlayWorkflowOptions,
  type WorkflowPlay,
} from './player.ts';
const fixtures = path.join(import.meta.dirname, 'fixtures');
const fixture = (name: string) => path.join(fixtures, name);
const SECRETS = { TOKEN: 's3cr3t-value', GITHUB_TOKEN: 'ghs_faketoken123' };

/** A new empty folder under the temp dir, removed when this file's tests end. */
const madeDirs: string[] = [];
function tempDir(prefix: string): string {
  const dir = mkdtempSync(path.join(tmpdir(), prefix));
  madeDirs.push(dir);
  return dir;
}
afterAll(() => {
  for (const dir of madeDirs.splice(0)) rmSync(dir, { recursive: true, force: true, maxRetries: 5, retryDelay: 200 });
});

/** A fresh workspace per job leg (as GitHub gives each job a fresh runner), holding the fixture actions. */
function freshWorkspaces(root: string): PlayWorkflowOptions['workspace'] {
  return (leg) => {
    const dir = path.join(root, `ws-${leg.jobId}-${leg.index}`);
    cpSync(fixture('actions'), path.join(dir, 'actions'), { recursive: true });
    return dir;
  };
}

async function play(file: string, extra: Partial<PlayWorkflowOptions> = {}): Promise<{ run: WorkflowPlay; root: string }> {
  const root = tempDir('cm-gha-player-');
  const run = await playWorkflow({
    workflowFile: fixture(file),
    artifactsDir: path.join(root, 'artifacts'),
    workspace: freshWorkspaces(root),
    secrets: SECRETS,
    repos: { 'octo-org/tools': fixture('tools') },
    ...extra,
  });
  return { run, root };
}

function leg(run: WorkflowPlay, jobId: string, index = 0): JobPlay {
  const found = run.jobs[jobId]?.legs[index];
  if (!found) throw new Error(`no leg ${index} of ${jobId}: ${JSON.stringify(run.jobs[jobId])}`);
  return found;
}

function logLines(text: string): string[] {
  return text.split('\n');
}

describe('expressions', () => {
  const contexts = { matrix: { name: 'a', n: 2 }, inputs: { loud: true }, needs: { plan: { outputs: { m: '{"include":[{"x":1}]}' } } } };

  it('keep the type of a value that is one expression, and coerce mixed text', () => {
    expect(evaluateTemplate('${{ matrix.n }}', { contexts, where: 't' })).toBe(2);
    expect(evaluateTemplate('${{ fromJSON(needs.plan.outputs.m) }}', { contexts, where: 't' })).toEqual({ include: [{ x: 1 }] });
    expect(evaluateTemplate('n-${{ matrix.name }}-${{ inputs.loud }}-${{ matrix.missing }}-${{ 1 == 1 }}', { contexts, where: 't' })).toBe(
      'n-a-true--true',
    );
    expect(evaluateTemplate("${{ format('{0}}}', matrix.name) }}", { contexts, where: 't' })).toBe('a}');
    expect(splitTemplate("a ${{ 'x}}y' }} b")).toEqual([{ text: 'a ' }, { expr: "'x}}y'" }, { text: ' b' }]);
  });

  it('refuse an unknown context or function, naming where', () => {
    expect(() => evaluateTemplate('${{ nope.x }}', { contexts, where: 'jobs.a.steps[0].run' })).toThrow(
      /jobs\.a\.steps\[0\]\.run.*does not parse/,
    );
    expect(() => evaluateTemplate('${{ toUpper(matrix.name) }}', { contexts, where: 'w' })).toThrow(/does not parse/);
  });

  it('add success() to an if: that calls no status function', () => {
    const failed = { success: false, failure: true, cancelled: false };
    const where = 'if';
    expect(evaluateIf(undefined, { contexts, where })).toBe(true);
    expect(evaluateIf(undefined, { contexts, status: failed, where })).toBe(false);
    expect(evaluateIf("matrix.name == 'a'", { contexts, status: failed, where })).toBe(false);
    expect(evaluateIf("${{ matrix.name == 'A' }}", { contexts, where })).toBe(true); // case-insensitive, like GitHub
    expect(evaluateIf('failure()', { contexts, status: failed, where })).toBe(true);
    expect(evaluateIf('always()', { contexts, status: { success: false, failure: false, cancelled: true }, where })).toBe(true);
    expect(evaluateIf('${{ !cancelled() }}', { contexts, status: { success: false, failure: false, cancelled: true }, where })).toBe(false);
  });

  it('hash files as the runner does, and give an empty string when none match', () => {
    const dir = tempDir('cm-gha-player-');
    writeFileSync(path.join(dir, 'a.lock'), 'one');
    const before = hashFiles(dir, ['**/*.lock']);
    expect(before).toMatch(/^[0-9a-f]{64}$/);
    writeFileSync(path.join(dir, 'a.lock'), 'two');
    expect(hashFiles(dir, ['**/*.lock'])).not.toBe(before);
    expect(hashFiles(dir, ['**/*.none'])).toBe('');
  });
});

describe('matrix expansion', () => {
  it("follows GitHub's include rules (the documentation's own example)", () => {
    const entries = expandMatrix({
      fruit: ['apple', 'pear'],
      animal: ['cat', 'dog'],
      include: [
        { color: 'green' },
        { color: 'pink', animal: 'cat' },
        { fruit: 'apple', shape: 'circle' },
        { fruit: 'banana' },
        { fruit: 'banana', animal: 'cat' },
      ],
    });
    expect(entries).toEqual([
      { fruit: 'apple', animal: 'cat', color: 'pink', shape: 'circle' },
      { fruit: 'apple', animal: 'dog', color: 'green', shape: 'circle' },
      { fruit: 'pear', animal: 'cat', color: 'pink' },
      { fruit: 'pear', animal: 'dog', color: 'green' },
      { fruit: 'banana' },
      { fruit: 'banana', animal: 'cat' },
    ]);
  });

  it('removes excluded combinations, and refuses an empty matrix or vector', () => {
    expect(expandMatrix({ os: ['l', 'w'], v: [1, 2], exclude: [{ os: 'w', v: 1 }] })).toEqual([
      { os: 'l', v: 1 },
      { os: 'l', v: 2 },
      { os: 'w', v: 2 },
    ]);
    expect(() => expandMatrix({ include: [] })).toThrow('Matrix must define at least one vector');
    expect(() => expandMatrix({ os: [] })).toThrow("Matrix vector 'os' does not contain any values");
  });

  it("expands a job's matrix from fromJSON of a needs output", () => {
    const matrix = JSON.stringify({ include: [{ name: 'x', runsOn: ['self-hosted', 'gpu'] }, { name: 'y' }] });
    expect(matrixEntries(fixture('flow.yml'), 'probe', { needs: { plan: { result: 'success', outputs: { matrix } } } })).toEqual([
      { name: 'x', runsOn: ['self-hosted', 'gpu'] },
      { name: 'y' },
    ]);
    expect(() => matrixEntries(fixture('flow.yml'), 'probe', { needs: { plan: { result: 'success', outputs: {} } } })).toThrow(
      /strategy\.matrix.*fromJSON/,
    );
    expect(matrixEntries(fixture('flow.yml'), 'plan')).toBeNull();
  });
});

describe('workflow commands and file commands', () => {
  it('decode properties and data as @actions/core encodes them', () => {
    expect(parseWorkflowCommand('  ::error file=a%2Cb.ts,line=3,title=x%3Ay::one%0Atwo %250A')).toEqual({
      name: 'error',
      properties: { file: 'a,b.ts', line: '3', title: 'x:y' },
      data: 'one\ntwo %0A',
    });
    expect(parseWorkflowCommand('::unknown::x')).toBeUndefined();
    expect(parseWorkflowCommand('text ::error::x')).toBeUndefined();
  });

  it('read name=value and heredoc lines, and refuse a missing delimiter', () => {
    expect(parseFileCommand('a=1\nb<<EOF\nx=y\n\nz\nEOF\nc=\n', 'f')).toEqual([
      ['a', '1'],
      ['b', 'x=y\n\nz'],
      ['c', ''],
    ]);
    expect(() => parseFileCommand('b<<EOF\nx\n', 'GITHUB_OUTPUT')).toThrow("GITHUB_OUTPUT: Matching delimiter not found 'EOF'");
    expect(() => parseFileCommand('novalue\n', 'GITHUB_ENV')).toThrow("GITHUB_ENV: Invalid format 'novalue'");
  });
});

describe('inputs', () => {
  it("types a dispatch's inputs with their defaults and refuses an undeclared one", () => {
    const wf = loadWorkflow(fixture('flow.yml'));
    expect(resolveInputs(wf, 'workflow_dispatch', { loud: 'true' }, { contexts: {} })).toEqual({ who: 'world', loud: true, shards: 2 });
    expect(() => resolveInputs(wf, 'workflow_dispatch', { nope: 'x' }, { contexts: {} })).toThrow('Unexpected inputs provided: ["nope"]');
  });

  it("refuses a workflow_call's missing required input and a string for a boolean", () => {
    const wf = loadWorkflow(fixture('tools/.github/workflows/called.yml'));
    expect(() => resolveInputs(wf, 'workflow_call', { loud: true }, { contexts: {} })).toThrow(
      'Input who is required, but not provided while calling.',
    );
    expect(() => resolveInputs(wf, 'workflow_call', { who: 'a', loud: 'true' }, { contexts: {} })).toThrow(
      "Unexpected type of value 'true', expected type: Boolean.",
    );
  });
});

describe('playWorkflow', () => {
  it('flows outputs step -> job -> needs, plays a matrix from fromJSON, failure()/always(), and artifacts round trip', async () => {
    const { run, root } = await play('flow.yml');
    expect(run.order).toEqual(['plan', 'probe', 'merge', 'after']);
    const plan = leg(run, 'plan');
    expect(plan.status).toBe('success');
    expect(run.jobs.plan!.outputs).toMatchObject({ note: 'line one\nline two', seen: 'from-github-env' });
    const lines = logLines(plan.log);
    expect(lines).toContain('levels: workflow job-world step from-github-env from-github-env'); // workflow, job, step env, GITHUB_ENV in env and ${{ env }}
    expect(lines).toContain('loud=false shards=2 event=workflow_dispatch dispatch-loud=false bool=true'); // typed inputs, string event inputs
    expect(lines).toContain('tool-ran'); // GITHUB_PATH
    expect(lines).toContain('ci=true actions=true os=Linux');
    expect(plan.summary).toBe('### plan for world\nsecond summary\n');

    const probe = run.jobs.probe!;
    expect(probe.matrixEntries?.map((e) => e.name)).toEqual(['a', 'b', 'c']);
    expect(probe.result).toBe('failure');
    expect(probe.legs.map((probeLeg) => [probeLeg.name, probeLeg.status, probeLeg.runsOn])).toEqual([
      ['probe (a, false)', 'success', ['self-hosted']],
      ['probe (b, true)', 'failure', ['self-hosted']],
      ['probe (c, false, ["self-hosted","gpu"])', 'success', ['self-hosted', 'gpu']],
    ]);
    const legB = probe.legs[1]!;
    expect(legB.steps.map((step) => [step.name, step.outcome, step.exitCode])).toEqual([
      ['Probe b', 'failure', 1],
      ['Run echo "failure seen in ${{ matrix.name }}"', 'success', 0],
      ['Run echo "only on success"', 'skipped', null],
      ['Run actions/upload-artifact@v4', 'success', null],
    ]);
    expect(legB.annotations).toEqual([
      { level: 'notice', title: 'probe', message: 'entry b', step: '__run' },
      { level: 'error', message: 'Process completed with exit code 1.', step: '__run' },
    ]);
    expect(readFileSync(path.join(root, 'artifacts', 'events-b', 'b.txt'), 'utf8')).toBe('probed b (1/3)\n');

    // merge: if !cancelled() runs after a failed need, and downloads every leg's artifact merged.
    expect(run.jobs.merge!.result).toBe('success');
    expect(run.jobs.merge!.outputs.files?.trim()).toBe('a.txt b.txt c.txt');
    expect(logLines(leg(run, 'merge').log)).toContain('probe failure; plan success; note line one');
    // after: needs probe, default success(): skipped.
    expect(run.jobs.after!.result).toBe('skipped');
    expect(run.result).toBe('failure');
  });

  it('plays a node action (inputs, defaults, outputs) and a composite action, and fails an unknown action', async () => {
    const { run } = await play('actions.yml');
    const use = leg(run, 'use');
    const step = (id: string) => use.steps.find((stepResult) => stepResult.id === id)!;
    expect(step('hello')).toMatchObject({ kind: 'node', outcome: 'success', outputs: { message: 'Hi, Ada!' } });
    const lines = logLines(use.log);
    expect(lines).toContain('dry-run=true token=*** in-workspace=true'); // INPUT_DRY-RUN, the github.token default masked
    expect(use.annotations).toContainEqual({
      level: 'warning',
      message: "Unexpected input(s) 'bogus', valid inputs are ['who', 'greeting word', 'dry-run', 'token']",
      step: 'hello',
    });
    expect(step('twice')).toMatchObject({ kind: 'composite', outcome: 'success', outputs: { both: 'Hello, Bob! / HELLO, BOB!' } });
    expect(step('twice').steps?.map((stepResult) => [stepResult.id, stepResult.kind, stepResult.outcome])).toEqual([
      ['first', 'node', 'success'],
      ['second', 'run', 'success'],
      ['__self', 'node', 'success'],
      ['__run', 'run', 'success'],
    ]);
    expect(step('twice').log).toContain('outer env from-caller');
    expect(lines.some((line) => /^action path (\S+)\/actions\/twice = \1\/actions\/twice$/.test(line))).toBe(true);
    expect(lines).toContain('said Hi, Ada! | Hello, Bob! / HELLO, BOB!');
    expect(step('bad')).toMatchObject({ outcome: 'failure', conclusion: 'success', exitCode: 1 });
    expect(step('unknown')).toMatchObject({ outcome: 'failure', conclusion: 'failure' });
    expect(use.annotations.find((annotation) => annotation.step === 'unknown')?.message).toMatch(
      /unknown action 'someone\/unknown-action@v1'.*declare one/,
    );
    expect(lines).toContain('bad failure/success unknown failure');
    expect(use.status).toBe('failure');
  });

  it('masks secrets and ::add-mask:: values, drops an output holding a secret, and keeps annotations within GitHub limits', async () => {
    const { run } = await play('masks.yml');
    const maskJob = leg(run, 'm');
    expect(maskJob.log).not.toContain(SECRETS.TOKEN);
    expect(maskJob.summary).toBe('summary has ***\n');
    const lines = logLines(maskJob.log);
    expect(lines).toContain('token is ***');
    expect(lines).toContain('later: ***');
    expect(lines).toContain('##[error]first');
    expect(lines).toContain('::error::not a command now'); // stop-commands
    expect(lines).not.toContain('##[debug]hidden unless debug');
    expect(maskJob.groups).toEqual([{ step: 's', title: 'Details', lines: ['inside'] }]);
    // The error goes to stderr, the warnings to stdout: two pipes, which give no order between
    // them (here as on GitHub's runner), so only the order within each level is asserted.
    expect(maskJob.annotations.filter((annotation) => annotation.level === 'error')).toEqual([
      { level: 'error', title: 'Bad, very bad', message: 'first\nsecond 100%', file: 'src/a.ts', line: 3, endLine: 4, step: 's' },
    ]);
    const warnings = maskJob.annotations.filter((annotation) => annotation.level === 'warning' && annotation.step === 's');
    expect(warnings.map((warning) => warning.message)).toEqual(['w1', 'w2', 'w3', 'w4', 'w5', 'w6', 'w7', 'w8', 'w9', 'w10']);
    expect(lines).toContain('##[warning]w12'); // over the limit: in the log, not an annotation
    expect(maskJob.droppedAnnotations).toBe(2);
    expect(maskJob.annotations).toContainEqual({ level: 'notice', message: 'back on', step: 's' });
    expect(maskJob.outputs).toEqual({ fine: 'ok' });
    expect(maskJob.annotations).toContainEqual({
      level: 'warning',
      message: "Skip output 'leaked' since it may contain secret.",
      step: '__job',
    });
    // The step's own outputs keep the value (only the job's outputs drop it).
    expect(maskJob.steps[0]!.outputs.leak).toBe(SECRETS.TOKEN);

    const debug = await play('masks.yml', { debug: true });
    expect(logLines(leg(debug.run, 'm').log)).toContain('##[debug]hidden unless debug');
  });

  it('names a step without an id as GitHub does, and wraps an if: without a status function as GitHub does', async () => {
    const { run } = await play('ids.yml', { debug: true });
    const job = leg(run, 'ids');
    expect(job.steps.map((step) => [step.id, step.outcome])).toEqual([
      ['__run', 'success'],
      ['__self', 'success'],
      ['__self_2', 'success'],
      ['__actions_upload-artifact', 'success'],
      ['broken', 'failure'],
      ['__run_2', 'skipped'],
      ['__run_3', 'success'],
    ]);
    expect(job.steps.map((step) => step.condition).slice(4)).toEqual([
      'success()',
      "success() && (steps.broken.outcome == 'failure')",
      "always() && steps.broken.outcome == 'failure'",
    ]);
    expect(logLines(job.log)).toContain("##[debug]Evaluating: success() && (steps.broken.outcome == 'failure')");
  });

  it('uploads and downloads artifacts like v4 (root, hidden files, a name used twice, no files, v3 refused) and replaces a declared step', async () => {
    const { run, root } = await play('artifacts.yml', {
      replaceSteps: {
        'up.build': (ctx) => {
          writeFileSync(path.join(ctx.workspace, 'pkg.tgz'), 'packed by the test');
          ctx.setOutput('file', 'pkg.tgz');
        },
      },
    });
    const up = leg(run, 'up');
    const step = (id: string) => up.steps.find((stepResult) => stepResult.id === id)!;
    expect(step('build')).toMatchObject({ kind: 'replaced', outcome: 'success', outputs: { file: 'pkg.tgz' } });
    expect(step('build').log).toContain("[player] step 'build' is replaced by the test's substitute");
    const artifacts = path.join(root, 'artifacts');
    expect(readdirSync(artifacts).sort()).toEqual(['hid2', 'res', 'two']);
    expect(up.annotations).toContainEqual({
      level: 'warning',
      message: 'No files were found with the provided path: .hid/. No artifacts will be uploaded.',
      step: 'hidden-dir',
    });
    expect(readdirSync(path.join(artifacts, 'res'))).toEqual(['run1']); // the folder's contents, .hidden left out
    expect(
      existsSync(path.join(artifacts, 'two', 'res', 'run1', 'events.jsonl')) && existsSync(path.join(artifacts, 'two', 'other.txt')),
    ).toBe(true);
    const errors = Object.fromEntries(
      up.annotations.filter((annotation) => annotation.level === 'error').map((annotation) => [annotation.step, annotation.message]),
    );
    expect(errors.dup).toMatch(/\(409\) Conflict: an artifact with this name already exists/);
    expect(errors.none).toBe('No files were found with the provided path: nothing/. No artifacts will be uploaded.');
    expect(errors.old).toMatch(/deprecated version of `actions\/upload-artifact: v3`/);
    expect(logLines(up.log)).toContain('e'); // downloaded back and read
    expect(up.log).toContain('is a stand-in');
    expect(up.status).toBe('success');
  });

  it('checks out another repository from its folder, plays setup-node, an action of a repository folder and a declared stand-in', async () => {
    const { run } = await play('artifacts.yml', {
      repos: { 'octo-org/tools': fixture('tools'), 'octo-org/fixtures': fixtures },
      actions: {
        'my-org/deploy': (ctx) => {
          ctx.log(`[test] my-org/deploy@${ctx.ref} stand-in: ${ctx.with.target}`);
          ctx.setOutput('url', `https://${ctx.with.target}.example`);
        },
      },
    });
    const co = leg(run, 'co');
    const step = (id: string) => co.steps.find((stepResult) => stepResult.id === id)!;
    expect(co.steps[2]).toMatchObject({ outcome: 'success' }); // tools-copy/.github/workflows/called.yml is there
    expect(step('nowhere').outcome).toBe('failure');
    expect(co.annotations.find((annotation) => annotation.step === 'nowhere')?.message).toBe(
      "[player] actions/checkout stand-in: no local folder for repository 'nobody/none'; pass repos: { 'nobody/none': <folder> } to the player",
    );
    expect(step('remote')).toMatchObject({ kind: 'node', outputs: { message: 'Hello, remote!' } });
    expect(step('declared')).toMatchObject({ kind: 'stand-in', outputs: { url: 'https://staging.example' } });
    expect(logLines(co.log)).toContain(`node ${process.version} | Hello, remote! | https://staging.example`);
    expect(co.log).toContain('[test] my-org/deploy@v2 stand-in: staging');
    expect(co.status).toBe('success');
  });

  it('plays a caller of a reusable workflow with its with: as inputs, secrets inherited, outputs back to the caller', async () => {
    const { run } = await play('caller.yml');
    const call = run.jobs.call!;
    expect(call.result).toBe('success');
    expect(call.outputs).toEqual({ message: 'HELLO CALLERS' });
    const say = call.calls[0]!.jobs.say!.legs[0]!;
    // github is the caller's (event_name too); a boolean input stays boolean; the inherited secret is masked.
    expect(logLines(say.log)).toContain('event=workflow_dispatch loud-is-boolean=true token=***');
    expect(logLines(leg(run, 'after').log)).toContain('got HELLO CALLERS');
    expect(
      resolveWorkflowUses('octo-org/tools/.github/workflows/called.yml@v1', fixture('caller.yml'), { 'octo-org/tools': fixture('tools') }),
    ).toBe(fixture('tools/.github/workflows/called.yml'));
    expect(() => resolveWorkflowUses('other/repo/.github/workflows/x.yml@v1', fixture('caller.yml'), {})).toThrow(
      /no local folder for 'other\/repo'/,
    );

    const missing = await play('caller.yml', { secrets: {} });
    expect(missing.run.jobs.call).toMatchObject({ result: 'failure', error: expect.stringContaining('Secret TOKEN is required') });
    expect(missing.run.jobs.after!.result).toBe('skipped');
  });
});

describe('run: steps', () => {
  it("use GitHub's shells: unspecified is bash -e (no pipefail), shell: bash adds pipefail, a custom shell, defaults.run, a missing working-directory", async () => {
    const { run } = await play('shells.yml');
    const shells = leg(run, 'shells');
    expect(shells.steps.map((step) => [step.id, step.outcome, step.exitCode])).toEqual([
      ['plain', 'success', 0],
      ['bash', 'failure', 1],
      ['custom', 'success', 0],
      ['wd', 'failure', null],
    ]);
    expect(logLines(shells.log)).toContain('node ran function');
    expect(shells.annotations.find((annotation) => annotation.step === 'wd')?.message).toMatch(
      /with working directory '.*\/missing-dir'\. No such file or directory/,
    );
    const defaults = leg(run, 'defaults');
    expect(defaults.steps.map((step) => step.outcome)).toEqual(['failure', 'success']);
    expect(logLines(defaults.log)).toContain('in sub');
  });
});

describe('matrix legs', () => {
  it('fail-fast: one at a time, the legs after a failed one never start', async () => {
    const { run } = await play('failfast.yml');
    expect(run.jobs.legs!.legs.map((jobLeg) => [jobLeg.name, jobLeg.status])).toEqual([['legs (fail)', 'failure']]);
    expect(run.jobs.legs!.result).toBe('failure');
  });

  it('fail-fast: legs played at once are cancelled when one fails (their if: cancelled() steps run)', async () => {
    const { run } = await play('failfast.yml', { maxParallel: 3 });
    expect(run.jobs.legs!.legs.map((jobLeg) => [jobLeg.name, jobLeg.status])).toEqual([
      ['legs (fail)', 'failure'],
      ['legs (slow-1)', 'cancelled'],
      ['legs (slow-2)', 'cancelled'],
    ]);
    expect(logLines(run.jobs.legs!.legs[2]!.log)).toContain('cancelled slow-2');
    // Stopped in their 20 s sleeps: what follows them never ran.
    for (const leg of run.jobs.legs!.legs)
      expect(
        logLines(leg.log).filter((line) => line.startsWith('slept')),
        leg.name,
      ).toEqual([]);
  });
});

describe('a step killed mid-run', () => {
  /** Kills the step 'long' once it printed 'started' (the test's own kill of its process group, or the control's). */
  function killLong(how: 'tree' | 'lose-runner' | 'abort', abort?: AbortController): PlayWorkflowOptions['hooks'] {
    return {
      onStepSpawn: (step, child, control) => {
        if (step.stepId !== 'long') return;
        child.stdout!.on('data', (chunk: Buffer | string) => {
          if (!String(chunk).includes('started')) return;
          if (how === 'tree') process.kill(-child.pid!, 'SIGKILL');
          else if (how === 'lose-runner') control.loseRunner();
          else abort!.abort();
        });
      },
    };
  }

  async function playK(extra: Partial<Parameters<typeof playJob>[0]>): Promise<JobPlay> {
    const root = tempDir('cm-gha-player-');
    return playJob({
      workflowFile: fixture('kill.yml'),
      jobId: 'k',
      workspace: root,
      artifactsDir: path.join(root, 'artifacts'),
      ...extra,
    });
  }

  it('as a runner lost: the job ends killed, no later step runs (not even if: always()), no outputs', async () => {
    for (const how of ['tree', 'lose-runner'] as const) {
      const k = await playK({ hooks: killLong(how) });
      expect(k.status).toBe('killed');
      expect(k.steps.map((step) => [step.id, step.outcome])).toEqual([
        ['first', 'success'],
        ['long', 'failure'],
      ]);
      expect(k.steps[1]!.exitCode).toBe(137);
      expect(k.log).not.toContain('cleanup-ran');
      expect(k.outputs).toEqual({});
      expect(k.summary).toBe('summary one\n'); // the finished step's summary was already uploaded
      expect(k.annotations.at(-1)?.message).toMatch(/lost communication with the server/);
    }
  });

  it('softer: the step fails, the job goes on with its if: always() steps', async () => {
    const k = await playK({ hooks: killLong('tree'), killMeans: 'step-failed' });
    expect(k.status).toBe('failure');
    expect(k.steps.map((step) => [step.id, step.outcome, step.exitCode])).toEqual([
      ['first', 'success', 0],
      ['long', 'failure', 137],
      ['cleanup', 'success', 0],
      ['__run', 'skipped', null],
    ]);
    expect(k.annotations).toContainEqual({ level: 'error', message: 'Process completed with exit code 137.', step: 'long' });
    expect(k.outputs).toEqual({ first: '1' });
  });

  it('cancelled (the run cancelled): the step is interrupted, if: always() steps still run', async () => {
    const abort = new AbortController();
    const k = await playK({ hooks: killLong('abort', abort), signal: abort.signal });
    expect(k.status).toBe('cancelled');
    expect(k.steps.map((step) => [step.id, step.outcome])).toEqual([
      ['first', 'success'],
      ['long', 'cancelled'],
      ['cleanup', 'success'],
      ['__run', 'skipped'],
    ]);
    expect(k.annotations).toContainEqual({ level: 'error', message: 'The operation was canceled.', step: '__job' });
  });

  it('times out a step after timeout-minutes (continue-on-error keeps the job going)', async () => {
    const root = tempDir('cm-gha-player-');
    const timeouts = await playJob({
      workflowFile: fixture('kill.yml'),
      jobId: 'timeouts',
      workspace: root,
      artifactsDir: path.join(root, 'artifacts'),
    });
    expect(timeouts.steps[0]).toMatchObject({ id: 'slow', outcome: 'failure', conclusion: 'success' });
    expect(timeouts.annotations[0]?.message).toBe("The action 'Run sleep 20' has timed out after 0.01 minutes.");
    expect(logLines(timeouts.log)).toContain('slow failure/success');
    expect(timeouts.status).toBe('success');
  });

  it('cancels the job after its timeout-minutes (if: always() steps still run)', async () => {
    const root = tempDir('cm-gha-player-');
    const jobTimeout = await playJob({
      workflowFile: fixture('kill.yml'),
      jobId: 'job-timeout',
      workspace: root,
      artifactsDir: path.join(root, 'artifacts'),
    });
    expect(jobTimeout.status).toBe('cancelled');
    expect(jobTimeout.steps.map((step) => step.outcome)).toEqual(['cancelled', 'success']);
    expect(logLines(jobTimeout.log)).toContain('status cancelled');
    expect(jobTimeout.annotations[0]?.message).toBe(
      'The job running on runner gha-player has exceeded the maximum execution time of 0.01 minutes.',
    );
  });
});
