/**
 * The script of behaviour.html: it reads the page's embedded data (page-data.ts) and draws every
 * table and chart with the DOM and SVG. Bundled into the page by esbuild (report/page-script.ts),
 * with the formatting code the console and BEHAVIOUR.md use (core/units.ts, report/value-text.ts),
 * so the page needs nothing from outside (no CDN, no fetch).
 */
import type { PageData } from '../page-data.ts';
import { setChartWidth } from './chart.ts';
import { columnChartsSection, compareCharts } from './column-charts.ts';
import { el } from './dom.ts';
import { factsSection } from './facts-table.ts';
import { betweenDriversSection, driftSection, keyMetricsSection } from './metric-sections.ts';

function drawPage(): void {
  const data = JSON.parse(document.getElementById('report-data')!.textContent!) as PageData;
  const strs = data.strs;
  const cols = data.columns;
  const root = document.getElementById('report')!;

  // The summary line.
  const envs: string[] = [];
  const drivers: string[] = [];
  cols.forEach((column) => {
    if (envs.indexOf(strs[column.env]!) < 0) envs.push(strs[column.env]!);
    if (drivers.indexOf(strs[column.driver]!) < 0) drivers.push(strs[column.driver]!);
  });
  const plural = (count: number, word: string) => count + ' ' + word + (count === 1 ? '' : 's');
  root.appendChild(
    el('p', { id: 'summary' }, [
      plural(data.records, 'record') +
        ' in ' +
        plural(cols.length, 'column') +
        (cols.length ? '; environments: ' + envs.join(', ') + '; driver versions: ' + drivers.join(', ') : '') +
        '.',
    ]),
  );
  if (!cols.length) {
    root.appendChild(
      el('p', {}, ['No behaviour records yet: write some with cudamatrix record <events.jsonl>, then run cudamatrix report.']),
    );
    return;
  }
  // Two charts a row where the page is wide enough, one where it is not: drawn at the width they get, so the text stays readable.
  const avail = root.clientWidth || 660;
  // (As html.ts's .charts grid: two columns of at least 580 px, the width a memory table of six phases needs, and a 28 px gap.)
  setChartWidth(Math.round(Math.max(300, Math.min(900, avail >= 2 * 580 + 28 ? (avail - 28) / 2 : avail))));

  factsSection(root, data);
  keyMetricsSection(root, data);
  betweenDriversSection(root, data);
  driftSection(root, data);
  compareCharts(root, data);
  columnChartsSection(root, data);
}

drawPage();
