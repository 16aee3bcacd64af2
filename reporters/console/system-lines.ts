/**
 * The console's lines for a target's sysinfo: environment, system, container, driver and CUDA,
 * GPU, memory, PCIe link and driver model, each from the facts sysinfo reported.
 */
import { formatValue } from '../../core/units.ts';
import { describeError } from '../../core/errors.ts';
import { knownBadForSysinfo, knownBadLine } from '../../matrix/known-bad.ts';
import type { Scalar } from '../../probes/protocol.ts';
import type { TargetResult } from '../../verdicts/verdicts.ts';

/** The sysinfo facts in a few lines: environment, system, driver and CUDA, GPU, driver model. */
export function systemLines(target: TargetResult): [string, string][] {
  const records = new Map<string, { value: Scalar; source?: string; reason?: string }>();
  for (const cell of target.cells.filter((candidate) => candidate.probe === 'sysinfo')) {
    for (const record of cell.records) if (record.type === 'sysinfo' && !records.has(record.name)) records.set(record.name, record);
  }
  if (!records.size) return [];
  const val = (name: string): Scalar | undefined => records.get(name)?.value;
  const textOf = (name: string): string | undefined => {
    const value = val(name);
    return value === null || value === undefined ? undefined : String(value);
  };
  const lines: [string, string][] = [];
  const env = textOf('environment');
  if (env)
    lines.push([
      'environment',
      `${env}${records.get('environment')?.source ? ` (${records.get('environment')!.source})` : ''}${target.declaredEnvironment !== 'auto' ? `, declared ${target.declaredEnvironment}` : ''}`,
    ]);
  const os = [
    textOf('os_name') ?? textOf('os_family'),
    textOf('os_build') && `build ${textOf('os_build')}`,
    textOf('kernel') && `kernel ${textOf('kernel')}`,
    textOf('arch'),
    val('wsl_version') != null && `WSL ${textOf('wsl_version')}`,
    textOf('wine_version') && `Wine ${textOf('wine_version')}`,
  ].filter(Boolean);
  if (os.length) lines.push(['system', os.join(', ')]);
  const container = textOf('container');
  if (container || records.has('container')) {
    const runtime = textOf('container_runtime');
    lines.push([
      'container',
      container
        ? `${container}${runtime ? `, GPU from the ${runtime} runtime` : records.get('container_runtime')?.reason ? ` (${records.get('container_runtime')!.reason})` : ''}`
        : 'none',
    ]);
  }
  const driver = textOf('driver_version');
  const cuda = textOf('cuda_driver_version');
  const runtime = textOf('cudart_version');
  if (driver || cuda || records.has('driver_found')) {
    const parts =
      val('driver_found') === false && !driver
        ? ['none found']
        : [
            driver ??
              (records.get('driver_version')?.reason ? `version unknown (${records.get('driver_version')!.reason})` : 'version unknown'),
          ];
    if (cuda) parts.push(`CUDA ${cuda}`);
    if (runtime) parts.push(`runtime ${runtime}${textOf('cudart_library') ? ` (${textOf('cudart_library')})` : ''}`);
    else if (val('cudart_found') === false) parts.push('no CUDA runtime library');
    lines.push(['driver', parts.join(', ')]);
  }
  const gpu = textOf('gpu_name');
  if (gpu) {
    const extra = [
      textOf('compute_capability') && `compute ${textOf('compute_capability')}`,
      textOf('multiprocessors') && `${textOf('multiprocessors')} SMs`,
    ];
    const count = val('device_count');
    if (typeof count === 'number' && count > 1) extra.push(`device ${textOf('gpu_index') ?? 0} of ${count}`);
    lines.push(['GPU', [gpu, ...extra].filter(Boolean).join(', ')]);
  }
  const mem = val('memory_total_bytes');
  if (typeof mem === 'number') lines.push(['memory', formatValue(mem, 'bytes')]);
  if (typeof val('pcie_gen_current') === 'number' || typeof val('pcie_gen_max') === 'number') {
    lines.push([
      'PCIe',
      `gen${textOf('pcie_gen_current') ?? '?'} x${textOf('pcie_width_current') ?? '?'} now, gen${textOf('pcie_gen_max') ?? '?'} x${textOf('pcie_width_max') ?? '?'} max`,
    ]);
  }
  if (records.has('driver_model') || records.has('tcc_driver')) {
    const model = records.get('driver_model');
    const parts = [model?.value != null ? String(model.value) : model ? `null${model.reason ? ` (${model.reason})` : ''}` : undefined];
    if (textOf('driver_model_pending') && textOf('driver_model_pending') !== textOf('driver_model'))
      parts.push(`${textOf('driver_model_pending')} after reboot`);
    if (typeof val('tcc_driver') === 'boolean') parts.push(`TCC ${val('tcc_driver') ? 'on' : 'off'}`);
    // Whether the hardware scheduler runs; else what the registry asks for (older records name that hags).
    const enabled = val('hags_enabled');
    const setting = records.has('hags_setting') ? val('hags_setting') : val('hags');
    if (typeof enabled === 'boolean')
      parts.push(
        `HAGS ${enabled ? 'on' : 'off'}${typeof setting === 'boolean' && setting !== enabled ? ` (setting ${setting ? 'on' : 'off'} after reboot)` : ''}`,
      );
    else if (typeof setting === 'boolean') parts.push(`HAGS setting ${setting ? 'on' : 'off'}`);
    lines.push(['driver model', parts.filter(Boolean).join(', ')]);
  }
  return lines;
}

/**
 * The known-bad driver registry's lines for the target's driver (matrix/known-bad-drivers.yaml):
 * one per entry its driver, OS, driver model and GPU match; a warning, never a verdict.
 */
export function knownBadLines(target: TargetResult): string[] {
  try {
    const found = knownBadForSysinfo(target.sysinfo);
    return found ? found.entries.map((e) => knownBadLine(e, found.subject)) : [];
  } catch (error) {
    return [`the known-bad driver registry could not be read: ${describeError(error)}`];
  }
}
