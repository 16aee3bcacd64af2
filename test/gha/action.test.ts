/**
 * The GitHub Action (action.yml, action/main.mjs), run as the runner runs a node action: Node.js
 * with the inputs as INPUT_<NAME> environment variables and RUNNER_TEMP set.
 *
 * - With a package packed from this checkout (test/package.ts, once for the file): --version,
 *   `plan` and `gha matrix` on matrix/examples/gha-lab.yaml, a `run` whose expectation fails (its
 *   exit status 1 comes through, its results where results-dir says), a second step reusing the
 *   unpacked folder, and the unpacked files identical to what `tar -xzf` makes of the tarball.
 * - With small tarballs made here: a stand-in CLI that prints its argv shows the arguments exactly
 *   (one per line, no shell) and that a SIGTERM reaches it; pax long names; and every bad input
 *   refused with an ::error:: naming the input, exit 2, nothing left behind (no package, a folder
 *   with none or two tarballs, a damaged or cut tarball, entries outside package/, a link).
 * - Under Wine, with the Windows node.exe (as test/windows/windows-host.test.ts): the same package unpacked
 *   and run with Windows paths (Z:\...), and reused.
 */
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { closeSync, cpSync, existsSync, mkdirSync, openSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import tarStream from 'tar-stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hasCommand, integrationAvailable, repoRoot, tempDir, WINDOWS_NODE, WINE } from '../helpers.ts';
import { packCheckout } from '../package.ts';

const MAIN = path.join(repoRoot, 'action', 'main.mjs');

interface ActionResult {
  status: number | null;
  stdout: string;
  stderr: string;
  ms: number;
}

/** The environment the runner gives a node action: its inputs as INPUT_<NAME> (GitHub's rule: upper case, spaces to _, hyphens kept). */
function actionEnv(inputs: Record<string, string>, runnerTemp: string, extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    TMPDIR: process.env.TMPDIR,
    NO_COLOR: '1',
    CUDAMATRIX_CACHE: path.join(runnerTemp, 'cache'),
    RUNNER_TEMP: runnerTemp,
    ...extra,
  };
  for (const [name, value] of Object.entries(inputs)) env[`INPUT_${name.replace(/ /g, '_').toUpperCase()}`] = value;
  return env;
}

function action(inputs: Record<string, string>, runnerTemp: string, options: { cwd?: string; env?: NodeJS.ProcessEnv } = {}): ActionResult {
  const started = performance.now();
  const result = spawnSync(process.execPath, [MAIN], {
    cwd: options.cwd ?? repoRoot,
    env: actionEnv(inputs, runnerTemp, options.env),
    encoding: 'utf8',
    timeout: 120_000,
  });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr, ms: performance.now() - started };
}

/** A gzipped tarball of the entries (tar-stream writes what it is given, `..` and links included). */
async function makeTarball(
  file: string,
  entries: { name: string; content?: string; type?: 'file' | 'symlink' | 'directory'; linkname?: string; mode?: number }[],
): Promise<string> {
  const pack = tarStream.pack();
  const chunks: Buffer[] = [];
  pack.on('data', (chunk) => chunks.push(chunk as Buffer));
  const ended = new Promise<void>((resolve) => pack.on('end', () => resolve()));
  for (const e of entries) {
    const header = { name: e.name, type: e.type ?? 'file', linkname: e.linkname, mode: e.mode ?? (e.type === 'directory' ? 0o755 : 0o644) };
    if (e.content === undefined) pack.entry(header);
    else pack.entry(header, e.content);
  }
  pack.finalize();
  await ended;
  writeFileSync(file, gzipSync(Buffer.concat(chunks)));
  return file;
}

/** A stand-in for the CLI: prints its argv and its INPUT_* variable names as JSON, exits FAKE_EXIT; on SIGTERM says so and exits 130. */
const FAKE_CLI = `
console.log(JSON.stringify({ argv: process.argv.slice(2), inputs: Object.keys(process.env).filter((k) => k.startsWith('INPUT_')) }));
if (process.env.FAKE_WAIT) {
  process.on('SIGTERM', () => { console.log('got SIGTERM'); process.exit(130); });
  setInterval(() => {}, 1000);
} else process.exitCode = Number(process.env.FAKE_EXIT || 0);
`;
const fakePackage = (file: string, extra: { name: string; content: string }[] = []) =>
  makeTarball(file, [
    { name: 'package/package.json', content: JSON.stringify({ name: 'cudamatrix', version: '9.9.9' }) },
    { name: 'package/bin/cudamatrix.cjs', content: FAKE_CLI, mode: 0o755 },
    ...extra,
  ]);

