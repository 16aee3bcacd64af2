/**
 * The known-bad driver registry: matrix/known-bad-drivers.yaml, driver releases with a public,
 * sourced regression, as data (docs/known-bad-drivers.md). The zod schema here is the format
 * (`pnpm schema` writes matrix/known-bad-drivers.schema.json from it); loadKnownBad reads and
 * checks the file, and knownBadFor says which entries a detected driver matches. doctor and run
 * print a matching entry as a warning; they never fail on one.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parseDocument } from 'yaml';
import { z } from 'zod';
import { CudamatrixError } from '../core/errors.ts';
import { packageFileForDisplay, packageRoot } from '../core/package-root.ts';
import { catalogue, probeNames } from '../probes/catalogue.ts';

export const KNOWN_BAD_FILE = 'known-bad-drivers.yaml';

export const knownBadOses = ['linux', 'windows', 'wsl2'] as const;
export type KnownBadOs = (typeof knownBadOses)[number];
export const windowsDriverModels = ['wddm', 'tcc', 'mcdm'] as const;
export type WindowsDriverModel = (typeof windowsDriverModels)[number];
export const trustLevels = ['nvidia-release-note', 'maintainer-confirmed', 'multiple-reports', 'single-report'] as const;
export type Trust = (typeof trustLevels)[number];

/** A driver version as NVIDIA writes it: dot-separated numbers ("580.159.04", "591.59", "580"). */
const version = z.string().regex(/^\d+(\.\d+)*$/, 'a driver version is dot-separated numbers, e.g. "580.159.04" or "591.59"');

/** Driver versions compared part by part as numbers ("580.159.04" > "580.95.05"); a missing part counts as 0. */
export function compareDriverVersions(left: string, right: string): number {
  const pa = left.split('.').map(Number);
  const pb = right.split('.').map(Number);
  for (let i = 0; i < Math.max(pa.length, pb.length); i++) {
    const difference = (pa[i] ?? 0) - (pb[i] ?? 0);
    if (difference) return Math.sign(difference);
  }
  return 0;
}

export const driverRange = z
  .strictObject({
    os: z.enum(knownBadOses).describe('the OS the driver runs on: linux, windows, or wsl2 (the Windows driver as WSL 2 sees it)'),
    models: z
      .array(z.enum(windowsDriverModels))
      .min(1)
      .optional()
      .describe('windows only: the driver models affected (wddm, tcc, mcdm); absent: all of them'),
    from: version.describe('the first driver version affected (inclusive): the earliest the source reports as bad'),
    before: version
      .optional()
      .describe('the first driver version not affected (exclusive): the fixed release; absent while no fix is known'),
  })
  .superRefine((range, ctx) => {
    if (range.models && range.os !== 'windows')
      ctx.addIssue({ code: 'custom', path: ['models'], message: `models are for os: windows, not ${range.os}` });
    if (range.before !== undefined && compareDriverVersions(range.from, range.before) >= 0)
      ctx.addIssue({ code: 'custom', path: ['before'], message: `before (${range.before}) must be above from (${range.from})` });
  });
export type DriverRange = z.infer<typeof driverRange>;

/** A claim id of docs/claims.md (C1..C28), or a probe of probes/catalogue.ts. */
export const concern = z.string().refine((claimOrProbe) => /^C\d+$/.test(claimOrProbe) || probeNames().includes(claimOrProbe), {
  error: (issue) => `"${String(issue.input)}" is neither a probe (${probeNames().join(', ')}) nor a claim id (C1, C2, …)`,
});

export const knownBadEntry = z
  .strictObject({
    id: z
      .string()
      .regex(/^[a-z0-9]+(-[a-z0-9]+)*$/, 'an id is kebab-case: lower-case letters and digits joined by "-"')
      .describe('a unique, stable name in kebab-case'),
    drivers: z.array(driverRange).min(1).describe('the affected driver versions, one range per OS (and driver model)'),
    gpus: z
      .array(z.string().min(1))
      .min(1)
      .optional()
      .describe(
        'globs on the GPU name as sysinfo gives it ("*RTX 50*" matches "NVIDIA GeForce RTX 5090"), case-insensitive; absent: any GPU',
      ),
    symptom: z.string().min(10).describe('what goes wrong, in one or two sentences, as the source says it'),
    fixedIn: version.nullable().describe('the driver version that fixed it, or null when the source names none'),
    source: z.url({ protocol: /^https$/ }).describe('the public issue, thread or release note the entry rests on'),
    trust: z
      .enum(trustLevels)
      .describe('how far the source goes: nvidia-release-note, maintainer-confirmed, multiple-reports, single-report'),
    concerns: z
      .array(concern)
      .describe(
        'the probes and claim ids (docs/claims.md) whose behaviour the entry is about; `cudamatrix gate` fails on a probe it checks',
      ),
  })
  .superRefine((e, ctx) => {
    // A fix named in fixedIn is the end of the ranges that have one.
    for (const [i, range] of e.drivers.entries()) {
      if (e.fixedIn === null && range.before !== undefined)
        ctx.addIssue({
          code: 'custom',
          path: ['drivers', i, 'before'],
          message: 'a range ends (before) but fixedIn is null: name the fix',
        });
    }
  });
