/**
 * What a step's `uses:` names: a stand-in (the test's or the default ones), an action in a folder
 * (the workspace or a mapped repository) read from its action.yml, or an unknown action refused;
 * and an action's inputs from the step's `with:` and the action's defaults.
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { parse as parseYaml } from 'yaml';
import { evaluateString, type EvalScope } from './expr.ts';
import type { JobState } from './job-state.ts';
import type { StepLog } from './log.ts';
import type { Dict } from './play-types.ts';
import { defaultStandIns, type StandIn } from './standins.ts';

export interface ActionDef {
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
export function resolveUses(state: JobState, uses: string): { standIn: StandIn; ref: string } | { action: ActionDef } {
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

/** An action's inputs: the step's `with:`, the action's defaults (evaluated), unexpected ones warned about. */
export function actionInputs(
  action: ActionDef,
  withValues: Record<string, string>,
  evalScope: EvalScope,
  slog: StepLog,
): Record<string, string> {
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
