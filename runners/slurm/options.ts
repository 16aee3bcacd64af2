/** The `slurm` transport as the matrix knows it: its options, checked at load, and the host they reach. */
import { z } from 'zod';
import { CudamatrixError } from '../../core/errors.ts';
import type { KindOptions } from '../transport.ts';
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
const TIME = /^(\d+|\d+:\d{1,2}|\d+:\d{1,2}:\d{1,2}|\d+-\d+|\d+-\d+:\d{1,2}|\d+-\d+:\d{1,2}:\d{1,2}|UNLIMITED|unlimited|INFINITE|infinite)$/;

/** A hostlist expression that expands (./hostlist.ts); the error says what is wrong with it. */
const hostlist = z
  .string()
  .min(1)
  .superRefine((value, ctx) => {
    const r = expandHostlist(value);
    if ('error' in r) ctx.addIssue({ code: 'custom', message: `not a Slurm hostlist: ${r.error}`, params: { fix: 'write node names, or ranges in brackets, e.g. gpu[01-16] or n1,n2' } });
  });

export const slurmOptions = z.strictObject({
  nodes: z
    .union([z.literal('all'), hostlist])
    .optional()
    .describe('Fan-out: one target per node of this hostlist (gpu[01-16]), or of the partition (all, asked of sinfo when the run starts), named TARGET@NODE, each pinned there with --nodelist'),
  partition: word('a partition name', 'gpu').optional().describe("The partition (salloc --partition; default: the cluster's default partition)"),
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
    .describe(`Seconds the job may wait in the queue; then it is cancelled and the error gives Slurm's reason (default ${DEFAULT_QUEUE_WAIT_S})`),
});
export type SlurmOptions = z.infer<typeof slurmOptions>;

export const slurmKind: KindOptions<SlurmOptions> = {
  kind: 'slurm',
  description: "a node of a Slurm cluster, one job per target (salloc) with a step per command (srun): from this login node, or the previous hop's ([ssh, slurm])",
  options: slurmOptions,
  chainable: true,
  // The node is the scheduler's choice; targets pinned to different nodes may run at once.
  hostKey: (o) => `slurm:${o.nodelist ?? o.partition ?? 'default'}`,
  landsElsewhere: true,
  fanOut(o) {
    if (o.nodes === undefined || o.nodes === 'all') return undefined;
    const names = expandHostlist(o.nodes);
    if ('error' in names) return undefined; // refused at load by the schema
    return names.map((node) => {
      const { nodes: _nodes, ...rest } = o;
      return { suffix: node, options: { ...rest, nodelist: node } };
    });
  },
  fanOutAtRun(o) {
    if (o.nodes !== 'all') return undefined;
    const { nodes: _nodes, ...rest } = o;
    return async (run) => {
      const argv = ['sinfo', '--noheader', '--Node', '--format=%N', ...(o.partition ? [`--partition=${o.partition}`] : [])];
      const r = await run(argv);
      const names = [...new Set(r.stdout.split('\n').map((l) => l.trim()).filter(Boolean))];
      if (r.exitCode !== 0 || names.length === 0) {
        const said = `${r.stderr} ${r.stdout}`.replace(/\s+/g, ' ').trim() || `exit status ${r.exitCode}`;
        throw new CudamatrixError(
          r.exitCode === 127 || /ENOENT|not found/.test(said) ? 'SLURM_NOT_FOUND' : 'SLURM_JOB_REFUSED',
          `nodes: all: "${argv.join(' ')}" listed no node (${said}); run cudamatrix where Slurm's tools are (a login node, or [ssh, slurm]), check the partition, or write the nodes as a hostlist (nodes: gpu[01-16])`,
        );
      }
      return names.map((node) => ({ suffix: node, options: { ...rest, nodelist: node } }));
    };
  },
};
