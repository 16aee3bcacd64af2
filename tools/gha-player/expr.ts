/**
 * Expressions for the workflow player (player.ts): `${{ }}` templates, `if:` conditions
 * and strategy matrices, evaluated by GitHub's own expression engine (@actions/expressions) over
 * plain-JS contexts. What is the player's own here is only what the engine leaves to the runner:
 * the contexts, the status functions (success/failure/always/cancelled), hashFiles, how a template
 * mixes text and expressions, the implicit `success() &&` of an `if:`, and the matrix expansion.
 */
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { data, Evaluator, Lexer, Parser, type Expr } from '@actions/expressions';
import { TokenType } from '@actions/expressions/lexer';
import type { FunctionDefinition } from '@actions/expressions/funcs/info';
import picomatch from 'picomatch';

/** Every context a workflow may name; the parser refuses any other, as GitHub does. */
export const CONTEXT_NAMES = [
  'github',
  'inputs',
  'matrix',
  'needs',
  'steps',
  'env',
  'runner',
  'job',
  'jobs',
  'secrets',
  'strategy',
  'vars',
] as const;
export type Contexts = Partial<Record<(typeof CONTEXT_NAMES)[number], unknown>>;

/**
 * What the status functions answer where the expression is evaluated: in a step, the job's status
 * so far; in a job's `if:`, its needs (and their ancestors).
 */
export interface Status {
  success: boolean;
  failure: boolean;
  cancelled: boolean;
}

export interface EvalScope {
  contexts: Contexts;
  status?: Status;
  /** GITHUB_WORKSPACE for hashFiles(); without it hashFiles is refused, as outside steps on GitHub. */
  workspace?: string;
  /** Where the expression is (file and key), for the error message. */
  where: string;
}

const STATUS_FUNCTIONS = ['success', 'failure', 'always', 'cancelled'];
const EXTENSION_FUNCTIONS = [
  ...STATUS_FUNCTIONS.map((name) => ({ name, minArgs: 0, maxArgs: 0 })),
  { name: 'hashFiles', minArgs: 1, maxArgs: 255 },
];

/** JS value -> expression data. undefined becomes null, like a missing key on GitHub. */
export function toData(value: unknown): data.ExpressionData {
  if (value === null || value === undefined) return new data.Null();
  if (typeof value === 'string') return new data.StringData(value);
  if (typeof value === 'number') return new data.NumberData(value);
  if (typeof value === 'boolean') return new data.BooleanData(value);
  if (Array.isArray(value)) return new data.Array(...value.map(toData));
  if (typeof value === 'object') {
    return new data.Dictionary(
      ...Object.entries(value as Record<string, unknown>)
        .filter(([, fieldValue]) => fieldValue !== undefined)
        .map(([key, fieldValue]) => ({ key, value: toData(fieldValue) })),
    );
  }
  return new data.StringData(String(value));
}

/** Expression data -> JS value (objects and arrays as plain JSON). */
export function fromData(expressionData: data.ExpressionData): unknown {
  return JSON.parse(JSON.stringify(expressionData, data.replacer)) as unknown;
}

/** The string a value becomes where a string is expected: null is '', objects are 'Object'. */
export function coerceString(value: unknown): string {
  return toData(value).coerceString();
}

const parsed = new Map<string, Expr>();

function parse(expression: string, where: string): Expr {
  let expr = parsed.get(expression);
  if (expr) return expr;
  try {
    const { tokens } = new Lexer(expression).lex();
    expr = new Parser(tokens, [...CONTEXT_NAMES], EXTENSION_FUNCTIONS).parse();
  } catch (e) {
    throw new Error(`${where}: the expression \`${expression}\` does not parse: ${(e as Error).message}`);
  }
  if (!expr) throw new Error(`${where}: an empty expression \`\${{ }}\``);
  parsed.set(expression, expr);
  return expr;
}

function functions(scope: EvalScope): Map<string, FunctionDefinition> {
  const status = scope.status ?? { success: true, failure: false, cancelled: false };
  const bool = (name: string, value: boolean): [string, FunctionDefinition] => [
    name,
    { name, minArgs: 0, maxArgs: 0, call: () => new data.BooleanData(value) },
  ];
  return new Map([
    bool('success', status.success && !status.cancelled),
    bool('failure', status.failure),
    bool('always', true),
    bool('cancelled', status.cancelled),
    [
      'hashfiles',
      {
        name: 'hashFiles',
        minArgs: 1,
        maxArgs: 255,
        call: (...args) => {
          if (!scope.workspace) throw new Error('hashFiles() is only available in steps');
          return new data.StringData(
            hashFiles(
              scope.workspace,
              args.map((arg) => arg.coerceString()),
            ),
          );
        },
      },
    ],
  ]);
}

