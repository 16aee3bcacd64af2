/**
 * The GitHub Actions files (issue 13): every workflow under .github/workflows, the example caller
 * docs/examples/*.yml and action.yml, parsed by GitHub's own parser (@actions/workflow-parser, the
 * one behind the Actions language service) with no error and no warning, and what a parser cannot
 * see: third-party actions pinned, the probe job free of shell steps, the merge job running after
 * failed probe jobs, artifact names that agree between upload and download, a time limit and
 * permissions on every job, and docs/github-actions.md's snippet the example caller itself.
 *
 * The parser imports its JSON schemas without import attributes, so vitest runs it through Vite
 * (vitest.config.ts: server.deps.inline).
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { convertWorkflowTemplate, type TraceWriter } from '@actions/workflow-parser';
import { parseAction } from '@actions/workflow-parser/actions/action-parser';
import { convertActionTemplate } from '@actions/workflow-parser/actions/action-template';
import { parseWorkflow } from '@actions/workflow-parser/workflows/workflow-parser';
import type { FileProvider } from '@actions/workflow-parser/workflows/file-provider';
import type { FileReference } from '@actions/workflow-parser/workflows/file-reference';
import picomatch from 'picomatch';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { repoRoot } from '../helpers.ts';
import { DEFAULT_RUNS_ON } from '../../run/gha-matrix.ts';

const read = (file: string) => readFileSync(path.join(repoRoot, file), 'utf8');
const yamlIn = (dir: string) =>
  existsSync(path.join(repoRoot, dir))
    ? readdirSync(path.join(repoRoot, dir))
        .filter((fileName) => /\.ya?ml$/.test(fileName))
        .map((fileName) => `${dir}/${fileName}`)
    : [];
const WORKFLOWS = yamlIn('.github/workflows');
const EXAMPLES = yamlIn('docs/examples');
const GPU_MATRIX = '.github/workflows/gpu-matrix.yml';
const EXAMPLE = 'docs/examples/driver-matrix.yml';

/** A trace that keeps what the parser reports besides its errors (its warnings go here). */
function collectingTrace(): { trace: TraceWriter; messages: string[] } {
  const messages: string[] = [];
  return {
    messages,
    trace: {
      error: (message) => messages.push(`error: ${message}`),
      info: (message) => messages.push(`info: ${message}`),
      verbose: () => {},
    },
  };
}

/**
 * Resolves a caller's `uses: <owner>/cudamatrix/.github/workflows/gpu-matrix.yml@<ref>` to this
 * checkout's file, so that the parser checks the caller's inputs against the called workflow's.
 */
const thisCheckout: FileProvider = {
  async getFileContent(ref: FileReference) {
    if (!('repository' in ref) || ref.repository !== 'cudamatrix') throw new Error(`not a cudamatrix workflow: ${JSON.stringify(ref)}`);
    return { name: ref.path, content: read(ref.path) };
  },
};

/** Everything the parser says of a workflow file: errors of the template context and of the conversion, and trace messages. */
async function workflowProblems(name: string, content: string): Promise<string[]> {
  const { trace, messages } = collectingTrace();
  const parsed = parseWorkflow({ name, content }, trace);
  const problems = parsed.context.errors.getErrors().map(String);
  if (parsed.value) {
    const template = await convertWorkflowTemplate(parsed.context, parsed.value, thisCheckout, { fetchReusableWorkflowDepth: 1 });
    problems.push(...(template.errors ?? []).map((e) => e.Message));
  } else problems.push('no workflow came out of the parser');
  return [...new Set([...problems, ...parsed.context.errors.getErrors().map(String), ...messages])];
}

function actionProblems(content: string): { problems: string[]; runs?: unknown } {
  const { trace, messages } = collectingTrace();
  const parsed = parseAction({ name: 'action.yml', content }, trace);
  const problems = parsed.context.errors.getErrors().map(String);
  const template = parsed.value ? convertActionTemplate(parsed.context, parsed.value) : undefined;
  return {
    problems: [
      ...problems,
      ...parsed.context.errors
        .getErrors()
        .map(String)
        .filter((problem) => !problems.includes(problem)),
      ...messages,
    ],
    runs: template?.runs,
  };
}

