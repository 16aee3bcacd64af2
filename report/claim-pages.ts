/**
 * The claim pages in claims/ beside behaviour.html: index.html (every claim, its observations per
 * environment class), claims.json (the same index for tools) and C<n>.html (one claim: its answer per environment, per driver
 * version and GPU family, with the records behind it, and where each behaviour held). Plain
 * static HTML: no script, nothing fetched, the data only in text and attributes, so the pages
 * read anywhere (file://, a Pages site, a text browser). The number tables turn into cards on a
 * narrow screen as behaviour.html's do (its CSS, table.numbers).
 */
import { KEY_METRICS } from './key-metrics.ts';
import { CSS, escapeHtml } from './html.ts';
import { factValueText, keyMetricText } from './value-text.ts';
import {
  claimPage,
  type ClaimEntry,
  type ClaimIndex,
  type DriverAnswer,
  type EnvironmentAnswer,
  type MetricAnswer,
} from './claim-index.ts';

/** The claim pages' folder under the report's output folder, and its files. */
export const CLAIMS_DIR = 'claims';
export const CLAIMS_INDEX_FILE = 'index.html';
export const CLAIMS_JSON_FILE = 'claims.json';

/** Where the pages link, from the claims folder: behaviour.html, and the docs/ folder of the repository. */
export interface ClaimLinks {
  report: string;
  docs: string;
}

/** The pages' one stylesheet, beside them: behaviour.html's CSS and the few rules of their own. */
export const CLAIMS_CSS_FILE = 'claims.css';

const CLAIM_CSS = `
nav.crumbs { color: var(--muted); margin: 4px 0 8px; }
table.claim td.text { white-space: normal; text-align: left; overflow-wrap: anywhere; }
table.claim td.text ul { margin: 0; padding: 0; list-style: none; }
table.claim tbody th { overflow-wrap: anywhere; }
td.none, td.text.none { color: var(--muted); }
p.contribute { padding: 10px 12px; background: var(--bg-alt); border: 1px solid var(--line); }
`;

const esc = escapeHtml;

/** A claim's title as HTML: docs/claims.md's `code` spans as <code>. */
export function titleHtml(title: string): string {
  return esc(title).replace(/`([^`]+)`/g, '<code>$1</code>');
}

function page(title: string, body: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${esc(title)}</title>
<link rel="stylesheet" href="${CLAIMS_CSS_FILE}">
</head>
<body>
${body}
</body>
</html>
`;
}

const NO_OBSERVATION = 'no observation yet';

/** The paragraph every page ends with: how a reader adds the missing observations. */
function contribute(links: ClaimLinks): string {
  return `<h2 id="contribute">Add an observation</h2>
<p class="contribute">An environment marked “${NO_OBSERVATION}” has no record: nobody has measured it with cudamatrix yet, so the claim is open there.
If you have such a machine (Windows with WDDM, TCC or MCDM, WSL2, Linux or Docker), measure it and submit the record:
<a href="${esc(links.docs)}/measure-your-machine.md">Measure your machine</a> says how, step by step
(<a href="${esc(links.docs)}/records.md">records.md</a>: what a record holds and how it is checked).</p>`;
}

/** A record's link as "date id" (its file name ends with them). */
function recordLink(link: string): string {
  const name = link.slice(link.lastIndexOf('/') + 1).replace(/\.json$/, '');
  const match = /(\d{4}-\d{2}-\d{2})-([0-9a-f]+)$/.exec(name);
  return `<a href="${esc(link)}">${esc(match ? `${match[1]} ${match[2]}` : name)}</a>`;
}

const plural = (count: number, one: string) => `${count} ${one}${count === 1 ? '' : 's'}`;

/** "pinned-vram.counts_as_vram" as the page writes it: the probe, then the fact, breakable after the dot. */
const factHtml = (fact: string) => `<code class="ident">${esc(fact).replace(/\./g, '.<wbr>').replace(/_/g, '_<wbr>')}</code>`;

function factAnswers(driver: DriverAnswer): string {
  if (!driver.facts.length) return '—';
  const items = driver.facts.map(
    (fact) =>
      `<li>${factHtml(fact.fact)}: ${fact.values
        .map((count) => `<strong>${esc(factValueText(fact.fact, count.value))}</strong> ×${count.observations}`)
        .join(', ')}</li>`,
  );
  return `<ul>${items.join('')}</ul>`;
}

