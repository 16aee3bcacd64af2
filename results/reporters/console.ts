/**
 * The console. While the run goes: a line per target and per finished cell and, on a terminal,
 * one live progress line (elapsed time, cells done, what runs now) rewritten in place. At the end,
 * per target, what the driver does: the system in brief, every fact the probes reported, grouped
 * by probe, with the key metrics beside them; then the expectations that were not met with their
 * evidence, the summary table, the counts, where the events went and the exit status.
 *
 * Colours come from picocolors, switched by NO_COLOR, FORCE_COLOR, CI and whether the console's
 * stream is a terminal; nothing but plain lines is written where the stream is not a terminal.
 */
import pc from 'picocolors';
import { isNotApplicable } from '../../core/errors.ts';
import { formatValue } from '../../core/units.ts';
import type { CellEndEvent, RunEvent } from '../../events/events.ts';
import { probeSpec } from '../../probes/catalogue.ts';
import type { MetricRecord, ProbeRecord, Scalar } from '../../probes/protocol.ts';
import { attrText, attrsText, rangeText, sampleText, varyingAttrs, type SampleEvidence } from '../evidence.ts';
import type { Reporter, RunContext } from '../reporter.ts';
import { exitCodeOf, shownExitCode, type RunSummary, type TargetResult, type Verdict } from '../verdicts.ts';

/** Where the console writes: a stream; `isTTY` and `columns` as a terminal's WriteStream has them. */
export interface ConsoleOut {
  write(text: string): unknown;
  isTTY?: boolean;
  columns?: number;
}

export interface ConsoleOptions {
  out?: ConsoleOut;
  /** Colours on or off; by default from the environment and the stream (see colorEnabled). */
  color?: boolean;
  /** The environment that decides colours and the progress line (default: this process's). */
  env?: NodeJS.ProcessEnv;
  /** Only the summary at the end: no line per cell, no progress line. */
  quiet?: boolean;
  /** Every target and cell, however many: no collapsing above COLLAPSE_ABOVE targets. */
  verbose?: boolean;
}

/**
 * Above this many targets the console collapses what went well, so that a fleet's run stays
 * readable (2,000 targets x 13 probes would be 26,000 cell lines): while it runs, a line per
 * problem (a failed cell, an unreachable target) and a progress line at each tenth of the cells;
 * at the end, the blocks and table rows of the targets with a problem only, and how many went
 * well. --verbose shows everything.
 */
export const COLLAPSE_ABOVE = 20;

type Colors = ReturnType<typeof pc.createColors>;

const marks = { passed: '✓', skipped: '-', error: '✗', cancelled: '!', 'not-run': '·', failed: '✗' } as const;
const spinner = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];
/** The progress line is redrawn on this tick only: at most ten times a second. */
const PROGRESS_TICK_MS = 100;
const CLEAR_LINE = '\r\u001b[K';

/**
 * Whether the console colours its output. picocolors reads NO_COLOR, FORCE_COLOR, CI and
 * --color/--no-color, and whether stdout is a terminal; the console may write to stderr instead
 * (when stdout carries JUnit or JSON), and then the same switches apply with stderr's terminal.
 */
export function colorEnabled(out: ConsoleOut, env: NodeJS.ProcessEnv = process.env, argv: string[] = process.argv): boolean {
  if (env.NO_COLOR || argv.includes('--no-color')) return false;
  // FORCE_COLOR=0 (or false) turns colours off, as in Node and chalk; any other value on.
  if (env.FORCE_COLOR !== undefined && env.FORCE_COLOR !== '') return !['0', 'false'].includes(env.FORCE_COLOR);
  return Boolean(argv.includes('--color') || env.CI || (out.isTTY && env.TERM !== 'dumb'));
}

/** Whether the live progress line is drawn: on a real terminal only, never in CI or on a dumb one. */
export function progressEnabled(out: ConsoleOut, env: NodeJS.ProcessEnv = process.env): boolean {
  return Boolean(out.isTTY) && !env.CI && env.TERM !== 'dumb';
}

