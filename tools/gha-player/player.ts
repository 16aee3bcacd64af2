/**
 * A GitHub Actions workflow player for the tests: plays a workflow's jobs on this Linux machine
 * the way a runner would, with the real commands, so a test can run plan -> probe -> merge as
 * GitHub would and assert what GitHub would show (outputs, summary, annotations, the masked log).
 * What it plays and what it does not: README.md.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { constants, tmpdir } from 'node:os';
import path from 'node:path';
import { parse as parseYaml } from 'yaml';
import {
  coerceString,
  evaluateCondition,
  evaluateIf,
  evaluateString,
  evaluateValue,
  expandMatrix,
  type Contexts,
  type EvalScope,
  type Status,
} from './expr.ts';
import { githubJobs, type GitHubStep } from './github-model.ts';
import { JobLog, parseFileCommand, type Annotation, type LogGroup, type StepLog } from './log.ts';
import { defaultStandIns, type StandIn, type StandInContext } from './standins.ts';

export { expandMatrix } from './expr.ts';
export { parseFileCommand } from './log.ts';
export type { Annotation, LogGroup } from './log.ts';
export type { StandIn, StandInContext } from './standins.ts';

type Dict = Record<string, unknown>;
type InputValue = string | boolean | number;
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

// --- the workflow and its run ----------------------------------------------------------------

interface Workflow {
  file: string;
  doc: Dict;
  jobs: Record<string, Dict>;
  on: Record<string, Dict>;
}

const workflowCache = new Map<string, Workflow>();

export function loadWorkflow(file: string): Workflow {
  const abs = path.resolve(file);
  const cached = workflowCache.get(abs);
  if (cached && existsSync(abs)) return cached;
  if (!existsSync(abs)) throw new Error(`workflow file not found: ${abs}`);
  const doc = parseYaml(readFileSync(abs, 'utf8')) as Dict;
  if (!doc || typeof doc !== 'object' || !doc.jobs || typeof doc.jobs !== 'object') throw new Error(`${abs}: not a workflow (no jobs:)`);
  const rawOn = doc.on;
  const on: Record<string, Dict> =
    typeof rawOn === 'string'
      ? { [rawOn]: {} }
      : Array.isArray(rawOn)
        ? Object.fromEntries(rawOn.map((e) => [String(e), {}]))
        : Object.fromEntries(Object.entries((rawOn ?? {}) as Dict).map(([k, config]) => [k, (config ?? {}) as Dict]));
  const wf = { file: abs, doc, jobs: doc.jobs as Record<string, Dict>, on };
  workflowCache.set(abs, wf);
  return wf;
}

/** What the jobs of one workflow run (a top-level one or a called one) share. */
interface Run {
  wf: Workflow;
  event: string;
  inputs: Record<string, InputValue>;
  github: Dict;
  secrets: Record<string, string>;
  vars: Record<string, string>;
  common: PlayCommon;
}

function defaultEvent(wf: Workflow): string {
  if ('workflow_dispatch' in wf.on) return 'workflow_dispatch';
  const first = Object.keys(wf.on)[0];
  if (!first) throw new Error(`${wf.file}: the workflow has no \`on:\``);
  return first;
}

/**
 * The inputs context for the event, as GitHub makes it: declared inputs only, required ones given
 * or defaulted, booleans and numbers typed (github.event.inputs keeps strings for a dispatch).
 */
export function resolveInputs(
  wf: Workflow,
  event: string,
  given: Record<string, InputValue>,
  scope: Omit<EvalScope, 'where'>,
): Record<string, InputValue> {
  const declared = ((wf.on[event]?.inputs ?? {}) as Record<string, Dict | null>) ?? {};
  const where = `${wf.file}: on.${event}.inputs`;
  const unknown = Object.keys(given).filter((k) => !(k in declared));
  if (unknown.length) {
    throw new Error(
      event === 'workflow_call'
        ? `${where}: Invalid input, ${unknown[0]} is not defined in the referenced workflow.`
        : `${where}: Unexpected inputs provided: ${JSON.stringify(unknown)}`,
    );
  }
  const out: Record<string, InputValue> = {};
  for (const [name, specRaw] of Object.entries(declared)) {
    const spec = specRaw ?? {};
    const type = String(spec.type ?? (event === 'workflow_call' ? '' : 'string'));
    if (event === 'workflow_call' && !['string', 'boolean', 'number'].includes(type))
      throw new Error(`${where}.${name}: a workflow_call input needs type string, boolean or number, got '${type}'`);
    let value: unknown = given[name];
    if (value === undefined) {
      if (spec.default !== undefined) value = evaluateValue(spec.default, { ...scope, where: `${where}.${name}.default` });
      else if (spec.required === true)
        throw new Error(
          event === 'workflow_call'
            ? `${where}: Input ${name} is required, but not provided while calling.`
            : `${where}: Required input '${name}' not provided`,
        );
    }
    if (type === 'boolean') {
      if (value === undefined) value = false;
      else if (value === 'true' || value === 'false') {
        if (event === 'workflow_call' && name in given)
          throw new Error(`${where}.${name}: Unexpected type of value '${value}', expected type: Boolean.`);
        value = value === 'true';
      } else if (typeof value !== 'boolean') throw new Error(`${where}.${name}: Unexpected value '${String(value)}' for a boolean input`);
    } else if (type === 'number') {
      if (value === undefined) value = 0;
      const asNumber = typeof value === 'number' ? value : Number(value);
      if (Number.isNaN(asNumber) || (event === 'workflow_call' && name in given && typeof value !== 'number'))
        throw new Error(`${where}.${name}: Unexpected value '${String(value)}' for a number input`);
      value = asNumber;
    } else {
      value = value === undefined ? '' : coerceString(value);
      if (type === 'choice' && !(spec.options as unknown[] | undefined)?.map(String).includes(value as string)) {
        throw new Error(`${where}.${name}: '${String(value)}' is not one of the options ${JSON.stringify(spec.options)}`);
      }
    }
    out[name] = value as InputValue;
  }
  return out;
}

