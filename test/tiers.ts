/**
 * The test tiers (vitest.config.ts makes one Vitest project of each), chosen by what a test file
 * starts, so that `pnpm test:unit` gives an answer in a minute or two and the slow tiers run
 * where their tools are:
 * - unit: the code in the test's own process, and short-lived tools at most (git, ssh -G,
 *   shellcheck, xmllint, ps, sh); no CLI child process, no service, no compiler: it neither
 *   builds nor runs cudaprobe (a real run's renderings are reporters/real-run.test.ts's);
 * - integration: the real things a transport or a build talks to: sshd, dockerd, Slurm, the
 *   stand-in wsl.exe, Wine, the compilers (cudaprobe built and run), the packed package;
 * - e2e: cudamatrix as a user runs it: the CLI as a child process, the GitHub Actions workflows
 *   played by tools/gha-player, the report page in Chromium.
 * Every *.test.ts that is in neither list below is a unit test; test/repo/test-tiers.test.ts
 * checks that none of those imports what the other tiers start.
 */

export const integrationTests = [
  'test/ssh/**/*.test.ts',
  'test/docker/**/*.test.ts',
  'test/slurm/**/*.test.ts',
  'test/wsl/**/*.test.ts',
  'test/windows/**/*.test.ts',
  'test/package/**/*.test.ts',
  'test/docs/readme-package-route.test.ts',
  // The files `cudamatrix export` writes, read by pytest and by CMake and CTest.
  'test/export/**/*.test.ts',
  // Beside their code, but they build and run cudaprobe (and its Windows build under Wine).
  'probes/capability-judge.test.ts',
  // A local target's cells run the real cudaprobe (built on a cache miss: a minute on 2 cores).
  'run/execute.test.ts',
  'probes/capability-probes.test.ts',
  'probes/cudaprobe.test.ts',
  'probes/cudaprobe-standin.test.ts',
  'probes/host-vm-memory.test.ts',
  'probes/init-watchdog-events.test.ts',
  'probes/ipc-handles.test.ts',
  'probes/judge.test.ts',
  'probes/memory-probes.test.ts',
  'probes/p2p.test.ts',
  // Beside their code: a matrix run for real, cudaprobe on its no-driver path.
  'reporters/real-run.test.ts',
  // Beside their code, on a real sshd.
  'transports/ssh/session.test.ts',
  'transports/ssh/session-windows.test.ts',
];

export const endToEndTests = [
  'test/cli/**/*.test.ts',
  'test/bench/**/*.test.ts',
  'test/gha/action.test.ts',
  'test/gha/gha-*.test.ts',
  'test/report/merge-many.test.ts',
  'test/report/record-cli.test.ts',
  'test/report/report-browser.test.ts',
  'test/report/report-cli.test.ts',
  'test/report/plausibility-cli.test.ts',
  'test/docs/readme-ssh-recipe.test.ts',
  'test/repo/adding-a-transport.test.ts',
  // Beside their code, but they run the CLI as a child process (`run` builds cudaprobe).
  'cli/doctor.test.ts',
  'cli/init.test.ts',
  'cli/plan-examples.test.ts',
  'events/events.test.ts',
  'events/merge.test.ts',
  'reporters/console-not-applicable.test.ts',
  'reporters/github.test.ts',
  'transports/registry.test.ts',
];

/** Never test files: dependencies and build output. */
export const notTests = ['**/node_modules/**', 'dist/**'];
