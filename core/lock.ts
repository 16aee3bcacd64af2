/**
 * A lock file for processes that read a folder and then write to it (`record`: is this
 * observation there already?): held, the next process waits, so that many at once do what
 * one after the other would. The lock file holds its owner's pid; one whose owner is dead
 * (killed while holding it) is taken over, under a second lock file (FILE.takeover), so that of
 * several processes that saw the same dead owner only the first removes its file: the others,
 * re-reading under that lock, find a new owner (or none) and leave it alone.
 */
import { closeSync, openSync, readFileSync, rmSync, statSync, writeSync } from 'node:fs';
import { CudamatrixError } from './errors.ts';

/** How long to wait for another process's lock before giving up, naming it. */
export const LOCK_WAIT_MS = 120_000;

const pause = new Int32Array(new SharedArrayBuffer(4));

/** Whether process `pid` runs (EPERM: it does, as another user's). */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** The pid in a lock file (NaN while its owner has not written it yet), undefined when it is gone. */
function ownerOf(file: string): number | undefined {
  try {
    return Number(readFileSync(file, 'utf8').trim() || NaN);
  } catch {
    return undefined;
  }
}

/** A takeover lock older than this was left by a process killed in its few microseconds. */
const TAKEOVER_STALE_MS = 10_000;

/** Removes the lock file `file` if `deadOwner` still owns it, re-read under the takeover lock. */
function removeIfStillOwnedBy(file: string, deadOwner: number): void {
  const guard = `${file}.takeover`;
  let fd: number;
  try {
    fd = openSync(guard, 'wx');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST')
      throw new CudamatrixError('OUTPUT_FAILED', `the lock file ${guard} could not be made (${(error as Error).message})`);
    // Another process is taking over now (the caller tries again), or one died doing so.
    try {
      if (Date.now() - statSync(guard).mtimeMs > TAKEOVER_STALE_MS) rmSync(guard, { force: true });
    } catch {
      // gone meanwhile
    }
    return;
  }
  try {
    if (ownerOf(file) === deadOwner) rmSync(file, { force: true });
  } finally {
    closeSync(fd);
    rmSync(guard, { force: true });
  }
}

/** Runs `fn` holding the lock file `file` (created exclusively, removed after). */
export function withLock<T>(file: string, what: string, fn: () => T, waitMs = LOCK_WAIT_MS): T {
  const deadline = Date.now() + waitMs;
  let fd: number | undefined;
  while (fd === undefined) {
    try {
      fd = openSync(file, 'wx');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST')
        throw new CudamatrixError('OUTPUT_FAILED', `${what}: the lock file ${file} could not be made (${(error as Error).message})`);
      const owner = ownerOf(file);
      if (owner === undefined) continue; // released meanwhile: try again
      // An empty file is an owner between creating and writing it: wait. A dead owner's lock is taken over.
      if (Number.isInteger(owner) && !processAlive(owner)) removeIfStillOwnedBy(file, owner);
      else if (Date.now() > deadline) {
        throw new CudamatrixError(
          'OUTPUT_FAILED',
          `${what}: ${file} has been held by process ${owner} for over ${waitMs / 1000} s; if no other cudamatrix is writing there, remove that file and run again`,
        );
      } else Atomics.wait(pause, 0, 0, 20);
    }
  }
  try {
    try {
      writeSync(fd, `${process.pid}\n`);
    } catch (error) {
      // A full disk still lets the empty file exclude others (they wait for it, as for an owner
      // about to write its pid); what fn then cannot write is the error that names the output.
      const code = (error as NodeJS.ErrnoException).code;
      if (code !== 'ENOSPC' && code !== 'EDQUOT')
        throw new CudamatrixError('OUTPUT_FAILED', `${what}: the lock file ${file} could not be written (${(error as Error).message})`);
    }
    return fn();
  } finally {
    closeSync(fd);
    rmSync(file, { force: true });
  }
}