function makeRun(wf: Workflow, common: PlayCommon, callerGithub?: Dict): Run {
  const event = common.event ?? defaultEvent(wf);
  if (!(event in wf.on))
    throw new Error(`${wf.file}: the workflow is not triggered by ${event} (its on: has ${Object.keys(wf.on).join(', ') || 'nothing'})`);
  const secrets = { ...common.secrets };
  const vars = { ...common.vars };
  const id = {
    repository: 'octo-org/octo-repo',
    runId: '1',
    runNumber: '1',
    sha: '0'.repeat(40),
    ref: 'refs/heads/main',
    actor: 'gha-player',
    ...common.github,
  };
  const baseGithub: Dict = callerGithub ?? {
    event_name: event,
    repository: id.repository,
    repository_owner: id.repository.split('/')[0],
    run_id: id.runId,
    run_number: id.runNumber,
    run_attempt: '1',
    sha: id.sha,
    ref: id.ref,
    ref_name: id.ref.replace(/^refs\/(heads|tags)\//, ''),
    ref_type: id.ref.startsWith('refs/tags/') ? 'tag' : 'branch',
    actor: id.actor,
    triggering_actor: id.actor,
    workflow: String(wf.doc.name ?? path.relative(path.resolve(wf.file, '../../..'), wf.file)),
    workflow_ref: `${id.repository}/${path.relative(path.resolve(wf.file, '../../..'), wf.file)}@${id.ref}`,
    server_url: 'https://github.com',
    api_url: 'https://api.github.com',
    graphql_url: 'https://api.github.com/graphql',
    token: secrets.GITHUB_TOKEN ?? '',
    retention_days: '90',
    event: {},
  };
  const inputs = resolveInputs(wf, event, common.inputs ?? {}, { contexts: { github: baseGithub, vars } });
  const github = callerGithub
    ? baseGithub
    : {
        ...baseGithub,
        event: {
          inputs:
            event === 'workflow_dispatch'
              ? Object.fromEntries(Object.entries(inputs).map(([k, inputValue]) => [k, String(inputValue)]))
              : inputs,
          ref: id.ref,
          repository: { full_name: id.repository, name: id.repository.split('/')[1] },
          sender: { login: id.actor },
          ...common.eventPayload,
        },
      };
  return { wf, event, inputs, github, secrets, vars, common };
}

// --- one job ---------------------------------------------------------------------------------

const FILE_COMMANDS = {
  GITHUB_OUTPUT: 'set_output',
  GITHUB_STEP_SUMMARY: 'step_summary',
  GITHUB_ENV: 'set_env',
  GITHUB_PATH: 'add_path',
  GITHUB_STATE: 'save_state',
} as const;
type FileCommands = Record<keyof typeof FILE_COMMANDS, string>;
const SUMMARY_LIMIT = 1024 * 1024;

interface JobState {
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
interface StepScope {
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

function machineEnv(env: NodeJS.ProcessEnv | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, value] of Object.entries(env ?? process.env)) {
    if (value !== undefined && !/^(GITHUB_|RUNNER_|ACTIONS_|INPUT_)/.test(k)) out[k] = value;
  }
  return out;
}

function arch(): string {
  return ({ x64: 'X64', arm64: 'ARM64', arm: 'ARM', ia32: 'X86' } as Record<string, string>)[process.arch] ?? process.arch.toUpperCase();
}

function contextsFor(state: JobState, scope: StepScope, extra: { env?: Record<string, string>; status?: string } = {}): Contexts {
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

function stepStatus(state: JobState, scope: StepScope): Status {
  return { success: !scope.failed, failure: scope.failed, cancelled: state.cancelled };
}

function scopeFor(state: JobState, scope: StepScope, where: string, env?: Record<string, string>): EvalScope {
  return { contexts: contextsFor(state, scope, { env }), status: stepStatus(state, scope), workspace: state.workspace, where };
}

function killGroup(pid: number | undefined, signal: NodeJS.Signals): void {
  if (!pid) return;
  try {
    process.kill(-pid, signal);
  } catch {
    // gone already
  }
}

/** A stream's text cut into lines as they come (the last partial line kept until the end). */
function lines(onLine: (line: string) => void): { push(chunk: string): void; end(): void } {
  let rest = '';
  return {
    push(chunk) {
      const parts = (rest + chunk).split('\n');
      rest = parts.pop()!;
      for (const line of parts) onLine(line);
    },
    end() {
      if (rest !== '') onLine(rest);
      rest = '';
    },
  };
}

interface ProcessEnd {
  exitCode: number;
  /** Why the player (or the test) ended it, if it did. */
  ended?: 'cancel' | 'timeout' | 'lost' | 'killed';
}

/** Runs one process of a step in its own process group, its output through the step's log. */
async function runProcess(
  state: JobState,
  info: StepInfo,
  slog: StepLog,
  file: string,
  args: string[],
  cwd: string,
  env: Record<string, string>,
  timeoutMs: number | undefined,
): Promise<ProcessEnd> {
  const child = spawn(file, args, { cwd, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  let ended: ProcessEnd['ended'];
  const pid = child.pid;
  if (pid) state.groups.add(pid);
  const out = lines((line) => slog.processLine(line));
  const err = lines((line) => slog.processLine(line));
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => out.push(chunk));
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => err.push(chunk));
  // The runner's cancel: SIGINT, then SIGTERM after 7.5 s, then SIGKILL after 2.5 s more.
  const timers: NodeJS.Timeout[] = [];
  const interrupt = (why: 'cancel' | 'timeout') => {
    if (ended) return;
    ended = why;
    killGroup(pid, 'SIGINT');
    timers.push(
      setTimeout(() => killGroup(pid, 'SIGTERM'), 7500),
      setTimeout(() => killGroup(pid, 'SIGKILL'), 10_000),
    );
  };
  state.interrupt = interrupt;
  if (timeoutMs !== undefined) timers.push(setTimeout(() => interrupt('timeout'), timeoutMs));
  const control: StepControl = {
    loseRunner: () => {
      ended = 'lost';
      killGroup(pid, 'SIGKILL');
    },
    killStep: (signal = 'SIGKILL') => {
      ended ??= 'killed';
      killGroup(pid, signal);
    },
  };
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (code, signal) => resolve({ code, signal }));
  });
  const closed = new Promise((resolve) => child.once('close', resolve));
  state.common.hooks?.onStepSpawn?.(info, child, control);
  let status: { code: number | null; signal: NodeJS.Signals | null };
  try {
    status = await exited;
  } catch (e) {
    slog.annotate('error', `An error occurred trying to start process '${file}' with working directory '${cwd}'. ${(e as Error).message}`);
    return { exitCode: 1 };
  } finally {
    for (const timer of timers) clearTimeout(timer);
    state.interrupt = undefined;
  }
  // The step ends when its output is read; a grandchild holding the pipes open gets a second.
  await Promise.race([closed, new Promise((resolve) => setTimeout(resolve, 1000).unref())]);
  child.stdout!.destroy();
  child.stderr!.destroy();
  out.end();
  err.end();
  // A group with no process left is forgotten (its id may be reused); one with orphans is killed at the job's end.
  try {
    process.kill(-pid!, 0);
  } catch {
    state.groups.delete(pid!);
  }
  if (status.signal && !ended) ended = state.common.killMeans === 'step-failed' ? 'killed' : 'lost';
  const exitCode = status.code ?? 128 + (constants.signals[status.signal!] ?? 0);
  return ended ? { exitCode, ended } : { exitCode };
}

