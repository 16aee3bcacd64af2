/**
 * Import boundaries (checked by test/repo/boundaries.test.ts). Layers, lowest first:
 *   core -> transports -> probes -> matrix -> events -> run | (verdicts -> reporters | behaviour -> report) -> cli
 * A layer may import the layers below it, never above. matrix sits above probes and transports
 * because the matrix loader validates probe names, parameters and facts against the probe
 * catalogue and transport options against the transport registry. events/ is the event log:
 * its schema, reader and merge. run/ (the engine: plan, schedule, cancel, write the log) and the
 * renderings of a log (verdicts/, reporters/, behaviour/ records, the report/) are siblings:
 * neither side imports the other; the CLI joins them.
 */
/** The renderings of an event log, run/'s siblings. */
const RENDERINGS = ['verdicts', 'reporters', 'behaviour', 'report'];

const layer = (name, forbidden) => ({
  name: `${name}-imports-up`,
  severity: 'error',
  comment: `${name}/ must not import ${forbidden.join(', ')}/`,
  // Tests beside the code may use any layer as a tool (a probe test reading a committed event log).
  from: { path: `^${name}/`, pathNot: '\\.test\\.ts$' },
  to: { path: `^(${forbidden.join('|')})/` },
});

module.exports = {
  forbidden: [
    layer('core', ['transports', 'probes', 'matrix', 'events', 'run', ...RENDERINGS, 'cli']),
    layer('transports', ['probes', 'matrix', 'events', 'run', ...RENDERINGS, 'cli']),
    layer('probes', ['matrix', 'events', 'run', ...RENDERINGS, 'cli']),
    layer('matrix', ['events', 'run', ...RENDERINGS, 'cli']),
    layer('events', ['run', ...RENDERINGS, 'cli']),
    layer('run', [...RENDERINGS, 'cli']),
    layer('verdicts', ['run', 'reporters', 'behaviour', 'report', 'cli']),
    layer('reporters', ['run', 'behaviour', 'report', 'cli']),
    layer('behaviour', ['run', 'reporters', 'report', 'cli']),
    layer('report', ['run', 'reporters', 'cli']),
    {
      name: 'actions-core-only-in-github-reporter',
      severity: 'error',
      comment: '@actions/core is imported by the GitHub step (reporters/github-step.ts) only',
      from: { pathNot: '^reporters/github-step\\.ts$' },
      to: { path: '@actions/core' },
    },
    {
      name: 'no-test-code-in-product',
      severity: 'error',
      comment: 'product code never imports tests or test helpers',
      from: { pathNot: '(\\.test\\.ts$|^test/|^bench/|^tools/gha-player/)' },
      to: { path: '(\\.test\\.ts$|^test/|^tools/gha-player/)' },
    },
    {
      name: 'gha-player-stands-alone',
      severity: 'error',
      comment: 'tools/gha-player is a package of its own: it imports its dependencies, never the project',
      from: { path: '^tools/gha-player/' },
      to: { pathNot: '^(tools/gha-player/|node_modules/)', dependencyTypesNot: ['core'] },
    },
    { name: 'no-circular', severity: 'error', from: {}, to: { circular: true } },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    exclude: { path: '(node_modules|dist)' },
    // Packages that export ES modules only (@actions/expressions) resolve by their "import" condition.
    enhancedResolveOptions: { exportsFields: ['exports'], conditionNames: ['import', 'require', 'node', 'default'] },
  },
};
