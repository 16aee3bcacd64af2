/**
 * The console reporter: what it says the driver does (rendered from the committed H200 record),
 * the evidence of failed expectations, interrupted runs, and what it writes to a terminal and to
 * a pipe (the live progress line, colours and the switches NO_COLOR / FORCE_COLOR / CI).
 *
 * Every test of a rendered log runs twice (test/live-and-merged.ts): on the log as a run wrote
 * it, and on the same log cut into shard logs and merged by cudamatrix merge; and a real run on
 * this machine, live and as two shards merged. Both must print the same, run ids, times,
 * durations and folders aside. The terminal tests feed events by hand and render no log.
 */
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { formatValue } from '../core/units.ts';
import { readEventLog, type RunEvent, type RunStartEvent } from '../events/events.ts';
import { cell, runEnd, runStart, sysinfo, targetStart } from '../test/events-fixture.ts';
import { metricsIn, pinnedH2dAtLeast40 } from '../test/h200-fixture.ts';
import { repoRoot, tempDir } from '../test/helpers.ts';
import { normalise, runIdOf, twice } from '../test/live-and-merged.ts';
import { summarize } from '../verdicts/verdicts.ts';
import { colorEnabled, consoleReporter, progressEnabled, type ConsoleOptions } from './console.ts';

const recordDir = path.join(repoRoot, 'records', 'driver-580.159.04', 'h200-linux');
const h200 = readEventLog(path.join(recordDir, 'events.jsonl'));
const ESC = '\u001b';

function render(events: RunEvent[], options: ConsoleOptions = {}): { text: string; writes: string[] } {
  const writes: string[] = [];
  const reporter = consoleReporter({ color: false, ...options, out: options.out ?? { write: (chunk: string) => writes.push(chunk) } });
  for (const e of events) reporter.onEvent!(e);
  reporter.onEnd(summarize(events), { runDir: 'runs/x', eventsFile: 'runs/x/events.jsonl', strict: false });
  return { text: writes.join(''), writes };
}

/** The H200 log with the linux expectations changed: `replace` takes the place of the same facts and metrics. */
function withLinuxExpectations(replace: NonNullable<RunStartEvent['matrix']['expectations']['linux']>): RunEvent[] {
  const start = h200[0] as RunStartEvent;
  const names = new Set(replace.map((e) => e.fact ?? e.metric));
  const linux = (start.matrix.expectations.linux ?? []).filter((e) => !names.has(e.fact ?? e.metric));
  return [
    { ...start, matrix: { ...start.matrix, expectations: { ...start.matrix.expectations, linux: [...linux, ...replace] } } },
    ...h200.slice(1),
  ];
}

