/**
 * Bundles the CLI (pnpm build) into dist/cudamatrix.cjs: one file that runs with plain Node.js
 * and needs no node_modules, started by bin/cudamatrix.cjs. It reads matrix/default.yaml and
 * package.json from the folder above it (the package, or the checkout).
 *
 * CommonJS, not an ES module, for start-up time: Node.js 20 can cache the compiled code of a
 * script (vm.Script cachedData) but not of an ES module (NODE_COMPILE_CACHE is Node.js 22),
 * and the bin script uses that cache so that --version and plan start within a few tens of
 * milliseconds of bare Node (bench/startup). The transports' code sits in the same file but is
 * only run when a target needs it (the registry imports it lazily).
 */
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import * as esbuild from 'esbuild';
import { build, type BuildOptions, type Plugin } from 'esbuild';
import { bundlePage } from '../report/page-script.ts';

/**
 * Leaves out code cudamatrix never runs, which every start would still read and compile: a
 * quarter of the bundle. Each left-out module is replaced by one that says so if it is ever used.
 */
const leaveOutUnused: Plugin = {
  name: 'leave-out-unused',
  setup(pluginBuild) {
    // dockerode loads gRPC for BuildKit sessions (buildImage with version "2"); cudamatrix
    // builds its image with the classic builder and never opens one.
    pluginBuild.onResolve({ filter: /^@grpc\/(grpc-js|proto-loader)$/ }, (args) => ({
      path: args.path,
      namespace: 'left-out',
      pluginData: "only dockerode's BuildKit sessions use it",
    }));
    // @actions/core's OIDC tokens (@actions/http-client, with undici: 0.44 MB) and its platform
    // details (@actions/exec): the GitHub reporter uses neither.
    pluginBuild.onResolve({ filter: /^@actions\/(http-client|exec)(\/.*)?$/ }, (args) => ({
      path: args.path,
      namespace: 'left-out',
      pluginData: "only @actions/core's OIDC tokens and platform details use it",
    }));
    pluginBuild.onLoad({ filter: /.*/, namespace: 'left-out' }, (args) => ({
      loader: 'js',
      contents: `module.exports = new Proxy({}, { get() { throw new Error(${JSON.stringify(`${args.path} is left out of the cudamatrix bundle (${args.pluginData})`)}); } });`,
    }));
    // zod's error messages in 48 languages: cudamatrix words its own messages, in English, and
    // zod configures English (its locales/en) by itself.
    pluginBuild.onLoad({ filter: /[\\/]zod[\\/]v4[\\/]locales[\\/]index\.c?js$/ }, (args) => ({
      loader: 'js',
      contents: args.path.endsWith('.cjs') ? 'exports.en = require("./en.cjs").default;' : 'export { default as en } from "./en.js";',
    }));
  },
};

/** Every .sh file under transports/, by its path there (what shellFile() asks for). */
function shellFiles(): Record<string, string> {
  const names = readdirSync('transports', { recursive: true, encoding: 'utf8' }).filter((name) => name.endsWith('.sh'));
  return Object.fromEntries(names.map((name) => [name.split('\\').join('/'), readFileSync(`transports/${name}`, 'utf8')]));
}

const common: BuildOptions = {
  bundle: true,
  platform: 'node',
  target: 'node20',
  logLevel: 'warning',
  // ssh2's optional native speed-ups: pnpm does not build them, and ssh2 does without them.
  external: ['cpu-features', '*.node'],
  plugins: [leaveOutUnused],
};

await build({
  ...common,
  entryPoints: ['cli/entry.ts'],
  outfile: 'dist/cudamatrix.cjs',
  format: 'cjs',
  minify: true,
  // The sources find package.json and matrix/ from their own URL; in the bundle that is the bundle's.
  // The remote shell scripts (transports/shell-files.ts) and the report page's script, bundled
  // (report/page-script.ts: the package has no esbuild to bundle it at run time), travel inside the bundle.
  define: {
    'import.meta.url': '__cmImportMetaUrl',
    CUDAMATRIX_SHELL_FILES: JSON.stringify(shellFiles()),
    CUDAMATRIX_PAGE_SCRIPT: JSON.stringify(bundlePage(esbuild).code),
  },
  banner: { js: "const __cmImportMetaUrl = require('node:url').pathToFileURL(__filename).href;" },
});

// The first line names the content's hash: bin/cudamatrix.cjs keys its code cache by it.
// (No #! line: the bundle is never run as a command itself.)
const code = readFileSync('dist/cudamatrix.cjs', 'utf8').replace(/^#!.*\n/, '');
const hash = createHash('sha256').update(code).digest('hex').slice(0, 16);
writeFileSync('dist/cudamatrix.cjs', `// cudamatrix bundle ${hash}\n${code}`);
console.log(`wrote dist/cudamatrix.cjs (${hash})`);