function newFileCommands(state: JobState): FileCommands {
  const dir = path.join(state.runnerTemp, '_runner_file_commands');
  mkdirSync(dir, { recursive: true });
  const id = randomUUID();
  const files = Object.fromEntries(
    Object.entries(FILE_COMMANDS).map(([k, prefix]) => [k, path.join(dir, `${prefix}_${id}`)]),
  ) as FileCommands;
  for (const file of Object.values(files)) writeFileSync(file, '');
  return files;
}

/** After a step: its outputs, the env and path it added, its summary (within GitHub's limit). */
function readFileCommands(state: JobState, slog: StepLog, files: FileCommands): Record<string, string> {
  // A malformed file throws: the caller fails the step with the message.
  const outputs: Record<string, string> = { ...slog.commandOutputs };
  for (const [k, value] of parseFileCommand(readFileSync(files.GITHUB_OUTPUT, 'utf8'), 'GITHUB_OUTPUT')) outputs[k] = value;
  for (const [k, envValue] of parseFileCommand(readFileSync(files.GITHUB_ENV, 'utf8'), 'GITHUB_ENV')) state.env[k] = envValue;
  for (const pathEntry of readFileSync(files.GITHUB_PATH, 'utf8')
    .split('\n')
    .map((line) => line.trim())
    .filter(Boolean))
    state.pathAdded.unshift(pathEntry);
  const size = statSync(files.GITHUB_STEP_SUMMARY).size;
  if (size > SUMMARY_LIMIT) {
    slog.annotate('error', `$GITHUB_STEP_SUMMARY upload aborted, supports content up to a size of 1024k, got ${Math.ceil(size / 1024)}k.`);
  } else if (size > 0) {
    state.summaries.push(state.log.masker.apply(readFileSync(files.GITHUB_STEP_SUMMARY, 'utf8')));
  }
  return outputs;
}

