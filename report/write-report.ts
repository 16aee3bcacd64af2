/**
 * `cudamatrix report`'s work, apart from the command line: the records in, BEHAVIOUR.md and
 * behaviour.html out. Links and folder names are relative to the output folder, so the output
 * does not depend on where the command runs.
 */
import path from 'node:path';
import type { LoadedRecord } from './load.ts';
import { renderHtml } from './html.ts';
import { renderMarkdown } from './markdown.ts';
import { buildTable } from './behaviour-table.ts';

export const MARKDOWN_FILE = 'BEHAVIOUR.md';
export const HTML_FILE = 'behaviour.html';

export interface ReportOutputs {
  markdown: string;
  html: string;
}

/** The records folder as links from the output folder ("records") and as the reader knows it ("records": from the folder above the output). */
export function reportPaths(recordsDir: string, outDir: string): { recordsLink: string; recordsDirName: string } {
  const toPosix = (nativePath: string) => nativePath.split(path.sep).join('/');
  const recordsLink = toPosix(path.relative(path.resolve(outDir), path.resolve(recordsDir))) || '.';
  const recordsDirName = toPosix(path.relative(path.dirname(path.resolve(outDir)), path.resolve(recordsDir))) || '.';
  return { recordsLink, recordsDirName };
}

export function renderReport(records: readonly LoadedRecord[], paths: { recordsLink: string; recordsDirName: string }): ReportOutputs {
  const table = buildTable(records);
  return { markdown: renderMarkdown(records, paths, table), html: renderHtml(records, paths, table) };
}
