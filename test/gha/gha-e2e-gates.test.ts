/**
 * The GPU matrix workflow's gates (issue 21), played from the example caller
 * (docs/examples/driver-matrix.yml) as test/gha/gha-e2e.test.ts plays it, with the same stand-ins (the
 * plan job's container and package step, checkout and the artifact actions, `gh`):
 *   strict          a lab whose runners all find no driver (this machine has none): the probe jobs
 *                   and the merge fail (exit 4), and the merge's summary and annotations name
 *                   each runner that measured nothing; the caller passes no strict: it is the default
 *   fail-on-change  the H200's run with one fact no expectation covers changed (its run step
 *                   replaced by the event log the real H200 wrote, as in gha-e2e): every expectation
 *                   met, and with the caller's input fail-on-change the merge is red (exit 5) with
 *                   an error annotation saying what changed
 */
import { chmodSync, cpSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { stringify as toYaml } from 'yaml';
import { beforeAll, describe, expect, it } from 'vitest';
import { readEventLog, type RunStartEvent } from '../../events/events.ts';
import { H200_RUNS } from '../record-fixture.ts';
import { playWorkflow, type JobPlay, type PlayWorkflowOptions, type WorkflowPlay } from '@cudamatrix/gha-player';
import { repoRoot, tempDir } from '../helpers.ts';
import { git, makeLab } from './gha-lab.ts';
import { packCheckout } from '../package.ts';

const H200_LOG = H200_RUNS[3]!;

/** Plays the example caller on a lab of `matrix`, with the caller's dispatch inputs. */
async function playLab(
  matrix: object,
  inputs: Record<string, string | boolean>,
  perLeg?: PlayWorkflowOptions['perLeg'],
): Promise<WorkflowPlay> {
  const tarball = packCheckout();
  const dir = tempDir('cm-gha-gates-');
  const { cudamatrix, lab, origin } = makeLab(dir, toYaml(matrix));
  // gh talks to GitHub: a stand-in that only answers (the pull request is gha-e2e's subject).
  const bin = path.join(dir, 'bin');
  mkdirSync(bin);
  writeFileSync(
    path.join(bin, 'gh'),
    '#!/bin/sh\n# [player] gh stand-in: nothing reaches GitHub\n[ "$1" = pr ] && echo https://github.com/your-org/lab/pull/8\nexit 0\n',
  );
  chmodSync(path.join(bin, 'gh'), 0o755);
  let legs = 0;
  return playWorkflow({
    workflowFile: path.join(lab, '.github/workflows/driver-matrix.yml'),
    event: 'workflow_dispatch',
    inputs,
    github: { repository: 'your-org/lab' },
    workspace: (leg) => {
      const ws = path.join(dir, 'runners', `${leg.jobId}-${leg.index}-${legs++}`);
      git(dir, 'clone', '-q', origin, ws);
      return ws;
    },
    artifactsDir: path.join(dir, 'artifacts'),
    repos: { 'your-org/cudamatrix': cudamatrix },
    containers: 'run-here',
    env: { ...process.env, PATH: `${bin}:${process.env.PATH}`, NO_COLOR: '1' },
    replaceSteps: {
      'plan.package': (ctx) => {
        const dest = path.join(ctx.workspace, '.cudamatrix', path.basename(tarball));
        cpSync(tarball, dest);
        ctx.log(`[player] the package step is replaced: ${tarball} (packed from this checkout by test/package.ts)`);
        ctx.setOutput('tarball', dest);
      },
    },
    perLeg,
  });
}

const called = (play: WorkflowPlay) => play.jobs['gpu-lab']!.calls[0]!;
const legs = (play: WorkflowPlay, jobId: string): JobPlay[] => called(play).jobs[jobId]!.legs;

describe("strict (the reusable workflow's default): a lab whose runners all find no driver", () => {
  let play: WorkflowPlay;
  beforeAll(async () => {
    play = await playLab(
      {
        version: 1,
        targets: [
          { name: 'win-box', runsOn: ['self-hosted', 'linux', 'gpu', 'a'], probes: ['sysinfo'] },
          { name: 'linux-box', runsOn: ['self-hosted', 'linux', 'gpu', 'b'], probes: ['sysinfo', 'sync-latency'] },
        ],
      },
      {},
    );
  }, 600_000);

  it('fails every probe job (exit 4) and the merge job (exit 4), which names the runners that measured nothing', () => {
    for (const probe of legs(play, 'probe')) {
      expect(probe.status, probe.name).toBe('failure');
      expect(probe.steps.find((step) => step.id === 'run')!.exitCode, probe.name).toBe(4);
    }
    const [merge] = legs(play, 'merge');
    expect(merge!.status).toBe('failure');
    expect(merge!.steps.find((step) => step.id === 'merge')!.exitCode).toBe(4);
    expect(merge!.outputs['exit-code']).toBe('4');
    expect(merge!.summary).toMatch(/\*\*Exit status 4\*\*: nothing measured \(--strict\)/);
    expect(merge!.summary).not.toContain('every expectation met');
    expect(merge!.summary).toMatch(/^\| win-box \| job win-box on \[self-hosted, linux, gpu, a\] \| no NVIDIA driver found/m);
    expect(merge!.summary).toMatch(/^\| linux-box \| job linux-box on \[self-hosted, linux, gpu, b\] \| no NVIDIA driver found/m);
    const errors = merge!.annotations.filter((annotation) => annotation.level === 'error').map((annotation) => annotation.title);
    expect(errors).toEqual(expect.arrayContaining(['win-box: measured nothing', 'linux-box: measured nothing']));
    expect(play.jobs['gpu-lab']!.outputs['exit-code']).toBe('4');
    expect(play.result).toBe('failure');
  });
});

describe("fail-on-change (the caller's input): the H200 with a fact no expectation covers changed", () => {
  let play: WorkflowPlay;
  beforeAll(async () => {
    const start = readEventLog(H200_LOG)[0] as RunStartEvent;
    const probes = [...new Set(start.cells.map((cellName) => cellName.split('/')[1]!))];
    const log = readFileSync(H200_LOG, 'utf8');
    const changed = log
      .replace(/("name":"registered_counts_as_vram","value":)false/, '$1true')
      .replace(/"runId":"([^"]+)"/, '"runId":"$1-gates"');
    expect(changed).not.toBe(log);
    play = await playLab(
      {
        version: 1,
        expectations: start.matrix.expectations,
        targets: [{ name: 'local', runsOn: ['self-hosted', 'linux', 'gpu', 'h200'], probes }],
      },
      { 'fail-on-change': true },
      (leg) =>
        leg.jobId === 'probe'
          ? {
              replaceSteps: {
                // No GPU here: the H200 runner's run step writes what the real H200 wrote, one fact changed.
                'probe.run': (ctx) => {
                  const runDir = path.join(ctx.with['results-dir']!, 'h200-run');
                  mkdirSync(runDir, { recursive: true });
                  writeFileSync(path.join(runDir, 'events.jsonl'), changed);
                  ctx.log(
                    `[player] no GPU here: the run step is replaced by the H200's event log (${path.relative(repoRoot, H200_LOG)}, one fact changed)`,
                  );
                },
              },
            }
          : undefined,
    );
  }, 600_000);

  it('makes the merge red (exit 5) with an error annotation saying what changed, every expectation met', () => {
    const [merge] = legs(play, 'merge');
    expect(merge!.status).toBe('failure');
    expect(merge!.outputs).toMatchObject({ 'exit-code': '5', 'behaviour-changed': 'true', failed: '0', passed: '15' });
    expect(merge!.steps.find((step) => step.id === 'merge')!.exitCode).toBe(5);
    const change = merge!.annotations.find(
      (annotation) => annotation.level === 'error' && annotation.title?.startsWith('cudamatrix: behaviour changed: '),
    );
    expect(change?.message).toContain('fact `pinned-vram.registered_counts_as_vram`: false -> true');
    expect(merge!.summary).toMatch(/\*\*Exit status 5\*\*: behaviour changed against the committed records \(--fail-on-change\)/);
    // The results and the record are still uploaded, and the pull request opened with them.
    expect(merge!.steps.find((step) => step.id === 'upload-results')!.outcome).toBe('success');
    expect(merge!.steps.find((step) => step.id === 'pull-request')!.outcome).toBe('success');
    expect(play.result).toBe('failure');
  });
});
