/**
 * Loads a matrix file: YAML (with positions) -> zod schema, and checks against the probe catalogue
 * and the transport registry (both, whatever the other finds) -> the resolved Matrix. Every
 * problem is reported with its file, line and column, and the fix; all problems of a file are
 * reported at once.
 */
import { existsSync, readFileSync, statSync } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import { homedir } from 'node:os';
import path from 'node:path';
import { LineCounter, parseDocument } from 'yaml';
import type { z } from 'zod';
import { CudamatrixError, type ErrorCode } from '../core/errors.ts';
import { packageFileForDisplay, packageRoot } from '../core/package-root.ts';
import { closestName } from '../core/suggest.ts';
import { toUnit } from '../core/units.ts';
import { allResultNames, defaultProbeNames, probeNames, probeSpec, resolveResultName } from '../probes/catalogue.ts';
import { fanOut, transportKind, transportKinds, type Hop, type NamedKind } from '../transports/registry.ts';
import { MatrixError, type MatrixIssue } from './errors.ts';
import { Locator, maxDepth, type PathKey } from './locate.ts';
import { SECRET_KEYS } from './secrets.ts';
import { durationMs, environmentClasses, matrixSchema, type EnvironmentClass, type Expectation, type MatrixDoc } from './schema.ts';

/** Files larger than this, or nested deeper, are refused before they reach the schema. */
export const MAX_MATRIX_BYTES = 1024 * 1024;
export const MAX_MATRIX_DEPTH = 32;
const MAX_ALIASES = 100;

export interface Target {
  name: string;
  description?: string;
  environment: 'auto' | EnvironmentClass;
  hops: Hop[];
  /** Probes in catalogue order; sysinfo always runs first anyway (it detects the environment). */
  probes: string[];
  params: Record<string, Record<string, unknown>>;
  device: number;
  timeoutMs: number;
  expect: Expectation[];
  /** GitHub Actions runner labels this target needs (a job of its own), if any. */
  runsOn?: string[];
}

export interface Matrix {
  file: string;
  description?: string;
  concurrency: number;
  hostConcurrency: number;
  targets: Target[];
  /** Expectations per environment class, and for all targets. */
  expectations: Partial<Record<'all' | EnvironmentClass, Expectation[]>>;
}

export interface LoadOptions {
  /**
   * Refuse a missing file the matrix names (identityFile, knownHosts, sshConfig) at its line
   * (default true). gha matrix plans on a runner that need not have the targets' keys.
   */
  checkFiles?: boolean;
  /** Host keys will be accepted (--accept-new): a missing known_hosts file is then created, not an error. */
  acceptNew?: boolean;
}

export async function loadMatrixFile(file: string, options: LoadOptions = {}): Promise<Matrix> {
  let size: number;
  try {
    const stats = await stat(file);
    if (!stats.isFile()) throw new Error('not a file');
    size = stats.size;
  } catch {
    throw new CudamatrixError(
      'MATRIX_NOT_FOUND',
      `matrix file ${file} does not exist or is not a file; pass an existing YAML file with --matrix`,
    );
  }
  if (size > MAX_MATRIX_BYTES) {
    throw new MatrixError(file, [
      issue(
        'MATRIX_TOO_COMPLEX',
        `the file is ${size} bytes; a matrix may be at most ${MAX_MATRIX_BYTES}`,
        'split it into several matrix files',
        1,
        1,
      ),
    ]);
  }
  return parseMatrix(await readFile(file, 'utf8'), file, options);
}

/**
 * Where to point for a YAML error. The parser reports an unclosed quote where the text ends;
 * the place to fix is the opening quote, which is the last unescaped quote before that.
 */
function syntaxErrorOffset(text: string, code: string, offset: number): number {
  if (code !== 'MISSING_CHAR') return offset;
  for (let i = Math.min(offset, text.length) - 1; i >= 0; i--) {
    if ((text[i] === '"' && text[i - 1] !== '\\') || text[i] === "'") return i;
  }
  return offset;
}

function issue(code: ErrorCode, message: string, fix: string, line: number, col: number): MatrixIssue {
  return { code, message, fix, line, col };
}

