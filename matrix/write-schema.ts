/**
 * Writes matrix/schema.json (for editors) from the zod schema, and
 * matrix/known-bad-drivers.schema.json from the known-bad registry's: `pnpm schema`.
 *
 * The zod schema takes probe, fact, metric and parameter names as plain text, so that the loader
 * can check them against the catalogue with its own messages ("did you mean", the list to pick
 * from). Here the JSON Schema gets those names spelt out from the same catalogue: probe names,
 * each probe's parameters (typed, with defaults, from its zod schema), "probe.fact" and
 * "probe.metric" names, the values a fact can take, the units a metric's bounds can be written
 * in, and which transport kinds may follow another hop in a chain.
 */
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { knownUnits, toUnit } from '../core/units.ts';
import { allResultNames, catalogue, probeNames } from '../probes/catalogue.ts';
import { transportKind, transportKinds } from '../transports/registry.ts';
import { concern, knownBadFile } from './known-bad.ts';
import { expectation, matrixSchema, probeList, probeParams, transportChain } from './schema.ts';

type Json = Record<string, any>;

/** Every key of `target` replaced by those of `source` (the override edits the schema in place). */
function replace(target: Json, source: Json): void {
  for (const k of Object.keys(target)) delete target[k];
  Object.assign(target, source);
}

function probeParamsSchema(json: Json): void {
  const properties: Json = {};
  for (const probe of catalogue) {
    const { $schema: _, ...params } = z.toJSONSchema(probe.params, { io: 'input', unrepresentable: 'any' }) as Json;
    properties[probe.name] = { description: probe.title, ...params };
  }
  replace(json, {
    ...(json.description ? { description: json.description } : {}),
    type: 'object',
    properties,
    additionalProperties: false,
  });
}

function probeListSchema(json: Json): void {
  const list = (json.anyOf as Json[] | undefined)?.find((branch) => branch.type === 'array');
  if (!list) throw new Error('write-schema: the probe list has no array form; update probeListSchema');
  list.items = { type: 'string', enum: probeNames() };
}

/** A bound written as text must be a number, with a unit of the metric's kind if any ("50 us"). */
function boundPattern(unit: Parameters<typeof toUnit>[1]): string {
  const compatible = knownUnits.filter((knownUnit) => {
    try {
      toUnit(`1 ${knownUnit}`, unit);
      return true;
    } catch {
      return false;
    }
  });
  const escaped = compatible.map((compatibleUnit) => compatibleUnit.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&'));
  return `^\\s*-?\\d+(\\.\\d+)?([eE][+-]?\\d+)?\\s*(${escaped.join('|')})?\\s*$`;
}

/** Groups names by a key, keeping the first appearance's order. */
function groupBy<T>(items: T[], key: (item: T) => string): T[][] {
  const groups = new Map<string, T[]>();
  for (const item of items) groups.set(key(item), [...(groups.get(key(item)) ?? []), item]);
  return [...groups.values()];
}

function expectationSchema(json: Json): void {
  json.properties.fact.enum = allResultNames('fact');
  json.properties.metric.enum = allResultNames('metric');
  const rules: Json[] = [];
  // The values a fact can take, where the catalogue lists them (null: no value, e.g. not measured).
  const facts = catalogue.flatMap((probe) =>
    probe.facts.filter((fact) => fact.values).map((fact) => ({ name: `${probe.name}.${fact.name}`, values: fact.values! })),
  );
  for (const group of groupBy(facts, (fact) => JSON.stringify(fact.values))) {
    rules.push({
      if: { required: ['fact'], properties: { fact: { enum: group.map((fact) => fact.name) } } },
      then: { properties: { equals: { enum: [...group[0]!.values, null] } } },
    });
  }
  // The units a metric's bounds can be written in.
  const metrics = catalogue.flatMap((probe) =>
    probe.metrics.map((metric) => ({ name: `${probe.name}.${metric.name}`, pattern: boundPattern(metric.unit) })),
  );
  for (const group of groupBy(metrics, (metric) => metric.pattern)) {
    const bound = { anyOf: [{ type: 'number' }, { type: 'string', pattern: group[0]!.pattern }] };
    rules.push({
      if: { required: ['metric'], properties: { metric: { enum: group.map((metric) => metric.name) } } },
      then: { properties: { '<=': bound, '>=': bound, between: { type: 'array', items: bound } } },
    });
  }
  json.allOf = [...((json.allOf as Json[] | undefined) ?? []), ...rules];
}

/** The first hop of a chain may be of any kind; a later one only of a kind that can follow another. */
function transportChainSchema(json: Json): void {
  const chainable = transportKinds().filter((k) => transportKind(k).chainable);
  const first = json.items as Json;
  json.prefixItems = [first];
  json.items = chainable.length
    ? {
        allOf: [first],
        anyOf: [
          { type: 'string', enum: chainable },
          { type: 'object', required: ['kind'], properties: { kind: { enum: chainable } } },
        ],
      }
    : false;
}

export function matrixJsonSchema(): Json {
  // Expectations and parameters appear in several places: each is defined once, in $defs.
  const defs: Json = {};
  const define = (name: string, json: Json, build: (json: Json) => void) => {
    build(json);
    defs[name] = { ...json };
    replace(json, { $ref: `#/$defs/${name}` });
  };
  const schema = z.toJSONSchema(matrixSchema, {
    io: 'input',
    unrepresentable: 'any',
    override: ({ zodSchema, jsonSchema }) => {
      if (zodSchema === probeParams) define('params', jsonSchema as Json, probeParamsSchema);
      else if (zodSchema === expectation) define('expectation', jsonSchema as Json, expectationSchema);
      else if (zodSchema === probeList) probeListSchema(jsonSchema as Json);
      else if (zodSchema === transportChain) transportChainSchema(jsonSchema as Json);
    },
  }) as Json;
  return { ...schema, $defs: { ...(schema.$defs as Json | undefined), ...defs } };
}

export function schemaText(): string {
  const schema = { title: 'cudamatrix matrix', ...matrixJsonSchema() };
  return `${JSON.stringify(schema, null, 2)}\n`;
}

/** The JSON Schema of matrix/known-bad-drivers.yaml; a concern is a probe name or a claim id. */
export function knownBadSchemaText(): string {
  const schema = z.toJSONSchema(knownBadFile, {
    io: 'input',
    unrepresentable: 'any',
    override: ({ zodSchema, jsonSchema }) => {
      if (zodSchema === concern) {
        replace(jsonSchema as Json, {
          type: 'string',
          anyOf: [{ enum: probeNames() }, { pattern: '^C\\d+$' }],
          description: 'a probe of probes/catalogue.ts or a claim id of docs/claims.md',
        });
      }
    },
  }) as Json;
  return `${JSON.stringify({ title: 'cudamatrix known-bad driver registry', ...schema }, null, 2)}\n`;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  for (const [name, text] of [
    ['./schema.json', schemaText()],
    ['./known-bad-drivers.schema.json', knownBadSchemaText()],
  ] as const) {
    const out = fileURLToPath(new URL(name, import.meta.url));
    writeFileSync(out, text);
    console.log(`wrote ${out}`);
  }
}
