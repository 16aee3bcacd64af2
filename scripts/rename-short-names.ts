/**
 * Renames one-letter bindings (variables, parameters, catch variables, destructured names) to
 * names that say what they hold, through the TypeScript language service's rename (so every
 * reference, and only those, changes: `{ x }` becomes `{ x: newName }` where it must). Issue 34:
 * the lint's id-length rule allows only `i`, `j`, `k`, `_` and `e`.
 *
 *   pnpm exec tsx scripts/rename-short-names.ts [--dry-run] <file or folder>...
 *
 * A name comes from the context: the singular of a plural receiver for the element parameter of
 * `xs.map(x => …)` and friends or of `for (const x of xs)`, `left`/`right` for a comparator's
 * `(a, b)`, the initializer (`/re/.exec(…)` → `match`, `await runCli(…)` → `result`), else the
 * type (`TargetResult` → `targetResult`, `string` → `text`). A name is used only when it is no
 * reserved word and nothing visible at the binding or named inside its scope has it (else the
 * next choice, then a numeric suffix), so renaming never shadows nor captures. It leaves alone
 * what it cannot rename locally or well (exported names, shorthand `{ x }` destructuring, whose
 * name is the property's, parameter properties, signatures without a body) and says so.
 * A second run finds nothing left to rename.
 */
import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

const ALLOWED = new Set(['i', 'j', 'k', '_', 'e']);
/** Array methods whose callback's first parameter is an element of the receiver. */
const ELEMENT_METHODS = new Set([
  'map',
  'filter',
  'find',
  'findIndex',
  'findLast',
  'findLastIndex',
  'some',
  'every',
  'forEach',
  'flatMap',
  'reduce',
  'reduceRight',
  'sort',
  'toSorted',
]);
/** Methods whose result holds the receiver's elements: `xs.filter(…).map(x => …)` is still about xs. */
const SAME_ELEMENTS = new Set(['filter', 'slice', 'sort', 'toSorted', 'reverse', 'toReversed', 'concat', 'values', 'flat']);
/** Methods that return one element of the receiver. */
const ONE_ELEMENT = new Set(['find', 'findLast', 'at', 'pop', 'shift']);
/** Type aliases from the standard library that say nothing about what a value is. */
const GENERIC_TYPES = new Set([
  'Record',
  'Partial',
  'Required',
  'Readonly',
  'Pick',
  'Omit',
  'NonNullable',
  'ReturnType',
  'Awaited',
  'Array',
  'ReadonlyArray',
  'Object',
  'Function',
]);
const RESERVED = new Set(
  (
    'break case catch class const continue debugger default delete do else enum export extends false finally for function if import in ' +
    'instanceof new null return super switch this throw true try typeof var void while with implements interface let package private ' +
    'protected public static yield await async arguments eval undefined NaN Infinity of type as from get set constructor'
  ).split(' '),
);
const IRREGULAR_PLURALS: Record<string, string> = {
  children: 'child',
  people: 'person',
  indices: 'index',
  data: 'datum',
  criteria: 'criterion',
};

export interface Rename {
  file: string;
  line: number;
  column: number;
  from: string;
  to: string;
}
export interface Skipped {
  file: string;
  line: number;
  column: number;
  name: string;
  why: string;
}

/** Names a reviewer chose, by file and then `line:column` of the binding; `''` keeps the name. */
export type ChosenNames = Map<string, Map<string, string>>;

function camelCase(typeName: string): string {
  const leadingCaps = /^[A-Z]+/.exec(typeName)?.[0] ?? '';
  if (leadingCaps.length <= 1) return typeName.charAt(0).toLowerCase() + typeName.slice(1);
  // URLParts -> urlParts, URL -> url
  const cut = leadingCaps.length === typeName.length ? leadingCaps.length : leadingCaps.length - 1;
  return typeName.slice(0, cut).toLowerCase() + typeName.slice(cut);
}

/** A type's name and, as the next choice, its last word: `probeSpec`, then `spec`. */
function withLastWord(name: string): string[] {
  const lastWord = /[A-Z][a-z0-9]+$/.exec(name)?.[0];
  return lastWord && lastWord.length < name.length ? [name, lastWord.toLowerCase()] : [name];
}