export function parseMatrix(text: string, file: string, options: LoadOptions = {}): Matrix {
  if (text.length > MAX_MATRIX_BYTES) {
    throw new MatrixError(file, [
      issue('MATRIX_TOO_COMPLEX', `the text is longer than ${MAX_MATRIX_BYTES} characters`, 'split it into several matrix files', 1, 1),
    ]);
  }
  if (text.includes('\u0000')) {
    throw new MatrixError(file, [
      issue(
        'MATRIX_SYNTAX',
        'the file contains NUL bytes: it is not a YAML text file',
        'pass the matrix YAML file, not a binary file',
        1,
        1,
      ),
    ]);
  }
  const lines = new LineCounter();
  const doc = parseDocument(text, { lineCounter: lines, prettyErrors: false, uniqueKeys: true, strict: true, stringKeys: true });
  const syntax = [...doc.errors, ...doc.warnings].map((e) => {
    const pos = lines.linePos(syntaxErrorOffset(text, e.code, e.pos[0]));
    const message = e.message.split('\n')[0]!.replace(/ at line \d+, column \d+:?$/, '');
    return issue(
      'MATRIX_SYNTAX',
      `not valid YAML: ${message}`,
      'correct the YAML syntax at this place (indentation, quotes, colons)',
      pos.line,
      pos.col,
    );
  });
  if (syntax.length) throw new MatrixError(file, syntax);

  const locator = new Locator(doc, lines);
  if (maxDepth(doc.contents, MAX_MATRIX_DEPTH) > MAX_MATRIX_DEPTH) {
    throw new MatrixError(file, [
      issue(
        'MATRIX_TOO_COMPLEX',
        `the document is nested more than ${MAX_MATRIX_DEPTH} levels deep`,
        'a matrix needs only a few levels; remove the deep nesting',
        1,
        1,
      ),
    ]);
  }
  let input: unknown;
  try {
    input = doc.toJS({ maxAliasCount: MAX_ALIASES });
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    throw new MatrixError(file, [
      issue(
        'MATRIX_TOO_COMPLEX',
        `the document expands too much (${message})`,
        `use fewer aliases (at most ${MAX_ALIASES} expansions)`,
        1,
        1,
      ),
    ]);
  }
  if (input === null || input === undefined) {
    throw new MatrixError(file, [
      issue(
        'MATRIX_INVALID',
        'the file is empty',
        `start it with "version: 1" and a "targets:" list (see ${packageFileForDisplay('matrix', 'examples')})`,
        1,
        1,
      ),
    ]);
  }
  if (typeof input !== 'object' || Array.isArray(input)) {
    throw new MatrixError(file, [
      issue(
        'MATRIX_TYPE',
        `the top level must be a mapping, not ${describeValue(input)}`,
        'start the file with "version: 1" and a "targets:" list',
        1,
        1,
      ),
    ]);
  }

  // Secrets, the schema and the checks against the catalogue all run, whatever the others find:
  // a file with several mistakes gets all of them in one pass, not in rounds.
  const secrets = findSecrets(input, [], locator);
  const parsed = matrixSchema.safeParse(input);
  const schemaIssues = parsed.success ? [] : rootCauses(parsed.error.issues.flatMap((i) => mapIssue(i, [], input, locator)));
  const checks = new SemanticChecks(input as Record<string, unknown>, locator, matrixFolder(file), options);
  checks.run();
  // A secret's key is also unknown to the schema: it is reported once, as the secret.
  const notSecret = (i: MatrixIssue) => !secrets.some((secret) => i.path && secret.path && samePath(i.path, secret.path));
  const issues = mergeIssues(secrets, schemaIssues.filter(notSecret), checks.issues.filter(notSecret));
  // (A failed parse always has issues: rootCauses keeps the unknown key behind each one it drops.)
  if (issues.length || !parsed.success) throw new MatrixError(file, issues);
  return resolveMatrix(parsed.data, file);
}

/** The folder relative paths in a matrix are taken from: the matrix file's own. */
function matrixFolder(file: string): string {
  return path.dirname(path.resolve(file));
}

/** A path the matrix gives, as this machine will open it: "~/" stays for the transport to expand; a relative path is taken from the matrix's folder. */
export function resolveLocalFile(value: string, folder: string): string {
  return isRelative(value) ? path.resolve(folder, value) : value;
}

const isRelative = (value: string) => !(value === '~' || value.startsWith('~/') || path.isAbsolute(value));

const samePath = (left: readonly PathKey[], right: readonly PathKey[]) =>
  left.length === right.length && left.every((k, i) => k === right[i]);

/**
 * A secret written in the matrix is refused before anything else, and its value is never
 * repeated in the message: the matrix names where secrets are (identityFile, passphraseEnv).
 */
