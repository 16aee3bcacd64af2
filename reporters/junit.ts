/**
 * JUnit XML: one testsuite per target, with the target's sysinfo as properties; one testcase per
 * probe cell (did the probe run) and one per expectation. Skipped cases carry the reason in
 * system-out; the cells of a target that cannot run probes by its nature (a not-applicable code
 * such as WSL_VERSION_1) also as <skipped message="..." type="CODE">, which CI tools show beside
 * the skip. A failed or erroneous expectation's <failure>/<error> has a plain-text body, which
 * GitHub test-report actions and Jenkins show as it is: the expectation, its why, every matching
 * sample marked ok or FAIL (or the fact's value and the probe's evidence with its deciding
 * source), and the event log's path.
 *
 * Written as text (a fleet's JUnit, 14 MB for 2,000 targets, took a builder's tree 1 s on the
 * 2-core dev box), in the layout junit-report-builder gave it: two spaces a level, an element
 * whose one child is a CDATA section on one line.
 */
import { isNotApplicable } from '../core/errors.ts';
import { writeOutput } from '../core/fs.ts';
import type { SyncReporter } from './reporter.ts';
import { attrsText, readingLabels, sampleValueText, type SampleEvidence } from '../verdicts/evidence.ts';
import { withEventsFile, type RunSummary, type Verdict } from '../verdicts/verdicts.ts';

/**
 * What XML 1.0 cannot hold: C0 controls but tab, LF and CR; U+FFFE and U+FFFF; a surrogate not
 * in a pair. Left out of every name, value and text.
 */
const NOT_XML = /[\0-\x08\x0B\x0C\x0E-\x1F\uFFFE\uFFFF]|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;
const ATTRIBUTE_ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '"': '&quot;', '\t': '&#x9;', '\n': '&#xA;', '\r': '&#xD;' };

