import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { CudamatrixError } from '../core/errors.ts';
import { parseMatrix } from '../matrix/load.ts';
import { DEFAULT_RUNS_ON, ghaMatrix } from './gha-matrix.ts';

const lab = parseMatrix(
  [
    'version: 1',
    'defaults: {probes: [sysinfo, sync-latency]}',
    'targets:',
    '  - {name: wddm-box, runsOn: [self-hosted, windows, gpu, wddm]}',
    '  - {name: linux-gpu, runsOn: gpu-linux}',
    '  - {name: far-a, transport: {kind: ssh, host: far.example}}',
    '  - {name: far-b, transport: {kind: ssh, host: far.example}, probes: [sysinfo]}',
    '  - {name: near, transport: {kind: ssh, host: near.example}}',
    '  - {name: here}',
  ].join('\n'),
  'lab.yaml',
);

describe('gha matrix', () => {
  it('gives a labelled target a job of its own on its labels, and the rest one shared job', () => {
    const matrix = ghaMatrix(lab);
    expect(matrix.include).toEqual([
      { name: 'wddm-box', targets: 'wddm-box', runsOn: ['self-hosted', 'windows', 'gpu', 'wddm'], labelled: true },
      { name: 'linux-gpu', targets: 'linux-gpu', runsOn: ['gpu-linux'], labelled: true },
      { name: 'shared', targets: 'far-a,far-b,near,here', runsOn: DEFAULT_RUNS_ON, labelled: false },
    ]);
    // What fromJSON gets: plain JSON, one line.
    expect(JSON.parse(JSON.stringify(matrix))).toEqual(matrix);
  });

  it('gives the shared job by default a label of its own, which no GPU runner of the example lab has (issue 33)', () => {
    // A runner takes every job whose labels it all has: with [self-hosted, linux] alone, every
    // Linux GPU runner would also take the shared job, and measure SSH targets instead of its GPU.
    expect(ghaMatrix(lab).include.find((e) => !e.labelled)!.runsOn).toEqual(DEFAULT_RUNS_ON);
    const file = path.join(import.meta.dirname, '..', 'matrix', 'examples', 'gha-lab.yaml');
    const example = parseMatrix(readFileSync(file, 'utf8'), file, { checkFiles: false });
    const runners = example.targets.flatMap((target) => (target.runsOn ? [target.runsOn.map((label) => label.toLowerCase())] : []));
    expect(runners.length).toBeGreaterThanOrEqual(3);
    for (const labels of runners) {
      expect(
        DEFAULT_RUNS_ON.every((label) => labels.includes(label.toLowerCase())),
        `a runner labelled ${labels.join(',')} would take the shared job`,
      ).toBe(false);
    }
  });

  it('splits the targets without labels into shards of whole hosts, with the labels asked for', () => {
    const matrix = ghaMatrix(lab, { shards: 2, runsOn: ['self-hosted', 'lab-net'] });
    const shared = matrix.include.filter((e) => !e.labelled);
    expect(shared.map((e) => e.name)).toEqual(['shared-1-of-2', 'shared-2-of-2']);
    for (const e of shared) expect(e.runsOn).toEqual(['self-hosted', 'lab-net']);
    // far-a and far-b are one host: never in two jobs.
    const jobOf = (targetName: string) => shared.find((e) => e.targets.split(',').includes(targetName))!.name;
    expect(jobOf('far-a')).toBe(jobOf('far-b'));
    expect(shared.flatMap((e) => e.targets.split(',')).sort()).toEqual(['far-a', 'far-b', 'here', 'near']);
  });

  it('makes no job for an empty shard (more shards than hosts)', () => {
    const matrix = ghaMatrix(lab, { shards: 8 });
    const shared = matrix.include.filter((e) => !e.labelled);
    expect(shared).toHaveLength(3); // three hosts: far.example, near.example, this machine
    expect(new Set(shared.map((e) => e.name)).size).toBe(3);
  });

  it('follows --target and --probe', () => {
    const matrix = ghaMatrix(lab, { targets: ['wddm-box', 'near'], probes: ['sync-*'] });
    expect(matrix.include.map((e) => [e.name, e.targets])).toEqual([
      ['wddm-box', 'wddm-box'],
      ['shared', 'near'],
    ]);
    // far-b runs only sysinfo: with --probe sync-* it has no cell and no job.
    expect(ghaMatrix(lab, { probes: ['sync-*'] }).include.find((e) => e.name === 'shared')!.targets).toBe('far-a,near,here');
  });

  it('refuses a labelled target named as the shared job would be, naming the fix', () => {
    const clash = parseMatrix('version: 1\ntargets:\n  - {name: shared, runsOn: [gpu]}\n  - {name: other}\n', 'clash.yaml');
    expect(() => ghaMatrix(clash)).toThrow(CudamatrixError);
    expect(() => ghaMatrix(clash)).toThrow(
      /clash\.yaml: target "shared" has the name gha matrix gives the job of the targets without runsOn.*rename the target/,
    );
  });

  it('never gives one SSH host to two jobs: same labels share a job, different ones are refused', () => {
    const together = parseMatrix(
      [
        'version: 1',
        'targets:',
        '  - {name: native, runsOn: [self-hosted, lab], transport: {kind: ssh, host: gpu1.lab}}',
        '  - {name: in-docker, runsOn: [self-hosted, lab], transport: [{kind: ssh, host: gpu1.lab}, {kind: docker, base: "nvidia/cuda:12.6.3-base-ubuntu24.04"}]}',
        '  - {name: also-native, runsOn: [Lab, self-hosted], transport: {kind: ssh, host: gpu1.lab}}',
        '  - {name: other, runsOn: [self-hosted, lab], transport: {kind: ssh, host: gpu2.lab}}',
        '  - {name: here-a, runsOn: [self-hosted, lab]}',
        '  - {name: here-b, runsOn: [self-hosted, lab]}',
      ].join('\n'),
      'together.yaml',
    );
    // Local targets of two labelled jobs run on whichever runners take them: one job each.
    expect(ghaMatrix(together).include.map((e) => [e.name, e.targets])).toEqual([
      // The same labels in another order and case are the same runners.
      ['native', 'native,in-docker,also-native'],
      ['other', 'other'],
      ['here-a', 'here-a'],
      ['here-b', 'here-b'],
    ]);
    const split = parseMatrix(
      'version: 1\ntargets:\n  - {name: native, runsOn: [self-hosted, lab], transport: {kind: ssh, host: gpu1.lab}}\n  - {name: in-docker, transport: [{kind: ssh, host: gpu1.lab}, docker]}\n',
      'split.yaml',
    );
    expect(() => ghaMatrix(split)).toThrow(
      /split\.yaml: targets "native" \(job native\) and "in-docker" \(job shared\) are both reached on the same host \([^)]*@gpu1\.lab:22\).*give them the same runsOn/,
    );
  });

  it('counts a Docker engine named by ssh:// or tcp:// as the machine it runs on, not the runner', () => {
    const targets = (lines: string[]) => parseMatrix(['version: 1', 'targets:', ...lines].join('\n'), 'engines.yaml');
    const native = '  - {name: native, runsOn: [self-hosted, lab], transport: {kind: ssh, host: gpu1.lab, user: ci}}';
    // An engine reached over SSH is on the SSH host: its target and one logged in there never run in two jobs.
    expect(() =>
      ghaMatrix(
        targets([native, '  - {name: engine, runsOn: [self-hosted, other], transport: {kind: docker, endpoint: "ssh://ci@gpu1.lab"}}']),
      ),
    ).toThrow(
      /engines\.yaml: targets "native" \(job native\) and "engine" \(job engine\) are both reached on the same host \(ci@gpu1\.lab:22\)/,
    );
    expect(
      ghaMatrix(
        targets([native, '  - {name: engine, runsOn: [self-hosted, lab], transport: {kind: docker, endpoint: "ssh://ci@gpu1.lab:22"}}']),
      ).include.map((e) => e.targets),
    ).toEqual(['native,engine']);
    // Without labels, the shared jobs keep them together, however many there are.
    const shared = ghaMatrix(
      targets([
        '  - {name: a, transport: {kind: ssh, host: gpu1.lab, user: ci}}',
        '  - {name: b, transport: {kind: docker, endpoint: "ssh://ci@gpu1.lab"}}',
        '  - {name: c, transport: {kind: ssh, host: gpu2.lab}}',
      ]),
      { shards: 3 },
    );
    expect(shared.include.find((e) => e.targets.includes('a'))!.targets.split(',')).toEqual(['a', 'b']);
    // A tcp:// engine on another host is that host's; the runner's own engine (a socket, loopback, the default) is each runner's.
    const tcp = '{kind: docker, endpoint: "tcp://gpu2.lab:2376"}';
    expect(() =>
      ghaMatrix(targets([`  - {name: x, runsOn: [a], transport: ${tcp}}`, `  - {name: y, runsOn: [b], transport: ${tcp}}`])),
    ).toThrow(/"x" \(job x\) and "y" \(job y\) are both reached on the same host \(tcp:\/\/gpu2\.lab:2376\)/);
    const own = [
      '{kind: docker}',
      '{kind: docker, endpoint: "unix:///var/run/docker.sock"}',
      '{kind: docker, endpoint: "tcp://127.0.0.1:2375"}',
    ];
    for (const transport of own) {
      expect(
        ghaMatrix(
          targets([`  - {name: x, runsOn: [a], transport: ${transport}}`, `  - {name: y, runsOn: [b], transport: ${transport}}`]),
        ).include.map((e) => e.name),
      ).toEqual(['x', 'y']);
    }
  });

  it("counts a Slurm partition as one machine of the cluster, not the runner's: its targets, pinned to nodes or not, share a job", () => {
    const targets = (lines: string[]) => parseMatrix(['version: 1', 'targets:', ...lines].join('\n'), 'slurm.yaml');
    // From the runner itself (a login node): the partition's targets share the job of their labels;
    // another partition is another machine.
    const labelled = targets([
      '  - {name: any, runsOn: [self-hosted, hpc], transport: {kind: slurm, partition: gpu}}',
      '  - {name: node, runsOn: [HPC, self-hosted], transport: {kind: slurm, partition: gpu, nodes: "gpu[01-02]"}}',
      '  - {name: big, runsOn: [self-hosted, hpc], transport: {kind: slurm, partition: bigmem}}',
    ]);
    expect(ghaMatrix(labelled).include.map((e) => [e.name, e.targets])).toEqual([
      ['any', 'any,node@gpu01,node@gpu02'],
      ['big', 'big'],
    ]);
    // Without labels, the shards keep a partition whole however many there are.
    const unlabelled = targets([
      '  - {name: any, transport: {kind: slurm, partition: gpu}}',
      '  - {name: node, transport: {kind: slurm, partition: gpu, nodes: "gpu[01-03]"}}',
      '  - {name: big, transport: {kind: slurm, partition: bigmem}}',
    ]);
    const shards = ghaMatrix(unlabelled, { shards: 4 }).include.map((e) => e.targets);
    expect(shards).toEqual(expect.arrayContaining(['any,node@gpu01,node@gpu02,node@gpu03', 'big']));
    expect(shards).toHaveLength(2);
    // A labelled target on the shared jobs' runners and a shared one would be two jobs on one
    // partition: refused. Runners of other labels may reach another cluster: not refused.
    const twoJobs = (labels: string) =>
      targets([
        `  - {name: pinned, runsOn: [${labels}], transport: {kind: slurm, partition: gpu, nodelist: gpu01}}`,
        '  - {name: any, transport: {kind: slurm, partition: gpu}}',
      ]);
    expect(() => ghaMatrix(twoJobs('self-hosted, linux, cudamatrix-shared'))).toThrow(
      /slurm\.yaml: targets "pinned" \(job pinned\) and "any" \(job shared\) are both reached on the same host \(runners \[cudamatrix-shared,linux,self-hosted\]\/slurm:gpu\)/,
    );
    expect(ghaMatrix(twoJobs('self-hosted, other-cluster')).include.map((e) => e.name)).toEqual(['pinned', 'shared']);
    // Behind an SSH login node: the cluster is that host's, whatever the runner; its own GPU is another machine.
    const login = '{kind: ssh, host: login.hpc, user: ci}';
    expect(() =>
      ghaMatrix(
        targets([
          `  - {name: a, runsOn: [self-hosted, a], transport: [${login}, {kind: slurm}]}`,
          `  - {name: b, runsOn: [self-hosted, b], transport: [${login}, {kind: slurm, nodes: "n[1-2]"}]}`,
        ]),
      ),
    ).toThrow(/"a" \(job a\) and "b@n1" \(job b@n1\) are both reached on the same host \(ci@login\.hpc:22\/slurm:default\)/);
    expect(
      ghaMatrix(
        targets([
          `  - {name: login-gpu, runsOn: [self-hosted, a], transport: ${login}}`,
          `  - {name: nodes, runsOn: [self-hosted, b], transport: [${login}, {kind: slurm}]}`,
        ]),
      ).include.map((e) => e.name),
    ).toEqual(['login-gpu', 'nodes']);
  });

  it('rejects a runner label with a space or a comma, at its place in the file', () => {
    expect(() => parseMatrix('version: 1\ntargets:\n  - name: a\n    runsOn: [self-hosted, "gpu box"]\n', 'bad.yaml')).toThrow(
      /bad\.yaml:4.*runner label has no spaces or commas/s,
    );
  });
});
