import { describe, expect, it } from 'vitest';
import { cell, runEnd, runStart, sysinfo, targetStart } from '../test/events-fixture.ts';
import { Reporters } from './reporter.ts';
import { summarize, type RunSummary } from './verdicts.ts';

describe('Reporters.end', () => {
  it('hands every reporter the summary with the event log on each verdict, after one that failed', async () => {
    const events = [runStart({ linux: [{ fact: 'sysinfo.tcc_driver', equals: true }] }), targetStart('box'), cell('box', 'sysinfo', 'passed', sysinfo({ environment: 'linux', tcc_driver: false })), runEnd];
    const seen: RunSummary[] = [];
    const warnings: string[] = [];
    const reporters = new Reporters(
      [
        { name: 'broken', onEnd: () => { throw new Error('disk full'); } },
        { name: 'mine', onEnd: (s) => void seen.push(s) },
      ],
      (m) => warnings.push(m),
    );
    await reporters.end(summarize(events), { runDir: 'runs/z', eventsFile: 'runs/z/events.jsonl', strict: false });
    expect(warnings).toEqual(['warning: reporter "broken" failed and was switched off: disk full']);
    expect(seen).toHaveLength(1);
    expect(seen[0]!.eventsFile).toBe('runs/z/events.jsonl');
    expect(seen[0]!.targets[0]!.verdicts).toMatchObject([{ status: 'failed', eventsFile: 'runs/z/events.jsonl', evidence: { kind: 'fact', value: false } }]);
  });
});
