/**
 * Plays a whole workflow: its jobs in `needs` order, each job's `if:` against the results above
 * it, matrix legs `maxParallel` at a time with fail-fast, a job that `uses:` a reusable workflow
 * played as a called run, and the called workflow's outputs.
 */
import { evaluateCondition, evaluateString, evaluateValue, type Contexts, type Status } from './expr.ts';
import { githubJobs } from './github-model.ts';
import { evalEnvMap, playJobIn } from './play-job.ts';
import type {
  Dict,
  InputValue,
  JobOutcome,
  JobPlay,
  JobResult,
  LegInfo,
  NeedResult,
  PlayCommon,
  PlayWorkflowOptions,
  WorkflowPlay,
} from './play-types.ts';
import { ancestors, jobOrder, loadWorkflow, matrixEntries, needsOf, resolveWorkflowUses, type Workflow } from './workflow-file.ts';
import { makeRun, type Run } from './workflow-run.ts';

async function pool<T>(items: T[], limit: number, work: (item: T, index: number) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      await work(items[i]!, i);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(limit, items.length)) }, worker));
}

function legResult(status: JobPlay['status'] | WorkflowPlay['result']): JobResult {
  return status === 'killed' ? 'failure' : status;
}

async function playJobOutcome(
  run: Run,
  opts: PlayWorkflowOptions,
  jobId: string,
  results: Record<string, JobOutcome>,
  caller: string | undefined,
): Promise<JobOutcome> {
  const { wf } = run;
  const job = wf.jobs[jobId]!;
  const outcome: JobOutcome = { jobId, result: 'success', outputs: {}, matrixEntries: null, legs: [], calls: [] };
  const needs = Object.fromEntries(needsOf(job).map((need) => [need, { result: results[need]!.result, outputs: results[need]!.outputs }]));
  const above = [...ancestors(wf, jobId)].map((ancestor) => results[ancestor]!.result);
  const status: Status = {
    success: above.every((result) => result === 'success'),
    failure: above.includes('failure'),
    cancelled: Boolean(opts.signal?.aborted),
  };
  const contexts: Contexts = { github: run.github, needs, inputs: run.inputs, vars: run.vars };
  const where = `${wf.file}: jobs.${jobId}`;
  try {
    const condition = (await githubJobs(wf.file)).get(jobId)?.if ?? 'success()';
    if (!evaluateCondition(condition, { contexts, status, where: `${where}.if` })) return { ...outcome, result: 'skipped' };
    outcome.matrixEntries = matrixEntries(wf, jobId, contexts);
  } catch (e) {
    return { ...outcome, result: 'failure', error: (e as Error).message };
  }
  const entries: (Dict | null)[] = outcome.matrixEntries ?? [null];
  const failFast = (job.strategy as Dict | undefined)?.['fail-fast'] !== false;
  const abort = new AbortController();
  const onOuterAbort = () => abort.abort();
  opts.signal?.addEventListener('abort', onOuterAbort);
  const legResults: JobResult[] = [];
  try {
    await pool(entries, opts.maxParallel ?? 1, async (matrix, index) => {
      const info: LegInfo = { jobId, matrix, index, total: entries.length, ...(caller ? { caller } : {}) };
      if (abort.signal.aborted) {
        legResults[index] = 'cancelled'; // a leg not started when the run was cancelled or (fail-fast) another failed never starts
        return;
      }
      const common: PlayCommon = { ...run.common, ...opts.perLeg?.(info), signal: abort.signal };
      if (job.uses) {
        const called = await playCall(run, opts, jobId, job, { matrix, needs, common }, info);
        outcome.calls[index] = called;
        legResults[index] = called.result;
        for (const [k, value] of Object.entries(called.outputs)) if (value !== '') outcome.outputs[k] = value;
      } else {
        const workspace = typeof opts.workspace === 'function' ? await opts.workspace(info) : opts.workspace;
        const play = await playJobIn(run, jobId, { matrix, index, total: entries.length, needs, workspace, common });
        outcome.legs[index] = play;
        legResults[index] = legResult(play.status);
        for (const [k, outputValue] of Object.entries(play.outputs)) if (outputValue !== '') outcome.outputs[k] = outputValue;
      }
      if (legResults[index] === 'failure' && failFast) abort.abort();
    });
  } finally {
    opts.signal?.removeEventListener('abort', onOuterAbort);
  }
  outcome.legs = outcome.legs.filter(Boolean);
  outcome.calls = outcome.calls.filter(Boolean);
  outcome.result = legResults.includes('failure') ? 'failure' : legResults.includes('cancelled') ? 'cancelled' : 'success';
  return outcome;
}

