/**
 * A workflow file as the player reads it: its YAML loaded once (jobs and `on:` normalised), its
 * jobs in `needs` order, a job's matrix entries, and the file a reusable-workflow `uses:` names.
 * Static facts of the file only; nothing here runs a job.
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { parse as parseYaml } from 'yaml';
import { evaluateValue, expandMatrix, type Contexts } from './expr.ts';
import type { Dict } from './play-types.ts';

export interface Workflow {
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

export function needsOf(job: Dict): string[] {
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

export function ancestors(wf: Workflow, id: string, seen = new Set<string>()): Set<string> {
  for (const need of needsOf(wf.jobs[id]!)) {
    if (!seen.has(need)) {
      seen.add(need);
      ancestors(wf, need, seen);
    }
  }
  return seen;
}