/** The singular of a plural name (its last word), or undefined when it does not read as a plural. */
export function singular(name: string): string | undefined {
  const lastWord = /[A-Z]?[a-z0-9]+$/.exec(name)?.[0];
  if (!lastWord) return undefined;
  const head = name.slice(0, name.length - lastWord.length);
  const lower = lastWord.toLowerCase();
  const keepCase = (word: string) => (lastWord[0] === lastWord[0]!.toUpperCase() ? word[0]!.toUpperCase() + word.slice(1) : word);
  let one: string | undefined;
  if (IRREGULAR_PLURALS[lower]) one = IRREGULAR_PLURALS[lower];
  else if (/[^aeiou]ies$/.test(lower)) one = lower.slice(0, -3) + 'y';
  else if (/(ss|x|ch|sh|us)es$/.test(lower)) one = lower.slice(0, -2);
  else if (/[^su]s$/.test(lower) && !/(is|ss|us|ics)$/.test(lower)) one = lower.slice(0, -1);
  if (!one || one.length < 2) return undefined;
  return head + keepCase(one);
}

/** The name of what an expression holds (`targets`, `this.items`, `plan.cells.filter(…)` → `cells`). */
function holderName(expression: ts.Expression): string | undefined {
  if (ts.isIdentifier(expression)) return expression.text;
  if (ts.isPropertyAccessExpression(expression)) return expression.name.text;
  if (ts.isParenthesizedExpression(expression) || ts.isNonNullExpression(expression)) return holderName(expression.expression);
  if (ts.isArrayLiteralExpression(expression) && expression.elements.length === 1 && ts.isSpreadElement(expression.elements[0]!))
    return holderName(expression.elements[0].expression);
  if (ts.isCallExpression(expression)) {
    const callee = expression.expression;
    if (ts.isPropertyAccessExpression(callee) && SAME_ELEMENTS.has(callee.name.text)) return holderName(callee.expression);
    // text.split('\n') holds lines, text.split(',') parts
    if (ts.isPropertyAccessExpression(callee) && callee.name.text === 'split')
      return expression.getText().includes('\\n') ? 'lines' : 'parts';
    if (ts.isIdentifier(callee) && /^readdir(Sync)?$/.test(callee.text)) return 'names';
    if (
      ts.isPropertyAccessExpression(callee) &&
      callee.name.text === 'from' &&
      ts.isIdentifier(callee.expression) &&
      callee.expression.text === 'Array'
    )
      return expression.arguments[0] && holderName(expression.arguments[0]);
  }
  return undefined;
}

class Namer {
  constructor(private readonly checker: ts.TypeChecker) {}

  /** Names to try for a binding, best first. */
  candidates(name: ts.Identifier): string[] {
    const fromContext = this.fromContext(name);
    const fromType = this.fromType(this.checker.getTypeAtLocation(name), name.text);
    return [...fromContext, ...fromType].filter((candidate) => candidate.length >= 2 && /^[A-Za-z_$][\w$]*$/.test(candidate));
  }

