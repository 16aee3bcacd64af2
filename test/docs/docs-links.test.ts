/** Every relative link of README.md and docs/ resolves inside the repository (test/docs/docs-links.ts). */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { brokenLinks, docsPages } from './docs-links.ts';
import { repoRoot, tempDir } from '../helpers.ts';

describe("the docs' links", () => {
  it('resolve: every relative link of README.md and docs/**/*.md names a file there, every #anchor a heading', () => {
    expect(docsPages(repoRoot)).toEqual(expect.arrayContaining(['README.md', 'docs/README.md', 'docs/cli.md', 'docs/claims.md']));
    expect(brokenLinks(repoRoot)).toEqual([]);
  });

  it('are really checked: a missing file, a missing anchor, links out of the repository and a section named in prose that is not there are each reported', () => {
    const root = tempDir('cm-links-');
    mkdirSync(path.join(root, 'docs', 'transports'), { recursive: true });
    writeFileSync(path.join(root, 'LICENSE'), '');
    writeFileSync(
      path.join(root, 'README.md'),
      [
        '# Title',
        '## The `matrix`: a file',
        'See [ok](LICENSE), [ok](docs/transports/ssh.md#host-keys), [ok](#the-matrix-a-file) and [web](https://example.com/x).',
        'Broken: [a](docs/nowhere.md), [b](#no-such-heading), [c](../shared/CLAIMS.md), [d](../../etc/passwd).',
        '`[not a link](in-code.md)`',
        'Sections named in prose: the README\'s "Title", docs/transports/ssh.md\'s "Host keys", the README\'s "Windows hosts".',
        '```',
        '[not a link](in-a-fence.md)',
        '```',
      ].join('\n'),
    );
    writeFileSync(
      path.join(root, 'docs', 'transports', 'ssh.md'),
      '# SSH\n## Host keys\nBack to [the top](../../README.md#title), [gone](../cli.md).\nSee [the README](../../README.md)\'s "WSL targets".\n',
    );
    expect(brokenLinks(root)).toEqual([
      'README.md:4: docs/nowhere.md: no such file or folder (docs/nowhere.md)',
      'README.md:4: #no-such-heading: README.md has no heading with the anchor #no-such-heading',
      'README.md:4: ../shared/CLAIMS.md: leaves the repository: link only to files inside it',
      'README.md:4: ../../etc/passwd: leaves the repository: link only to files inside it',
      'README.md:6: README\'s "Windows hosts": README.md has no such section: link to the heading it means instead',
      `docs/transports/ssh.md:3: ../cli.md: no such file or folder (${path.join('docs', 'cli.md')})`,
      'docs/transports/ssh.md:4: ../../README.md\'s "WSL targets": README.md has no such section: link to the heading it means instead',
    ]);
  });

  it("take GitHub's anchors: a repeated heading's -1 never collides with another heading's, odd characters go as GitHub drops them", () => {
    const root = tempDir('cm-links-');
    writeFileSync(
      path.join(root, 'README.md'),
      [
        '# Foo',
        '# Foo',
        '# Foo 1',
        '# Half ½ and\u00a0no-break',
        'Links: [a](#foo), [b](#foo-1), [c](#foo-1-1), [d](#half--andno-break).',
      ].join('\n'),
    );
    expect(brokenLinks(root)).toEqual([]);
  });
});
