import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { CudamatrixError } from '../core/errors.ts';
import { tempDir } from '../test/helpers.ts';
import { ENDPOINT_PATTERN, endpointOptions, endpointProblem, resolveEngine } from '../transports/docker/engine.ts';
import { hostKeyOf } from '../transports/registry.ts';
import { MatrixError } from './errors.ts';
import { loadMatrixFile, MAX_MATRIX_BYTES, parseMatrix } from './load.ts';

const fixtures = path.join(import.meta.dirname, '..', 'test', 'fixtures', 'matrix-invalid');

/** Each fixture's first line says what it must produce: "# expect: CODE LINE:COL [text]". */
const cases = readdirSync(fixtures)
  .filter((fileName) => fileName.endsWith('.yaml'))
  .sort()
  .map((file) => {
    const head = readFileSync(path.join(fixtures, file), 'utf8').split('\n')[0]!;
    const match = /^# expect: (\w+) (\d+):(\d+)(?: (.*))?$/.exec(head);
    if (!match) throw new Error(`${file}: first line must be "# expect: CODE LINE:COL [text]"`);
    return { file, code: match[1]!, line: Number(match[2]), col: Number(match[3]), text: match[4] };
  });

function matrixError(text: string): MatrixError {
  try {
    parseMatrix(text, 'several.yaml');
  } catch (error) {
    if (error instanceof MatrixError) return error;
    throw error;
  }
  throw new Error('the matrix loaded without an error');
}

async function loadError(file: string): Promise<MatrixError> {
  try {
    await loadMatrixFile(file);
  } catch (error) {
    if (error instanceof MatrixError) return error;
    throw error;
  }
  throw new Error(`${file} loaded without an error`);
}

describe('malformed matrix files', () => {
  it('has at least 30 of them', () => {
    expect(cases.length).toBeGreaterThanOrEqual(30);
  });

  it.each(cases)('$file -> $code at $line:$col', async ({ file, code, line, col, text }) => {
    const full = path.join(fixtures, file);
    const error = await loadError(full);
    expect(error.code).toBe(code);
    expect(error.issues[0]).toMatchObject({ code, line, col });
    expect(error.message).toContain(`${full}:${line}:${col}: `);
    expect(error.message).toContain('fix: ');
    if (text) expect(error.message).toContain(text);
  });
});

