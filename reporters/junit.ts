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
  return value.replace(NOT_XML, '').replace(/[&<"\t\n\r]/g, (c) => ATTRIBUTE_ESCAPES[c]!);
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

const problem = (name: string, p: Problem) =>
  inline(name, attr('message', p.message || undefined) + attr('type', p.type || undefined), p.text);

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

function testCase(c: CaseParts): Case {
  let children = '';
  if (c.failure) children += `      ${problem('failure', c.failure)}\n`;
  if (c.error) children += `      ${problem('error', c.error)}\n`;
  if (c.skipped) children += `      ${inline('skipped', attr('message', c.skipped.message || undefined) + attr('type', c.skipped.type))}\n`;
  if (c.out) children += `      ${inline('system-out', '', c.out)}\n`;
  if (c.err) children += `      ${inline('system-err', '', c.err)}\n`;
  const open = `    <testcase${attr('classname', c.classname)}${attr('name', c.name)}${attr('time', c.time)}`;
  const xml = children ? `${open}>\n${children}    </testcase>\n` : `${open}/>\n`;
  return { failure: Boolean(c.failure), error: Boolean(c.error), skipped: Boolean(c.skipped), xml };
}

const count = (cases: Case[], what: 'failure' | 'error' | 'skipped') => cases.reduce((n, c) => n + (c[what] ? 1 : 0), 0);

const property = (name: string, value: string) => `      <property${attr('name', name)}${attr('value', value)}/>\n`;

export function junitXml(summary: RunSummary): string {
  const suites: { xml: string; cases: Case[] }[] = [];
  for (const t of summary.targets) {
    const cases: Case[] = [];
    for (const c of t.cells.filter((c) => c.planned)) {
      const base = { classname: `${t.name}.probes`, name: `probe ${c.probe} runs`, time: c.durationMs / 1000, err: c.stderrTail };
      const reason = c.reason ?? '';
      if (c.status === 'skipped' && c.errorCode && isNotApplicable(c.errorCode))
        cases.push(testCase({ ...base, skipped: { message: reason, type: c.errorCode }, out: `skipped: ${reason}` }));
      else if (c.status === 'skipped') cases.push(testCase({ ...base, skipped: {}, out: `skipped: ${reason}` }));
      else if (c.status === 'cancelled') cases.push(testCase({ ...base, skipped: {}, out: `cancelled: ${reason}` }));
      else if (c.status === 'not-run') cases.push(testCase({ ...base, skipped: {}, out: `not run: ${reason}` }));
      else if (c.status === 'error')
        cases.push(testCase({ ...base, error: { message: c.reason ?? 'probe failed', type: c.errorCode ?? 'PROBE_CRASHED' } }));
      else cases.push(testCase(base));
    }
    for (const v of t.verdicts) {
      const base = { classname: `${t.name}.expectations`, name: `${v.title} [${v.source}]` };
      if (v.status === 'failed')
        cases.push(testCase({ ...base, failure: { message: v.message, type: 'EXPECTATION_FAILED', text: verdictText(v) } }));
      else if (v.status === 'error')
        cases.push(testCase({ ...base, error: { message: v.message, type: 'EXPECTATION_ERROR', text: verdictText(v) } }));
      else if (v.status === 'skipped') cases.push(testCase({ ...base, skipped: {}, out: `skipped: ${v.message}` }));
      else cases.push(testCase({ ...base, out: v.message }));
    }
    let properties =
      property('environment.declared', t.declaredEnvironment) + property('environment.detected', t.detectedEnvironment ?? 'unknown');
    if (t.ready) properties += property('transport', t.ready.session);
    for (const [name, value] of Object.entries(t.sysinfo))
      properties += property(`sysinfo.${name}`, value === null ? 'null' : String(value));
    const open =
      `  <testsuite${attr('name', t.name)}${attr('timestamp', summary.start.started)}` +
      `${attr('time', t.cells.reduce((s, c) => s + c.durationMs, 0) / 1000)}${attr('tests', cases.length)}` +
      `${attr('failures', count(cases, 'failure'))}${attr('errors', count(cases, 'error'))}${attr('skipped', count(cases, 'skipped'))}>\n`;
    suites.push({
      xml: `${open}    <properties>\n${properties}    </properties>\n${cases.map((c) => c.xml).join('')}  </testsuite>\n`,
      cases,
    });
  }
  const all = suites.flatMap((s) => s.cases);
  // No "skipped" on <testsuites>: the JUnit 10 schema that CI tools validate against allows it on <testsuite> only.
  const root =
    `<testsuites${attr('name', `cudamatrix ${summary.start.runId}`)}${attr('tests', all.length)}` +
    `${attr('failures', count(all, 'failure'))}${attr('errors', count(all, 'error'))}`;
  const body = suites.length ? `${root}>\n${suites.map((s) => s.xml).join('')}</testsuites>` : `${root}/>`;
  return `<?xml version="1.0" encoding="UTF-8"?>\n${body}`;
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

export function junitReporter(file: string | ((runDir: string) => string)): SyncReporter {
  return {
    name: 'junit',
    onEnd(summary, context) {
      const out = typeof file === 'string' ? file : file(context.runDir);
      writeOutput(out, junitXml(withEventsFile(summary, context.eventsFile)));
    },
  };
}
