import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { tempDir } from '../test/helpers.ts';

const contender = path.join(import.meta.dirname, '..', 'test', 'fixtures', 'lock-contender.ts');

describe('withLock taking over a dead owner', () => {
  it('lets one process at a time hold it when four find the same dead owner at once, round after round', async () => {
    const dir = tempDir();
    mkdirSync(path.join(dir, 'holders'));
    const rounds = 150;
    const processes = 4;
    const dead = execFileSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' });
    const children = Array.from({ length: processes }, (_, index) =>
      spawn(process.execPath, ['--import', 'tsx', contender, dir, String(index), String(rounds)], { stdio: 'inherit' }),
    );
    const exited = children.map((child) => new Promise<number | null>((resolve) => child.on('exit', resolve)));
    const allDone = (round: number) =>
      Array.from({ length: processes }, (_, i) => existsSync(path.join(dir, `done-${round}-${i}`))).every(Boolean);
    for (let round = 0; round < rounds; round++) {
      // Each round starts with the lock held by a process that has ended.
      writeFileSync(path.join(dir, 'the.lock'), `${dead}\n`);
      writeFileSync(path.join(dir, `go-${round}`), '');
      while (!allDone(round)) await new Promise((resolve) => setTimeout(resolve, 2));
    }
    expect(await Promise.all(exited)).toEqual(Array(processes).fill(0));
    expect(readdirSync(dir).filter((fileName) => fileName.startsWith('overlap-'))).toEqual([]);
    expect(existsSync(path.join(dir, 'the.lock'))).toBe(false);
  }, 120_000);
});