interface Step {
  id?: string;
  name?: string;
  uses?: string;
  run?: string;
  if?: string;
  with?: Record<string, unknown>;
  'continue-on-error'?: boolean;
}
interface Job {
  name?: string;
  needs?: string | string[];
  if?: string;
  uses?: string;
  'runs-on'?: unknown;
  'timeout-minutes'?: unknown;
  permissions?: unknown;
  outputs?: Record<string, string>;
  steps?: Step[];
  with?: Record<string, unknown>;
}
interface Workflow {
  on: Record<string, { inputs?: Record<string, { type?: string }>; outputs?: Record<string, { value: string }> } | null>;
  jobs: Record<string, Job>;
}
const workflow = (file: string) => parse(read(file)) as Workflow;

describe("every workflow and action.yml parses with GitHub's parser, with no error and no warning", () => {
  it('has the workflows and the example caller to check', () => {
    expect(WORKFLOWS).toEqual(expect.arrayContaining(['.github/workflows/ci.yml', GPU_MATRIX, '.github/workflows/pages.yml']));
    expect(EXAMPLES).toContain(EXAMPLE);
  });

  for (const file of [...WORKFLOWS, ...EXAMPLES]) {
    it(file, async () => {
      const problems = await workflowProblems(file, read(file));
      expect(problems, `${file}:\n${problems.join('\n')}`).toEqual([]);
    });
  }

  it('action.yml: a node24 action whose main file exists', () => {
    const { problems, runs } = actionProblems(read('action.yml'));
    expect(problems, problems.join('\n')).toEqual([]);
    expect(runs).toEqual({ using: 'node24', main: 'action/main.mjs' });
    expect(existsSync(path.join(repoRoot, 'action', 'main.mjs'))).toBe(true);
  });

  // The checks above mean something only if the parser does report these mistakes.
  it("the parser does report a misspelt key, an unknown context, a caller's unknown input and secret, and a bad runtime", async () => {
    const misspelt = read(GPU_MATRIX).replace('timeout-minutes: 30', 'timeout-minute: 30');
    expect((await workflowProblems('misspelt.yml', misspelt)).join('\n')).toMatch(/timeout-minute/);
    const unknownContext = read(GPU_MATRIX).replace('${{ matrix.runsOn }}', '${{ matrx.runsOn }}');
    expect((await workflowProblems('context.yml', unknownContext)).join('\n')).toMatch(/matrx/);
    const unknownInput = read(EXAMPLE).replace('open-pr: true', 'open-pull-request: true');
    expect((await workflowProblems('caller.yml', unknownInput)).join('\n')).toMatch(/open-pull-request/);
    const unknownSecret = read(EXAMPLE).replace('ssh-private-key:', 'ssh-key:');
    expect((await workflowProblems('caller.yml', unknownSecret)).join('\n')).toMatch(/ssh-key/);
    expect(actionProblems(read('action.yml').replace('using: node24', 'using: node99')).problems.join('\n')).toMatch(/node99/);
  });
});

