import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { transportKind, transportKinds } from '../../transports/registry.ts';
import { CODE_FOLDERS, repoRoot, tempDir } from '../helpers.ts';

const depcruise = path.join(repoRoot, 'node_modules', '.bin', 'depcruise');
const folders = [...CODE_FOLDERS, 'tools/gha-player'];

function cruise(config: string, paths: string[]): { violations: { rule: { name: string }; from: string; to: string }[] } {
  const out = execFileSync(depcruise, ['--config', config, '--output-type', 'json', ...paths], {
    cwd: repoRoot,
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
  });
  return JSON.parse(out).summary;
}

describe('import boundaries', () => {
  it('hold for the whole tree (core -> transports -> probes -> matrix -> events -> run | renderings -> cli)', () => {
    const summary = cruise('.dependency-cruiser.cjs', folders);
    expect(summary.violations.map((violation) => `${violation.rule.name}: ${violation.from} -> ${violation.to}`)).toEqual([]);
  });

  it('are really checked: an upward import is reported', () => {
    // A throw-away module under transports/ that imports verdicts/: the rule must catch it.
    const dir = tempDir('cm-bound-');
    const probe = path.join(repoRoot, 'transports', `zz-boundary-check-${path.basename(dir)}.ts`);
    writeFileSync(probe, "import { summarize } from '../verdicts/verdicts.ts';\nexport const x = summarize;\n");
    try {
      const summary = cruise('.dependency-cruiser.cjs', [path.relative(repoRoot, probe)]);
      expect(summary.violations.map((violation) => violation.rule.name)).toContain('transports-imports-up');
    } finally {
      execFileSync('rm', ['-f', probe]);
    }
  });

  it('keep the workflow player a package of its own: it never imports the project, the product never imports it', () => {
    const dir = tempDir('cm-bound-');
    const inPlayer = path.join(repoRoot, 'tools', 'gha-player', `zz-boundary-check-${path.basename(dir)}.ts`);
    const inTransports = path.join(repoRoot, 'transports', `zz-boundary-check-${path.basename(dir)}.ts`);
    writeFileSync(inPlayer, "import { summarize } from '../../verdicts/verdicts.ts';\nexport const x = summarize;\n");
    writeFileSync(inTransports, "import { playWorkflow } from '@cudamatrix/gha-player';\nexport const x = playWorkflow;\n");
    try {
      const summary = cruise('.dependency-cruiser.cjs', [path.relative(repoRoot, inPlayer), path.relative(repoRoot, inTransports)]);
      const rules = summary.violations.map((violation) => `${violation.rule.name}: ${violation.from}`);
      expect(rules).toContain(`gha-player-stands-alone: ${path.relative(repoRoot, inPlayer)}`);
      expect(rules).toContain(`no-test-code-in-product: ${path.relative(repoRoot, inTransports)}`);
    } finally {
      execFileSync('rm', ['-f', inPlayer, inTransports]);
    }
  });

  it('keep the run engine and the renderings apart, both ways', () => {
    const dir = tempDir('cm-bound-');
    const inRun = path.join(repoRoot, 'run', `zz-boundary-check-${path.basename(dir)}.ts`);
    const inResults = path.join(repoRoot, 'reporters', `zz-boundary-check-${path.basename(dir)}.ts`);
    writeFileSync(inRun, "import { summarize } from '../verdicts/verdicts.ts';\nexport const x = summarize;\n");
    writeFileSync(inResults, "import { executePlan } from '../run/execute.ts';\nexport const x = executePlan;\n");
    try {
      const summary = cruise('.dependency-cruiser.cjs', [path.relative(repoRoot, inRun), path.relative(repoRoot, inResults)]);
      const rules = summary.violations.map((violation) => violation.rule.name);
      expect(rules).toContain('run-imports-up');
      expect(rules).toContain('reporters-imports-up');
    } finally {
      execFileSync('rm', ['-f', inRun, inResults]);
    }
  });
});

/** The product folders that must ask a transport kind rather than branch on its name (transports/ is where kinds live). */
const askingFolders = folders.filter((folder) => folder !== 'transports');

/** Every option of every kind ("passphraseEnv", "gpus"): read from a hop by name, it is one kind's knowledge. */
const optionNames = transportKinds()
  .flatMap((k) => Object.keys((transportKind(k).options as unknown as { shape?: object }).shape ?? {}))
  .join('|');

/**
 * Each line of `text` that branches on a transport kind: a comparison with its name, a case, an
 * object keyed by kinds, a table indexed by a hop's kind, a hop's option read by its name.
 */
function kindBranches(text: string): string[] {
  const names = transportKinds().join('|');
  const patterns = [
    new RegExp(`(===|!==|==|!=)\\s*['"\`](${names})['"\`]`),
    new RegExp(`['"\`](${names})['"\`]\\s*(===|!==|==|!=)`),
    new RegExp(`\\bcase\\s+['"\`](${names})['"\`]\\s*:`),
    new RegExp(`^\\s*['"]?(${names})['"]?\\s*:\\s*['"\`{]`),
    /\w\[\s*[\w.?]*\bhops?\b[\w.?[\]]*\.kind\b/,
    new RegExp(`(\\.hops\\b.*|\\bhop\\??)\\.(${optionNames})\\b`),
  ];
  return text.split('\n').filter((line) => patterns.some((pattern) => pattern.test(line)));
}

function productFiles(dir: string): string[] {
  return readdirSync(path.join(repoRoot, dir), { recursive: true, encoding: 'utf8' })
    .filter((file) => file.endsWith('.ts') && !file.endsWith('.test.ts'))
    .map((file) => path.join(dir, file));
}

describe('transport kinds', () => {
  it('are asked, not branched on, outside transports/ (no kind === "ssh", case "docker", tables keyed by kind)', () => {
    const found = askingFolders
      .flatMap(productFiles)
      .flatMap((file) => kindBranches(readFileSync(path.join(repoRoot, file), 'utf8')).map((line) => `${file}: ${line.trim()}`));
    expect(found).toEqual([]);
  });

  it('are really checked: the branches doctor and gha matrix once had are found', () => {
    const before = [
      "  return t.hops[0]?.kind === 'ssh' ? hostKeyOf(t.hops) : undefined;",
      "      case 'docker':",
      "  ssh: 'check the host name and port, that sshd runs there, and that no firewall is in the way',",
      "  const fix = (code === 'TARGET_UNREACHABLE' && unreachableFix[target.hops[0]?.kind ?? '']) || fixes[code];",
      "  if ('wsl' === hop.kind) return;",
      "  return matrix.targets.flatMap((t) => t.hops.flatMap((h) => (typeof h.passphraseEnv === 'string' ? [h.passphraseEnv] : [])));",
    ];
    expect(before.map((line) => kindBranches(line).length)).toEqual([1, 1, 1, 1, 1, 1]);
    // Other things named kind are not transport kinds.
    expect(kindBranches("if (e?.kind === 'metric') return;\nconst what = { record: 'record' }[input.kind];")).toEqual([]);
  });
});