export function consoleReporter(options: ConsoleOptions = {}): Reporter {
  const out: ConsoleOut = options.out ?? process.stdout;
  const env = options.env ?? process.env;
  const c = pc.createColors(options.color ?? colorEnabled(out, env));
  const statusPaint = { passed: c.green, skipped: c.yellow, error: c.red, cancelled: c.magenta, 'not-run': c.magenta, failed: c.red } as const;
  // The live line: only on a real terminal, not in CI, and not under --quiet.
  const live = progressEnabled(out, env) && !options.quiet;
  let shown = '';
  let timer: ReturnType<typeof setInterval> | undefined;
  let frame = 0;
  let startedAt = Date.now();
  let total = 0;
  let done = 0;
  // Seen a cell cancelled or not run: the run was interrupted, and targets that start now run nothing.
  let interrupted = false;
  // Many targets: what went well is counted, not listed (COLLAPSE_ABOVE).
  let collapsed = false;
  let problems = 0;
  let nextMilestone = 0;
  const running = new Map<string, number>();

  const clearProgress = (): void => {
    if (!shown) return;
    out.write(CLEAR_LINE);
    shown = '';
  };
  const say = (line: string): void => {
    clearProgress();
    out.write(`${line}\n`);
  };
  const drawProgress = (): void => {
    frame = (frame + 1) % spinner.length;
    // Nothing runs (targets connecting, cudaprobe compiling): no line, so that what those steps
    // print is not written into it.
    const text = running.size ? fit(progressText(), (out.columns || 80) - 1) : '';
    if (text === shown) return;
    if (!text) return clearProgress();
    out.write(`\r${c.dim(text)}\u001b[K`);
    shown = text;
  };
  const progressText = (): string => {
    const now = Date.now();
    const cells = [...running].map(([cell, since]) => `${cell} ${clock(now - since)}`);
    const more = cells.length > 2 ? ` and ${cells.length - 2} more` : '';
    return `${spinner[frame]} ${clock(now - startedAt)}  ${done}/${total} cells done  running ${cells.slice(0, 2).join(', ')}${more}`;
  };
  const stopProgress = (): void => {
    if (timer) clearInterval(timer);
    timer = undefined;
    running.clear();
    clearProgress();
  };

  /** The first cell that gave each (target, outcome, reason): later ones name it instead of repeating it. */
  const saidFirst = new Map<string, string>();

  return {
    name: 'console',
    onMessage(text: string) {
      // Notes from the run (a compile, Ctrl-C) go to stderr; the progress line is cleared first.
      clearProgress();
      process.stderr.write(`${text}\n`);
    },
    onEvent(e: RunEvent) {
      if (options.quiet) return;
      switch (e.type) {
        case 'run-start':
          total = e.cells.length;
          startedAt = Date.now();
          collapsed = !options.verbose && new Set(e.cells.map((x) => x.slice(0, x.lastIndexOf('/')))).size > COLLAPSE_ABOVE;
          nextMilestone = Math.ceil(total / 10);
          say(
            `cudamatrix ${e.version}: run ${e.runId}${e.shard ? ` (shard ${e.shard.index}/${e.shard.total})` : ''}, ${e.cells.length} cell${e.cells.length === 1 ? '' : 's'} from ${e.matrix.file}${e.options.quick ? ' (--quick: small parameters)' : ''}`,
          );
          if (e.shard && e.cells.length === 0) say(`shard ${e.shard.index}/${e.shard.total} has no cells: shards hold whole hosts, and the matrix's hosts fit in fewer shards`);
          if (collapsed) say(`${new Set(e.cells.map((x) => x.slice(0, x.lastIndexOf('/')))).size} targets: only problems are listed as they come, and progress at each tenth of the cells (--verbose lists every target and cell)`);
          if (live && !timer) {
            timer = setInterval(drawProgress, PROGRESS_TICK_MS);
            timer.unref?.();
          }
          break;
        case 'target-start':
          if (interrupted || collapsed) break;
          say(`${c.bold('▶')} ${e.target} (${e.environment}, via ${e.transport.join(' → ')})`);
          break;
        case 'target-ready':
          if (collapsed) break;
          say(`  reached ${e.session} (${e.platform}/${e.arch}), cudaprobe ${e.probe.hash}${e.probe.built ? ' (built now)' : ''}`);
          break;
        case 'target-error':
          // A target that cannot run probes by its nature (WSL 1) is skipped, not failed.
          if (isNotApplicable(e.code)) say(c.yellow(`  ${marks.skipped} ${e.target} skipped: ${e.code}: ${e.message}`));
          else say(c.red(`  ✗ ${e.target}: ${e.code}: ${e.message}`));
          break;
        case 'cell-start':
          running.set(e.cell, Date.now());
          break;
        case 'cell-end': {
          running.delete(e.cell);
          if (e.status === 'not-run' || e.status === 'cancelled') interrupted = true;
          // sysinfo's unplanned run and the cells an interruption kept from starting: no line
          // (those are summed up once at the end).
          if (!e.planned || e.status === 'not-run') break;
          done++;
          const reason = e.status === 'passed' ? '' : cellWhy(e);
          // A reason is said once per target; the cells after it that end the same way point to it.
          const key = `${e.target}\n${e.status}\n${reason}`;
          const first = reason ? saidFirst.get(key) : undefined;
          if (reason && !first) saidFirst.set(key, e.cell);
          const why = !reason ? '' : first ? ` (the same reason as ${first})` : `: ${reason}`;
          const problem = e.status !== 'passed' && e.status !== 'skipped';
          if (problem) problems++;
          if (!collapsed || problem) say(`  ${statusPaint[e.status](marks[e.status])} [${done}/${total}] ${e.cell} ${e.status} in ${e.durationMs} ms${why}`);
          if (collapsed && done >= nextMilestone) {
            say(c.dim(`  [${done}/${total}] cells done in ${clock(Date.now() - startedAt)}, ${problems} with a problem`));
            nextMilestone = Math.min(total, nextMilestone + Math.ceil(total / 10));
            if (done >= total) nextMilestone = Infinity;
          }
          break;
        }
        case 'run-end':
          stopProgress();
          break;
        default:
          break;
      }
    },
    onEnd(summary: RunSummary, context: RunContext) {
      stopProgress();
      // Many targets (COLLAPSE_ABOVE): those with a problem in full, the others counted.
      const many = !options.verbose && summary.targets.length > COLLAPSE_ABOVE;
      const listed = many ? summary.targets.filter(hasProblem) : summary.targets;
      for (const t of listed) {
        const block = targetBlock(t, c);
        if (block.length) {
          say('');
          for (const line of block) say(line);
        }
      }
      const bad = summary.targets.flatMap((t) => t.verdicts.filter((v) => v.status === 'failed' || v.status === 'error'));
      if (bad.length) {
        say('');
        say(c.bold('Expectations not met:'));
        for (const g of groupVerdicts(bad)) {
          if (g.verdicts.length === 1) {
            const v = g.verdicts[0]!;
            say(`  ${c.red(marks[v.status])} ${v.target}: ${v.title} [${v.source}] — ${v.message}`);
            for (const [label, text] of evidenceOf(v)) say(`      ${c.dim(`${label}:`.padEnd(10))} ${text}`);
          } else {
            // Expectations that could not be judged for one reason (an unreachable target): the reason once.
            const titles = g.verdicts.map((v) => `${v.title} [${v.source}]`).join('; ');
            say(`  ${c.red(marks[g.status])} ${g.target}: ${g.verdicts.length} expectations not judged, all for one reason — ${g.reason}`);
            say(`      ${c.dim('which:'.padEnd(10))} ${titles}`);
          }
        }
      }
      say('');
      say(table(listed));
      if (listed.length < summary.targets.length) {
        const fine = summary.targets.length - listed.length;
        say(`${listed.length ? '' : '(no target with a problem)\n'}${fine} more target${fine === 1 ? '' : 's'} with no problem (every cell passed or skipped, no expectation failed) not listed; --verbose lists them`);
      }
      if (summary.nothingMeasured) {
        say('');
        const judged = summary.counts.verdicts.passed + summary.counts.verdicts.failed;
        // Said when expectations were judged all the same: sysinfo reports the OS and the environment without a driver.
        const facts = judged ? ` (sysinfo still reported what it sees without one: the ${judged} expectation${judged === 1 ? '' : 's'} judged are on those facts)` : '';
        // "No driver" only when no target was skipped for what it is (a WSL 1 distribution).
        say(
          c.yellow(
            summary.targets.some((t) => t.skipped)
              ? `Nothing was measured: every probe was skipped${facts}.`
              : `No usable NVIDIA driver was found${summary.targets.length > 1 ? ' on any target' : ''}: nothing was measured, and every probe was skipped${facts}.`,
          ),
        );
        for (const r of skipReasons(summary.targets).slice(0, 3)) say(`  reason${r.targets > 1 ? ` (${r.targets} targets)` : ''}: ${r.reason}`);
      }
      const notRun = summary.counts.cells['not-run'] ?? 0;
      if (notRun > 0) {
        say('');
        say(c.magenta(`${notRun} cell${notRun === 1 ? '' : 's'} not run: the run was interrupted`));
      }
      if (summary.interrupted) say(c.magenta(`${notRun > 0 ? '' : '\n'}The run was interrupted; the results above cover what finished.`));
      const v = summary.counts.verdicts;
      say('');
      say(`Expectations: ${v.passed} passed, ${v.failed} failed, ${v.skipped} skipped, ${v.error} errors.`);
      // The log path once: with failures, it is where every sample and reading behind them is.
      say(`Events: ${summary.eventsFile ?? context.eventsFile}${bad.length ? ' (every sample and reading behind these verdicts)' : ''}`);
      for (const u of context.unwritten ?? []) say(c.red(`Not written: ${u}`));
      const code = shownExitCode(summary, context);
      const exit = `Exit status: ${code}${code === 4 ? ' (--strict: nothing was measured)' : code === 5 ? ' (--fail-on-change: behaviour changed)' : code === 6 ? ' (an output could not be written)' : ''}`;
      say(code === 0 ? exit : c.bold(exit));
    },
  };
}

