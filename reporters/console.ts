/**
 * The console. While the run goes: a line per target and per finished cell and, on a terminal,
 * one live progress line (elapsed time, cells done, what runs now) rewritten in place. At the end,
 * per target, what the driver does: the system in brief, every fact the probes reported, grouped
 * by probe, with the key metrics beside them; then the expectations that were not met with their
 * evidence, the summary table, the counts, where the events went and the exit status.
 *
 * Colours come from picocolors, switched by NO_COLOR, FORCE_COLOR, CI and whether the console's
 * stream is a terminal; nothing but plain lines is written where the stream is not a terminal.
 * The parts are in console/: the progress line, a target's block (and its sysinfo lines), the
 * expectations not met, the summary table.
 */
import pc from 'picocolors';
import { isNotApplicable } from '../core/errors.ts';
import type { RunEvent } from '../events/events.ts';
import { nodesThatDifferLines } from '../verdicts/fleet-outliers.ts';
import type { SyncReporter, RunContext } from './reporter.ts';
import { judgedNothingWords, shownExitCode, type RunSummary, type Verdict } from '../verdicts/verdicts.ts';
import { evidenceOf, groupVerdicts } from './console/expectations.ts';
import { clock, ProgressLine } from './console/progress.ts';
import { hasProblem, skipReasons, summaryTable } from './console/summary-table.ts';
import { cellWhy, targetBlock, targetErrorWhy } from './console/target-block.ts';

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

const marks = { passed: '✓', skipped: '-', error: '✗', cancelled: '!', 'not-run': '·', failed: '✗' } as const;

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

