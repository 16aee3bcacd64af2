/**
 * Every whole matrix the docs show (a ```yaml block of README.md or docs/ with `version: 1`) is
 * one the loader accepts, so that a reader who copies it gets a working matrix. Fragments (a
 * `targets:` list alone, one transport's options) are not whole matrices and are not checked.
 * The files a snippet names under ~/ (an identityFile) are made in a home of the test's own:
 * what is checked is the snippet's form, not the reader's keys.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { parseMatrix } from '../../matrix/load.ts';
import { docsPages } from './docs-links.ts';
import { repoRoot, tempDir } from '../helpers.ts';

interface Snippet {
  page: string;
  line: number;
  text: string;
}

/** The ```yaml blocks of a page that are whole matrices. */
export function matrixSnippets(page: string, markdown: string): Snippet[] {
  const snippets: Snippet[] = [];
  const lines = markdown.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const open = /^(\s*)```ya?ml\s*$/.exec(lines[i]!);
    if (!open) continue;
    const indent = open[1]!.length;
    const body: string[] = [];
    let j = i + 1;
    for (; j < lines.length && !/^\s*```\s*$/.test(lines[j]!); j++) body.push(lines[j]!.slice(indent));
    const text = `${body.join('\n')}\n`;
    if (/^version: 1\b/m.test(text) && /^targets:/m.test(text)) snippets.push({ page, line: i + 1, text });
    i = j;
  }
  return snippets;
}

/** The ~/ paths a matrix names, wherever they are. */
function homePaths(value: unknown): string[] {
  if (typeof value === 'string') return value.startsWith('~/') ? [value.slice(2)] : [];
  if (Array.isArray(value)) return value.flatMap(homePaths);
  if (value && typeof value === 'object') return Object.values(value).flatMap(homePaths);
  return [];
}

const snippets = docsPages(repoRoot).flatMap((page) => matrixSnippets(page, readFileSync(path.join(repoRoot, page), 'utf8')));

describe('the matrices the docs show', () => {
  let home: string;
  const savedHome = process.env.HOME;
  beforeAll(() => {
    home = tempDir('cm-docs-home-');
    process.env.HOME = home;
  });
  afterAll(() => {
    process.env.HOME = savedHome;
  });

  it('are found: the README recipes and docs/matrix.md have some', () => {
    expect(snippets.filter((s) => s.page === 'README.md').length).toBeGreaterThanOrEqual(2);
    expect(snippets.filter((s) => s.page === 'docs/matrix.md').length).toBeGreaterThanOrEqual(2);
  });

  for (const s of snippets) {
    it(`${s.page}:${s.line} loads`, () => {
      for (const rel of homePaths(parse(s.text))) {
        mkdirSync(path.dirname(path.join(home, rel)), { recursive: true });
        writeFileSync(path.join(home, rel), '');
      }
      const dir = tempDir('cm-docs-snippet-');
      const file = path.join(dir, 'snippet.yaml');
      writeFileSync(file, s.text);
      expect(() => parseMatrix(s.text, file), `${s.page}:${s.line}: the matrix shown there does not load`).not.toThrow();
    });
  }

  it('are really checked: a snippet with a misspelt key is refused', () => {
    const [bad] = matrixSnippets('x.md', '```yaml\nversion: 1\ntargets:\n  - name: a\n    timout: 5m\n```\n');
    expect(bad).toBeDefined();
    expect(() => parseMatrix(bad!.text, 'x.yaml')).toThrow(/timout/);
  });
});