export type KnownBadEntry = z.infer<typeof knownBadEntry>;

export const knownBadFile = z.strictObject({
  version: z.literal(1).describe('the format version: 1'),
  entries: z.array(knownBadEntry).describe('the known-bad driver releases'),
});

/** A known-bad registry that cannot be used: the file, the entry (index and id) and the field. */
export class KnownBadError extends CudamatrixError {
  constructor(
    readonly file: string,
    message: string,
    readonly entry?: { index: number; id?: string },
    readonly field?: string,
  ) {
    super('MATRIX_INVALID', message);
  }
}

function fieldPath(keys: readonly PropertyKey[]): string {
  return keys.map((k, i) => (typeof k === 'number' ? `[${k}]` : `${i ? '.' : ''}${String(k)}`)).join('');
}

/** The registry in a YAML text, checked; `file` names it in errors. */
export function parseKnownBad(text: string, file: string): KnownBadEntry[] {
  const doc = parseDocument(text, { uniqueKeys: true, prettyErrors: false });
  const yamlError = doc.errors[0];
  if (yamlError) throw new KnownBadError(file, `${file}: not valid YAML: ${yamlError.message}`);
  const parsed = knownBadFile.safeParse(doc.toJS());
  if (!parsed.success) {
    const raw = doc.toJS() as { entries?: { id?: unknown }[] } | null;
    const lines = parsed.error.issues.slice(0, 10).map((issue) => {
      const issuePath = issue.path;
      if (issuePath[0] === 'entries' && typeof issuePath[1] === 'number') {
        const id = raw?.entries?.[issuePath[1]]?.id;
        const field = fieldPath(issuePath.slice(2)) || '(the entry)';
        return `${file}: entry ${issuePath[1]}${typeof id === 'string' ? ` (${id})` : ''}, field ${field}: ${issue.message}`;
      }
      return `${file}: field ${fieldPath(issuePath) || '(the file)'}: ${issue.message}`;
    });
    const first = parsed.error.issues[0]!;
    const index = first.path[0] === 'entries' && typeof first.path[1] === 'number' ? first.path[1] : undefined;
    const id = index !== undefined ? raw?.entries?.[index]?.id : undefined;
    throw new KnownBadError(
      file,
      `the known-bad driver registry is invalid:\n${lines.join('\n')}${parsed.error.issues.length > 10 ? `\n... and ${parsed.error.issues.length - 10} more` : ''}`,
      index !== undefined ? { index, ...(typeof id === 'string' ? { id } : {}) } : undefined,
      fieldPath(index !== undefined ? first.path.slice(2) : first.path),
    );
  }
  const seen = new Map<string, number>();
  for (const [i, e] of parsed.data.entries.entries()) {
    const earlier = seen.get(e.id);
    if (earlier !== undefined)
      throw new KnownBadError(
        file,
        `${file}: entry ${i} (${e.id}), field id: the id of entry ${earlier} too; ids are unique`,
        { index: i, id: e.id },
        'id',
      );
    seen.set(e.id, i);
  }
  return parsed.data.entries;
}

const cache = new Map<string, KnownBadEntry[]>();

/** The registry: matrix/known-bad-drivers.yaml of this package, or `file`; read once. */
export function loadKnownBad(file?: string): KnownBadEntry[] {
  const full = file ?? path.join(packageRoot(), 'matrix', KNOWN_BAD_FILE);
  const cached = cache.get(full);
  if (cached) return cached;
  const shown = file ?? packageFileForDisplay('matrix', KNOWN_BAD_FILE);
  let text: string;
  try {
    text = readFileSync(full, 'utf8');
  } catch (error) {
    throw new KnownBadError(shown, `${shown}: cannot read the known-bad driver registry: ${(error as Error).message}`);
  }
  const entries = parseKnownBad(text, shown);
  cache.set(full, entries);
  return entries;
}

/** What a target is, for the registry: its driver version, OS and driver model, and GPU name. */
export interface DriverSubject {
  driver: string;
  os: KnownBadOs;
  /** Windows only: the driver model. */
  model?: WindowsDriverModel;
  gpu?: string;
}

/**
 * The registry's terms from sysinfo's facts: `environment` (linux, wsl2, wsl2-docker, wddm, tcc,
 * mcdm) gives the OS, and under Windows the model (NVML's `driver_model` when it has one);
 * `driver_version` (NVML) the driver; `gpu_name` the GPU. Undefined without a driver version or
 * a known environment.
 */