/** The environment of a step's process: the machine's, the env context, the step's, then the runner's own. */
function processEnv(
  state: JobState,
  scope: StepScope,
  stepEnv: Record<string, string>,
  files: FileCommands,
  stepId: string,
): Record<string, string> {
  const machine = machineEnv(state.common.env);
  const env: Record<string, string> = { ...machine, CI: 'true', ...state.env, ...scope.env, ...stepEnv };
  const github = state.run.github;
  const runner: Record<string, string> = {
    GITHUB_ACTIONS: 'true',
    GITHUB_WORKSPACE: state.workspace,
    GITHUB_REPOSITORY: String(github.repository),
    GITHUB_REPOSITORY_OWNER: String(github.repository_owner),
    GITHUB_RUN_ID: String(github.run_id),
    GITHUB_RUN_NUMBER: String(github.run_number),
    GITHUB_RUN_ATTEMPT: String(github.run_attempt),
    GITHUB_SHA: String(github.sha),
    GITHUB_REF: String(github.ref),
    GITHUB_REF_NAME: String(github.ref_name),
    GITHUB_REF_TYPE: String(github.ref_type),
    GITHUB_ACTOR: String(github.actor),
    GITHUB_TRIGGERING_ACTOR: String(github.triggering_actor),
    GITHUB_EVENT_NAME: String(github.event_name),
    GITHUB_EVENT_PATH: path.join(state.runnerTemp, '_github_workflow', 'event.json'),
    GITHUB_WORKFLOW: String(github.workflow),
    GITHUB_WORKFLOW_REF: String(github.workflow_ref),
    GITHUB_JOB: state.jobId,
    GITHUB_ACTION: stepId,
    GITHUB_SERVER_URL: String(github.server_url),
    GITHUB_API_URL: String(github.api_url),
    GITHUB_GRAPHQL_URL: String(github.graphql_url),
    GITHUB_RETENTION_DAYS: String(github.retention_days),
    RUNNER_OS: 'Linux',
    RUNNER_ARCH: arch(),
    RUNNER_NAME: 'gha-player',
    RUNNER_ENVIRONMENT: 'self-hosted',
    RUNNER_TEMP: state.runnerTemp,
    RUNNER_TOOL_CACHE: path.join(state.runnerTemp, '_tool'),
    ...files,
  };
  if (state.log.debug) runner.RUNNER_DEBUG = '1';
  if (scope.actionPath) runner.GITHUB_ACTION_PATH = scope.actionPath;
  const pathVar = stepEnv.PATH ?? env.PATH ?? '';
  return { ...env, ...runner, PATH: [...state.pathAdded, pathVar].filter(Boolean).join(':') };
}

const SHELLS: Record<string, { template: string[]; ext: string }> = {
  bash: { template: ['bash', '--noprofile', '--norc', '-eo', 'pipefail', '{0}'], ext: '.sh' },
  sh: { template: ['sh', '-e', '{0}'], ext: '.sh' },
  python: { template: ['python', '{0}'], ext: '.py' },
  pwsh: { template: ['pwsh', '-command', ". '{0}'"], ext: '.ps1' },
};

/** The shell GitHub runs a `run:` with: unspecified is `bash -e {0}` (sh -e without bash). */
function shellCommand(shell: string | undefined, script: string): string[] {
  if (shell === undefined) return [existsSync('/bin/bash') || existsSync('/usr/bin/bash') ? 'bash' : 'sh', '-e', script];
  const known = SHELLS[shell];
  const template = known ? known.template : shell.trim().split(/\s+/);
  if (!template.some((arg) => arg.includes('{0}')))
    throw new Error(`Invalid shell option. Shell path with args must contain a '{0}' placeholder: '${shell}'`);
  return template.map((arg) => arg.replace('{0}', script));
}

function header(slog: StepLog, title: string, body: string[], env: Record<string, string>): void {
  slog.write(`##[group]Run ${title}`);
  for (const line of body) slog.write(line);
  const names = Object.keys(env);
  if (names.length) {
    slog.write('env:');
    for (const name of names) slog.write(`  ${name}: ${env[name]}`);
  }
  slog.write('##[endgroup]');
}

/**
 * A composite action's step without an id, named as the runner names it (the rules of GitHub's
 * workflow parser, which names a workflow's steps: github-model.ts): __run, __self for a local
 * action, __owner_repo for owner/repo[/path]@ref, then _2, _3 for repeats.
 */
function autoId(def: Dict, used: Set<string>): string {
  const uses = typeof def.uses === 'string' ? def.uses : '';
  const [repoPath = '', ref, ...more] = uses.split('@');
  const segments = repoPath.split(/[\\/]/).filter(Boolean);
  const name = uses.startsWith('docker://')
    ? uses.slice('docker://'.length)
    : /^(\.[\\/]|\$\/)/.test(uses)
      ? 'self'
      : ref && !more.length && segments.length >= 2
        ? `${segments[0]}/${segments[1]}`
        : 'run';
  const base = `__${name}`.replace(/[^A-Za-z0-9_-]/g, '_');
  let id = base;
  for (let suffix = 2; used.has(id); suffix++) id = `${base}_${suffix}`;
  return id;
}

function firstLine(text: string): string {
  return (
    text
      .split('\n')
      .find((line) => line.trim() !== '')
      ?.trim() ?? ''
  );
}

interface ActionDef {
  dir: string;
  doc: Dict;
  label: string;
}

function loadAction(dir: string, label: string): ActionDef {
  const file = ['action.yml', 'action.yaml'].map((fileName) => path.join(dir, fileName)).find((candidate) => existsSync(candidate));
  if (!file)
    throw new Error(
      `Can't find 'action.yml', 'action.yaml' or 'Dockerfile' under '${dir}'. Did you forget to run actions/checkout before running your local action?`,
    );
  return { dir, doc: parseYaml(readFileSync(file, 'utf8')) as Dict, label };
}

