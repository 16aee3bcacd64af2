/**
 * What a step's process sees and leaves behind: fresh file-command files per step (GITHUB_OUTPUT,
 * GITHUB_ENV, GITHUB_PATH, GITHUB_STEP_SUMMARY, GITHUB_STATE) read back after it, and its
 * environment (the machine's, the env context, the step's, then the runner's GITHUB_* and RUNNER_*).
 */
import { randomUUID } from 'node:crypto';
import { mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { arch, type JobState, type StepScope } from './job-state.ts';
import { parseFileCommand, type StepLog } from './log.ts';

const FILE_COMMANDS = {
  GITHUB_OUTPUT: 'set_output',
  GITHUB_STEP_SUMMARY: 'step_summary',
  GITHUB_ENV: 'set_env',
  GITHUB_PATH: 'add_path',
  GITHUB_STATE: 'save_state',
} as const;
export type FileCommands = Record<keyof typeof FILE_COMMANDS, string>;
const SUMMARY_LIMIT = 1024 * 1024;

function machineEnv(env: NodeJS.ProcessEnv | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, value] of Object.entries(env ?? process.env)) {
    if (value !== undefined && !/^(GITHUB_|RUNNER_|ACTIONS_|INPUT_)/.test(k)) out[k] = value;
  }
  return out;
}

export function newFileCommands(state: JobState): FileCommands {
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
export function readFileCommands(state: JobState, slog: StepLog, files: FileCommands): Record<string, string> {
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
export function processEnv(
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