describe.each(twice(h200))('console: what the driver does (the H200 record, %s)', (_source, h200) => {
  const { text } = render(h200);
  const lines = text.split('\n');

  it('prints every fact the probes reported, with its value, grouped by probe', () => {
    const facts = h200.flatMap((e) =>
      e.type === 'cell-end'
        ? e.records.flatMap((record) => (record.type === 'fact' ? [{ name: `${e.probe}.${record.name}`, value: record.value }] : []))
        : [],
    );
    expect(facts).toHaveLength(20);
    for (const fact of facts) {
      const line = lines.find((candidate) => candidate.trim().startsWith(`${fact.name} `));
      expect(line, fact.name).toBeDefined();
      expect(line!.trim().split(/\s+/)[1], fact.name).toBe(String(fact.value));
    }
    expect(text).toMatch(/^ {4}pinned-vram\.counts_as_vram +false {2}✓$/m);
    expect(text).toMatch(/^ {4}pinned-release\.released +on-free {2}✓$/m);
    expect(text).toMatch(/^ {4}event-timing\.resolution_class +sub-microsecond {2}✓$/m);
    expect(text).toMatch(/^ {4}pinned-ceiling\.tracks_free_vram +null \(every level stopped at the safety cap/m);
    // Grouped: each probe's heading comes before its facts.
    const heading = lines.findIndex((line) => line.startsWith('  pinned-release '));
    expect(heading).toBeGreaterThan(0);
    expect(lines[heading + 1]).toMatch(/^ {4}pinned-release\.released /);
  });

  it('shows the key metrics beside the facts, with units', () => {
    expect(text).toMatch(
      /device growth per GiB pinned +0 B driver, 0 B runtime, 0 B registered \(on nvml_process_used_bytes, the deciding source\)/,
    );
    expect(text).toMatch(/4 GiB pinned \(driver API\) +device \+0 B, host \+4 GiB; 4 GiB of cuMemAlloc: device \+4 GiB/);
    expect(text).toMatch(/pinned at 1 GiB +55\.4 GB\/s h2d, 55\.3 GB\/s d2h/);
    expect(text).toMatch(/pageable\/pinned at 1 GiB +0\.12 h2d, 0\.215 d2h/);
    expect(text).toMatch(/launch \+ synchronize +p50 8\.43 us, p99 15\.7 us/);
    expect(text).toMatch(/resolution +0\.032 us \(18 distinct values, host clock 0\.04 us\)/);
    expect(text).toContain('✓ expected sync-latency.p50_us <= 100 us');
  });

  it('sums sysinfo up in a few lines, not all forty', () => {
    expect(text).toMatch(/^ {4}driver +580\.159\.04, CUDA 13\.0, runtime 13\.0/m);
    expect(text).toMatch(/^ {4}GPU +NVIDIA H200, compute 9\.0, 132 SMs$/m);
    expect(text).toMatch(/^ {4}memory +140 GiB$/m);
    expect(text).toMatch(/^ {4}PCIe +gen5 x16 now, gen5 x16 max$/m);
    expect(text).toMatch(/^ {4}driver model +null \(NVML: Not Supported/m);
    expect(text).toMatch(/^ {4}container +docker/m);
    const start = lines.findIndex((line) => line.startsWith('  sysinfo '));
    const end = lines.findIndex((line, i) => i > start && /^ {2}\S/.test(line));
    const knownBad = lines.slice(start + 1, end).filter((line) => line.startsWith('    ! '));
    expect(end - start - 1 - knownBad.length).toBeLessThanOrEqual(9);
    expect(text).not.toContain('gpu_uuid');
  });

  it("says under the sysinfo lines the known-bad registry's entries for the target's driver, once each", () => {
    // 580.159.04 on Linux is in the range of an entry of matrix/known-bad-drivers.yaml (r580 and later).
    const line = lines.filter((candidate) => candidate.includes('known-bad driver: A single cudaHostRegister of 512 GiB'));
    expect(line).toHaveLength(1);
    expect(line[0]).toMatch(
      /^ {4}! known-bad driver: .* \(linux, from 580 on; not fixed; source https:\/\/github\.com\/xcena-dev\/maru\/pull\/64, single-report\)$/,
    );
    const sysinfoAt = lines.findIndex((candidate) => candidate.startsWith('  sysinfo '));
    const nextProbe = lines.findIndex((candidate, i) => i > sysinfoAt && /^ {2}\S/.test(candidate));
    expect(lines.indexOf(line[0]!)).toBeGreaterThan(sysinfoAt);
    expect(lines.indexOf(line[0]!)).toBeLessThan(nextProbe);
    // The run's outcome is what it was: a warning, never a verdict.
    expect(text.trimEnd().endsWith('Exit status: 0')).toBe(true);
  });

  it('ends with the summary table, the counts, where the events went and the exit status', () => {
    expect(text).toMatch(/local +linux +580\.159\.04 +NVIDIA H200 +140 GiB +gen5\/5 x16 +12\/1\/0 +15\/0\/0\/0/);
    expect(text).toContain('skipped: windows-registry — this probe runs on windows only');
    expect(text).toContain('Expectations: 15 passed, 0 failed, 0 skipped, 0 errors.');
    expect(text).toContain('Events: runs/x/events.jsonl');
    expect(text.trimEnd().endsWith('Exit status: 0')).toBe(true);
    expect(text).not.toContain('Expectations not met');
  });

  it('prints only the end part under quiet', () => {
    const quiet = render(h200, { quiet: true }).text;
    expect(quiet).not.toContain('[1/13]');
    expect(quiet).toContain('pinned-vram.counts_as_vram');
    expect(quiet).toContain('Exit status: 0');
  });
});

const notMet = withLinuxExpectations([
  { fact: 'pinned-vram.counts_as_vram', equals: true, why: 'the design card: pinned memory counts against VRAM (C1)' },
  { metric: 'sync-latency.p99_us', '<=': '10 us', why: 'a bound this GPU does not meet' },
  pinnedH2dAtLeast40,
]);

describe.each(twice(notMet))('console: expectations not met (%s)', (_source, events) => {
  const { text } = render(events);
  const lines = text.split('\n');

  it("gives each its message, the matrix's why, what was observed and the evidence", () => {
    expect(text).toContain('Expectations not met:');
    expect(text).toContain(
      '✗ local: pinned-vram.counts_as_vram == true [linux] — expected pinned-vram.counts_as_vram to be true, observed false',
    );
    expect(text).toMatch(/why: +the design card: pinned memory counts against VRAM \(C1\)/);
    expect(text).toMatch(/observed: +false/);
    // The probe's evidence as a line, the deciding source first (the numbers are the run's: see verdicts.test.ts).
    expect(text).toMatch(
      /evidence: +NVML process memory \+0 B for 4 GiB \(the deciding source\); NVML device memory \+8 MiB, cuMemGetInfo used \+8 MiB, resident set \+4 GiB/,
    );
    expect(text).toContain('✗ local: sync-latency.p99_us <= 10 us [linux] — expected sync-latency.p99_us <= 10 us, observed 15.7 us');
    expect(text).toMatch(/why: +a bound this GPU does not meet/);
    // A lone sample: its attributes, as "where" did not fix them.
    expect(text).toMatch(/outside: +15\.7 us at iterations 10000$/m);
    expect(text).toContain('Exit status: 1');
  });

  it('names the failing sample of a metric, the range of those within, the why, and the event log once', () => {
    const samples = metricsIn(events, 'transfer-bandwidth.bandwidth_gbps', { direction: 'h2d', memory: 'pinned' });
    const [small, ...large] = samples;
    const gbps = (value: number | null) => formatValue(value, 'GB/s');
    const title = 'transfer-bandwidth.bandwidth_gbps {"direction":"h2d","memory":"pinned"} >= 40 GB/s';
    const at = lines.findIndex((line) => line.includes(`✗ local: ${title} [linux]`));
    expect(at).toBeGreaterThan(0);
    expect(lines[at]).toContain(`— expected ${title}, observed ${gbps(small!.value)} at size 1 MiB; 3 of 4 matching samples within`);
    const values = large.map((sample) => sample.value!);
    expect(lines.slice(at + 1, at + 4)).toEqual([
      `      why:       ${pinnedH2dAtLeast40.why}`,
      `      outside:   ${gbps(small!.value)} at size 1 MiB`,
      `      within:    ${gbps(Math.min(...values))} to ${gbps(Math.max(...values))} (3 of 4: size 16 MiB, 256 MiB, 1 GiB)`,
    ]);
    // The log path once, at the end, saying what it holds.
    expect(text.match(/runs\/x\/events\.jsonl/g)).toHaveLength(1);
    expect(text).toContain('Events: runs/x/events.jsonl (every sample and reading behind these verdicts)');
  });

  it('marks the fact that failed where the facts are listed', () => {
    expect(text).toMatch(/^ {4}pinned-vram\.counts_as_vram +false {2}✗ expected true$/m);
    expect(text).toContain('✗ expected sync-latency.p99_us <= 10 us');
  });
});

const interruptedCellStart = (target: string): RunEvent => ({
  type: 'cell-start',
  cell: `${target}/sysinfo`,
  target: target,
  probe: 'sysinfo',
  time: '2026-11-29T12:00:00.500Z',
});
const interrupted: RunEvent[] = [
  runStart(
    {},
    ['a', 'b', 'c', 'd', 'e'].map((target) => `${target}/sysinfo`),
  ),
  targetStart('a'),
  interruptedCellStart('a'),
  cell('a', 'sysinfo', 'passed', sysinfo({ environment: 'linux', driver_version: '580.1', gpu_name: 'NVIDIA H200' })),
  targetStart('b'),
  interruptedCellStart('b'),
  cell('b', 'sysinfo', 'cancelled', [], { reason: 'the run was interrupted while this probe ran' }),
  ...['c', 'd', 'e'].flatMap((target) => [
    targetStart(target),
    cell(target, 'sysinfo', 'not-run', [], { reason: 'the run was interrupted before this cell started', durationMs: 0 }),
  ]),
  { type: 'run-end', finished: '2026-11-29T12:00:02.000Z', durationMs: 2000, interrupted: true },
];
/** Shards of two hosts (a, b on one; c, d, e on the other), both interrupted. */
const interruptedShards = [
  ['a', 'b'],
  ['c', 'd', 'e'],
];

describe.each(twice(interrupted, interruptedShards))('console: an interrupted run (%s)', (_source, events) => {
  const { text } = render(events);

  it('sums up the cells that never started in one line, and gives the cancelled one its line', () => {
    expect(text).toContain('✓ [1/5] a/sysinfo passed');
    expect(text).toContain('! [2/5] b/sysinfo cancelled in 120 ms: the run was interrupted while this probe ran');
    expect(text.match(/not run/g)).toEqual(['not run']);
    expect(text).toContain('\n3 cells not run: the run was interrupted\n');
    // Nor a line for the targets that started after the interruption: they run nothing.
    for (const target of ['c', 'd', 'e']) expect(text).not.toMatch(new RegExp(`${target}/sysinfo|▶ ${target} `));
    expect(text).not.toContain('not-run');
    expect(text).toContain('The run was interrupted; the results above cover what finished.');
    expect(text).toContain('Exit status: 130');
  });
});

const why =
  'WSL distribution "Legacy" on this machine runs under WSL 1, which has no GPU: convert it with "wsl.exe --set-version Legacy 2"';
const wsl1: RunEvent[] = [
  runStart({}, ['wsl1/sysinfo', 'wsl1/pinned-vram']),
  targetStart('wsl1', [], 'wsl2', ['sysinfo', 'pinned-vram']),
  { type: 'target-error', target: 'wsl1', time: '2026-11-29T12:00:00.100Z', code: 'WSL_VERSION_1', message: why },
  ...['sysinfo', 'pinned-vram'].map((probe) =>
    cell('wsl1', probe, 'skipped', [], { reason: why, errorCode: 'WSL_VERSION_1', durationMs: 0 }),
  ),
  { type: 'run-end', finished: '2026-11-29T12:00:02.000Z', durationMs: 2000, interrupted: false },
];

describe.each(twice(wsl1))('console: a target that cannot run probes by its nature (WSL 1, %s)', (_source, events) => {
  const { text } = render(events);

  it('says it is skipped and why, as a skip and not as an error, and exits 0', () => {
    expect(text).toContain(`  - wsl1 skipped: WSL_VERSION_1: ${why}\n`);
    // The reason once: the cells it kept from running are counted, and the block refers to it.
    expect(text).toContain(`  - [2/2] 2 cells of wsl1 not run: the reason above\n`);
    expect(text).toContain(`  skipped (2): every probe — not run: wsl1's WSL_VERSION_1 above`);
    expect(text).not.toContain('wsl1/sysinfo skipped');
    expect(text).not.toMatch(/✗|target error|No usable NVIDIA driver/);
    expect(text).toContain('Nothing was measured: every probe was skipped.');
    expect(text).toContain('Exit status: 0');
  });
});

// Issue 20, defect 6: two targets without a driver (one also skips a Windows-only probe), and an
// unreachable one with several expectations.
const noDriver = 'no NVIDIA driver found: the CUDA driver library could not be loaded (libcuda.so.1: cannot open shared object file)';
const unreachable = `cannot reach root@gpu-box:22: ${'connect ECONNREFUSED 10.0.0.5:22 '.repeat(10).trim()}`;
const littleMeasured: RunEvent[] = [
  runStart(
    {
      all: [
        { fact: 'sysinfo.os_family', equals: 'linux' },
        { fact: 'cuda-graph.supported', equals: true },
        { fact: 'managed-memory.roundtrip_ok', equals: true },
      ],
    },
    [
      ...['a', 'b'].flatMap((target) =>
        ['sysinfo', 'cuda-graph', 'managed-memory', 'windows-registry'].map((probe) => `${target}/${probe}`),
      ),
      'down/cuda-graph',
      'down/managed-memory',
    ],
  ),
  ...['a', 'b'].flatMap((target) => [
    targetStart(target, [], 'auto', ['sysinfo', 'cuda-graph', 'managed-memory', 'windows-registry']),
    {
      type: 'target-ready',
      target: target,
      time: '2026-11-29T12:00:00.050Z',
      session: 'local',
      platform: 'linux',
      arch: 'x86_64',
      probe: { hash: 'h', built: false },
    } as RunEvent,
    cell(target, 'sysinfo', 'skipped', sysinfo({ os_family: 'linux', environment: 'linux', driver_found: false }), { reason: noDriver }),
    ...['cuda-graph', 'managed-memory'].map((probe) => cell(target, probe, 'skipped', [], { reason: noDriver })),
    cell(target, 'windows-registry', 'skipped', [], { reason: 'this probe runs on windows only' }),
  ]),
  targetStart('down', [], 'auto', ['cuda-graph', 'managed-memory']),
  { type: 'target-error', target: 'down', time: '2026-11-29T12:00:00.100Z', code: 'TARGET_UNREACHABLE', message: unreachable },
  ...['cuda-graph', 'managed-memory'].map((probe) =>
    cell('down', probe, 'error', [], { reason: unreachable, errorCode: 'TARGET_UNREACHABLE', durationMs: 0 }),
  ),
  runEnd,
];

describe('console: when little was measured (issue 20)', () => {
  const { text } = render(littleMeasured);
  const count = (needle: string) => text.split(needle).length - 1;

  it('says a reason once per target in the live lines; the cells after point to the first', () => {
    expect(count(`skipped in 120 ms: ${noDriver}`)).toBe(2);
    expect(text).toContain('[2/10] a/cuda-graph skipped in 120 ms (the same reason as a/sysinfo)');
    expect(text).toContain('b/managed-memory skipped in 120 ms (the same reason as b/sysinfo)');
    // sysinfo ran and reported the system: said so once, not listed among the skipped (issue 33).
    expect(text).toContain(`  sysinfo ran: the system only; its GPU facts are skipped — ${noDriver}`);
    expect(text).toContain(`  skipped (2): cuda-graph, managed-memory — ${noDriver}`);
  });

  it("gives the unreachable target's reason once: its cells, its block and its expectations refer to it (issue 33)", () => {
    expect(count(unreachable)).toBe(1);
    expect(text).toContain(`  ✗ down: TARGET_UNREACHABLE: ${unreachable}\n  ✗ [10/10] 2 cells of down not run: the error above\n`);
    expect(text).toContain("  error (2): every probe — not run: down's TARGET_UNREACHABLE above");
    expect(text).toContain("  ✗ down: 2 expectations not judged: down's TARGET_UNREACHABLE above\n");
    expect(text).not.toContain('which:');
  });

  it('lists why nothing was measured without the platform skips, once with its count of targets', () => {
    const nothing = littleMeasured.filter((e) => !('target' in e) || e.target !== 'down');
    const { text: end } = render(nothing);
    expect(end).toContain(`  reason (2 targets): ${noDriver}`);
    expect(end).not.toMatch(/reason.*runs on windows only/);
    // sysinfo.os_family was judged (sysinfo reports it without a driver): said, so that "every probe was skipped" does not read as a contradiction.
    expect(end).toMatch(/Expectations: 2 passed, 0 failed/);
    expect(end).toContain(
      'No usable NVIDIA driver was found on any target: nothing was measured, and every probe was skipped (sysinfo still reported what it sees without one: the 2 expectations judged are on those facts).',
    );
  });
});

describe('console: the same from the live log and from merged shards', () => {
  it.each([
    ['the H200 record', h200, undefined],
    ['expectations not met', notMet, undefined],
    ['an interrupted run', interrupted, interruptedShards],
    ['WSL 1', wsl1, undefined],
  ] as const)('%s', (_what, events, groups) => {
    const [[, live], [, merged]] = twice(events, groups as string[][] | undefined);
    expect(runIdOf(merged)).not.toBe(runIdOf(live));
    expect(normalise(render(merged).text, { runId: runIdOf(merged) })).toBe(normalise(render(live).text, { runId: runIdOf(live) }));
  });
});

describe('console: terminals, pipes and colours', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('writes plain lines only when the stream is not a terminal and colours are off', () => {
    const { text } = render(h200, { color: false, out: undefined });
    expect(text).not.toContain(ESC);
    expect(text).not.toContain('\r');
    // Colours on a pipe (FORCE_COLOR or CI): colour codes, but still no cursor movement.
    const coloured = render(h200, { color: true }).text;
    expect(coloured).toContain(`${ESC}[32m✓${ESC}[39m`);
    expect(coloured).not.toContain('\r');
    expect(coloured).not.toContain(`${ESC}[K`);
  });

  it('keeps one progress line on a terminal, redrawn at most ten times a second and cleared before every other line', () => {
    vi.useFakeTimers();
    const writes: string[] = [];
    const tty = { isTTY: true, columns: 60, write: (chunk: string) => writes.push(chunk) };
    // A terminal outside CI (the suite itself may run under CI=true).
    const reporter = consoleReporter({ out: tty, color: false, env: {} });
    const cellStart = (probe: string): RunEvent => ({ type: 'cell-start', cell: `local/${probe}`, target: 'local', probe, time: '' });
    reporter.onEvent!(runStart({}, ['local/sysinfo', 'local/pinned-vram']));
    reporter.onEvent!(targetStart('local'));
    reporter.onEvent!(cellStart('sysinfo'));
    vi.advanceTimersByTime(3000);
    const progress = writes.filter((chunk) => chunk.startsWith('\r') && chunk !== '\r\u001b[K');
    expect(progress.length).toBeGreaterThan(0);
    expect(progress.length).toBeLessThanOrEqual(31);
    expect(progress.at(-1)).toMatch(/^\r\S 0:03 {2}0\/2 cells done {2}running local\/sysinfo 0:03\u001b\[K$/);
    // Never wider than the terminal: a wrapped line could not be rewritten.
    for (const frame of progress) expect([...frame.replace(/\r|\u001b\[K/g, '')].length).toBeLessThan(60);
    // A finished cell: the progress line is cleared first, then the line is printed.
    reporter.onEvent!(cell('local', 'sysinfo', 'passed'));
    const line = writes.findIndex((chunk) => chunk.includes('[1/2] local/sysinfo passed'));
    expect(writes[line - 1]).toBe('\r\u001b[K');
    expect(writes[line]).toBe('  ✓ [1/2] local/sysinfo passed in 120 ms\n');
    // Nothing runs between cells: no progress line is drawn then.
    const before = writes.length;
    vi.advanceTimersByTime(1000);
    expect(writes.length).toBe(before);
    reporter.onEvent!(cellStart('pinned-vram'));
    vi.advanceTimersByTime(1000);
    const redraws = writes.slice(before).filter((chunk) => chunk.startsWith('\r'));
    expect(redraws.length).toBeGreaterThan(0);
    expect(redraws.length).toBeLessThanOrEqual(10);
    expect(redraws.at(-1)).toContain('1/2 cells done  running local/pinned-vram 0:01');
    reporter.onEvent!(cell('local', 'pinned-vram', 'passed'));
    reporter.onEvent!({ type: 'run-end', finished: '', durationMs: 5000, interrupted: false });
    const after = writes.length;
    vi.advanceTimersByTime(1000);
    expect(writes.length).toBe(after);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('takes a terminal that does not say its width as 80 columns wide', () => {
    vi.useFakeTimers();
    const writes: string[] = [];
    const reporter = consoleReporter({
      out: { isTTY: true, columns: 0, write: (chunk: string) => writes.push(chunk) },
      color: false,
      env: {},
    });
    reporter.onEvent!(runStart({}, ['local/sysinfo']));
    reporter.onEvent!({ type: 'cell-start', cell: 'local/sysinfo', target: 'local', probe: 'sysinfo', time: '' });
    vi.advanceTimersByTime(100);
    expect(writes.at(-1)).toMatch(/0\/1 cells done {2}running local\/sysinfo 0:00\u001b\[K$/);
    reporter.onEvent!({ type: 'run-end', finished: '', durationMs: 100, interrupted: false });
    expect(writes.at(-1)).toBe('\r\u001b[K');
  });

  it('draws no progress line under quiet, even on a terminal', () => {
    vi.useFakeTimers();
    const writes: string[] = [];
    const reporter = consoleReporter({
      out: { isTTY: true, write: (chunk: string) => writes.push(chunk) },
      color: false,
      quiet: true,
      env: {},
    });
    reporter.onEvent!(runStart({}, ['local/sysinfo']));
    reporter.onEvent!({ type: 'cell-start', cell: 'local/sysinfo', target: 'local', probe: 'sysinfo', time: '' });
    vi.advanceTimersByTime(1000);
    expect(writes).toEqual([]);
  });

  it('follows NO_COLOR, FORCE_COLOR and CI, and a terminal otherwise', () => {
    const stderrTty = { isTTY: true, write: () => true };
    const pipe = { write: () => true };
    expect(colorEnabled(stderrTty, {}, [])).toBe(true);
    expect(colorEnabled(stderrTty, { TERM: 'dumb' }, [])).toBe(false);
    expect(colorEnabled(stderrTty, { FORCE_COLOR: '0' }, [])).toBe(false);
    expect(progressEnabled(stderrTty, {})).toBe(true);
    expect(progressEnabled(stderrTty, { CI: 'true' })).toBe(false);
    expect(progressEnabled(stderrTty, { TERM: 'dumb' })).toBe(false);
    expect(colorEnabled(stderrTty, { NO_COLOR: '1' }, [])).toBe(false);
    expect(colorEnabled(pipe, {}, [])).toBe(false);
    expect(colorEnabled(pipe, { FORCE_COLOR: '1' }, [])).toBe(true);
    expect(colorEnabled(pipe, { CI: 'true' }, [])).toBe(true);
    expect(colorEnabled(pipe, { NO_COLOR: '1', FORCE_COLOR: '1', CI: 'true' }, [])).toBe(false);
  });

  it('takes the colour switches from the environment when it writes to stdout (picocolors)', () => {
    // A real process whose stdout is a pipe, as under CI or `| cat`.
    const script = path.join(tempDir('cm-console-'), 'render.ts');
    writeFileSync(
      script,
      [
        `import { consoleReporter } from ${JSON.stringify(path.join(repoRoot, 'reporters', 'console.ts'))};`,
        'const r = consoleReporter();',
        "r.onEvent({ type: 'run-start', schemaVersion: 1, tool: 'cudamatrix', version: '0', runId: 'x', started: '', shard: null, matrix: { file: 'm.yaml', expectations: {} }, cells: ['t/sysinfo'], options: { strict: false } });",
        "r.onEvent({ type: 'cell-end', cell: 't/sysinfo', target: 't', probe: 'sysinfo', planned: true, time: '', status: 'passed', durationMs: 1, exitCode: 0, signal: null, records: [], problems: [], stderrTail: '' });",
      ].join('\n'),
    );
    const run = (env: Record<string, string>) => {
      const base = Object.fromEntries(Object.entries(process.env).filter(([k]) => !['NO_COLOR', 'FORCE_COLOR', 'CI', 'TERM'].includes(k)));
      return execFileSync(process.execPath, ['--import', 'tsx', script], { env: { ...base, ...env }, encoding: 'utf8' });
    };
    expect(run({})).not.toContain(ESC);
    expect(run({ FORCE_COLOR: '1' })).toContain(`${ESC}[32m✓`);
    expect(run({ CI: 'true' })).toContain(`${ESC}[32m✓`);
    expect(run({ FORCE_COLOR: '1', NO_COLOR: '1' })).not.toContain(ESC);
  });
});

describe('console: the HAGS part of the driver model line', () => {
  const line = (values: Record<string, string | number | boolean | null>) => {
    const events: RunEvent[] = [
      runStart({}, ['w/sysinfo']),
      targetStart('w'),
      cell('w', 'sysinfo', 'passed', sysinfo({ environment: 'wddm', driver_model: 'wddm', ...values })),
      runEnd,
    ];
    return render(events)
      .text.split('\n')
      .find((printed) => printed.trim().startsWith('driver model'))!
      .trim();
  };

  it.each([
    [{ hags_enabled: true, hags_setting: true }, 'HAGS on'],
    [{ hags_enabled: false, hags_setting: true }, 'HAGS off (setting on after reboot)'],
    [{ hags_enabled: null, hags_setting: false }, 'HAGS setting off'],
    // A record written before the fact was renamed: hags was the registry setting.
    [{ hags: true }, 'HAGS setting on'],
  ])('%j reads as "%s"', (values, expected) => {
    expect(line(values)).toMatch(new RegExp(`^driver model +wddm, ${expected.replace(/[()]/g, '\\$&')}$`));
  });
});