function metricText(metric: MetricAnswer): string {
  const spec = KEY_METRICS.find((keyMetric) => keyMetric.label === metric.label) ?? {};
  const low = keyMetricText(spec, metric.min, metric.unit);
  const high = keyMetricText(spec, metric.max, metric.unit);
  return low === high ? low : `${low} to ${high}`;
}

function metricAnswers(driver: DriverAnswer): string {
  if (!driver.metrics.length) return '—';
  return `<ul>${driver.metrics.map((metric) => `<li>${esc(metric.label)}: <strong>${esc(metricText(metric))}</strong> (${plural(metric.observations, 'observation')})</li>`).join('')}</ul>`;
}

/** The one-line answer of an environment: each fact's values with their counts, over all its drivers. */
function environmentSummary(env: EnvironmentAnswer): string {
  if (!env.observations) return NO_OBSERVATION;
  const byFact = new Map<string, Map<string, number>>();
  for (const span of env.held) {
    const values = byFact.get(span.fact) ?? byFact.set(span.fact, new Map()).get(span.fact)!;
    values.set(factValueText(span.fact, span.value), span.observations);
  }
  const items = [...byFact].map(
    ([fact, values]) =>
      `<li>${factHtml(fact)}: ${[...values].map(([value, count]) => `<strong>${esc(value)}</strong> ×${count}`).join(', ')}</li>`,
  );
  return items.length ? `<ul>${items.join('')}</ul>` : 'numbers only: see the drivers below';
}

function driversRange(env: EnvironmentAnswer): string {
  if (!env.drivers.length) return '—';
  const first = env.drivers[0]!.driver;
  const last = env.drivers.at(-1)!.driver;
  return first === last ? esc(first) : `${esc(first)} to ${esc(last)}`;
}

function environmentTable(claim: ClaimEntry): string {
  const rows = claim.environments.map((env) => {
    const families = [...new Set(env.drivers.map((driver) => driver.gpuFamily))];
    const label = env.observations ? `<a href="#env-${esc(env.environment)}">${esc(env.label)}</a>` : esc(env.label);
    return `<tr><th>${label}</th><td data-label="observations">${env.observations}</td><td data-label="drivers">${driversRange(env)}</td><td data-label="GPU families" class="text">${families.length ? esc(families.join(', ')) : '—'}</td><td data-label="answer" class="text${env.observations ? '' : ' none'}">${environmentSummary(env)}</td></tr>`;
  });
  return `<div class="scroll"><table class="numbers claim envs"><thead><tr><th>environment</th><th>observations</th><th>drivers</th><th>GPU families</th><th>answer (value ×observations)</th></tr></thead>
<tbody>
${rows.join('\n')}
</tbody></table></div>`;
}

function environmentSection(env: EnvironmentAnswer): string {
  const drivers = env.drivers.map(
    (driver) =>
      `<tr><th>driver ${esc(driver.driver)}</th><td data-label="GPU family" class="text">${esc(driver.gpuFamily)}</td><td data-label="GPUs" class="text">${esc(driver.gpus.join(', '))}</td><td data-label="observations">${driver.observations}</td><td data-label="facts" class="text">${factAnswers(driver)}</td><td data-label="key metrics" class="text">${metricAnswers(driver)}</td><td data-label="records" class="text"><ul>${driver.records.map((link) => `<li>${recordLink(link)}</li>`).join('')}</ul></td></tr>`,
  );
  const held = env.held.map(
    (span) =>
      `<tr><th>${factHtml(span.fact)}</th><td data-label="value"><strong>${esc(factValueText(span.fact, span.value))}</strong></td><td data-label="first driver">${esc(span.firstDriver)}</td><td data-label="last driver">${esc(span.lastDriver)}</td><td data-label="drivers">${span.drivers}</td><td data-label="observations">${span.observations}</td></tr>`,
  );
  return `<h2 id="env-${esc(env.environment)}">${esc(env.label)}: ${plural(env.observations, 'observation')}</h2>
<h3>Per driver version and GPU family</h3>
<div class="scroll"><table class="numbers claim drivers"><thead><tr><th>driver</th><th>GPU family</th><th>GPUs</th><th>observations</th><th>facts (value ×observations)</th><th>key metrics (lowest to highest)</th><th>records</th></tr></thead>
<tbody>
${drivers.join('\n')}
</tbody></table></div>
${
  held.length
    ? `<h3>Where each behaviour held</h3>
<p class="note">Per fact and value, the first and last driver version of ${esc(env.label)} whose records observed it.</p>
<div class="scroll"><table class="numbers claim held"><thead><tr><th>fact</th><th>value</th><th>first driver</th><th>last driver</th><th>drivers</th><th>observations</th></tr></thead>
<tbody>
${held.join('\n')}
</tbody></table></div>`
    : '<p class="note">This claim is answered by numbers, not facts: the key metrics above, and their charts in behaviour.html.</p>'
}`;
}

