/**
 * `cudamatrix report`'s work, apart from the command line: the records in, BEHAVIOUR.md,
 * behaviour.html and the claim pages (claims/: index.html, claims.json, C<n>.html) out. Links and folder names are relative to the output folder, so the output
 * does not depend on where the command runs.
 */
import path from 'node:path';
import type { LoadedRecord } from './load.ts';
import { renderHtml } from './html.ts';
import { renderMarkdown } from './markdown.ts';
import { buildTable } from './behaviour-table.ts';
import { buildClaimIndex, claimsJson, claimTitles, type ClaimTitle } from './claim-index.ts';
import { renderClaimFiles } from './claim-pages.ts';

export const MARKDOWN_FILE = 'BEHAVIOUR.md';
export const HTML_FILE = 'behaviour.html';

export interface ReportOutputs {
  markdown: string;
  html: string;
  /** The claim pages and claims.json: [file relative to the output folder, text][]. */
  claims: [file: string, text: string][];
}

export interface ReportPaths {
  recordsLink: string;
  recordsDirName: string;
  /**
   * The repository's docs/ folder as the claim pages link it (claims.md, measure-your-machine.md):
   * by default docs/ beside the records folder, as in the repository; a site that holds only the
   * records passes the repository's docs on the web (report --docs-url), an absolute URL.
   */
  docsLink?: string;
}

/** Every file of the report, relative to the output folder, in the order they are written. */
export function reportFiles(outputs: ReportOutputs): [file: string, text: string][] {
  return [[MARKDOWN_FILE, outputs.markdown], [HTML_FILE, outputs.html], ...outputs.claims];
}

/** The records folder as links from the output folder ("records") and as the reader knows it ("records": from the folder above the output). */
export function reportPaths(recordsDir: string, outDir: string): { recordsLink: string; recordsDirName: string } {
  const toPosix = (nativePath: string) => nativePath.split(path.sep).join('/');
  const recordsLink = toPosix(path.relative(path.resolve(outDir), path.resolve(recordsDir))) || '.';
  const recordsDirName = toPosix(path.relative(path.dirname(path.resolve(outDir)), path.resolve(recordsDir))) || '.';
  return { recordsLink, recordsDirName };
}

export function renderReport(
  records: readonly LoadedRecord[],
  paths: ReportPaths,
  titles: readonly ClaimTitle[] = claimTitles(),
): ReportOutputs {
  const table = buildTable(records);
  // The claim pages lie one folder down (claims/): their links go up one more.
  const up = (link: string) => path.posix.normalize(`../${link}`);
  const index = buildClaimIndex(table, titles, up(paths.recordsLink));
  const docs = paths.docsLink ?? up(`${paths.recordsLink}/../docs`);
  return {
    markdown: renderMarkdown(records, paths, table),
    html: renderHtml(records, paths, table),
    claims: renderClaimFiles(index, { report: up(HTML_FILE), docs }, claimsJson(index)),
  };
}
