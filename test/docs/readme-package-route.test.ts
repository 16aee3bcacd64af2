/**
 * README's package route says, where its `pnpm pack` stands, what packing needs and where the
 * package then runs (issue 33): the cross compilers prepare-package stops without, and the glibc
 * the Linux cudaprobe built here asks for. The glibc figure is measured, not copied: on a Debian
 * 12 machine the test builds cudaprobe as pnpm pack would and reads the highest GLIBC_ version
 * its dynamic symbols name (glibcFloor, as pnpm pack prints it).
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { glibcFloor } from '../../probes/binary.ts';
import { buildProbe } from '../../probes/build.ts';
import { repoRoot } from '../helpers.ts';

/** README's package route: from "On a GPU runner" to the next heading. */
function packageRoute(): string {
  const readme = readFileSync(path.join(repoRoot, 'README.md'), 'utf8');
  const start = readme.indexOf('**On a GPU runner');
  expect(start, 'README.md has its package route ("On a GPU runner, ...")').toBeGreaterThan(0);
  return readme.slice(start, readme.indexOf('\n## ', start));
}

const osRelease = existsSync('/etc/os-release') ? readFileSync('/etc/os-release', 'utf8') : '';
const debian12 = /^ID=debian$/m.test(osRelease) && /^VERSION_ID="?12"?$/m.test(osRelease);

describe("README's package route", () => {
  it('names, where pnpm pack stands, the aarch64 and MinGW cross compilers packing needs', () => {
    const route = packageRoute();
    expect(route).toContain('pnpm pack');
    // The Debian packages probes/build.ts names when one is missing (scripts/prepare-package.ts needs all three).
    expect(route).toContain('g++-aarch64-linux-gnu');
    expect(route).toContain('g++-mingw-w64-x86-64-posix');
  });

  it.runIf(debian12)(
    'says the glibc a package packed on Debian 12 needs: the floor of the cudaprobe built here, and the distributions it rules out',
    async () => {
      const binary = await buildProbe({ platform: 'linux', arch: process.arch === 'arm64' ? 'aarch64' : 'x86_64' });
      const floor = glibcFloor(readFileSync(binary.path));
      expect(floor).toBeDefined();
      const route = packageRoute().replace(/\s+/g, ' ');
      expect(route).toMatch(new RegExp(`packed on Debian 12[^.]*glibc ${floor!.replace('.', '\\.')}\\b`));
      // Ubuntu 22.04 ships glibc 2.35 and RHEL 9 2.34: below this floor, so they are named.
      if (Number(floor!.split('.')[1]) > 35) expect(route).toMatch(/Ubuntu 22\.04/);
      if (Number(floor!.split('.')[1]) > 34) expect(route).toMatch(/RHEL 9/);
    },
    600_000,
  );
});