// ---------------------------------------------------------------------------------------------
// What the driver does, per target

/** The block for one target: the system in brief, then per probe its facts and key metrics. */
function targetBlock(t: TargetResult, c: Colors): string[] {
  const planned = t.cells.filter((x) => x.planned && x.status !== 'not-run');
  const system = systemLines(t);
  if (!planned.length && !system.length && !t.error) return [];
  const rows: (string | [string, string])[] = [];
  if (system.length) {
    const spec = probeSpec('sysinfo');
    rows.push(`  ${c.bold('sysinfo')}${spec ? c.dim(`  ${spec.title}`) : ''}`);
    for (const [label, text] of system) rows.push([`  ${label}`, text]);
  }
  for (const cell of planned) {
    if (cell.probe === 'sysinfo') continue;
    const facts = cell.records.filter((r): r is Extract<ProbeRecord, { type: 'fact' }> => r.type === 'fact');
    // A probe that did not pass may have printed metrics with no value before it stopped.
    const metrics = cell.status === 'passed' ? (keyMetrics[cell.probe]?.(cell) ?? []) : [];
    const metricVerdicts = t.verdicts.filter((v) => v.expectation.metric?.startsWith(`${cell.probe}.`) && v.status !== 'skipped');
    if (!facts.length && !metrics.length) continue;
    const spec = probeSpec(cell.probe);
    rows.push(`  ${c.bold(cell.probe)}${spec ? c.dim(`  ${spec.title}${spec.claims.length ? ` (${spec.claims.join(' ')})` : ''}`) : ''}`);
    for (const f of facts) {
      const name = `${cell.probe}.${f.name}`;
      rows.push([`  ${name}`, `${c.bold(factValue(f.value))}${f.value === null && f.reason ? c.dim(` (${f.reason})`) : ''}${verdictMark(t, name, c)}`]);
    }
    for (const [label, text] of metrics) rows.push([`  ${label}`, text]);
    for (const v of metricVerdicts) rows.push(`      ${v.status === 'passed' ? c.green('✓') : c.red('✗')} ${c.dim(`expected ${v.title}`)}`);
  }
  // The cells that did not pass, one line per outcome and reason.
  const groups = new Map<string, { status: CellEndEvent['status']; why: string; probes: string[] }>();
  for (const cell of planned.filter((x) => x.status !== 'passed')) {
    const why = cellWhy(cell);
    const key = `${cell.status}\n${why}`;
    const g = groups.get(key) ?? { status: cell.status, why, probes: [] };
    g.probes.push(cell.probe);
    groups.set(key, g);
  }
  for (const g of groups.values()) {
    const paint = g.status === 'skipped' ? c.yellow : g.status === 'cancelled' ? c.magenta : c.red;
    const count = g.probes.length > 1 ? ` (${g.probes.length})` : '';
    rows.push(`  ${paint(`${g.status}${count}:`)} ${g.probes.join(', ')}${g.why ? c.dim(` — ${g.why}`) : ''}`);
  }
  if (t.error && !planned.some((x) => x.errorCode === t.error!.code)) rows.push(`  ${c.red('target error:')} ${t.error.code}: ${t.error.message}`);
  const width = Math.min(44, Math.max(0, ...rows.map((r) => (typeof r === 'string' ? 0 : r[0].length))));
  return [
    c.bold(`${t.name}: what the driver does`),
    ...rows.map((r) => (typeof r === 'string' ? r : `  ${r[0].padEnd(width)}  ${r[1]}`)),
  ];
}

