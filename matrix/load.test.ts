import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { CudamatrixError } from '../core/errors.ts';
import { tempDir } from '../test/helpers.ts';
import { MatrixError } from './errors.ts';
import { loadMatrixFile, MAX_MATRIX_BYTES, parseMatrix } from './load.ts';

const fixtures = path.join(import.meta.dirname, '..', 'test', 'fixtures', 'matrix-invalid');

/** Each fixture's first line says what it must produce: "# expect: CODE LINE:COL [text]". */
const cases = readdirSync(fixtures)
  .filter((f) => f.endsWith('.yaml'))
  .sort()
  .map((file) => {
    const head = readFileSync(path.join(fixtures, file), 'utf8').split('\n')[0]!;
    const m = /^# expect: (\w+) (\d+):(\d+)(?: (.*))?$/.exec(head);
    if (!m) throw new Error(`${file}: first line must be "# expect: CODE LINE:COL [text]"`);
    return { file, code: m[1]!, line: Number(m[2]), col: Number(m[3]), text: m[4] };
  });

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
    const text = ['version: 1', 'concurency: 2', 'targets:', '  - name: a', '    probes: [sysinf]', '  - name: a'].join('\n');
    try {
      parseMatrix(text, 'several.yaml');
      throw new Error('no error');
    } catch (error) {
      const e = error as MatrixError;
      expect(e.issues.map((i) => [i.code, i.line])).toEqual([['MATRIX_UNKNOWN_KEY', 2]]);
    }
    // The schema pass stops before the catalogue checks; once it passes, these are all reported.
    const second = ['version: 1', 'targets:', '  - name: a', '    probes: [sysinf]', '  - name: a', '    probes: [nope]'].join('\n');
    try {
      parseMatrix(second, 'several.yaml');
      throw new Error('no error');
    } catch (error) {
      const e = error as MatrixError;
      expect(e.issues.map((i) => [i.code, i.line])).toEqual([
        ['MATRIX_UNKNOWN_PROBE', 4],
        ['MATRIX_DUPLICATE_TARGET', 5],
        ['MATRIX_UNKNOWN_PROBE', 6],
      ]);
    }
  });

  it('resolves defaults, durations, transports and parameters', () => {
    const m = parseMatrix(
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
    expect(m.concurrency).toBe(3);
    expect(m.targets.map((t) => [t.name, t.timeoutMs, t.device, t.hops])).toEqual([
      ['a', 90_000, 1, [{ kind: 'local' }]],
      ['b', 500, 1, [{ kind: 'local' }]],
    ]);
    expect(m.targets[0]!.environment).toBe('auto');
    expect(m.expectations.linux).toHaveLength(1);
    expect(m.targets[1]!.expect).toEqual([{ fact: 'sysinfo.environment', equals: 'linux' }]);
  });

  it('loads the embedded default matrix and every example', async () => {
    const root = path.join(import.meta.dirname);
    const files = ['default.yaml', ...readdirSync(path.join(root, 'examples')).map((f) => path.join('examples', f))];
    for (const f of files) {
      const m = await loadMatrixFile(path.join(root, f));
      expect(m.targets.length, f).toBeGreaterThan(0);
    }
  });
});
