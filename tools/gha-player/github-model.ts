/**
 * A workflow as GitHub's own parser reads it (@actions/workflow-parser, the one GitHub's editor
 * tooling uses): each job's `if:`, and each step's id and `if:`. The parser names a
 * step without an id as the runner does (`__run`, `__actions_upload-artifact`, `__self` for
 * `uses: ./`, `_2` for a repeat), and gives every `if:` as the expression GitHub evaluates: with
 * `${{ }}` or without, text around one made a format(), and `success() && (...)` around one that
 * calls no status function. A workflow the parser refuses is not played.
 */
import { readFileSync } from 'node:fs';
import { convertWorkflowTemplate, parseWorkflow, type TraceWriter } from '@actions/workflow-parser';

export interface GitHubStep {
  id: string;
  /** The condition GitHub evaluates (success() when the step has no if:). */
  if: string;
}

export interface GitHubJob {
  if: string;
  /** Empty for a job that calls a reusable workflow. */
  steps: GitHubStep[];
}

const models = new Map<string, Promise<Map<string, GitHubJob>>>();

/** The jobs of a workflow file, by id, as GitHub's parser reads them (read once per file). */
export function githubJobs(file: string): Promise<Map<string, GitHubJob>> {
  let model = models.get(file);
  if (!model) models.set(file, (model = parseJobs(file)));
  return model;
}

async function parseJobs(file: string): Promise<Map<string, GitHubJob>> {
  const messages: string[] = [];
  const trace: TraceWriter = { error: (message) => messages.push(message), info: () => {}, verbose: () => {} };
  const parsed = parseWorkflow({ name: file, content: readFileSync(file, 'utf8') }, trace);
  const template = parsed.value ? await convertWorkflowTemplate(parsed.context, parsed.value) : undefined;
  const errors = [...parsed.context.errors.getErrors().map(String), ...(template?.errors ?? []).map((e) => e.Message)];
  if (!template || errors.length) throw new Error(`[player] GitHub's workflow parser refuses ${file}: ${[...new Set(errors)].join('; ')}`);
  return new Map(
    template.jobs.map((job) => [
      job.id.value,
      {
        if: job.if?.expression ?? 'success()',
        steps: 'steps' in job ? job.steps.map((step) => ({ id: step.id, if: step.if?.expression ?? 'success()' })) : [],
      },
    ]),
  );
}
