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
  const m = /^([^[\]]*)\[([^\]]*)\](.*)$/.exec(item);
  if (!m) return /^[A-Za-z0-9._-]+$/.test(item) ? { names: [item] } : { error: `"${item}" is not a node name` };
  const [, prefix, ranges, rest] = m as unknown as [string, string, string, string];
  const numbers: string[] = [];
  for (const part of ranges.split(',')) {
    const r = /^(\d+)(?:-(\d+))?$/.exec(part);
    if (!r) return { error: `"[${ranges}]" is not a list of numbers and ranges (e.g. [01-04,07])` };
    const from = Number(r[1]);
    const to = r[2] === undefined ? from : Number(r[2]);
    if (to < from) return { error: `the range ${part} runs backwards` };
    if (to - from + 1 > MAX_HOSTS) return { error: `the range ${part} names more than ${MAX_HOSTS} nodes` };
    const width = r[1]!.length;
    if (numbers.length + (to - from + 1) > MAX_HOSTS) return { error: `"[${ranges}]" names more than ${MAX_HOSTS} nodes` };
    for (let n = from; n <= to; n++) numbers.push(String(n).padStart(width, '0'));
  }
  const restNames = rest ? expandItem(rest) : { names: [''] };
  if ('error' in restNames) return restNames;
  // Counted before expanding: n[1-3000]-g[1-3000] would be nine million names.
  if (numbers.length * restNames.names.length > MAX_HOSTS) return { error: `"${item}" names more than ${MAX_HOSTS} nodes` };
  const names = numbers.flatMap((n) => restNames.names.map((t) => `${prefix}${n}${t}`));
  if (!names.every((n) => /^[A-Za-z0-9._-]+$/.test(n))) return { error: `"${item}" does not give node names` };
  return { names };
}
