/**
 * The reporters and the verdicts of a real run on this machine (test/live-and-merged.ts): the
 * matrix run for real, once live and once as two shards merged, with cudaprobe on its no-driver
 * path. An integration test (test/tiers.ts): it builds and runs cudaprobe, which the unit tier
 * does not; the reporters' and verdicts' unit tests render fixed logs.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { tempDir, validateJunit } from '../test/helpers.ts';
import { noDriverHere, normalise, realRun, SOURCES, type RunSource } from '../test/live-and-merged.ts';
import { exitCodeOf, summarize } from '../verdicts/verdicts.ts';
import { consoleReporter } from './console.ts';
import { jsonReporter } from './json.ts';
import { junitReporter } from './junit.ts';

/** The console of a real run (test/live-and-merged.ts), with its own event log's path. */
function renderRun(src: RunSource): string {
  const writes: string[] = [];
  const reporter = consoleReporter({ color: false, out: { write: (chunk: string) => writes.push(chunk) } });
  for (const e of src.events) reporter.onEvent!(e);
  reporter.onEnd(summarize(src.events), { runDir: src.runDir, eventsFile: src.eventsFile, strict: false });
  return writes.join('');
}

describe.runIf(noDriverHere).each(SOURCES)('console: a real run on this machine (%s)', (source) => {
  let src: RunSource;
  let text: string;
  beforeAll(async () => {
    src = await realRun(source);
    text = renderRun(src);
  });

  it('follows the run target by target: the cells of alpha, the unreachable bravo, charlie', () => {
    const lines = text.split('\n');
    expect(lines[0]).toMatch(new RegExp(`^cudamatrix \\S+: run ${src.runId}, 9 cells from live-and-merged\\.yaml$`));
    const order = [
      '▶ alpha ',
      '[1/9] alpha/sysinfo',
      '[3/9] alpha/cuda-graph',
      '▶ bravo ',
      '[6/9] 3 cells of bravo not run: the error above',
      '▶ charlie ',
      '[9/9] charlie/cuda-graph skipped',
    ];
    const at = order.map((expected) => lines.findIndex((line) => line.includes(expected)));
    expect(at.every((i) => i > 0)).toBe(true);
    expect([...at].sort((left, right) => left - right)).toEqual(at);
    expect(text).toMatch(/^ {2}✗ bravo: (AUTH_FAILED|TARGET_UNREACHABLE): /m);
  });

  it('sums up: the failed expectation with its why and evidence, the error, the table, the counts, the events and exit 3', () => {
    expect(text).toContain(
      '✗ alpha: sysinfo.os_family == "windows" [target] — expected sysinfo.os_family to be "windows", observed "linux"',
    );
    expect(text).toMatch(
      /why: +a wrong expectation, so that a failure and its evidence are rendered\n +observed: +"linux"\n +source: +os\n/,
    );
    expect(text).toMatch(/✗ bravo: cuda-graph\.supported == true \[all\] not judged: bravo's (AUTH_FAILED|TARGET_UNREACHABLE) above$/m);
    expect(text).toMatch(/^alpha +linux +none found .* 0\/3\/0 +0\/1\/2\/0$/m);
    expect(text).toMatch(/^bravo +unknown .* 0\/0\/3 +0\/0\/0\/1$/m);
    expect(text).toMatch(/^charlie +linux +none found .* 0\/3\/0 +1\/0\/2\/0$/m);
    expect(text).toContain('Expectations: 1 passed, 1 failed, 4 skipped, 1 errors.');
    expect(text).toContain(`Events: ${src.eventsFile} (every sample and reading behind these verdicts)`);
    expect(text.trimEnd().endsWith('Exit status: 3')).toBe(true);
  });

  it('prints what the live run prints', async () => {
    const live = await realRun('live');
    expect(normalise(text, src)).toBe(normalise(renderRun(live), live));
  });
});

/** summary.json of a real run (test/live-and-merged.ts), as the reporter writes it into a run folder. */
function summaryOfRun(src: RunSource): string {
  const runDir = tempDir();
  jsonReporter((dir) => path.join(dir, 'summary.json')).onEnd(summarize(src.events), {
    runDir,
    eventsFile: src.eventsFile,
    strict: false,
  });
  return readFileSync(path.join(runDir, 'summary.json'), 'utf8');
}

describe.runIf(noDriverHere).each(SOURCES)('JSON summary: a real run on this machine (%s)', (source) => {
  let src: RunSource;
  let text: string;
  beforeAll(async () => {
    src = await realRun(source);
    text = summaryOfRun(src);
  });

  it("names the run and its log, counts cells and verdicts, and gives every target in the run's order", () => {
    type Json = {
      runId: string;
      events: string;
      shard: unknown;
      counts: unknown;
      targets: {
        name: string;
        error: { code: string } | null;
        cells: { cell: string; status: string }[];
        verdicts: { title: string; status: string; eventsFile: string; why?: string }[];
      }[];
    };
    const json = JSON.parse(text) as Json;
    expect(json).toMatchObject({ runId: src.runId, events: src.eventsFile, shard: null });
    expect(json.counts).toEqual({ cells: { skipped: 6, error: 3 }, verdicts: { passed: 1, failed: 1, skipped: 4, error: 1 } });
    expect(json.targets.map((target) => target.name)).toEqual(['alpha', 'bravo', 'charlie']);
    expect(json.targets[1]!.error?.code).toMatch(/^(AUTH_FAILED|TARGET_UNREACHABLE)$/);
    expect(json.targets[0]!.cells.map((summaryCell) => [summaryCell.cell, summaryCell.status])).toEqual([
      ['alpha/sysinfo', 'skipped'],
      ['alpha/sync-latency', 'skipped'],
      ['alpha/cuda-graph', 'skipped'],
    ]);
    const failed = json.targets[0]!.verdicts.find((verdict) => verdict.status === 'failed')!;
    expect(failed).toMatchObject({
      title: 'sysinfo.os_family == "windows"',
      why: 'a wrong expectation, so that a failure and its evidence are rendered',
      eventsFile: src.eventsFile,
      evidence: { kind: 'fact', value: 'linux', source: 'os' },
    });
  });

  it("is the live run's summary", async () => {
    const live = await realRun('live');
    expect(normalise(text, src)).toBe(normalise(summaryOfRun(live), live));
  });
});

/** JUnit of a real run (test/live-and-merged.ts), written by the reporter into its run folder. */
function junitOfRun(src: RunSource): string {
  const file = path.join(tempDir(), 'junit.xml');
  junitReporter(file).onEnd(summarize(src.events), { runDir: src.runDir, eventsFile: src.eventsFile, strict: false });
  return readFileSync(file, 'utf8');
}

describe.runIf(noDriverHere).each(SOURCES)('JUnit: a real run on this machine (%s)', (source) => {
  let src: RunSource;
  let xml: string;
  beforeAll(async () => {
    src = await realRun(source);
    xml = junitOfRun(src);
  });

  it("validates, with a suite per target in the run's order and the failure's body naming this run's log", async () => {
    await validateJunit(xml);
    expect([...xml.matchAll(/<testsuite name="([^"]+)"/g)].map((match) => match[1])).toEqual(['alpha', 'bravo', 'charlie']);
    expect(xml).toMatch(/<testsuites name="cudamatrix ([^"]+)" tests="16" failures="1" errors="4">/);
    expect(xml).toContain(`<testsuites name="cudamatrix ${src.runId}"`);
    expect(xml).toMatch(
      /<failure message="expected sysinfo.os_family to be &quot;windows&quot;, observed &quot;linux&quot;" type="EXPECTATION_FAILED"><!\[CDATA\[expectation: sysinfo.os_family == "windows" \[from target\]/,
    );
    expect(xml).toContain(`event log: ${src.eventsFile}]]></failure>`);
    expect(xml).toMatch(/<error message="[^"]*" type="(AUTH_FAILED|TARGET_UNREACHABLE)"/);
  });

  it("is the live run's JUnit", async () => {
    const live = await realRun('live');
    expect(normalise(xml, src)).toBe(normalise(junitOfRun(live), live));
  });
});

describe.runIf(noDriverHere).each(SOURCES)('verdicts of a real run on this machine (%s)', (source) => {
  let src: RunSource;
  beforeAll(async () => {
    src = await realRun(source);
  });

  it('judges each target: the failed target expectation, skips where no driver, an error where the target was unreachable', () => {
    const summary = summarize(src.events, { eventsFile: src.eventsFile });
    expect(
      summary.targets.map((target) => [target.name, target.verdicts.map((verdict) => [verdict.title, verdict.source, verdict.status])]),
    ).toEqual([
      [
        'alpha',
        [
          ['cuda-graph.supported == true', 'all', 'skipped'],
          ['sysinfo.os_family == "windows"', 'target', 'failed'],
          ['sync-latency.p50_us <= 100 us', 'linux', 'skipped'],
        ],
      ],
      ['bravo', [['cuda-graph.supported == true', 'all', 'error']]],
      [
        'charlie',
        [
          ['cuda-graph.supported == true', 'all', 'skipped'],
          ['sysinfo.os_family == "linux"', 'linux', 'passed'],
          ['sync-latency.p50_us <= 100 us', 'linux', 'skipped'],
        ],
      ],
    ]);
    expect(summary.targets[0]!.verdicts[1]).toMatchObject({
      evidence: { kind: 'fact', value: 'linux', source: 'os' },
      eventsFile: src.eventsFile,
    });
    expect(exitCodeOf(summary, { strict: false })).toBe(3);
  });

  it("gives the live run's verdicts, word for word, and its counts", async () => {
    const [live, here] = [summarize((await realRun('live')).events), summarize(src.events)];
    expect(here.targets.map((target) => target.verdicts)).toEqual(live.targets.map((target) => target.verdicts));
    expect([here.counts, here.nothingMeasured, here.hasInfrastructureError, here.interrupted]).toEqual([
      live.counts,
      live.nothingMeasured,
      live.hasInfrastructureError,
      live.interrupted,
    ]);
  });
});
