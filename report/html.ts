/**
 * records/behaviour.html: one self-contained page (inline CSS, inline script, the data embedded
 * as JSON; nothing fetched, so it works offline and from file://). Deterministic like
 * BEHAVIOUR.md: no date of generation, the data in a fixed order.
 */
import { pageScript } from './page-script.ts';
import type { LoadedRecord } from './load.ts';
import { pageData } from './page-data.ts';
import { buildTable, type BehaviourTable } from './behaviour-table.ts';

/** The page's style, shared with the claim pages (claim-pages.ts). */
export const CSS = `
:root { color-scheme: light; --fg: #1b1f24; --muted: #57606a; --line: #d0d7de; --bg-alt: #f6f8fa; --bad: #b42318; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--fg); margin: 0 auto; padding: 16px clamp(10px, 3vw, 24px) 48px; max-width: 1500px; }
h1 { font-size: 24px; margin: 8px 0; } h2 { font-size: 19px; margin: 28px 0 8px; border-bottom: 1px solid var(--line); } h3 { font-size: 15px; margin: 18px 0 6px; }
a { color: #0969da; text-decoration: none; } a:hover { text-decoration: underline; }
.scroll { overflow-x: auto; max-width: 100%; }
table { border-collapse: collapse; margin: 6px 0 12px; }
th, td { border: 1px solid var(--line); padding: 3px 8px; vertical-align: top; text-align: left; }
thead th { background: var(--bg-alt); }
table.facts th small { display: block; color: var(--muted); font-weight: normal; max-width: 420px; }
table.facts th.col { min-width: 160px; font-weight: 600; }
table.facts tr.group th { background: #eef2f7; }
@media (max-width: 700px) {
  /* A narrow screen: the fact names stay in view (sticky, wrapped) while the value columns scroll beside them. */
  table.facts tr:not(.group) > th:first-child { position: sticky; left: 0; z-index: 1; background: #fff; width: 11em; min-width: 11em; max-width: 11em; }
  table.facts thead tr > th:first-child { background: var(--bg-alt); }
  table.facts th small { max-width: none; }
  table.facts th.col { min-width: 9em; }
  table.facts td { overflow-wrap: anywhere; }
  /* Tables of numbers: each row a card of labelled values (the cell's data-label), so that every value is in view without scrolling sideways. */
  table.numbers, table.numbers > tbody, table.numbers > tbody > tr, table.numbers > tbody > tr > * { display: block; }
  table.numbers { border: 0; }
  table.numbers > thead { position: absolute; width: 1px; height: 1px; overflow: hidden; clip-path: inset(50%); }
  table.numbers > tbody > tr { border: 1px solid var(--line); margin: 0 0 8px; }
  table.numbers > tbody > tr > th { background: var(--bg-alt); border: 0; border-bottom: 1px solid var(--line); }
  table.numbers > tbody > tr > td { border: 0; white-space: normal; text-align: right; overflow-wrap: break-word; }
  table.numbers > tbody > tr > td[data-label]::before { content: attr(data-label); float: left; margin-right: 12px; color: var(--muted); font-weight: normal; text-align: left; }
  table.numbers td.none { text-align: right; }
}
table.numbers td { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; padding: 3px 6px; }
/* A key metric's note (the size, the source) may go under its value where the columns are many; a value keeps its unit. */
table.metrics td { white-space: normal; } span.num { white-space: nowrap; }
td.none { color: var(--muted); text-align: center; }
/* Identifiers wrap only after their underscores and dots (the <wbr> the script puts there); within a part, only if it cannot fit at all. */
.ident, .desc { overflow-wrap: break-word; word-break: normal; }
a.note-ref { text-decoration: none; } a.note-ref sup { font-size: 10px; margin-left: 1px; }
ol.reasons { color: var(--muted); margin: 0 0 12px; padding-left: 2em; } ol.reasons small { display: block; }
figure.plain p.plain-value { margin: 6px 0 12px; padding: 10px 12px; background: var(--bg-alt); border: 1px solid var(--line); }
td.conflict { background: #fff4e5; } td.varies { background: #f3f0ff; }
td.changed, td.drifted, td.changed-driver { background: #fff8c5; box-shadow: inset 3px 0 0 #d4a72c; font-weight: 600; }
small.was { display: block; color: var(--muted); font-weight: normal; }
/* Two charts a row from 580 px each: a memory table of six phases fits that whole (client.ts chartWidth follows it). */
.charts { display: grid; grid-template-columns: repeat(auto-fill, minmax(min(100%, 580px), 1fr)); gap: 12px 28px; }
.chart-and-table { min-width: 0; }
figure.chart-box { margin: 0; }
figcaption { font-weight: 600; margin: 4px 0; }
svg.chart { display: block; width: 100%; height: auto; background: #fff; }
svg.chart text { font-size: 11px; fill: var(--muted); } svg.chart text.label { font-size: 12px; fill: var(--fg); }
svg.chart line.grid { stroke: #eaeef2; } svg.chart line.zero { stroke: #8c959f; }
svg.chart line.hline { stroke: var(--bad); stroke-dasharray: 5 4; } svg.chart text.hline-label { fill: var(--bad); }
svg.chart text.point-label { fill: var(--fg); }
.legend span { margin-right: 14px; white-space: nowrap; display: inline-block; } .legend span.strong { font-weight: 600; } .legend svg.key { vertical-align: middle; }
select { max-width: 100%; } .pickers label { display: inline-block; margin: 0 12px 6px 0; max-width: 100%; }
.note { color: var(--muted); }
@media print {
  /* On paper nothing scrolls: every table is laid out within the page's width (wrapping where it must), charts are not cut across pages. */
  body { max-width: none; padding: 0; font-size: 11px; }
  .scroll { overflow: visible; }
  table { max-width: 100%; }
  table.facts th.col { min-width: 0; }
  table.facts td, table.facts th { overflow-wrap: anywhere; }
  table.facts th small { max-width: none; }
  table.numbers td { white-space: normal; }
  th, td { padding: 2px 4px; }
  tr, figure, svg.chart, .legend { break-inside: avoid; }
  h2, h3, figcaption { break-after: avoid; }
  a { color: inherit; }
}
`;

