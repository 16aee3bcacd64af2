/**
 * A GitHub Actions workflow player for the tests: plays a workflow's jobs on this Linux machine
 * the way a runner would, with the real commands, so a test can run plan -> probe -> merge as
 * GitHub would and assert what GitHub would show (outputs, summary, annotations, the masked log).
 * What it plays and what it does not: README.md.
 *
 * The package's entry: it only gathers the public API of the parts, which import one another
 * downwards only (README.md, "How it is built", lists them).
 */
export { expandMatrix } from './expr.ts';
export { parseFileCommand } from './log.ts';
export type { Annotation, LogGroup } from './log.ts';
export type { StandIn, StandInContext } from './standins.ts';
export type {
  JobOutcome,
  JobPlay,
  JobResult,
  LegInfo,
  NeedResult,
  PlayCommon,
  PlayJobOptions,
  PlayWorkflowOptions,
  ReplacedStepContext,
  ReplaceStep,
  RunIdentity,
  StepControl,
  StepInfo,
  StepOutcome,
  StepResult,
  WorkflowPlay,
} from './play-types.ts';
export { jobOrder, loadWorkflow, matrixEntries, resolveWorkflowUses } from './workflow-file.ts';
export { resolveInputs } from './workflow-run.ts';
export { playJob } from './play-job.ts';
export { playWorkflow } from './play-workflow.ts';
