/**
 * The state of one playing job (its env, log, cancel/lost flags, running process groups) and of
 * a list of its steps (the steps context), and the expression contexts and status made from them.
 * Every part that plays a step reads and updates these.
 */
import path from 'node:path';
import type { Contexts, EvalScope, Status } from './expr.ts';
import type { JobLog, StepLog } from './log.ts';
import type { Dict, NeedResult, PlayCommon, StepOutcome } from './play-types.ts';
import type { Run } from './workflow-run.ts';

export interface JobState {
  run: Run;
  jobId: string;
  job: Dict;
  where: string;
  matrix: Dict | null;
  strategy: Dict;
  needs: Record<string, NeedResult>;
  common: PlayCommon;
  workspace: string;
  runnerTemp: string;
  log: JobLog;
  /** The env context: workflow env, job env, then GITHUB_ENV (which overwrites them). */
  env: Record<string, string>;
  pathAdded: string[];
  summaries: string[];
  cancelled: boolean;
  lost: boolean;
  /** Interrupts the running step's process (set while one runs). */
  interrupt?: (why: 'cancel' | 'timeout') => void;
  groups: Set<number>;
  defaults: { shell?: string; 'working-directory'?: string };
}

/** The steps context and status of a list of steps: the job's, or a composite action's own. */
export interface StepScope {
  steps: Record<string, { outputs: Record<string, string>; outcome: StepOutcome; conclusion: StepOutcome }>;
  failed: boolean;
  inputs: Dict;
  /** The env a composite's steps inherit from the step that called it. */
  env: Record<string, string>;
  actionPath?: string;
  composite: boolean;
  where: string;
  /** The log of the step that called the composite action. */
  parentLog?: StepLog;
}

export function arch(): string {
  return ({ x64: 'X64', arm64: 'ARM64', arm: 'ARM', ia32: 'X86' } as Record<string, string>)[process.arch] ?? process.arch.toUpperCase();
}

export function contextsFor(state: JobState, scope: StepScope, extra: { env?: Record<string, string>; status?: string } = {}): Contexts {
  const { run } = state;
  return {
    github: { ...run.github, job: state.jobId, workspace: state.workspace, action_path: scope.actionPath ?? '' },
    inputs: scope.inputs,
    matrix: state.matrix ?? {},
    needs: state.needs,
    steps: scope.steps,
    env: { ...state.env, ...scope.env, ...extra.env },
    runner: {
      os: 'Linux',
      arch: arch(),
      name: 'gha-player',
      temp: state.runnerTemp,
      tool_cache: path.join(state.runnerTemp, '_tool'),
      environment: 'self-hosted',
      debug: state.log.debug ? '1' : '',
    },
    job: { status: extra.status ?? jobStatusNow(state, scope), container: {}, services: {} },
    secrets: run.secrets,
    strategy: state.strategy,
    vars: run.vars,
  };
}

function jobStatusNow(state: JobState, scope: StepScope): string {
  return state.cancelled ? 'cancelled' : scope.failed ? 'failure' : 'success';
}

export function stepStatus(state: JobState, scope: StepScope): Status {
  return { success: !scope.failed, failure: scope.failed, cancelled: state.cancelled };
}

export function scopeFor(state: JobState, scope: StepScope, where: string, env?: Record<string, string>): EvalScope {
  return { contexts: contextsFor(state, scope, { env }), status: stepStatus(state, scope), workspace: state.workspace, where };
}
