/**
 * What the driver does, per target: the system in brief, then per probe its facts (with the
 * verdicts on them) and key numbers, and the cells that did not pass, one line per reason.
 */
import type pc from 'picocolors';
import { formatValue } from '../../core/units.ts';
import type { CellEndEvent } from '../../events/events.ts';
import { pickKeyMetric, probeSpec } from '../../probes/catalogue.ts';
import type { MetricRecord, ProbeRecord, Scalar } from '../../probes/protocol.ts';
import type { TargetResult } from '../../verdicts/verdicts.ts';
import { knownBadLines, systemLines } from './system-lines.ts';

export type Colors = ReturnType<typeof pc.createColors>;
export type Line = [label: string, text: string];

/**
 * A target's error (unreachable, a lost connection; or why it cannot run probes, WSL 1) as its
 * cells carry it: the cells that ended for it say no more than that they did (the reason is said
 * once per target).
 */
export function targetErrorWhy(t: TargetResult): string | undefined {
  const e = t.error ?? t.skipped;
  return e ? `${e.code}: ${e.message}` : undefined;
}

/**
 * The block for one target: the system in brief, then per probe its facts and key metrics.
 * `errorSaid`: the target's error was printed as it came (the live log), so the block only
 * refers to it; otherwise (--quiet) the block says it, once.
 */
export function targetBlock(t: TargetResult, c: Colors, options: { errorSaid?: boolean } = {}): string[] {
  const planned = t.cells.filter((x) => x.planned && x.status !== 'not-run');
  const system = systemLines(t);
  if (!planned.length && !system.length && !t.error) return [];
  const rows: (string | [string, string])[] = [];
  if (system.length) {
    const spec = probeSpec('sysinfo');
    rows.push(`  ${c.bold('sysinfo')}${spec ? c.dim(`  ${spec.title}`) : ''}`);
    for (const [label, text] of system) rows.push([`  ${label}`, text]);
    for (const line of knownBadLines(t)) rows.push(`    ${c.yellow('!')} ${line}`);
  }
  const platform = t.ready?.platform;
  for (const cell of planned) {
    if (cell.probe === 'sysinfo') continue;
    const spec = probeSpec(cell.probe);
    const all = cell.records.filter((r): r is Extract<ProbeRecord, { type: 'fact' }> => r.type === 'fact');
    // Facts of another platform (the watchdog's Windows TDR values on Linux) are null by design:
    // said once, and only for a probe that ran (a skipped one is said in the skipped lines).
    const otherPlatform = all.filter(
      (f) => f.value === null && notOnPlatform(spec?.facts.find((s) => s.name === f.name)?.platforms, platform),
    );
    const facts = all.filter((f) => !otherPlatform.includes(f));
    const notApplicable: Line[] =
      otherPlatform.length && cell.status === 'passed'
        ? [
            [
              `${cell.probe}.${otherPlatform.map((f) => f.name).join(', ')}`,
              `not applicable on ${platform} (${platformWords(spec!.facts.find((s) => s.name === otherPlatform[0]!.name)!.platforms!)} only)`,
            ],
          ]
        : [];
    // A probe that did not pass may have printed metrics with no value before it stopped.
    const metrics = cell.status === 'passed' ? summaryLines(cell) : [];
    const metricVerdicts = t.verdicts.filter((v) => v.expectation.metric?.startsWith(`${cell.probe}.`) && v.status !== 'skipped');
    if (!facts.length && !metrics.length && !notApplicable.length) continue;
    rows.push(`  ${c.bold(cell.probe)}${spec ? c.dim(`  ${spec.title}${spec.claims.length ? ` (${spec.claims.join(' ')})` : ''}`) : ''}`);
    for (const f of facts) {
      const name = `${cell.probe}.${f.name}`;
      rows.push([
        `  ${name}`,
        `${c.bold(factValue(f.value))}${f.value === null && f.reason ? c.dim(` (${f.reason})`) : ''}${verdictMark(t, name, c)}`,
      ]);
    }
    for (const [label, text] of [...notApplicable, ...metrics]) rows.push([`  ${label}`, text]);
    for (const v of metricVerdicts) rows.push(`      ${v.status === 'passed' ? c.green('✓') : c.red('✗')} ${c.dim(`expected ${v.title}`)}`);
  }
  // The cells that did not pass, one line per outcome and reason. sysinfo skipped for want of a
  // driver still ran and reported the system (the lines above): said so, not listed as skipped.
  const systemOnly = planned.find((x) => x.probe === 'sysinfo' && x.status === 'skipped' && x.records.some((r) => r.type === 'sysinfo'));
  if (systemOnly) {
    const why = cellWhy(systemOnly);
    rows.push(`  ${c.yellow('sysinfo ran:')} the system only; its GPU facts are skipped${why ? c.dim(` — ${why}`) : ''}`);
  }
  const groups = new Map<string, { status: CellEndEvent['status']; why: string; probes: string[] }>();
  for (const cell of planned.filter((x) => x.status !== 'passed' && x !== systemOnly)) {
    const why = cellWhy(cell);
    const key = `${cell.status}\n${why}`;
    const g = groups.get(key) ?? { status: cell.status, why, probes: [] };
    g.probes.push(cell.probe);
    groups.set(key, g);
  }
  const targetWhy = targetErrorWhy(t);
  for (const g of groups.values()) {
    const paint = g.status === 'skipped' ? c.yellow : g.status === 'cancelled' ? c.magenta : c.red;
    const count = g.probes.length > 1 ? ` (${g.probes.length})` : '';
    if (g.why === targetWhy) {
      // The cells the target's error kept from running: counted, the reason once.
      const which = g.probes.length === planned.length ? 'every probe' : g.probes.join(', ');
      const code = (t.error ?? t.skipped)!.code;
      const why = options.errorSaid ? `not run: ${t.name}'s ${code} above` : `not run: ${targetWhy}`;
      rows.push(`  ${paint(`${g.status}${count}:`)} ${which}${c.dim(` — ${why}`)}`);
      continue;
    }
    rows.push(`  ${paint(`${g.status}${count}:`)} ${g.probes.join(', ')}${g.why ? c.dim(` — ${g.why}`) : ''}`);
  }
  if (t.error && !planned.some((x) => x.errorCode === t.error!.code))
    rows.push(`  ${c.red('target error:')} ${options.errorSaid ? `${t.error.code} (above)` : `${t.error.code}: ${t.error.message}`}`);
  const width = Math.min(44, Math.max(0, ...rows.map((r) => (typeof r === 'string' ? 0 : r[0].length))));
  return [c.bold(`${t.name}: what the driver does`), ...rows.map((r) => (typeof r === 'string' ? r : `  ${r[0].padEnd(width)}  ${r[1]}`))];
}

