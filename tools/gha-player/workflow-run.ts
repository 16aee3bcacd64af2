/**
 * One run of a workflow (a top-level one or a called one): the event it is played for, its
 * inputs typed as GitHub types them, and the github context with the event's payload. Every job
 * of the run shares it.
 */
import path from 'node:path';
import { coerceString, evaluateValue, type EvalScope } from './expr.ts';
import type { Dict, InputValue, PlayCommon } from './play-types.ts';
import type { Workflow } from './workflow-file.ts';

/** What the jobs of one workflow run (a top-level one or a called one) share. */
export interface Run {
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

export function makeRun(wf: Workflow, common: PlayCommon, callerGithub?: Dict): Run {
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
