/**
 * The two repositories the end-to-end GitHub Actions tests play: cudamatrix as a caller names it
 * (the reusable workflow and the action, from this checkout) and the caller's lab (the example
 * caller, its matrix and the records committed so far, in git, with a bare origin).
 */
import { execFileSync } from 'node:child_process';
import { cpSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { repoRoot } from '../helpers.ts';

export const git = (cwd: string, ...args: string[]) =>
  execFileSync('git', args, {
    cwd,
    encoding: 'utf8',
    env: {
      ...process.env,
      GIT_AUTHOR_NAME: 'lab',
      GIT_AUTHOR_EMAIL: 'lab@example.invalid',
      GIT_COMMITTER_NAME: 'lab',
      GIT_COMMITTER_EMAIL: 'lab@example.invalid',
    },
  });

/** Makes `dir`/cudamatrix, `dir`/lab (with `matrixYaml` as matrix/gpu-lab.yaml, committed) and `dir`/origin.git. */
export function makeLab(dir: string, matrixYaml: string): { cudamatrix: string; lab: string; origin: string } {
  const cudamatrix = path.join(dir, 'cudamatrix');
  for (const file of ['.github/workflows/gpu-matrix.yml', 'action.yml', 'action'])
    cpSync(path.join(repoRoot, file), path.join(cudamatrix, file), { recursive: true });
  const lab = path.join(dir, 'lab');
  cpSync(path.join(repoRoot, 'docs/examples/driver-matrix.yml'), path.join(lab, '.github/workflows/driver-matrix.yml'));
  mkdirSync(path.join(lab, 'matrix'), { recursive: true });
  writeFileSync(path.join(lab, 'matrix/gpu-lab.yaml'), matrixYaml);
  cpSync(path.join(repoRoot, 'records'), path.join(lab, 'records'), {
    recursive: true,
    filter: (src) => !src.endsWith('.jsonl') && !src.endsWith('.md'),
  });
  git(lab, 'init', '-q', '-b', 'main');
  git(lab, 'add', '.');
  git(lab, 'commit', '-q', '-m', 'the lab');
  const origin = path.join(dir, 'origin.git');
  git(dir, 'clone', '-q', '--bare', lab, origin);
  return { cudamatrix, lab, origin };
}
