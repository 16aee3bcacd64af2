/**
 * The JUnit reporter. Every test of a rendered log runs twice (test/live-and-merged.ts): on the
 * log as a run wrote it, and on the same log cut into shard logs and merged by cudamatrix merge;
 * and a real run on this machine, live and as two shards merged. Both must give the same XML,
 * run ids, times, durations and folders aside.
 */
import { describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { formatValue } from '../core/units.ts';
import type { RunEvent } from '../events/events.ts';
import { cell, runEnd, runStart, sysinfo, targetStart } from '../test/events-fixture.ts';
import { factIn, h200WithLinuxExpectations, metricsIn, pinnedH2dAtLeast40 } from '../test/h200-fixture.ts';
import { tempDir, validateJunit } from '../test/helpers.ts';
import { mergedShards, normalise, runIdOf, twice } from '../test/live-and-merged.ts';
import { summarize } from '../verdicts/verdicts.ts';
import { junitReporter, junitXml } from './junit.ts';

const targets: RunEvent[] = [
  runStart({
    linux: [
      { fact: 'sysinfo.tcc_driver', equals: false },
      { fact: 'sysinfo.gpu_name', equals: 'NVIDIA H100' },
    ],
  }),
  targetStart('gpu', [], 'auto'),
  cell(
    'gpu',
    'sysinfo',
    'passed',
    sysinfo({ environment: 'linux', gpu_name: 'NVIDIA H200 <&"quoted">', tcc_driver: false, driver_model: null }),
  ),
  targetStart('nodriver'),
  cell('nodriver', 'sysinfo', 'skipped', sysinfo({ environment: 'linux' }), { reason: 'no NVIDIA driver found' }),
  targetStart('crashed'),
  cell('crashed', 'sysinfo', 'error', [], { reason: 'killed by SIGSEGV', errorCode: 'PROBE_CRASHED', stderrTail: 'Segmentation fault' }),
  targetStart('unreachable'),
  { type: 'target-error' as const, target: 'unreachable', time: '', code: 'TARGET_UNREACHABLE', message: 'connect ECONNREFUSED' },
  cell('unreachable', 'sysinfo', 'error', [], { reason: 'connect ECONNREFUSED', errorCode: 'TARGET_UNREACHABLE' }),
  // A target that cannot run probes by its nature: its cells are skipped with the transport's message.
  targetStart('wsl1', [{ fact: 'sysinfo.wsl_version', equals: 2 }], 'wsl2'),
  {
    type: 'target-error' as const,
    target: 'wsl1',
    time: '',
    code: 'WSL_VERSION_1',
    message: 'WSL distribution "Legacy" runs under WSL 1, which has no GPU: "wsl.exe --set-version Legacy 2"',
  },
  cell('wsl1', 'sysinfo', 'skipped', [], {
    durationMs: 0,
    reason: 'WSL distribution "Legacy" runs under WSL 1, which has no GPU: "wsl.exe --set-version Legacy 2"',
    errorCode: 'WSL_VERSION_1',
  }),
  runEnd,
];

/** Shards as of two hosts: gpu, nodriver and crashed on one; unreachable and wsl1 on the other. */
const targetShards = [
  ['gpu', 'nodriver', 'crashed'],
  ['unreachable', 'wsl1'],
];

describe.each(twice(targets, targetShards))('JUnit reporter (%s)', (_source, events) => {
  const xml = junitXml(summarize(events));

  it('validates against the JUnit 10 schema', async () => {
    await expect(validateJunit(xml)).resolves.toBeUndefined();
  });

  // The check above means something only if the validator refuses what the schema refuses.
  it('is checked by a validator that refuses invalid JUnit, with its message', async () => {
    const nameless = xml.replace('<testcase classname="gpu.expectations" name=', '<testcase classname="gpu.expectations" title=');
    expect(nameless).not.toBe(xml);
    await expect(validateJunit(nameless)).rejects.toThrow(/Element 'testcase': The attribute 'name' is required but missing/);
    await expect(validateJunit('<testsuites><testsuite')).rejects.toThrow(/parser error/);
  });

  it('has a suite per target with sysinfo properties, and a case per cell and per expectation', () => {
    expect(xml.match(/<testsuite /g)).toHaveLength(5);
    expect(xml).toContain('<property name="sysinfo.gpu_name" value="NVIDIA H200 &lt;&amp;&quot;quoted&quot;>"/>');
    expect(xml).toContain('<property name="sysinfo.driver_model" value="null"/>');
    expect(xml).toMatch(
      /<testcase classname="gpu.expectations" name="sysinfo.gpu_name == &quot;NVIDIA H100&quot; \[linux\]">\s*<failure message="expected sysinfo.gpu_name/,
    );
    expect(xml).toMatch(/name="probe sysinfo runs" time="0.12">\s*<skipped\/>\s*<system-out><!\[CDATA\[skipped: no NVIDIA driver found/);
    expect(xml).toMatch(/<error message="killed by SIGSEGV" type="PROBE_CRASHED"/);
    expect(xml).toMatch(/<error message="connect ECONNREFUSED" type="TARGET_UNREACHABLE"/);
    expect(xml).toContain('<system-err><![CDATA[Segmentation fault]]></system-err>');
  });

  it('skips the cells of a target that cannot run probes by its nature, with the reason and the code, and no error', () => {
    const suite = /<testsuite name="wsl1"[^>]*>[\s\S]*?<\/testsuite>/.exec(xml)![0];
    expect(suite).toMatch(/tests="2" failures="0" errors="0" skipped="2"/);
    expect(suite).toMatch(
      /name="probe sysinfo runs" time="0">\s*<skipped message="WSL distribution &quot;Legacy&quot; runs under WSL 1, which has no GPU: &quot;wsl.exe --set-version Legacy 2&quot;" type="WSL_VERSION_1"\/>/,
    );
    // Its expectations are not judged: skipped, with the probe's reason.
    expect(suite).toMatch(
      /name="sysinfo.wsl_version == 2 \[target\]">\s*<skipped\/>\s*<system-out><!\[CDATA\[skipped: probe sysinfo was skipped: WSL distribution "Legacy" runs under WSL 1/,
    );
    expect(suite).not.toMatch(/<error|<failure/);
  });
});

describe('JUnit: every XML special character and every character XML cannot hold', () => {
  // Each character XML escapes or refuses, in a target's name, a sysinfo value, a probe's reason
  // and its stderr, and an expectation's why (the <failure> body).
  const special = `&<>"'\t\n\r`;
  const invalid = ['\u0000', '\u0001', '\u0008', '\u000b', '\u000c', '\u000e', '\u001f', '\ufffe', '\uffff', '\udc00', '\ud800'];
  // (A low surrogate first and a high one last: each alone, not a pair.)
  const kept = 'é 找 😀 \u007f \u0085 \ufffd';
  const text = `a${special}b${invalid.join('')}c ${kept} ]]> d ]]> e`;
  // As XML gives it back: without what it cannot hold (a parser reads each line end as "\n" in text).
  const readBack = `a${special}bc ${kept} ]]> d ]]> e`;
  const events: RunEvent[] = [
    runStart({ linux: [{ fact: 'sysinfo.gpu_name', equals: 'none', why: text }] }),
    targetStart(`t${text}`, [], 'auto'),
    cell(`t${text}`, 'sysinfo', 'passed', sysinfo({ environment: 'linux', gpu_name: text })),
    cell(`t${text}`, 'pinned-vram', 'error', [], { reason: text, errorCode: 'PROBE_CRASHED', stderrTail: text }),
    runEnd,
  ];
  const xml = junitXml(summarize(events));
  const xpath = (file: string, expr: string) =>
    // xmllint ends what it prints with a newline of its own.
    execFileSync('xmllint', ['--xpath', expr, file], { encoding: 'utf8' }).replace(/\n$/, '');

  it('validates against the JUnit 10 schema', async () => {
    await expect(validateJunit(xml)).resolves.toBeUndefined();
  });

  it('escapes & < " and the line ends in attributes, and leaves out what XML cannot hold', () => {
    const value = `a&amp;&lt;>&quot;'&#x9;&#xA;&#xD;bc ${kept} ]]> d ]]> e`;
    expect(xml).toContain(`<property name="sysinfo.gpu_name" value="${value}"/>`);
    expect(xml).toContain(`<error message="${value}" type="PROBE_CRASHED"/>`);
    // In a CDATA section nothing is escaped; each "]]>" is split between two sections.
    expect(xml).toContain(`<system-err><![CDATA[a${special}bc ${kept} ]]]]><![CDATA[> d ]]]]><![CDATA[> e]]></system-err>`);
    for (const character of invalid) expect(xml, JSON.stringify(character)).not.toContain(character);
  });

  it('gives a parser back each value and text as it was, less what XML cannot hold', () => {
    const file = path.join(tempDir(), 'junit.xml');
    writeFileSync(file, xml);
    expect(xpath(file, 'string(//testsuite/@name)')).toBe(`t${readBack}`);
    expect(xpath(file, 'string(//property[@name="sysinfo.gpu_name"]/@value)')).toBe(readBack);
    expect(xpath(file, 'string(//error/@message)')).toBe(readBack);
    expect(xpath(file, 'string(//system-err)')).toBe(readBack.replace('\r', '\n'));
    expect(xpath(file, 'string(//failure)')).toContain(`why: ${readBack.replace('\r', '\n')}`);
  });
});

const h200Failing = h200WithLinuxExpectations([
  pinnedH2dAtLeast40,
  { fact: 'pinned-vram.counts_as_vram', equals: true, why: 'the design card says so (C1)' },
]);

describe.each(twice(h200Failing))('JUnit: the evidence in a <failure> body (%s)', (source, events) => {
  const dir = tempDir();
  const file = path.join(dir, 'junit.xml');
  // Through the reporter, as a run ends: the event log's path comes from the run's context.
  junitReporter(file).onEnd(summarize(events), { runDir: dir, eventsFile: path.join(dir, 'events.jsonl'), strict: false });
  const xml = readFileSync(file, 'utf8');
  /** The text of the <failure> of the testcase whose name starts with `title`. */
  const failureBody = (title: string): string => {
    const esc = title
      .replace(/&/g, '&amp;')
      .replace(/"/g, '&quot;')
      .replace(/</g, '&lt;')
      .replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    const match = new RegExp(
      `<testcase classname="local.expectations" name="${esc} \\[linux\\]">\\s*<failure message="[^"]*" type="EXPECTATION_FAILED"><!\\[CDATA\\[([\\s\\S]*?)\\]\\]></failure>`,
    ).exec(xml);
    if (!match) throw new Error(`no failure with a body for ${title}`);
    return match[1]!;
  };

  it('still validates against the JUnit 10 schema', async () => {
    await expect(validateJunit(xml)).resolves.toBeUndefined();
  });

  it('gives a failed metric the expectation, its why, every matching sample marked ok or FAIL, and the event log', () => {
    const samples = metricsIn(events, 'transfer-bandwidth.bandwidth_gbps', { direction: 'h2d', memory: 'pinned' });
    const row = (mark: string, sample: (typeof samples)[number]) =>
      `  ${mark.padEnd(4)}  ${formatValue(sample.value, 'GB/s')}  direction h2d, memory pinned, size ${formatValue(sample.attrs!.size_bytes as number, 'bytes')}`;
    const title = 'transfer-bandwidth.bandwidth_gbps {"direction":"h2d","memory":"pinned"} >= 40 GB/s';
    const body = failureBody(title).split('\n');
    expect(body).toEqual([
      `expectation: ${title} [from linux]`,
      `result: expected ${title}, observed ${formatValue(samples[0]!.value, 'GB/s')} at size 1 MiB; 3 of 4 matching samples within`,
      `why: ${pinnedH2dAtLeast40.why}`,
      'matching samples: 4, 1 outside the bounds (each one must be within)',
      row('FAIL', samples[0]!),
      ...samples.slice(1).map((sample) => row('ok', sample)),
      `event log: ${path.join(dir, 'events.jsonl')}`,
    ]);
  });

  it("gives a failed fact its value, the probe's evidence and its deciding source", () => {
    const fact = factIn(events, 'pinned-vram.counts_as_vram');
    const body = failureBody('pinned-vram.counts_as_vram == true');
    expect(body).toContain('why: the design card says so (C1)');
    expect(body).toContain(`observed: ${JSON.stringify(fact.value)}`);
    expect(body).toContain(`deciding source: NVML process memory (${fact.evidence!.source})`);
    expect(body).toMatch(
      new RegExp(
        `^evidence: NVML process memory \\+0 B for ${formatValue(fact.evidence!.size_bytes as number, 'bytes')} \\(the deciding source\\); NVML device memory \\+${formatValue(fact.evidence!.nvml_device_used_bytes as number, 'bytes')}, `,
        'm',
      ),
    );
    expect(body).toContain(`event log: ${path.join(dir, 'events.jsonl')}`);
  });

  it('gives an expectation that could not be judged its reason and why in the <error> body', async () => {
    const log = [
      runStart({ linux: [{ metric: 'sysinfo.fake', '>=': 1, why: 'a metric sysinfo does not report' }] }),
      targetStart('box'),
      cell('box', 'sysinfo', 'passed', sysinfo({ environment: 'linux' })),
      runEnd,
    ];
    const broken = junitXml(summarize(source === 'live' ? log : mergedShards(log), { eventsFile: 'runs/y/events.jsonl' }));
    expect(broken).toMatch(
      /<error message="probe sysinfo did not report sysinfo.fake" type="EXPECTATION_ERROR"><!\[CDATA\[expectation: sysinfo.fake >= 1 \[from linux\]\nresult: probe sysinfo did not report sysinfo.fake\nwhy: a metric sysinfo does not report\nevent log: runs\/y\/events.jsonl\]\]><\/error>/,
    );
    await expect(validateJunit(broken)).resolves.toBeUndefined();
  });
});

describe('JUnit: the same from the live log and from merged shards', () => {
  it.each([
    ['targets of every kind', targets, targetShards],
    ['the H200 run with failing expectations', h200Failing, undefined],
  ] as const)('%s', (_what, events, groups) => {
    const [[, live], [, merged]] = twice(events, groups as string[][] | undefined);
    const xml = (e: RunEvent[]) => normalise(junitXml(summarize(e, { eventsFile: 'runs/x/events.jsonl' })), { runId: runIdOf(e) });
    expect(xml(merged)).toBe(xml(live));
    expect(xml(live)).toContain('<testsuites name="cudamatrix <run-id>"');
  });
});
