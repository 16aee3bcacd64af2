import { randomBytes } from 'node:crypto';
import {
  closeSync,
  existsSync,
  linkSync,
  lstatSync,
  mkdirSync,
  openSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import path from 'node:path';
import { CudamatrixError } from './errors.ts';

/** Per error code: the cause in words, and what to do about it. */
const causes: Record<string, [string, string]> = {
  ENOSPC: ['no space left on the device', 'Free space there or name another place'],
  EDQUOT: ['the disk quota is used up', 'Free space there or name another place'],
  EACCES: ['permission denied', 'Name a place you may write to'],
  EPERM: ['not permitted', 'Name a place you may write to'],
  EROFS: ['a read-only file system', 'Name a place on a writable file system'],
  EFBIG: ['the file is too large for the file system', 'Name a place on another file system'],
  EIO: ['an input/output error', 'Check the disk, or name another place'],
  ENOENT: ['its folder does not exist', 'Create the folder or name another place'],
  ENOTDIR: ['a part of its path is a file, not a folder', 'Name another place'],
  EISDIR: ['it is a folder', 'Name a file, not a folder'],
};

/** The error for a file that could not be written (exit 6): the file, the cause, what to do. */
export function outputError(file: string, error: unknown, holds = 'nothing of it was written'): CudamatrixError {
  if (error instanceof CudamatrixError) return error;
  const code = (error as NodeJS.ErrnoException).code;
  const known = code ? causes[code] : undefined;
  const cause = known ? `${code}: ${known[0]}` : (error as Error).message;
  return new CudamatrixError(
    'OUTPUT_FAILED',
    `${file} could not be written (${cause}); ${holds}. ${known?.[1] ?? 'Name another place'}, and run again`,
    { cause: error },
  );
}

/** A temporary name beside `file` that no other process or call picks: the pid and random bytes. */
function tempName(file: string): string {
  return `${file}.${process.pid}-${randomBytes(4).toString('hex')}.tmp`;
}

/**
 * An output's text: one string, or its parts in order (a large output, such as a merged fleet's
 * event log or summary, written as it is made rather than held whole as one string); a part
 * may be bytes (UTF-8) already, such as lines copied from another file.
 */
export type OutputText = string | Iterable<string | Uint8Array>;

/** The parts of `text` joined into strings of about a MiB: few system calls, and no string of the whole. */
function* batched(text: Iterable<string | Uint8Array>): Generator<string | Uint8Array> {
  let pending: string[] = [];
  let size = 0;
  for (const part of text) {
    if (typeof part !== 'string') {
      if (pending.length) yield pending.join('');
      yield part;
      pending = [];
      size = 0;
      continue;
    }
    pending.push(part);
    size += part.length;
    if (size < 1 << 20) continue;
    yield pending.join('');
    pending = [];
    size = 0;
  }
  if (pending.length) yield pending.join('');
}

/**
 * Writes every part of `text` to the open `fd`, encoded straight into a buffer of a MiB (no
 * joined string to copy first); a part that may not fit (3 bytes a UTF-16 unit at most) flushes it.
 */
function writeParts(fd: number, text: Iterable<string | Uint8Array>): void {
  const buffer = Buffer.allocUnsafe(1 << 20);
  let used = 0;
  const write = (bytes: Buffer, length: number) => {
    for (let at = 0; at < length;) at += writeSync(fd, bytes, at, length - at);
  };
  for (const part of text) {
    // Bytes: copied as they are (3 bytes a UTF-16 unit is for strings only).
    const most = typeof part === 'string' ? part.length * 3 : part.length;
    if (used + most > buffer.length) {
      write(buffer, used);
      used = 0;
    }
    if (typeof part !== 'string') {
      if (part.length > buffer.length) write(Buffer.from(part.buffer, part.byteOffset, part.length), part.length);
      else used += Buffer.from(part.buffer, part.byteOffset, part.length).copy(buffer, used);
    } else if (part.length * 3 > buffer.length) {
      const bytes = Buffer.from(part);
      write(bytes, bytes.length);
    } else used += buffer.write(part, used);
  }
  write(buffer, used);
}

/** Writes `text` to the file `target` opened with `flag`, as writeFileSync does for a string. */
function writeFileText(target: string, text: OutputText, flag: string): void {
  if (typeof text === 'string') return void writeFileSync(target, text, { flag });
  const fd = openSync(target, flag, 0o666);
  try {
    writeParts(fd, text);
  } finally {
    closeSync(fd);
  }
}

/** Writes `text` to a new temporary file beside `file` (created exclusively), or throws with it removed. */
function writeTemp(file: string, text: OutputText): string {
  const tmp = tempName(file);
  try {
    writeFileText(tmp, text, 'wx');
  } catch (error) {
    rmSync(tmp, { force: true });
    throw outputError(file, error);
  }
  return tmp;
}

/**
 * Writes through a temporary file and a rename, so that a reader never sees half a file. On a
 * failure (a full disk) the temporary file is removed and the error (OUTPUT_FAILED) names `file`.
 */
export function writeFileAtomic(file: string, text: OutputText): void {
  makeDir(path.dirname(file), 'the folder of an output');
  const tmp = writeTemp(file, text);
  try {
    renameSync(tmp, file);
  } catch (error) {
    rmSync(tmp, { force: true });
    throw outputError(file, error);
  }
}

/**
 * Writes `file` whole, only if it is not there: false when it is (another process may have
 * written it since this one looked). The link is the exclusive step, so two writers never
 * overwrite each other and a reader never sees half a file.
 */
export function writeFileExclusive(file: string, text: string): boolean {
  makeDir(path.dirname(file), 'the folder of an output');
  const tmp = writeTemp(file, text);
  try {
    linkSync(tmp, file);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw outputError(file, error);
  } finally {
    rmSync(tmp, { force: true });
  }
}

/** The standard streams by their names: written to as streams, never opened (which truncates). */
function standardStream(target: string): number | undefined {
  if (target === '-' || target === '/dev/stdout') return 1;
  if (target === '/dev/stderr') return 2;
  const fd = /^\/(?:dev\/fd|proc\/self\/fd)\/(\d+)$/.exec(target);
  return fd ? Number(fd[1]) : undefined;
}

/**
 * Writes an output the user named (--junit FILE, --reporter json:FILE): "-" and /dev/stdout are
 * stdout (appended to, even when stdout is a file, so nothing printed before is lost); another
 * path that exists and is not a plain regular file (a link, /dev/null, a FIFO) is written
 * through, never replaced; a new path or a regular file is replaced atomically.
 */
export function writeOutput(target: string, text: OutputText): void {
  const fd = standardStream(target);
  if (fd === 1 || fd === 2) {
    const stream = fd === 1 ? process.stdout : process.stderr;
    for (const part of typeof text === 'string' ? [text] : batched(text)) stream.write(part);
    return;
  }
  if (fd !== undefined) return void (typeof text === 'string' ? writeSync(fd, text) : writeParts(fd, text));
  let existing: ReturnType<typeof lstatSync> | undefined;
  try {
    existing = lstatSync(target); // the path itself: a link, whatever it points to
  } catch {
    existing = undefined;
  }
  if (existing && !existing.isFile()) {
    try {
      writeFileText(target, text, 'w');
    } catch (error) {
      throw outputError(target, error);
    }
    return;
  }
  writeFileAtomic(target, text);
}

/** Whether an output goes to stdout ("-", /dev/stdout). */
export function isStdout(target: string): boolean {
  return standardStream(target) === 1;
}

/**
 * Makes a folder and the folders above it, one at a time. (mkdirSync's recursive mode loops for
 * ever on some paths, /proc/x among them.) A part that exists and is not a folder, or a folder
 * that cannot be made, is a usage error that names `what`.
 */
export function makeDir(dir: string, what: string): void {
  const missing: string[] = [];
  let at = path.resolve(dir);
  while (!existsSync(at)) {
    missing.unshift(at);
    const up = path.dirname(at);
    if (up === at) break;
    at = up;
  }
  if (existsSync(at) && !statSync(at).isDirectory()) {
    throw new CudamatrixError('USAGE', `${what} ${dir} cannot be made: ${at} is not a folder; name a folder you can write to`);
  }
  for (const part of missing) {
    try {
      mkdirSync(part);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'EEXIST' && statSync(part).isDirectory()) continue;
      throw new CudamatrixError(
        'USAGE',
        `${what} ${dir} cannot be made (${(error as NodeJS.ErrnoException).code ?? (error as Error).message} at ${part}); name a folder you can write to`,
      );
    }
  }
}

/** Makes the folder `dir` (its parent exists): false when it is there already (another process took it). */
export function makeNewDir(dir: string, what: string): boolean {
  try {
    mkdirSync(dir);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw outputError(`${what} ${dir}`, error);
  }
}

/**
 * Checks, before a run starts, that an output can be written where the user named it, so that
 * a mistyped path fails at once instead of after an hour of measuring.
 */
export function checkOutputPath(target: string, what: string): void {
  if (standardStream(target) !== undefined) return;
  if (existsSync(target) && statSync(target).isDirectory()) {
    throw new CudamatrixError('USAGE', `${what} ${target} is a folder; name a file (e.g. ${path.join(target, 'junit.xml')})`);
  }
  makeDir(path.dirname(path.resolve(target)), `${what} ${target}: its folder`);
}
