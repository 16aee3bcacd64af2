/**
 * `cudamatrix init [file]`: writes a commented starter matrix that extends the default
 * expectations: this machine as its one target, and an SSH host and a Docker container to
 * uncomment. It never overwrites a file.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { CudamatrixError } from '../core/errors.ts';
import { packageFileForDisplay, packageRoot } from '../core/package-root.ts';
import { environmentClasses } from '../matrix/schema.ts';

export const DEFAULT_INIT_FILE = 'cudamatrix.yaml';

export function starterMatrix(file = DEFAULT_INIT_FILE): string {
  // The schema by its full path: the file may be written anywhere, and the YAML language server
  // (VS Code's YAML extension and others) reads this first line wherever the file is.
  return `# yaml-language-server: $schema=${path.join(packageRoot(), 'matrix', 'schema.json')}
# A cudamatrix matrix: the targets to measure, and what to expect of them.
# Check it with:  cudamatrix plan -m ${file}     Run it with:  cudamatrix run -m ${file}
# An editor with the YAML language server checks it against the schema named on the first line;
# the examples are in ${packageFileForDisplay('matrix', 'examples')}.
version: 1

# Start from the default expectations of every environment class (${environmentClasses.join(', ')};
# ${packageFileForDisplay('matrix', 'default.yaml')}): each target is judged by those of the class
# it is detected as. Expectations below are added; one on the same fact (or the same metric and
# "where") replaces the default's. Remove this line to judge only by your own.
extends: default

description: My GPUs

defaults:
  probes: all          # or a list: [sysinfo, pinned-vram, sync-latency]
  timeout: 10m         # per probe

# expectations:
#   linux:
#     - metric: sync-latency.p50_us
#       "<=": 50 us
#       why: our servers launch faster than the default bound

targets:
  # This machine: probes run as child processes.
  - name: local

  # A Linux server over SSH. Relative paths are taken from this file's folder; host keys must be
  # in known_hosts (or run once with --accept-new, which records them and says which).
  # - name: gpu-server
  #   transport:
  #     kind: ssh
  #     host: gpu-server        # a host name, an address, or a Host alias from ~/.ssh/config
  #     user: ci
  #     identityFile: ~/.ssh/id_ed25519

  # The same server's GPU in a container, through the NVIDIA Container Toolkit there.
  # - name: gpu-server-docker
  #   transport:
  #     - {kind: ssh, host: gpu-server, user: ci}
  #     - {kind: docker}
`;
}

export function initCommand(file: string | undefined): number {
  const target = path.resolve(file ?? DEFAULT_INIT_FILE);
  try {
    // "wx": refuses an existing file (or a link) in the same call that creates it.
    writeFileSync(target, starterMatrix(file ?? DEFAULT_INIT_FILE), { flag: 'wx' });
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'EEXIST')
      throw new CudamatrixError(
        'USAGE',
        `${target} already exists; nothing was written. Name another file (cudamatrix init other.yaml), or remove that one first`,
      );
    throw new CudamatrixError('USAGE', `cannot write ${target}: ${(error as Error).message}`);
  }
  const shown = file ?? DEFAULT_INIT_FILE;
  process.stdout.write(`wrote ${target}\nnext: cudamatrix plan -m ${shown}   then: cudamatrix run -m ${shown}\n`);
  return 0;
}