/** What a `uses:` of a step is: a stand-in, an action in a folder, or nothing known. */
function resolveUses(state: JobState, uses: string): { standIn: StandIn; ref: string } | { action: ActionDef } {
  if (uses.startsWith('./') || uses === '.') return { action: loadAction(path.resolve(state.workspace, uses), uses) };
  if (uses.startsWith('docker://')) throw new Error(`${uses}: docker actions are not played`);
  const at = uses.lastIndexOf('@');
  if (at < 0) throw new Error(`Expected format {org}/{repo}[/path]@ref. Actual '${uses}'`);
  const name = uses.slice(0, at);
  const ref = uses.slice(at + 1);
  const [owner, repo, ...rest] = name.split('/');
  const repoKey = `${owner}/${repo}`;
  const given = state.common.actions ?? {};
  const standIn = given[uses] ?? given[name];
  if (standIn) return { standIn, ref };
  const folder = state.common.repos?.[repoKey];
  if (folder) return { action: loadAction(path.join(folder, ...rest), `${uses} (played from ${path.join(folder, ...rest)})`) };
  const def = defaultStandIns[name];
  if (def) return { standIn: def, ref };
  throw new Error(
    `[player] unknown action '${uses}': no stand-in for '${name}' and no folder for '${repoKey}'; declare one in the player's actions or repos`,
  );
}

/**
 * Plays steps in order. `github`: a workflow job's steps as GitHub's parser reads them (their ids
 * and conditions); a composite action's steps have none, and get the player's own (autoId, evaluateIf).
 */
async function runSteps(state: JobState, scope: StepScope, defs: Dict[], github?: GitHubStep[]): Promise<StepResult[]> {
  const results: StepResult[] = [];
  const used = new Set<string>(defs.map((def) => def.id).filter((id): id is string => typeof id === 'string'));
  for (const [i, def] of defs.entries()) {
    if (state.lost) break;
    const parsed = github?.[i];
    const push = (result: StepResult) => results.push(parsed ? { ...result, condition: parsed.if } : result);
    const id = parsed?.id ?? (typeof def.id === 'string' ? def.id : autoId(def, used));
    used.add(id);
    const where = `${scope.where}[${i}]`;
    const name =
      def.name !== undefined
        ? safeString(def.name, state, scope, `${where}.name`)
        : `Run ${def.run !== undefined ? firstLine(String(def.run)) : String(def.uses)}`;
    const slog = state.log.step(id, scope.parentLog);
    let run = false;
    let result: StepResult;
    try {
      if (parsed) {
        slog.debug(`Evaluating condition for step: '${name}'`);
        slog.debug(`Evaluating: ${parsed.if}`);
        run = evaluateCondition(parsed.if, scopeFor(state, scope, `${where}.if`));
        slog.debug(`Result: ${run}`);
      } else run = evaluateIf(def.if, scopeFor(state, scope, `${where}.if`));
    } catch (e) {
      slog.annotate('error', (e as Error).message);
      result = {
        id,
        name,
        kind: def.run !== undefined ? 'run' : 'uses',
        outcome: 'failure',
        conclusion: 'failure',
        exitCode: null,
        outputs: {},
        log: '',
      };
      scope.failed = true;
      scope.steps[id] = { outputs: {}, outcome: 'failure', conclusion: 'failure' };
      push({ ...result, log: slog.lines.join('\n') });
      continue;
    }
    if (!run) {
      scope.steps[id] = { outputs: {}, outcome: 'skipped', conclusion: 'skipped' };
      push({
        id,
        name,
        kind: def.run !== undefined ? 'run' : 'uses',
        outcome: 'skipped',
        conclusion: 'skipped',
        exitCode: null,
        outputs: {},
        log: '',
      });
      continue;
    }
    result = await runStep(state, scope, def, id, name, where, slog);
    slog.endGroup();
    if (state.lost) {
      push({ ...result, outcome: 'failure', conclusion: 'failure', log: slog.lines.join('\n') });
      break;
    }
    let continueOnError = false;
    try {
      const value = evaluateValue(def['continue-on-error'], scopeFor(state, scope, `${where}.continue-on-error`));
      continueOnError = value === true || value === 'true';
    } catch (e) {
      slog.annotate('error', (e as Error).message);
    }
    const conclusion = result.outcome === 'failure' && continueOnError ? 'success' : result.outcome;
    if (conclusion === 'failure') scope.failed = true;
    scope.steps[id] = { outputs: result.outputs, outcome: result.outcome, conclusion };
    push({ ...result, conclusion, log: slog.lines.join('\n') });
  }
  return results;
}

function safeString(value: unknown, state: JobState, scope: StepScope, where: string): string {
  try {
    return evaluateString(value, scopeFor(state, scope, where));
  } catch {
    return String(value);
  }
}

