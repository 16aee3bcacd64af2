/**
 * Every whole matrix the docs show (a ```yaml block of README.md or docs/ with `version: 1`) is
 * one the loader accepts, so that a reader who copies it gets a working matrix, and one that
 * judges something (`extends: default` or expectations of its own): a matrix with no expectation
 * passes whatever the driver does, and a reader who copies it gets a lab that is always green
 * (issue 33). The same holds for matrix/examples/, which the docs point to. Fragments (a
 * `targets:` list alone, one transport's options) are not whole matrices and are not checked.
 * The files a snippet names under ~/ (an identityFile) are made in a home of the test's own:
 * what is checked is the snippet's form, not the reader's keys.
 */
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { parseMatrix, type Matrix } from '../../matrix/load.ts';
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

/** How many expectations a loaded matrix judges its targets by: the matrix's own lists and each target's. */
function expectationCount(matrix: Matrix): number {
  const shared = Object.values(matrix.expectations).reduce((total, list) => total + (list?.length ?? 0), 0);
  return matrix.targets.reduce((total, target) => total + target.expect.length, shared);
}

const snippets = docsPages(repoRoot).flatMap((page) => matrixSnippets(page, readFileSync(path.join(repoRoot, page), 'utf8')));
const exampleMatrices = readdirSync(path.join(repoRoot, 'matrix', 'examples')).filter((file) => file.endsWith('.yaml'));

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
    expect(snippets.filter((snippet) => snippet.page === 'README.md').length).toBeGreaterThanOrEqual(2);
    expect(snippets.filter((snippet) => snippet.page === 'docs/matrix.md').length).toBeGreaterThanOrEqual(2);
  });

  for (const snippet of snippets) {
    it(`${snippet.page}:${snippet.line} loads and judges something`, () => {
      for (const rel of homePaths(parse(snippet.text))) {
        mkdirSync(path.dirname(path.join(home, rel)), { recursive: true });
        writeFileSync(path.join(home, rel), '');
      }
      const dir = tempDir('cm-docs-snippet-');
      const file = path.join(dir, 'snippet.yaml');
      writeFileSync(file, snippet.text);
      expect(() => parseMatrix(snippet.text, file), `${snippet.page}:${snippet.line}: the matrix shown there does not load`).not.toThrow();
      const judged = expectationCount(parseMatrix(snippet.text, file));
      expect(
        judged,
        `${snippet.page}:${snippet.line}: the matrix shown there judges nothing: add "extends: default" or expectations`,
      ).toBeGreaterThan(0);
    });
  }

  for (const name of exampleMatrices) {
    it(`matrix/examples/${name} judges something`, () => {
      const file = path.join(repoRoot, 'matrix', 'examples', name);
      const matrix = parseMatrix(readFileSync(file, 'utf8'), file, { checkFiles: false });
      expect(expectationCount(matrix), `matrix/examples/${name} judges nothing: add "extends: default" or expectations`).toBeGreaterThan(0);
    });
  }

  it('are really checked for judging: a matrix without extends or expectations counts none, one with extends: default some', () => {
    const [bare, judging] = matrixSnippets(
      'x.md',
      '```yaml\nversion: 1\ntargets:\n  - name: a\n    transport: local\n```\n\n```yaml\nversion: 1\nextends: default\ntargets:\n  - name: a\n    transport: local\n```\n',
    );
    expect(expectationCount(parseMatrix(bare!.text, 'x.yaml'))).toBe(0);
    expect(expectationCount(parseMatrix(judging!.text, 'x.yaml'))).toBeGreaterThan(0);
  });

  it('are really checked: a snippet with a misspelt key is refused', () => {
    const [bad] = matrixSnippets('x.md', '```yaml\nversion: 1\ntargets:\n  - name: a\n    timout: 5m\n```\n');
    expect(bad).toBeDefined();
    expect(() => parseMatrix(bad!.text, 'x.yaml')).toThrow(/timout/);
  });
});
