import { z } from 'zod';
import { catalogue, effectiveParams, type ProbeSpec } from '../probes/catalogue.ts';
import { formatTable } from '../core/text-table.ts';

export interface ParamInfo {
  name: string;
  /** What it takes, for people: "list of GiB", "integer", "s", "text", "driver|runtime". */
  type: string;
  /** The value a probe runs with when the matrix gives none. */
  default: unknown;
  description?: string;
}

/** Units the parameter names carry in their suffix (sizes_gib, wait_s, ...). */
const unitSuffixes: [RegExp, string][] = [
  [/_gib$/, 'GiB'],
  [/_mib$/, 'MiB'],
  [/_ms$/, 'ms'],
  [/_us$/, 'us'],
  [/_s$/, 's'],
  [/_percent$/, '%'],
];

type Json = { type?: string | string[]; enum?: unknown[]; const?: unknown; items?: Json; anyOf?: Json[]; description?: string };

function typeOf(json: Json, unit: string | undefined, plural = false): string {
  if (json.enum) return json.enum.map(String).join('|');
  if (json.anyOf) return json.anyOf.map((j) => typeOf(j, unit, plural)).join(' or ');
  switch (json.type) {
    case 'array':
      return `list of ${json.items ? typeOf(json.items, unit, true) : 'values'}`;
    case 'integer':
      return unit ?? (plural ? 'integers' : 'integer');
    case 'number':
      return unit ?? (plural ? 'numbers' : 'number');
    case 'string':
      return 'text';
    case 'boolean':
      return 'true|false';
    default:
      return 'value';
  }
}

/** Each parameter of a probe with its type and default, from its zod schema. */
export function paramInfo(probe: ProbeSpec): ParamInfo[] {
  const json = z.toJSONSchema(probe.params, { io: 'input', unrepresentable: 'any' }) as { properties?: Record<string, Json> };
  const defaults = effectiveParams(probe.name);
  return Object.entries(json.properties ?? {}).map(([name, schema]) => ({
    name,
    type: typeOf(schema, unitSuffixes.find(([re]) => re.test(name))?.[1]),
    default: defaults[name],
    description: schema.description,
  }));
}

function formatDefault(value: unknown): string {
  if (Array.isArray(value)) return `[${value.join(',')}]`;
  return typeof value === 'string' ? JSON.stringify(value) : String(value);
}

/** Where a user looks the claim ids up: the page ships with the repository, not beside it. */
const lastClaim = Math.max(...catalogue.flatMap((spec) => spec.claims.map((claim) => Number(claim.slice(1)))));
export const CLAIMS_PAGE_LINE = `The claims (C1-C${lastClaim}), where each comes from and how its probe decides it: docs/claims.md in the cudamatrix repository.`;

export const OPT_IN_LINE = 'Opt-in probes are not in "probes: all": name them in a matrix\'s probes list, or exactly with --probe.';

export function probesListCommand(opts: { facts: boolean; json: boolean }): number {
  if (opts.json) {
    const out = catalogue.map((spec) => {
      // What a probe is and measures; not how the console, the report and shards use it.
      const { name, title, claims, description, platforms, facts, metrics } = spec;
      return { name, title, claims, description, platforms, facts, metrics, params: paramInfo(spec) };
    });
    process.stdout.write(`${JSON.stringify(out, null, 2)}\n`);
    return 0;
  }
  const rows = catalogue.map((spec) => [
    spec.name,
    spec.claims.join(' '),
    spec.platforms.join(', '),
    spec.optIn ? `${spec.title} [opt-in, bounded, runs last]` : spec.title,
  ]);
  process.stdout.write(`${formatTable(['probe', 'claims', 'platforms', 'what it measures'], rows)}\n`);
  process.stdout.write(`\n${CLAIMS_PAGE_LINE}\n`);
  if (catalogue.some((spec) => spec.optIn)) process.stdout.write(`${OPT_IN_LINE}\n`);
  if (opts.facts) {
    for (const spec of catalogue) {
      process.stdout.write(`\n${spec.name}: ${spec.description}\n`);
      for (const fact of spec.facts) {
        const values = fact.values ? ` [${fact.values.map((allowed) => JSON.stringify(allowed)).join(' | ')}]` : '';
        process.stdout.write(`  fact   ${spec.name}.${fact.name}${values} — ${fact.description}\n`);
      }
      if (spec.optIn) process.stdout.write(`  opt-in: ${spec.optIn}; bounded by its parameters; last on its target\n`);
      if (spec.hostVmMemory)
        process.stdout.write(
          "  wsl2: on a WSL 2 target reached from its Windows host, that host also samples the VM process's GPU memory (host_vm_* metrics, C27)\n",
        );
      for (const metric of spec.metrics)
        process.stdout.write(`  metric ${spec.name}.${metric.name} (${metric.unit}) — ${metric.description}\n`);
      const params = paramInfo(spec);
      if (params.length)
        process.stdout.write(`  params ${params.map((i) => `${i.name}=${formatDefault(i.default)} (${i.type})`).join(', ')}\n`);
    }
  }
  return 0;
}
