/** The `slurm` transport as the rest of cudamatrix knows it (transports/transport.ts says what each entry is for). */
import { CudamatrixError } from '../../core/errors.ts';
import type { TransportKind } from '../transport.ts';
import { expandHostlist } from './hostlist.ts';
import { slurmOptions, type SlurmOptions } from './options.ts';

export const slurm: TransportKind<SlurmOptions> = {
  description:
    "a node of a Slurm cluster, one job per target (salloc) whose lifeline step runs its commands: from this login node, or the previous hop's ([ssh, slurm])",
  options: slurmOptions,
  chainable: true,
  // The node is the scheduler's choice; targets pinned to different nodes may run at once.
  hostKey: (options) => `slurm:${options.nodelist ?? options.partition ?? 'default'}`,
  landsElsewhere: true,
  asksForNoGpu: (options) => (options.gres === 'none' ? 'gres: none' : undefined),
  // The partition, within the login host (machineOf): its targets share a gha matrix job, pinned
  // ones too, since an unpinned job of the partition may land on any of its nodes.
  machine: (options) => `slurm:${options.partition ?? 'default'}`,
  fanOut(options) {
    if (options.nodes === undefined || options.nodes === 'all') return undefined;
    const names = expandHostlist(options.nodes);
    if ('error' in names) return undefined; // refused at load by the schema
    return names.map((node) => {
      const { nodes: _nodes, ...rest } = options;
      return { suffix: node, options: { ...rest, nodelist: node } };
    });
  },
  fanOutAtRun(options) {
    if (options.nodes !== 'all') return undefined;
    const { nodes: _nodes, ...rest } = options;
    return async (run) => {
      const argv = ['sinfo', '--noheader', '--Node', '--format=%N', ...(options.partition ? [`--partition=${options.partition}`] : [])];
      const result = await run(argv);
      const names = [
        ...new Set(
          result.stdout
            .split('\n')
            .map((line) => line.trim())
            .filter(Boolean),
        ),
      ];
      if (result.exitCode !== 0 || names.length === 0) {
        const said = `${result.stderr} ${result.stdout}`.replace(/\s+/g, ' ').trim() || `exit status ${result.exitCode}`;
        throw new CudamatrixError(
          result.exitCode === 127 || /ENOENT|not found/.test(said) ? 'SLURM_NOT_FOUND' : 'SLURM_JOB_REFUSED',
          `nodes: all: "${argv.join(' ')}" listed no node (${said}); run cudamatrix where Slurm's tools are (a login node, or [ssh, slurm]), check the partition, or write the nodes as a hostlist (nodes: gpu[01-16])`,
        );
      }
      return names.map((node) => ({ suffix: node, options: { ...rest, nodelist: node } }));
    };
  },
  reached: 'job granted, its lifeline step runs on the node',
  fixes: {
    TARGET_UNREACHABLE:
      "check that Slurm's tools (salloc, srun, sinfo) are on PATH where cudamatrix or the hop before runs, and that the partition exists (sinfo)",
  },
  load: async () => (await import('./transport.ts')).connectSlurm,
};
