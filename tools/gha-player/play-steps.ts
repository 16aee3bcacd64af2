/**
 * Plays a list of steps (a job's, or a composite action's own): each step's id and `if:`, then
 * the step by its kind (a replaced step, a `run:` script, a stand-in, a node action, a composite
 * action played step by step), continue-on-error, and the steps context they leave.
 */
import path from 'node:path';
import { actionInputs, resolveUses, type ActionDef } from './action-lookup.ts';
import { evaluateCondition, evaluateIf, evaluateString, evaluateValue, type EvalScope } from './expr.ts';
import type { GitHubStep } from './github-model.ts';
import { contextsFor, scopeFor, stepStatus, type JobState, type StepScope } from './job-state.ts';
import type { StepLog } from './log.ts';
import type { Dict, StepInfo, StepOutcome, StepResult } from './play-types.ts';
import { processStepResult, runScript, type Base, type Fail } from './script-step.ts';
import type { StandInContext } from './standins.ts';
import { newFileCommands, processEnv, readFileCommands, type FileCommands } from './step-environment.ts';
import { autoId, firstLine, header } from './step-labels.ts';
import { ended, runProcess } from './step-process.ts';

/**
 * Plays steps in order. `github`: a workflow job's steps as GitHub's parser reads them (their ids
 * and conditions); a composite action's steps have none, and get the player's own (autoId, evaluateIf).
 */
export async function runSteps(state: JobState, scope: StepScope, defs: Dict[], github?: GitHubStep[]): Promise<StepResult[]> {
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
    return processStepResult('node', { state, slog, files, base, fail }, end.exitCode, outcome);
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
