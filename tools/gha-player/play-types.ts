/**
 * The player's public types: what a test passes in (PlayCommon, PlayJobOptions,
 * PlayWorkflowOptions, the hooks and replaced steps) and what a play returns (WorkflowPlay,
 * JobOutcome, JobPlay, StepResult). Kept apart so every part of the player shares one vocabulary
 * without importing the code that plays.
 */
import type { ChildProcess } from 'node:child_process';
import type { Annotation, LogGroup } from './log.ts';
import type { StandIn } from './standins.ts';

export type Dict = Record<string, unknown>;
export type InputValue = string | boolean | number;
export type JobResult = 'success' | 'failure' | 'cancelled' | 'skipped';
export type StepOutcome = 'success' | 'failure' | 'cancelled' | 'skipped';

export interface NeedResult {
  result: JobResult;
  outputs: Record<string, string>;
}

/** The identity of the run, as the github context and GITHUB_* variables give it. */
export interface RunIdentity {
  repository: string;
  runId: string;
  runNumber: string;
  sha: string;
  ref: string;
  actor: string;
}

export interface StepInfo {
  jobId: string;
  matrix: Dict | null;
  stepId: string;
  name: string;
}

/** Given with a step's process: how the test ends it. Both kill the step's process group. */
export interface StepControl {
  /** The machine died: the job ends 'killed' and nothing after this step runs. */
  loseRunner(): void;
  /** Only the step's processes die (SIGKILL by default): the step fails, the job goes on. */
  killStep(signal?: NodeJS.Signals): void;
}

export interface ReplacedStepContext {
  jobId: string;
  stepId: string;
  matrix: Dict | null;
  workspace: string;
  runnerTemp: string;
  artifactsDir: string;
  /** The step's `with:` and `run:`, evaluated. */
  with: Record<string, string>;
  run: string | undefined;
  /** The environment the step's process would get (GITHUB_OUTPUT and the rest included). */
  env: Record<string, string>;
  log(line: string): void;
  setOutput(name: string, value: string): void;
}

/** A declared substitute for a step; throwing fails the step. */
export type ReplaceStep = (ctx: ReplacedStepContext) => void | Promise<void>;

/** What every job of a play shares (playJob and playWorkflow take them all). */
export interface PlayCommon {
  /** The artifact store of the run: one folder per artifact name. */
  artifactsDir: string;
  /** The event that triggers the workflow (default: workflow_dispatch if the workflow has it, else its first event). */
  event?: string;
  /** The workflow's inputs for that event (defaults and types from its `on:`). */
  inputs?: Record<string, InputValue>;
  /** The runner machine's environment (default process.env; its GITHUB_*, RUNNER_*, ACTIONS_*, INPUT_* are dropped). */
  env?: NodeJS.ProcessEnv;
  /** The secrets context (every value masked in the log). */
  secrets?: Record<string, string>;
  vars?: Record<string, string>;
  github?: Partial<RunIdentity>;
  /** The event's payload (github.event and GITHUB_EVENT_PATH): its keys over the player's few (ref, repository, sender), e.g. an issue. */
  eventPayload?: Record<string, unknown>;
  /** Stand-ins for actions by 'owner/repo', 'owner/repo/path' or with '@ref'; they win over folders and defaults. */
  actions?: Record<string, StandIn>;
  /** 'owner/repo' -> a local folder holding that repository (its actions, reusable workflows, checkouts). */
  repos?: Record<string, string>;
  /** Substitutes for steps by 'stepId' or 'jobId.stepId'. */
  replaceSteps?: Record<string, ReplaceStep>;
  hooks?: { onStepSpawn?: (step: StepInfo, child: ChildProcess, control: StepControl) => void };
  /** What a step process that dies by a signal the player did not send means (default 'runner-lost'). */
  killMeans?: 'runner-lost' | 'step-failed';
  /** Cancels the run (as the Cancel button: running steps interrupted, `if: always()` steps still run). */
  signal?: AbortSignal;
  /**
   * A job with `container:`: refused (the default), or its steps played on this machine as if it
   * were the image ('run-here'; the job's log says so). Services are never played.
   */
  containers?: 'refuse' | 'run-here';
  /** ::debug:: lines in the log, RUNNER_DEBUG=1 (also when secrets or vars set ACTIONS_STEP_DEBUG=true). */
  debug?: boolean;
}

