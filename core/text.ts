/** Text for error messages: what a remote shell, wsl.exe or an engine printed, on one line. */

export interface OneLineOptions {
  /** At most this many characters, with … where cut, at a word's edge (default 400). */
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
    .map((line) => line.trim())
    .filter(Boolean);
  if (lines !== undefined) parts = keep === 'end' ? parts.slice(-lines) : parts.slice(0, lines);
  const joined = parts.join(' | ');
  if (joined.length <= max) return joined;
  return keep === 'end'
    ? `…${cutAtWord(joined.slice(-max), joined[joined.length - max - 1]!, 'start')}`
    : `${cutAtWord(joined.slice(0, max), joined[max]!, 'end')}…`;
}

/**
 * A cut piece of text less the part-word at its cut `side` (`beyond`: the character just past
 * that side), so that no word is shown in part. A piece that is one long word is kept as it is.
 */
function cutAtWord(piece: string, beyond: string, side: 'start' | 'end'): string {
  if (/\s/.test(beyond)) return side === 'start' ? piece.trimStart() : piece.trimEnd();
  if (side === 'start') {
    const at = piece.search(/\s/);
    return at < 0 ? piece : piece.slice(at).trimStart();
  }
  const at = piece.search(/\s\S*$/);
  return at < 0 ? piece : piece.slice(0, at).trimEnd();
}
