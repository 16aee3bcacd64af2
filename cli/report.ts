/**
 * cudamatrix report: regenerates BEHAVIOUR.md and behaviour.html from the behaviour records.
 * With --check it writes nothing and fails when the files differ from what the records give
 * (for CI: the committed table must match the committed records).
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { writeFileAtomic } from '../core/fs.ts';
import { HTML_FILE, MARKDOWN_FILE, renderReport, reportPaths } from '../report/write-report.ts';
import { loadRecords } from '../report/load.ts';
import { keyText } from '../behaviour/behaviour-record.ts';
import { KEPT_KEY_METRICS } from '../report/behaviour-table.ts';

export interface ReportOptions {
  recordsDir: string;
  out: string;
  check: boolean;
}

export function reportCommand(opts: ReportOptions): number {
  // Of the records not shown in full, only the key metrics the tables read are kept.
  const records = loadRecords(opts.recordsDir, KEPT_KEY_METRICS);
  const outputs = renderReport(records, reportPaths(opts.recordsDir, opts.out));
  const files: [string, string][] = [
    [path.join(opts.out, MARKDOWN_FILE), outputs.markdown],
    [path.join(opts.out, HTML_FILE), outputs.html],
  ];
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
    process.stdout.write(`${files.map(([file]) => file).join(' and ')} match the records (${what})\n`);
    return 0;
  }
  for (const [file, text] of files) writeFileAtomic(file, text);
  const kib = (text: string) => `${(Buffer.byteLength(text) / 1024).toFixed(0)} KiB`;
  process.stdout.write(
    `wrote ${files[0]![0]} (${kib(outputs.markdown)}) and ${files[1]![0]} (${kib(outputs.html)}, open it in a browser: it needs no network) from ${what}\n`,
  );
  return 0;
}
