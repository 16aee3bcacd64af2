/**
 * cudaprobe's probe list (probes/cudaprobe/probe_table.inc) is generated from the catalogue
 * (scripts/write-probe-table.ts): the committed file must be what the script writes now, so that
 * `cudaprobe list` and the catalogue never drift (probes/cudaprobe.test.ts runs the list itself).
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { PROBE_TABLE_FILE, probeFunction, renderProbeTable } from '../scripts/write-probe-table.ts';
import { catalogue } from './catalogue.ts';

const probesDir = path.join(import.meta.dirname, 'cudaprobe', 'probes');

describe('probes/cudaprobe/probe_table.inc', () => {
  it('is what scripts/write-probe-table.ts writes from the catalogue', () => {
    const committed = readFileSync(PROBE_TABLE_FILE, 'utf8');
    expect(
      committed === renderProbeTable(),
      'probes/cudaprobe/probe_table.inc differs from the catalogue: run `pnpm probe-table` and commit it',
    ).toBe(true);
  });

  it("changes when a spec does (a claim added to one shows in that probe's row)", () => {
    const changed = catalogue.map((probe) => (probe.name === 'sysinfo' ? { ...probe, claims: [...probe.claims, 'C99'] } : probe));
    const table = renderProbeTable(changed);
    expect(table).not.toBe(renderProbeTable());
    expect(table).toContain('PROBE("sysinfo", sysinfo, "System information", "C4,C99", "linux,windows", "")');
  });

  it('names for every probe a function that its source in probes/cudaprobe/probes/ defines', () => {
    const sources = readdirSync(probesDir)
      .filter((fileName) => fileName.endsWith('.cpp'))
      .map((fileName) => readFileSync(path.join(probesDir, fileName), 'utf8'))
      .join('\n');
    const missing = catalogue
      .map((probe) => probeFunction(probe.name))
      .filter((fn) => !new RegExp(`^int ${fn}\\(ProbeContext& ctx\\) \\{`, 'm').test(sources));
    expect(missing).toEqual([]);
  });

  it('names a probe function in camelCase', () => {
    expect(['pinned-vram', 'p2p', 'multi-process-pinned'].map(probeFunction)).toEqual(['pinnedVram', 'p2p', 'multiProcessPinned']);
  });
});
