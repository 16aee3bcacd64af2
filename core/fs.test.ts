import { execFileSync, spawn } from 'node:child_process';
import { lstatSync, readdirSync, readFileSync, readlinkSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { tempDir } from '../test/helpers.ts';
import { outputError, writeFileExclusive, writeOutput } from './fs.ts';
import { withLock } from './lock.ts';

describe('writeOutput (where --junit FILE and --reporter NAME:FILE write)', () => {
  it('writes through a symbolic link and leaves the link in place (/dev/stdout is one; defect 1)', () => {
    const dir = tempDir();
    const real = path.join(dir, 'real.xml');
    writeFileSync(real, 'old');
    const link = path.join(dir, 'stdout');
    symlinkSync(real, link);
    writeOutput(link, 'new');
    expect(lstatSync(link).isSymbolicLink()).toBe(true);
    expect(readlinkSync(link)).toBe(real);
    expect(readFileSync(real, 'utf8')).toBe('new');
  });

  it('writes through a device and never replaces it (/dev/null)', () => {
    writeOutput('/dev/null', 'discarded');
    expect(lstatSync('/dev/null').isCharacterDevice()).toBe(true);
  });

  it('writes into a FIFO that a reader holds open', async () => {
    const dir = tempDir();
    const fifo = path.join(dir, 'pipe');
    execFileSync('mkfifo', [fifo]);
    const reader = spawn('cat', [fifo]);
    let got = '';
    reader.stdout.on('data', (chunk) => (got += chunk));
    const closed = new Promise((resolve) => reader.on('close', resolve));
    writeOutput(fifo, 'through the pipe\n');
    await closed;
    expect(got).toBe('through the pipe\n');
    expect(lstatSync(fifo).isFIFO()).toBe(true);
  });

  it('replaces a regular file atomically, and makes the folders of a new one', () => {
    const dir = tempDir();
    const file = path.join(dir, 'a', 'b', 'junit.xml');
    writeOutput(file, 'one');
    writeOutput(file, 'two');
    expect(readFileSync(file, 'utf8')).toBe('two');
    expect(lstatSync(file).isFile()).toBe(true);
  });

  it('writes a text given in parts whole and in order, past a MiB and with multi-byte characters, to a new file and through a link', () => {
    const dir = tempDir();
    const parts = Array.from({ length: 3000 }, (_, i) => `${i} é 找不到 ${'x'.repeat(500)}\n`);
    const file = path.join(dir, 'summary.json');
    writeOutput(file, parts);
    expect(readFileSync(file, 'utf8')).toBe(parts.join(''));
    const link = path.join(dir, 'link');
    symlinkSync(file, link);
    writeOutput(
      link,
      (function* () {
        yield 'one ';
        yield 'two';
      })(),
    );
    expect(readFileSync(file, 'utf8')).toBe('one two');
    expect(readdirSync(dir).sort()).toEqual(['link', 'summary.json']);
  });

  it('writes parts that are bytes as they are, beside strings, small ones and one past a MiB, to a file and to stdout', async () => {
    const big = Buffer.alloc(3 << 20, 'b');
    const parts = ['é ', Buffer.from('找不到 '), big, ' x', Buffer.from([0xff]), ''];
    const whole = Buffer.concat(parts.map((part) => (typeof part === 'string' ? Buffer.from(part) : part)));
    const file = path.join(tempDir(), 'events.jsonl');
    writeOutput(file, parts);
    expect(readFileSync(file).equals(whole)).toBe(true);
    // And on stdout ("-"), from a process of its own: its stdout is a pipe.
    const script = `import { writeOutput } from ${JSON.stringify(path.join(import.meta.dirname, 'fs.ts'))};
      writeOutput('-', ['é ', Buffer.from('找不到 '), Buffer.alloc(3 << 20, 'b'), ' x', Buffer.from([0xff]), '']);`;
    const out = execFileSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { maxBuffer: 8 << 20 });
    expect(out.equals(whole)).toBe(true);
  });
});

describe('outputError', () => {
  it('says the cause once, in words, and the fix that fits it: a missing folder is created, not freed', () => {
    const missing = path.join(tempDir(), 'no-such-folder', 'junit.xml');
    let error: unknown;
    try {
      writeFileSync(missing, 'x'); // the error a write into a missing folder gets
    } catch (e) {
      error = outputError(missing, e);
    }
    expect((error as Error).message).toBe(
      `${missing} could not be written (ENOENT: its folder does not exist); nothing of it was written. Create the folder or name another place, and run again`,
    );
  });
});

describe('writeFileExclusive and the records lock (many processes writing one folder)', () => {
  it('writes a new file whole, never overwrites one that is there, and leaves no temporary file', () => {
    const dir = tempDir();
    const file = path.join(dir, 'r.json');
    expect(writeFileExclusive(file, 'first')).toBe(true);
    expect(writeFileExclusive(file, 'second')).toBe(false);
    expect(readFileSync(file, 'utf8')).toBe('first');
    expect(readdirSync(dir)).toEqual(['r.json']);
  });

  it('takes over the lock of a process that died holding it, and names a live holder after the wait', () => {
    const dir = tempDir();
    const lock = path.join(dir, '.record.lock');
    // The pid of a process that has ended (and been reaped when execFileSync returns).
    const dead = execFileSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' });
    writeFileSync(lock, `${dead}\n`);
    expect(withLock(lock, 'recording into x', () => readFileSync(lock, 'utf8'))).toBe(`${process.pid}\n`);
    expect(readdirSync(dir)).toEqual([]);
    writeFileSync(lock, `${process.ppid}\n`);
    expect(() => withLock(lock, 'recording into x', () => 1, 200)).toThrow(
      `recording into x: ${lock} has been held by process ${process.ppid} for over 0.2 s; if no other cudamatrix is writing there, remove that file and run again`,
    );
  });
});
