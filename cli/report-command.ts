/**
 * `cudamatrix report` on the command line: options, arguments and help. The command's code
 * (cli/report.ts) is imported only when it runs, so that --help loads none of it.
 */
import type { Command } from 'commander';

export function addReportCommand(program: Command): void {
  program
    .command('report')
    .description(
      'regenerate BEHAVIOUR.md (the behaviour table: facts as rows, environment x GPU x driver as columns, each value linking to its record) behaviour.html (the same with charts, one self-contained page) and the answer per claim (claims/: index.html, C<n>.html, claims.json) from the behaviour records',
    )
    .option('--records-dir <dir>', 'the records: <dir>/driver-<version>/*.json, as cudamatrix record writes them', 'records')
    .option(
      '--out <dir>',
      'folder for BEHAVIOUR.md, behaviour.html and the claim pages (links to the records are relative to it)',
      'records',
    )
    .option(
      '--docs-url <url>',
      "where the claim pages link the repository's docs/ folder (claims.md, measure-your-machine.md); default: docs/ beside the records folder, as in the repository",
    )
    .option('--check', 'write nothing; exit 1 when the files in --out differ from what the records give (for CI)', false)
    .addHelpText(
      'after',
      `
The page works offline (no CDN, nothing fetched): open behaviour.html in a browser. Its charts
show each probe from the newest record of the column that measured it: memory per phase per
source for pinned-vram, pinned-release and multi-process-pinned (C1-C3, C14), bandwidth against
transfer size, latencies, and the pinned ceiling against free VRAM, with another column drawn
over them on request; its tables show the numbers as the console does (the exact value on hover). A fact
that changed from the previous driver, and metrics that drifted beyond their noise from a
column's record before the newest, are marked (docs/records.md).
Beside them, claims/index.html and a page per claim (claims/C1.html, ...) give each claim's answer per
environment class (WDDM, TCC, MCDM, WSL2, Linux, Docker), driver version and GPU family, with
the number of observations, links to the records and where each behaviour held; claims.json is
the same index for tools. Static HTML: no script, nothing fetched.
The same records always give the same bytes, so every file can be committed and checked.

Exit status:
  0  written (with --check: the files match the records)
  1  --check, and the files differ from what the records give
  2  a record that cannot be read (named, with what is wrong), or a records folder that is not there or is another folder
  6  a file of the report could not be written (a full disk, no permission: named, with the cause)`,
    )
    .action(async (opts: { recordsDir: string; out: string; check: boolean; docsUrl?: string }) => {
      process.exitCode = (await import('./report.ts')).reportCommand(opts);
    });
}
