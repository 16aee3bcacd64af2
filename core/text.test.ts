import { describe, expect, it } from 'vitest';
import { normaliseArch } from './arch.ts';
import { oneLine } from './text.ts';

describe('oneLine', () => {
  it('joins the trimmed lines, blank ones and carriage returns left out', () => {
    expect(oneLine('  first \r\n\r\n  second\n\nthird  \n')).toBe('first | second | third');
  });

  it('cuts at the start or keeps the end, with … where cut', () => {
    expect(oneLine('abcdef\nghij', { max: 4 })).toBe('abcd…');
    expect(oneLine('abcdef\nghij', { max: 4, keep: 'end' })).toBe('…ghij');
    expect(oneLine('short', { max: 5 })).toBe('short');
  });

  it('cuts between words, never in one (a single long word is cut as it is)', () => {
    const said = 'Could not chdir to home directory /nonexistent: No such file or directory';
    expect(oneLine(said, { max: 49 })).toBe('Could not chdir to home directory /nonexistent:…');
    expect(oneLine(said, { max: 30, keep: 'end' })).toBe('…No such file or directory');
    // Cut just at a word's edge: the whole of the word.
    expect(oneLine('one two three', { max: 7 })).toBe('one two…');
    expect(oneLine('one two three', { max: 9, keep: 'end' })).toBe('…two three');
    expect(oneLine('x'.repeat(20), { max: 8 })).toBe(`${'x'.repeat(8)}…`);
  });

  it('keeps the first or the last lines when asked', () => {
    expect(oneLine('1\n2\n\n3\n4', { lines: 2 })).toBe('1 | 2');
    expect(oneLine('1\n2\n\n3\n4', { lines: 2, keep: 'end' })).toBe('3 | 4');
  });
});

describe('normaliseArch', () => {
  it('names x86_64 and aarch64 as uname -m does, from uname, Node.js, Docker and Windows spellings', () => {
    for (const name of ['x86_64', 'amd64', 'AMD64', 'x64']) expect(normaliseArch(name)).toBe('x86_64');
    for (const name of ['aarch64', 'arm64', 'ARM64']) expect(normaliseArch(name)).toBe('aarch64');
    expect(normaliseArch('ppc64le')).toBe('ppc64le');
  });
});
