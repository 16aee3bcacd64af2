/**
 * A probe is one declaration (docs/adding-a-probe.md): a ProbeSpec added to the catalogue, and
 * nothing else on the TypeScript side, gives it its --quick parameters, its share of a shard, its
 * block on the console, its rows in the report's tables and its memory chart on the page.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { RunEvent } from '../../events/events.ts';
import { readEventLog } from '../../events/events.ts';
import { catalogue, effectiveParams, type ProbeSpec } from '../../probes/catalogue.ts';
import type { ProbeRecord } from '../../probes/protocol.ts';
import { cell } from '../events-fixture.ts';
import { H200_LOGS } from '../report-fixture.ts';

const hello: ProbeSpec = {
  name: 'hello-probe',
  title: 'A trivial probe, declared by this test only',
  claims: ['C99'],
  description: 'Says hello to the driver.',
  platforms: ['linux', 'windows'],
  params: z.strictObject({ count: z.number().int().min(1).default(3).describe('Hellos') }),
  facts: [{ name: 'greeted', description: 'The driver answered', values: [true, false] }],
  metrics: [{ name: 'hello_us', unit: 'us', description: 'Time to answer', tolerance: { relative: 0.1 } }],
  quick: { count: 1 },
  typicalMs: 2500,
  keyMetrics: [{ metric: 'hello_us', label: 'hello answered in', where: { step: 'last' } }],
};

const records: ProbeRecord[] = [
  { schema: 'cudaprobe/1', probe: 'hello-probe', type: 'fact', name: 'greeted', value: true },
  { schema: 'cudaprobe/1', probe: 'hello-probe', type: 'metric', name: 'hello_us', value: 99, unit: 'us', attrs: { step: 'first' } },
  { schema: 'cudaprobe/1', probe: 'hello-probe', type: 'metric', name: 'hello_us', value: 12.5, unit: 'us', attrs: { step: 'last' } },
  { schema: 'cudaprobe/1', probe: 'hello-probe', type: 'sample', phase: 'baseline', readings: { nvml_device_used_bytes: 1024 } },
  { schema: 'cudaprobe/1', probe: 'hello-probe', type: 'sample', phase: 'after-hello', readings: { nvml_device_used_bytes: 2048 } },
];

let events: RunEvent[];

beforeAll(() => {
  // The one declaration: the spec joins the catalogue (this test file's copy of the module)
  // before the renderers are loaded, as a spec written in catalogue.ts would be there.
  (catalogue as ProbeSpec[]).push(hello);
  // The committed H200 run, with a cell of the new probe on its target.
  const log = readEventLog(H200_LOGS[0]!);
  const end = log.findIndex((e) => e.type === 'run-end');
  events = [...log.slice(0, end), cell('local', 'hello-probe', 'passed', records), ...log.slice(end)];
});

describe('a probe declared once in the catalogue', () => {
  it('runs with its --quick parameters and counts its typical duration in shards', async () => {
    expect(effectiveParams('hello-probe')).toEqual({ count: 3 });
    expect(effectiveParams('hello-probe', {}, true)).toEqual({ count: 1 });
    const { expectedMs } = await import('../../run/plan.ts');
    expect(expectedMs([{ name: 'local/hello-probe', target: 'local', probe: 'hello-probe' }])).toBe(2500 + 280); // hello-probe's own and sysinfo's (probes/catalogue.ts)
  });

  it('has its block on the console: title, claims, fact and key metric', async () => {
    const { consoleReporter } = await import('../../reporters/console.ts');
    const { summarize } = await import('../../verdicts/verdicts.ts');
    let text = '';
    const reporter = consoleReporter({ out: { write: (chunk: string) => (text += chunk) }, color: false, env: {} });
    for (const e of events) reporter.onEvent!(e);
    await reporter.onEnd!(summarize(events), { runDir: 'r', eventsFile: 'r/events.jsonl', strict: false });
    expect(text).toMatch(/^ {2}hello-probe {2}A trivial probe, declared by this test only \(C99\)$/m);
    expect(text).toMatch(/^ {4}hello-probe\.greeted +true$/m);
    // The key metric's pick (where: step last), in the metric's unit.
    expect(text).toMatch(/^ {4}hello answered in +12\.5 us$/m);
  });

  it('has its rows in the report and its memory chart on the page', async () => {
    const { recordsFromEvents } = await import('../../behaviour/behaviour-record.ts');
    const { buildTable } = await import('../../report/behaviour-table.ts');
    const { pageData } = await import('../../report/page-data.ts');
    const { renderMarkdown } = await import('../../report/markdown.ts');
    const loaded = recordsFromEvents(events, {}).map((record) => ({ file: 'driver-x/hello.json', record }));
    const table = buildTable(loaded);
    const group = table.groups.find((tableGroup) => tableGroup.probe === 'hello-probe');
    expect(group).toMatchObject({ title: hello.title, claims: ['C99'], rows: [{ name: 'hello-probe.greeted' }] });
    const row = table.metrics.find((metricRow) => metricRow.spec.metric === 'hello-probe.hello_us');
    expect(row?.cells[0]?.map((rowCell) => rowCell.metric.value)).toEqual([12.5]);
    expect(renderMarkdown(loaded, { recordsLink: 'records', recordsDirName: 'records' })).toContain('hello answered in');
    const data = pageData(loaded, 'records', table);
    expect(data.probes['hello-probe']).toEqual({ title: hello.title, claims: ['C99'] });
    expect(data.metrics.map((metric) => data.strs[metric.label])).toContain('hello answered in');
    const chart = data.details[0]!.mem.find((memoryChart) => data.strs[memoryChart.probe] === 'hello-probe');
    expect(chart?.series[0]?.values).toEqual([[1024, 2048]]);
  });
});