describe('matrix loading', () => {
  it('refuses a file with NUL bytes as not YAML', () => {
    const e = (() => {
      try {
        parseMatrix('version: 1\u0000\u0001\u0002', 'bin.yaml');
      } catch (error) {
        return error as MatrixError;
      }
    })();
    expect(e?.code).toBe('MATRIX_SYNTAX');
  });

  it('refuses a file larger than the limit before parsing it', async () => {
    const dir = tempDir();
    const file = path.join(dir, 'huge.yaml');
    writeFileSync(file, `version: 1\n# ${'x'.repeat(MAX_MATRIX_BYTES)}\n`);
    const error = await loadError(file);
    expect(error.code).toBe('MATRIX_TOO_COMPLEX');
  });

  it('says which file is missing', async () => {
    await expect(loadMatrixFile('/nonexistent/matrix.yaml')).rejects.toMatchObject({ code: 'MATRIX_NOT_FOUND' });
    await expect(loadMatrixFile('/nonexistent/matrix.yaml')).rejects.toBeInstanceOf(CudamatrixError);
  });

  it('reports every problem of a file at once, in file order', () => {
    const text = [
      'version: 1',
      'concurency: 2',
      'targets:',
      '  - name: a',
      '    probes: [sysinf]',
      '  - name: a',
      '    probes: [nope]',
    ].join('\n');
    const e = matrixError(text);
    expect(e.issues.map((i) => [i.code, i.line])).toEqual([
      ['MATRIX_UNKNOWN_KEY', 2],
      ['MATRIX_UNKNOWN_PROBE', 5],
      ['MATRIX_DUPLICATE_TARGET', 6],
      ['MATRIX_UNKNOWN_PROBE', 7],
    ]);
  });

  it('runs the catalogue checks even when the schema fails: errors do not come in rounds', () => {
    const text = [
      'version: 1',
      'expectations:',
      '  all:',
      '    - fact: sysinfo.no_such_fact', // line 4
      '      equals: true',
      'targets:',
      '  - name: box',
      '    transport: locl', // line 8
      '    timout: 5m', // line 9
      '    probes: [sysinfo, warp-drive]', // line 10
      '    params:',
      '      pinned-vram: {size_gib: [1]}', // line 12
      '    expect:',
      '      - metric: sync-latency.p50_us', // line 14
      '        "<=": 5 GiB', // line 15
      '      - fact: sysinfo.environment',
      '        equals: windows', // line 17
      '  - name: box', // line 18
      '    transport: [local, local]', // line 19
    ].join('\n');
    const e = matrixError(text);
    expect(e.issues.map((i) => [i.code, i.line, i.col])).toEqual([
      ['MATRIX_UNKNOWN_FACT', 4, 13],
      ['MATRIX_UNKNOWN_TRANSPORT', 8, 16],
      ['MATRIX_UNKNOWN_KEY', 9, 5],
      ['MATRIX_UNKNOWN_PROBE', 10, 23],
      ['MATRIX_UNKNOWN_PARAM', 12, 21],
      ['MATRIX_INVALID', 14, 9], // expects sync-latency, which the target does not run
      ['MATRIX_INVALID', 15, 15], // a size is not a latency
      ['MATRIX_INVALID', 17, 17], // sysinfo.environment is never "windows"
      ['MATRIX_DUPLICATE_TARGET', 18, 11],
      ['MATRIX_INVALID', 19, 24], // local cannot follow another hop
    ]);
    for (const i of e.issues) expect(i.fix, i.message).toMatch(/\S/);
    expect(e.message).toContain('the matrix file has 10 errors');
    expect(e.message).toContain('several.yaml:9:5: unknown key "timout" in targets[0] (did you mean "timeout"?)');
    expect(e.message).toContain('fix: rename it to "timeout"');
  });

  it('checks only what has the right form, and reports each problem once', () => {
    const text = [
      'version: 1',
      'defaults: {probes: everything, params: [1]}',
      'expectations:',
      '  all: [{fact: 5, equals: x}, {fact: sysinfo.environment}, {fact: sysinfo.environment, metric: x.y, equals: linux}, 7]',
      'targets:',
      '  - name: a',
      '    params: {sysinfo: 5}',
      '    transport: [{kind: nope}, {host: x}]',
      '    expect: [{metric: sync-latency.p50_us, "<=": [1]}]',
      '  - 42',
    ].join('\n');
    const e = matrixError(text);
    const keys = e.issues.map((i) => `${i.code} ${i.line}:${i.col} ${i.message}`);
    expect(new Set(keys).size).toBe(keys.length);
    // Nothing from the catalogue checks: every problem here is one of form, which the schema reports.
    expect(e.issues.map((i) => i.code)).not.toContain('MATRIX_UNKNOWN_FACT');
    expect(e.issues.every((i) => i.line >= 2 && i.line <= 10)).toBe(true);
  });

  it('checks Docker endpoints when the matrix is loaded, as far as their text tells', () => {
    const load = (endpoint: string) =>
      parseMatrix(
        `version: 1\ntargets:\n  - name: c\n    transport: {kind: docker, endpoint: ${JSON.stringify(endpoint)}}\n`,
        'docker.yaml',
      );
    const refused = [
      'ftp://x',
      '',
      'docker.sock',
      '/var/run/docker.sock',
      'unix://',
      'unix://var/run/docker.sock',
      'tcp://',
      'tcp://gpu:99999',
      'ssh://',
      'ssh://me@gpu/path',
      'ssh://me:pw@gpu',
    ];
    const accepted = [
      'unix:///var/run/docker.sock',
      'tcp://gpu-box:2376',
      'https://gpu-box',
      'ssh://me@gpu-box',
      'ssh://me@gpu-box:2222',
      'npipe:////./pipe/docker_engine',
      'tcp://[::1]:2375',
    ];
    for (const endpoint of refused) {
      expect(() => load(endpoint), endpoint).toThrow(MatrixError);
      try {
        load(endpoint);
      } catch (error) {
        const e = error as MatrixError;
        expect(e.issues[0], endpoint).toMatchObject({ line: 4, path: ['targets', 0, 'transport', 'endpoint'] });
        expect(e.issues[0]!.fix, endpoint).not.toMatch(/see matrix\/schema\.json/);
        if (endpoint.includes(':pw@')) {
          expect(e.code).toBe('MATRIX_SECRET');
          expect(e.message).not.toContain('pw@');
        }
      }
    }
    // Whatever loads, the engine resolver takes: a target can no longer fail on it mid-run.
    for (const endpoint of accepted) {
      const matrix = load(endpoint);
      expect(() => resolveEngine({ endpoint: String(matrix.targets[0]!.hops[0]!.endpoint) }), endpoint).not.toThrow();
      expect(hostKeyOf(matrix.targets[0]!.hops), endpoint).toMatch(/^docker:/);
    }
    // The JSON Schema's pattern says the same (but for port ranges, which it leaves to the loader).
    const pattern = new RegExp(ENDPOINT_PATTERN, 'u');
    for (const endpoint of refused.filter((e) => !e.endsWith(':99999'))) expect(pattern.test(endpoint), endpoint).toBe(false);
    for (const endpoint of accepted) expect(pattern.test(endpoint), endpoint).toBe(true);
    for (const endpoint of [...refused, ...accepted]) {
      let throws = false;
      try {
        endpointOptions(endpoint);
      } catch {
        throws = true;
      }
      if (throws) expect(endpointProblem(endpoint), endpoint).toBeDefined();
    }
  });

  it('resolves defaults, durations, transports and parameters', () => {
    const matrix = parseMatrix(
      [
        'version: 1',
        'concurrency: 3',
        'defaults: {timeout: 90s, device: 1}',
        'expectations:',
        '  linux: [{fact: sysinfo.tcc_driver, equals: false}]',
        'targets:',
        '  - name: a',
        '  - name: b',
        '    transport: [local]',
        '    timeout: 500ms',
        '    probes: [sysinfo]',
        '    expect: [{fact: sysinfo.environment, equals: linux}]',
      ].join('\n'),
      'ok.yaml',
    );
    expect(matrix.concurrency).toBe(3);
    expect(matrix.targets.map((target) => [target.name, target.timeoutMs, target.device, target.hops])).toEqual([
      ['a', 90_000, 1, [{ kind: 'local' }]],
      ['b', 500, 1, [{ kind: 'local' }]],
    ]);
    expect(matrix.targets[0]!.environment).toBe('auto');
    expect(matrix.expectations.linux).toHaveLength(1);
    expect(matrix.targets[1]!.expect).toEqual([{ fact: 'sysinfo.environment', equals: 'linux' }]);
  });

  it('loads the embedded default matrix and every example', async () => {
    const root = path.join(import.meta.dirname);
    const files = ['default.yaml', ...readdirSync(path.join(root, 'examples')).map((fileName) => path.join('examples', fileName))];
    for (const file of files) {
      const matrix = await loadMatrixFile(path.join(root, file));
      expect(matrix.targets.length, file).toBeGreaterThan(0);
    }
  });
});