function findSecrets(value: unknown, at: PathKey[], loc: Locator): MatrixIssue[] {
  const out: MatrixIssue[] = [];
  const report = (secretPath: PathKey[], what: string) => {
    const pos = loc.at(secretPath, { key: typeof secretPath[secretPath.length - 1] === 'string' });
    out.push({
      ...issue(
        'MATRIX_SECRET',
        `${what} is written in the matrix at ${formatPath(secretPath)}; cudamatrix never reads secrets from a matrix file`,
        'remove it: name the key file with identityFile, and the environment variable that holds its passphrase with passphraseEnv (or use ssh-agent)',
        pos.line,
        pos.col,
      ),
      path: secretPath,
    });
  };
  if (typeof value === 'string' && /-----BEGIN [A-Z ]*PRIVATE KEY-----/.test(value)) report(at, 'a private key');
  if (Array.isArray(value)) value.forEach((element, i) => out.push(...findSecrets(element, [...at, i], loc)));
  else if (value && typeof value === 'object') {
    for (const [k, fieldValue] of Object.entries(value)) {
      if (SECRET_KEYS.test(k) && typeof fieldValue === 'string' && fieldValue !== '') report([...at, k], `a secret ("${k}")`);
      else out.push(...findSecrets(fieldValue, [...at, k], loc));
    }
  }
  return out;
}

/**
 * Drops issues that follow from another one: a misspelt key also makes the key it was meant to
 * be "missing", and makes the checks of the object it sits in fail; the misspelling is the one
 * to report.
 */
function rootCauses(issues: MatrixIssue[]): MatrixIssue[] {
  const unknown = issues.filter((i) => i.code === 'MATRIX_UNKNOWN_KEY' && i.path);
  const same = (left: readonly PathKey[], right: readonly PathKey[]) =>
    left.length === right.length && left.every((k, i) => k === right[i]);
  return issues.filter((i) => {
    if (i.code !== 'MATRIX_INVALID' || !i.path) return true;
    return !unknown.some((unknownKey) => {
      const objectPath = unknownKey.path!.slice(0, -1);
      if (i.missing) return unknownKey.suggestion !== undefined && same(i.path!, [...objectPath, unknownKey.suggestion]);
      return same(i.path!, objectPath);
    });
  });
}

function sortIssues(issues: MatrixIssue[]): MatrixIssue[] {
  return [...issues].sort((left, right) => left.line - right.line || left.col - right.col);
}

/** The issues of both passes, each once, in file order (the schema's first where both are at one place). */
function mergeIssues(...lists: MatrixIssue[][]): MatrixIssue[] {
  const seen = new Set<string>();
  const out: MatrixIssue[] = [];
  for (const i of lists.flat()) {
    const key = `${i.code}\u0000${i.line}:${i.col}\u0000${i.message}`;
    if (seen.has(key)) continue;
    seen.add(key);
    out.push(i);
  }
  return sortIssues(out);
}

// ---- zod issues -> matrix issues ----------------------------------------------------------

type ZodIssue = z.core.$ZodIssue;

function valueAt(root: unknown, path: readonly PathKey[]): unknown {
  let current: unknown = root;
  for (const k of path) {
    if (current === null || typeof current !== 'object') return undefined;
    current = (current as Record<string | number, unknown>)[k];
  }
  return current;
}

export function describeValue(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'object') return 'a mapping';
  if (typeof value === 'string') return `the text ${JSON.stringify(value.length > 40 ? `${value.slice(0, 37)}...` : value)}`;
  return `${typeof value} ${String(value)}`;
}

/** "targets[1].transport" — how people read a path. */
export function formatPath(path: readonly PathKey[]): string {
  let out = '';
  for (const k of path) out += typeof k === 'number' ? `[${k}]` : out ? `.${k}` : k;
  return out || 'the top level';
}

/** Whether the path names a transport kind: the transport itself, a hop in its list, or a hop's "kind". */
function isTransportPath(path: readonly PathKey[]): boolean {
  const at = path.lastIndexOf('transport');
  if (at < 0) return false;
  const rest = path.slice(at + 1);
  return (
    rest.length === 0 ||
    (rest.length === 1 && (typeof rest[0] === 'number' || rest[0] === 'kind')) ||
    (rest.length === 2 && rest[1] === 'kind')
  );
}