describe('what the parser cannot check', () => {
  const all = [...WORKFLOWS, ...EXAMPLES].map((file) => ({ file, wf: workflow(file) }));

  it('every third-party action and reusable workflow is pinned to a version tag or a commit sha', () => {
    const unpinned: string[] = [];
    for (const { file, wf } of all) {
      for (const [id, job] of Object.entries(wf.jobs)) {
        const uses = [job.uses, ...(job.steps ?? []).map((step) => step.uses)].filter(
          (ref): ref is string => typeof ref === 'string' && !ref.startsWith('./'),
        );
        for (const ref of uses) if (!/@(v\d+(\.\d+){0,2}|[0-9a-f]{40})$/.test(ref)) unpinned.push(`${file} ${id}: ${ref}`);
      }
    }
    expect(unpinned, 'pin each to a release tag (@v5) or a full commit sha').toEqual([]);
  });

  it('every job has a time limit and says which permissions it needs', () => {
    const missing: string[] = [];
    for (const { file, wf } of all) {
      for (const [id, job] of Object.entries(wf.jobs)) {
        // A called workflow's jobs set their own limits; its caller grants the permissions.
        if (job['timeout-minutes'] === undefined && !job.uses) missing.push(`${file} ${id}: timeout-minutes`);
        if (job.permissions === undefined && (wf as { permissions?: unknown }).permissions === undefined)
          missing.push(`${file} ${id}: permissions`);
      }
    }
    expect(missing).toEqual([]);
  });

  describe('gpu-matrix.yml', () => {
    const wf = workflow(GPU_MATRIX);
    const { plan, probe, merge } = wf.jobs as Record<'plan' | 'probe' | 'merge', Job>;
    const action = parse(read('action.yml')) as { inputs: Record<string, unknown> };

    it('is a workflow and a reusable workflow, with the same inputs but the folders and where cudamatrix comes from', () => {
      const dispatch = Object.keys(wf.on.workflow_dispatch?.inputs ?? {});
      const call = Object.keys(wf.on.workflow_call?.inputs ?? {});
      expect(call).toEqual([...dispatch, 'records-dir', 'report-dir', 'cudamatrix-repository', 'cudamatrix-ref']);
      // A run of the workflow itself has no records-dir or report-dir: the env falls back to the call's defaults.
      const env = (wf as { env?: Record<string, string> }).env;
      expect(env).toEqual({
        RECORDS_DIR: "${{ inputs.records-dir || 'records' }}",
        REPORT_DIR: "${{ inputs.report-dir || 'records' }}",
      });
      expect(wf.on.workflow_call?.inputs?.['records-dir']).toMatchObject({ default: 'records' });
      expect(wf.on.workflow_call?.inputs?.['report-dir']).toMatchObject({ default: 'records' });
      for (const name of dispatch) {
        const [dispatchInput, callInput] = [wf.on.workflow_dispatch?.inputs?.[name], wf.on.workflow_call?.inputs?.[name]] as {
          type?: string;
          default?: unknown;
        }[];
        expect([callInput?.type, callInput?.default], name).toEqual([dispatchInput?.type, dispatchInput?.default]);
      }
      // The shared job's labels by default are gha matrix's own: a label of its own, not every Linux runner's.
      expect(wf.on.workflow_call?.inputs?.['runs-on']).toMatchObject({ default: DEFAULT_RUNS_ON.join(',') });
      expect(wf.on.workflow_call?.inputs?.['open-pr']?.type).toBe('boolean');
      // Strict by default: a run that measured nothing cannot pass; a change fails only when asked.
      expect(wf.on.workflow_call?.inputs?.strict).toMatchObject({ type: 'boolean', default: true });
      expect(wf.on.workflow_call?.inputs?.['fail-on-change']).toMatchObject({ type: 'boolean', default: false });
      // GitHub allows ten inputs on workflow_dispatch.
      expect(dispatch.length).toBeLessThanOrEqual(10);
    });

    it('uses no input it does not declare, and every workflow output names a job output that exists', () => {
      const text = read(GPU_MATRIX);
      const used = new Set([...text.matchAll(/\binputs\.([\w-]+)/g)].map((match) => match[1]!));
      expect([...used].filter((input) => !(input in (wf.on.workflow_call?.inputs ?? {})))).toEqual([]);
      for (const [name, output] of Object.entries(wf.on.workflow_call?.outputs ?? {})) {
        const [, job, key] = /^\$\{\{ jobs\.([\w-]+)\.outputs\.([\w-]+) \}\}$/.exec(output.value) ?? [];
        expect(wf.jobs[job!]?.outputs?.[key!], `output ${name}: ${output.value}`).toBeDefined();
      }
      for (const [id, job] of Object.entries(wf.jobs)) {
        for (const value of Object.values(job.outputs ?? {})) {
          const step = /steps\.([\w-]+)\.outputs/.exec(value)?.[1];
          expect(
            job.steps?.some((jobStep) => jobStep.id === step),
            `${id}: ${value}`,
          ).toBe(true);
        }
      }
    });

    it('checks a private cudamatrix repository out with the optional secret cudamatrix-token, else the job token (issue 33)', () => {
      // A caller's job token reads the caller's repository only: the plan job's checkout of a
      // private cudamatrix needs a token that can read it.
      const secrets = (wf.on.workflow_call as { secrets?: Record<string, { required?: boolean }> }).secrets ?? {};
      expect(secrets['cudamatrix-token']).toMatchObject({ required: false });
      const checkout = plan.steps?.find((step) => step.id === 'cudamatrix');
      expect(checkout?.with?.token).toBe('${{ secrets.cudamatrix-token || github.token }}');
      // No other job gets it: the probe and merge jobs run the action from the artifact.
      for (const job of [probe, merge]) expect(JSON.stringify(job)).not.toContain('cudamatrix-token');
    });

    it('names every step (id), and the plan job builds the package in the step with id "package"', () => {
      for (const [id, job] of Object.entries(wf.jobs))
        for (const step of job.steps ?? []) expect(step.id, `${id}: ${step.name ?? step.uses ?? step.run}`).toMatch(/^[a-z][a-z0-9-]*$/);
      const ids = Object.values(wf.jobs).flatMap((j) => (j.steps ?? []).map((step) => step.id));
      // Unique across jobs: the end-to-end test replaces the step with id "package" and no other.
      expect(ids.filter((id) => id === 'package')).toHaveLength(1);
      expect(plan.steps?.find((step) => step.id === 'package')?.run).toMatch(/pnpm pack/);
    });

    it("packs in Debian 11, so that the Linux cudaprobe needs glibc 2.17 rather than the runner's own (README: Install)", () => {
      expect((plan as { container?: unknown }).container).toBe('node:20-bullseye');
      const pack = String(plan.steps?.find((step) => step.id === 'package')?.run);
      // Root in the container: no sudo there.
      expect(pack).not.toMatch(/\bsudo\b/);
      expect(pack).toMatch(/apt-get install .*g\+\+ g\+\+-aarch64-linux-gnu g\+\+-mingw-w64-x86-64-posix/);
      // A caller that forgot cudamatrix-repository gets a clear error, not a failed pack of its own repository.
      expect(pack).toMatch(/::error title=cudamatrix-repository::/);
    });

    it('passes strict to every probe job and to the merge, fail-on-change to the merge, the SSH secrets to the shared jobs only', () => {
      const run = probe.steps!.find((step) => step.id === 'run')!;
      const mergeStep = merge.steps!.find((step) => step.id === 'merge')!;
      expect(String(run.with?.args).trim()).toBe("${{ inputs.strict && '--strict' || '' }}");
      const mergeArgs = String(mergeStep.with?.args)
        .trim()
        .split('\n')
        .map((line) => line.trim());
      expect(mergeArgs.slice(-2)).toEqual([
        "${{ inputs.strict && '--strict' || '' }}",
        "${{ inputs.fail-on-change && '--fail-on-change' || '' }}",
      ]);
      const declared = (wf.on.workflow_call as { secrets?: Record<string, { required?: boolean }> }).secrets ?? {};
      // (cudamatrix-token is the plan job's checkout's alone: see the private repository's test.)
      const secrets = Object.fromEntries(Object.entries(declared).filter(([name]) => name !== 'cudamatrix-token'));
      expect(Object.keys(secrets)).toEqual(['ssh-private-key', 'known-hosts', 'ssh-key-passphrase']);
      for (const [name, spec] of Object.entries(secrets)) {
        expect(spec.required, name).toBe(false);
        expect(run.with?.[name], name).toBe(`\${{ !matrix.labelled && secrets.${name} || '' }}`);
      }
      // No other step or job sees them.
      const text = read(GPU_MATRIX);
      expect([...text.matchAll(/secrets\.[\w-]+/g)].map((match) => match[0])).toEqual([
        'secrets.cudamatrix-token',
        ...Object.keys(secrets).map((name) => `secrets.${name}`),
      ]);
    });

    it('the probe jobs run on the labels of their entry, with actions only: no run: step, so no shell on Windows runners', () => {
      expect(probe['runs-on']).toBe('${{ matrix.runsOn }}');
      expect((probe as { strategy?: { 'fail-fast'?: boolean; matrix?: string } }).strategy).toEqual({
        'fail-fast': false,
        matrix: '${{ fromJSON(needs.plan.outputs.matrix) }}',
      });
      expect(probe.steps!.length).toBeGreaterThan(0);
      expect(probe.steps!.filter((step) => step.run !== undefined || !step.uses)).toEqual([]);
    });

    it('the merge job runs when probe jobs failed or were lost (!cancelled()), and needs the plan', () => {
      expect(merge.needs).toEqual(['plan', 'probe']);
      expect(merge.if?.replace(/\s+/g, ' ')).toMatch(/!cancelled\(\)/);
      expect(merge.if).not.toMatch(/success\(\)|failure\(\)/);
      // The uploads that must happen after a failed step say so.
      expect(probe.steps!.find((step) => step.id === 'upload-events')?.if).toBe('always()');
      expect(merge.steps!.find((step) => step.id === 'upload-results')?.if).toMatch(/!cancelled\(\)/);
    });

    it("the artifact names agree: the package uploaded once and downloaded by name, each probe job's events matched by the merge's pattern", () => {
      const steps = Object.entries(wf.jobs).flatMap(([job, j]) => (j.steps ?? []).map((step) => ({ job, ...step })));
      const uploads = steps.filter((step) => step.uses?.startsWith('actions/upload-artifact@'));
      const downloads = steps.filter((step) => step.uses?.startsWith('actions/download-artifact@'));
      const uploaded = uploads.map((upload) => `${upload.job}: ${String(upload.with?.name)}`);
      expect(uploaded).toEqual(['plan: cudamatrix-package', 'probe: cudamatrix-events-${{ matrix.name }}', 'merge: cudamatrix-results']);
      for (const download of downloads) {
        if (download.with?.name)
          expect(
            uploads.some((upload) => upload.with?.name === download.with?.name && upload.job !== download.job),
            `${download.job}: ${String(download.with.name)}`,
          ).toBe(true);
        else {
          // The pattern matches the name each probe job gives, whatever the entry's name, and not the others.
          const matches = picomatch(String(download.with?.pattern));
          for (const name of ['win-wddm', 'transport', 'transport-2-of-3']) expect(matches(`cudamatrix-events-${name}`), name).toBe(true);
          expect(matches('cudamatrix-package')).toBe(false);
          expect(matches('cudamatrix-results')).toBe(false);
        }
      }
      expect(downloads.map((download) => `${download.job}: ${String(download.with?.name ?? download.with?.pattern)}`)).toEqual([
        'probe: cudamatrix-package',
        'merge: cudamatrix-package',
        'merge: cudamatrix-events-*',
      ]);
      // The package's files lie under a hidden folder (.cudamatrix), which upload-artifact skips unless told.
      const pkg = uploads.find((upload) => upload.with?.name === 'cudamatrix-package')!;
      expect(pkg.with?.['include-hidden-files']).toBe(true);
      expect(String(pkg.with?.path).trim().split('\n')).toEqual([
        '.cudamatrix/action.yml',
        '.cudamatrix/action/',
        '.cudamatrix/cudamatrix-*.tgz',
      ]);
    });

    it('every use of the action passes only inputs action.yml declares, and its package', () => {
      const uses = Object.values(wf.jobs).flatMap((j) => (j.steps ?? []).filter((step) => step.uses === './.cudamatrix'));
      expect(uses.map((step) => step.id)).toEqual(['matrix', 'run', 'merge']);
      for (const step of uses) {
        expect(
          Object.keys(step.with ?? {}).filter((k) => !(k in action.inputs)),
          step.id,
        ).toEqual([]);
        expect(step.with?.package, step.id).toBe('.cudamatrix');
      }
      // Each job gets the action before it uses it.
      for (const [id, job] of Object.entries(wf.jobs)) {
        const at = job.steps?.findIndex((step) => step.uses === './.cudamatrix') ?? -1;
        if (at === -1) continue;
        expect(
          job.steps!.slice(0, at).some((step) => step.with?.path === '.cudamatrix'),
          id,
        ).toBe(true);
      }
    });

    it('the pull request carries only the records folder and the report, with the token given to that step alone', () => {
      const pr = merge.steps!.find((step) => step.id === 'pull-request')!;
      expect(pr.if).toMatch(/inputs\.open-pr/);
      // A record written is worth a pull request (a new driver's record whose behaviour is the same is the per-driver documentation).
      expect(pr.if).toMatch(/steps\.merge\.outputs\.records-written != '0'/);
      expect(pr.run).toMatch(/git add --all -- "\$\{paths\[@\]\}"/);
      expect(pr.run).toMatch(/paths=\("\$RECORDS_DIR"\)/);
      expect(pr.run).not.toMatch(/\$\{\{/); // inputs reach the script through env, never pasted into it
      expect((pr as { env?: Record<string, string> }).env?.GH_TOKEN).toBe('${{ github.token }}');
      for (const job of Object.values(wf.jobs))
        for (const step of job.steps ?? [])
          if (step.uses?.startsWith('actions/checkout@')) expect(step.with?.['persist-credentials']).toBe(false);
    });
  });

  describe('release.yml', () => {
    const wf = workflow('.github/workflows/release.yml');
    const { pack, release, npm } = wf.jobs as Record<'pack' | 'release' | 'npm', Job & { container?: unknown }>;

    it("runs on a pushed v* tag only, and packs as gpu-matrix.yml's plan job does (Debian 11: glibc 2.17)", () => {
      expect(wf.on).toEqual({ push: { tags: ['v*'] } });
      expect(pack.container).toBe('node:20-bullseye');
      const packing = (j: Job) =>
        String(j.steps?.find((step) => step.id === 'package')?.run)
          .split('\n')
          .filter((line) => /apt-get install|pnpm (install|pack)|npm install -g pnpm/.test(line))
          .map((line) => line.trim());
      expect(packing(pack)).toEqual(packing(workflow(GPU_MATRIX).jobs.plan!));
      expect(packing(pack)).toHaveLength(4);
      // The tag is checked against package.json before anything is packed.
      expect(pack.steps?.map((step) => step.id)).toEqual(['checkout', 'version', 'package', 'checksum', 'sea', 'upload']);
    });

    it("writes only in the release job (contents: write, the token in its step's env alone); npm only with the project's variable", () => {
      expect([pack.permissions, release.permissions, npm.permissions]).toEqual([
        { contents: 'read' },
        { contents: 'write' },
        { contents: 'read', 'id-token': 'write' },
      ]);
      const step = release.steps!.find((jobStep) => jobStep.id === 'release')! as Step & { env?: Record<string, string> };
      expect(step.env?.GH_TOKEN).toBe('${{ github.token }}');
      expect(step.run).toMatch(/files=\("\$TARBALL" "\$TARBALL\.sha256"\)/);
      expect(step.run).toMatch(/gh release create "\$TAG" "\$\{files\[@\]\}" --repo "\$GITHUB_REPOSITORY" --verify-tag/);
      expect(npm.if).toBe("${{ vars.NPM_PACKAGE_NAME != '' }}");
      for (const job of Object.values(wf.jobs)) {
        for (const jobStep of job.steps ?? []) {
          expect(jobStep.id).toMatch(/^[a-z][a-z0-9-]*$/);
          if (jobStep.run) expect(jobStep.run).not.toMatch(/\$\{\{/); // values reach scripts through env, never pasted in
          if (jobStep.uses?.startsWith('actions/checkout@')) expect(jobStep.with?.['persist-credentials']).toBe(false);
        }
      }
      expect(read('.github/workflows/release.yml').match(/github\.token|secrets\.\w+/g)).toEqual(['github.token', 'secrets.NPM_TOKEN']);
    });
  });

  it('ci.yml runs .ci/run, as root with CI=true, in the Debian 12 it is written for', () => {
    const ci = workflow('.github/workflows/ci.yml');
    const job = ci.jobs.test as Job & { container?: { image: string; options?: string } };
    expect(job.container?.image).toBe('node:20-bookworm');
    expect(job.steps?.map((step) => step.uses ?? step.run)).toEqual(['actions/checkout@v5', 'bash .ci/run']);
    expect((job.steps?.[1] as { env?: Record<string, string> }).env).toEqual({ CI: 'true' });
  });

  it('pages.yml builds the report from the records into a site that holds them, and deploys it', () => {
    const pages = workflow('.github/workflows/pages.yml');
    expect(Object.keys(pages.on)).toEqual(['push', 'workflow_dispatch']);
    expect((pages.on.push as { paths?: string[] }).paths).toContain('records/**');
    const build = pages.jobs.build!;
    const run = build.steps?.find((step) => step.id === 'report')?.run ?? '';
    expect(run).toMatch(/cudamatrix report --records-dir "\$site" --out "\$site"/);
    expect(run).toMatch(/cp "\$site\/behaviour\.html" "\$site\/index\.html"/);
    expect(build.steps?.at(-1)?.uses).toMatch(/^actions\/upload-pages-artifact@/);
    expect(pages.jobs.deploy?.steps?.map((step) => step.uses)).toEqual([expect.stringMatching(/^actions\/deploy-pages@/)]);
  });

  it('the example caller calls gpu-matrix.yml with a matrix, the permissions its merge job asks for, and cudamatrix named at the same ref', () => {
    const caller = workflow(EXAMPLE);
    const [job] = Object.values(caller.jobs);
    const [, owner, ref] = /^([\w-]+)\/cudamatrix\/\.github\/workflows\/gpu-matrix\.yml@(.+)$/.exec(job!.uses ?? '') ?? [];
    expect(owner).toBe('your-org');
    expect(job!.with?.['cudamatrix-repository']).toBe(`${owner}/cudamatrix`);
    expect(job!.with?.['cudamatrix-ref']).toBe(ref);
    expect(job!.with?.matrix).toMatch(/\.ya?ml$/);
    expect(Object.keys(caller.on).sort()).toEqual(['schedule', 'workflow_dispatch']);
    expect(job!.permissions).toEqual(workflow(GPU_MATRIX).jobs.merge!.permissions);
    // Its own inputs reach the called workflow (docs/self-hosted-runners.md: "Checking a runner" runs it with targets).
    for (const name of Object.keys(caller.on.workflow_dispatch?.inputs ?? {}))
      expect(String(job!.with?.[name]), name).toContain(`inputs.${name}`);
    expect(Object.keys(caller.on.workflow_dispatch?.inputs ?? {})).toEqual(expect.arrayContaining(['targets', 'probes']));
    // It passes the secrets gpu-matrix.yml declares, from its own.
    const declared = Object.keys((workflow(GPU_MATRIX).on.workflow_call as { secrets?: Record<string, unknown> }).secrets ?? {});
    expect(Object.keys((job as { secrets?: Record<string, string> }).secrets ?? {})).toEqual(declared);
  });

  it("docs/github-actions.md's caller snippet is docs/examples/driver-matrix.yml, byte for byte", () => {
    const readme = read('docs/github-actions.md');
    const begin = '<!-- docs/examples/driver-matrix.yml: begin -->\n```yaml\n';
    const end = '```\n<!-- docs/examples/driver-matrix.yml: end -->';
    const from = readme.indexOf(begin);
    const to = readme.indexOf(end, from);
    expect(from, `docs/github-actions.md has no block between ${JSON.stringify(begin)} and ${JSON.stringify(end)}`).toBeGreaterThan(-1);
    expect(to).toBeGreaterThan(from);
    const snippet = readme.slice(from + begin.length, to);
    expect(
      snippet,
      "docs/github-actions.md's snippet differs from docs/examples/driver-matrix.yml: copy the file between the markers again",
    ).toBe(read(EXAMPLE));
  });
});
