/**
 * cudamatrix report: regenerates BEHAVIOUR.md, behaviour.html and the claim pages from the behaviour records.
 * With --check it writes nothing and fails when the files differ from what the records give
 * (for CI: the committed table must match the committed records).
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { writeFileAtomic } from '../core/fs.ts';
import { renderReport, reportFiles, reportPaths } from '../report/write-report.ts';
import { CLAIMS_DIR, CLAIMS_INDEX_FILE, CLAIMS_JSON_FILE } from '../report/claim-pages.ts';
import { loadRecords } from '../report/load.ts';
import { keyText } from '../behaviour/behaviour-record.ts';
import { KEPT_KEY_METRICS } from '../report/key-metrics.ts';

export interface ReportOptions {
  recordsDir: string;
  out: string;
  check: boolean;
  /** Where the claim pages link the repository's docs/ (default: docs/ beside the records folder). */
  docsUrl?: string;
}

export function reportCommand(opts: ReportOptions): number {
  // Of the records not shown in full, only the key metrics the tables read are kept.
  const records = loadRecords(opts.recordsDir, KEPT_KEY_METRICS);
  const paths = reportPaths(opts.recordsDir, opts.out);
  const outputs = renderReport(records, opts.docsUrl ? { ...paths, docsLink: opts.docsUrl.replace(/\/+$/, '') } : paths);
  const files = reportFiles(outputs).map(([file, text]): [string, string] => [path.join(opts.out, file), text]);
  // One column per key (columnsOf's grouping, without its drift comparisons again).
  const columns = new Set(records.map((loaded) => keyText(loaded.record.key))).size;
  const what = `${records.length} record${records.length === 1 ? '' : 's'} in ${columns} column${columns === 1 ? '' : 's'} from ${opts.recordsDir}`;
  if (opts.check) {
    const stale = files.filter(([file, text]) => !existsSync(file) || readFileSync(file, 'utf8') !== text).map(([file]) => file);
    if (stale.length) {
      process.stderr.write(
        `${stale.join(' and ')} ${stale.length === 1 ? 'does' : 'do'} not match the records (${what}); run cudamatrix report --records-dir ${opts.recordsDir} --out ${opts.out} and commit the result\n`,
      );
      return 1;
    }
    process.stdout.write(`${files[0]![0]}, ${files[1]![0]} and ${files.length - 2} claim files match the records (${what})\n`);
    return 0;
  }
  for (const [file, text] of files) writeFileAtomic(file, text);
  const kib = (text: string) => `${(Buffer.byteLength(text) / 1024).toFixed(0)} KiB`;
  process.stdout.write(
    `wrote ${files[0]![0]} (${kib(outputs.markdown)}) and ${files[1]![0]} (${kib(outputs.html)}, open it in a browser: it needs no network) from ${what}, ` +
      `and the answer per claim in ${path.join(opts.out, CLAIMS_DIR)} (${CLAIMS_INDEX_FILE}, ${CLAIMS_JSON_FILE}, their stylesheet and ${outputs.claims.length - 3} pages C<n>.html)\n`,
  );
  return 0;
}