/** The ::error line of a refused input: its annotation names the input; exit 2. */
function expectRefused(result: ActionResult, input: string, problem: RegExp): void {
  expect(result.status, result.stdout + result.stderr).toBe(2);
  const lines = result.stdout.split('\n').filter(Boolean);
  expect(lines).toHaveLength(1);
  expect(lines[0]).toMatch(new RegExp(`^::error title=cudamatrix action::input "${input}": `));
  expect(lines[0]).toMatch(problem);
}

/** Every file below `dir` (relative, /-separated) with its sha256 and whether it is executable. */
function tree(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const entry of readdirSync(dir, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const file = path.join(entry.parentPath, entry.name);
    const exec = statSync(file).mode & 0o100 ? ' x' : '';
    out[path.relative(dir, file).split(path.sep).join('/')] = createHash('sha256').update(readFileSync(file)).digest('hex') + exec;
  }
  return out;
}

describe('the action with stand-in tarballs', () => {
  let fake: string;
  beforeAll(async () => {
    fake = await fakePackage(path.join(tempDir('cm-action-fake-'), 'cudamatrix-9.9.9.tgz'));
  });

  it('passes the command words, the named inputs and one argument per line, as argv: no shell, no INPUT_* for the CLI', () => {
    const temp = tempDir('cm-action-rt-');
    const odd = 'a folder with spaces/$(touch pwned) `x` "q" \'s\' * ?';
    const result = action(
      {
        package: fake,
        command: ' gha  merge ',
        matrix: 'lab.yaml',
        targets: 'win-*,linux-gpu',
        probes: 'sysinfo',
        'results-dir': 'out dir',
        args: `  ${odd}  \r\n\n--plan\n{"include":[{"name":"a b"}]}\n`,
      },
      temp,
      { cwd: temp },
    );
    expect(result.status, result.stdout + result.stderr).toBe(0);
    const lines = result.stdout.trim().split('\n');
    expect(lines[0]).toMatch(/^cudamatrix 9\.9\.9 from cudamatrix-9\.9\.9\.tgz \(sha256 [0-9a-f]{16}…\): unpacked into /);
    expect(JSON.parse(lines[1]!)).toEqual({
      argv: [
        'gha',
        'merge',
        '--matrix',
        'lab.yaml',
        '--target',
        'win-*,linux-gpu',
        '--probe',
        'sysinfo',
        '--results-dir',
        'out dir',
        odd,
        '--plan',
        '{"include":[{"name":"a b"}]}',
      ],
      inputs: [],
    });
    expect(existsSync(path.join(temp, 'pwned'))).toBe(false);
    // Empty inputs add nothing; the command defaults to run.
    const bare = action({ package: fake, matrix: '', args: '' }, temp);
    expect(JSON.parse(bare.stdout.trim().split('\n')[1]!).argv).toEqual(['run']);
  });

  it("exits with the CLI's status", () => {
    const temp = tempDir('cm-action-rt-');
    for (const code of [0, 1, 3, 130]) expect(action({ package: fake }, temp, { env: { FAKE_EXIT: String(code) } }).status).toBe(code);
  });

  it.runIf(process.platform !== 'win32')(
    "passes a SIGTERM on to the CLI and exits with its status (so a cancelled job's CLI can write its results)",
    async () => {
      const temp = tempDir('cm-action-rt-');
      const child = spawn(process.execPath, [MAIN], {
        cwd: temp,
        env: actionEnv({ package: fake }, temp, { FAKE_WAIT: '1' }),
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let out = '';
      child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
      const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
      // The stand-in is running when it has printed its argv.
      for (let i = 0; i < 200 && !out.includes('"argv"'); i++) await new Promise((resolve) => setTimeout(resolve, 50));
      child.kill('SIGTERM'); // this process only, as the runner signals the action's process
      expect(await exited).toBe(130);
      expect(out).toMatch(/got SIGTERM\n$/);
    },
  );

  it('reads pax long names, as npm writes paths over 100 characters', async () => {
    const long = `package/matrix/examples/${'a-very-long-folder-name/'.repeat(6)}lab.yaml`;
    expect(long.length).toBeGreaterThan(155);
    const dir = tempDir('cm-action-pax-');
    const tgz = await fakePackage(path.join(dir, 'long.tgz'), [{ name: long, content: 'version: 1\n' }]);
    const temp = tempDir('cm-action-rt-');
    expect(action({ package: tgz }, temp).status).toBe(0);
    const [unpacked] = readdirSync(path.join(temp, 'cudamatrix-action'));
    expect(readFileSync(path.join(temp, 'cudamatrix-action', unpacked!, ...long.split('/')), 'utf8')).toBe('version: 1\n');
    // What tar itself makes of it.
    const byTar = tempDir('cm-action-tar-');
    execFileSync('tar', ['-xzf', tgz, '-C', byTar]);
    const ours = tree(path.join(temp, 'cudamatrix-action', unpacked!));
    delete ours['.unpacked'];
    expect(ours).toEqual(tree(byTar));
  });

  describe('refuses bad input with an ::error:: naming the input and the fix, exit 2, and leaves nothing behind', () => {
    let temp: string;
    let dir: string;
    beforeAll(() => {
      temp = tempDir('cm-action-rt-');
      dir = tempDir('cm-action-bad-');
    });
    const nothingUnpacked = () =>
      expect(existsSync(path.join(temp, 'cudamatrix-action')) ? readdirSync(path.join(temp, 'cudamatrix-action')) : []).toEqual([]);

    it('no package, a path that does not exist, a folder with no tarball, a folder with two', () => {
      expectRefused(action({ package: '' }, temp), 'package', /is empty; pass the tarball `pnpm pack` writes/);
      expectRefused(action({ package: path.join(dir, 'nope.tgz') }, temp), 'package', /nope\.tgz does not exist/);
      const empty = path.join(dir, 'empty');
      mkdirSync(empty);
      writeFileSync(path.join(empty, 'notes.txt'), 'no tarball here');
      expectRefused(action({ package: empty }, temp), 'package', /the folder .*empty holds no \.tgz file/);
      const two = path.join(dir, 'two');
      mkdirSync(two);
      cpSync(fake, path.join(two, 'cudamatrix-0.1.0.tgz'));
      cpSync(fake, path.join(two, 'cudamatrix-0.2.0.tgz'));
      expectRefused(
        action({ package: two }, temp),
        'package',
        /holds 2 \.tgz files \(cudamatrix-0\.1\.0\.tgz, cudamatrix-0\.2\.0\.tgz\); name one of them/,
      );
      nothingUnpacked();
    });

    it('a file that is not gzip, a tarball cut short, a tarball of something else', async () => {
      const garbage = path.join(dir, 'garbage.tgz');
      writeFileSync(garbage, 'this is not a tarball');
      expectRefused(
        action({ package: garbage }, temp),
        'package',
        /garbage\.tgz: it is not a gzip-compressed tarball .*; pack it again with `pnpm pack`/,
      );
      const whole = readFileSync(fake);
      const cut = path.join(dir, 'cut.tgz');
      writeFileSync(cut, whole.subarray(0, whole.length >> 1));
      expectRefused(action({ package: cut }, temp), 'package', /cut\.tgz: it is not a gzip-compressed tarball \(unexpected end of file\)/);
      // A gzip stream that is whole, of a tar archive that is not: its data ends inside an entry.
      const tar = execFileSync('gzip', ['-dc', fake]);
      const shortTar = path.join(dir, 'short-tar.tgz');
      // The stand-in's entries: package.json (a header and one block of data), then the CLI's header and its data, cut.
      writeFileSync(shortTar, gzipSync(tar.subarray(0, 1024 + 512 + 100)));
      expectRefused(action({ package: shortTar }, temp), 'package', /short-tar\.tgz: the tarball ends inside an entry .* it is cut short/);
      const other = await makeTarball(path.join(dir, 'other.tgz'), [{ name: 'package/package.json', content: '{"version":"1.0.0"}' }]);
      expectRefused(
        action({ package: other }, temp),
        'package',
        /other\.tgz is not a cudamatrix package \(it has no package\/bin\/cudamatrix\.cjs\)/,
      );
      nothingUnpacked();
    });

    it('entries that leave package/ (.., an absolute path, a drive, a backslash) and links, with nothing written', async () => {
      const cases: [string, Parameters<typeof makeTarball>[1][number], RegExp][] = [
        [
          'dotdot',
          { name: 'package/../../escaped.txt', content: 'x' },
          /the entry "package\/\.\.\/\.\.\/escaped\.txt" lies outside package\//,
        ],
        ['absolute', { name: '/tmp/escaped.txt', content: 'x' }, /the entry "\/tmp\/escaped\.txt" lies outside package\//],
        ['drive', { name: 'C:/escaped.txt', content: 'x' }, /the entry "C:\/escaped\.txt" lies outside package\//],
        ['backslash', { name: 'package\\..\\..\\escaped.txt', content: 'x' }, /lies outside package\//],
        ['outside', { name: 'other/escaped.txt', content: 'x' }, /the entry "other\/escaped\.txt" lies outside package\//],
        [
          'symlink',
          { name: 'package/matrix', type: 'symlink', linkname: '/etc' },
          /the entry "package\/matrix" is a symbolic link, which a package never holds; nothing was written/,
        ],
      ];
      for (const [name, bad, problem] of cases) {
        // The bad entry comes last: a refusal must come before anything is written.
        const tgz = await fakePackage(path.join(dir, `${name}.tgz`), [bad as { name: string; content: string }]);
        expectRefused(action({ package: tgz }, temp), 'package', problem);
      }
      nothingUnpacked();
      expect(readdirSync(temp).filter((fileName) => fileName.includes('escaped'))).toEqual([]);
      expect(existsSync('/tmp/escaped.txt')).toBe(false);
    });
  });
});

/** The package, packed once for the file (packing compiles cudaprobe three times, cached). */
let packed: string | undefined;
const packOnce = () => (packed ??= packCheckout());

const ready = integrationAvailable(
  'pnpm, tar and the three cudaprobe compilers (to pack the package)',
  hasCommand('pnpm') &&
    hasCommand('tar') &&
    hasCommand('g++') &&
    hasCommand('aarch64-linux-gnu-g++') &&
    hasCommand('x86_64-w64-mingw32-g++-posix'),
  'npm install -g pnpm@10; apt-get install tar g++ g++-aarch64-linux-gnu g++-mingw-w64-x86-64-posix',
);

describe.runIf(ready)('the action with the package packed from this checkout', () => {
  let tarball: string;
  let version: string;
  beforeAll(() => {
    tarball = packOnce();
    version = JSON.parse(readFileSync(path.join(repoRoot, 'package.json'), 'utf8')).version;
  }, 900_000);

  it('unpacks it as tar does and runs --version; a second step reuses the folder', () => {
    const temp = tempDir('cm-action-rt-');
    const first = action({ package: tarball, args: '--version' }, temp);
    expect(first.status, first.stdout + first.stderr).toBe(0);
    const [line, printed] = first.stdout.trim().split('\n');
    expect(printed).toBe(version);
    const dir = /unpacked into (.*)$/.exec(line!)?.[1];
    expect(dir).toBe(path.join(temp, 'cudamatrix-action', createHash('sha256').update(readFileSync(tarball)).digest('hex').slice(0, 16)));

    const byTar = tempDir('cm-action-tar-');
    execFileSync('tar', ['-xzf', tarball, '-C', byTar]);
    const ours = tree(dir!);
    expect(Object.keys(ours).filter((file) => !file.startsWith('package/'))).toEqual(['.unpacked']);
    delete ours['.unpacked'];
    expect(ours).toEqual(tree(byTar));
    expect(ours['package/bin/cudamatrix.cjs']).toMatch(/ x$/);

    // The second step finds it: not unpacked again (a file put there stays), and no other folder.
    writeFileSync(path.join(dir!, 'package', 'left-by-step-1'), '');
    const second = action({ package: path.dirname(tarball), command: 'plan', matrix: 'matrix/examples/gha-lab.yaml' }, temp);
    expect(second.status, second.stdout + second.stderr).toBe(0);
    expect(second.stdout).toMatch(new RegExp(`^cudamatrix ${version} from .*: reusing ${dir!.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\n`));
    expect(second.stdout).toMatch(/\n105 cells on 5 targets from matrix\/examples\/gha-lab\.yaml\n$/);
    expect(existsSync(path.join(dir!, 'package', 'left-by-step-1'))).toBe(true);
    expect(readdirSync(path.join(temp, 'cudamatrix-action'))).toEqual([path.basename(dir!)]);
    console.log(
      `action: ${(statSync(tarball).size / 1e6).toFixed(1)} MB tarball unpacked and --version run in ${Math.round(first.ms)} ms; plan reusing it in ${Math.round(second.ms)} ms`,
    );
  });

  it('gha matrix under GITHUB_ACTIONS: the CLI writes the step outputs itself', () => {
    const temp = tempDir('cm-action-rt-');
    const outputs = path.join(temp, 'github-output');
    writeFileSync(outputs, '');
    const result = action(
      { package: tarball, command: 'gha matrix', matrix: 'matrix/examples/gha-lab.yaml', targets: 'win-*,h100-over-ssh' },
      temp,
      {
        env: { GITHUB_ACTIONS: 'true', GITHUB_OUTPUT: outputs, GITHUB_STEP_SUMMARY: path.join(temp, 'summary.md') },
      },
    );
    expect(result.status, result.stdout + result.stderr).toBe(0);
    const plan = JSON.parse(result.stdout.trim().split('\n')[1]!) as { include: { name: string; runsOn: string[] }[] };
    expect(plan.include.map((e) => `${e.name} ${e.runsOn.join(',')}`)).toEqual([
      'win-wddm self-hosted,windows,x64,gpu,wddm',
      'win-wsl2 self-hosted,windows,x64,gpu,wsl2',
      'shared self-hosted,linux,cudamatrix-shared',
    ]);
    const written = readFileSync(outputs, 'utf8');
    expect(written).toContain(JSON.stringify(plan));
    expect(written).toMatch(/count<<|count=3/);
  });

  it("run: an expectation not met is exit 1, the results go where results-dir says, and a matrix error is the CLI's exit 2", () => {
    const temp = tempDir('cm-action-rt-');
    const matrix = path.join(temp, 'windows-expected.yaml');
    writeFileSync(
      matrix,
      'version: 1\ntargets:\n  - name: here\n    transport: local\n    probes: [sysinfo]\n    expect:\n      - fact: sysinfo.os_family\n        equals: windows\n        why: this test wants it to fail on Linux\n',
    );
    const results = path.join(temp, 'results dir');
    const result = action({ package: tarball, matrix, 'results-dir': results }, temp, { cwd: temp });
    expect(result.status, result.stdout + result.stderr).toBe(1);
    expect(result.stdout).toMatch(/✗ here: sysinfo\.os_family == "?windows"?/);
    const [run] = readdirSync(results);
    expect(readdirSync(path.join(results, run!)).sort()).toEqual(['events.jsonl', 'junit.xml', 'summary.json']);

    const missing = action({ package: tarball, command: 'plan', matrix: 'no-such-matrix.yaml' }, temp, { cwd: temp });
    expect(missing.status).toBe(2);
    expect(missing.stderr).toMatch(/no-such-matrix\.yaml/);
  });
});

const wineReady = integrationAvailable(
  'Wine, the Windows node.exe and the package (pnpm and the three compilers)',
  ready && hasCommand(WINE, ['--version']) && existsSync(WINDOWS_NODE),
  'apt-get install wine64; pnpm install (tools/windows-node brings node.exe)',
);

describe.runIf(wineReady)('the action run by the Windows node.exe (under Wine)', () => {
  const WINESERVER = path.join(path.dirname(WINE), 'wineserver');
  let env: NodeJS.ProcessEnv;
  let tarballDir: string;
  const onZ = (unixPath: string) => `Z:${unixPath.replaceAll('/', '\\')}`;

  beforeAll(() => {
    tarballDir = tempDir('cm-action-win-pkg-');
    cpSync(packOnce(), path.join(tarballDir, 'cudamatrix.tgz'));
    env = {
      PATH: process.env.PATH,
      HOME: tempDir('cm-winehome-'),
      WINEPREFIX: tempDir('cm-wineprefix-'),
      WINEDEBUG: '-all',
      WINEDLLOVERRIDES: 'mscoree=;mshtml=',
      NO_COLOR: '1',
    };
    // Node.js 20 needs Windows 10; the prefix is made by this first command.
    expect(spawnSync(WINE, ['winecfg', '/v', 'win10'], { env, stdio: 'ignore', timeout: 120_000 }).status).toBe(0);
  }, 900_000);
  afterAll(() => {
    if (env) spawnSync(WINESERVER, ['-k'], { env, stdio: 'ignore', timeout: 60_000 });
  });

  /** node.exe main.mjs, its stdout and stderr into files (a pipe gives EBADF under Wine). */
  function winAction(inputs: Record<string, string>, runnerTemp: string): ActionResult {
    const out = tempDir('cm-wine-out-');
    const fds = [openSync(path.join(out, 'stdout'), 'w'), openSync(path.join(out, 'stderr'), 'w')];
    const started = performance.now();
    const winEnv = { ...env, ...actionEnv(inputs, runnerTemp, { PATH: env.PATH, HOME: env.HOME }) };
    // Not the Unix cache folder; and no TMPDIR: Wine would start another wineserver for it, one
    // that may not yet see the prefix's Windows version (Node.js 20 then refuses to start).
    delete winEnv.CUDAMATRIX_CACHE;
    delete winEnv.TMPDIR;
    const result = spawnSync(WINE, [WINDOWS_NODE, onZ(MAIN)], {
      cwd: repoRoot,
      env: winEnv,
      stdio: ['ignore', fds[0]!, fds[1]!],
      timeout: 180_000,
    });
    fds.forEach((fd) => closeSync(fd));
    return {
      status: result.status,
      stdout: readFileSync(path.join(out, 'stdout'), 'utf8'),
      stderr: readFileSync(path.join(out, 'stderr'), 'utf8'),
      ms: performance.now() - started,
    };
  }

  it('unpacks under a Windows RUNNER_TEMP, runs --version and plan, and reuses the folder', () => {
    const temp = tempDir('cm-action-winrt-');
    const first = winAction({ package: onZ(tarballDir), args: '--version' }, onZ(temp));
    expect(first.status, first.stdout + first.stderr).toBe(0);
    const [line, printed] = first.stdout.trim().split(/\r?\n/);
    expect(printed).toMatch(/^\d+\.\d+\.\d+$/);
    expect(line).toMatch(new RegExp(`unpacked into ${onZ(temp).replace(/\\/g, '\\\\')}\\\\cudamatrix-action\\\\[0-9a-f]{16}$`));
    const [unpacked] = readdirSync(path.join(temp, 'cudamatrix-action'));
    const byTar = tempDir('cm-action-tar-');
    execFileSync('tar', ['-xzf', path.join(tarballDir, 'cudamatrix.tgz'), '-C', byTar]);
    const ours = tree(path.join(temp, 'cudamatrix-action', unpacked!));
    delete ours['.unpacked'];
    // Wine keeps no Unix exec bits for what a Windows process writes: compare the bytes.
    const bytes = (hashes: Record<string, string>) => Object.fromEntries(Object.entries(hashes).map(([k, hash]) => [k, hash.slice(0, 64)]));
    expect(bytes(ours)).toEqual(bytes(tree(byTar)));

    const plan = winAction(
      { package: onZ(tarballDir), command: 'plan', matrix: 'matrix\\examples\\gha-lab.yaml', probes: 'sysinfo' },
      onZ(temp),
    );
    expect(plan.status, plan.stdout + plan.stderr).toBe(0);
    expect(plan.stdout).toMatch(/: reusing Z:\\/);
    expect(plan.stdout).toMatch(/5 cells on 5 targets from matrix\\examples\\gha-lab\.yaml/);
    expectRefused(winAction({ package: onZ(path.join(temp, 'nothing-here')) }, onZ(temp)), 'package', /Z:\\.*nothing-here does not exist/);
    console.log(`action under Wine: unpacked and --version in ${Math.round(first.ms)} ms, plan reusing it in ${Math.round(plan.ms)} ms`);
  });
});
