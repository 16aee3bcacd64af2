/**
 * What `cudamatrix export` writes for one target (issue 36): its capability facts (the catalogue's
 * facts made by capabilityFact) as a table a project's build can read: per feature the measured
 * value, whether it is usable (works, works-unclaimed), what the device attribute claimed, the
 * call that decided it and its result, and one line that says why, naming the driver and the
 * environment class. Every capability fact of the catalogue is in it, measured or not, so that a
 * name the catalogue lacks (a typo) can be told apart from a feature this run did not measure.
 * The pytest and CMake files (export-pytest.ts, export-cmake.ts) are made from this table.
 */
import { catalogue, type ProbeSpec } from '../probes/catalogue.ts';
import { isCapabilityFact } from '../probes/spec-helpers.ts';
import type { Scalar } from '../probes/protocol.ts';
import type { BehaviourRecord } from './behaviour-record.ts';

export const CAPABILITIES_SCHEMA = 'cudamatrix-capabilities/1';

/** The values that make a feature usable: it worked, whatever the attribute claimed. */
export const USABLE_VALUES: readonly string[] = ['works', 'works-unclaimed'];

/** A capability fact of the catalogue: "probe.fact", its probe and what it says. */
export interface CapabilitySpec {
  name: string;
  probe: string;
  description: string;
}

/** Every capability fact of the catalogue (or of the probes given: a test's), in their order. */
export function catalogueCapabilities(probes: readonly Pick<ProbeSpec, 'name' | 'facts'>[] = catalogue): CapabilitySpec[] {
  return probes.flatMap((probe) =>
    probe.facts
      .filter(isCapabilityFact)
      .map((fact) => ({ name: `${probe.name}.${fact.name}`, probe: probe.name, description: fact.description })),
  );
}

export interface Capability {
  /** works, claimed-but-fails, works-unclaimed, unsupported; null where undecided or not measured. */
  value: Scalar;
  usable: boolean;
  /** Whether the probe ran and gave this fact (false: its probe did not run here, or gave nothing). */
  measured: boolean;
  /** What the device attribute claimed (null: no attribute, or not read). */
  claimed: boolean | null;
  attribute: string | null;
  attributeValue: number | null;
  /** The call that decided it, and its result (a CUresult name). */
  call: string | null;
  result: string | null;
  /** Whether the attribute's claim and the call agreed. */
  agrees: boolean | null;
  /** Why the value is null (the probe's reason, or why it was not measured). */
  reason: string | null;
  /** One line: the feature, the value, the call and its result, the driver and environment (a skip's reason). */
  summary: string;
  description: string;
}

export interface TargetCapabilities {
  schema: typeof CAPABILITIES_SCHEMA;
  target: string;
  driver: string;
  gpu: string;
  /** The environment class: linux, wsl2, wddm, tcc, mcdm. */
  environment: string;
  os: string;
  osBuild: string | null;
  container: string | null;
  /** Where it came from: the run, its date, the file the record or event log was read from, and the tools that measured. */
  source: { runId: string; date: string; file: string; kind: string; cudamatrix: string; cudaprobe: string | null };
  /** Feature ("probe.fact") -> its capability, sorted by name. */
  features: Record<string, Capability>;
}

const text = (value: unknown): string | null => (typeof value === 'string' && value !== '' ? value : null);
const flag = (value: unknown): boolean | null => (typeof value === 'boolean' ? value : null);
const number = (value: unknown): number | null => (typeof value === 'number' && Number.isFinite(value) ? value : null);

/** Why a fact of the catalogue is absent from the record: its probe did not run, or ran and gave none. */
function whyNotMeasured(record: BehaviourRecord, spec: CapabilitySpec): string {
  const cell = record.cells.find((candidate) => candidate.probe === spec.probe);
  if (!cell) return `probe ${spec.probe} did not run on this target: add it to the matrix's probes`;
  return `probe ${spec.probe} ${cell.status}${cell.reason ? `: ${cell.reason}` : ''}, and gave no value for it`;
}

/** The target's capabilities from its record, for every capability fact of `specs`. */
export function targetCapabilities(
  record: BehaviourRecord,
  source: { file: string; kind: string },
  specs: readonly CapabilitySpec[] = catalogueCapabilities(),
): TargetCapabilities {
  const where = `on driver ${record.key.driver}, ${record.key.environment}`;
  const features: Record<string, Capability> = {};
  for (const spec of [...specs].sort((left, right) => (left.name < right.name ? -1 : left.name > right.name ? 1 : 0))) {
    const fact = record.facts[spec.name];
    const evidence = fact?.evidence ?? {};
    const value = fact ? fact.value : null;
    const call = text(evidence.call);
    const result = text(evidence.result);
    const reason = fact ? (value === null ? (fact.reason ?? 'the probe gave no reason') : null) : whyNotMeasured(record, spec);
    const how = call ? ` (${call}${result ? ` → ${result}` : ''})` : '';
    const said = value === null ? `${fact ? 'undecided' : 'not measured'} (${reason})` : `${String(value)}${how}`;
    features[spec.name] = {
      value,
      usable: typeof value === 'string' && USABLE_VALUES.includes(value),
      measured: fact !== undefined,
      claimed: flag(evidence.claimed),
      attribute: text(evidence.attribute),
      attributeValue: number(evidence.attribute_value),
      call,
      result,
      agrees: flag(evidence.agrees),
      reason,
      summary: `${spec.name}: ${said} ${where}`,
      description: spec.description,
    };
  }
  return {
    schema: CAPABILITIES_SCHEMA,
    target: record.observed.target,
    driver: record.key.driver,
    gpu: record.key.gpu,
    environment: record.key.environment,
    os: record.key.os,
    osBuild: record.key.osBuild,
    container: record.key.container,
    source: {
      runId: record.observed.runId,
      date: record.observed.date,
      file: source.file,
      kind: source.kind,
      cudamatrix: record.tool.cudamatrix,
      cudaprobe: record.tool.cudaprobe,
    },
    features,
  };
}

/** The folder name of a target under --out: its name, with anything but letters, digits, ".", "_" and "-" made "-". */
export function targetFolder(target: string): string {
  const name = target.replace(/[^A-Za-z0-9._-]+/g, '-').replace(/^[.-]+/, '');
  return name || 'target';
}

/** capabilities.json's text: stable (the same record gives the same bytes). */
export function capabilitiesJson(capabilities: TargetCapabilities): string {
  return `${JSON.stringify(capabilities, null, 2)}\n`;
}
