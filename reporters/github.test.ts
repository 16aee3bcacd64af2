/**
 * The GitHub reporter, through the files and streams a GitHub runner reads: GITHUB_STEP_SUMMARY
 * and GITHUB_OUTPUT point at temp files, and the workflow-command lines it prints (annotations,
 * groups, masks) are captured and parsed as the runner parses them. Rendered logs: the committed
 * H200 run with failing expectations (live and as merged shards), small built logs for the
 * annotation cap and interrupted runs, 50 copies of the H200 target with every expectation
 * failing (the summary's size); and the real CLI, `run` and `merge`, on this machine.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { formatValue } from '../core/units.ts';
import type { RunEvent, RunStartEvent } from '../events/events.ts';
import type { Expectation } from '../matrix/schema.ts';
import { cell, runEnd, runStart, sysinfo, targetStart } from '../test/events-fixture.ts';
import { factIn, h200Events, h200WithLinuxExpectations, metricsIn, pinnedH2dAtLeast40 } from '../test/h200-fixture.ts';
import { runCli } from '../test/cli.ts';
import { tempDir } from '../test/helpers.ts';
import { noDriverHere, realRuns, twice } from '../test/live-and-merged.ts';
import { summarize } from '../verdicts/verdicts.ts';
import { secretValues } from '../matrix/secrets.ts';
import { githubReporter, MAX_ANNOTATIONS, type GithubReporterOptions } from './github.ts';
import { GithubStep } from './github-step.ts';
import { SUMMARY_BUDGET_BYTES } from './github-summary.ts';

// ---------------------------------------------------------------------------------------------
// What the runner reads

/** A workflow command line as the runner parses it: ::name prop=value,...::message, unescaped. */
interface Command {
  name: string;
  props: Record<string, string>;
  message: string;
}

const unescape = (escaped: string) =>
  escaped.replace(/%0D/g, '\r').replace(/%0A/g, '\n').replace(/%3A/g, ':').replace(/%2C/g, ',').replace(/%25/g, '%');

function commandsIn(text: string): Command[] {
  return text.split(/\r?\n/).flatMap((line) => {
    const match = /^::([a-z-]+)(?: (.*?))?::(.*)$/.exec(line);
    if (!match) return [];
    const props = Object.fromEntries(
      (match[2] ?? '')
        .split(',')
        .filter(Boolean)
        .map((property) => [property.slice(0, property.indexOf('=')), unescape(property.slice(property.indexOf('=') + 1))]),
    );
    return [{ name: match[1]!, props, message: unescape(match[3]!) }];
  });
}

/** GITHUB_OUTPUT as the runner reads it: name<<delimiter, the value's lines, the delimiter. */
function outputsIn(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  const re = /^([^\n<]+)<<(ghadelimiter_[0-9a-f-]+)\r?\n([\s\S]*?)\r?\n\2\r?$/gm;
  for (const match of text.matchAll(re)) out[match[1]!] = match[3]!;
  // Nothing but those blocks: a stray line would be an error for the runner.
  expect(text.replace(re, '').trim()).toBe('');
  return out;
}

/** The groups of a log, each with its lines; fails unless every ::group:: is closed before the next opens. */
function groupsIn(text: string): { title: string; lines: string[] }[] {
  const groups: { title: string; lines: string[] }[] = [];
  let open: { title: string; lines: string[] } | undefined;
  for (const line of text.split(/\r?\n/)) {
    if (line.startsWith('::group::')) {
      expect(open, `a group opened inside ${open?.title}`).toBeUndefined();
      open = { title: unescape(line.slice('::group::'.length)), lines: [] };
    } else if (line === '::endgroup::') {
      expect(open, 'an ::endgroup:: without a group').toBeDefined();
      groups.push(open!);
      open = undefined;
    } else if (open && line) open.lines.push(line);
  }
  expect(open, 'a group left open').toBeUndefined();
  return groups;
}

// ---------------------------------------------------------------------------------------------
// The reporter in this process, with the runner's files

