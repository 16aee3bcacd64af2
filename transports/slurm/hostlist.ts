/**
 * Slurm hostlist expressions, as `scontrol show hostnames` expands them: names separated by
 * commas, each with bracketed ranges and lists ("gpu[01-04,07]", "rack[1-2]-gpu[1-2]"); a range's
 * leading zeros give every number its width. Pure: fan-out is expanded at plan time, without the
 * cluster.
 */

/** Most names one expression may give: a typo such as gpu[1-100000] is refused, not planned. */
export const MAX_HOSTS = 4096;

/** The names in `expr`, in order, or a message saying what is wrong with it. */
export function expandHostlist(expr: string): string[] | { error: string } {
  const items = splitTop(expr.trim());
  if (!items) return { error: `"${expr}" has an unclosed or stray bracket` };
  const names: string[] = [];
  for (const item of items) {
    if (!item) return { error: `"${expr}" has an empty name (two commas, or one at an end)` };
    const expanded = expandItem(item);
    if ('error' in expanded) return { error: `"${expr}": ${expanded.error}` };
    names.push(...expanded.names);
    if (names.length > MAX_HOSTS) return { error: `"${expr}" names more than ${MAX_HOSTS} nodes` };
  }
  return [...new Set(names)];
}

/** Splits at commas outside brackets; undefined when the brackets do not pair. */
function splitTop(expr: string): string[] | undefined {
  const out: string[] = [];
  let depth = 0;
  let current = '';
  for (const ch of expr) {
    if (ch === '[') depth++;
    if (ch === ']') depth--;
    if (depth < 0 || depth > 1) return undefined;
    if (ch === ',' && depth === 0) {
      out.push(current);
      current = '';
    } else current += ch;
  }
  if (depth !== 0) return undefined;
  out.push(current);
  return out;
}

function expandItem(item: string): { names: string[] } | { error: string } {
  const match = /^([^[\]]*)\[([^\]]*)\](.*)$/.exec(item);
  if (!match) return /^[A-Za-z0-9._-]+$/.test(item) ? { names: [item] } : { error: `"${item}" is not a node name` };
  const [, prefix, ranges, rest] = match as unknown as [string, string, string, string];
  const numbers: string[] = [];
  for (const part of ranges.split(',')) {
    const rangeMatch = /^(\d+)(?:-(\d+))?$/.exec(part);
    if (!rangeMatch) return { error: `"[${ranges}]" is not a list of numbers and ranges (e.g. [01-04,07])` };
    const from = Number(rangeMatch[1]);
    const to = rangeMatch[2] === undefined ? from : Number(rangeMatch[2]);
    if (to < from) return { error: `the range ${part} runs backwards` };
    if (to - from + 1 > MAX_HOSTS) return { error: `the range ${part} names more than ${MAX_HOSTS} nodes` };
    const width = rangeMatch[1]!.length;
    if (numbers.length + (to - from + 1) > MAX_HOSTS) return { error: `"[${ranges}]" names more than ${MAX_HOSTS} nodes` };
    for (let nodeNumber = from; nodeNumber <= to; nodeNumber++) numbers.push(String(nodeNumber).padStart(width, '0'));
  }
  const restNames = rest ? expandItem(rest) : { names: [''] };
  if ('error' in restNames) return restNames;
  // Counted before expanding: n[1-3000]-g[1-3000] would be nine million names.
  if (numbers.length * restNames.names.length > MAX_HOSTS) return { error: `"${item}" names more than ${MAX_HOSTS} nodes` };
  const names = numbers.flatMap((digits) => restNames.names.map((suffix) => `${prefix}${digits}${suffix}`));
  if (!names.every((name) => /^[A-Za-z0-9._-]+$/.test(name))) return { error: `"${item}" does not give node names` };
  return { names };
}
