/**
 * The script of behaviour.html: the TypeScript module report/page/main.ts bundled by esbuild into
 * one script that the page inlines (it needs nothing from outside: no CDN, no fetch), for
 * browsers of 2020 on (ES2019).
 *
 * When it is bundled: esbuild is a devDependency, not in the package, so the packaged CLI cannot
 * bundle at run time. scripts/build-bundle.ts (pnpm build, and so pnpm pack) bundles the page
 * once and puts the script into dist/cudamatrix.cjs (it defines CUDAMATRIX_PAGE_SCRIPT); from the
 * sources (tsx, the tests) there is no such constant and the page is bundled on first use, with
 * the esbuild of the checkout, by the same function: so both give the same bytes. (As
 * transports/shell-files.ts does for the remote shell scripts.)
 */
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

declare const CUDAMATRIX_PAGE_SCRIPT: string | undefined;

let fromSources: string | undefined;

/** The page's script, bundled. */
export function pageScript(): string {
  if (typeof CUDAMATRIX_PAGE_SCRIPT !== 'undefined') return CUDAMATRIX_PAGE_SCRIPT;
  // createRequire rather than an import: the CLI's bundle must not take esbuild in (it never gets here).
  fromSources ??= bundlePage(createRequire(import.meta.url)('esbuild') as Esbuild).code;
  return fromSources;
}

type Esbuild = Pick<typeof import('esbuild'), 'buildSync'>;

/**
 * Bundles report/page/main.ts with what it imports; `inputs`: those files, relative to the
 * repository root. Paths in the script are relative to the root too (absWorkingDir), so the bytes
 * do not depend on the folder it is run from.
 */
export function bundlePage(esbuild: Esbuild): { code: string; inputs: string[] } {
  const root = fileURLToPath(new URL('..', import.meta.url));
  const result = esbuild.buildSync({
    entryPoints: [path.join(root, 'report', 'page', 'main.ts')],
    absWorkingDir: root,
    bundle: true,
    write: false,
    metafile: true,
    format: 'iife',
    platform: 'browser',
    target: 'es2019',
    minify: true,
    legalComments: 'none',
    logLevel: 'silent',
  });
  return { code: result.outputFiles[0]!.text, inputs: Object.keys(result.metafile.inputs).sort() };
}