export function driverSubjectOf(sysinfo: Record<string, unknown>): DriverSubject | undefined {
  const driver = sysinfo.driver_version;
  const env = sysinfo.environment;
  if (typeof driver !== 'string' || !/^\d+(\.\d+)*$/.test(driver.trim()) || typeof env !== 'string') return undefined;
  const gpu = typeof sysinfo.gpu_name === 'string' ? { gpu: sysinfo.gpu_name } : {};
  if (env === 'linux') return { driver: driver.trim(), os: 'linux', ...gpu };
  if (env === 'wsl2' || env === 'wsl2-docker') return { driver: driver.trim(), os: 'wsl2', ...gpu };
  if ((windowsDriverModels as readonly string[]).includes(env)) {
    const nvml = sysinfo.driver_model;
    const model = (windowsDriverModels as readonly string[]).includes(nvml as string)
      ? (nvml as WindowsDriverModel)
      : (env as WindowsDriverModel);
    return { driver: driver.trim(), os: 'windows', model, ...gpu };
  }
  return undefined;
}

function globMatches(glob: string, name: string): boolean {
  const re = glob
    .replace(/[.+^${}()|[\]\\]/g, '\\$&')
    .replace(/\*/g, '.*')
    .replace(/\?/g, '.');
  return new RegExp(`^${re}$`, 'i').test(name);
}

/** Whether a range covers this driver, OS and model. */
export function rangeMatches(range: DriverRange, subject: Pick<DriverSubject, 'driver' | 'os' | 'model'>): boolean {
  if (range.os !== subject.os) return false;
  if (range.models && (!subject.model || !range.models.includes(subject.model))) return false;
  return (
    compareDriverVersions(subject.driver, range.from) >= 0 &&
    (range.before === undefined || compareDriverVersions(subject.driver, range.before) < 0)
  );
}

/**
 * The entries a driver matches: one of its ranges covers the driver on that OS (and model), and
 * its GPU globs, if any, match the GPU (an entry limited to some GPUs does not match when the GPU
 * is not known).
 */
export function knownBadFor(subject: DriverSubject, entries: readonly KnownBadEntry[] = loadKnownBad()): KnownBadEntry[] {
  return entries.filter(
    (e) =>
      e.drivers.some((range) => rangeMatches(range, subject)) &&
      (!e.gpus || (subject.gpu !== undefined && e.gpus.some((gpuGlob) => globMatches(gpuGlob, subject.gpu!)))),
  );
}

function rangeText(range: DriverRange): string {
  const where = range.os === 'windows' && range.models ? `windows ${range.models.join('/')}` : range.os;
  return `${where}, from ${range.from}${range.before ? ` before ${range.before}` : ' on'}`;
}

/**
 * One entry as one line: `known-bad driver: <symptom> (<os>, <range>; fixed in X | not fixed;
 * source <url>, <trust>)`. With `subject`, only the ranges that cover it are named.
 */
export function knownBadLine(entry: KnownBadEntry, subject?: DriverSubject): string {
  const ranges = subject ? entry.drivers.filter((range) => rangeMatches(range, subject)) : entry.drivers;
  const shown = (ranges.length ? ranges : entry.drivers).map(rangeText).join('; ');
  const gpus = entry.gpus ? `, GPUs ${entry.gpus.join(' ')}` : '';
  return `known-bad driver: ${entry.symptom.trim()} (${shown}${gpus}; ${entry.fixedIn ? `fixed in ${entry.fixedIn}` : 'not fixed'}; source ${entry.source}, ${entry.trust})`;
}

/** The entries a target's sysinfo matches, as summary.json lists them; none without a driver version. */
export function knownBadForSysinfo(
  sysinfo: Record<string, unknown>,
  entries?: readonly KnownBadEntry[],
): { subject: DriverSubject; entries: KnownBadEntry[] } | undefined {
  const subject = driverSubjectOf(sysinfo);
  if (!subject) return undefined;
  return { subject, entries: knownBadFor(subject, entries) };
}

/**
 * Whether an entry fails a node whose run checked these probes (`cudamatrix gate`, the nhc
 * reporter): it concerns one of them (by name, or a claim one of them decides) and rests on
 * more than a single report (a single report is a lead: said, not failed on).
 */
export function knownBadFails(entry: KnownBadEntry, probesRun: ReadonlySet<string>): boolean {
  return entry.trust !== 'single-report' && concernsProbes(entry, probesRun);
}

/** Whether an entry concerns one of these probes, by name or by a claim one of them decides. */
export function concernsProbes(entry: KnownBadEntry, probesRun: ReadonlySet<string>): boolean {
  const claims = new Set(catalogue.filter((probe) => probesRun.has(probe.name)).flatMap((probe) => probe.claims));
  return entry.concerns.some((concernId) => probesRun.has(concernId) || claims.has(concernId));
}
