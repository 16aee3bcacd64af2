import { describe, expect, it } from 'vitest';
import { formatValue } from '../core/units.ts';
import { sampleReadings } from '../probes/catalogue.ts';
import { factIn, h200Events } from '../test/h200-fixture.ts';
import { attrText, describeFactEvidence, rangeText, readingLabels, sampleText, varyingAttrs } from './evidence.ts';

describe('evidence as text', () => {
  it('has a short name for every reading the memory probes take', () => {
    expect(Object.keys(readingLabels).sort()).toEqual(Object.keys(sampleReadings).sort());
  });

  it('writes attributes with the unit their name ends in', () => {
    expect(attrText('size_bytes', 16 * 1024 ** 2)).toBe('size 16 MiB');
    expect(attrText('wait_s', 0.5)).toBe('wait 0.5 s');
    expect(attrText('target_us', 10)).toBe('target 10 us');
    expect(attrText('prefill_percent', 50)).toBe('prefill 50 %');
    expect(attrText('direction', 'h2d')).toBe('direction h2d');
    expect(attrText('processes', 2)).toBe('processes 2');
    // A name that is only a suffix, or a string value, keeps its name.
    expect(attrText('_s', 3)).toBe('_s 3');
    expect(attrText('size_bytes', 'big')).toBe('size_bytes big');
  });

  it('names the attributes that tell samples apart, and the range of their values', () => {
    const sample = (size: number, value: number | null) => ({ attrs: { direction: 'h2d', size_bytes: size }, value, unit: 'GB/s' });
    const samples = [sample(1024 ** 2, 36.7), sample(1024 ** 3, 55.4), sample(2 * 1024 ** 3, 53.61)];
    expect(varyingAttrs(samples)).toEqual(['size_bytes']);
    expect(sampleText(samples[0]!, ['size_bytes'])).toBe('36.7 GB/s at size 1 MiB');
    expect(rangeText(samples)).toBe('36.7 GB/s to 55.4 GB/s');
    expect(rangeText([sample(1, 5), sample(2, 5)])).toBe('5 GB/s');
    expect(rangeText([sample(1, null)])).toBe('—');
  });

  it('writes the probe evidence of a memory fact from the growths of its readings, the deciding source first', () => {
    const released = factIn(h200Events, 'pinned-release.released').evidence!;
    // pinned-release decided on the resident set, and says how much it grew.
    expect(released.source).toBe('subject_rss_bytes');
    const bytes = (key: string) => formatValue(released[key] as number, 'bytes');
    const line = describeFactEvidence(released);
    expect(
      line.startsWith(
        `resident set +${bytes('subject_rss_bytes')} for ${bytes('size_bytes')} (the deciding source); NVML process memory +${bytes('nvml_process_used_bytes')}, `,
      ),
    ).toBe(true);
    expect(line).toContain(`system available memory ${bytes('system_available_bytes')}`);
    expect(line).toContain(`grew ${bytes('grew_bytes')}`);
    expect(line).not.toContain('source subject_rss_bytes');
  });

  it('writes other evidence key by key, and says when the deciding source had no reading', () => {
    const ceiling = factIn(h200Events, 'pinned-ceiling.reset_helps').evidence!;
    expect(describeFactEvidence(ceiling)).toBe(
      Object.entries(ceiling)
        .map(([k, value]) => attrText(k, value))
        .join(', '),
    );
    expect(describeFactEvidence({ size_bytes: 1024 ** 3, nvml_device_used_bytes: 2 * 1024 ** 2, source: 'nvml_process_used_bytes' })).toBe(
      'deciding source NVML process memory (no reading) for 1 GiB; NVML device memory +2 MiB',
    );
    expect(describeFactEvidence({ CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY: 1 })).toBe('CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY 1');
  });
});
