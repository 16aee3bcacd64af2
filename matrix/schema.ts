/**
 * The matrix file format, version 1 (zod). `pnpm schema` writes matrix/schema.json from it for
 * editors (matrix/write-schema.ts adds the names the probe catalogue knows); a test checks that
 * the file is current.
 */
import { z } from 'zod';
import { transportKinds, transportKind } from '../transports/registry.ts';

export const MATRIX_VERSION = 1;

export const environmentClasses = ['linux', 'wsl2', 'wsl2-docker', 'wddm', 'tcc', 'mcdm'] as const;
export type EnvironmentClass = (typeof environmentClasses)[number];

const name = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9._-]*$/, 'names use letters, digits, ".", "_" and "-", and start with a letter or digit')
  .max(100);

/**
 * The longest duration a matrix may give: 30 days. Longer is a mistake (a unit slip, "7000h"),
 * not a wish; a timer waits at most 2^31-1 ms (24.8 days), so a timeout between the two waits
 * 24.8 days (transports/supervise.ts clamps it).
 */
export const MAX_DURATION_MS = 30 * 24 * 3_600_000;
const tooLong = (value: unknown) =>
  `${JSON.stringify(value)} is longer than 30 days, the longest duration a matrix may give (a timeout over 24.8 days waits 24.8 days)`;

const DURATION_TEXT = /^\s*\d+(\.\d+)?\s*(ms|s|m|h)\s*$/;

/** Seconds as a number, or a string such as "90s", "5m", "500ms", "1h"; at most 30 days. */
export const duration = z.union([
  z
    .number()
    .positive()
    .superRefine((value, ctx) => {
      if (value * 1000 > MAX_DURATION_MS)
        ctx.addIssue({
          code: 'custom',
          message: tooLong(value),
          params: { fix: `write at most ${MAX_DURATION_MS / 1000} (seconds: 30 days), or "720h"` },
        });
    })
    .meta({ maximum: MAX_DURATION_MS / 1000 }),
  z
    .string()
    .regex(DURATION_TEXT, 'a duration is a number of seconds or a string such as "90s", "5m", "500ms"')
    .superRefine((value, ctx) => {
      // (It runs after a failed regex too: only a well-formed duration is measured.)
      if (DURATION_TEXT.test(value) && durationMs(value) > MAX_DURATION_MS)
        ctx.addIssue({ code: 'custom', message: tooLong(value), params: { fix: 'write at most 720h (30 days)' } });
    }),
]);

export function durationMs(value: z.infer<typeof duration>): number {
  if (typeof value === 'number') return value * 1000;
  const match = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)\s*$/.exec(value)!;
  const factor = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[match[2] as 'ms' | 's' | 'm' | 'h'];
  return Number(match[1]) * factor;
}

/** A bound: a number in the metric's unit, or a string with a unit ("50 us"). */
const bound = z.union([z.number(), z.string()]);

/**
 * One expectation: a fact that must equal a value, or a metric with bounds. One object with
 * every key (rather than a union of two) so that a misspelt key gets a precise error.
 */
export const expectation = z
  .strictObject({
    fact: z.string().optional().describe('"probe.fact", e.g. pinned-vram.counts_as_vram'),
    equals: z.union([z.string(), z.number(), z.boolean(), z.null()]).optional().describe('The value the fact must have'),
    metric: z.string().optional().describe('"probe.metric", e.g. sync-latency.p50_us'),
    '<=': bound.optional().describe('Upper bound: a number in the metric\'s unit, or a value with a unit ("50 us")'),
    '>=': bound.optional().describe('Lower bound'),
    between: z.tuple([bound, bound]).optional().describe('Inclusive range'),
    where: z
      .record(z.string(), z.union([z.string(), z.number(), z.boolean()]))
      .optional()
      .describe('Selects a series of the metric by its attributes'),
    why: z.string().optional().describe('Why this is expected (shown in reports)'),
  })
  .superRefine((e, ctx) => {
    const has = (k: string) => Object.prototype.hasOwnProperty.call(e, k) && (e as Record<string, unknown>)[k] !== undefined;
    if (has('fact') === has('metric')) {
      ctx.addIssue({ code: 'custom', message: 'an expectation names either a "fact" or a "metric" (exactly one)', path: [] });
    } else if (has('fact')) {
      if (!Object.prototype.hasOwnProperty.call(e, 'equals'))
        ctx.addIssue({ code: 'custom', message: 'a fact expectation needs "equals:"', path: [] });
      for (const k of ['<=', '>=', 'between', 'where']) {
        if (has(k)) ctx.addIssue({ code: 'custom', message: `"${k}" belongs to metric expectations; a fact takes "equals"`, path: [k] });
      }
    } else {
      if (has('equals'))
        ctx.addIssue({
          code: 'custom',
          message: '"equals" belongs to fact expectations; a metric takes "<=", ">=" or "between"',
          path: ['equals'],
        });
      if (!has('<=') && !has('>=') && !has('between'))
        ctx.addIssue({ code: 'custom', message: 'a metric expectation needs "<=", ">=" or "between"', path: [] });
    }
  })
  // The same rules for the JSON Schema (which does not see the refinement above).
  .meta({
    oneOf: [{ required: ['fact'] }, { required: ['metric'] }],
    allOf: [
      {
        if: { required: ['fact'] },
        then: { required: ['equals'], properties: { '<=': false, '>=': false, between: false, where: false } },
      },
      {
        if: { required: ['metric'] },
        then: { properties: { equals: false }, anyOf: [{ required: ['<='] }, { required: ['>='] }, { required: ['between'] }] },
      },
    ],
  });