/** Why a cell did not pass: its reason, led by its error code when the reason does not name it. */
function cellWhy(cell: CellEndEvent): string {
  return `${cell.errorCode && !(cell.reason ?? '').includes(cell.errorCode) ? `${cell.errorCode}: ` : ''}${cell.reason ?? ''}`;
}

/**
 * Why nothing was measured: each reason once, with how many targets gave it. A probe skipped
 * because it is for another platform (windows-registry on Linux) is no such reason.
 */
export function skipReasons(targets: TargetResult[]): { reason: string; targets: number }[] {
  const count = new Map<string, Set<string>>();
  for (const t of targets) {
    const platform = t.ready?.platform ?? (typeof t.sysinfo.os_family === 'string' ? t.sysinfo.os_family : undefined);
    for (const cell of t.cells.filter((x) => x.planned && x.status === 'skipped')) {
      const platforms = probeSpec(cell.probe)?.platforms;
      if (platform && platforms && !platforms.includes(platform as never)) continue;
      const reason = cell.reason ?? '';
      count.set(reason, (count.get(reason) ?? new Set()).add(t.name));
    }
  }
  return [...count].map(([reason, names]) => ({ reason, targets: names.size }));
}

/**
 * Failed and unjudged expectations, those of one target that failed for one reason (its probes
 * all failed the same way, the target unreachable) together: the reason is said once.
 */
function groupVerdicts(bad: Verdict[]): { target: string; status: Verdict['status']; reason: string; verdicts: Verdict[] }[] {
  const groups = new Map<string, { target: string; status: Verdict['status']; reason: string; verdicts: Verdict[] }>();
  for (const v of bad) {
    // "probe X failed: CODE: ..." differs only by its probe when the target is the cause.
    const reason = v.status === 'error' ? v.message.replace(/^probe \S+ failed: /, '') : v.message;
    const key = v.status === 'error' ? `${v.target}\n${reason}` : `${v.target}\n${v.title}\n${groups.size}`;
    const g = groups.get(key) ?? { target: v.target, status: v.status, reason, verdicts: [] };
    g.verdicts.push(v);
    groups.set(key, g);
  }
  return [...groups.values()];
}

function factValue(v: Scalar): string {
  return v === null ? 'null' : String(v);
}

/** "  ✓" or "  ✗ expected true" where an expectation of this run judged the fact. */
function verdictMark(t: TargetResult, qualified: string, c: Colors): string {
  const v = t.verdicts.find((x) => x.expectation.fact === qualified && (x.status === 'passed' || x.status === 'failed'));
  if (!v) return '';
  return v.status === 'passed' ? `  ${c.green('✓')}` : `  ${c.red(`✗ expected ${JSON.stringify(v.expectation.equals ?? null)}`)}`;
}