function mapIssue(zi: ZodIssue, base: readonly PathKey[], input: unknown, loc: Locator): MatrixIssue[] {
  const path = [...base, ...(zi.path as PathKey[])];
  const where = formatPath(path);
  const value = valueAt(input, path);
  const at = (nodePath: readonly PathKey[] = path, key = false) => loc.at(nodePath, { key });
  const make = (code: ErrorCode, message: string, fix: string, position = at(), extra: Partial<MatrixIssue> = {}): MatrixIssue => ({
    ...issue(code, message, fix, position.line, position.col),
    path,
    ...extra,
  });

  switch (zi.code) {
    case 'unrecognized_keys':
      return zi.keys.map((key) => {
        const allowed = allowedKeys(path, input);
        const hint = closestName(key, allowed);
        return make(
          'MATRIX_UNKNOWN_KEY',
          `unknown key "${key}" in ${where}${didYouMean(hint)}`,
          hint ? `rename it to "${hint}"` : `remove it; the keys allowed here are: ${allowed.join(', ')}`,
          at([...path, key], true),
          { path: [...path, key], suggestion: hint },
        );
      });
    case 'invalid_type': {
      if (value === undefined) {
        const key = path[path.length - 1];
        return [
          make(
            'MATRIX_INVALID',
            `missing required key "${String(key)}" in ${formatPath(path.slice(0, -1))}`,
            `add "${String(key)}:" with ${article(zi.expected)}`,
            at(path.slice(0, -1)),
            { missing: true },
          ),
        ];
      }
      return [
        make('MATRIX_TYPE', `${where} must be ${article(zi.expected)}, not ${describeValue(value)}`, `write ${article(zi.expected)} here`),
      ];
    }
    case 'invalid_value': {
      if (value === undefined) {
        const key = path[path.length - 1];
        return [
          make(
            'MATRIX_INVALID',
            `missing required key "${String(key)}" in ${formatPath(path.slice(0, -1))}`,
            `add "${String(key)}: ${zi.values.map(String).join(' | ')}"`,
            at(path.slice(0, -1)),
            { missing: true },
          ),
        ];
      }
      const options = zi.values.map((allowedValue) => JSON.stringify(allowedValue));
      if (path[path.length - 1] === 'version' && path.length === 1) {
        return [
          make(
            'MATRIX_VERSION',
            `matrix version ${JSON.stringify(value)} is not supported; this cudamatrix reads version ${options.join(', ')}`,
            'set "version: 1" (or upgrade cudamatrix for a newer format)',
          ),
        ];
      }
      if (isTransportPath(path)) return [unknownTransport(value, make)];
      const hint = typeof value === 'string' ? closestName(value, zi.values.map(String)) : undefined;
      return [
        make(
          'MATRIX_INVALID',
          `${where} is ${describeValue(value)}; it must be one of ${options.join(', ')}${didYouMean(hint)}`,
          hint ? `write "${hint}"` : `use one of ${options.join(', ')}`,
        ),
      ];
    }
    case 'invalid_union': {
      if ('note' in zi && zi.note === 'No matching discriminator') {
        return [unknownTransport(value, make)];
      }
      // Take the branch that matched the value's type; report its issues.
      const branches = zi.errors.filter((branch) => !typeMismatch(branch, value));
      if (branches.length === 1) {
        return branches[0]!.flatMap((inner) => mapIssue(inner, path, input, loc));
      }
      if (isTransportPath(path)) return [unknownTransport(value, make)];
      return [
        make(
          'MATRIX_TYPE',
          `${where} has the wrong form (${describeValue(value)})`,
          `see ${packageFileForDisplay('matrix', 'schema.json')} or docs/matrix.md for the allowed forms`,
        ),
      ];
    }
    case 'custom': {
      // A refinement may say what to do about it, and give a more precise code.
      const params = (zi.params ?? {}) as { fix?: string; code?: ErrorCode };
      return [make(params.code ?? 'MATRIX_INVALID', `${where}: ${zi.message}`, params.fix ?? fixFor(zi))];
    }
    case 'too_small':
    case 'too_big':
    case 'invalid_format':
    case 'not_multiple_of':
    default:
      return [make('MATRIX_INVALID', `${where}: ${zi.message}`, fixFor(zi))];
  }
}

/** Whether a union branch failed only because the value is of another type than it takes. */
function typeMismatch(branch: ZodIssue[], value: unknown): boolean {
  const first = branch[0];
  if (branch.length !== 1 || !first || first.path.length !== 0) return false;
  if (first.code === 'invalid_type') return true;
  return first.code === 'invalid_value' && first.values.every((allowedValue) => typeof allowedValue !== typeof value);
}