/** Plays one step that its `if:` let run. */
async function runStep(
  state: JobState,
  scope: StepScope,
  def: Dict,
  id: string,
  name: string,
  where: string,
  slog: StepLog,
): Promise<StepResult> {
  const base = { id, name, exitCode: null as number | null, outputs: {} as Record<string, string>, log: '' };
  const fail = (kind: StepResult['kind'], message: string, exitCode: number | null = null): StepResult => {
    slog.annotate('error', message);
    return { ...base, kind, exitCode, outcome: 'failure', conclusion: 'failure' };
  };
  const info: StepInfo = { jobId: state.jobId, matrix: state.matrix, stepId: id, name };
  let stepEnv: Record<string, string>;
  let files: FileCommands;
  let timeoutMs: number | undefined;
  try {
    stepEnv = Object.fromEntries(
      Object.entries((def.env ?? {}) as Dict).map(([k, rawValue]) => [
        k,
        evaluateString(rawValue, scopeFor(state, scope, `${where}.env.${k}`)),
      ]),
    );
    files = newFileCommands(state);
    if (def['timeout-minutes'] !== undefined)
      timeoutMs = Number(evaluateValue(def['timeout-minutes'], scopeFor(state, scope, `${where}.timeout-minutes`))) * 60_000;
  } catch (e) {
    return fail(def.run !== undefined ? 'run' : 'uses', (e as Error).message);
  }
  const evalScope = scopeFor(state, scope, where, stepEnv);
  const replace = scope.composite ? undefined : (state.common.replaceSteps?.[`${state.jobId}.${id}`] ?? state.common.replaceSteps?.[id]);
  if (replace) {
    const outputs: Record<string, string> = {};
    slog.write(`##[group]Run ${def.run !== undefined ? firstLine(String(def.run)) : String(def.uses)}`);
    slog.write(`[player] step '${id}' is replaced by the test's substitute`);
    slog.write('##[endgroup]');
    try {
      const withValues = Object.fromEntries(
        Object.entries((def.with ?? {}) as Dict).map(([k, rawValue]) => [
          k,
          evaluateString(rawValue, { ...evalScope, where: `${where}.with.${k}` }),
        ]),
      );
      const runText = def.run !== undefined ? evaluateString(def.run, { ...evalScope, where: `${where}.run` }) : undefined;
      await replace({
        jobId: state.jobId,
        stepId: id,
        matrix: state.matrix,
        workspace: state.workspace,
        runnerTemp: state.runnerTemp,
        artifactsDir: state.common.artifactsDir,
        with: withValues,
        run: runText,
        env: processEnv(state, scope, stepEnv, files, id),
        log: (line) => slog.write(line),
        setOutput: (k, value) => (outputs[k] = value),
      });
      Object.assign(outputs, readFileCommands(state, slog, files));
    } catch (e) {
      return fail('replaced', (e as Error).message);
    }
    return { ...base, kind: 'replaced', outputs, outcome: 'success', conclusion: 'success' };
  }
  if (def.run !== undefined) return runScript(state, scope, def, base, info, where, slog, stepEnv, files, timeoutMs, evalScope, fail);
  if (typeof def.uses !== 'string') return fail('uses', `${where}: a step needs run: or uses:`);
  let target: ReturnType<typeof resolveUses>;
  let withValues: Record<string, string>;
  try {
    target = resolveUses(state, def.uses);
    withValues = Object.fromEntries(
      Object.entries((def.with ?? {}) as Dict).map(([k, rawValue]) => [
        k,
        evaluateString(rawValue, { ...evalScope, where: `${where}.with.${k}` }),
      ]),
    );
  } catch (e) {
    header(slog, String(def.uses), [], {});
    return fail('uses', (e as Error).message);
  }
  const withLines = Object.entries(withValues).map(([k, value]) => `  ${k}: ${value.replace(/\n$/, '').replace(/\n/g, '\n    ')}`);
  header(slog, def.uses, withLines.length ? ['with:', ...withLines] : [], { ...state.env, ...scope.env, ...stepEnv });
  if ('standIn' in target) {
    const outputs: Record<string, string> = {};
    const ctx: StandInContext = {
      uses: def.uses,
      ref: target.ref,
      with: withValues,
      workspace: state.workspace,
      runnerTemp: state.runnerTemp,
      artifactsDir: state.common.artifactsDir,
      repos: state.common.repos ?? {},
      github: contextsFor(state, scope).github as Dict,
      env: processEnv(state, scope, stepEnv, files, id),
      log: (line) => slog.write(line),
      warning: (message) => slog.annotate('warning', message),
      setOutput: (k, value) => (outputs[k] = value),
    };
    try {
      await target.standIn(ctx);
      Object.assign(outputs, readFileCommands(state, slog, files));
    } catch (e) {
      return fail('stand-in', (e as Error).message);
    }
    return { ...base, kind: 'stand-in', outputs, outcome: 'success', conclusion: 'success' };
  }
  return runAction(state, scope, target.action, base, info, where, slog, stepEnv, files, timeoutMs, withValues, evalScope, fail);
}

type Fail = (kind: StepResult['kind'], message: string, exitCode?: number | null) => StepResult;
type Base = Pick<StepResult, 'id' | 'name' | 'exitCode' | 'outputs' | 'log'>;

/** The step's outcome from how its process ended (the annotations GitHub adds included). */
function ended(
  state: JobState,
  slog: StepLog,
  name: string,
  end: ProcessEnd,
  timeoutMs: number | undefined,
  exitAnnotation: boolean,
): StepOutcome {
  if (end.ended === 'lost') {
    state.lost = true;
    slog.annotate(
      'error',
      "The self-hosted runner: gha-player lost communication with the server. Verify the machine is running and has a healthy network connection. [player: the step's process tree was killed]",
    );
    return 'failure';
  }
  if (end.ended === 'cancel') return 'cancelled';
  if (end.ended === 'timeout') {
    slog.annotate('error', `The action '${name}' has timed out after ${(timeoutMs ?? 0) / 60_000} minutes.`);
    return 'failure';
  }
  if (end.exitCode !== 0) {
    if (exitAnnotation) slog.annotate('error', `Process completed with exit code ${end.exitCode}.`);
    return 'failure';
  }
  return 'success';
}

