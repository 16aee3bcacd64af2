/** The `slurm` transport's options, checked when the matrix is loaded. */
import { z } from 'zod';
import { expandHostlist } from './hostlist.ts';

/** Seconds a job may wait in the queue before it is cancelled, with Slurm's reason in the error. */
export const DEFAULT_QUEUE_WAIT_S = 300;
export const DEFAULT_GRES = 'gpu:1';

/** A value given to salloc as one option: no spaces, not another option. */
const word = (what: string, example: string) =>
  z
    .string()
    .min(1)
    .regex(/^[^\s-][^\s]*$/, `${what}: one word, without spaces, not starting with "-" (e.g. ${example})`);

/**
 * Slurm's time formats (sbatch --time): minutes, MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS,
 * or UNLIMITED.
 */
const TIME =
  /^(\d+|\d+:\d{1,2}|\d+:\d{1,2}:\d{1,2}|\d+-\d+|\d+-\d+:\d{1,2}|\d+-\d+:\d{1,2}:\d{1,2}|UNLIMITED|unlimited|INFINITE|infinite)$/;

/** A hostlist expression that expands (./hostlist.ts); the error says what is wrong with it. */
const hostlist = z
  .string()
  .min(1)
  .superRefine((value, ctx) => {
    const expanded = expandHostlist(value);
    if ('error' in expanded)
      ctx.addIssue({
        code: 'custom',
        message: `not a Slurm hostlist: ${expanded.error}`,
        params: { fix: 'write node names, or ranges in brackets, e.g. gpu[01-16] or n1,n2' },
      });
  });

export const slurmOptions = z.strictObject({
  nodes: z
    .union([z.literal('all'), hostlist])
    .optional()
    .describe(
      'Fan-out: one target per node of this hostlist (gpu[01-16]), or of the partition (all, asked of sinfo when the run starts), named TARGET@NODE, each pinned there with --nodelist',
    ),
  partition: word('a partition name', 'gpu')
    .optional()
    .describe("The partition (salloc --partition; default: the cluster's default partition)"),
  account: word('an account name', 'proj123').optional().describe('The account the job is charged to (salloc --account)'),
  qos: word('a QOS name', 'normal').optional().describe('The quality of service (salloc --qos)'),
  gres: word('a generic resource request', 'gpu:1 or gpu:h200:1')
    .optional()
    .describe(`Generic resources of the job (salloc --gres; default ${DEFAULT_GRES}; "none" asks for none)`),
  constraint: z.string().min(1).optional().describe('Node features the node must have (salloc --constraint, e.g. "h200&ib")'),
  nodelist: word('a Slurm hostlist', 'gpu[01-04]').optional().describe('Nodes the job may run on (salloc --nodelist; one of them is used)'),
  timeLimit: z
    .string()
    .regex(TIME, 'a Slurm time limit: minutes, HH:MM:SS, D-HH:MM:SS or UNLIMITED (as sbatch --time)')
    .optional()
    .describe("The job's time limit (salloc --time, Slurm's formats: 30, 1:00:00, 1-00:00:00; default: the partition's)"),
  queueWait: z
    .number()
    .positive()
    .max(7 * 24 * 3600)
    .optional()
    .describe(
      `Seconds the job may wait in the queue; then it is cancelled and the error gives Slurm's reason (default ${DEFAULT_QUEUE_WAIT_S})`,
    ),
});
export type SlurmOptions = z.infer<typeof slurmOptions>;
