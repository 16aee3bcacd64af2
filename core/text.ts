/** Text for error messages: what a remote shell, wsl.exe or an engine printed, on one line. */

export interface OneLineOptions {
  /** At most this many characters, with … where cut (default 400). */
  max?: number;
  /** Which end to keep when cut: the start (default) or the end (the last words of a failing command). */
  keep?: 'start' | 'end';
  /** Only the first (or, with keep: 'end', the last) this many lines. */
  lines?: number;
}

/** The text's lines, trimmed, blank ones left out, joined with " | ". */
export function oneLine(text: string, { max = 400, keep = 'start', lines }: OneLineOptions = {}): string {
  let parts = text
    .split(/\r?\n|\r/)
    .map((l) => l.trim())
    .filter(Boolean);
  if (lines !== undefined) parts = keep === 'end' ? parts.slice(-lines) : parts.slice(0, lines);
  const t = parts.join(' | ');
  if (t.length <= max) return t;
  return keep === 'end' ? `…${t.slice(-max)}` : `${t.slice(0, max)}…`;
}