const files = tempDir('cm-github-');
// @actions/core keeps the summary file it first finds: one for this whole test file, emptied per render.
const summaryFile = path.join(files, 'step-summary.md');
const outputFile = path.join(files, 'output.txt');
writeFileSync(summaryFile, '');
const before = { GITHUB_STEP_SUMMARY: process.env.GITHUB_STEP_SUMMARY, GITHUB_OUTPUT: process.env.GITHUB_OUTPUT };
process.env.GITHUB_STEP_SUMMARY = summaryFile;
process.env.GITHUB_OUTPUT = outputFile;
afterAll(() => {
  for (const [name, value] of Object.entries(before)) {
    if (value === undefined) delete process.env[name];
    else process.env[name] = value;
  }
});

interface Rendered {
  stdout: string;
  stderr: string;
  summary: string;
  outputs: Record<string, string>;
  commands: Command[];
}

const runDir = '/runs/2026-11-29T17-04-21-010Z-e253d5';
const eventsFile = `${runDir}/events.jsonl`;

async function render(events: RunEvent[], options: GithubReporterOptions = {}, strict = false): Promise<Rendered> {
  writeFileSync(summaryFile, '');
  writeFileSync(outputFile, '');
  const stdout: string[] = [];
  const stderr: string[] = [];
  const so = vi.spyOn(process.stdout, 'write').mockImplementation((chunk) => (stdout.push(String(chunk)), true));
  const se = vi.spyOn(process.stderr, 'write').mockImplementation((chunk) => (stderr.push(String(chunk)), true));
  try {
    await githubReporter(options).onEnd!(summarize(events, { eventsFile }), { runDir, eventsFile, strict });
  } finally {
    so.mockRestore();
    se.mockRestore();
  }
  const out = stdout.join('');
  return {
    stdout: out,
    stderr: stderr.join(''),
    summary: readFileSync(summaryFile, 'utf8'),
    outputs: outputsIn(readFileSync(outputFile, 'utf8')),
    commands: commandsIn(out),
  };
}

afterEach(() => vi.restoreAllMocks());

// ---------------------------------------------------------------------------------------------

const h200Failing = h200WithLinuxExpectations([
  pinnedH2dAtLeast40,
  { fact: 'pinned-vram.counts_as_vram', equals: true, why: 'the design card says so (C1)' },
]);
const bandwidthTitle = 'transfer-bandwidth.bandwidth_gbps {"direction":"h2d","memory":"pinned"} >= 40 GB/s';