describe('issue 20: problems found at load, all in one pass', () => {
  it('refuses a bare kind that needs options ("transport: ssh" has no host) at its line', () => {
    const e = matrixError(['version: 1', 'targets:', '  - name: lab', '    transport: ssh'].join('\n'));
    expect(e.issues).toHaveLength(1);
    expect(e.issues[0]).toMatchObject({ code: 'MATRIX_INVALID', line: 4, col: 16 });
    expect(e.message).toContain('transport "ssh" needs "host"');
    expect(e.message).toContain('transport: { kind: ssh, host: ... }');
    // In a chain too; kinds that need nothing still load bare.
    expect(matrixError(['version: 1', 'targets:', '  - name: lab', '    transport: [ssh, docker]'].join('\n')).issues[0]).toMatchObject({
      line: 4,
      col: 17,
    });
    expect(
      parseMatrix(
        ['version: 1', 'targets:', '  - name: c', '    transport: docker', '  - name: w', '    transport: wsl'].join('\n'),
        'bare.yaml',
      ).targets,
    ).toHaveLength(2);
  });

  it('reports a misspelt class, a misspelt fact in it and a bad unit together', () => {
    const text = [
      'version: 1',
      'expectations:',
      '  linxu:',
      '    - fact: sysinfo.archh',
      '      equals: x86_64',
      '    - metric: sync-latency.p50_us',
      '      "<=": 50 parsecs',
      'targets:',
      '  - name: a',
    ].join('\n');
    const e = matrixError(text);
    expect(e.issues.map((i) => [i.code, i.line])).toEqual([
      ['MATRIX_UNKNOWN_KEY', 3],
      ['MATRIX_UNKNOWN_FACT', 4],
      ['MATRIX_INVALID', 7],
    ]);
    expect(e.message).toContain('did you mean "linux"');
  });

  it('reports a secret and the other mistakes of its entry together, the secret once', () => {
    const text = [
      'version: 1',
      'targets:',
      '  - name: lab',
      '    transport:',
      '      kind: ssh',
      '      host: gpu-box',
      '      password: hunter2',
      '      identityFile: ~/.ssh/id_lab.pub',
    ].join('\n');
    const e = matrixError(text);
    expect(e.issues.map((i) => [i.code, i.line])).toEqual([
      ['MATRIX_SECRET', 7],
      ['MATRIX_INVALID', 8],
    ]);
    expect(e.message).not.toContain('hunter2');
  });
});

