import { describe, expect, it } from 'vitest';
import { CudamatrixError } from '../core/errors.ts';
import { cell, runEnd, runStart, sysinfo, targetStart } from '../test/events-fixture.ts';
import { Reporters } from './reporter.ts';
import { exitCodeOf, summarize, type RunSummary } from '../verdicts/verdicts.ts';

describe('Reporters.end', () => {
  it('hands every reporter the summary with the event log on each verdict, after one that failed', async () => {
    const events = [
      runStart({ linux: [{ fact: 'sysinfo.tcc_driver', equals: true }] }),
      targetStart('box'),
      cell('box', 'sysinfo', 'passed', sysinfo({ environment: 'linux', tcc_driver: false })),
      runEnd,
    ];
    const seen: RunSummary[] = [];
    const warnings: string[] = [];
    const reporters = new Reporters(
      [
        {
          name: 'broken',
          onEnd: () => {
            throw new Error('disk full');
          },
        },
        { name: 'mine', onEnd: (summary) => void seen.push(summary) },
      ],
      (message) => warnings.push(message),
    );
    const unwritten = await reporters.end(summarize(events), { runDir: 'runs/z', eventsFile: 'runs/z/events.jsonl', strict: false });
    // A reporter that only writes (no notes to show) and fails is an output not written: exit 5.
    expect(warnings).toEqual(['error: reporter "broken": disk full']);
    expect(unwritten).toEqual(['disk full']);
    expect(seen).toHaveLength(1);
    expect(seen[0]!.eventsFile).toBe('runs/z/events.jsonl');
    expect(seen[0]!.targets[0]!.verdicts).toMatchObject([
      { status: 'failed', eventsFile: 'runs/z/events.jsonl', evidence: { kind: 'fact', value: false } },
    ]);
  });

  it("ends the file reporters first, so that the console knows what was not written (with the caller's own) and its exit status is 6", async () => {
    const events = [runStart({}), targetStart('box'), runEnd];
    const order: string[] = [];
    let shown: readonly string[] | undefined;
    const reporters = new Reporters(
      [
        {
          name: 'console',
          onMessage: () => {},
          onEnd: (_s, context) => void (order.push('console'), (shown = [...(context.unwritten ?? [])])),
        },
        {
          name: 'junit',
          onEnd: () => {
            order.push('junit');
            throw new CudamatrixError('OUTPUT_FAILED', 'j.xml could not be written (ENOSPC)');
          },
        },
      ],
      () => {},
    );
    const summary = summarize(events);
    const unwritten = await reporters.end(summary, {
      runDir: 'r',
      eventsFile: 'r/events.jsonl',
      strict: false,
      unwritten: ['r/events.jsonl could not be written'],
    });
    expect(order).toEqual(['junit', 'console']);
    expect(shown).toEqual(['r/events.jsonl could not be written', 'j.xml could not be written (ENOSPC)']);
    expect(exitCodeOf(summary, { strict: false, unwritten })).toBe(6);
    expect(exitCodeOf(summary, { strict: false })).toBe(0);
  });

  it("without a console (--reporter json:FILE alone), says the caller's outputs not written on stderr, with the reporters' own", async () => {
    const warnings: string[] = [];
    const reporters = new Reporters(
      [
        {
          name: 'json',
          onEnd: () => {
            throw new CudamatrixError('OUTPUT_FAILED', 's.json could not be written (ENOSPC)');
          },
        },
      ],
      (message) => warnings.push(message),
    );
    const unwritten = await reporters.end(summarize([runStart({}), targetStart('box'), runEnd]), {
      runDir: 'r',
      eventsFile: 'r/events.jsonl',
      strict: false,
      unwritten: ['r/events.jsonl could not be written (ENOSPC); it holds the first 2 events'],
    });
    expect(warnings).toEqual([
      'error: r/events.jsonl could not be written (ENOSPC); it holds the first 2 events',
      'error: reporter "json": s.json could not be written (ENOSPC)',
    ]);
    expect(unwritten).toHaveLength(2);
  });
});
