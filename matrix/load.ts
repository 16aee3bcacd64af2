/**
 * Loads a matrix file: YAML (with positions) -> zod schema, and checks against the probe catalogue
 * and the transport registry (semantic-checks.ts; both, whatever the other finds) -> the resolved
 * Matrix. Every problem is reported with its file, line and column, and the fix (issues.ts); all
 * problems of a file are reported at once.
 */
import { readFileSync } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { LineCounter, parseDocument } from 'yaml';
import { CudamatrixError } from '../core/errors.ts';
import { packageFileForDisplay, packageRoot } from '../core/package-root.ts';
import { defaultProbeNames, probeNames, probeSpec } from '../probes/catalogue.ts';
import { fanOut, transportKind, type Hop } from '../transports/registry.ts';
import { MatrixError, type MatrixIssue } from './errors.ts';
import { Locator, maxDepth } from './locate.ts';
import { describeValue, findSecrets, issue, mapIssue, mergeIssues, rootCauses, samePath } from './issues.ts';
import { resolveLocalFile, SemanticChecks } from './semantic-checks.ts';
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
