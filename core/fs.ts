import { lstatSync, mkdirSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';

/** Writes through a temporary file and a rename, so that a reader never sees half a file. */
export function writeFileAtomic(file: string, text: string): void {
  mkdirSync(path.dirname(file), { recursive: true });
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, text);
  renameSync(tmp, file);
}

/**
 * Writes an output the user named (--junit FILE, --reporter json:FILE): "-" is stdout; a path
 * that exists and is not a plain regular file (/dev/stdout and other links, /dev/null, a FIFO)
 * is written through, never replaced; a new path or a regular file is replaced atomically.
 */
export function writeOutput(target: string, text: string): void {
  if (target === '-') {
    process.stdout.write(text);
    return;
  }
  let existing: ReturnType<typeof lstatSync> | undefined;
  try {
    existing = lstatSync(target); // the path itself: /dev/stdout is a link, whatever it points to
  } catch {
    existing = undefined;
  }
  if (existing && !existing.isFile()) {
    writeFileSync(target, text);
    return;
  }
  writeFileAtomic(target, text);
}
