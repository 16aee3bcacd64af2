/**
 * The Slurm lab itself (test/slurm/slurm-lab.ts): it starts, its two nodes run a job step with
 * their fake GPU, a job waiting for a GPU says why, and stopping it leaves nothing.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { slurmReady, startSlurmLab, type SlurmLab } from './slurm-lab.ts';

const ready = slurmReady();
let lab: SlurmLab | undefined;

beforeAll(async () => {
  if (ready) lab = await startSlurmLab(2);
}, 120_000);

afterAll(async () => {
  const left = await lab?.stop();
  expect(left ?? []).toEqual([]);
});

describe.skipIf(!ready)('the Slurm lab', () => {
  it('runs a step on both nodes, each with its one fake GPU', async () => {
    const out = await lab!.slurm('srun', '-N2', '--gres=gpu:1', '-l', 'sh', '-c', 'echo "$SLURMD_NODENAME $CUDA_VISIBLE_DEVICES"');
    expect(
      out
        .split('\n')
        .filter(Boolean)
        .map((line) => line.replace(/^\d+: /, ''))
        .sort(),
    ).toEqual(['n1 0', 'n2 0']);
    expect(await lab!.settled()).toEqual({ queue: [], processes: [] });
  });

  it('keeps a job waiting for a GPU pending, with Slurm saying why', async () => {
    // Cancelled below, so it rejects: handled from the start, not only once awaited.
    const holder = lab!.slurm('srun', '-N2', '--gres=gpu:1', '-J', 'holder', 'sleep', '30').catch((e: Error) => e.message);
    let line = '';
    // Both GPUs held: the next job pends for Resources.
    const until = Date.now() + 60_000;
    let waiter: Promise<string> | undefined;
    while (Date.now() < until) {
      const queue = await lab!.queue();
      if (!waiter && queue.some((job) => job.includes(' holder RUNNING ')))
        waiter = lab!.slurm('srun', '--gres=gpu:1', '-J', 'waiter', 'true').catch((e: Error) => e.message);
      line = queue.find((job) => job.includes(' waiter ')) ?? '';
      if (line.includes('PENDING')) break;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    expect(line).toMatch(/waiter PENDING Resources/);
    await lab!.slurm('scancel', '-n', 'holder');
    await lab!.slurm('scancel', '-n', 'waiter');
    await holder;
    await waiter;
    expect(await lab!.settled()).toEqual({ queue: [], processes: [] });
  });
});
