/**
 * The comparison behind bench/capability-check: issue 36's capability facts as cudaprobe decided
 * them against the same facts decided by bench/capability_peer.py, feature by feature. Pure
 * functions (tested in bench/capability-compare.test.ts on hand-written outputs of both sides).
 *
 * A capability fact agrees when its value, its `claimed` and its `attribute_value` are equal on
 * both sides; the other facts (failure_poisons, the IOMMU mode, ACS redirect, the override
 * variables) when their values are. A fact null on either side is not compared (the reason is
 * the null side's); a fact one side does not report at all is `missing`, a failure as a
 * disagreement is.
 */
import { catalogue } from '../probes/catalogue.ts';
import { isCapabilityFact } from '../probes/spec-helpers.ts';
import type { ProbeRecord } from '../probes/protocol.ts';

/** The probes whose capability facts the peer decides. */
export const CAPABILITY_PROBES = ['host-register-flags', 'memory-pools', 'virtual-memory', 'ipc-handles'] as const;

/** The other facts the peer decides: C33 and C34. */
export const OTHER_FACTS = ['pinned-ceiling.failure_poisons', 'p2p.iommu_mode', 'p2p.acs_redirect', 'p2p.peer_override_variables'] as const;

/** Every fact compared, "probe.fact", in the catalogue's order. */
export function comparedFeatures(): string[] {
  const capability = CAPABILITY_PROBES.flatMap((name) => {
    const spec = catalogue.find((probe) => probe.name === name);
    if (!spec) throw new Error(`bench/capability-compare: the catalogue has no probe ${name} (probes/catalogue.ts)`);
    return spec.facts.filter(isCapabilityFact).map((fact) => `${name}.${fact.name}`);
  });
  return [...capability, ...OTHER_FACTS];
}

/** One side's answer for one fact. */
export interface FactSide {
  value: unknown;
  claimed?: boolean | null;
  attribute_value?: number | null;
  call?: string;
  result?: string;
  reason?: string;
}

export type ComparisonStatus = 'agree' | 'disagree' | 'not compared' | 'missing';

export interface Comparison {
  feature: string;
  probe: FactSide | null;
  peer: FactSide | null;
  status: ComparisonStatus;
  /** What differed, why it was not compared, or what is missing; '' when they agree. */
  why: string;
}

/** The facts of one probe's output, keyed "probe.fact", with the evidence the comparison reads. */
export function probeFacts(probe: string, records: readonly ProbeRecord[]): Record<string, FactSide> {
  const facts: Record<string, FactSide> = {};
  for (const record of records) {
    if (record.type !== 'fact') continue;
    const fact = record as { name: string; value: unknown; evidence?: Record<string, unknown>; reason?: string };
    const evidence = fact.evidence ?? {};
    facts[`${probe}.${fact.name}`] = {
      value: fact.value,
      ...('claimed' in evidence ? { claimed: evidence.claimed as boolean | null } : {}),
      ...('attribute_value' in evidence ? { attribute_value: evidence.attribute_value as number | null } : {}),
      ...(typeof evidence.call === 'string' ? { call: evidence.call } : {}),
      ...(typeof evidence.result === 'string' ? { result: evidence.result } : {}),
      ...(fact.reason ? { reason: fact.reason } : {}),
    };
  }
  return facts;
}

/** The peer's JSON ({features, iommu}) as one map "probe.fact" -> side. */
export function peerFacts(peer: { features?: Record<string, FactSide>; iommu?: Record<string, FactSide> }): Record<string, FactSide> {
  return { ...peer.features, ...peer.iommu };
}

// The override variables are listed in the environment's order, which two programs need not share.
function normalised(feature: string, value: unknown): unknown {
  if (feature === 'p2p.peer_override_variables' && typeof value === 'string')
    return value === 'none' ? [] : value.split(',').filter(Boolean).sort();
  return value;
}

const same = (left: unknown, right: unknown) => JSON.stringify(left ?? null) === JSON.stringify(right ?? null);

/** Compares one fact. `capability`: also `claimed` and `attribute_value`. */
export function compareFact(feature: string, probe: FactSide | undefined, peer: FactSide | undefined, capability: boolean): Comparison {
  const base = { feature, probe: probe ?? null, peer: peer ?? null };
  if (!probe || !peer) {
    const absent = [!probe ? 'cudaprobe did not report it' : '', !peer ? 'the peer did not decide it' : ''].filter(Boolean);
    return { ...base, status: 'missing', why: absent.join('; ') };
  }
  if (probe.value === null || peer.value === null) {
    const reasons = [
      probe.value === null ? `cudaprobe: null (${probe.reason ?? 'no reason given'})` : '',
      peer.value === null ? `peer: null (${peer.reason ?? 'no reason given'})` : '',
    ].filter(Boolean);
    return { ...base, status: 'not compared', why: reasons.join('; ') };
  }
  const fields: [string, unknown, unknown][] = [['value', normalised(feature, probe.value), normalised(feature, peer.value)]];
  if (capability) fields.push(['claimed', probe.claimed, peer.claimed], ['attribute_value', probe.attribute_value, peer.attribute_value]);
  const differing = fields
    .filter(([, ours, theirs]) => !same(ours, theirs))
    .map(([name, ours, theirs]) => `${name}: cudaprobe ${JSON.stringify(ours ?? null)}, peer ${JSON.stringify(theirs ?? null)}`);
  return { ...base, status: differing.length ? 'disagree' : 'agree', why: differing.join('; ') };
}

/** Every compared fact (comparedFeatures()), in order. */
export function compareCapabilities(probe: Record<string, FactSide>, peer: Record<string, FactSide>): Comparison[] {
  const otherFacts: readonly string[] = OTHER_FACTS;
  return comparedFeatures().map((feature) => compareFact(feature, probe[feature], peer[feature], !otherFacts.includes(feature)));
}

/** Whether the run fails: a fact that disagrees or is missing on a side. */
export function comparisonsFail(comparisons: readonly Comparison[]): boolean {
  return comparisons.some((comparison) => comparison.status === 'disagree' || comparison.status === 'missing');
}
