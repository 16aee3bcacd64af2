/**
 * Plain-text tables: columns padded to their widest cell, for the console, the CLI and the benches.
 */
export function formatTable(header: string[], rows: string[][]): string {
  const widths = header.map((heading, i) => Math.max(heading.length, ...rows.map((row) => (row[i] ?? '').length)));
  const line = (cells: string[]) =>
    cells
      .map((cell, i) => cell.padEnd(widths[i]!))
      .join('  ')
      .trimEnd();
  return [line(header), widths.map((width) => '-'.repeat(width)).join('  '), ...rows.map(line)].join('\n');
}