function unknownTransport(value: unknown, make: (code: ErrorCode, message: string, fix: string) => MatrixIssue): MatrixIssue {
  const kind = typeof value === 'string' ? value : (value as { kind?: unknown } | undefined)?.kind;
  const known = transportKinds();
  const hint = typeof kind === 'string' ? closestName(kind, known) : undefined;
  return make(
    'MATRIX_UNKNOWN_TRANSPORT',
    kind === undefined
      ? 'a transport hop needs a "kind"'
      : `unknown transport kind ${JSON.stringify(kind)}${didYouMean(hint)}; the known kinds are: ${known.join(', ')}`,
    hint ? `write "${hint}"` : `use one of: ${known.join(', ')}`,
  );
}

function didYouMean(hint: string | undefined): string {
  return hint ? ` (did you mean "${hint}"?)` : '';
}

function article(type: string): string {
  return /^[aeiou]/.test(type) ? `an ${type}` : `a ${type}`;
}

function fixFor(zi: ZodIssue): string {
  if (zi.code === 'too_small') {
    if (zi.origin === 'array') return 'add at least one entry';
    return zi.inclusive === false ? `use a value greater than ${String(zi.minimum)}` : `use a value of at least ${String(zi.minimum)}`;
  }
  if (zi.code === 'too_big')
    return zi.inclusive === false ? `use a value less than ${String(zi.maximum)}` : `use a value of at most ${String(zi.maximum)}`;
  return `correct the value (see ${packageFileForDisplay('matrix', 'schema.json')})`;
}

/** The keys an object at `path` may have, for "did you mean". */
function allowedKeys(path: readonly PathKey[], input: unknown): string[] {
  const objectKeys = (schema: z.ZodType): string[] => {
    let unwrapped: any = schema;
    while (unwrapped?._zod?.def?.innerType) unwrapped = unwrapped._zod.def.innerType;
    return unwrapped?._zod?.def?.shape ? Object.keys(unwrapped._zod.def.shape) : [];
  };
  const keyNames = path.filter((k) => typeof k === 'string');
  if (keyNames.length === 0) return objectKeys(matrixSchema);
  if (keyNames[0] === 'defaults') return objectKeys(matrixSchema.shape.defaults);
  if (keyNames[0] === 'expectations')
    return keyNames.length === 1 ? objectKeys(matrixSchema.shape.expectations) : expectationKeys(valueAt(input, path));
  if (keyNames[0] === 'targets') {
    if (keyNames.length === 1) return objectKeys(matrixSchema.shape.targets.element);
    if (keyNames[1] === 'expect') return expectationKeys(valueAt(input, path));
    if (keyNames[1] === 'transport') {
      const kind = (valueAt(input, path) as { kind?: string } | undefined)?.kind;
      try {
        return ['kind', ...objectKeys(transportKind(String(kind)).options as z.ZodType)];
      } catch {
        return ['kind'];
      }
    }
  }
  return [];
}

function expectationKeys(value: unknown): string[] {
  const isMetric = typeof value === 'object' && value !== null && 'metric' in value;
  return isMetric ? ['metric', '<=', '>=', 'between', 'where', 'why'] : ['fact', 'equals', 'metric', 'why'];
}

// ---- checks against the catalogue and the registry ---------------------------------------

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);
const has = (record: Record<string, unknown>, key: string) => Object.prototype.hasOwnProperty.call(record, key);

/**
 * Checks the names a matrix uses against the probe catalogue and the transport registry. It reads
 * the raw document, not the schema's output, so that it runs when the schema failed too: each
 * item is checked only where it has the form the schema asks for (the schema reports the rest).
 */
class SemanticChecks {
  readonly issues: MatrixIssue[] = [];

  constructor(
    private readonly input: Record<string, unknown>,
    private readonly loc: Locator,
    private readonly folder: string,
    private readonly options: LoadOptions,
  ) {}

  private add(code: ErrorCode, message: string, fix: string, path: readonly PathKey[], key = false): void {
    const position = this.loc.at(path, { key });
    this.issues.push({ ...issue(code, message, fix, position.line, position.col), path: [...path] });
  }