function crumbs(links: ClaimLinks, here: string | null): string {
  const report = `<a href="${esc(links.report)}">How the NVIDIA driver behaves</a>`;
  return `<nav class="crumbs">${report} › ${here === null ? 'The answer per claim' : `<a href="${CLAIMS_INDEX_FILE}">The answer per claim</a> › ${esc(here)}`}</nav>`;
}

/** One claim's page. */
export function renderClaimPage(claim: ClaimEntry, links: ClaimLinks): string {
  const probes = claim.probes.map((probe) => `<code>${esc(probe.name)}</code> (${esc(probe.title)})`).join(', ');
  const observed = claim.environments.filter((env) => env.observations > 0);
  const body = `${crumbs(links, claim.id)}
<h1>${esc(claim.id)}: ${titleHtml(claim.title)}</h1>
<p>What the behaviour records say of this claim, per environment, driver version and GPU family. ${
    probes ? `Decided by ${probes}.` : 'No probe of this cudamatrix decides it.'
  } Where the claim comes from and how the probe decides it: <a href="${esc(links.docs)}/claims.md">docs/claims.md</a>.
${plural(claim.observations, 'observation')} in all; each links to its record. The same as JSON: <a href="${CLAIMS_JSON_FILE}">${CLAIMS_JSON_FILE}</a>.</p>
<h2 id="per-environment">Per environment</h2>
${environmentTable(claim)}
${observed.map(environmentSection).join('\n')}
${contribute(links)}`;
  return page(`${claim.id}: ${claim.title.replace(/`/g, '')} · cudamatrix`, body);
}

/** claims/index.html: every claim and its observations per environment class. */
export function renderClaimsIndex(index: ClaimIndex, links: ClaimLinks): string {
  const classes = index.claims[0]?.environments ?? [];
  const rows = index.claims.map((claim) => {
    const cells = claim.environments.map((env) =>
      env.observations
        ? `<td data-label="${esc(env.label)}"><a href="${claimPage(claim.id)}#env-${esc(env.environment)}">${plural(env.observations, 'observation')}</a></td>`
        : `<td data-label="${esc(env.label)}" class="none">${NO_OBSERVATION}</td>`,
    );
    return `<tr><th><a href="${claimPage(claim.id)}">${esc(claim.id)}</a>: ${titleHtml(claim.title)}</th>${cells.join('')}</tr>`;
  });
  const body = `${crumbs(links, null)}
<h1>The answer per claim</h1>
<p>Each claim of <a href="${esc(links.docs)}/claims.md">docs/claims.md</a> and how many behaviour records observed it, per environment.
A claim's page gives its answer per environment, driver version and GPU family, with links to the records, and where each behaviour held.
For tools: the same index as JSON, <a href="${CLAIMS_JSON_FILE}">${CLAIMS_JSON_FILE}</a>.</p>
<div class="scroll"><table class="numbers claim index"><thead><tr><th>claim</th>${classes.map((env) => `<th>${esc(env.label)}</th>`).join('')}</tr></thead>
<tbody>
${rows.join('\n')}
</tbody></table></div>
${contribute(links)}`;
  return page('The answer per claim · cudamatrix', body);
}

/** Every claim file, relative to the output folder: claims/index.html, claims/claims.json and a page per claim. */
export function renderClaimFiles(index: ClaimIndex, links: ClaimLinks, json: string): [file: string, text: string][] {
  return [
    [`${CLAIMS_DIR}/${CLAIMS_INDEX_FILE}`, renderClaimsIndex(index, links)],
    [`${CLAIMS_DIR}/${CLAIMS_JSON_FILE}`, json],
    [`${CLAIMS_DIR}/${CLAIMS_CSS_FILE}`, `${CSS.trim()}\n${CLAIM_CSS.trim()}\n`],
    ...index.claims.map((claim): [string, string] => [`${CLAIMS_DIR}/${claim.page}`, renderClaimPage(claim, links)]),
  ];
}
