/**
 * A `run:` step: its script written to a file and run in the shell GitHub would use (bash -e,
 * bash with pipefail, sh, python, pwsh, a custom `cmd {0}`), in its working directory, its
 * outputs read back. Also the shapes of a step's result in the making (Base, Fail) that the
 * other kinds of step share.
 */
import { randomUUID } from 'node:crypto';
import { existsSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { evaluateString, type EvalScope } from './expr.ts';
import type { JobState, StepScope } from './job-state.ts';
import type { StepLog } from './log.ts';
import type { Dict, StepInfo, StepResult } from './play-types.ts';
import { processEnv, readFileCommands, type FileCommands } from './step-environment.ts';
import { header, firstLine } from './step-labels.ts';
import { ended, runProcess } from './step-process.ts';

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

export type Fail = (kind: StepResult['kind'], message: string, exitCode?: number | null) => StepResult;
export type Base = Pick<StepResult, 'id' | 'name' | 'exitCode' | 'outputs' | 'log'>;

export async function runScript(
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
  return processStepResult('run', { state, slog, files, base, fail }, end.exitCode, outcome);
}

/**
 * A `run:` or node step's result once its process ended: its outcome, and the outputs its file
 * commands set (a malformed one fails the step). A lost job reads no file.
 */
export function processStepResult(
  kind: 'run' | 'node',
  step: { state: JobState; slog: StepLog; files: FileCommands; base: Base; fail: Fail },
  exitCode: number | null,
  outcome: StepResult['outcome'],
): StepResult {
  const { state, slog, files, base, fail } = step;
  if (state.lost) return { ...base, kind, exitCode, outcome, conclusion: outcome };
  let outputs: Record<string, string> = {};
  try {
    outputs = readFileCommands(state, slog, files);
  } catch (e) {
    return fail(kind, (e as Error).message, exitCode);
  }
  return { ...base, kind, exitCode, outputs, outcome, conclusion: outcome };
}