  run(): void {
    const root = this.input;
    const defaults = isRecord(root.defaults) ? root.defaults : {};
    const defaultProbes = defaults.probes === undefined ? defaultProbeNames() : this.probes(defaults.probes, ['defaults', 'probes']);
    if (isRecord(defaults.params)) this.params(defaults.params, ['defaults', 'params']);
    if (isRecord(root.expectations)) {
      // Every list, a misspelt class's too ("linxu:"): the schema reports the key, these its entries.
      for (const [cls, list] of Object.entries(root.expectations)) {
        if (Array.isArray(list)) list.forEach((e, i) => this.expectation(e, ['expectations', cls, i]));
      }
    }
    if (!Array.isArray(root.targets)) return;
    const seen = new Map<string, number>();
    root.targets.forEach((target, i) => {
      if (!isRecord(target)) return;
      const path = ['targets', i] as const;
      if (typeof target.name === 'string') {
        const first = seen.get(target.name);
        if (first !== undefined) {
          const firstLine = this.loc.at(['targets', first, 'name']).line;
          this.add(
            'MATRIX_DUPLICATE_TARGET',
            `target name "${target.name}" is used twice (first at line ${firstLine})`,
            'give every target a unique name',
            [...path, 'name'],
          );
        } else {
          seen.set(target.name, i);
        }
      }
      const probes = target.probes === undefined ? defaultProbes : this.probes(target.probes, [...path, 'probes']);
      if (isRecord(target.params)) this.params(target.params, [...path, 'params']);
      if (Array.isArray(target.expect)) {
        target.expect.forEach((e, j) => {
          const resolved = this.expectation(e, [...path, 'expect', j]);
          if (resolved && probes && !probes.includes(resolved)) {
            const who = typeof target.name === 'string' ? `target "${target.name}"` : `targets[${i}]`;
            this.add(
              'MATRIX_INVALID',
              `${who} expects a result of probe "${resolved}", which it does not run`,
              `add "${resolved}" to the target's probes, or remove the expectation`,
              [...path, 'expect', j],
            );
          }
        });
      }
      if (target.transport !== undefined) this.hops(target.transport, [...path, 'transport']);
    });
  }

  /** Reports unknown names in a probe list; returns the probes it selects, or undefined when it has the wrong form. */
  private probes(list: unknown, path: readonly PathKey[]): string[] | undefined {
    if (list === 'all') return defaultProbeNames();
    if (!Array.isArray(list) || list.length === 0) return undefined;
    list.forEach((name, i) => {
      if (typeof name === 'string' && !probeSpec(name)) {
        const hint = closestName(name, probeNames());
        this.add(
          'MATRIX_UNKNOWN_PROBE',
          `unknown probe "${name}"${didYouMean(hint)}`,
          hint ? `write "${hint}"` : `use one of: ${probeNames().join(', ')} (cudamatrix probes list)`,
          [...path, i],
        );
      }
    });
    return probeNames().filter((probeName) => list.includes(probeName));
  }

  private params(params: Record<string, unknown>, path: readonly PathKey[]): void {
    for (const [probe, values] of Object.entries(params)) {
      const spec = probeSpec(probe);
      if (!spec) {
        const hint = closestName(probe, probeNames());
        this.add(
          'MATRIX_UNKNOWN_PROBE',
          `parameters given for unknown probe "${probe}"${didYouMean(hint)}`,
          hint ? `write "${hint}"` : `use one of: ${probeNames().join(', ')}`,
          [...path, probe],
          true,
        );
        continue;
      }
      if (!isRecord(values)) continue;
      const parsed = spec.params.safeParse(values);
      if (parsed.success) continue;
      for (const zi of parsed.error.issues) {
        if (zi.code === 'unrecognized_keys') {
          const known = Object.keys(spec.params.shape);
          for (const key of zi.keys) {
            const hint = closestName(key, known);
            this.add(
              'MATRIX_UNKNOWN_PARAM',
              `probe "${probe}" has no parameter "${key}"${didYouMean(hint)}`,
              hint
                ? `write "${hint}"`
                : known.length
                  ? `use one of: ${known.join(', ')}`
                  : `probe "${probe}" takes no parameters; remove it`,
              [...path, probe, key],
              true,
            );
          }
        } else {
          this.issues.push(...mapIssue(zi, [...path, probe], this.input, this.loc));
        }
      }
    }
  }