/** The sysinfo facts in a few lines: environment, system, driver and CUDA, GPU, driver model. */
function systemLines(t: TargetResult): [string, string][] {
  const records = new Map<string, { value: Scalar; source?: string; reason?: string }>();
  for (const cell of t.cells.filter((x) => x.probe === 'sysinfo')) {
    for (const r of cell.records) if (r.type === 'sysinfo' && !records.has(r.name)) records.set(r.name, r);
  }
  if (!records.size) return [];
  const val = (n: string): Scalar | undefined => records.get(n)?.value;
  const s = (n: string): string | undefined => {
    const v = val(n);
    return v === null || v === undefined ? undefined : String(v);
  };
  const lines: [string, string][] = [];
  const env = s('environment');
  if (env) lines.push(['environment', `${env}${records.get('environment')?.source ? ` (${records.get('environment')!.source})` : ''}${t.declaredEnvironment !== 'auto' ? `, declared ${t.declaredEnvironment}` : ''}`]);
  const os = [
    s('os_name') ?? s('os_family'),
    s('os_build') && `build ${s('os_build')}`,
    s('kernel') && `kernel ${s('kernel')}`,
    s('arch'),
    val('wsl_version') != null && `WSL ${s('wsl_version')}`,
    s('wine_version') && `Wine ${s('wine_version')}`,
  ].filter(Boolean);
  if (os.length) lines.push(['system', os.join(', ')]);
  const container = s('container');
  if (container || records.has('container')) {
    const runtime = s('container_runtime');
    lines.push(['container', container ? `${container}${runtime ? `, GPU from the ${runtime} runtime` : records.get('container_runtime')?.reason ? ` (${records.get('container_runtime')!.reason})` : ''}` : 'none']);
  }
  const driver = s('driver_version');
  const cuda = s('cuda_driver_version');
  const runtime = s('cudart_version');
  if (driver || cuda || records.has('driver_found')) {
    const parts = val('driver_found') === false && !driver ? ['none found'] : [driver ?? (records.get('driver_version')?.reason ? `version unknown (${records.get('driver_version')!.reason})` : 'version unknown')];
    if (cuda) parts.push(`CUDA ${cuda}`);
    if (runtime) parts.push(`runtime ${runtime}${s('cudart_library') ? ` (${s('cudart_library')})` : ''}`);
    else if (val('cudart_found') === false) parts.push('no CUDA runtime library');
    lines.push(['driver', parts.join(', ')]);
  }
  const gpu = s('gpu_name');
  if (gpu) {
    const extra = [s('compute_capability') && `compute ${s('compute_capability')}`, s('multiprocessors') && `${s('multiprocessors')} SMs`];
    const count = val('device_count');
    if (typeof count === 'number' && count > 1) extra.push(`device ${s('gpu_index') ?? 0} of ${count}`);
    lines.push(['GPU', [gpu, ...extra].filter(Boolean).join(', ')]);
  }
  const mem = val('memory_total_bytes');
  if (typeof mem === 'number') lines.push(['memory', formatValue(mem, 'bytes')]);
  if (typeof val('pcie_gen_current') === 'number' || typeof val('pcie_gen_max') === 'number') {
    lines.push(['PCIe', `gen${s('pcie_gen_current') ?? '?'} x${s('pcie_width_current') ?? '?'} now, gen${s('pcie_gen_max') ?? '?'} x${s('pcie_width_max') ?? '?'} max`]);
  }
  if (records.has('driver_model') || records.has('tcc_driver')) {
    const model = records.get('driver_model');
    const parts = [model?.value != null ? String(model.value) : model ? `null${model.reason ? ` (${model.reason})` : ''}` : undefined];
    if (s('driver_model_pending') && s('driver_model_pending') !== s('driver_model')) parts.push(`${s('driver_model_pending')} after reboot`);
    if (typeof val('tcc_driver') === 'boolean') parts.push(`TCC ${val('tcc_driver') ? 'on' : 'off'}`);
    // Whether the hardware scheduler runs; else what the registry asks for (older records name that hags).
    const enabled = val('hags_enabled');
    const setting = records.has('hags_setting') ? val('hags_setting') : val('hags');
    if (typeof enabled === 'boolean') parts.push(`HAGS ${enabled ? 'on' : 'off'}${typeof setting === 'boolean' && setting !== enabled ? ` (setting ${setting ? 'on' : 'off'} after reboot)` : ''}`);
    else if (typeof setting === 'boolean') parts.push(`HAGS setting ${setting ? 'on' : 'off'}`);
    lines.push(['driver model', parts.filter(Boolean).join(', ')]);
  }
  return lines;
}

// ---------------------------------------------------------------------------------------------
// Key metrics, per probe: a few numbers that say what the facts rest on.

type Line = [label: string, text: string];

function metricsOf(cell: CellEndEvent, name: string, where: Record<string, Scalar> = {}): MetricRecord[] {
  return cell.records.filter(
    (r): r is MetricRecord => r.type === 'metric' && r.name === name && Object.entries(where).every(([k, v]) => r.attrs?.[k] === v),
  );
}

function fmt(m: MetricRecord | undefined): string {
  return m ? formatValue(m.value, m.unit) : '—';
}

function signed(m: MetricRecord | undefined): string {
  return m && m.value !== null && m.value >= 0 ? `+${fmt(m)}` : fmt(m);
}

function num(v: Scalar | undefined): number {
  return typeof v === 'number' ? v : -Infinity;
}

/** The largest value of a numeric attribute among records. */
function largest(ms: MetricRecord[], attr: string): number | undefined {
  const sizes = ms.map((m) => m.attrs?.[attr]).filter((v): v is number => typeof v === 'number');
  return sizes.length ? Math.max(...sizes) : undefined;
}

function factEvidence(cell: CellEndEvent, name: string): Record<string, unknown> | undefined {
  const r = cell.records.find((x) => x.type === 'fact' && x.name === name);
  return r && r.type === 'fact' ? r.evidence : undefined;
}

function mean(values: (number | null)[]): number | null {
  const v = values.filter((x): x is number => x !== null);
  return v.length ? v.reduce((a, b) => a + b, 0) / v.length : null;
}

