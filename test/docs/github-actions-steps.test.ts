/**
 * docs/github-actions.md's Minimal steps take a reader from nothing to a lab that runs (issue 33):
 * they say how the release the example pins comes to exist, what a private cudamatrix repository
 * needs (the Access setting, and the token secret gpu-matrix.yml really declares), and, where
 * open-pr is first used, the repository setting without which its pull request fails.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { repoRoot } from '../helpers.ts';

const page = readFileSync(path.join(repoRoot, 'docs', 'github-actions.md'), 'utf8');
const minimalSteps = page.slice(page.indexOf('## Minimal steps'), page.indexOf('\n## ', page.indexOf('## Minimal steps') + 1));
const prose = (text: string) => text.replace(/\s+/g, ' ');
const workflow = parse(readFileSync(path.join(repoRoot, '.github', 'workflows', 'gpu-matrix.yml'), 'utf8')) as {
  on: { workflow_call: { secrets: Record<string, unknown> } };
};

describe("docs/github-actions.md's Minimal steps", () => {
  it('has its steps', () => {
    expect(minimalSteps).toMatch(/^1\. \*\*/m);
    expect(minimalSteps).toContain('<!-- docs/examples/driver-matrix.yml: begin -->');
  });

  it('say how the release the example pins comes to exist: a pushed tag, which release.yml turns into a release', () => {
    const text = prose(minimalSteps);
    expect(text).toMatch(/git tag v\d+\.\d+\.\d+ && git push origin v\d+\.\d+\.\d+/);
    expect(text).toContain('(../.github/workflows/release.yml)');
    // It comes before the example that pins it.
    expect(minimalSteps.indexOf('git tag v')).toBeLessThan(minimalSteps.indexOf('<!-- docs/examples/driver-matrix.yml: begin -->'));
  });

  it("cover a private cudamatrix repository: GitHub's Access setting, and the token secret the workflow declares", () => {
    const text = prose(minimalSteps);
    expect(text).toMatch(/Settings → Actions → General → Access/);
    expect(text).toContain('`cudamatrix-token`');
    expect(Object.keys(workflow.on.workflow_call.secrets)).toContain('cudamatrix-token');
  });

  it('say, at the first use of open-pr, that the repository must allow GitHub Actions to create pull requests', () => {
    const first = minimalSteps.indexOf('open-pr: true');
    expect(first).toBeGreaterThan(-1);
    // The step that holds the first open-pr: true (the example's step) says it.
    const stepStart = minimalSteps.lastIndexOf('\n4. **', first);
    const stepEnd = minimalSteps.indexOf('\n5. **', first);
    expect(prose(minimalSteps.slice(stepStart, stepEnd))).toMatch(/Allow GitHub Actions to create and approve pull requests/);
  });
});
