/**
 * `cudamatrix export` on the command line: options, arguments and help. The command's code
 * (cli/export.ts) is imported only when it runs, so that --help loads none of it.
 */
import type { Command } from 'commander';

export function addExportCommand(program: Command): void {
  program
    .command('export')
    .description(
      "write each target's capability facts (does a feature work, against what its device attribute claims) as files a project's tests read: <out>/<target>/capabilities.json, conftest_cudamatrix.py (pytest) and cudamatrix.cmake (CTest)",
    )
    .argument(
      '<inputs...>',
      'run folders (results/runs/<run-id>), events.jsonl files, behaviour record files (.json) or files made by record --submit',
    )
    .requiredOption('--out <dir>', 'the folder to write into: one folder per target, <dir>/<target>/, its files replaced')
    .addHelpText(
      'after',
      `
A capability fact is one of works (the attribute claims it and the calls work), claimed-but-fails
(claimed, a call refused it), works-unclaimed (not claimed, yet it works) or unsupported (not
claimed, and refused); null where it cannot be decided. A feature is usable when it works or
works-unclaimed. Every capability fact of the catalogue is written, measured or not (a probe
that did not run gives "not measured"), so that a name that is none of them is a typo.

  capabilities.json       per feature: value, usable, claimed, the attribute and its value, the
                          call and its result, and a line saying why; the target's driver, GPU,
                          environment class, OS, and the run and file it came from (schema
                          cudamatrix-capabilities/1)
  conftest_cudamatrix.py  in conftest.py: from conftest_cudamatrix import *
                          on a test: @pytest.mark.requires_cuda("memory-pools.pool_posix_fd")
                          skipped unless usable, the reason naming the value, call, error and
                          driver; an unknown feature fails the test; also CUDA_CAPABILITIES
  cudamatrix.cmake        include() it; CUDAMATRIX_<FEATURE>_USABLE ON/OFF per feature, and
                          cudamatrix_requires(TEST FEATURE...) disables the test (ctest: Not Run,
                          Disabled) unless usable; an unknown feature is a FATAL_ERROR

The same input always gives the same bytes (docs/export.md).

Exit status:
  0  written
  2  an input that cannot be read or is incomplete (named, with what is wrong), a folder of
     records, --out that is a file, or two inputs with a target of the same name
  4  no input holds an observation of a GPU: nothing written
  6  a file could not be written (a full disk, no permission: named, with the cause)`,
    )
    .action(async (inputs: string[], opts: { out: string }) => {
      process.exitCode = (await import('./export.ts')).exportCommand(inputs, opts);
    });
}
