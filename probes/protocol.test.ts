import { describe, expect, it } from 'vitest';
import { describeProblem, parseProbeOutput } from './protocol.ts';

const line = (fields: object) => JSON.stringify({ schema: 'cudaprobe/1', probe: 'sysinfo', ...fields });
const good = [
  line({ type: 'sysinfo', name: 'gpu_name', value: 'NVIDIA H200', source: 'cuDeviceGetName' }),
  line({ type: 'metric', name: 'p50_us', value: 12.5, unit: 'us', attrs: { size_bytes: 1024 } }),
  line({ type: 'fact', name: 'released', value: 'on-exit', evidence: { after_free_mib: 0 } }),
  line({
    type: 'sample',
    phase: 'after-alloc',
    readings: { nvml_used_bytes: 1, pdh_dedicated_bytes: null },
    reasons: { pdh_dedicated_bytes: 'Windows only' },
  }),
  line({ type: 'skip', reason: 'no driver', what: 'gpu' }),
  line({ type: 'error', message: 'cuMemAlloc failed', code: 'CUDA_ERROR_OUT_OF_MEMORY' }),
];

describe('protocol parser', () => {
  it('accepts every record type', () => {
    const parsed = parseProbeOutput(`${good.join('\n')}\n`);
    expect(parsed.problems).toEqual([]);
    expect(parsed.records.map((record) => record.type)).toEqual(['sysinfo', 'metric', 'fact', 'sample', 'skip', 'error']);
  });

  it('reports a truncated last line and keeps the lines before it', () => {
    const cut = good[1]!.slice(0, 30);
    const parsed = parseProbeOutput(`${good[0]}\n${cut}`);
    expect(parsed.records).toHaveLength(1);
    expect(parsed.problems).toEqual([{ line: 2, excerpt: cut, reason: 'truncated line: the output ends in the middle of it' }]);
  });

  it('reports interleaved records on one line', () => {
    const parsed = parseProbeOutput(`${good[0]}${good[4]}\n${good[5]}\n`);
    expect(parsed.records.map((record) => record.type)).toEqual(['error']);
    expect(parsed.problems[0]).toMatchObject({ line: 1, reason: 'two records on one line (interleaved output)' });
  });

  it('reports a record cut into another one (interleaved mid-line)', () => {
    const sysinfoLine = good[0]!;
    const parsed = parseProbeOutput(`${sysinfoLine.slice(0, 20)}${good[4]}${sysinfoLine.slice(20)}\n`);
    expect(parsed.records).toEqual([]);
    expect(parsed.problems).toHaveLength(1);
  });

  it.each([
    ['plain text', 'Segmentation fault (core dumped)', 'not JSON'],
    ['a JSON array', '[1,2,3]', 'not a JSON object'],
    ['a JSON number', '42', 'not a JSON object'],
    ['no schema', JSON.stringify({ type: 'fact', probe: 'x', name: 'a', value: 1 }), 'no "schema" field'],
    [
      'another schema',
      JSON.stringify({ schema: 'cudaprobe/2', type: 'fact', probe: 'x', name: 'a', value: 1 }),
      'unsupported schema "cudaprobe/2" (expected "cudaprobe/1")',
    ],
    ['unknown type', line({ type: 'telemetry', name: 'a' }), 'field "type"'],
    ['metric without unit', line({ type: 'metric', name: 'a', value: 1 }), 'field "unit"'],
    ['metric with a text value', line({ type: 'metric', name: 'a', value: 'fast', unit: 'us' }), 'field "value"'],
    ['fact with an object value', line({ type: 'fact', name: 'a', value: { x: 1 } }), 'field "value"'],
    ['skip without reason', line({ type: 'skip' }), 'field "reason"'],
    ['repeats that are not an array', line({ type: 'metric', name: 'a', value: 1, unit: 'us', repeats: 1 }), 'field "repeats"'],
    ['neighbours without a phase', line({ type: 'neighbours', processes: 0, used_bytes: 0, pids: [] }), 'field "phase"'],
    ['neighbours of another phase', line({ type: 'neighbours', phase: 'middle', processes: 0, used_bytes: 0, pids: [] }), 'field "phase"'],
    ['neighbours without pids', line({ type: 'neighbours', phase: 'start', processes: 0, used_bytes: 0 }), 'field "pids"'],
    [
      'neighbours with a count as text',
      line({ type: 'neighbours', phase: 'end', processes: '2', used_bytes: 0, pids: [] }),
      'field "processes"',
    ],
    [
      'neighbours with a negative count',
      line({ type: 'neighbours', phase: 'end', processes: -1, used_bytes: 0, pids: [] }),
      'field "processes"',
    ],
    ['a repeat that is not a number', line({ type: 'metric', name: 'a', value: 1, unit: 'us', repeats: [1, null] }), 'field "repeats.1"'],
  ])('reports %s, naming the line', (_what, text, reason) => {
    const parsed = parseProbeOutput(`${good[0]}\n${text}\n${good[4]}\n`);
    expect(parsed.records).toHaveLength(2);
    expect(parsed.problems).toHaveLength(1);
    expect(parsed.problems[0]!.line).toBe(2);
    expect(parsed.problems[0]!.reason).toContain(reason);
    expect(describeProblem('sysinfo', parsed.problems[0]!)).toMatch(/^probe sysinfo, stdout line 2: /);
  });

  it("keeps a metric's repeats (issue 32), and a metric without them has none", () => {
    const withRepeats = line({ type: 'metric', name: 'p50_us', value: 12.5, unit: 'us', repeats: [12.4, 12.5, 1e6, 13] });
    const parsed = parseProbeOutput(`${withRepeats}\n${good[1]}\n`);
    expect(parsed.problems).toEqual([]);
    expect(parsed.records[0]).toMatchObject({ type: 'metric', value: 12.5, repeats: [12.4, 12.5, 1e6, 13] });
    expect(parsed.records[1]).not.toHaveProperty('repeats');
  });

  it('accepts neighbours records (issue 32): counted, or null with the reason', () => {
    const counted = line({ type: 'neighbours', phase: 'start', processes: 2, used_bytes: 1048676, pids: [4242, 4343] });
    const unknown = line({
      type: 'neighbours',
      phase: 'end',
      processes: null,
      used_bytes: null,
      pids: [],
      reason: 'NVML: Not Supported (3)',
    });
    const parsed = parseProbeOutput(`${counted}\n${unknown}\n`);
    expect(parsed.problems).toEqual([]);
    expect(parsed.records).toEqual([
      {
        schema: 'cudaprobe/1',
        probe: 'sysinfo',
        type: 'neighbours',
        phase: 'start',
        processes: 2,
        used_bytes: 1048676,
        pids: [4242, 4343],
      },
      {
        schema: 'cudaprobe/1',
        probe: 'sysinfo',
        type: 'neighbours',
        phase: 'end',
        processes: null,
        used_bytes: null,
        pids: [],
        reason: 'NVML: Not Supported (3)',
      },
    ]);
  });

  it('tolerates CRLF line ends and blank lines', () => {
    const parsed = parseProbeOutput(`${good[0]}\r\n\r\n${good[4]}\r\n`);
    expect(parsed.problems).toEqual([]);
    expect(parsed.records).toHaveLength(2);
  });

  it('never throws on binary garbage', () => {
    const junk = Array.from({ length: 2000 }, (_, i) => String.fromCharCode((i * 7919) % 256)).join('');
    expect(() => parseProbeOutput(junk)).not.toThrow();
    expect(parseProbeOutput(junk).records).toEqual([]);
  });

  it('cuts long excerpts', () => {
    const parsed = parseProbeOutput(`${'x'.repeat(500)}\n`);
    expect(parsed.problems[0]!.excerpt.length).toBeLessThanOrEqual(120);
  });
});