describe('issue 20: files a matrix names', () => {
  const sshMatrix = (lines: string[]) =>
    ['version: 1', 'targets:', '  - name: lab', '    transport:', '      kind: ssh', '      host: gpu-box', ...lines].join('\n');

  it("takes relative paths from the matrix file's folder, whatever the current folder", async () => {
    const dir = tempDir();
    writeFileSync(path.join(dir, 'id_lab'), 'key');
    writeFileSync(path.join(dir, 'known_hosts'), '');
    const file = path.join(dir, 'lab.yaml');
    writeFileSync(file, sshMatrix(['      identityFile: id_lab', '      knownHosts: ./known_hosts', '      sshConfig: false']));
    const elsewhere = tempDir();
    const cwd = process.cwd();
    process.chdir(elsewhere);
    try {
      const hop = (await loadMatrixFile('../' + path.relative(path.dirname(elsewhere), file))).targets[0]!.hops[0]!;
      expect(hop).toMatchObject({ identityFile: path.join(dir, 'id_lab'), knownHosts: path.join(dir, 'known_hosts') });
    } finally {
      process.chdir(cwd);
    }
  });

  it('refuses a missing identity file or known_hosts at its line, with the absolute path', async () => {
    const dir = tempDir();
    const file = path.join(dir, 'lab.yaml');
    writeFileSync(file, sshMatrix(['      identityFile: keys/id_lab', '      knownHosts: known_hosts']));
    const e = await loadError(file);
    expect(e.issues.map((i) => [i.code, i.line, i.col])).toEqual([
      ['MATRIX_FILE_MISSING', 7, 21],
      ['MATRIX_FILE_MISSING', 8, 19],
    ]);
    expect(e.message).toContain(
      `identityFile ${path.join(dir, 'keys', 'id_lab')} ("keys/id_lab", taken from the matrix file's folder) does not exist`,
    );
    expect(e.message).toContain(`ssh-keyscan -p 22 gpu-box >> ${path.join(dir, 'known_hosts')}`);
    // accept-new creates known_hosts: then only the key is missing.
    const accepting = await loadMatrixFile(file, { acceptNew: true }).catch((error: MatrixError) => error);
    expect((accepting as MatrixError).issues.map((i) => i.line)).toEqual([7]);
    // The plan job of gha matrix runs where the keys are not.
    await expect(loadMatrixFile(file, { checkFiles: false })).resolves.toMatchObject({ targets: [{ name: 'lab' }] });
  });
});

describe('issue 20: extends: default', () => {
  const defaults = parseMatrix(readFileSync(path.join(import.meta.dirname, 'default.yaml'), 'utf8'), 'default.yaml').expectations;

  it("starts from the default expectations of every class; the file's own are added or replace the default's on the same result", () => {
    const matrix = parseMatrix(
      [
        'version: 1',
        'extends: default',
        'expectations:',
        '  linux:',
        '    - {fact: pinned-vram.counts_as_vram, equals: true, why: our patched driver}',
        '    - {metric: sync-latency.p50_us, "<=": 5 us}',
        '    - {metric: sync-latency.p50_us, where: {x: 1}, "<=": 7 us}',
        '  tcc:',
        '    - {fact: cuda-graph.supported, equals: true}',
        'targets: [{name: a}]',
      ].join('\n'),
      'ext.yaml',
    );
    expect(matrix.expectations.all).toEqual(defaults.all);
    expect(matrix.expectations.wsl2).toEqual(defaults.wsl2);
    const linux = matrix.expectations.linux!;
    expect(linux).toHaveLength(defaults.linux!.length + 1);
    const at = defaults.linux!.findIndex((e) => e.fact === 'pinned-vram.counts_as_vram');
    expect(linux[at]).toEqual({ fact: 'pinned-vram.counts_as_vram', equals: true, why: 'our patched driver' });
    expect(linux.filter((e) => e.metric === 'sync-latency.p50_us').map((e) => e['<='])).toEqual(['5 us', '7 us']);
    expect(matrix.expectations.tcc).toEqual([...(defaults.tcc ?? []), { fact: 'cuda-graph.supported', equals: true }]);
  });

  it('without it, a matrix has only its own expectations; any other value is refused at its line', () => {
    expect(parseMatrix('version: 1\ntargets: [{name: a}]\n', 'own.yaml').expectations).toEqual({});
    const e = matrixError('version: 1\nextends: defaults\ntargets: [{name: a}]\n');
    expect(e.issues[0]).toMatchObject({ line: 2 });
    expect(e.message).toContain('did you mean "default"');
  });
});
