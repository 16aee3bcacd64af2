import { afterEach, describe, expect, it, vi } from 'vitest';
import { effectiveParams } from '../probes/catalogue.ts';
import { probesListCommand } from './probes.ts';

function output(opts: { facts: boolean; json: boolean }): string {
  const chunks: string[] = [];
  vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
    chunks.push(String(chunk));
    return true;
  });
  expect(probesListCommand(opts)).toBe(0);
  vi.restoreAllMocks();
  return chunks.join('');
}

describe('cudamatrix probes list', () => {
  afterEach(() => vi.restoreAllMocks());

  it('--facts shows each parameter with its default and what it takes', () => {
    const text = output({ facts: true, json: false });
    expect(text).toContain(
      '  params sizes_gib=[1,2,4] (list of GiB), apis=[driver,runtime] (list of driver|runtime), register_size_gib=1 (GiB), wait_s=0.1 (s)\n',
    );
    expect(text).toMatch(/^ {2}params iterations=10000 \(integer\)$/m);
    expect(text).toContain('log_level="" (text)');
    // The defaults shown are those the probes run with.
    expect(text).toContain(`sizes_mib=[${(effectiveParams('transfer-bandwidth').sizes_mib as number[]).join(',')}]`);
  });

  it('says where the claims it cites are explained (docs/claims.md, a page of the repository)', () => {
    const text = output({ facts: false, json: false });
    expect(text).toMatch(/^pinned-vram\s+C1 C3 C4\s/m);
    expect(text).toContain('docs/claims.md');
    expect(text).not.toContain('shared/');
  });

  it('--json gives each parameter with its type, default and description', () => {
    const probes = JSON.parse(output({ facts: false, json: true })) as {
      name: string;
      params: { name: string; type: string; default: unknown; description?: string }[];
    }[];
    const release = probes.find((probe) => probe.name === 'pinned-release')!;
    expect(release.params).toContainEqual({
      name: 'wait_s',
      type: 'list of s',
      default: [0, 1, 5],
      description: 'Readings after free, seconds after the free',
    });
    for (const probe of probes) {
      expect(Object.fromEntries(probe.params.map((i) => [i.name, i.default])), probe.name).toEqual(effectiveParams(probe.name));
    }
    expect(probes.find((probe) => probe.name === 'sysinfo')!.params).toEqual([]);
  });
});
