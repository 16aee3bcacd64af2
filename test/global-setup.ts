/**
 * Once per tier (vitest.config.ts lists it in every project), before its test files run in
 * parallel: makes the tier's own temp dir. test/setup-temp.ts points every test file's TMPDIR at
 * it, and at the end any cm-* / cudamatrix-* entry still in it fails the run (a test left it
 * behind). The cudaprobe build and the Docker engine are set up apart
 * (test/global-setup-cudaprobe.ts, test/global-setup-docker.ts).
 */
import { mkdtempSync, readdirSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { TestProject } from 'vitest/node';

declare module 'vitest' {
  export interface ProvidedContext {
    /** The tier's own temp dir (TMPDIR of every test file). */
    suiteTmpDir: string;
  }
}

/** The names of the temp folders tests and cudamatrix make. */
const ours = (name: string) => name.startsWith('cm-') || name.startsWith('cudamatrix-');

function oursIn(dir: string): string[] {
  try {
    return readdirSync(dir).filter(ours);
  } catch {
    return [];
  }
}

export default function setup(project: TestProject): () => Promise<void> {
  const outerTmp = tmpdir();
  const before = new Set(oursIn(outerTmp));
  const suiteTmp = mkdtempSync(path.join(outerTmp, 'cudamatrix-suite-'));
  project.provide('suiteTmpDir', suiteTmp);

  return async () => {
    const problems: string[] = [];
    const left = oursIn(suiteTmp);
    if (left.length) problems.push(`the tests left ${left.length} temp folder(s) behind in ${suiteTmp}: ${left.sort().join(', ')}`);
    await rm(suiteTmp, { recursive: true, force: true, maxRetries: 5, retryDelay: 200 }).catch((error: Error) =>
      problems.push(`could not remove ${suiteTmp}: ${error.message}`),
    );
    const after = oursIn(outerTmp);
    // Other tiers' temp dirs (each checked by its own teardown) are not news.
    const added = after.filter((name) => !before.has(name) && !name.startsWith('cudamatrix-suite-'));
    console.log(
      `${project.name} tests: temp folders (cm-*, cudamatrix-*) in ${outerTmp}: ${before.size} before, ${after.length} after` +
        `${added.length ? ` (new, possibly from other processes: ${added.sort().join(', ')})` : ''}; left in the tier's own temp dir: ${left.length}`,
    );
    if (problems.length) {
      console.error(`\n*** ${project.name} tests: teardown failed ***\n${problems.map((problem) => `- ${problem}`).join('\n')}\n`);
      process.exitCode = 1;
    }
  };
}