const keyMetrics: Record<string, (cell: CellEndEvent) => Line[]> = {
  'pinned-vram': (cell) => {
    const lines: Line[] = [];
    const perGib = metricsOf(cell, 'device_growth_per_gib_bytes');
    if (perGib.length) {
      const sources = [...new Set(perGib.map((m) => m.attrs?.source))];
      const one = sources.length === 1 && sources[0];
      const part = (m: MetricRecord) =>
        `${fmt(m)} ${m.attrs?.kind === 'pinned' || m.attrs?.kind === undefined ? (m.attrs?.api ?? '') : `${m.attrs.kind}${m.attrs?.api === 'driver' ? '' : ` (${m.attrs?.api})`}`}${one ? '' : ` on ${m.attrs?.source}`}`.trim();
      lines.push(['device growth per GiB pinned', `${perGib.map(part).join(', ')}${one ? ` (on ${one}, the deciding source)` : ''}`]);
    }
    // The largest size, driver API: what pinning did to the deciding source and to the host,
    // beside the cuMemAlloc control of the same size.
    const pinned = metricsOf(cell, 'device_growth_bytes', { kind: 'pinned', api: 'driver' });
    const size = largest(pinned, 'size_bytes');
    const source = perGib.find((m) => m.attrs?.api === 'driver')?.attrs?.source ?? factEvidence(cell, 'counts_as_vram')?.source;
    if (size !== undefined && typeof source === 'string') {
      const at = { size_bytes: size, source };
      const dev = metricsOf(cell, 'device_growth_bytes', { ...at, kind: 'pinned', api: 'driver' })[0];
      const host = metricsOf(cell, 'host_growth_bytes', { size_bytes: size, kind: 'pinned', api: 'driver' })[0];
      const control = metricsOf(cell, 'device_growth_bytes', { ...at, kind: 'device' })[0];
      lines.push([
        `${formatValue(size, 'bytes')} pinned (driver API)`,
        `device ${signed(dev)}, host ${signed(host)}${control ? `; ${formatValue(size, 'bytes')} of cuMemAlloc: device ${signed(control)}` : ''} (${source})`,
      ]);
    }
    return lines;
  },
  'pinned-release': (cell) => {
    const lines: Line[] = [];
    const byApi = (ms: MetricRecord[], f: (m: MetricRecord) => string) => ms.map((m) => `${f(m)}${m.attrs?.api ? ` ${m.attrs.api}` : ''}`).join(', ');
    const delay = metricsOf(cell, 'release_delay_s');
    if (delay.length) lines.push(['returned after free', byApi(delay, (m) => (m.value === null ? `not within the waits${m.reason ? ` (${m.reason})` : ''}` : `in ${fmt(m)}`))]);
    const exit = metricsOf(cell, 'exit_release_delay_s');
    if (exit.length) lines.push(['settled after exit', byApi(exit, (m) => `in ${fmt(m)}`)]);
    // The last reading after free, per API.
    const retained = metricsOf(cell, 'retained_after_free_bytes');
    const last = [...new Set(retained.map((m) => m.attrs?.api))].map((api) => retained.filter((m) => m.attrs?.api === api).sort((a, b) => num(b.attrs?.wait_s) - num(a.attrs?.wait_s))[0]!);
    if (last.length) lines.push(['still held after free', byApi(last, (m) => `${fmt(m)}${typeof m.attrs?.wait_s === 'number' ? ` at ${m.attrs.wait_s} s` : ''}`)]);
    return lines;
  },
  'multi-process-pinned': (cell) => {
    const growth = metricsOf(cell, 'device_growth_bytes');
    if (!growth.length) return [];
    const source = factEvidence(cell, 'vram_growth')?.source;
    const dev = growth.find((m) => m.attrs?.source === source) ?? growth[0]!;
    const system = metricsOf(cell, 'system_growth_bytes')[0];
    const processes = dev.attrs?.processes;
    return [[`${processes ?? 'all'} processes pinned`, `device ${signed(dev)} (${dev.attrs?.source}), system memory ${signed(system)}`]];
  },
  'pinned-ceiling': (cell) => {
    const lines: Line[] = [];
    const levels = metricsOf(cell, 'ceiling_bytes').filter((m) => typeof m.attrs?.prefill_percent === 'number');
    if (levels.length) {
      const stops = [...new Set(levels.map((m) => m.attrs?.stopped_by))];
      const part = (m: MetricRecord) => `${fmt(m)} at ${m.attrs?.prefill_percent} %${stops.length > 1 ? ` (${m.attrs?.stopped_by})` : ''}`;
      lines.push(['ceiling by VRAM pre-fill', `${levels.map(part).join(', ')}${stops.length === 1 && stops[0] ? ` (stopped by ${stops[0]})` : ''}`]);
    }
    const variant = (v: string) => metricsOf(cell, 'chunk_alloc_ms', { variant: v });
    const [reset, noReset] = [variant('reset'), variant('no-reset')];
    if (reset.length && noReset.length) {
      const ceiling = (v: string) => formatValue(mean(metricsOf(cell, 'ceiling_bytes', { variant: v }).map((m) => m.value)), 'bytes');
      lines.push([
        'with / without cudaDeviceReset',
        `${ceiling('reset')} / ${ceiling('no-reset')} pinned, ${formatValue(mean(reset.map((m) => m.value)), 'ms')} / ${formatValue(mean(noReset.map((m) => m.value)), 'ms')} per chunk`,
      ]);
    }
    return lines;
  },
  'transfer-bandwidth': (cell) => {
    const lines: Line[] = [];
    const bw = metricsOf(cell, 'bandwidth_gbps');
    const size = largest(bw, 'size_bytes');
    if (size !== undefined) {
      const at = formatValue(size, 'bytes');
      const dirs = (name: string, where: Record<string, Scalar>) =>
        ['h2d', 'd2h'].flatMap((d) => metricsOf(cell, name, { ...where, direction: d, size_bytes: size }).map((m) => `${fmt(m)} ${d}`)).join(', ');
      lines.push([`pinned at ${at}`, dirs('bandwidth_gbps', { memory: 'pinned' })]);
      lines.push([`pageable at ${at}`, dirs('bandwidth_gbps', { memory: 'pageable' })]);
      const ratio = dirs('pageable_pinned_ratio', {});
      if (ratio) lines.push([`pageable/pinned at ${at}`, ratio]);
    }
    const link = metricsOf(cell, 'pcie_theoretical_gbps')[0];
    if (link) {
      const fractions = ['h2d', 'd2h'].flatMap((d) => metricsOf(cell, 'pinned_fraction_of_link', { direction: d }).map((m) => `${m.value === null ? '—' : formatValue(m.value * 100, 'percent')} ${d}`));
      const what = typeof link.attrs?.gen === 'number' ? `gen${link.attrs.gen} x${link.attrs.width}, ` : '';
      lines.push(['PCIe link', `${what}${fmt(link)}${fractions.length ? `; best pinned reaches ${fractions.join(', ')}` : ''}`]);
    }
    return lines;
  },
  'event-timing': (cell) => {
    const lines: Line[] = [];
    const res = metricsOf(cell, 'resolution_us')[0];
    if (res) {
      const distinct = metricsOf(cell, 'distinct_values')[0];
      const host = metricsOf(cell, 'host_clock_resolution_us')[0];
      const extra = [distinct && `${distinct.value} distinct values`, host && `host clock ${fmt(host)}`].filter(Boolean);
      lines.push(['resolution', `${fmt(res)}${extra.length ? ` (${extra.join(', ')})` : ''}`]);
    }
    const elapsed = metricsOf(cell, 'elapsed_us').sort((a, b) => num(a.attrs?.target_us) - num(b.attrs?.target_us))[0];
    if (elapsed && typeof elapsed.attrs?.target_us === 'number') {
      const host = metricsOf(cell, 'host_elapsed_us', { target_us: elapsed.attrs.target_us })[0];
      lines.push([`${elapsed.attrs.target_us} us spin timed`, `${fmt(elapsed)} by events${host ? `, ${fmt(host)} by the host clock` : ''}`]);
    }
    return lines;
  },
  'sync-latency': (cell) => {
    const [p50, p99, avg, min] = ['p50_us', 'p99_us', 'mean_us', 'min_us'].map((n) => metricsOf(cell, n)[0]);
    if (!p50 && !p99) return [];
    const iterations = p50?.attrs?.iterations;
    return [['launch + synchronize', `p50 ${fmt(p50)}, p99 ${fmt(p99)} (mean ${fmt(avg)}, min ${fmt(min)}${iterations ? `; ${iterations} iterations` : ''})`]];
  },
  'stream-priority': (cell) => {
    const lines: Line[] = [];
    const [prio, equal] = ['priority', 'equal'].map((mode) => metricsOf(cell, 'high_done_ratio', { mode })[0]);
    if (prio || equal) lines.push(['short kernel done at', `${fmt(prio)} of the long kernel's time with priorities, ${fmt(equal)} at equal priority`]);
    const [least, greatest] = ['priority_least', 'priority_greatest'].map((n) => metricsOf(cell, n)[0]);
    if (least && greatest) lines.push(['priority range', `${least.value} (least) to ${greatest.value} (greatest)`]);
    return lines;
  },
  'cuda-graph': (cell) => {
    const [graph, plain, speedup] = ['graph_per_kernel_us', 'plain_per_kernel_us', 'graph_speedup'].map((n) => metricsOf(cell, n)[0]);
    if (!graph && !plain) return [];
    const kernels = graph?.attrs?.kernels;
    return [['launch per kernel', `${fmt(graph)} in a graph, ${fmt(plain)} one by one${speedup?.value != null ? ` (${fmt(speedup)}x${kernels ? `, ${kernels} kernels` : ''})` : ''}`]];
  },
  'managed-memory': (cell) => {
    const [touch, fill, back] = ['cpu_first_touch_ms', 'gpu_fill_ms', 'cpu_read_back_ms'].map((n) => metricsOf(cell, n)[0]);
    if (!touch && !fill && !back) return [];
    const size = [touch, fill, back].find((m) => typeof m?.attrs?.size_bytes === 'number')?.attrs?.size_bytes as number | undefined;
    return [[`round trip${size ? ` of ${formatValue(size, 'bytes')}` : ''}`, `CPU first touch ${fmt(touch)}, GPU fill ${fmt(fill)}, CPU read back ${fmt(back)}`]];
  },
  'cuda-log': (cell) => {
    const [pin, err] = ['lines_pin_only', 'lines_with_error'].map((n) => metricsOf(cell, n)[0]);
    if (!pin && !err) return [];
    return [['lines logged', `${pin?.value ?? '—'} by a successful pin, ${err?.value ?? '—'} with a deliberate error`]];
  },
  'windows-registry': (cell) => {
    const values = cell.records.filter((r): r is MetricRecord => r.type === 'metric' && r.name.startsWith('registry_') && r.value !== null);
    return values.length ? [['GraphicsDrivers values', values.map((m) => `${m.name.slice('registry_'.length)} ${m.value}`).join(', ')]] : [];
  },
  'alloc-ceiling': (cell) =>
    ['driver', 'runtime', 'async'].flatMap((api): Line[] => {
      const [free, largest, held] = ['free_vram_bytes', 'largest_single_bytes', 'cumulative_bytes'].map((n) => metricsOf(cell, n, { api })[0]);
      if (!free && !largest && !held) return [];
      return [[`${api} API`, `free at start ${fmt(free)}, largest single ${fmt(largest)}, in chunks ${fmt(held)}${held?.attrs?.stopped_by ? ` (stopped by ${held.attrs.stopped_by})` : ''}`]];
    }),
  'sysmem-fallback': (cell) => {
    const [allocated, free, first, last, shared] = ['allocated_bytes', 'free_vram_bytes', 'first_chunk_write_gbps', 'last_chunk_write_gbps', 'shared_usage_growth_bytes'].map((n) => metricsOf(cell, n)[0]);
    if (!allocated) return [];
    return [
      ['allocated', `${fmt(allocated)} of ${fmt(free)} free${allocated.attrs?.stopped_by ? ` (stopped by ${allocated.attrs.stopped_by})` : ''}, Shared Usage ${signed(shared)}`],
      ['chunk write bandwidth', `first ${fmt(first)}, last ${fmt(last)}`],
    ];
  },
};