  private fromContext(name: ts.Identifier): string[] {
    const binding = name.parent;
    if (ts.isParameter(binding)) {
      const fn = binding.parent;
      const index = fn.parameters.indexOf(binding);
      const params = fn.parameters.map((param) => (ts.isIdentifier(param.name) ? param.name.text : ''));
      if (params.length === 2 && params[0] === 'a' && params[1] === 'b') return [index === 0 ? 'left' : 'right'];
      const call = fn.parent;
      // stream.on('data', (d) => …)
      if (call && ts.isCallExpression(call) && ts.isPropertyAccessExpression(call.expression) && call.expression.name.text === 'on') {
        const event = call.arguments[0];
        if (event && ts.isStringLiteral(event) && event.text === 'data') return ['chunk'];
      }
      if (
        (ts.isArrowFunction(fn) || ts.isFunctionExpression(fn)) &&
        call &&
        ts.isNewExpression(call) &&
        call.expression.getText() === 'Promise'
      )
        return [['resolve', 'reject'][index] ?? ''];
      if (
        (ts.isArrowFunction(fn) || ts.isFunctionExpression(fn)) &&
        call &&
        ts.isCallExpression(call) &&
        ts.isPropertyAccessExpression(call.expression)
      ) {
        const method = call.expression.name.text;
        if (!ELEMENT_METHODS.has(method)) return [];
        if (method === 'sort' || method === 'toSorted') return [['left', 'right'][index] ?? ''];
        const elementIndex = method.startsWith('reduce') ? 1 : 0;
        const holder = holderName(call.expression.expression);
        if (index === elementIndex) return holder && singular(holder) ? [singular(holder)!] : [];
        if (index === elementIndex + 1) return ['index'];
      }
      return [];
    }
    // ({ repeats: _, ...m }) => m: what is left of the object
    if (ts.isBindingElement(binding) && binding.dotDotDotToken) return ['rest'];
    if (ts.isBindingElement(binding) && ts.isArrayBindingPattern(binding.parent)) {
      const names = binding.parent.elements.map((element) =>
        ts.isBindingElement(element) && ts.isIdentifier(element.name) ? element.name.text : '',
      );
      if (names.join() === 'a,b') return [names.indexOf(name.text) === 0 ? 'first' : 'second'];
    }
    if (ts.isVariableDeclaration(binding)) {
      const statement = binding.parent.parent;
      if (ts.isForOfStatement(statement)) {
        const holder = holderName(statement.expression);
        return holder && singular(holder) ? [singular(holder)!] : [];
      }
      let init = binding.initializer;
      while (init && (ts.isAwaitExpression(init) || ts.isParenthesizedExpression(init) || ts.isNonNullExpression(init)))
        init = init.expression;
      if (init && ts.isNewExpression(init) && ts.isIdentifier(init.expression)) return [camelCase(init.expression.text)];
      if (init && ts.isElementAccessExpression(init) && init.argumentExpression.getText() === '0') {
        const holder = holderName(init.expression);
        return holder && singular(holder) ? [singular(holder)!] : [];
      }
      if (init && ts.isCallExpression(init)) {
        const callee = init.expression;
        const calleeName = ts.isPropertyAccessExpression(callee) ? callee.name.text : ts.isIdentifier(callee) ? callee.text : '';
        if (calleeName === 'exec' || calleeName === 'match') return ['match'];
        if (calleeName === 'safeParse' || calleeName === 'parse') return ['parsed'];
        if (calleeName === 'join') return ['joined'];
        if (/^(run|exec|spawn)/.test(calleeName)) return ['result'];
        if (ts.isPropertyAccessExpression(callee) && ONE_ELEMENT.has(calleeName)) {
          const holder = holderName(callee.expression);
          return holder && singular(holder) ? [singular(holder)!] : [];
        }
      }
    }
    return [];
  }

  private fromType(type: ts.Type, oldName: string): string[] {
    const checker = this.checker;
    type = checker.getNonNullableType(type);
    const alias = type.aliasSymbol?.name;
    if (alias && !GENERIC_TYPES.has(alias)) return withLastWord(camelCase(alias));
    if (checker.isArrayType(type) || checker.isTupleType(type)) {
      const element = checker.getTypeArguments(type as ts.TypeReference)[0];
      const one = element ? this.fromType(element, oldName)[0] : undefined;
      return one && !['value', 'item'].includes(one) ? [one.endsWith('s') ? `${one}List` : `${one}s`, 'list'] : ['list'];
    }
    if (type.flags & ts.TypeFlags.StringLike) return ['text', ...(oldName === 'l' ? ['line'] : oldName === 'n' ? ['name'] : []), 'string'];
    if (type.flags & ts.TypeFlags.NumberLike) return oldName === 'n' ? ['count', 'value'] : ['value'];
    if (type.flags & ts.TypeFlags.BigIntLike) return ['value'];
    if (type.flags & ts.TypeFlags.BooleanLike) return ['flag'];
    if (type.flags & ts.TypeFlags.EnumLike) return type.symbol ? [camelCase(type.symbol.name)] : ['value'];
    if (type.flags & ts.TypeFlags.TypeParameter) {
      const constraint = checker.getBaseConstraintOfType(type);
      return constraint && constraint !== type ? this.fromType(constraint, oldName) : ['value'];
    }
    if (type.isUnion()) {
      const names = new Set(type.types.map((member) => this.fromType(member, oldName)[0]));
      return names.size === 1 && [...names][0] ? [[...names][0]!] : ['value', 'item', 'entry'];
    }
    const symbolName = type.getSymbol()?.name;
    if (symbolName === 'RegExpMatchArray' || symbolName === 'RegExpExecArray') return ['match'];
    if (symbolName === 'Promise') return ['promise'];
    if (symbolName && !symbolName.startsWith('__') && !GENERIC_TYPES.has(symbolName)) return withLastWord(camelCase(symbolName));
    if (type.getCallSignatures().length > 0) return ['callback'];
    return ['value', 'item', 'entry'];
  }
}