async function runScript(
  state: JobState,
  scope: StepScope,
  def: Dict,
  base: Base,
  info: StepInfo,
  where: string,
  slog: StepLog,
  stepEnv: Record<string, string>,
  files: FileCommands,
  timeoutMs: number | undefined,
  evalScope: EvalScope,
  fail: Fail,
): Promise<StepResult> {
  let script: string;
  let argv: string[];
  let cwd: string;
  const shell = (def.shell as string | undefined) ?? (scope.composite ? undefined : state.defaults.shell);
  try {
    if (scope.composite && def.shell === undefined)
      throw new Error(`${where}: Required property is missing: shell (a composite action's run steps name their shell)`);
    script = evaluateString(def.run, { ...evalScope, where: `${where}.run` });
    const dir = (def['working-directory'] as string | undefined) ?? (scope.composite ? undefined : state.defaults['working-directory']);
    cwd =
      dir === undefined
        ? state.workspace
        : path.resolve(state.workspace, evaluateString(dir, { ...evalScope, where: `${where}.working-directory` }));
    const scriptFile = path.join(state.runnerTemp, `${randomUUID()}${SHELLS[shell ?? 'bash']?.ext ?? ''}`);
    writeFileSync(scriptFile, script);
    argv = shellCommand(shell, scriptFile);
  } catch (e) {
    return fail('run', (e as Error).message);
  }
  header(
    slog,
    firstLine(script),
    [
      ...script.replace(/\n$/, '').split('\n'),
      `shell: ${shell === undefined ? '/usr/bin/bash -e {0}' : (SHELLS[shell]?.template.join(' ') ?? shell)}`,
    ],
    { ...state.env, ...scope.env, ...stepEnv },
  );
  if (!existsSync(cwd))
    return fail('run', `An error occurred trying to start process '${argv[0]}' with working directory '${cwd}'. No such file or directory`);
  const end = await runProcess(
    state,
    info,
    slog,
    argv[0]!,
    argv.slice(1),
    cwd,
    processEnv(state, scope, stepEnv, files, base.id),
    timeoutMs,
  );
  const outcome = ended(state, slog, base.name, end, timeoutMs, true);
  if (state.lost) return { ...base, kind: 'run', exitCode: end.exitCode, outcome, conclusion: outcome };
  let outputs: Record<string, string> = {};
  try {
    outputs = readFileCommands(state, slog, files);
  } catch (e) {
    return fail('run', (e as Error).message, end.exitCode);
  }
  return { ...base, kind: 'run', exitCode: end.exitCode, outputs, outcome, conclusion: outcome };
}

/** An action's inputs: the step's `with:`, the action's defaults (evaluated), unexpected ones warned about. */
function actionInputs(action: ActionDef, withValues: Record<string, string>, evalScope: EvalScope, slog: StepLog): Record<string, string> {
  const declared = (action.doc.inputs ?? {}) as Record<string, Dict | null>;
  const unexpected = Object.keys(withValues).filter(
    (k) => !Object.keys(declared).some((declaredName) => declaredName.toLowerCase() === k.toLowerCase()),
  );
  if (unexpected.length)
    slog.annotate(
      'warning',
      `Unexpected input(s) '${unexpected.join("', '")}', valid inputs are ['${Object.keys(declared).join("', '")}']`,
    );
  const inputs: Record<string, string> = { ...withValues };
  for (const [name, spec] of Object.entries(declared)) {
    if (inputs[name] === undefined && spec?.default !== undefined)
      inputs[name] = evaluateString(spec.default, { ...evalScope, where: `${action.label}: inputs.${name}.default` });
  }
  return inputs;
}

