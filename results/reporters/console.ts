/**
 * The console: a line per target and per probe while the run goes, and at the end a summary
 * table, the expectations that did not pass, and where the results were written.
 */
import { formatValue } from '../../core/units.ts';
import type { RunEvent } from '../../events/events.ts';
import type { Reporter, RunContext } from '../reporter.ts';
import { exitCodeOf, type RunSummary, type TargetResult } from '../verdicts.ts';

export interface ConsoleOptions {
  out?: { write(text: string): unknown };
  color?: boolean;
  /** Only the summary at the end, no line per cell. */
  quiet?: boolean;
}

const marks = { passed: '✓', skipped: '-', error: '✗', cancelled: '!', 'not-run': '·', failed: '✗' } as const;

export function consoleReporter(options: ConsoleOptions = {}): Reporter {
  const out = options.out ?? process.stdout;
  const color = options.color ?? Boolean(process.stdout.isTTY && !process.env.NO_COLOR);
  const paint = (code: number, text: string) => (color ? `\u001b[${code}m${text}\u001b[0m` : text);
  const statusColor = { passed: 32, skipped: 33, error: 31, cancelled: 35, 'not-run': 35, failed: 31 } as const;
  const say = (line: string) => out.write(`${line}\n`);
  let total = 0;
  let done = 0;
  return {
    name: 'console',
    onEvent(e: RunEvent) {
      if (options.quiet) return;
      switch (e.type) {
        case 'run-start':
          total = e.cells.length;
          say(`cudamatrix ${e.version}: run ${e.runId}${e.shard ? ` (shard ${e.shard.index}/${e.shard.total})` : ''}, ${e.cells.length} cell${e.cells.length === 1 ? '' : 's'} from ${e.matrix.file}`);
          break;
        case 'target-start':
          say(`▶ ${e.target} (${e.environment}, via ${e.transport.join(' → ')})`);
          break;
        case 'target-ready':
          say(`  reached ${e.session} (${e.platform}/${e.arch}), cudaprobe ${e.probe.hash}${e.probe.built ? ' (built now)' : ''}`);
          break;
        case 'target-error':
          say(paint(31, `  ✗ ${e.target}: ${e.code}: ${e.message}`));
          break;
        case 'cell-end': {
          if (!e.planned) break;
          done++;
          const why = e.status === 'passed' ? '' : `: ${e.reason ?? ''}`;
          say(`  ${paint(statusColor[e.status], marks[e.status])} [${done}/${total}] ${e.cell} ${e.status} in ${e.durationMs} ms${why}`);
          break;
        }
        default:
          break;
      }
    },
    onEnd(summary: RunSummary, context: RunContext) {
      say('');
      say(table(summary.targets));
      const bad = summary.targets.flatMap((t) => t.verdicts.filter((v) => v.status === 'failed' || v.status === 'error'));
      if (bad.length) {
        say('');
        say('Expectations not met:');
        for (const v of bad) say(`  ${paint(31, marks[v.status])} ${v.target}: ${v.title} [${v.source}] — ${v.message}`);
      }
      if (summary.nothingMeasured) {
        const reasons = [...new Set(summary.targets.flatMap((t) => t.cells.filter((c) => c.planned && c.status === 'skipped').map((c) => c.reason ?? '')))];
        say('');
        say(paint(33, `No usable NVIDIA driver was found${summary.targets.length > 1 ? ' on any target' : ''}: nothing was measured, and every probe was skipped.`));
        for (const r of reasons.slice(0, 3)) say(`  reason: ${r}`);
      }
      if (summary.interrupted) say(paint(35, '\nThe run was interrupted; the results above cover what finished.'));
      const v = summary.counts.verdicts;
      say('');
      say(`Expectations: ${v.passed} passed, ${v.failed} failed, ${v.skipped} skipped, ${v.error} errors.`);
      say(`Events: ${context.eventsFile}`);
      const code = exitCodeOf(summary, { strict: context.strict });
      say(`Exit status: ${code}${code === 4 ? ' (--strict: nothing was measured)' : ''}`);
    },
  };
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