/** The node within which a new name must be free: the function, or the block of a let or const. */
function scopeOf(name: ts.Identifier): ts.Node {
  let node: ts.Node = name.parent;
  const blockScoped = ts.isVariableDeclaration(node) && (ts.getCombinedNodeFlags(node) & ts.NodeFlags.BlockScoped) !== 0;
  while (node.parent) {
    if (ts.isCatchClause(node) || ts.isFunctionLike(node) || ts.isSourceFile(node)) return node;
    if (
      blockScoped &&
      (ts.isBlock(node) || ts.isForStatement(node) || ts.isForOfStatement(node) || ts.isForInStatement(node) || ts.isCaseBlock(node))
    )
      return node;
    node = node.parent;
  }
  return node;
}

/** Identifiers in a node that name something (not the `.name` of an access, nor a property's key). */
function namesUsedIn(scope: ts.Node): Set<string> {
  const names = new Set<string>();
  const visit = (node: ts.Node): void => {
    if (ts.isIdentifier(node)) {
      const parent = node.parent;
      const isKey =
        (ts.isPropertyAccessExpression(parent) && parent.name === node) ||
        ((ts.isPropertyAssignment(parent) ||
          ts.isPropertySignature(parent) ||
          ts.isPropertyDeclaration(parent) ||
          ts.isMethodDeclaration(parent) ||
          ts.isMethodSignature(parent)) &&
          parent.name === node) ||
        (ts.isBindingElement(parent) && parent.propertyName === node) ||
        (ts.isQualifiedName(parent) && parent.right === node);
      if (!isKey) names.add(node.text);
    }
    ts.forEachChild(node, visit);
  };
  visit(scope);
  return names;
}

/** Why a one-letter binding is left alone, or undefined when it is renamed. */
function whyNotRenamed(name: ts.Identifier): string | undefined {
  const binding = name.parent;
  if (ts.isParameter(binding)) {
    if (ts.getModifiers(binding)?.length) return 'a parameter property (a property of the class)';
    const fn = binding.parent;
    return undefined;
  }
  if (ts.isBindingElement(binding) && ts.isObjectBindingPattern(binding.parent) && !binding.propertyName && !binding.dotDotDotToken)
    return 'shorthand destructuring: the name is the property it reads';
  if (ts.isVariableDeclaration(binding) && ts.isVariableStatement(binding.parent.parent)) {
    if (binding.parent.parent.modifiers?.some((modifier) => modifier.kind === ts.SyntaxKind.ExportKeyword)) return 'exported';
    if (binding.parent.parent.modifiers?.some((modifier) => modifier.kind === ts.SyntaxKind.DeclareKeyword)) return 'a declaration';
  }
  return undefined;
}

