/**
 * The answer per claim (docs/claims.md's C1…): for each claim, what the records observed of the
 * facts and key metrics of the probes that decide it (ProbeSpec.claims), per environment class,
 * per driver version and GPU family, with the number of observations and the records' links;
 * and per environment, the first and last driver version where each value held. The claim
 * pages (claim-pages.ts) and claims.json are both drawn from it.
 *
 * Built from the behaviour table (the same rows and cells BEHAVIOUR.md shows), so records read
 * through the records index count as those read whole. Deterministic, like the table.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { CudamatrixError } from '../core/errors.ts';
import { packageRoot } from '../core/package-root.ts';
import { catalogue } from '../probes/catalogue.ts';
import type { Scalar } from '../probes/protocol.ts';
import type { ObservationKey } from '../behaviour/behaviour-record.ts';
import { compareVersions, type BehaviourTable, type Column, type LoadedRecord } from './behaviour-table.ts';

/** A claim as docs/claims.md heads it ("### C1: under WDDM, …"): the one source of the titles. */
export interface ClaimTitle {
  id: string;
  /** As written in docs/claims.md (Markdown: `code` in backticks). */
  title: string;
}

/** The claims of docs/claims.md's "### C<n>: <title>" headings, in its order. */
export function parseClaimTitles(markdown: string): ClaimTitle[] {
  return [...markdown.matchAll(/^### (C\d+): (.+)$/gm)].map((match) => ({ id: match[1]!, title: match[2]!.trim() }));
}

let titlesCache: ClaimTitle[] | undefined;

/** The claims of the package's docs/claims.md (it ships in the package, beside dist/). */
export function claimTitles(): ClaimTitle[] {
  if (titlesCache) return titlesCache;
  const file = path.join(packageRoot(), 'docs', 'claims.md');
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    throw new CudamatrixError('USAGE', `cannot read ${file} (${(e as Error).message}): the claim pages take the claims' titles from it`);
  }
  titlesCache = parseClaimTitles(text);
  return titlesCache;
}

/**
 * The environment classes a claim is answered for, in docs/claims.md's terms. A container is a
 * class of its own (C12: a container on WSL2 pins far less than the distribution itself).
 */
export const ENVIRONMENT_CLASSES: { id: string; label: string }[] = [
  { id: 'wddm', label: 'WDDM (Windows)' },
  { id: 'tcc', label: 'TCC (Windows)' },
  { id: 'mcdm', label: 'MCDM (Windows)' },
  { id: 'wsl2', label: 'WSL2' },
  { id: 'wsl2-docker', label: 'Docker on WSL2' },
  { id: 'linux', label: 'Linux' },
  { id: 'docker', label: 'Docker on Linux' },
];

/** The class of an observation: its environment, or the container class when it ran in one. */
export function environmentClass(key: ObservationKey): string {
  if (key.environment === 'wsl2-docker' || (key.environment === 'wsl2' && key.container)) return 'wsl2-docker';
  if (key.environment === 'linux' && key.container) return 'docker';
  return key.environment;
}

/** NVIDIA's architecture names by compute capability (the CUDA C++ Programming Guide's table). */
const FAMILIES: [prefix: RegExp, family: string][] = [
  [/^(10|11|12)\./, 'Blackwell'],
  [/^9\.0$/, 'Hopper'],
  [/^8\.9$/, 'Ada Lovelace'],
  [/^8\./, 'Ampere'],
  [/^7\.5$/, 'Turing'],
  [/^7\./, 'Volta'],
  [/^6\./, 'Pascal'],
  [/^5\./, 'Maxwell'],
];

/** The GPU family of a compute capability ("9.0" -> "Hopper (9.0)"); "unknown" when the record has none. */
export function gpuFamily(computeCapability: Scalar | undefined): string {
  if (computeCapability === undefined || computeCapability === null || computeCapability === '') return 'unknown';
  const capability = String(computeCapability);
  const family = FAMILIES.find(([prefix]) => prefix.test(capability))?.[1];
  return family ? `${family} (${capability})` : `compute capability ${capability}`;
}

/** Of the sysinfo rows, those that answer a claim of sysinfo's (C4: the driver model, TCC). */
const SYSINFO_ANSWERS = new Set(['sysinfo.driver_model', 'sysinfo.tcc_driver']);

/** One value of a fact and the observations that gave it. */
export interface ValueCount {
  value: Scalar;
  observations: number;
  /** The records' links, oldest first. */
  records: string[];
}

export interface FactAnswer {
  /** probe.fact */
  fact: string;
  values: ValueCount[];
}

export interface MetricAnswer {
  /** probe.metric and the key metric's label (probes/specs). */
  metric: string;
  label: string;
  unit: string;
  min: number | null;
  max: number | null;
  observations: number;
}

/** One driver version and GPU family of an environment class. */
export interface DriverAnswer {
  driver: string;
  gpuFamily: string;
  gpus: string[];
  observations: number;
  /** Every record of these observations, oldest first. */
  records: string[];
  facts: FactAnswer[];
  metrics: MetricAnswer[];
}

/** A fact's value and the drivers of one environment where it held. */
export interface HeldSpan {
  fact: string;
  value: Scalar;
  firstDriver: string;
  lastDriver: string;
  /** How many of the environment's drivers observed it. */
  drivers: number;
  observations: number;
}

export interface EnvironmentAnswer {
  environment: string;
  label: string;
  /** 0: no observation yet. */
  observations: number;
  drivers: DriverAnswer[];
  held: HeldSpan[];
}

export interface ClaimEntry {
  id: string;
  title: string;
  /** The claim's page, relative to the claims folder. */
  page: string;
  probes: { name: string; title: string }[];
  /** The facts and key metrics that answer it (probe.fact, probe.metric). */
  facts: string[];
  metrics: string[];
  observations: number;
  environments: EnvironmentAnswer[];
}

export interface ClaimIndex {
  schema: 1;
  claims: ClaimEntry[];
}

/** A claim's page, relative to the claims folder (where claims.json and the pages lie). */
export const claimPage = (id: string) => `${id}.html`;

/** A group of one environment class, driver and GPU family: what it has gathered. */
interface Gathered {
  driver: string;
  family: string;
  gpus: Set<string>;
  records: Set<LoadedRecord>;
  facts: Map<string, Map<string, { value: Scalar; records: Set<LoadedRecord> }>>;
  metrics: Map<string, { label: string; unit: string; values: number[]; records: Set<LoadedRecord> }>;
}

const valueKey = (value: Scalar) => (value === null ? 'null' : `${typeof value}:${String(value)}`);

/** The claim index of a behaviour table; `recordsLink` is the records folder from the claims folder. */
export function buildClaimIndex(table: BehaviourTable, titles: readonly ClaimTitle[], recordsLink: string): ClaimIndex {
  const order = new Map(table.records.map((loaded, i) => [loaded, i]));
  const links = (records: Iterable<LoadedRecord>) =>
    [...records]
      .sort((left, right) => byDate(left, right) || order.get(left)! - order.get(right)!)
      .map((loaded) => `${recordsLink}/${loaded.file}`);
  const familyOf = (column: Column) => gpuFamily(column.chosen.record.sysinfo.compute_capability);
  const claims = titles.map(({ id, title }): ClaimEntry => {
    const probes = catalogue.filter((spec) => spec.claims.includes(id));
    const names = new Set(probes.map((spec) => spec.name));
    const rows = table.groups
      .filter((group) => names.has(group.probe))
      .flatMap((group) => group.rows.filter((row) => row.kind === 'fact' || SYSINFO_ANSWERS.has(row.name)));
    const metricRows = table.metrics.filter((row) => names.has(row.probe));
    // Per environment class, per driver and GPU family.
    const byClass = new Map<string, Map<string, Gathered>>();
    const groupOf = (column: Column): Gathered => {
      const envClass = environmentClass(column.key);
      const family = familyOf(column);
      const groups = byClass.get(envClass) ?? byClass.set(envClass, new Map()).get(envClass)!;
      const at = `${column.key.driver}\u0000${family}`;
      let group = groups.get(at);
      if (!group)
        groups.set(
          at,
          (group = { driver: column.key.driver, family, gpus: new Set(), records: new Set(), facts: new Map(), metrics: new Map() }),
        );
      group.gpus.add(column.key.gpu);
      return group;
    };
    for (const row of rows) {
      row.cells.forEach((cell, i) => {
        if (!cell) return;
        const group = groupOf(table.columns[i]!);
        const values = group.facts.get(row.name) ?? group.facts.set(row.name, new Map()).get(row.name)!;
        for (const valueGroup of cell.values) {
          const slot =
            values.get(valueKey(valueGroup.value)) ??
            values.set(valueKey(valueGroup.value), { value: valueGroup.value, records: new Set() }).get(valueKey(valueGroup.value))!;
          for (const loaded of valueGroup.records) {
            slot.records.add(loaded);
            group.records.add(loaded);
          }
        }
      });
    }
    for (const row of metricRows) {
      row.cells.forEach((picks, i) => {
        if (!picks.length) return;
        const group = groupOf(table.columns[i]!);
        const label = row.spec.label;
        const slot =
          group.metrics.get(label) ??
          group.metrics.set(label, { label, unit: picks[0]!.metric.unit, values: [], records: new Set() }).get(label)!;
        for (const { record, metric } of picks) {
          if (metric.value !== null) slot.values.push(metric.value);
          slot.records.add(record);
          group.records.add(record);
        }
      });
    }
    const known = ENVIRONMENT_CLASSES.map((envClass) => envClass.id);
    const classes = [
      ...ENVIRONMENT_CLASSES,
      ...[...byClass.keys()]
        .filter((envClass) => !known.includes(envClass))
        .sort()
        .map((envClass) => ({ id: envClass, label: envClass })),
    ];
    const environments = classes.map(({ id: envClass, label }): EnvironmentAnswer => {
      const groups = [...(byClass.get(envClass)?.values() ?? [])].sort(
        (left, right) => compareVersions(left.driver, right.driver) || cmp(left.family, right.family),
      );
      const drivers = groups.map((group): DriverAnswer => ({
        driver: group.driver,
        gpuFamily: group.family,
        gpus: [...group.gpus].sort(cmp),
        observations: group.records.size,
        records: links(group.records),
        facts: [...group.facts].map(([fact, values]) => ({
          fact,
          values: [...values.values()].map((slot) => ({
            value: slot.value,
            observations: slot.records.size,
            records: links(slot.records),
          })),
        })),
        metrics: [...group.metrics.values()].map((slot) => ({
          metric: metricRows.find((row) => row.spec.label === slot.label)!.spec.metric,
          label: slot.label,
          unit: slot.unit,
          min: slot.values.length ? Math.min(...slot.values) : null,
          max: slot.values.length ? Math.max(...slot.values) : null,
          observations: slot.records.size,
        })),
      }));
      const observations = new Set(groups.flatMap((group) => [...group.records])).size;
      return { environment: envClass, label, observations, drivers, held: heldSpans(groups) };
    });
    return {
      id,
      title,
      page: claimPage(id),
      probes: probes.map((spec) => ({ name: spec.name, title: spec.title })),
      facts: rows.map((row) => row.name),
      metrics: metricRows.map((row) => row.spec.metric).filter((metric, i, all) => all.indexOf(metric) === i),
      observations: environments.reduce((sum, env) => sum + env.observations, 0),
      environments,
    };
  });
  return { schema: 1, claims };
}

/**
 * Per fact and value, the first and last driver (by version) of the environment that observed
 * it: where the behaviour held. Groups come sorted by driver.
 */
function heldSpans(groups: readonly Gathered[]): HeldSpan[] {
  const spans = new Map<string, HeldSpan & { seen: Set<string>; records: Set<LoadedRecord> }>();
  for (const group of groups) {
    for (const [fact, values] of group.facts) {
      for (const slot of values.values()) {
        const at = `${fact}\u0000${valueKey(slot.value)}`;
        let span = spans.get(at);
        if (!span) {
          spans.set(
            at,
            (span = {
              fact,
              value: slot.value,
              firstDriver: group.driver,
              lastDriver: group.driver,
              drivers: 0,
              observations: 0,
              seen: new Set(),
              records: new Set(),
            }),
          );
        }
        span.lastDriver = group.driver;
        span.seen.add(group.driver);
        for (const loaded of slot.records) span.records.add(loaded);
      }
    }
  }
  return [...spans.values()].map(({ seen, records, ...span }) => ({ ...span, drivers: seen.size, observations: records.size }));
}

/** Plain code-point order, not the locale's: the output must not depend on the machine. */
const cmp = (left: string, right: string): number => (left < right ? -1 : left > right ? 1 : 0);

const byDate = (left: LoadedRecord, right: LoadedRecord) =>
  cmp(left.record.observed.date, right.record.observed.date) || cmp(left.record.id, right.record.id) || cmp(left.file, right.file);

/** claims.json: the index as tools read it (links relative to the file's folder). */
export function claimsJson(index: ClaimIndex): string {
  return `${JSON.stringify(index, null, 2)}\n`;
}