async function runAction(
  state: JobState,
  scope: StepScope,
  action: ActionDef,
  base: Base,
  info: StepInfo,
  where: string,
  slog: StepLog,
  stepEnv: Record<string, string>,
  files: FileCommands,
  timeoutMs: number | undefined,
  withValues: Record<string, string>,
  evalScope: EvalScope,
  fail: Fail,
): Promise<StepResult> {
  const runs = (action.doc.runs ?? {}) as Dict;
  const using = String(runs.using ?? '');
  let inputs: Record<string, string>;
  try {
    inputs = actionInputs(action, withValues, evalScope, slog);
  } catch (e) {
    return fail('node', (e as Error).message);
  }
  if (/^node\d+$/.test(using)) {
    if (runs.pre || runs.post) slog.write(`[player] ${action.label}: pre/post steps are not played`);
    const main = path.join(action.dir, String(runs.main));
    const env = processEnv(state, scope, stepEnv, files, base.id);
    // GitHub's rule: INPUT_ + the name with spaces as underscores, upper-cased (hyphens kept).
    for (const [k, value] of Object.entries(inputs)) env[`INPUT_${k.replace(/ /g, '_').toUpperCase()}`] = value;
    const end = await runProcess(state, info, slog, process.execPath, [main], state.workspace, env, timeoutMs);
    const outcome = ended(state, slog, base.name, end, timeoutMs, false);
    if (state.lost) return { ...base, kind: 'node', exitCode: end.exitCode, outcome, conclusion: outcome };
    let outputs: Record<string, string> = {};
    try {
      outputs = readFileCommands(state, slog, files);
    } catch (e) {
      return fail('node', (e as Error).message, end.exitCode);
    }
    return { ...base, kind: 'node', exitCode: end.exitCode, outputs, outcome, conclusion: outcome };
  }
  if (using === 'composite') {
    // The composite's own steps context and status; it sees the calling step's env.
    const inner: StepScope = {
      steps: {},
      failed: false,
      inputs,
      env: { ...scope.env, ...stepEnv },
      actionPath: action.dir,
      composite: true,
      where: `${action.label}: runs.steps`,
      parentLog: slog,
    };
    const steps = await runSteps(state, inner, (runs.steps ?? []) as Dict[]);
    const outcome: StepOutcome = inner.failed || state.lost ? 'failure' : state.cancelled ? 'cancelled' : 'success';
    const outputs: Record<string, string> = {};
    if (!state.lost) {
      for (const [k, spec] of Object.entries((action.doc.outputs ?? {}) as Record<string, Dict>)) {
        try {
          outputs[k] = evaluateString(spec?.value, {
            contexts: contextsFor(state, inner),
            status: stepStatus(state, inner),
            workspace: state.workspace,
            where: `${action.label}: outputs.${k}.value`,
          });
        } catch (e) {
          slog.annotate('error', (e as Error).message);
        }
      }
    }
    return { ...base, kind: 'composite', outputs, outcome, conclusion: outcome, steps };
  }
  return fail('node', `${action.label}: runs.using '${using}' is not played (node actions and composite actions are)`);
}

function runsOnLabels(value: unknown): string[] {
  if (Array.isArray(value)) return value.map(String);
  if (value && typeof value === 'object') return ((value as Dict).labels as unknown[] | undefined)?.map(String) ?? [];
  return value === undefined ? [] : [String(value)];
}

function evalEnvMap(map: unknown, scope: EvalScope): Record<string, string> {
  return Object.fromEntries(
    Object.entries((map ?? {}) as Dict).map(([k, rawValue]) => [k, evaluateString(rawValue, { ...scope, where: `${scope.where}.${k}` })]),
  );
}

/** Plays one job (one matrix entry of it) of a run. */
async function playJobIn(
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

// --- a whole workflow --------------------------------------------------------------------------

function needsOf(job: Dict): string[] {
  return job.needs === undefined ? [] : Array.isArray(job.needs) ? job.needs.map(String) : [String(job.needs)];
}

/** The jobs in an order that respects `needs` (the file's order otherwise); unknown needs and cycles refused. */
export function jobOrder(wf: Workflow): string[] {
  const ids = Object.keys(wf.jobs);
  for (const id of ids) {
    for (const need of needsOf(wf.jobs[id]!))
      if (!(need in wf.jobs)) throw new Error(`${wf.file}: jobs.${id}.needs names '${need}', which is not a job of the workflow`);
  }
  const order: string[] = [];
  while (order.length < ids.length) {
    const next = ids.find((id) => !order.includes(id) && needsOf(wf.jobs[id]!).every((need) => order.includes(need)));
    if (!next) throw new Error(`${wf.file}: the jobs' needs form a cycle among ${ids.filter((i) => !order.includes(i)).join(', ')}`);
    order.push(next);
  }
  return order;
}

/** The entries of a job's strategy.matrix, evaluated with the run's contexts and its needs. */
export function matrixEntries(wfOrFile: Workflow | string, jobId: string, contexts: Contexts = {}): Dict[] | null {
  const wf = typeof wfOrFile === 'string' ? loadWorkflow(wfOrFile) : wfOrFile;
  const strategy = wf.jobs[jobId]?.strategy as Dict | undefined;
  if (!strategy?.matrix) return null;
  const where = `${wf.file}: jobs.${jobId}.strategy.matrix`;
  return expandMatrix(evaluateValue(strategy.matrix, { contexts, where }), where);
}

/** The file a job's `uses:` names: owner/repo/<path>@ref through `repos`, or ./<path> in the caller's repository. */
export function resolveWorkflowUses(uses: string, callerFile: string, repos: Record<string, string> = {}): string {
  if (uses.startsWith('./')) return path.resolve(path.dirname(callerFile), '..', '..', uses);
  const match = /^([^/@]+)\/([^/@]+)\/(.+)@(.+)$/.exec(uses);
  if (!match)
    throw new Error(
      `${callerFile}: '${uses}' is not a reusable workflow reference ({owner}/{repo}/.github/workflows/{file}@{ref} or ./.github/workflows/{file})`,
    );
  const dir = repos[`${match[1]}/${match[2]}`];
  if (!dir)
    throw new Error(
      `${callerFile}: no local folder for '${match[1]}/${match[2]}' (the caller uses ${uses}); pass repos: { '${match[1]}/${match[2]}': <folder> }`,
    );
  return path.join(dir, match[3]!);
}

function ancestors(wf: Workflow, id: string, seen = new Set<string>()): Set<string> {
  for (const need of needsOf(wf.jobs[id]!)) {
    if (!seen.has(need)) {
      seen.add(need);
      ancestors(wf, need, seen);
    }
  }
  return seen;
}

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