/** JSON that is safe inside <script>: no "</script", "<!--" or line separators can end or change it. */
export function scriptJson(value: unknown): string {
  // One pass over the page's data (a fleet's is megabytes): each character that could end the script or a line, escaped.
  return JSON.stringify(value).replace(/[<\u2028\u2029]/g, (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

export function renderHtml(
  records: readonly LoadedRecord[],
  opts: { recordsLink: string; recordsDirName: string },
  table: BehaviourTable = buildTable(records),
): string {
  const data = pageData(records, opts.recordsLink, table, opts.recordsDirName);
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>cudamatrix: how the NVIDIA driver behaves</title>
<style>${CSS}</style>
</head>
<body>
<h1>How the NVIDIA driver behaves</h1>
<p>What cudamatrix measured, per environment, GPU and driver version, from the behaviour records under <code>${escapeHtml(opts.recordsDirName)}</code>
(written by <code>cudamatrix report</code>; the same table as Markdown is BEHAVIOUR.md). Memory charts show each source's change since the
first phase; the tables under them the readings as recorded. The claims (C1–C28) are explained in docs/claims.md of the cudamatrix repository;
<a href="claims/index.html">the answer per claim</a> gathers, per environment and driver, what the records say of each (also as <a href="claims/claims.json">claims.json</a>).</p>
<noscript><p><strong>This page draws its tables and charts with JavaScript; turn it on, or read BEHAVIOUR.md.</strong></p></noscript>
<main id="report"></main>
<script type="application/json" id="report-data">${scriptJson(data)}</script>
<script>${pageScript()}</script>
</body>
</html>
`;
}

export function escapeHtml(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}
