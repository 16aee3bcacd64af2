import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { repoRoot, tempDir } from '../helpers.ts';

const depcruise = path.join(repoRoot, 'node_modules', '.bin', 'depcruise');
const folders = ['core', 'runners', 'probes', 'matrix', 'events', 'run', 'results', 'cli', 'tools/gha-player'];

function cruise(config: string, paths: string[]): { violations: { rule: { name: string }; from: string; to: string }[] } {
  const out = execFileSync(depcruise, ['--config', config, '--output-type', 'json', ...paths], { cwd: repoRoot, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  return JSON.parse(out).summary;
}

describe('import boundaries', () => {
  it('hold for the whole tree (core -> runners -> probes -> matrix -> events -> run | results -> cli)', () => {
    const summary = cruise('.dependency-cruiser.cjs', folders);
    expect(summary.violations.map((v) => `${v.rule.name}: ${v.from} -> ${v.to}`)).toEqual([]);
  });

  it('are really checked: an upward import is reported', () => {
    // A throw-away module under runners/ that imports results/: the rule must catch it.
    const dir = tempDir('cm-bound-');
    const probe = path.join(repoRoot, 'runners', `zz-boundary-check-${path.basename(dir)}.ts`);
    writeFileSync(probe, "import { summarize } from '../results/verdicts.ts';\nexport const x = summarize;\n");
    try {
      const summary = cruise('.dependency-cruiser.cjs', [path.relative(repoRoot, probe)]);
      expect(summary.violations.map((v) => v.rule.name)).toContain('runners-imports-up');
    } finally {
      execFileSync('rm', ['-f', probe]);
    }
  });

  it('keep the workflow player a package of its own: it never imports the project, the product never imports it', () => {
    const dir = tempDir('cm-bound-');
    const inPlayer = path.join(repoRoot, 'tools', 'gha-player', `zz-boundary-check-${path.basename(dir)}.ts`);
    const inRunners = path.join(repoRoot, 'runners', `zz-boundary-check-${path.basename(dir)}.ts`);
    writeFileSync(inPlayer, "import { summarize } from '../../results/verdicts.ts';\nexport const x = summarize;\n");
    writeFileSync(inRunners, "import { playWorkflow } from '@cudamatrix/gha-player';\nexport const x = playWorkflow;\n");
    try {
      const summary = cruise('.dependency-cruiser.cjs', [path.relative(repoRoot, inPlayer), path.relative(repoRoot, inRunners)]);
      const rules = summary.violations.map((v) => `${v.rule.name}: ${v.from}`);
      expect(rules).toContain(`gha-player-stands-alone: ${path.relative(repoRoot, inPlayer)}`);
      expect(rules).toContain(`no-test-code-in-product: ${path.relative(repoRoot, inRunners)}`);
    } finally {
      execFileSync('rm', ['-f', inPlayer, inRunners]);
    }
  });

  it('keep the run engine and the renderings apart, both ways', () => {
    const dir = tempDir('cm-bound-');
    const inRun = path.join(repoRoot, 'run', `zz-boundary-check-${path.basename(dir)}.ts`);
    const inResults = path.join(repoRoot, 'results', `zz-boundary-check-${path.basename(dir)}.ts`);
    writeFileSync(inRun, "import { summarize } from '../results/verdicts.ts';\nexport const x = summarize;\n");
    writeFileSync(inResults, "import { executePlan } from '../run/execute.ts';\nexport const x = executePlan;\n");
    try {
      const summary = cruise('.dependency-cruiser.cjs', [path.relative(repoRoot, inRun), path.relative(repoRoot, inResults)]);
      const rules = summary.violations.map((v) => v.rule.name);
      expect(rules).toContain('run-imports-up');
      expect(rules).toContain('results-imports-up');
    } finally {
      execFileSync('rm', ['-f', inRun, inResults]);
    }
  });
});
