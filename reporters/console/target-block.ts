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
export function targetErrorWhy(target: TargetResult): string | undefined {
  const e = target.error ?? target.skipped;
  return e ? `${e.code}: ${e.message}` : undefined;
}

/**
 * The block for one target: the system in brief, then per probe its facts and key metrics.
 * `errorSaid`: the target's error was printed as it came (the live log), so the block only
 * refers to it; otherwise (--quiet) the block says it, once.
 */
export function targetBlock(target: TargetResult, colors: Colors, options: { errorSaid?: boolean } = {}): string[] {
  const planned = target.cells.filter((cell) => cell.planned && cell.status !== 'not-run');
  const system = systemLines(target);
  if (!planned.length && !system.length && !target.error) return [];
  const rows: (string | [string, string])[] = [];
  if (system.length) {
    const spec = probeSpec('sysinfo');
    rows.push(`  ${colors.bold('sysinfo')}${spec ? colors.dim(`  ${spec.title}`) : ''}`);
    for (const [label, text] of system) rows.push([`  ${label}`, text]);
    for (const line of knownBadLines(target)) rows.push(`    ${colors.yellow('!')} ${line}`);
  }
  const platform = target.ready?.platform;
  for (const cell of planned) {
    if (cell.probe === 'sysinfo') continue;
    const spec = probeSpec(cell.probe);
    const all = cell.records.filter((record): record is Extract<ProbeRecord, { type: 'fact' }> => record.type === 'fact');
    // Facts of another platform (the watchdog's Windows TDR values on Linux) are null by design:
    // said once, and only for a probe that ran (a skipped one is said in the skipped lines).
    const otherPlatform = all.filter(
      (fact) => fact.value === null && notOnPlatform(spec?.facts.find((factSpec) => factSpec.name === fact.name)?.platforms, platform),
    );
    const facts = all.filter((fact) => !otherPlatform.includes(fact));
    const notApplicable: Line[] =
      otherPlatform.length && cell.status === 'passed'
        ? [
            [
              `${cell.probe}.${otherPlatform.map((fact) => fact.name).join(', ')}`,
              `not applicable on ${platform} (${platformWords(spec!.facts.find((factSpec) => factSpec.name === otherPlatform[0]!.name)!.platforms!)} only)`,
            ],
          ]
        : [];
    // A probe that did not pass may have printed metrics with no value before it stopped.
    const metrics = cell.status === 'passed' ? summaryLines(cell) : [];
    const metricVerdicts = target.verdicts.filter(
      (verdict) => verdict.expectation.metric?.startsWith(`${cell.probe}.`) && verdict.status !== 'skipped',
    );
    if (!facts.length && !metrics.length && !notApplicable.length) continue;
    rows.push(
      `  ${colors.bold(cell.probe)}${spec ? colors.dim(`  ${spec.title}${spec.claims.length ? ` (${spec.claims.join(' ')})` : ''}`) : ''}`,
    );
    for (const fact of facts) {
      const name = `${cell.probe}.${fact.name}`;
      rows.push([
        `  ${name}`,
        `${colors.bold(factValue(fact.value))}${fact.value === null && fact.reason ? colors.dim(` (${fact.reason})`) : ''}${verdictMark(target, name, colors)}`,
      ]);
    }
    for (const [label, text] of [...notApplicable, ...metrics]) rows.push([`  ${label}`, text]);
    for (const verdict of metricVerdicts)
      rows.push(`      ${verdict.status === 'passed' ? colors.green('✓') : colors.red('✗')} ${colors.dim(`expected ${verdict.title}`)}`);
  }
  // The cells that did not pass, one line per outcome and reason. sysinfo skipped for want of a
  // driver still ran and reported the system (the lines above): said so, not listed as skipped.
  const systemOnly = planned.find(
    (cell) => cell.probe === 'sysinfo' && cell.status === 'skipped' && cell.records.some((record) => record.type === 'sysinfo'),
  );
  if (systemOnly) {
    const why = cellWhy(systemOnly);
    rows.push(`  ${colors.yellow('sysinfo ran:')} the system only; its GPU facts are skipped${why ? colors.dim(` — ${why}`) : ''}`);
  }
  const groups = new Map<string, { status: CellEndEvent['status']; why: string; probes: string[] }>();
  for (const cell of planned.filter((candidate) => candidate.status !== 'passed' && candidate !== systemOnly)) {
    const why = cellWhy(cell);
    const key = `${cell.status}\n${why}`;
    const group = groups.get(key) ?? { status: cell.status, why, probes: [] };
    group.probes.push(cell.probe);
    groups.set(key, group);
  }
  const targetWhy = targetErrorWhy(target);
  for (const group of groups.values()) {
    const paint = group.status === 'skipped' ? colors.yellow : group.status === 'cancelled' ? colors.magenta : colors.red;
    const count = group.probes.length > 1 ? ` (${group.probes.length})` : '';
    if (group.why === targetWhy) {
      // The cells the target's error kept from running: counted, the reason once.
      const which = group.probes.length === planned.length ? 'every probe' : group.probes.join(', ');
      const code = (target.error ?? target.skipped)!.code;
      const why = options.errorSaid ? `not run: ${target.name}'s ${code} above` : `not run: ${targetWhy}`;
      rows.push(`  ${paint(`${group.status}${count}:`)} ${which}${colors.dim(` — ${why}`)}`);
      continue;
    }
    rows.push(`  ${paint(`${group.status}${count}:`)} ${group.probes.join(', ')}${group.why ? colors.dim(` — ${group.why}`) : ''}`);
  }
  if (target.error && !planned.some((cell) => cell.errorCode === target.error!.code))
    rows.push(
      `  ${colors.red('target error:')} ${options.errorSaid ? `${target.error.code} (above)` : `${target.error.code}: ${target.error.message}`}`,
    );
  const width = Math.min(44, Math.max(0, ...rows.map((row) => (typeof row === 'string' ? 0 : row[0].length))));
  return [
    colors.bold(`${target.name}: what the driver does`),
    ...rows.map((row) => (typeof row === 'string' ? row : `  ${row[0].padEnd(width)}  ${row[1]}`)),
  ];
}

/** A passed cell's key numbers: its probe's summary lines, else its key metrics' values. */
function summaryLines(cell: CellEndEvent): Line[] {
  const spec = probeSpec(cell.probe);
  if (spec?.summary) return spec.summary(cell.records);
  const metrics = cell.records.filter((record): record is MetricRecord => record.type === 'metric');
  return (spec?.keyMetrics ?? []).flatMap((k): Line[] => {
    const metric = pickKeyMetric(metrics, k);
    return metric ? [[k.label, formatValue(metric.value, metric.unit)]] : [];
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
  return platforms.map((platform) => platform.charAt(0).toUpperCase() + platform.slice(1)).join(' or ');
}

function factValue(value: Scalar): string {
  return value === null ? 'null' : String(value);
}

/** "  ✓" or "  ✗ expected true" where an expectation of this run judged the fact. */
function verdictMark(target: TargetResult, qualified: string, colors: Colors): string {
  const verdict = target.verdicts.find(
    (candidate) => candidate.expectation.fact === qualified && (candidate.status === 'passed' || candidate.status === 'failed'),
  );
  if (!verdict) return '';
  return verdict.status === 'passed'
    ? `  ${colors.green('✓')}`
    : `  ${colors.red(`✗ expected ${JSON.stringify(verdict.expectation.equals ?? null)}`)}`;
}
