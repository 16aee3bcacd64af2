/**
 * The link check of the docs (test/docs/docs-links.test.ts): every relative link in README.md and
 * docs/**\/*.md must name a file or folder of the repository, and a #anchor into a Markdown page
 * one of its headings (GitHub's slugs). No link may leave the repository: none above its root,
 * none into shared/ (a folder beside some checkouts, not part of the project). A section named in
 * prose instead of linked (the README's "Windows hosts") must be a heading of that page too: such
 * a name outlives the section it named as easily as a link does (issue 33).
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import GithubSlugger, { slug as githubSlug } from 'github-slugger';

/** README.md and every Markdown page under docs/, relative to root. */
export function docsPages(root: string): string[] {
  const pages = existsSync(path.join(root, 'README.md')) ? ['README.md'] : [];
  const walk = (dir: string): void => {
    if (!existsSync(path.join(root, dir))) return;
    for (const entry of readdirSync(path.join(root, dir), { withFileTypes: true }).sort((left, right) =>
      left.name.localeCompare(right.name),
    )) {
      const rel = path.posix.join(dir, entry.name);
      if (entry.isDirectory()) walk(rel);
      else if (entry.name.endsWith('.md')) pages.push(rel);
    }
  };
  walk('docs');
  return pages;
}

/** The link targets of a page, with their line, outside fenced code and inline code. */
export function linksOf(markdown: string): { target: string; line: number }[] {
  const links: { target: string; line: number }[] = [];
  let fenced = false;
  markdown.split('\n').forEach((text, i) => {
    if (/^\s*(```|~~~)/.test(text)) {
      fenced = !fenced;
      return;
    }
    if (fenced) return;
    const prose = text.replace(/`[^`]*`/g, '``');
    for (const match of prose.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) links.push({ target: match[1] ?? '', line: i + 1 });
    const reference = /^\s*\[[^\]]+\]:\s*(\S+)/.exec(prose);
    if (reference) links.push({ target: reference[1] ?? '', line: i + 1 });
  });
  return links;
}

/**
 * The sections a page names in prose, with their line: `the README's "Heading"`, or a page's
 * ("docs/matrix.md's", "[matrix.md](matrix.md)'s", "`windows.md`'s") "Heading".
 */
export function sectionMentionsOf(markdown: string): { page: string; heading: string; line: number }[] {
  const mentions: { page: string; heading: string; line: number }[] = [];
  let fenced = false;
  markdown.split('\n').forEach((text, i) => {
    if (/^\s*(```|~~~)/.test(text)) {
      fenced = !fenced;
      return;
    }
    if (fenced) return;
    for (const match of text.matchAll(/(?:\bREADME\b|\]\(([^)\s#]+\.md)\)|`?([\w./-]+\.md)`?)'s "([^"]+)"/g)) {
      mentions.push({ page: match[1] ?? match[2] ?? 'README', heading: match[3] ?? '', line: i + 1 });
    }
  });
  return mentions;
}

/**
 * Every heading anchor of a Markdown page, as GitHub makes them (github-slugger: its character set,
 * and -1, -2, … for repeats that never collide with another heading's slug). Headings inside fenced
 * code are not headings; a link in a heading counts by its text.
 */
export function headingAnchors(markdown: string): Set<string> {
  const slugger = new GithubSlugger();
  const anchors = new Set<string>();
  let fenced = false;
  for (const line of markdown.split('\n')) {
    if (/^\s*(```|~~~)/.test(line)) fenced = !fenced;
    const heading = !fenced && /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (heading) anchors.add(slugger.slug((heading[1] ?? '').replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')));
  }
  return anchors;
}

/** Every broken or escaping link of the pages under root, as "page:line: target: what is wrong". */
export function brokenLinks(root: string): string[] {
  const problems: string[] = [];
  const slugCache = new Map<string, Set<string>>();
  const slugsOf = (file: string): Set<string> => {
    let slugs = slugCache.get(file);
    if (!slugs) slugCache.set(file, (slugs = headingAnchors(readFileSync(file, 'utf8'))));
    return slugs;
  };
  for (const page of docsPages(root)) {
    for (const { target, line } of linksOf(readFileSync(path.join(root, page), 'utf8'))) {
      const at = `${page}:${line}: ${target}`;
      if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // https:, mailto: — not a file of the repository
      const [filePart = '', anchor] = target.split('#', 2);
      const file =
        filePart === '' ? path.join(root, page) : path.resolve(path.dirname(path.join(root, page)), decodeURIComponent(filePart));
      const rel = path.relative(root, file);
      if (filePart.startsWith('/') || rel.startsWith('..') || path.isAbsolute(rel)) {
        problems.push(`${at}: leaves the repository: link only to files inside it`);
        continue;
      }
      if (rel.split(path.sep)[0] === 'shared') {
        problems.push(`${at}: points into shared/, which is not part of the repository`);
        continue;
      }
      if (!existsSync(file)) {
        problems.push(`${at}: no such file or folder (${rel})`);
        continue;
      }
      if (anchor !== undefined && file.endsWith('.md') && !slugsOf(file).has(anchor)) {
        problems.push(`${at}: ${rel} has no heading with the anchor #${anchor}`);
      }
    }
    for (const { page: named, heading, line } of sectionMentionsOf(readFileSync(path.join(root, page), 'utf8'))) {
      // "README" is the repository's; a page path is taken from the mentioning page's folder, or from the root.
      const candidates =
        named === 'README'
          ? [path.join(root, 'README.md')]
          : [path.resolve(path.dirname(path.join(root, page)), named), path.join(root, named)];
      const file = candidates.find((candidate) => existsSync(candidate));
      const at = `${page}:${line}: ${named}'s "${heading}"`;
      if (!file) {
        problems.push(`${at}: no such page`);
        continue;
      }
      // The name may be the start of a longer heading ("Minimal steps" of "Minimal steps (Linux)").
      const slug = githubSlug(heading);
      if (![...slugsOf(file)].some((anchor) => anchor === slug || anchor.startsWith(`${slug}-`))) {
        problems.push(`${at}: ${path.relative(root, file)} has no such section: link to the heading it means instead`);
      }
    }
  }
  return problems;
}
