/**
 * Import boundaries (checked by test/boundaries.test.ts). Layers, lowest first:
 *   core -> runners -> probes -> matrix -> events -> run | results -> cli
 * A layer may import the layers below it, never above. matrix sits above probes and runners
 * because the matrix loader validates probe names, parameters and facts against the probe
 * catalogue and transport options against the runner registry. events/ is the event log's
 * schema and reader. run/ (the engine: plan, schedule, cancel, write the log) and results/
 * (pure renderings of a log) are siblings: neither imports the other; the CLI joins them.
 */
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
    layer('core', ['runners', 'probes', 'matrix', 'events', 'run', 'results', 'cli']),
    layer('runners', ['probes', 'matrix', 'events', 'run', 'results', 'cli']),
    layer('probes', ['matrix', 'events', 'run', 'results', 'cli']),
    layer('matrix', ['events', 'run', 'results', 'cli']),
    layer('events', ['run', 'results', 'cli']),
    layer('run', ['results', 'cli']),
    layer('results', ['run', 'cli']),
    {
      name: 'actions-core-only-in-github-reporter',
      severity: 'error',
      comment: '@actions/core is imported by the GitHub step (results/reporters/github-step.ts) only',
      from: { pathNot: '^results/reporters/github-step\\.ts$' },
      to: { path: '@actions/core' },
    },
    {
      name: 'no-test-code-in-product',
      severity: 'error',
      comment: 'product code never imports tests or test helpers',
      from: { pathNot: '(\\.test\\.ts$|^test/|^bench/)' },
      to: { path: '(\\.test\\.ts$|^test/)' },
    },
    { name: 'no-circular', severity: 'error', from: {}, to: { circular: true } },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    exclude: { path: '(node_modules|dist)' },
  },
};
