// The linter: a few rules that catch what prettier and tsc do not, each with the reason it is here.
// `pnpm lint` runs it; `pnpm test` runs it after the type check.
import tseslint from 'typescript-eslint';

export default tseslint.config(
  {
    // Generated, vendored or data: not code we write.
    ignores: [
      '**/node_modules/**',
      '**/dist/**',
      'test/fixtures/**',
      'tools/gha-player/fixtures/**',
      'records/**',
      'bench/out/**',
      'results/runs/**',
      // Made here, ignored by git: the device-run bundles (pnpm gpu:prepare), the package's builds.
      '.gpu/**',
      'prebuilt/**',
      'test-artifacts/**',
    ],
  },
  {
    files: ['**/*.ts', '**/*.mts', '**/*.cts'],
    languageOptions: {
      parser: tseslint.parser,
      // Type-aware rules need the program: the project service finds each file's tsconfig.json.
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    plugins: { '@typescript-eslint': tseslint.plugin },
    linterOptions: { reportUnusedDisableDirectives: 'error' },
    rules: {
      // A promise nobody awaits loses its rejection (an unhandled rejection ends Node) and its
      // ordering: await it, .catch it, or mark it `void` with a comment saying why it may run on.
      '@typescript-eslint/no-floating-promises': 'error',
      // An async function where a void callback is expected (an event handler, forEach) has the
      // same problem, hidden: nobody sees its promise. `if (promise)` is always true.
      '@typescript-eslint/no-misused-promises': 'error',
      // One-letter names make readers keep a symbol table in long functions. Loop counters, the
      // unused `_` and the caught `e` are idioms everyone reads; properties follow their data.
      'id-length': ['error', { min: 2, exceptions: ['i', 'j', 'k', '_', 'e'], properties: 'never' }],
    },
  },
);
