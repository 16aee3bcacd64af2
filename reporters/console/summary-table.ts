/**
 * The end of the console's report: the summary table of the targets, which of many to list,
 * and why nothing was measured.
 */
import { formatValue } from '../../core/units.ts';
import { formatTable } from '../../core/text-table.ts';
import { probeSpec } from '../../probes/catalogue.ts';
import type { TargetResult } from '../../verdicts/verdicts.ts';

/** A target worth listing among many: unreachable, a cell that failed or was cancelled, or an expectation not met. */
export function hasProblem(target: TargetResult): boolean {
  return (
    Boolean(target.error) ||
    target.cells.some((cell) => cell.planned && cell.status !== 'passed' && cell.status !== 'skipped' && cell.status !== 'not-run') ||
    target.verdicts.some((verdict) => verdict.status === 'failed' || verdict.status === 'error')
  );
}

export function summaryTable(targets: TargetResult[]): string {
  const header = ['target', 'environment', 'driver', 'GPU', 'memory', 'PCIe', 'probes run/skip/err', 'expectations pass/fail/skip/err'];
  const rows = targets.map((target) => {
    const sysinfo = target.sysinfo;
    const cells = target.cells.filter((cell) => cell.planned);
    const count = (st: string) => cells.filter((cell) => cell.status === st).length;
    const vc = (st: string) => target.verdicts.filter((verdict) => verdict.status === st).length;
    const env = target.detectedEnvironment ?? 'unknown';
    return [
      target.name,
      target.declaredEnvironment === 'auto' ? env : `${target.declaredEnvironment} (detected ${env})`,
      str(sysinfo.driver_version) ?? (sysinfo.driver_found === false ? 'none found' : '—'),
      str(sysinfo.gpu_name) ?? '—',
      typeof sysinfo.memory_total_bytes === 'number' ? formatValue(sysinfo.memory_total_bytes, 'bytes') : '—',
      typeof sysinfo.pcie_gen_max === 'number'
        ? `gen${sysinfo.pcie_gen_current ?? '?'}/${sysinfo.pcie_gen_max} x${sysinfo.pcie_width_current ?? '?'}`
        : '—',
      `${count('passed')}/${count('skipped')}/${count('error') + count('cancelled')}`,
      `${vc('passed')}/${vc('failed')}/${vc('skipped')}/${vc('error')}`,
    ];
  });
  return formatTable(header, rows);
}

function str(value: unknown): string | undefined {
  return typeof value === 'string' ? value : undefined;
}

/**
 * Why nothing was measured: each reason once, with how many targets gave it. A probe skipped
 * because it is for another platform (windows-registry on Linux) is no such reason.
 */
export function skipReasons(targets: TargetResult[]): { reason: string; targets: number }[] {
  const count = new Map<string, Set<string>>();
  for (const target of targets) {
    const platform = target.ready?.platform ?? (typeof target.sysinfo.os_family === 'string' ? target.sysinfo.os_family : undefined);
    for (const cell of target.cells.filter((candidate) => candidate.planned && candidate.status === 'skipped')) {
      const platforms = probeSpec(cell.probe)?.platforms;
      if (platform && platforms && !platforms.includes(platform as never)) continue;
      const reason = cell.reason ?? '';
      count.set(reason, (count.get(reason) ?? new Set()).add(target.name));
    }
  }
  return [...count].map(([reason, names]) => ({ reason, targets: names.size }));
}