/** Evaluates one expression (the text inside `${{ }}`) to a JS value. */
export function evaluate(expression: string, scope: EvalScope): unknown {
  const expr = parse(expression, scope.where);
  const context = toData(
    Object.fromEntries(CONTEXT_NAMES.map((contextName) => [contextName, scope.contexts[contextName] ?? {}])),
  ) as data.Dictionary;
  try {
    return fromData(new Evaluator(expr, context, functions(scope)).evaluate());
  } catch (e) {
    throw new Error(`${scope.where}: evaluating \`${expression}\` failed: ${(e as Error).message}`);
  }
}

type Part = { text: string } | { expr: string };

/** Splits a template at its `${{ }}`, minding '}}' inside a quoted string of the expression. */
export function splitTemplate(template: string, where = 'template'): Part[] {
  const parts: Part[] = [];
  let at = 0;
  for (;;) {
    const open = template.indexOf('${{', at);
    if (open < 0) break;
    if (open > at) parts.push({ text: template.slice(at, open) });
    let i = open + 3;
    let quoted = false;
    for (; i < template.length; i++) {
      const char = template[i];
      if (char === "'")
        quoted = !quoted; // '' inside a string toggles twice: still inside
      else if (!quoted && char === '}' && template[i + 1] === '}') break;
    }
    if (i >= template.length) throw new Error(`${where}: \`\${{\` without its closing \`}}\` in: ${template}`);
    parts.push({ expr: template.slice(open + 3, i).trim() });
    at = i + 2;
  }
  if (at < template.length) parts.push({ text: template.slice(at) });
  return parts;
}

/**
 * A string value of the workflow: a value that is one `${{ expr }}` and nothing else keeps the
 * expression's type (an array for runs-on, an object for a matrix); text mixed with expressions
 * is a string, each expression coerced (null -> '').
 */
export function evaluateTemplate(template: string, scope: EvalScope): unknown {
  const parts = splitTemplate(template, scope.where);
  if (parts.length === 1 && 'expr' in parts[0]!) return evaluate(parts[0].expr, scope);
  return parts.map((part) => ('text' in part ? part.text : coerceString(evaluate(part.expr, scope)))).join('');
}

/** evaluateTemplate over a whole YAML value (mappings and sequences evaluated leaf by leaf). */
export function evaluateValue(value: unknown, scope: EvalScope): unknown {
  if (typeof value === 'string') return value.includes('${{') ? evaluateTemplate(value, scope) : value;
  if (Array.isArray(value)) return value.map((element, i) => evaluateValue(element, { ...scope, where: `${scope.where}[${i}]` }));
  if (value && typeof value === 'object') {
    return Object.fromEntries(
      Object.entries(value).map(([k, fieldValue]) => [k, evaluateValue(fieldValue, { ...scope, where: `${scope.where}.${k}` })]),
    );
  }
  return value;
}

/** A template evaluated where a string is expected (run:, env:, with:): YAML scalars as GitHub reads them. */
export function evaluateString(value: unknown, scope: EvalScope): string {
  if (value === undefined || value === null) return '';
  return coerceString(evaluateValue(typeof value === 'object' ? value : String(value), scope));
}

/** Whether the expression calls a status function; if not, GitHub prefixes it with `success() &&`. */
function callsStatusFunction(expression: string): boolean {
  const { tokens } = new Lexer(expression).lex();
  return tokens.some(
    (token, i) =>
      token.type === TokenType.IDENTIFIER &&
      STATUS_FUNCTIONS.includes(token.lexeme.toLowerCase()) &&
      tokens[i + 1]?.type === TokenType.LEFT_PAREN,
  );
}

/**
 * An `if:` of a composite action's step (a workflow's come from GitHub's parser): absent means
 * success(); `${{ }}` around the whole condition is optional; a condition that calls none of
 * success/failure/always/cancelled runs only while the status is success.
 */
export function evaluateIf(condition: unknown, scope: EvalScope): boolean {
  if (condition === undefined || condition === null || condition === '') return Boolean(evaluate('success()', scope));
  let expression = typeof condition === 'string' ? condition.trim() : String(condition);
  const parts = splitTemplate(expression, scope.where);
  if (parts.length === 1 && 'expr' in parts[0]!) expression = parts[0].expr;
  else if (parts.some((part) => 'expr' in part)) {
    // Text around an expression: the condition is the resulting string (truthy when not empty).
    const text = evaluateTemplate(expression, scope) as string;
    return text !== '' && Boolean(evaluate('success()', scope));
  }
  const full = callsStatusFunction(expression) ? expression : `success() && (${expression})`;
  return truthy(evaluate(full, scope));
}

