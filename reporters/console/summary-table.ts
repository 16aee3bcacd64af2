/**
 * The end of the console's report: the summary table of the targets, which of many to list,
 * and why nothing was measured.
 */
import { formatValue } from '../../core/units.ts';
import { formatTable } from '../../core/text-table.ts';
import { probeSpec } from '../../probes/catalogue.ts';
import type { TargetResult } from '../../verdicts/verdicts.ts';

/** A target worth listing among many: unreachable, a cell that failed or was cancelled, or an expectation not met. */
export function hasProblem(t: TargetResult): boolean {
  return (
    Boolean(t.error) ||
    t.cells.some((x) => x.planned && x.status !== 'passed' && x.status !== 'skipped' && x.status !== 'not-run') ||
    t.verdicts.some((v) => v.status === 'failed' || v.status === 'error')
  );
}

export function summaryTable(targets: TargetResult[]): string {
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