  /** Checks one expectation; returns the probe it belongs to when the name resolves. */
  private expectation(e: unknown, path: readonly PathKey[]): string | undefined {
    if (!isRecord(e)) return undefined;
    const isFact = e.fact !== undefined;
    if (isFact === (e.metric !== undefined)) return undefined; // neither or both: the schema says so
    const kind = isFact ? 'fact' : 'metric';
    const name = e[kind];
    if (typeof name !== 'string') return undefined;
    const resolved = resolveResultName(name, kind);
    if (!resolved) {
      const hint = closestName(name, allResultNames(kind));
      const produced = probeSpec(name.split('.')[0] ?? '')
        ? `probe "${name.split('.')[0]}" produces no ${kind} "${name.split('.').slice(1).join('.')}"`
        : `no probe produces the ${kind} "${name}"`;
      this.add(
        'MATRIX_UNKNOWN_FACT',
        produced + didYouMean(hint),
        hint ? `write "${hint}"` : `name a ${kind} as "probe.${kind}" (cudamatrix probes list --facts)`,
        [...path, kind],
      );
      return undefined;
    }
    if (isFact && resolved.fact?.values && has(e, 'equals')) {
      const equals = e.equals;
      const scalar = typeof equals === 'string' || typeof equals === 'number' || typeof equals === 'boolean';
      if (scalar && !resolved.fact.values.includes(equals)) {
        this.add(
          'MATRIX_INVALID',
          `fact "${name}" is never ${JSON.stringify(equals)}; its values are ${resolved.fact.values.map((factValue) => JSON.stringify(factValue)).join(', ')}`,
          'expect one of those values',
          [...path, 'equals'],
        );
      }
    }
    if (!isFact) {
      const bounds: [PathKey[], unknown][] = [];
      if (e['<='] !== undefined) bounds.push([[...path, '<='], e['<=']]);
      if (e['>='] !== undefined) bounds.push([[...path, '>='], e['>=']]);
      if (Array.isArray(e.between)) e.between.forEach((bound, i) => bounds.push([[...path, 'between', i], bound]));
      for (const [boundPath, boundValue] of bounds) {
        if (typeof boundValue !== 'number' && typeof boundValue !== 'string') continue;
        try {
          toUnit(boundValue, resolved.metric!.unit);
        } catch (error) {
          this.add(
            'MATRIX_INVALID',
            `bound ${JSON.stringify(boundValue)} of metric "${name}": ${(error as Error).message}`,
            `write a number in ${resolved.metric!.unit}, or a value with a unit of the same kind`,
            boundPath,
          );
        }
      }
    }
    return resolved.probe.name;
  }

  /**
   * Each hop of a transport: a kind after the first must be one that can be reached through
   * another; a bare kind ("ssh") must be one that needs no options; the files it names must be there.
   */
  private hops(spec: unknown, path: readonly PathKey[]): void {
    const list = Array.isArray(spec) ? spec : [spec];
    list.forEach((hop, i) => {
      const at = Array.isArray(spec) ? [...path, i] : [...path];
      const kind = typeof hop === 'string' ? hop : isRecord(hop) && typeof hop.kind === 'string' ? hop.kind : undefined;
      if (kind === undefined || !transportKinds().includes(kind)) return;
      const known = transportKind(kind);
      if (i > 0 && !known.chainable) {
        this.add(
          'MATRIX_INVALID',
          `transport "${kind}" cannot follow another hop in a chain`,
          `put "${kind}" first, or remove the hops before it`,
          at,
        );
      }
      if (typeof hop === 'string') this.bareKind(known, at);
      else if (isRecord(hop)) this.localFiles(known, hop, at);
    });
  }

  private bareKind(known: NamedKind, path: readonly PathKey[]): void {
    const parsed = known.options.safeParse({});
    if (parsed.success) return;
    const missing = parsed.error.issues.filter((i) => i.code === 'invalid_type' && i.path.length === 1).map((i) => String(i.path[0]));
    if (missing.length === 0) return;
    const keys = missing.map((k) => `"${k}"`).join(', ');
    this.add(
      'MATRIX_INVALID',
      `transport "${known.kind}" needs ${keys}, and a bare kind gives it no options`,
      `write the transport as a mapping: transport: { kind: ${known.kind}, ${missing.map((k) => `${k}: ...`).join(', ')} }`,
      path,
    );
  }

  /** The files a hop names, taken from the matrix's folder when relative, must exist (unless connecting creates them: its kind says). */
  private localFiles(known: NamedKind, hop: Record<string, unknown>, at: readonly PathKey[]): void {
    if (this.options.checkFiles === false) return;
    const shape = (known.options as unknown as z.ZodObject).shape as Record<string, z.ZodType> | undefined;
    for (const [key, spec] of Object.entries(known.localFiles ?? {})) {
      const value = hop[key];
      // A value of the wrong form is the schema's to report.
      if (typeof value !== 'string' || !shape?.[key]?.safeParse(value).success) continue;
      const file = expandHomeDir(resolveLocalFile(value, this.folder));
      const given = file === value ? '' : ` (${JSON.stringify(value)}${isRelative(value) ? ", taken from the matrix file's folder" : ''})`;
      if (existsSync(file)) {
        if (!statSync(file).isFile())
          this.add('MATRIX_FILE_MISSING', `${key} ${file}${given} is not a file`, `name a file in ${key}`, [...at, key]);
        continue;
      }
      if (spec.createdWhen?.(hop, { acceptNew: this.options.acceptNew === true }) && existsSync(path.dirname(file))) continue;
      const fix = spec.fix?.(file, hop) ?? "write the path of an existing file (a relative path is taken from the matrix file's folder)";
      this.add('MATRIX_FILE_MISSING', `${key} ${file}${given} does not exist`, fix, [...at, key]);
    }
  }
}