/** A condition as GitHub's workflow parser gives it (github-model.ts): already wrapped, evaluated as it is. */
export function evaluateCondition(expression: string, scope: EvalScope): boolean {
  return truthy(evaluate(expression, scope));
}

export function truthy(value: unknown): boolean {
  if (value === null || value === undefined || value === false || value === 0 || value === '') return false;
  return !(typeof value === 'number' && Number.isNaN(value));
}

// --- strategy.matrix -------------------------------------------------------------------------

function deepEqual(left: unknown, right: unknown): boolean {
  return JSON.stringify(left) === JSON.stringify(right);
}

/**
 * Expands an evaluated strategy.matrix into its entries, as GitHub does: the product of the
 * vectors, minus `exclude` (an entry matching all the keys of an exclude), then each `include`
 * added to every original combination it overwrites no original value of, or appended as a new
 * combination when it fits none. Throws GitHub's errors for an empty vector or no entry at all.
 */
export function expandMatrix(matrix: unknown, where = 'strategy.matrix'): Record<string, unknown>[] {
  if (!matrix || typeof matrix !== 'object' || Array.isArray(matrix)) {
    throw new Error(`${where}: a matrix must be a mapping (vectors, include, exclude), got ${JSON.stringify(matrix)}`);
  }
  const { include = [], exclude = [], ...vectors } = matrix as Record<string, unknown>;
  for (const [key, list] of [
    ['include', include],
    ['exclude', exclude],
  ] as const) {
    if (!Array.isArray(list) || list.some((e) => !e || typeof e !== 'object' || Array.isArray(e))) {
      throw new Error(`${where}.${key}: must be a list of mappings, got ${JSON.stringify(list)}`);
    }
  }
  const keys = Object.keys(vectors);
  let combos: Record<string, unknown>[] = keys.length ? [{}] : [];
  for (const key of keys) {
    const values = vectors[key];
    if (!Array.isArray(values)) throw new Error(`${where}.${key}: a matrix vector must be a list, got ${JSON.stringify(values)}`);
    if (values.length === 0) throw new Error(`${where}: Matrix vector '${key}' does not contain any values`);
    combos = combos.flatMap((combo) => values.map((value) => ({ ...combo, [key]: value })));
  }
  combos = combos.filter(
    (combo) =>
      !(exclude as Record<string, unknown>[]).some((ex) =>
        Object.entries(ex).every(([k, excludedValue]) => deepEqual(combo[k], excludedValue)),
      ),
  );
  const originals = combos.map((base) => ({ base, entry: { ...base } }));
  const added: Record<string, unknown>[] = [];
  for (const inc of include as Record<string, unknown>[]) {
    let fitted = false;
    for (const original of originals) {
      if (Object.entries(inc).every(([k, includedValue]) => !(k in original.base) || deepEqual(original.base[k], includedValue))) {
        Object.assign(original.entry, inc);
        fitted = true;
      }
    }
    if (!fitted) added.push({ ...inc });
  }
  const entries = [...originals.map((original) => original.entry), ...added];
  if (entries.length === 0) throw new Error(`${where}: Matrix must define at least one vector`);
  if (entries.length > 256) throw new Error(`${where}: a matrix may not have more than 256 entries, this one has ${entries.length}`);
  return entries;
}

// --- hashFiles -------------------------------------------------------------------------------

function filesUnder(root: string, dir = ''): string[] {
  const out: string[] = [];
  for (const e of readdirSync(path.join(root, dir), { withFileTypes: true })) {
    const rel = dir ? `${dir}/${e.name}` : e.name;
    if (e.isDirectory()) {
      if (rel !== '.git') out.push(...filesUnder(root, rel));
    } else if (e.isFile()) out.push(rel);
  }
  return out;
}

/**
 * hashFiles(patterns): the runner's algorithm (sha256 over the sha256 of each matched file, in
 * path order; '' when none matched). Patterns relative to the workspace, `!` excludes.
 */
export function hashFiles(workspace: string, patterns: string[]): string {
  const include = patterns.filter((pattern) => !pattern.startsWith('!')).map((pattern) => picomatch(pattern, { dot: true }));
  const exclude = patterns.filter((pattern) => pattern.startsWith('!')).map((pattern) => picomatch(pattern.slice(1), { dot: true }));
  const files = filesUnder(workspace)
    .filter((file) => include.some((matcher) => matcher(file)) && !exclude.some((matcher) => matcher(file)))
    .sort();
  if (files.length === 0) return '';
  const outer = createHash('sha256');
  for (const file of files)
    outer.update(
      createHash('sha256')
        .update(readFileSync(path.join(workspace, file)))
        .digest(),
    );
  return outer.digest('hex');
}