export interface PlayJobOptions extends PlayCommon {
  workflowFile: string;
  jobId: string;
  needs?: Record<string, NeedResult>;
  /** For a job with strategy.matrix: one of its entries (see matrixEntries). */
  matrixEntry?: Dict;
  strategy?: { jobIndex: number; jobTotal: number };
  /** GITHUB_WORKSPACE: the checkout the test made. */
  workspace: string;
}

export interface StepResult {
  id: string;
  name: string;
  /** 'uses': a uses: step that did not get as far as finding its action (skipped, or refused). */
  kind: 'run' | 'uses' | 'node' | 'composite' | 'stand-in' | 'replaced';
  outcome: StepOutcome;
  conclusion: StepOutcome;
  /** The process's exit status (128 + the signal's number for a killed process); null without one. */
  exitCode: number | null;
  outputs: Record<string, string>;
  /** This step's part of the log (masked). */
  log: string;
  /** A composite action's steps. */
  steps?: StepResult[];
  /** A workflow step's `if:` as GitHub evaluates it (GitHub's parser: wrapped in success() && (...) where it calls no status function). */
  condition?: string;
}

export interface JobPlay {
  jobId: string;
  /** The display name (`probe (a, b)` for a matrix leg, or the evaluated `name:`). */
  name: string;
  matrix: Dict | null;
  /** runs-on, evaluated: the labels the job asks for (never matched here). */
  runsOn: string[];
  status: 'success' | 'failure' | 'killed' | 'cancelled';
  outputs: Record<string, string>;
  /** The steps that ran or were skipped (after a runner is lost, the rest are absent). */
  steps: StepResult[];
  /** The steps' GITHUB_STEP_SUMMARY files, concatenated (masked). */
  summary: string;
  /** The job's log as GitHub shows it (masked). */
  log: string;
  annotations: Annotation[];
  /** Annotations over GitHub's limits (their lines are in the log). */
  droppedAnnotations: number;
  groups: LogGroup[];
  workspace: string;
}

export interface LegInfo {
  jobId: string;
  matrix: Dict | null;
  index: number;
  total: number;
  /** The caller's job id when the job is in a reusable workflow. */
  caller?: string;
}

export interface PlayWorkflowOptions extends PlayCommon {
  workflowFile: string;
  /** GITHUB_WORKSPACE for each job leg: one folder for all, or a function (GitHub gives each job a fresh runner). */
  workspace: string | ((leg: LegInfo) => string | Promise<string>);
  /** Options for one leg (a job, or one matrix entry of it), over the common ones. */
  perLeg?: (
    leg: LegInfo,
  ) => Partial<Pick<PlayCommon, 'env' | 'actions' | 'repos' | 'replaceSteps' | 'hooks' | 'killMeans' | 'debug'>> | undefined;
  /** Matrix legs played at once (default 1). */
  maxParallel?: number;
}

export interface JobOutcome {
  jobId: string;
  result: JobResult;
  /** The job's outputs; a matrix job's are its legs' merged, a later leg's non-empty value winning. */
  outputs: Record<string, string>;
  matrixEntries: Dict[] | null;
  legs: JobPlay[];
  /** A `uses:` job: the called workflow's play, per leg. */
  calls: WorkflowPlay[];
  /** Why the job failed before any leg ran (a matrix that does not expand, a bad `uses:`). */
  error?: string;
}

export interface WorkflowPlay {
  file: string;
  event: string;
  inputs: Record<string, InputValue>;
  jobs: Record<string, JobOutcome>;
  /** Job ids in the order they were played. */
  order: string[];
  result: 'success' | 'failure' | 'cancelled';
  /** on.workflow_call.outputs, evaluated (a called workflow's outputs). */
  outputs: Record<string, string>;
}