// ---------------------------------------------------------------------------------------------
// Failed expectations: the evidence

/**
 * Under a failed expectation: the matrix's why, then for a metric the samples outside the bounds
 * (with the attributes that set them apart) and the range of those within; for a fact what was
 * observed and the probe's evidence, or a sysinfo value's source.
 */
function evidenceOf(v: Verdict): Line[] {
  const lines: Line[] = [];
  if (v.why) lines.push(['why', v.why]);
  const e = v.evidence;
  if (e?.kind === 'metric') {
    const all = [...e.outside, ...e.within];
    // The attributes that tell the samples apart; for a lone sample, those "where" did not fix.
    const varying = varyingAttrs(all);
    const where = Object.keys(v.expectation.where ?? {});
    const keys = varying.length ? varying : Object.keys(all[0]?.attrs ?? {}).filter((k) => !where.includes(k));
    const shown = e.outside.slice(0, 5).map((s) => sampleText(s, keys));
    lines.push(['outside', `${shown.join(', ')}${e.outside.length > shown.length ? ` and ${e.outside.length - shown.length} more` : ''}`]);
    if (e.within.length) lines.push(['within', `${rangeText(e.within)} (${e.within.length} of ${all.length}${keys.length ? `: ${pointsText(e.within, keys)}` : ''})`]);
  } else if (e?.kind === 'fact') {
    lines.push(['observed', v.actual]);
    if (e.summary) lines.push(['evidence', e.summary.length > 240 ? `${e.summary.slice(0, 239)}…` : e.summary]);
    if (e.source) lines.push(['source', e.source]);
  }
  return lines;
}

