/**
 * How the runner names and titles a step: the id of a step without one (__run, __self, _2), the
 * first line of a script, and the `Run …` group that opens a step's log.
 */
import type { StepLog } from './log.ts';
import type { Dict } from './play-types.ts';

export function header(slog: StepLog, title: string, body: string[], env: Record<string, string>): void {
  slog.write(`##[group]Run ${title}`);
  for (const line of body) slog.write(line);
  const names = Object.keys(env);
  if (names.length) {
    slog.write('env:');
    for (const name of names) slog.write(`  ${name}: ${env[name]}`);
  }
  slog.write('##[endgroup]');
}

/**
 * A composite action's step without an id, named as the runner names it (the rules of GitHub's
 * workflow parser, which names a workflow's steps: github-model.ts): __run, __self for a local
 * action, __owner_repo for owner/repo[/path]@ref, then _2, _3 for repeats.
 */
export function autoId(def: Dict, used: Set<string>): string {
  const uses = typeof def.uses === 'string' ? def.uses : '';
  const [repoPath = '', ref, ...more] = uses.split('@');
  const segments = repoPath.split(/[\\/]/).filter(Boolean);
  const name = uses.startsWith('docker://')
    ? uses.slice('docker://'.length)
    : /^(\.[\\/]|\$\/)/.test(uses)
      ? 'self'
      : ref && !more.length && segments.length >= 2
        ? `${segments[0]}/${segments[1]}`
        : 'run';
  const base = `__${name}`.replace(/[^A-Za-z0-9_-]/g, '_');
  let id = base;
  for (let suffix = 2; used.has(id); suffix++) id = `${base}_${suffix}`;
  return id;
}

export function firstLine(text: string): string {
  return (
    text
      .split('\n')
      .find((line) => line.trim() !== '')
      ?.trim() ?? ''
  );
}