/** Whether a text may need a change (most do not: a fleet's JUnit has a million values). */
const SPECIAL = /[\0-\x1F&<"\]\uD800-\uDFFF\uFFFE\uFFFF]/;

/** An attribute's value between its quotes: tab, LF and CR as references, so that a parser keeps them. */
export function xmlAttribute(value: string | number): string {
  if (typeof value === 'number') return String(value);
  if (!SPECIAL.test(value)) return value;
  return value.replace(NOT_XML, '').replace(/[&<"\t\n\r]/g, (character) => ATTRIBUTE_ESCAPES[character]!);
}

/** Text as a CDATA section; a "]]>" in it is split between two sections, so that it cannot end the first. */
export function xmlCdata(text: string): string {
  if (!SPECIAL.test(text)) return `<![CDATA[${text}]]>`;
  return `<![CDATA[${text.replace(NOT_XML, '').replaceAll(']]>', ']]]]><![CDATA[>')}]]>`;
}

/** ` name="value"`, or nothing where the value is undefined. */
const attr = (name: string, value: string | number | undefined) => (value === undefined ? '' : ` ${name}="${xmlAttribute(value)}"`);

/** An element on one line: empty, or with its text as one CDATA section. */
const inline = (name: string, attrs: string, text?: string) =>
  text ? `<${name}${attrs}>${xmlCdata(text)}</${name}>` : `<${name}${attrs}/>`;

/** A <failure> or <error>: its message and type (each left out when empty) and its text. */
interface Problem {
  message: string;
  type: string;
  text?: string;
}

const problem = (name: string, details: Problem) =>
  inline(name, attr('message', details.message || undefined) + attr('type', details.type || undefined), details.text);

/** A testcase: what it counts as, and its XML (at the depth of a testsuite's children). */
interface Case {
  failure: boolean;
  error: boolean;
  skipped: boolean;
  xml: string;
}

interface CaseParts {
  classname: string;
  name: string;
  time?: number;
  failure?: Problem;
  error?: Problem;
  skipped?: { message?: string; type?: string };
  out?: string;
  err?: string;
}

function testCase(parts: CaseParts): Case {
  let children = '';
  if (parts.failure) children += `      ${problem('failure', parts.failure)}\n`;
  if (parts.error) children += `      ${problem('error', parts.error)}\n`;
  if (parts.skipped)
    children += `      ${inline('skipped', attr('message', parts.skipped.message || undefined) + attr('type', parts.skipped.type))}\n`;
  if (parts.out) children += `      ${inline('system-out', '', parts.out)}\n`;
  if (parts.err) children += `      ${inline('system-err', '', parts.err)}\n`;
  const open = `    <testcase${attr('classname', parts.classname)}${attr('name', parts.name)}${attr('time', parts.time)}`;
  const xml = children ? `${open}>\n${children}    </testcase>\n` : `${open}/>\n`;
  return { failure: Boolean(parts.failure), error: Boolean(parts.error), skipped: Boolean(parts.skipped), xml };
}

const count = (cases: Case[], what: 'failure' | 'error' | 'skipped') =>
  cases.reduce((total, oneCase) => total + (oneCase[what] ? 1 : 0), 0);

const property = (name: string, value: string) => `      <property${attr('name', name)}${attr('value', value)}/>\n`;

export function junitXml(summary: RunSummary): string {
  const suites: { xml: string; cases: Case[] }[] = [];
  for (const target of summary.targets) {
    const cases: Case[] = [];
    for (const cell of target.cells.filter((candidate) => candidate.planned)) {
      const base = {
        classname: `${target.name}.probes`,
        name: `probe ${cell.probe} runs`,
        time: cell.durationMs / 1000,
        err: cell.stderrTail,
      };
      const reason = cell.reason ?? '';
      if (cell.status === 'skipped' && cell.errorCode && isNotApplicable(cell.errorCode))
        cases.push(testCase({ ...base, skipped: { message: reason, type: cell.errorCode }, out: `skipped: ${reason}` }));
      else if (cell.status === 'skipped') cases.push(testCase({ ...base, skipped: {}, out: `skipped: ${reason}` }));
      else if (cell.status === 'cancelled') cases.push(testCase({ ...base, skipped: {}, out: `cancelled: ${reason}` }));
      else if (cell.status === 'not-run') cases.push(testCase({ ...base, skipped: {}, out: `not run: ${reason}` }));
      else if (cell.status === 'error')
        cases.push(testCase({ ...base, error: { message: cell.reason ?? 'probe failed', type: cell.errorCode ?? 'PROBE_CRASHED' } }));
      else cases.push(testCase(base));
    }
    for (const verdict of target.verdicts) {
      const base = { classname: `${target.name}.expectations`, name: `${verdict.title} [${verdict.source}]` };
      if (verdict.status === 'failed')
        cases.push(testCase({ ...base, failure: { message: verdict.message, type: 'EXPECTATION_FAILED', text: verdictText(verdict) } }));
      else if (verdict.status === 'error')
        cases.push(testCase({ ...base, error: { message: verdict.message, type: 'EXPECTATION_ERROR', text: verdictText(verdict) } }));
      else if (verdict.status === 'skipped') cases.push(testCase({ ...base, skipped: {}, out: `skipped: ${verdict.message}` }));
      else cases.push(testCase({ ...base, out: verdict.message }));
    }
    let properties =
      property('environment.declared', target.declaredEnvironment) +
      property('environment.detected', target.detectedEnvironment ?? 'unknown');
    if (target.ready) properties += property('transport', target.ready.session);
    for (const [name, value] of Object.entries(target.sysinfo))
      properties += property(`sysinfo.${name}`, value === null ? 'null' : String(value));
    const open =
      `  <testsuite${attr('name', target.name)}${attr('timestamp', summary.start.started)}` +
      `${attr('time', target.cells.reduce((totalMs, cell) => totalMs + cell.durationMs, 0) / 1000)}${attr('tests', cases.length)}` +
      `${attr('failures', count(cases, 'failure'))}${attr('errors', count(cases, 'error'))}${attr('skipped', count(cases, 'skipped'))}>\n`;
    suites.push({
      xml: `${open}    <properties>\n${properties}    </properties>\n${cases.map((oneCase) => oneCase.xml).join('')}  </testsuite>\n`,
      cases,
    });
  }
  const all = suites.flatMap((suite) => suite.cases);
  // No "skipped" on <testsuites>: the JUnit 10 schema that CI tools validate against allows it on <testsuite> only.
  const root =
    `<testsuites${attr('name', `cudamatrix ${summary.start.runId}`)}${attr('tests', all.length)}` +
    `${attr('failures', count(all, 'failure'))}${attr('errors', count(all, 'error'))}`;
  const body = suites.length ? `${root}>\n${suites.map((suite) => suite.xml).join('')}</testsuites>` : `${root}/>`;
  return `<?xml version="1.0" encoding="UTF-8"?>\n${body}`;
}

/** The plain-text body of an expectation's <failure> or <error>: what was expected, and why, and what was seen. */
export function verdictText(verdict: Verdict): string {
  const lines = [`expectation: ${verdict.title} [from ${verdict.source}]`, `result: ${verdict.message}`];
  if (verdict.why) lines.push(`why: ${verdict.why}`);
  const e = verdict.evidence;
  if (e?.kind === 'metric') {
    const total = e.within.length + e.outside.length;
    lines.push(`matching samples: ${total}, ${e.outside.length} outside the bounds (each one must be within)`);
    const row = (mark: string, sample: SampleEvidence) =>
      `  ${mark.padEnd(4)}  ${sampleValueText(sample)}${Object.keys(sample.attrs).length ? `  ${attrsText(sample.attrs)}` : ''}`;
    for (const sample of e.outside) lines.push(row('FAIL', sample));
    for (const sample of e.within) lines.push(row('ok', sample));
  } else if (e?.kind === 'fact') {
    lines.push(`observed: ${JSON.stringify(e.value)}${e.reason ? ` (${e.reason})` : ''}`);
    if (e.source) lines.push(`source: ${e.source}`);
    const deciding = e.evidence?.source;
    if (typeof deciding === 'string')
      lines.push(`deciding source: ${readingLabels[deciding] ? `${readingLabels[deciding]} (${deciding})` : deciding}`);
    if (e.summary) lines.push(`evidence: ${e.summary}`);
  }
  if (verdict.eventsFile) lines.push(`event log: ${verdict.eventsFile}`);
  return lines.join('\n');
}

export function junitReporter(file: string | ((runDir: string) => string)): SyncReporter {
  return {
    name: 'junit',
    onEnd(summary, context) {
      const out = typeof file === 'string' ? file : file(context.runDir);
      writeOutput(out, junitXml(withEventsFile(summary, context.eventsFile)));
    },
  };
}