/** A passed cell's key numbers: its probe's summary lines, else its key metrics' values. */
function summaryLines(cell: CellEndEvent): Line[] {
  const spec = probeSpec(cell.probe);
  if (spec?.summary) return spec.summary(cell.records);
  const metrics = cell.records.filter((r): r is MetricRecord => r.type === 'metric');
  return (spec?.keyMetrics ?? []).flatMap((k): Line[] => {
    const m = pickKeyMetric(metrics, k);
    return m ? [[k.label, formatValue(m.value, m.unit)]] : [];
  });
}

/** Why a cell did not pass: its reason, led by its error code when the reason does not name it. */
export function cellWhy(cell: CellEndEvent): string {
  return `${cell.errorCode && !(cell.reason ?? '').includes(cell.errorCode) ? `${cell.errorCode}: ` : ''}${cell.reason ?? ''}`;
}

/** A fact limited to some platforms, on a target of another (known) one. */
function notOnPlatform(platforms: readonly string[] | undefined, platform: string | undefined): boolean {
  return platforms !== undefined && platform !== undefined && !platforms.includes(platform);
}

/** "Windows", "Linux or Windows". */
function platformWords(platforms: readonly string[]): string {
  return platforms.map((p) => p.charAt(0).toUpperCase() + p.slice(1)).join(' or ');
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