/** The one-letter binding names of a file that the lint reports. */
function shortBindings(source: ts.SourceFile): ts.Identifier[] {
  const found: ts.Identifier[] = [];
  const visit = (node: ts.Node): void => {
    const isBinding =
      ts.isIdentifier(node) &&
      (ts.isVariableDeclaration(node.parent) || ts.isParameter(node.parent) || ts.isBindingElement(node.parent)) &&
      node.parent.name === node;
    // A parameter of a signature without a body (a function type, an overload) names nothing a
    // reader must track, and the lint leaves it alone.
    const inSignature = (parameter: ts.ParameterDeclaration) => !('body' in parameter.parent && parameter.parent.body);
    if (
      isBinding &&
      node.text.length === 1 &&
      !ALLOWED.has(node.text) &&
      !(ts.isParameter(node.parent) && !node.parent.dotDotDotToken && inSignature(node.parent))
    )
      found.push(node);
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

function languageService(rootDir: string, extraFiles: string[]): ts.LanguageService {
  const configFile = ts.findConfigFile(rootDir, ts.sys.fileExists, 'tsconfig.json');
  if (!configFile) throw new Error(`no tsconfig.json in ${rootDir} or above: run this in the repository`);
  const parsed = ts.getParsedCommandLineOfConfigFile(configFile, {}, { ...ts.sys, onUnRecoverableConfigFileDiagnostic: () => {} });
  if (!parsed) throw new Error(`${configFile} could not be read`);
  const fileNames = [...new Set([...parsed.fileNames, ...extraFiles])];
  const host: ts.LanguageServiceHost = {
    getScriptFileNames: () => fileNames,
    getScriptVersion: () => '1',
    getScriptSnapshot: (file) => (ts.sys.fileExists(file) ? ts.ScriptSnapshot.fromString(ts.sys.readFile(file)!) : undefined),
    getCurrentDirectory: () => path.dirname(configFile),
    getCompilationSettings: () => parsed.options,
    getDefaultLibFileName: (options) => ts.getDefaultLibFilePath(options),
    fileExists: ts.sys.fileExists,
    readFile: ts.sys.readFile,
    readDirectory: ts.sys.readDirectory,
    directoryExists: ts.sys.directoryExists,
    getDirectories: ts.sys.getDirectories,
  };
  return ts.createLanguageService(host, ts.createDocumentRegistry());
}

/** Renames in one file, computed against the program as it is (all edits of a file apply at once). */
function planFile(
  service: ts.LanguageService,
  file: string,
  renames: Rename[],
  skipped: Skipped[],
  chosenNames?: ChosenNames,
): ts.TextChange[] {
  const program = service.getProgram()!;
  const source = program.getSourceFile(file);
  // A file that turns id-length off (formula notation) keeps its names.
  if (!source || /eslint-disable id-length\b/.test(source.text)) return [];
  const checker = program.getTypeChecker();
  const namer = new Namer(checker);
  const where = (node: ts.Node) => {
    const { line, character } = source.getLineAndCharacterOfPosition(node.getStart());
    return { line: line + 1, column: character + 1 };
  };
  const reviewed = chosenNames?.get(file);
  /** New names given in this file so far, with the scope each must stay free in. */
  const given: { scope: ts.Node; name: string }[] = [];
  const changes: ts.TextChange[] = [];
  for (const name of shortBindings(source)) {
    // A reviewer may name a shorthand binding: `{ x }` becomes `{ x: chosen }`.
    const why = reviewed && ts.isBindingElement(name.parent) ? undefined : whyNotRenamed(name);
    if (why) {
      skipped.push({ file, ...where(name), name: name.text, why });
      continue;
    }
    const scope = scopeOf(name);
    const used = namesUsedIn(scope);
    // Names visible here, but for the standard library's and @types' globals: shadowing one is
    // harmless unless the scope uses it, and `used` has those.
    for (const symbol of checker.getSymbolsInScope(
      name,
      ts.SymbolFlags.Value | ts.SymbolFlags.Type | ts.SymbolFlags.Alias | ts.SymbolFlags.Namespace,
    )) {
      const declarations = symbol.getDeclarations() ?? [];
      if (declarations.length && declarations.every((declaration) => declaration.getSourceFile().isDeclarationFile)) continue;
      used.add(symbol.name);
    }
    const overlaps = (other: ts.Node) => other.pos <= scope.end && scope.pos <= other.end;
    const free = (candidate: string) =>
      !RESERVED.has(candidate) && !used.has(candidate) && !given.some((entry) => entry.name === candidate && overlaps(entry.scope));
    let chosen: string | undefined;
    if (reviewed) {
      const { line, column } = where(name);
      chosen = reviewed.get(`${line}:${column}`);
      if (!chosen) continue;
      if (!free(chosen) || !/^[A-Za-z_$][\w$]+$/.test(chosen)) {
        skipped.push({ file, line, column, name: name.text, why: `${chosen} is taken here or no name: choose another` });
        continue;
      }
    } else {
      const candidates = namer.candidates(name);
      const base = candidates[0] ?? 'value';
      // Taken: `checks.map((c) => …)` beside a function `check` gives `checkItem`, else `value2`.
      if (!['value', 'item', 'entry', 'text'].includes(base)) candidates.push(`${base}Item`);
      chosen = candidates.find(free);
      for (let suffix = 2; !chosen; suffix++) if (free(`${base}${suffix}`)) chosen = `${base}${suffix}`;
    }
    const locations = service.findRenameLocations(file, name.getStart(), false, false, { providePrefixAndSuffixTextForRename: true });
    if (!locations || locations.some((location) => location.fileName !== file)) {
      skipped.push({ file, ...where(name), name: name.text, why: 'used outside its file' });
      continue;
    }
    given.push({ scope, name: chosen });
    renames.push({ file, ...where(name), from: name.text, to: chosen });
    for (const location of locations)
      changes.push({ span: location.textSpan, newText: `${location.prefixText ?? ''}${chosen}${location.suffixText ?? ''}` });
  }
  return changes;
}

function typeScriptFiles(target: string): string[] {
  const full = path.resolve(target);
  if (!statSync(full).isDirectory()) return [full];
  return readdirSync(full, { withFileTypes: true }).flatMap((entry) => {
    if (entry.name === 'node_modules' || entry.name === 'fixtures' || entry.name === 'dist' || entry.name.startsWith('.')) return [];
    const child = path.join(full, entry.name);
    if (entry.isDirectory()) return typeScriptFiles(child);
    return /\.(c|m)?ts$/.test(entry.name) && !entry.name.endsWith('.d.ts') ? [child] : [];
  });
}

export function renameShortNames(targets: string[], dryRun: boolean, chosenNames?: ChosenNames): { renames: Rename[]; skipped: Skipped[] } {
  const files = chosenNames ? [...chosenNames.keys()] : targets.flatMap(typeScriptFiles);
  const service = languageService(process.cwd(), files);
  const renames: Rename[] = [];
  const skipped: Skipped[] = [];
  const edits = new Map<string, ts.TextChange[]>();
  for (const file of files) edits.set(file, planFile(service, file, renames, skipped, chosenNames));
  if (!dryRun)
    for (const [file, changes] of edits) {
      if (changes.length === 0) continue;
      let text = readFileSync(file, 'utf8');
      for (const change of [...changes].sort((left, right) => right.span.start - left.span.start))
        text = text.slice(0, change.span.start) + change.newText + text.slice(change.span.start + change.span.length);
      writeFileSync(file, text);
    }
  return { renames, skipped };
}

/**
 * The plan a reviewer edits: one line per binding, `path<TAB>line:column<TAB>old<TAB>new<TAB>the
 * source line`. The new name is the codemod's guess; a binding it leaves alone has an empty one.
 */
function writePlan(planPath: string, renames: Rename[], skipped: Skipped[]): void {
  const relative = (file: string) => path.relative(process.cwd(), file);
  const rows = [
    ...renames.map((rename) => ({ ...rename, note: '' })),
    ...skipped.map((skip) => ({ ...skip, from: skip.name, to: '', note: ` (left alone: ${skip.why})` })),
  ].sort((left, right) => left.file.localeCompare(right.file) || left.line - right.line || left.column - right.column);
  const lines = rows.map((row) => {
    const sourceLine = readFileSync(row.file, 'utf8').split('\n')[row.line - 1]!.trim();
    return `${relative(row.file)}\t${row.line}:${row.column}\t${row.from}\t${row.to}\t${sourceLine}${row.note}`;
  });
  writeFileSync(planPath, lines.join('\n') + '\n');
}

function readPlan(planPath: string): ChosenNames {
  const chosen: ChosenNames = new Map();
  for (const [index, line] of readFileSync(planPath, 'utf8').split('\n').entries()) {
    if (!line.trim()) continue;
    const [file, position, , to] = line.split('\t');
    if (!file || !position || to === undefined) throw new Error(`${planPath}:${index + 1}: not path<TAB>line:column<TAB>old<TAB>new`);
    const full = path.resolve(file);
    if (!chosen.has(full)) chosen.set(full, new Map());
    chosen.get(full)!.set(position, to.trim());
  }
  return chosen;
}

if (import.meta.url === `file://${process.argv[1]}` || process.argv[1]?.endsWith('rename-short-names.ts')) {
  const args = process.argv.slice(2);
  const option = (flag: string) => {
    const at = args.indexOf(flag);
    if (at < 0) return undefined;
    const value = args[at + 1];
    args.splice(at, 2);
    return value;
  };
  const dryRun = args.includes('--dry-run');
  const planOut = option('--plan');
  const planIn = option('--apply');
  const targets = args.filter((arg) => arg !== '--dry-run');
  if (targets.length === 0 && !planIn) {
    process.stderr.write(
      'usage: tsx scripts/rename-short-names.ts [--dry-run] <file or folder>...\n' +
        '       tsx scripts/rename-short-names.ts --plan plan.tsv <file or folder>...   (write the guesses to review)\n' +
        '       tsx scripts/rename-short-names.ts --apply plan.tsv                      (rename as the plan says)\n',
    );
    process.exit(2);
  }
  const { renames, skipped } = renameShortNames(targets, dryRun || planOut !== undefined, planIn ? readPlan(planIn) : undefined);
  if (planOut) {
    writePlan(planOut, renames, skipped);
    process.stdout.write(`${renames.length + skipped.length} bindings written to ${planOut}\n`);
  } else {
    const relative = (file: string) => path.relative(process.cwd(), file);
    for (const rename of renames) process.stdout.write(`${relative(rename.file)}:${rename.line} ${rename.from} → ${rename.to}\n`);
    for (const skip of skipped) process.stdout.write(`${relative(skip.file)}:${skip.line} ${skip.name} left alone: ${skip.why}\n`);
    process.stdout.write(`${renames.length} ${dryRun ? 'to rename' : 'renamed'}, ${skipped.length} left alone\n`);
  }
}
