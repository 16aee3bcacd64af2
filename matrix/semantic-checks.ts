/**
 * The checks of a matrix that its schema cannot make: probe, parameter, result and transport
 * names against the probe catalogue and the transport registry, and the files a target names.
 */
import { existsSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import path from 'node:path';
import type { z } from 'zod';
import type { ErrorCode } from '../core/errors.ts';
import { closestName } from '../core/suggest.ts';
import { toUnit } from '../core/units.ts';
import { allResultNames, defaultProbeNames, probeNames, probeSpec, resolveResultName } from '../probes/catalogue.ts';
import { transportKind, transportKinds, type NamedKind } from '../transports/registry.ts';
import type { MatrixIssue } from './errors.ts';
import { didYouMean, has, isRecord, issue, mapIssue } from './issues.ts';
import type { Locator, PathKey } from './locate.ts';

/** A path the matrix gives, as this machine will open it: "~/" stays for the transport to expand; a relative path is taken from the matrix's folder. */
export function resolveLocalFile(value: string, folder: string): string {
  return isRelative(value) ? path.resolve(folder, value) : value;
}

const isRelative = (value: string) => !(value === '~' || value.startsWith('~/') || path.isAbsolute(value));

/**
 * Checks the names a matrix uses against the probe catalogue and the transport registry. It reads
 * the raw document, not the schema's output, so that it runs when the schema failed too: each
 * item is checked only where it has the form the schema asks for (the schema reports the rest).
 */
export class SemanticChecks {
  readonly issues: MatrixIssue[] = [];

  constructor(
    private readonly input: Record<string, unknown>,
    private readonly loc: Locator,
    private readonly folder: string,
    private readonly options: { checkFiles?: boolean; acceptNew?: boolean },
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
