/**
 * JUnit XML (junit-report-builder): one testsuite per target, with the target's sysinfo as
 * properties; one testcase per probe cell (did the probe run) and one per expectation.
 * Skipped cases carry the reason in system-out; the cells of a target that cannot run probes by
 * its nature (a not-applicable code such as WSL_VERSION_1) also as <skipped message="..."
 * type="CODE">, which CI tools show beside the skip. A failed or erroneous expectation's
 * <failure>/<error> has a plain-text body, which GitHub test-report actions and Jenkins show as it
 * is: the expectation, its why, every matching sample marked ok or FAIL (or the fact's value and
 * the probe's evidence with its deciding source), and the event log's path.
 */
import junit, { type TestCase } from 'junit-report-builder';
import { isNotApplicable } from '../../core/errors.ts';
import { writeOutput } from '../../core/fs.ts';
import type { Reporter } from '../reporter.ts';
import { attrsText, readingLabels, sampleValueText, type SampleEvidence } from '../evidence.ts';
import { withEventsFile, type RunSummary, type Verdict } from '../verdicts.ts';

export function junitXml(summary: RunSummary): string {
  // The package is CommonJS; its typings describe the ES build's default export.
  const report = (junit as unknown as typeof junit.default).newBuilder();
  report.name(`cudamatrix ${summary.start.runId}`);
  for (const t of summary.targets) {
    const suite = report.testSuite().name(t.name).timestamp(summary.start.started);
    const duration = t.cells.reduce((s, c) => s + c.durationMs, 0) / 1000;
    suite.time(duration);
    suite.property('environment.declared', t.declaredEnvironment);
    suite.property('environment.detected', t.detectedEnvironment ?? 'unknown');
    if (t.ready) suite.property('transport', t.ready.session);
    for (const [name, value] of Object.entries(t.sysinfo)) suite.property(`sysinfo.${name}`, value === null ? 'null' : String(value));

    for (const c of t.cells.filter((c) => c.planned)) {
      const tc = suite
        .testCase()
        .className(`${t.name}.probes`)
        .name(`probe ${c.probe} runs`)
        .time(c.durationMs / 1000);
      if (c.status === 'skipped' && c.errorCode && isNotApplicable(c.errorCode))
        skipWithMessage(tc, c.reason ?? '', c.errorCode).standardOutput(`skipped: ${c.reason ?? ''}`);
      else if (c.status === 'skipped') tc.skipped().standardOutput(`skipped: ${c.reason ?? ''}`);
      else if (c.status === 'cancelled') tc.skipped().standardOutput(`cancelled: ${c.reason ?? ''}`);
      else if (c.status === 'not-run') tc.skipped().standardOutput(`not run: ${c.reason ?? ''}`);
      else if (c.status === 'error') tc.error(c.reason ?? 'probe failed', c.errorCode ?? 'PROBE_CRASHED');
      if (c.stderrTail) tc.standardError(c.stderrTail);
    }
    for (const v of t.verdicts) {
      const tc = suite.testCase().className(`${t.name}.expectations`).name(`${v.title} [${v.source}]`);
      // stacktrace() is junit-report-builder's name for the <failure> element's text.
      if (v.status === 'failed') tc.failure(v.message, 'EXPECTATION_FAILED').stacktrace(verdictText(v));
      else if (v.status === 'error') tc.error(v.message, 'EXPECTATION_ERROR', verdictText(v));
      else if (v.status === 'skipped') tc.skipped().standardOutput(`skipped: ${v.message}`);
      else tc.standardOutput(v.message);
    }
  }
  // junit-report-builder puts a "skipped" count on <testsuites>; the JUnit 10 schema that CI
  // tools validate against allows it on <testsuite> only.
  return report.build().replace(/(<testsuites\b[^>]*?) skipped="\d+"/, '$1');
}

/** The plain-text body of an expectation's <failure> or <error>: what was expected, and why, and what was seen. */
export function verdictText(v: Verdict): string {
  const lines = [`expectation: ${v.title} [from ${v.source}]`, `result: ${v.message}`];
  if (v.why) lines.push(`why: ${v.why}`);
  const e = v.evidence;
  if (e?.kind === 'metric') {
    const total = e.within.length + e.outside.length;
    lines.push(`matching samples: ${total}, ${e.outside.length} outside the bounds (each one must be within)`);
    const row = (mark: string, s: SampleEvidence) =>
      `  ${mark.padEnd(4)}  ${sampleValueText(s)}${Object.keys(s.attrs).length ? `  ${attrsText(s.attrs)}` : ''}`;
    for (const s of e.outside) lines.push(row('FAIL', s));
    for (const s of e.within) lines.push(row('ok', s));
  } else if (e?.kind === 'fact') {
    lines.push(`observed: ${JSON.stringify(e.value)}${e.reason ? ` (${e.reason})` : ''}`);
    if (e.source) lines.push(`source: ${e.source}`);
    const deciding = e.evidence?.source;
    if (typeof deciding === 'string')
      lines.push(`deciding source: ${readingLabels[deciding] ? `${readingLabels[deciding]} (${deciding})` : deciding}`);
    if (e.summary) lines.push(`evidence: ${e.summary}`);
  }
  if (v.eventsFile) lines.push(`event log: ${v.eventsFile}`);
  return lines.join('\n');
}

/**
 * Marks a case skipped, with the reason as the <skipped> element's message and the code as its
 * type: the JUnit schema allows both, but junit-report-builder's skipped() takes neither, so they
 * are set on the element it builds.
 */
function skipWithMessage(tc: TestCase, message: string, type: string): TestCase {
  tc.skipped();
  const build = tc.build.bind(tc);
  tc.build = (parent) => {
    const element = build(parent);
    const skipped = (element.children as { name?: string }[]).find((n) => n.name === 'skipped') as typeof element | undefined;
    if (message) skipped?.att('message', message);
    skipped?.att('type', type);
    return element;
  };
  return tc;
}

export function junitReporter(file: string | ((runDir: string) => string)): Reporter {
  return {
    name: 'junit',
    onEnd(summary, context) {
      const out = typeof file === 'string' ? file : file(context.runDir);
      writeOutput(out, junitXml(withEventsFile(summary, context.eventsFile)));
    },
  };
}
