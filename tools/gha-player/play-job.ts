/**
 * Plays one job (one matrix entry of it) on this machine: its name, runs-on, env, timeout and
 * cancel, a RUNNER_TEMP and event file of its own, its steps, its outputs (masked ones held back),
 * and the orphan processes killed at its end.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { coerceString, evaluateString, evaluateValue, type EvalScope } from './expr.ts';
import { githubJobs } from './github-model.ts';
import { contextsFor, stepStatus, type JobState, type StepScope } from './job-state.ts';
import { JobLog } from './log.ts';
import type { Dict, JobPlay, NeedResult, PlayCommon, PlayJobOptions, StepResult } from './play-types.ts';
import { runSteps } from './play-steps.ts';
import { killGroup } from './step-process.ts';
import { loadWorkflow } from './workflow-file.ts';
import { makeRun, type Run } from './workflow-run.ts';

function runsOnLabels(value: unknown): string[] {
  if (Array.isArray(value)) return value.map(String);
  if (value && typeof value === 'object') return ((value as Dict).labels as unknown[] | undefined)?.map(String) ?? [];
  return value === undefined ? [] : [String(value)];
}

export function evalEnvMap(map: unknown, scope: EvalScope): Record<string, string> {
  return Object.fromEntries(
    Object.entries((map ?? {}) as Dict).map(([k, rawValue]) => [k, evaluateString(rawValue, { ...scope, where: `${scope.where}.${k}` })]),
  );
}

/** Plays one job (one matrix entry of it) of a run. */
export async function playJobIn(
  run: Run,
  jobId: string,
  leg: { matrix: Dict | null; index: number; total: number; needs: Record<string, NeedResult>; workspace: string; common: PlayCommon },
): Promise<JobPlay> {
  const job = run.wf.jobs[jobId];
  if (!job) throw new Error(`${run.wf.file}: no job '${jobId}' (jobs: ${Object.keys(run.wf.jobs).join(', ')})`);
  const where = `${run.wf.file}: jobs.${jobId}`;
  if (job.services) throw new Error(`${where}: services are not played`);
  if (job.container && leg.common.containers !== 'run-here')
    throw new Error(`${where}: a container job is not played (containers: 'run-here' plays its steps on this machine)`);
  if (job.uses) throw new Error(`${where}: a job that calls a reusable workflow is played by playWorkflow`);
  const common = leg.common;
  const debug = Boolean(common.debug) || run.secrets.ACTIONS_STEP_DEBUG === 'true' || run.vars.ACTIONS_STEP_DEBUG === 'true';
  const log = new JobLog(debug);
  for (const secret of Object.values(run.secrets)) log.masker.add(secret);
  if (job.container)
    log.lines.push(`[player] container ${JSON.stringify(job.container)} is not played: the job's steps run on this machine`);
  const strategyDef = (job.strategy ?? {}) as Dict;
  const runnerTemp = mkdtempSync(path.join(tmpdir(), 'cm-gha-runner-'));
  const state: JobState = {
    run,
    jobId,
    job,
    where,
    matrix: leg.matrix,
    strategy: {
      'fail-fast': strategyDef['fail-fast'] !== false,
      'job-index': leg.index,
      'job-total': leg.total,
      'max-parallel': strategyDef['max-parallel'] ?? leg.total,
    },
    needs: leg.needs,
    common,
    workspace: path.resolve(leg.workspace),
    runnerTemp,
    log,
    env: {},
    pathAdded: [],
    summaries: [],
    cancelled: false,
    lost: false,
    groups: new Set(),
    defaults: {
      ...((run.wf.doc.defaults as Dict | undefined)?.run as Dict | undefined),
      ...((job.defaults as Dict | undefined)?.run as Dict | undefined),
    },
  };
  const scope: StepScope = { steps: {}, failed: false, inputs: run.inputs, env: {}, composite: false, where: `${where}.steps` };
  const jobScope = (keyPath: string): EvalScope => ({
    contexts: contextsFor(state, scope),
    status: stepStatus(state, scope),
    where: `${where}.${keyPath}`,
  });
  let name = jobId;
  let runsOn: string[] = [];
  let steps: StepResult[] = [];
  const outputs: Record<string, string> = {};
  const cancel = (message: string) => {
    if (state.cancelled || state.lost) return;
    state.cancelled = true;
    log.step('__job').annotate('error', message);
    state.interrupt?.('cancel');
  };
  const onAbort = () => cancel('The operation was canceled.');
  let jobTimer: NodeJS.Timeout | undefined;
  try {
    mkdirSync(path.join(runnerTemp, '_github_workflow'), { recursive: true });
    writeFileSync(path.join(runnerTemp, '_github_workflow', 'event.json'), JSON.stringify(run.github.event ?? {}, null, 2));
    try {
      state.env = {
        ...evalEnvMap(run.wf.doc.env, { ...jobScope('env'), where: `${run.wf.file}: env` }),
        ...evalEnvMap(job.env, jobScope('env')),
      };
      runsOn = runsOnLabels(evaluateValue(job['runs-on'], jobScope('runs-on')));
      name =
        job.name !== undefined
          ? evaluateString(job.name, jobScope('name'))
          : leg.matrix && Object.keys(leg.matrix).length
            ? `${jobId} (${Object.values(leg.matrix)
                .map((matrixValue) =>
                  matrixValue && typeof matrixValue === 'object' ? JSON.stringify(matrixValue) : coerceString(matrixValue),
                )
                .join(', ')})`
            : jobId;
      const minutes =
        job['timeout-minutes'] !== undefined ? Number(evaluateValue(job['timeout-minutes'], jobScope('timeout-minutes'))) : 360;
      jobTimer = setTimeout(
        () => cancel(`The job running on runner gha-player has exceeded the maximum execution time of ${minutes} minutes.`),
        minutes * 60_000,
      );
    } catch (e) {
      log.step('__job').annotate('error', (e as Error).message);
      scope.failed = true;
    }
    if (common.signal?.aborted) onAbort();
    common.signal?.addEventListener('abort', onAbort);
    if (!scope.failed) steps = await runSteps(state, scope, (job.steps ?? []) as Dict[], (await githubJobs(run.wf.file)).get(jobId)?.steps);
    if (!state.lost) {
      const jlog = log.step('__job');
      for (const [k, rawValue] of Object.entries((job.outputs ?? {}) as Dict)) {
        try {
          const value = evaluateString(rawValue, {
            ...jobScope(`outputs.${k}`),
            status: { success: true, failure: false, cancelled: false },
          });
          // GitHub does not pass on an output that holds a masked value.
          if (log.masker.hits(value)) jlog.annotate('warning', `Skip output '${k}' since it may contain secret.`);
          else outputs[k] = value;
        } catch (e) {
          jlog.annotate('error', (e as Error).message);
          scope.failed = true;
        }
      }
    }
  } finally {
    clearTimeout(jobTimer);
    common.signal?.removeEventListener('abort', onAbort);
    // The runner's orphan-process cleanup: whatever the job's steps left running is killed.
    for (const pid of state.groups) killGroup(pid, 'SIGKILL');
    rmSync(runnerTemp, { recursive: true, force: true, maxRetries: 3 });
  }
  return {
    jobId,
    name,
    matrix: leg.matrix,
    runsOn,
    status: state.lost ? 'killed' : state.cancelled ? 'cancelled' : scope.failed ? 'failure' : 'success',
    outputs: state.lost ? {} : outputs,
    steps,
    summary: state.summaries.join(''),
    log: log.lines.join('\n'),
    annotations: log.annotations,
    droppedAnnotations: log.droppedAnnotations,
    groups: log.groups,
    workspace: state.workspace,
  };
}

/**
 * Plays one job of a workflow (one matrix entry of it: matrixEntry) with the given needs, as a
 * runner would; the workflow's inputs are resolved for the event as playWorkflow resolves them.
 */
export async function playJob(options: PlayJobOptions): Promise<JobPlay> {
  const wf = loadWorkflow(options.workflowFile);
  const run = makeRun(wf, options);
  return playJobIn(run, options.jobId, {
    matrix: options.matrixEntry ?? null,
    index: options.strategy?.jobIndex ?? 0,
    total: options.strategy?.jobTotal ?? 1,
    needs: options.needs ?? {},
    workspace: options.workspace,
    common: options,
  });
}