/** "~/" as the transports expand it (transports/ssh/ssh-config.ts expandHome), to look for the file. */
function expandHomeDir(filePath: string): string {
  return filePath === '~' ? homedir() : filePath.startsWith('~/') ? path.join(homedir(), filePath.slice(2)) : filePath;
}

// ---- the resolved matrix -------------------------------------------------------------------

/** Probes in catalogue order. */
function selectProbes(list: 'all' | string[]): string[] {
  return list === 'all' ? defaultProbeNames() : probeNames().filter((probeName) => list.includes(probeName));
}

/** The embedded default matrix's expectations, for "extends: default". */
function defaultExpectations(): Matrix['expectations'] {
  const file = path.join(packageRoot(), 'matrix', 'default.yaml');
  return parseMatrix(readFileSync(file, 'utf8'), file, { checkFiles: false }).expectations;
}

/** What an expectation is about: one on the same fact, or the same metric and series, replaces it (as verdicts/verdicts.ts judges). */
function expectationKey(e: Expectation): string {
  return e.fact !== undefined ? `fact:${e.fact}` : `metric:${e.metric}:${JSON.stringify(e.where ?? {})}`;
}

/** The inherited list with the file's own: an own expectation replaces an inherited one about the same result, in its place; the rest follow. */
function extendExpectations(inherited: Expectation[] | undefined, own: Expectation[] | undefined): Expectation[] | undefined {
  if (!inherited) return own;
  const mine = new Map((own ?? []).map((e) => [expectationKey(e), e]));
  const replaced = inherited.map((e) => mine.get(expectationKey(e)) ?? e);
  const taken = new Set(inherited.map(expectationKey));
  return [...replaced, ...(own ?? []).filter((e) => !taken.has(expectationKey(e)))];
}

/** A hop whose relative file options are made absolute (from the matrix's folder), as messages then show them. */
function resolveHopFiles(hop: Hop, folder: string): Hop {
  const files = transportKind(hop.kind).localFiles ?? {};
  const out: Hop = { ...hop };
  for (const key of Object.keys(files)) if (typeof out[key] === 'string') out[key] = resolveLocalFile(out[key] as string, folder);
  return out;
}

function resolveMatrix(doc: MatrixDoc, file: string): Matrix {
  const folder = matrixFolder(file);
  const defaultProbes = selectProbes(doc.defaults.probes);
  const expectations: Matrix['expectations'] = {};
  const inherited = doc.extends === 'default' ? defaultExpectations() : {};
  for (const cls of ['all', ...environmentClasses] as const) {
    const list = extendExpectations(inherited[cls], doc.expectations[cls]);
    if (list) expectations[cls] = list;
  }
  const targets = doc.targets.flatMap((target): Target[] => {
    const probes = target.probes === undefined ? defaultProbes : selectProbes(target.probes);
    const params: Target['params'] = {};
    // An opt-in probe keeps its parameters for a run that names it with --probe (run/plan.ts).
    const optInWithParams = probeNames().filter(
      (probeName) =>
        !probes.includes(probeName) && probeSpec(probeName)?.optIn && (doc.defaults.params[probeName] || target.params?.[probeName]),
    );
    for (const probeName of [...probes, ...optInWithParams])
      params[probeName] = { ...doc.defaults.params[probeName], ...target.params?.[probeName] };
    const hops = (Array.isArray(target.transport) ? target.transport : [target.transport]).map((hop) =>
      resolveHopFiles(typeof hop === 'string' ? { kind: hop } : (hop as Hop), folder),
    );
    // A target that stands for many (slurm's nodes:) is one per node, NAME@NODE.
    return fanOut(target.name, hops).map((one) => ({
      name: one.name,
      description: target.description,
      environment: target.environment,
      hops: one.hops,
      probes,
      params,
      device: target.device ?? doc.defaults.device,
      timeoutMs: durationMs(target.timeout ?? doc.defaults.timeout),
      expect: target.expect ?? [],
      ...(target.runsOn ? { runsOn: typeof target.runsOn === 'string' ? [target.runsOn] : target.runsOn } : {}),
    }));
  });
  return { file, description: doc.description, concurrency: doc.concurrency, hostConcurrency: doc.hostConcurrency, targets, expectations };
}