/** A job `uses:` a reusable workflow: its `with:` as the called workflow's inputs, secrets passed or inherited. */
async function playCall(
  run: Run,
  opts: PlayWorkflowOptions,
  jobId: string,
  job: Dict,
  leg: { matrix: Dict | null; needs: Record<string, NeedResult>; common: PlayCommon },
  info: LegInfo,
): Promise<WorkflowPlay> {
  const where = `${run.wf.file}: jobs.${jobId}`;
  const contexts: Contexts = {
    github: run.github,
    needs: leg.needs,
    inputs: run.inputs,
    vars: run.vars,
    matrix: leg.matrix ?? {},
    secrets: run.secrets,
    strategy: { 'job-index': info.index, 'job-total': info.total },
  };
  const file = resolveWorkflowUses(String(job.uses), run.wf.file, leg.common.repos);
  const inputs = evaluateValue(job.with ?? {}, { contexts, where: `${where}.with` }) as Record<string, InputValue>;
  const secrets: Record<string, string> =
    job.secrets === 'inherit'
      ? { ...run.secrets }
      : {
          ...(run.secrets.GITHUB_TOKEN !== undefined ? { GITHUB_TOKEN: run.secrets.GITHUB_TOKEN } : {}),
          ...evalEnvMap(job.secrets, { contexts, where: `${where}.secrets` }),
        };
  const called = loadWorkflow(file);
  for (const [name, spec] of Object.entries(((called.on.workflow_call?.secrets ?? {}) as Record<string, Dict | null>) ?? {})) {
    if (spec?.required === true && secrets[name] === undefined)
      throw new Error(`${where}: Secret ${name} is required, but not provided while calling.`);
  }
  return playWorkflowIn(called, { ...opts, ...leg.common, event: 'workflow_call', inputs, secrets }, run.github, jobId);
}

async function playWorkflowIn(
  wf: Workflow,
  opts: PlayWorkflowOptions,
  callerGithub: Dict | undefined,
  caller: string | undefined,
): Promise<WorkflowPlay> {
  const run = makeRun(wf, opts, callerGithub);
  const results: Record<string, JobOutcome> = {};
  const order = jobOrder(wf);
  for (const jobId of order) {
    try {
      results[jobId] = await playJobOutcome(run, opts, jobId, results, caller);
    } catch (e) {
      results[jobId] = { jobId, result: 'failure', outputs: {}, matrixEntries: null, legs: [], calls: [], error: (e as Error).message };
    }
  }
  const all = Object.values(results).map((jobOutcome) => jobOutcome.result);
  const outputs: Record<string, string> = {};
  if (run.event === 'workflow_call') {
    const jobs = Object.fromEntries(
      Object.entries(results).map(([k, jobOutcome]) => [k, { result: jobOutcome.result, outputs: jobOutcome.outputs }]),
    );
    for (const [k, spec] of Object.entries((wf.on.workflow_call?.outputs ?? {}) as Record<string, Dict>)) {
      outputs[k] = evaluateString(spec?.value, {
        contexts: { github: run.github, inputs: run.inputs, vars: run.vars, jobs },
        where: `${wf.file}: on.workflow_call.outputs.${k}.value`,
      });
    }
  }
  return {
    file: wf.file,
    event: run.event,
    inputs: run.inputs,
    jobs: results,
    order,
    result: all.includes('failure') ? 'failure' : all.includes('cancelled') ? 'cancelled' : 'success',
    outputs,
  };
}

/**
 * Plays a whole workflow for an event: its jobs in `needs` order, each job's `if:` against its
 * needs, matrix jobs once per entry, reusable workflows called; returns every job's outcome.
 */
export async function playWorkflow(options: PlayWorkflowOptions): Promise<WorkflowPlay> {
  return playWorkflowIn(loadWorkflow(options.workflowFile), options, undefined, undefined);
}