describe.each(twice(h200Failing))('GitHub reporter: the H200 run with two expectations failing (%s)', (_source, events) => {
  let rendered: Rendered;
  const summary = summarize(events);
  const samples = metricsIn(events, 'transfer-bandwidth.bandwidth_gbps', { direction: 'h2d', memory: 'pinned' });
  const failRow = `FAIL  ${formatValue(samples[0]!.value, 'GB/s')}  direction h2d, memory pinned, size 1 MiB`;
  beforeAll(async () => {
    rendered = await render(events);
  });

  it('writes a summary table with a row for the target: environment, GPU, driver, OS from sysinfo, cells, expectations and a status', () => {
    const verdictCounts = summary.counts.verdicts;
    expect(verdictCounts.failed).toBe(2);
    expect(rendered.summary).toMatch(/^## ❌ cudamatrix run `[^`]+`/);
    expect(rendered.summary).toContain(
      '| target | environment | GPU | driver | OS | cells<br>pass/skip/err | expectations<br>pass/fail/err/skip | status |',
    );
    expect(rendered.summary).toContain(
      `| local | linux | NVIDIA H200 | 580.159.04 | Ubuntu 24.04.3 LTS, x86_64 | 12/1/0 | ${verdictCounts.passed}/2/${verdictCounts.error}/${verdictCounts.skipped} | ❌ failed |`,
    );
    expect(rendered.summary).toContain(`**Exit status 1**: expectations not met`);
    expect(rendered.summary).toContain(
      `**Expectations**: ${verdictCounts.passed} passed, 2 failed, ${verdictCounts.error} errors, ${verdictCounts.skipped} skipped`,
    );
  });

  it('gives each failed expectation a <details> with expected and observed, its why and its evidence', () => {
    const items = rendered.summary
      .split('<details>')
      .slice(1)
      .map((section) => section.slice(0, section.indexOf('</details>')));
    expect(items).toHaveLength(2);
    const bw = items.find((item) => item.includes('transfer-bandwidth'))!;
    expect(bw).toContain(`<summary>✗ <code>${bandwidthTitle.replace(/>/g, '&gt;')}</code> [linux]: failed</summary>`);
    expect(bw).toContain(`**Why**: ${pinnedH2dAtLeast40.why}`);
    // Every matching sample, the failing one first, and the event log.
    const pre = /<pre>([\s\S]*)<\/pre>/.exec(bw)![1]!.split('\n');
    expect(pre).toEqual([
      failRow,
      ...samples
        .slice(1)
        .map(
          (sample) =>
            `ok    ${formatValue(sample.value, 'GB/s')}  direction h2d, memory pinned, size ${formatValue(sample.attrs!.size_bytes as number, 'bytes')}`,
        ),
      `event log: ${eventsFile}`,
    ]);
    const fact = factIn(events, 'pinned-vram.counts_as_vram');
    const vram = items.find((item) => item.includes('counts_as_vram'))!;
    expect(vram).toContain('**Expected** <code>pinned-vram.counts_as_vram == true</code> · **observed** <code>false</code>');
    expect(vram).toContain('**Why**: the design card says so (C1)');
    expect(vram).toMatch(/<pre>evidence: NVML process memory \+0 B for 4 GiB \(the deciding source\); /);
    expect(vram).toContain(`deciding source: NVML process memory (${fact.evidence!.source})`);
  });

  it('annotates each failed expectation as an error: the target and expectation as title, expected vs observed and the first evidence line', () => {
    const errors = rendered.commands.filter((command) => command.name === 'error');
    expect(errors.map((error) => error.props.title)).toEqual([`local: ${bandwidthTitle}`, 'local: pinned-vram.counts_as_vram == true']);
    expect(errors[0]!.message).toBe(
      `expected ${bandwidthTitle}, observed ${formatValue(samples[0]!.value, 'GB/s')} at size 1 MiB; 3 of 4 matching samples within\n${failRow}`,
    );
    expect(errors[1]!.message).toMatch(
      /^expected pinned-vram\.counts_as_vram to be true, observed false\nevidence: NVML process memory \+0 B for 4 GiB \(the deciding source\)/,
    );
    expect(rendered.commands.filter((command) => command.name === 'warning')).toEqual([]);
  });

  it('sets the step outputs: verdict counts, cells, exit code, interrupted, the run folder and its log', () => {
    const verdictCounts = summary.counts.verdicts;
    expect(rendered.outputs).toEqual({
      total: String(verdictCounts.passed + verdictCounts.failed + verdictCounts.error + verdictCounts.skipped),
      passed: String(verdictCounts.passed),
      failed: '2',
      errors: String(verdictCounts.error),
      skipped: String(verdictCounts.skipped),
      cells: '13',
      'exit-code': '1',
      interrupted: 'false',
      'run-dir': runDir,
      'events-file': eventsFile,
    });
  });

  it("puts the target's verdict lines in a log group of its own", () => {
    const groups = groupsIn(rendered.stdout);
    expect(groups.map((group) => group.title)).toEqual([
      `local: failed (expectations ${summary.counts.verdicts.passed} passed, 2 failed, ${summary.counts.verdicts.error} errors, ${summary.counts.verdicts.skipped} skipped)`,
    ]);
    expect(groups[0]!.lines).toHaveLength(summary.targets[0]!.verdicts.length);
    expect(groups[0]!.lines).toContain(
      `  ✗ ${bandwidthTitle} [linux]: expected ${bandwidthTitle}, observed ${formatValue(samples[0]!.value, 'GB/s')} at size 1 MiB; 3 of 4 matching samples within`,
    );
    expect(
      groups[0]!.lines.filter((line) => /^ {2}✓ sync-latency\.p50_us <= 100 us \[linux\]: sync-latency\.p50_us = 8\.43 us\b/.test(line)),
    ).toHaveLength(1);
  });
});

describe('GitHub reporter: annotations', () => {
  const facts = Array.from({ length: 12 }, (_, i) => `value_${String(i).padStart(2, '0')}`);
  const failing = (count: number): Expectation[] =>
    facts.slice(0, count).map((factName) => ({ fact: `sysinfo.${factName}`, equals: 'expected' }));
  const gpu = (count: number): RunEvent[] => [
    targetStart('gpu'),
    cell(
      'gpu',
      'sysinfo',
      'passed',
      sysinfo({ environment: 'linux', ...Object.fromEntries(facts.slice(0, count).map((factName) => [factName, 'observed'])) }),
    ),
  ];

  it(`shows at most ${MAX_ANNOTATIONS}: the first ${MAX_ANNOTATIONS - 1} problems, then one that counts the rest and points to the job summary`, async () => {
    const events: RunEvent[] = [
      runStart({ linux: failing(12) }, ['gpu/sysinfo', 'down/sysinfo', 'crash/sysinfo']),
      ...gpu(12),
      targetStart('down'),
      { type: 'target-error', target: 'down', time: '', code: 'TARGET_UNREACHABLE', message: 'connect ECONNREFUSED 127.0.0.1:1' },
      cell('down', 'sysinfo', 'error', [], { reason: 'connect ECONNREFUSED 127.0.0.1:1', errorCode: 'TARGET_UNREACHABLE' }),
      targetStart('crash'),
      cell('crash', 'sysinfo', 'error', [], { reason: 'killed by SIGSEGV', errorCode: 'PROBE_CRASHED', stderrTail: 'Segmentation fault' }),
      runEnd,
    ];
    const rendered = await render(events);
    const errors = rendered.commands.filter((command) => command.name === 'error');
    expect(errors).toHaveLength(MAX_ANNOTATIONS);
    expect(errors.slice(0, 9).map((error) => error.props.title)).toEqual(
      facts.slice(0, 9).map((factName) => `gpu: sysinfo.${factName} == "expected"`),
    );
    // The fixture's sysinfo values name no source: nothing but the log stands behind them, and the message is one line.
    expect(errors[0]!.message).toBe('expected sysinfo.value_00 to be "expected", observed "observed"');
    expect(errors[9]).toEqual({
      name: 'error',
      props: { title: 'cudamatrix: 5 more not shown here' },
      message:
        '3 failed expectations, 1 target error, 1 probe error on targets gpu, down, crash: see the job summary (every one with its evidence: junit.xml and summary.json in the run folder)',
    });
    // The summary has them all: the target error and the probe error among them.
    expect(rendered.summary.match(/<details>/g)).toHaveLength(12);
    expect(rendered.summary).toContain(
      '#### 💥 down: target error TARGET_UNREACHABLE\n\n**Target error** `TARGET_UNREACHABLE`: connect ECONNREFUSED 127.0.0.1:1',
    );
    expect(rendered.summary).toContain('**Probe sysinfo failed** `PROBE_CRASHED`: killed by SIGSEGV');
    expect(rendered.outputs['exit-code']).toBe('3');
  });

  it(`shows all ${MAX_ANNOTATIONS} when there are exactly ${MAX_ANNOTATIONS}, with none summing up`, async () => {
    const rendered = await render([runStart({ linux: failing(10) }, ['gpu/sysinfo']), ...gpu(10), runEnd]);
    const errors = rendered.commands.filter((command) => command.name === 'error');
    expect(errors.map((error) => error.props.title)).toEqual(
      facts.slice(0, 10).map((factName) => `gpu: sysinfo.${factName} == "expected"`),
    );
  });

  it('warns of an interrupted run, and the table, outputs and exit code say so', async () => {
    const rendered = await render([
      runStart({ linux: [{ fact: 'sysinfo.value_00', equals: 'observed' }] }, ['gpu/sysinfo', 'gpu/sync-latency']),
      targetStart('gpu', [], 'auto', ['sysinfo', 'sync-latency']),
      cell('gpu', 'sysinfo', 'passed', sysinfo({ environment: 'linux', value_00: 'observed' })),
      cell('gpu', 'sync-latency', 'not-run', [], { reason: 'the run was interrupted' }),
      { ...runEnd, interrupted: true } as RunEvent,
    ]);
    expect(rendered.commands.filter((command) => command.name !== 'group' && command.name !== 'endgroup')).toEqual([
      {
        name: 'warning',
        props: { title: 'cudamatrix: run interrupted' },
        message: 'The run was interrupted (1 cell not run, 0 stopped): the results cover what finished.',
      },
    ]);
    expect(rendered.summary).toContain('| gpu | linux | — | — | — | 1/0/0 (1 not run) | 1/0/0/0 | ⏹️ interrupted |');
    expect(rendered.summary).toContain('> The run was interrupted: the results cover what finished.');
    expect(rendered.outputs).toMatchObject({ interrupted: 'true', 'exit-code': '130', cells: '2' });
  });
});

describe('GitHub reporter: streams and extras', () => {
  it('writes every workflow command to stderr when stdout carries a report, and nothing to stdout', async () => {
    const rendered = await render(h200Failing, { step: new GithubStep({ stdoutTaken: true }) });
    expect(rendered.stdout).toBe('');
    const commands = commandsIn(rendered.stderr);
    expect(commands.filter((command) => command.name === 'error')).toHaveLength(2);
    expect(groupsIn(rendered.stderr)).toHaveLength(1);
    expect(rendered.outputs['exit-code']).toBe('1');
  });

  it("adds the extras' outputs and puts their sections after its own", async () => {
    const rendered = await render(h200Failing, {
      extras: async () => ({
        outputs: { 'behaviour-changed': 'true', lost: 'a,b' },
        sections: ['### Behaviour records\n\n2 records written'],
      }),
    });
    expect(rendered.outputs).toMatchObject({ 'behaviour-changed': 'true', lost: 'a,b', failed: '2' });
    expect(rendered.summary.indexOf('### Behaviour records')).toBeGreaterThan(rendered.summary.lastIndexOf('</details>'));
    expect(rendered.summary.trimEnd().endsWith('2 records written')).toBe(true);
  });
});

describe('GitHub step: appendSummary', () => {
  it("appends, and cuts what would take the file past GitHub's 1 MiB a step, with a note", async () => {
    writeFileSync(summaryFile, `${'x'.repeat(900 * 1024)}\n`);
    const step = new GithubStep();
    await step.appendSummary('## a section\n\nsmall');
    expect(readFileSync(summaryFile, 'utf8').endsWith('## a section\n\nsmall\n')).toBe(true);
    await step.appendSummary(`## too much\n\n${'é'.repeat(100 * 1024)}`);
    const text = readFileSync(summaryFile, 'utf8');
    expect(Buffer.byteLength(text)).toBeLessThanOrEqual(960 * 1024);
    expect(Buffer.byteLength(text)).toBeGreaterThan(959 * 1024);
    expect(text).toContain('## too much\n\néé');
    expect(text.endsWith("_The rest of this section is left out: the job summary would pass GitHub's limit of 1 MiB per step._\n\n")).toBe(
      true,
    );
    expect(text).not.toContain('\uFFFD');
  });
});

// ---------------------------------------------------------------------------------------------
// 50 targets x 13 probes, every expectation failing

/** The H200 target 50 times over, with an expectation on every fact and metric it reported (and four of sysinfo), each failing. */
function fiftyFailing(): { events: RunEvent[]; names: string[]; expectations: number } {
  const start = h200Events[0] as RunStartEvent;
  const ends = h200Events.filter((e) => e.type === 'cell-end');
  const why = `${'a long reason, as a matrix may give one, with the claim it checks and the documents it cites; '.repeat(6)}(C1)`;
  const expect: Expectation[] = [
    ...['driver_version', 'gpu_name', 'os_family', 'compute_capability'].map((factName) => ({
      fact: `sysinfo.${factName}`,
      equals: 'never this',
      why,
    })),
  ];
  for (const e of ends) {
    if (e.probe === 'sysinfo') continue;
    for (const record of e.records)
      if (record.type === 'fact') expect.push({ fact: `${e.probe}.${record.name}`, equals: 'never this', why });
    for (const name of new Set(e.records.flatMap((record) => (record.type === 'metric' ? [record.name] : []))))
      expect.push({ metric: `${e.probe}.${name}`, '>=': 1e18, why });
  }
  const names = Array.from({ length: 50 }, (_, i) => `gpu-${String(i + 1).padStart(2, '0')}-${['wddm', 'wsl2', 'linux', 'docker'][i % 4]}`);
  const events: RunEvent[] = [
    {
      ...start,
      matrix: { ...start.matrix, expectations: { linux: expect } },
      cells: names.flatMap((name) => ends.map((e) => `${name}/${e.probe}`)),
    },
  ];
  for (const name of names) {
    for (const e of h200Events.slice(1)) {
      if (e.type === 'run-end') continue;
      if (e.type === 'cell-end') events.push({ ...e, target: name, cell: `${name}/${e.probe}` });
      else if ('target' in e) events.push({ ...e, target: name } as RunEvent);
    }
  }
  events.push(h200Events.at(-1)!);
  return { events, names, expectations: expect.length };
}

describe('GitHub reporter: the job summary of 50 targets x 13 probes with every expectation failing', () => {
  const { events, names, expectations } = fiftyFailing();
  let rendered: Rendered;
  beforeAll(async () => {
    rendered = await render(events);
  });

  it(`stays under GitHub's 1 MiB (and under its own budget of ${SUMMARY_BUDGET_BYTES / 1024} KiB)`, () => {
    const summary = summarize(events);
    expect(summary.counts.verdicts).toEqual({ passed: 0, failed: 50 * expectations, skipped: 0, error: 0 });
    expect(new Set(summary.start.cells.map((cellId) => cellId.split('/')[1])).size).toBe(13);
    const size = Buffer.byteLength(rendered.summary, 'utf8');
    console.log(
      `summary of 50 targets x 13 probes, ${50 * expectations} failed expectations: ${size} bytes, ${rendered.summary.match(/<details>/g)!.length} in detail`,
    );
    expect(size).toBeLessThan(1024 * 1024);
    expect(size).toBeLessThanOrEqual(SUMMARY_BUDGET_BYTES);
    // Bounded, not empty: most of the budget went to evidence.
    expect(size).toBeGreaterThan(SUMMARY_BUDGET_BYTES * 0.8);
  });

  it('names all 50 targets in the table, and gives each one its share of the details', () => {
    for (const name of names) {
      expect(rendered.summary).toContain(
        `| ${name} | linux | NVIDIA H200 | 580.159.04 | Ubuntu 24.04.3 LTS, x86_64 | 12/1/0 | 0/${expectations}/0/0 | ❌ failed |`,
      );
      expect(rendered.summary).toContain(`#### ❌ ${name}: ${expectations} failed\n`);
    }
  });

  it('says how many expectations it left out, and where every one is', () => {
    const shown = rendered.summary.match(/<details>/g)!.length;
    expect(shown).toBeGreaterThanOrEqual(50);
    const omitted = 50 * expectations - shown;
    expect(rendered.summary).toContain(
      `**${omitted} failed or errored expectations are not shown** (the summary is kept under 512 KiB; GitHub takes 1 MiB per step): every one, with its evidence, is in \`junit.xml\` and \`summary.json\` in the run folder \`${runDir}\`.`,
    );
    const perTarget = [...rendered.summary.matchAll(/_(\d+) more of (\S+)'s expectations not met are not shown here\._/g)];
    expect(perTarget).toHaveLength(50);
    expect(perTarget.reduce((total, match) => total + Number(match[1]), 0)).toBe(omitted);
  });

  it('keeps the annotations to ten', () => {
    const errors = rendered.commands.filter((command) => command.name === 'error');
    expect(errors).toHaveLength(MAX_ANNOTATIONS);
    expect(errors[9]!.props.title).toBe(`cudamatrix: ${50 * expectations - 9} more not shown here`);
    expect(errors[9]!.message).toMatch(
      new RegExp(
        `^${50 * expectations - 9} failed expectations on targets ${names.slice(0, 10).join(', ')} and 40 more: see the job summary`,
      ),
    );
  });
});

// ---------------------------------------------------------------------------------------------
// Secrets

describe('GitHub reporter: secrets', () => {
  it('masks the named variables and those whose names say secret, skipping empty values and names that only mention one', () => {
    const env = {
      CM_KEY_PASS: 'passphrase-of-the-key-1',
      GITHUB_TOKEN: 'ghs_0123456789abcdefghij',
      AWS_SECRET_ACCESS_KEY: 'wJalrXUtnFEMI/K7MDENG',
      DEPLOY_PRIVATE_KEY: '-----BEGIN KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n-----END KEY-----',
      EMPTY_PASSWORD: '',
      PASSWORD_FILE: '/etc/not-a-secret',
      ACTIONS_ID_TOKEN_REQUEST_URL: 'https://example.invalid/token',
      HOME: '/root',
    };
    const spy = vi.spyOn(process.stdout, 'write').mockImplementation(() => true);
    const values = secretValues(env, ['CM_KEY_PASS']);
    new GithubStep().mask(values);
    const valueCount = values.length;
    const masks = commandsIn(spy.mock.calls.map((call) => String(call[0])).join('')).map((command) => command.message);
    spy.mockRestore();
    expect(valueCount).toBe(4);
    expect(masks).toEqual([
      'passphrase-of-the-key-1',
      'ghs_0123456789abcdefghij',
      'wJalrXUtnFEMI/K7MDENG',
      env.DEPLOY_PRIVATE_KEY,
      '-----BEGIN KEY-----',
      'MIIEvQIBADANBgkqhkiG9w0BAQEFAASC',
      '-----END KEY-----',
    ]);
  });

  it('never writes a masked value into the summary, the annotations, the groups or the outputs', async () => {
    const secret = 'hunter2-correct-horse-battery';
    vi.spyOn(process.stdout, 'write').mockImplementation(() => true);
    const step = new GithubStep();
    step.mask(secretValues({ CM_GH_PASSPHRASE: secret }, ['CM_GH_PASSPHRASE']));
    vi.restoreAllMocks();
    // A careless matrix quotes the passphrase in an expectation and its why: it reaches every part of the report.
    const events: RunEvent[] = [
      runStart({ linux: [{ fact: 'sysinfo.os_family', equals: secret, why: `the passphrase is ${secret}` }] }, ['gpu/sysinfo']),
      targetStart('gpu'),
      cell('gpu', 'sysinfo', 'passed', sysinfo({ environment: 'linux', os_family: 'linux' })),
      runEnd,
    ];
    const rendered = await render(events, { step, extras: () => ({ outputs: { note: `said ${secret}` } }) });
    expect(rendered.commands.find((command) => command.name === 'error')!.props.title).toBe('gpu: sysinfo.os_family == "***"');
    expect(rendered.summary).toContain('**Why**: the passphrase is ***');
    expect(rendered.outputs.note).toBe('said ***');
    for (const text of [rendered.stdout, rendered.stderr, rendered.summary, JSON.stringify(rendered.outputs)])
      expect(text).not.toContain(secret);
  });
});

// ---------------------------------------------------------------------------------------------
// The CLI on this machine: run and merge under GITHUB_ACTIONS=true

const SECRET = 'cm-gh-passphrase-7f3a9c';

describe.runIf(noDriverHere)('GitHub reporter: cudamatrix run and merge on this machine', () => {
  it('run: masks the passphraseEnv value before anything else, then writes groups, annotations, outputs and the summary', async () => {
    const dir = tempDir();
    const matrix = path.join(dir, 'matrix.yaml');
    writeFileSync(
      matrix,
      `version: 1
concurrency: 1
defaults:
  probes: [sysinfo, sync-latency]
targets:
  - name: alpha
    expect:
      - fact: sysinfo.os_family
        equals: windows
        why: "a wrong expectation that quotes the passphrase ${SECRET}"
  - name: bravo
    transport: {kind: ssh, host: 127.0.0.1, port: 1, retries: 0, connectTimeout: 5, passphraseEnv: CM_GH_PASSPHRASE}
`,
    );
    const [summaryPath, outputPath] = [path.join(dir, 'summary.md'), path.join(dir, 'output')];
    writeFileSync(summaryPath, '');
    writeFileSync(outputPath, '');
    const result = await runCli(['run', '-m', matrix, '--results-dir', path.join(dir, 'runs')], {
      env: { GITHUB_ACTIONS: 'true', GITHUB_STEP_SUMMARY: summaryPath, GITHUB_OUTPUT: outputPath, CM_GH_PASSPHRASE: SECRET },
    });
    expect(result.code, result.stderr).toBe(3);
    const lines = result.stdout.split('\n');
    // The masks come first (this one, and any of secret-named variables the environment has):
    // the runner hides the value in every line after it (the console prints the why).
    const mask = lines.indexOf(`::add-mask::${SECRET}`);
    expect(mask).toBeGreaterThanOrEqual(0);
    expect(lines.slice(0, mask + 1).every((line) => line.startsWith('::add-mask::'))).toBe(true);
    expect(lines.slice(1).some((line) => line.includes(SECRET))).toBe(true);
    expect(result.stderr).not.toContain(SECRET);
    const summary = readFileSync(summaryPath, 'utf8');
    const outputs = outputsIn(readFileSync(outputPath, 'utf8'));
    for (const text of [
      summary,
      JSON.stringify(outputs),
      ...commandsIn(result.stdout)
        .filter((command) => command.name !== 'add-mask')
        .map((command) => JSON.stringify(command)),
    ])
      expect(text).not.toContain(SECRET);
    expect(summary).toContain('**Why**: a wrong expectation that quotes the passphrase ***');

    expect(groupsIn(result.stdout).map((group) => group.title)).toEqual([
      'alpha: failed (expectations 0 passed, 1 failed, 0 errors, 0 skipped)',
      'bravo: error (expectations 0 passed, 0 failed, 0 errors, 0 skipped)',
    ]);
    const errors = commandsIn(result.stdout).filter((command) => command.name === 'error');
    expect(errors.map((error) => error.props.title)).toEqual([
      'alpha: sysinfo.os_family == "windows"',
      expect.stringMatching(/^bravo: (AUTH_FAILED|TARGET_UNREACHABLE)$/),
    ]);
    expect(errors[0]!.message).toBe('expected sysinfo.os_family to be "windows", observed "linux"\nsource: os');
    const runDir = outputs['run-dir']!;
    expect(outputs).toEqual({
      total: '1',
      passed: '0',
      failed: '1',
      errors: '0',
      skipped: '0',
      cells: '4',
      'exit-code': '3',
      interrupted: 'false',
      'run-dir': runDir,
      'events-file': path.join(runDir, 'events.jsonl'),
    });
    expect(runDir.startsWith(path.join(dir, 'runs'))).toBe(true);
    expect(summary).toMatch(/\| alpha \| linux \| — \| none found \| [^|]+ \| 0\/2\/0 \| 0\/1\/0\/0 \| ❌ failed \|/);
    expect(summary).toMatch(
      /\| bravo \| unknown \| — \| — \| — \| 0\/0\/2 \| 0\/0\/0\/0 \| 💥 error \((AUTH_FAILED|TARGET_UNREACHABLE)\) \|/,
    );
  });

  it('merge --json: the JSON alone on stdout, the workflow commands on stderr, the merged run in the summary and outputs', async () => {
    const { shards } = await realRuns();
    const dir = tempDir();
    const [summaryPath, outputPath] = [path.join(dir, 'summary.md'), path.join(dir, 'output')];
    writeFileSync(summaryPath, '');
    writeFileSync(outputPath, '');
    const result = await runCli(['merge', ...shards.map((shard) => shard.runDir), '--json', '--results-dir', path.join(dir, 'runs')], {
      env: { GITHUB_ACTIONS: 'true', GITHUB_STEP_SUMMARY: summaryPath, GITHUB_OUTPUT: outputPath },
    });
    expect(result.code, result.stderr).toBe(3);
    const json = JSON.parse(result.stdout) as { runId: string };
    expect(groupsIn(result.stderr).map((group) => group.title.split(':')[0])).toEqual(['alpha', 'bravo', 'charlie']);
    expect(
      commandsIn(result.stderr)
        .filter((command) => command.name === 'error')
        .map((command) => command.props.title!.split(':')[0]),
    ).toEqual(['alpha', 'bravo', 'bravo']);
    const summary = readFileSync(summaryPath, 'utf8');
    expect(summary).toContain(`cudamatrix run \`${json.runId}\` (merged from 2 logs)`);
    for (const target of ['alpha', 'bravo', 'charlie']) expect(summary).toContain(`| ${target} |`);
    expect(outputsIn(readFileSync(outputPath, 'utf8'))).toMatchObject({
      'exit-code': '3',
      failed: '1',
      cells: '9',
      'events-file': expect.stringContaining(json.runId),
    });
  });

  it('without GITHUB_OUTPUT and GITHUB_STEP_SUMMARY: says so once each on stderr, and the run ends as it would', async () => {
    const { shards } = await realRuns();
    const dir = tempDir();
    const result = await runCli(['merge', ...shards.map((shard) => shard.runDir), '--results-dir', path.join(dir, 'runs')], {
      env: { GITHUB_ACTIONS: 'true', GITHUB_STEP_SUMMARY: '', GITHUB_OUTPUT: '' },
    });
    expect(result.code).toBe(3);
    expect(result.stderr.match(/GITHUB_OUTPUT is not set: writing no step outputs/g)).toHaveLength(1);
    expect(result.stderr.match(/GITHUB_STEP_SUMMARY is not set: writing no job summary/g)).toHaveLength(1);
    expect(result.stderr).not.toContain('reporter "github" failed');
    expect(commandsIn(result.stdout).filter((command) => command.name === 'error')).toHaveLength(3);
  });
});