export function consoleReporter(options: ConsoleOptions = {}): SyncReporter {
  const out: ConsoleOut = options.out ?? process.stdout;
  const env = options.env ?? process.env;
  const colors = pc.createColors(options.color ?? colorEnabled(out, env));
  const statusPaint = {
    passed: colors.green,
    skipped: colors.yellow,
    error: colors.red,
    cancelled: colors.magenta,
    'not-run': colors.magenta,
    failed: colors.red,
  } as const;
  // The live line: only on a real terminal, not in CI, and not under --quiet.
  const live = progressEnabled(out, env) && !options.quiet;
  let startedAt = Date.now();
  let total = 0;
  let done = 0;
  // Seen a cell cancelled or not run: the run was interrupted, and targets that start now run nothing.
  let interrupted = false;
  // Many targets: what went well is counted, not listed (COLLAPSE_ABOVE).
  let collapsed = false;
  let problems = 0;
  let nextMilestone = 0;
  const progress = new ProgressLine(out, colors.dim, () => ({ startedAt, done, total }));
  const say = (line: string): void => {
    progress.clear();
    out.write(`${line}\n`);
  };
  /** The first cell that gave each (target, outcome, reason): later ones name it instead of repeating it. */
  const saidFirst = new Map<string, string>();
  /** Per target, its planned cells not ended yet (to count those a target error ends). */
  const cellsLeft = new Map<string, Set<string>>();
  /**
   * Per target whose error was printed as it came, that error as its cells carry it: those cells
   * get no line of their own (one line counts them), and the end refers to the error above.
   */
  const errorSaid = new Map<string, string>();

  return {
    name: 'console',
    onMessage(text: string) {
      // Notes from the run (a compile, Ctrl-C) go to stderr; the progress line is cleared first.
      progress.clear();
      process.stderr.write(`${text}\n`);
    },
    onEvent(e: RunEvent) {
      if (options.quiet) return;
      switch (e.type) {
        case 'run-start':
          total = e.cells.length;
          for (const cell of e.cells) {
            const target = cell.slice(0, cell.lastIndexOf('/'));
            cellsLeft.set(target, (cellsLeft.get(target) ?? new Set()).add(cell));
          }
          startedAt = Date.now();
          collapsed = !options.verbose && new Set(e.cells.map((cell) => cell.slice(0, cell.lastIndexOf('/')))).size > COLLAPSE_ABOVE;
          nextMilestone = Math.ceil(total / 10);
          say(
            `cudamatrix ${e.version}: run ${e.runId}${e.shard ? ` (shard ${e.shard.index}/${e.shard.total})` : ''}, ${e.cells.length} cell${e.cells.length === 1 ? '' : 's'} from ${e.matrix.file}${e.options.quick ? ' (--quick: small parameters)' : ''}`,
          );
          if (e.shard && e.cells.length === 0)
            say(
              `shard ${e.shard.index}/${e.shard.total} has no cells: shards hold whole hosts, and the matrix's hosts fit in fewer shards`,
            );
          if (collapsed)
            say(
              `${new Set(e.cells.map((cell) => cell.slice(0, cell.lastIndexOf('/')))).size} targets: only problems are listed as they come, and progress at each tenth of the cells (--verbose lists every target and cell)`,
            );
          if (live) progress.start();
          break;
        case 'target-start':
          if (interrupted || collapsed) break;
          say(`${colors.bold('▶')} ${e.target} (${e.environment}, via ${e.transport.join(' → ')})`);
          break;
        case 'target-ready':
          if (collapsed) break;
          say(`  reached ${e.session} (${e.platform}/${e.arch}), cudaprobe ${e.probe.hash}${e.probe.built ? ' (built now)' : ''}`);
          break;
        case 'target-error': {
          // A target that cannot run probes by its nature (WSL 1) is skipped, not failed.
          const skip = isNotApplicable(e.code);
          if (skip) say(colors.yellow(`  ${marks.skipped} ${e.target} skipped: ${e.code}: ${e.message}`));
          else say(colors.red(`  ✗ ${e.target}: ${e.code}: ${e.message}`));
          errorSaid.set(e.target, `${e.code}: ${e.message}`);
          // The cells it keeps from running end at once, each with this reason: one line for them all.
          const left = cellsLeft.get(e.target)?.size ?? 0;
          if (left > 0 && (!collapsed || !skip)) {
            const line = `  ${marks[skip ? 'skipped' : 'error']} [${done + left}/${total}] ${left} cell${left === 1 ? '' : 's'} of ${e.target} not run: the ${skip ? 'reason' : 'error'} above`;
            say(skip ? colors.yellow(line) : colors.red(line));
          }
          break;
        }
        case 'cell-start':
          progress.running.set(e.cell, Date.now());
          break;
        case 'cell-end': {
          progress.running.delete(e.cell);
          if (e.status === 'not-run' || e.status === 'cancelled') interrupted = true;
          // sysinfo's unplanned run and the cells an interruption kept from starting: no line
          // (those are summed up once at the end).
          if (!e.planned) break;
          cellsLeft.get(e.target)?.delete(e.cell);
          if (e.status === 'not-run') break;
          done++;
          const reason = e.status === 'passed' ? '' : cellWhy(e);
          // Ended by its target's error, counted on the line after it.
          const byTargetError = reason !== '' && errorSaid.get(e.target) === reason;
          // A reason is said once per target; the cells after it that end the same way point to it.
          const key = `${e.target}\n${e.status}\n${reason}`;
          const first = reason ? saidFirst.get(key) : undefined;
          if (reason && !first) saidFirst.set(key, e.cell);
          const why = !reason ? '' : first ? ` (the same reason as ${first})` : `: ${reason}`;
          const problem = e.status !== 'passed' && e.status !== 'skipped';
          if (problem) problems++;
          if ((!collapsed || problem) && !byTargetError)
            say(`  ${statusPaint[e.status](marks[e.status])} [${done}/${total}] ${e.cell} ${e.status} in ${e.durationMs} ms${why}`);
          if (collapsed && done >= nextMilestone) {
            say(colors.dim(`  [${done}/${total}] cells done in ${clock(Date.now() - startedAt)}, ${problems} with a problem`));
            nextMilestone = Math.min(total, nextMilestone + Math.ceil(total / 10));
            if (done >= total) nextMilestone = Infinity;
          }
          break;
        }
        case 'run-end':
          progress.stop();
          break;
        default:
          break;
      }
    },
    onEnd(summary: RunSummary, context: RunContext) {
      progress.stop();
      // Many targets (COLLAPSE_ABOVE): those with a problem in full, the others counted.
      const many = !options.verbose && summary.targets.length > COLLAPSE_ABOVE;
      const listed = many ? summary.targets.filter(hasProblem) : summary.targets;
      for (const target of listed) {
        const block = targetBlock(target, colors, { errorSaid: errorSaid.has(target.name) });
        if (block.length) {
          say('');
          for (const line of block) say(line);
        }
      }
      const bad = summary.targets.flatMap((target) =>
        target.verdicts.filter((verdict) => verdict.status === 'failed' || verdict.status === 'error'),
      );
      if (bad.length) {
        say('');
        say(colors.bold('Expectations not met:'));
        const byName = new Map(summary.targets.map((target) => [target.name, target]));
        for (const group of groupVerdicts(bad)) {
          // Not judged because the target failed: its error is said above, in its block.
          const target = byName.get(group.target);
          if (group.status === 'error' && target && group.reason === targetErrorWhy(target)) {
            const what =
              group.verdicts.length === 1
                ? `${group.verdicts[0]!.title} [${group.verdicts[0]!.source}]`
                : `${group.verdicts.length} expectations`;
            say(
              `  ${colors.red(marks.error)} ${group.target}: ${what} not judged: ${group.target}'s ${(target.error ?? target.skipped)!.code} above`,
            );
            continue;
          }
          if (group.verdicts.length === 1) {
            const verdict = group.verdicts[0]!;
            say(`  ${colors.red(marks[verdict.status])} ${verdict.target}: ${verdict.title} [${verdict.source}] — ${verdict.message}`);
            for (const [label, text] of evidenceOf(verdict)) say(`      ${colors.dim(`${label}:`.padEnd(10))} ${text}`);
          } else {
            // Expectations that could not be judged for one reason (an unreachable target): the reason once.
            const titles = group.verdicts.map((verdict) => `${verdict.title} [${verdict.source}]`).join('; ');
            say(
              `  ${colors.red(marks[group.status])} ${group.target}: ${group.verdicts.length} expectations not judged, all for one reason — ${group.reason}`,
            );
            say(`      ${colors.dim('which:'.padEnd(10))} ${titles}`);
          }
        }
      }
      say('');
      say(summaryTable(listed));
      if (listed.length < summary.targets.length) {
        const fine = summary.targets.length - listed.length;
        say(
          `${listed.length ? '' : '(no target with a problem)\n'}${fine} more target${fine === 1 ? '' : 's'} with no problem (every cell passed or skipped, no expectation failed) not listed; --verbose lists them`,
        );
      }
      // A fan-out's nodes that differ from the rest (verdicts/fleet-outliers.ts): the fleet's finding.
      const differ = nodesThatDifferLines(summary);
      if (differ.length) say('');
      for (const line of differ) say(line.startsWith(' ') ? line : colors.yellow(line));
      if (summary.nothingMeasured) {
        say('');
        const judged = summary.counts.verdicts.passed + summary.counts.verdicts.failed;
        // Said when expectations were judged all the same: sysinfo reports the OS and the environment without a driver.
        const facts = judged
          ? ` (sysinfo still reported what it sees without one: the ${judged} expectation${judged === 1 ? '' : 's'} judged are on those facts)`
          : '';
        // "No driver" only when no target was skipped for what it is (a WSL 1 distribution).
        say(
          colors.yellow(
            summary.targets.some((target) => target.skipped)
              ? `Nothing was measured: every probe was skipped${facts}.`
              : `No usable NVIDIA driver was found${summary.targets.length > 1 ? ' on any target' : ''}: nothing was measured, and every probe was skipped${facts}.`,
          ),
        );
        for (const skipReason of skipReasons(summary.targets).slice(0, 3))
          say(`  reason${skipReason.targets > 1 ? ` (${skipReason.targets} targets)` : ''}: ${skipReason.reason}`);
      }
      const notRun = summary.counts.cells['not-run'] ?? 0;
      if (notRun > 0) {
        say('');
        say(colors.magenta(`${notRun} cell${notRun === 1 ? '' : 's'} not run: the run was interrupted`));
      }
      if (summary.interrupted)
        say(colors.magenta(`${notRun > 0 ? '' : '\n'}The run was interrupted; the results above cover what finished.`));
      // A run that judged nothing passes whatever the driver does: said where the counts are read.
      const unjudged = judgedNothingWords(summary);
      if (unjudged) {
        say('');
        say(colors.yellow(unjudged.finding));
        say(`  fix: ${unjudged.fix}`);
      }
      const verdictCounts = summary.counts.verdicts;
      say('');
      say(
        `Expectations: ${verdictCounts.passed} passed, ${verdictCounts.failed} failed, ${verdictCounts.skipped} skipped, ${verdictCounts.error} errors.`,
      );
      // The log path once: with failures, it is where every sample and reading behind them is.
      say(`Events: ${summary.eventsFile ?? context.eventsFile}${bad.length ? ' (every sample and reading behind these verdicts)' : ''}`);
      for (const unwritten of context.unwritten ?? []) say(colors.red(`Not written: ${unwritten}`));
      const code = shownExitCode(summary, context);
      const exit = `Exit status: ${code}${code === 4 ? ' (--strict: nothing was measured)' : code === 5 ? ' (--fail-on-change: behaviour changed)' : code === 6 ? ' (an output could not be written)' : code === 0 && unjudged ? ' (nothing was judged)' : ''}`;
      say(code === 0 ? exit : colors.bold(exit));
    },
  };
}
