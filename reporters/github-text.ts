/** Text as GitHub takes it: bounded in characters or UTF-8 bytes, on one line, HTML-escaped. */

/** One table cell, one log line. */
export const CELL_CHARS = 80;
export const LINE_CHARS = 600;

export function bytes(text: string): number {
  return Buffer.byteLength(text, 'utf8');
}

/** At most `max` UTF-8 bytes of `text`, cut at a character. */
export function cutBytes(text: string, max: number): string {
  if (bytes(text) <= max) return text;
  const buf = Buffer.from(text, 'utf8').subarray(0, Math.max(0, max));
  // A cut inside a character leaves U+FFFD at the end: drop it.
  return buf.toString('utf8').replace(/\uFFFD$/, '');
}

/** At most `max` characters, with … where cut. */
export function cut(text: string, max: number): string {
  const chars = [...text];
  return chars.length <= max ? text : `${chars.slice(0, max - 1).join('')}…`;
}

export function oneLine(text: string, max: number): string {
  return cut(text.replace(/\s*\r?\n\s*/g, ' ⏎ '), max);
}

/** Text for HTML (the summary's <details>, <pre> and <code>, and Markdown around them). */
export function esc(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

/** A table cell: one line, bounded, HTML escaped, no column separator. */
export function cellText(text: string): string {
  return esc(oneLine(text, CELL_CHARS)).replace(/\|/g, '&#124;');
}