/** Where the samples were taken: "size 16 MiB, 256 MiB, 1 GiB" for one attribute, else "a 1, b 2; a 3, b 4". */
function pointsText(samples: SampleEvidence[], keys: string[]): string {
  const cut = samples.slice(0, 8);
  const more = samples.length > cut.length ? `, and ${samples.length - cut.length} more` : '';
  if (keys.length === 1) {
    const [key] = keys as [string];
    const texts = cut.map((s) => attrText(key, s.attrs[key]));
    const name = texts[0]!.split(' ')[0]!;
    // "size 16 MiB, 256 MiB": the attribute's name once, when every text starts with it.
    if (texts.every((t) => t.startsWith(`${name} `))) return `${name} ${texts.map((t) => t.slice(name.length + 1)).join(', ')}${more}`;
    return `${texts.join(', ')}${more}`;
  }
  return `${cut.map((s) => attrsText(s.attrs, keys)).join('; ')}${more}`;
}

// ---------------------------------------------------------------------------------------------
// The summary table

/** A target worth listing among many: unreachable, a cell that failed or was cancelled, or an expectation not met. */
function hasProblem(t: TargetResult): boolean {
  return Boolean(t.error) || t.cells.some((x) => x.planned && x.status !== 'passed' && x.status !== 'skipped' && x.status !== 'not-run') || t.verdicts.some((v) => v.status === 'failed' || v.status === 'error');
}

function table(targets: TargetResult[]): string {
  const header = ['target', 'environment', 'driver', 'GPU', 'memory', 'PCIe', 'probes run/skip/err', 'expectations pass/fail/skip/err'];
  const rows = targets.map((t) => {
    const s = t.sysinfo;
    const cells = t.cells.filter((c) => c.planned);
    const count = (st: string) => cells.filter((c) => c.status === st).length;
    const vc = (st: string) => t.verdicts.filter((v) => v.status === st).length;
    const env = t.detectedEnvironment ?? 'unknown';
    return [
      t.name,
      t.declaredEnvironment === 'auto' ? env : `${t.declaredEnvironment} (detected ${env})`,
      str(s.driver_version) ?? (s.driver_found === false ? 'none found' : '—'),
      str(s.gpu_name) ?? '—',
      typeof s.memory_total_bytes === 'number' ? formatValue(s.memory_total_bytes, 'bytes') : '—',
      typeof s.pcie_gen_max === 'number' ? `gen${s.pcie_gen_current ?? '?'}/${s.pcie_gen_max} x${s.pcie_width_current ?? '?'}` : '—',
      `${count('passed')}/${count('skipped')}/${count('error') + count('cancelled')}`,
      `${vc('passed')}/${vc('failed')}/${vc('skipped')}/${vc('error')}`,
    ];
  });
  return formatTable(header, rows);
}

function str(v: unknown): string | undefined {
  return typeof v === 'string' ? v : undefined;
}

export function formatTable(header: string[], rows: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (r: string[]) => r.map((c, i) => c.padEnd(widths[i]!)).join('  ').trimEnd();
  return [line(header), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.map(line)].join('\n');
}

// ---------------------------------------------------------------------------------------------

/** 75 s -> "1:15"; an hour and more -> "1:02:03". */
function clock(ms: number): string {
  const s = Math.max(0, Math.floor(ms / 1000));
  const [h, m, sec] = [Math.floor(s / 3600), Math.floor((s % 3600) / 60), s % 60];
  const two = (n: number) => String(n).padStart(2, '0');
  return h ? `${h}:${two(m)}:${two(sec)}` : `${m}:${two(sec)}`;
}

/** Cuts a line to a terminal's width, so that it never wraps (a wrapped line cannot be rewritten). */
function fit(text: string, width: number): string {
  const chars = [...text];
  return chars.length <= width ? text : `${chars.slice(0, Math.max(0, width - 1)).join('')}…`;
}
