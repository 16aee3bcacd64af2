/**
 * A matrix's problems as cudamatrix says them (MatrixIssue: file, line, column, message, fix):
 * secrets written in it, zod's schema issues turned into matrix issues with "did you mean", and
 * the issues of all passes merged, each once, in file order.
 */
import type { z } from 'zod';
import type { ErrorCode } from '../core/errors.ts';
import { packageFileForDisplay } from '../core/package-root.ts';
import { closestName } from '../core/suggest.ts';
import { transportKind, transportKinds } from '../transports/registry.ts';
import type { MatrixIssue } from './errors.ts';
import type { Locator, PathKey } from './locate.ts';
import { matrixSchema } from './schema.ts';
import { SECRET_KEYS } from './secrets.ts';

export function issue(code: ErrorCode, message: string, fix: string, line: number, col: number): MatrixIssue {
  return { code, message, fix, line, col };
}

export const samePath = (left: readonly PathKey[], right: readonly PathKey[]) =>
  left.length === right.length && left.every((k, i) => k === right[i]);

/**
 * A secret written in the matrix is refused before anything else, and its value is never
 * repeated in the message: the matrix names where secrets are (identityFile, passphraseEnv).
 */
export function findSecrets(value: unknown, at: PathKey[], loc: Locator): MatrixIssue[] {
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
export function rootCauses(issues: MatrixIssue[]): MatrixIssue[] {
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

export function sortIssues(issues: MatrixIssue[]): MatrixIssue[] {
  return [...issues].sort((left, right) => left.line - right.line || left.col - right.col);
}

/** The issues of both passes, each once, in file order (the schema's first where both are at one place). */
export function mergeIssues(...lists: MatrixIssue[][]): MatrixIssue[] {
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

export function valueAt(root: unknown, path: readonly PathKey[]): unknown {
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
export function isTransportPath(path: readonly PathKey[]): boolean {
  const at = path.lastIndexOf('transport');
  if (at < 0) return false;
  const rest = path.slice(at + 1);
  return (
    rest.length === 0 ||
    (rest.length === 1 && (typeof rest[0] === 'number' || rest[0] === 'kind')) ||
    (rest.length === 2 && rest[1] === 'kind')
  );
}

export function mapIssue(zi: ZodIssue, base: readonly PathKey[], input: unknown, loc: Locator): MatrixIssue[] {
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
export function typeMismatch(branch: ZodIssue[], value: unknown): boolean {
  const first = branch[0];
  if (branch.length !== 1 || !first || first.path.length !== 0) return false;
  if (first.code === 'invalid_type') return true;
  return first.code === 'invalid_value' && first.values.every((allowedValue) => typeof allowedValue !== typeof value);
}

export function unknownTransport(value: unknown, make: (code: ErrorCode, message: string, fix: string) => MatrixIssue): MatrixIssue {
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

export function didYouMean(hint: string | undefined): string {
  return hint ? ` (did you mean "${hint}"?)` : '';
}

export function article(type: string): string {
  return /^[aeiou]/.test(type) ? `an ${type}` : `a ${type}`;
}

export function fixFor(zi: ZodIssue): string {
  if (zi.code === 'too_small') {
    if (zi.origin === 'array') return 'add at least one entry';
    return zi.inclusive === false ? `use a value greater than ${String(zi.minimum)}` : `use a value of at least ${String(zi.minimum)}`;
  }
  if (zi.code === 'too_big')
    return zi.inclusive === false ? `use a value less than ${String(zi.maximum)}` : `use a value of at most ${String(zi.maximum)}`;
  return `correct the value (see ${packageFileForDisplay('matrix', 'schema.json')})`;
}

/** The keys an object at `path` may have, for "did you mean". */
export function allowedKeys(path: readonly PathKey[], input: unknown): string[] {
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

export function expectationKeys(value: unknown): string[] {
  const isMetric = typeof value === 'object' && value !== null && 'metric' in value;
  return isMetric ? ['metric', '<=', '>=', 'between', 'where', 'why'] : ['fact', 'equals', 'metric', 'why'];
}

// ---- checks against the catalogue and the registry ---------------------------------------

export const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);
export const has = (record: Record<string, unknown>, key: string) => Object.prototype.hasOwnProperty.call(record, key);