export type Expectation = z.infer<typeof expectation>;

/**
 * Parameters per probe: { probe-name: { param: value } }, checked against the catalogue by the
 * loader (for its messages); matrix/write-schema.ts spells out each probe's in the JSON Schema.
 */
export const probeParams = z.record(z.string(), z.record(z.string(), z.unknown()));

/** One hop of a transport chain; its options are those of its kind (see the registry). */
function hopSchema() {
  const kinds = transportKinds().map((k) => {
    const options = transportKind(k).options as z.ZodObject;
    // extend keeps the options' refinements but not their JSON Schema metadata: carry it over.
    const hop = options.extend({ kind: z.literal(k) });
    const meta = options.meta();
    return meta ? hop.meta(meta) : hop;
  });
  return z.discriminatedUnion('kind', kinds as unknown as [z.ZodObject, ...z.ZodObject[]]);
}
const hop = hopSchema();
const kindName = z.enum(transportKinds() as [string, ...string[]]);
/** A chain of hops; which kinds may follow another is checked by the loader (and in the JSON Schema). */
export const transportChain = z.array(z.union([kindName, hop])).min(1);
export const transport = z
  .union([kindName, hop, transportChain])
  .describe('A transport kind ("local"), a hop with options ({kind: ssh, host: ...}), or a chain of hops');

/** "all" or probe names; the names are checked against the catalogue by the loader (and in the JSON Schema). */
export const probeList = z.union([z.literal('all'), z.array(z.string()).min(1)]);

/** A GitHub Actions runner label: printable, no spaces or commas (a list is written as a YAML list). */
const runnerLabel = z
  .string()
  .regex(/^[^\s,]+$/, 'a runner label has no spaces or commas (write several labels as a list: [self-hosted, linux, gpu])')
  .max(100);

const target = z.strictObject({
  name: name.describe('Unique name of the target; cells are named target/probe'),
  description: z.string().optional(),
  environment: z
    .enum(['auto', ...environmentClasses])
    .default('auto')
    .describe('Declared environment; auto = use the detected one'),
  transport: transport.default('local'),
  probes: probeList.optional().describe('Probes to run (default: defaults.probes)'),
  params: probeParams.optional(),
  device: z.number().int().nonnegative().optional().describe('CUDA device index'),
  timeout: duration.optional().describe('Per-probe timeout'),
  expect: z.array(expectation).optional().describe('Expectations for this target; they win over the environment class'),
  runsOn: z
    .union([runnerLabel, z.array(runnerLabel).min(1)])
    .optional()
    .describe(
      'GitHub Actions: the self-hosted runner labels this target needs (e.g. [self-hosted, windows, gpu, wddm]); `cudamatrix gha matrix` gives it a job of its own on such a runner. Without it, the target is reached through its transport from a shared job',
    ),
});

export const matrixSchema = z.strictObject({
  version: z.literal(MATRIX_VERSION).describe('Matrix format version'),
  extends: z
    .literal('default')
    .optional()
    .describe(
      "default: start from the default expectations (matrix/default.yaml) of every environment class; this file's own expectations are added, and one on the same fact (or metric and where) replaces the default's",
    ),
  description: z.string().optional(),
  concurrency: z.number().int().positive().max(256).default(4).describe('Targets run at once'),
  hostConcurrency: z
    .number()
    .int()
    .positive()
    .max(64)
    .default(1)
    .describe('Targets run at once on one host (default 1: measurements on one host would disturb each other)'),
  defaults: z
    .strictObject({
      probes: probeList.default('all'),
      params: probeParams.default({}),
      device: z.number().int().nonnegative().default(0),
      timeout: duration.default('10m'),
    })
    .prefault({}),
  expectations: z
    .strictObject({
      all: z.array(expectation).optional().describe('Expectations for every target'),
      linux: z.array(expectation).optional(),
      wsl2: z.array(expectation).optional(),
      'wsl2-docker': z.array(expectation).optional().describe('A container on WSL2 (sysinfo sees WSL markers and container markers)'),
      wddm: z.array(expectation).optional(),
      tcc: z.array(expectation).optional(),
      mcdm: z.array(expectation).optional(),
    })
    .default({}),
  targets: z.array(target).min(1, 'a matrix needs at least one target'),
});

export type MatrixInput = z.input<typeof matrixSchema>;
export type MatrixDoc = z.output<typeof matrixSchema>;
export type TargetDoc = MatrixDoc['targets'][number];
