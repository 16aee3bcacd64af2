/**
 * Every reporter test runs twice: on the events of a live run, and on the events of the same
 * cells run as shards and merged by `cudamatrix merge` (events/merge.ts). What a reporter makes
 * of the two must be the same, apart from what differs between any two runs (normalise below).
 *
 * Two kinds of source:
 * - realRuns(): a matrix run for real on this machine (the no-driver path: every probe skips
 *   quickly), once live and once as --shard 1/2 and 2/2, the shards merged. Its targets are
 *   alpha and charlie on this machine (one host: one shard) and bravo, an SSH target on
 *   127.0.0.1 port 1 where nothing listens (another host: the other shard; it fails at once with
 *   a real transport error). The matrix has concurrency 1, so the live run writes its targets
 *   one after another in matrix order; a merged run keeps each log's order and puts targets of
 *   different logs in name order, so the target names are in name order too, and the live run
 *   and the merged shards list them alike.
 * - twice(events, shards): a fixed log (the committed H200 run, or one a test builds) as it is,
 *   and the same log cut into the shard logs a sharded run of it would have written (each with
 *   its run-start, its targets' events and a run-end), merged.
 */
import path from 'node:path';
import type { RunEvent, RunStartEvent } from '../events/events.ts';
import { parseMatrix } from '../matrix/load.ts';
import { mergeEventLogs, readLogs, writeMergedRun, type LogInput } from '../events/merge.ts';
import { executePlan } from '../run/execute.ts';
import { planCells } from '../run/plan.ts';
import { hasCommand, tempDir } from './helpers.ts';

export type SourceName = 'live' | 'merged shards';

/** A run's events and where its log is. */
export interface RunSource {
  events: RunEvent[];
  runId: string;
  runDir: string;
  eventsFile: string;
}

/** Without an NVIDIA driver every probe skips the same way in every run, so two runs render alike. */
export const noDriverHere = !hasCommand('nvidia-smi', ['-L']);

export const REAL_RUNS_MATRIX = `version: 1
description: live and merged shards (test/live-and-merged.ts)
concurrency: 1
defaults:
  probes: [sysinfo, sync-latency, cuda-graph]
expectations:
  all:
    - fact: cuda-graph.supported
      equals: true
  linux:
    - fact: sysinfo.os_family
      equals: linux
      why: every local target is this Linux machine
    - metric: sync-latency.p50_us
      "<=": 100 us
targets:
  - name: alpha
    expect:
      - fact: sysinfo.os_family
        equals: windows
        why: a wrong expectation, so that a failure and its evidence are rendered
  - name: bravo
    transport: {kind: ssh, host: 127.0.0.1, port: 1, retries: 0, connectTimeout: 5}
  - name: charlie
`;

/**
 * Runs `yaml` live and as `shards` shards (one after another, as separate CI jobs would), then
 * merges the shards' logs from their files, as `cudamatrix merge` does.
 */
export async function liveAndMerged(yaml: string, shards = 2): Promise<{ live: RunSource; merged: RunSource; shards: RunSource[] }> {
  const matrix = parseMatrix(yaml, 'live-and-merged.yaml');
  const runsDir = tempDir('cm-live-merged-');
  const run = async (shard?: string): Promise<RunSource> => {
    const result = await executePlan(planCells(matrix, { shard }), { runsDir });
    return {
      events: result.events,
      runId: (result.events[0] as RunStartEvent).runId,
      runDir: result.runDir,
      eventsFile: result.eventsFile,
    };
  };
  const live = await run();
  const parts: RunSource[] = [];
  for (let i = 1; i <= shards; i++) parts.push(await run(`${i}/${shards}`));
  const mergedLog = mergeEventLogs(readLogs(parts.map((part) => part.runDir)));
  const { runDir, eventsFile } = writeMergedRun(mergedLog, path.join(runsDir, 'merged'));
  return { live, merged: { events: readLogs([eventsFile])[0]!.events, runId: mergedLog.start.runId, runDir, eventsFile }, shards: parts };
}

/** The two sources every reporter test renders, in the order describe.each takes them. */
export const SOURCES: SourceName[] = ['live', 'merged shards'];

/** The run of REAL_RUNS_MATRIX a source names: the live run, or the merged shards. */
export async function realRun(name: SourceName): Promise<RunSource> {
  const runs = await realRuns();
  return name === 'live' ? runs.live : runs.merged;
}

/** The run id of a log. */
export const runIdOf = (events: RunEvent[]): string => (events[0] as RunStartEvent).runId;

let realRunsOnce: ReturnType<typeof liveAndMerged> | undefined;

/** The runs of REAL_RUNS_MATRIX, made once per test file. */
export function realRuns(): ReturnType<typeof liveAndMerged> {
  realRunsOnce ??= liveAndMerged(REAL_RUNS_MATRIX);
  return realRunsOnce;
}

/**
 * The shard logs a sharded run of `events` would have written: shard i holds the targets of
 * groups[i] (whole targets, as shards hold whole hosts). By default one shard of two holds every
 * target and the other none, which is what --shard gives for targets that are all on one host
 * (every target of a fixture is reached locally). Each shard has its own run id.
 */
export function asShards(events: RunEvent[], groups?: string[][]): LogInput[] {
  const start = events[0] as RunStartEvent;
  const targets = [...new Set(events.flatMap((e) => ('target' in e ? [e.target] : [])))];
  const split = groups ?? [targets, []];
  const end = events.filter((e) => e.type === 'run-end');
  return split.map((group, i) => {
    const shardStart: RunStartEvent = {
      ...start,
      runId: `${start.runId}-shard-${i + 1}`,
      shard: { index: i + 1, total: split.length },
      cells: start.cells.filter((cellId) => group.includes(cellId.slice(0, cellId.lastIndexOf('/')))),
    };
    return {
      file: `shard-${i + 1}/events.jsonl`,
      events: [shardStart, ...events.filter((e) => 'target' in e && group.includes(e.target)), ...end],
    };
  });
}

/** `events` merged from the shards asShards cuts it into. */
export function mergedShards(events: RunEvent[], groups?: string[][]): RunEvent[] {
  return mergeEventLogs(asShards(events, groups)).events;
}

/** For describe.each: the log as it is ('live'), and merged from its shards ('merged shards'). */
export function twice(events: RunEvent[], groups?: string[][]): [[SourceName, RunEvent[]], [SourceName, RunEvent[]]] {
  return [
    ['live', events],
    ['merged shards', mergedShards(events, groups)],
  ];
}

/**
 * A rendering with what differs between any two runs of the same cells replaced, so that the
 * renderings of a live run and of merged shards compare:
 * - the run id and the run folder (each run has its own; a merged run's id is made from its
 *   shards'), here or as the path of the event log;
 * - timestamps (ISO 8601): when it ran;
 * - durations: the console's "in N ms", JUnit's time="seconds", JSON's "durationMs": how long a
 *   probe took on a busy machine is not what the run observed of the driver.
 * Nothing else: the order of targets and cells, the verdicts, messages, evidence, counts,
 * sysinfo and every record must be the same.
 */
export function normalise(text: string, source: Pick<RunSource, 'runId'> & { runDir?: string }): string {
  let out = text;
  if (source.runDir) out = out.split(source.runDir).join('<run-dir>');
  out = out.split(source.runId).join('<run-id>');
  return out
    .replace(/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z/g, '<time>')
    .replace(/\bin \d+ ms\b/g, 'in <n> ms')
    .replace(/\btime="[\d.]+"/g, 'time="<s>"')
    .replace(/"durationMs": ?\d+/g, '"durationMs": <n>');
}
