/**
 * The shapes of the catalogue (./catalogue.ts): a probe's spec, its facts, metrics, their
 * tolerances and key metrics. Each probe's spec is in ./specs/.
 */
import type { z } from 'zod';
import type { Unit } from '../core/units.ts';
import type { Platform } from '../transports/transport.ts';
import type { ProbeRecord, Scalar } from './protocol.ts';
import type { SummaryLine } from './summary-lines.ts';

export interface FactSpec {
  name: string;
  description: string;
  /** The values a classification can take, where it is one. */
  values?: readonly (string | boolean | number)[];
  /**
   * The platforms where the fact can have a value (default: every platform of its probe).
   * Elsewhere it is null by design, and the console says so once rather than list the nulls.
   */
  platforms?: readonly Platform[];
}

export interface MetricSpec {
  name: string;
  unit: Unit;
  description: string;
  /**
   * The minimum effect: a smaller move is never a change, however significant. A larger one is a
   * change only beyond the noise measured from the key's runs (behaviour/noise.ts). One
   * rule, or several of which the first whose `where` matches the series' attrs applies.
   */
  tolerance?: MetricTolerance | MetricTolerance[];
}

/**
 * A metric's minimum effect. A move is |a - b| / max(|a|, |b|) (so that a -> b and b -> a are
 * judged alike); it is no change when at most `relative`, or when |a - b| is at most `absolute`
 * (in the metric's unit: for values near zero, where any fraction is large). First calibrated
 * as the noise of the four H200 runs of driver 580.159.04 (2026-11-29 to 12-01); since issue 32
 * the noise is measured, and these are the floor under it (docs/records.md, "Noise").
 */
export interface MetricTolerance {
  relative: number;
  absolute?: number;
  /** Only for series whose attrs have these values ({below: N}: a number under N). */
  where?: Record<string, string | number | boolean | { below: number }>;
}

export interface ProbeSpec {
  name: string;
  title: string;
  /** Claim ids (docs/claims.md) that this probe decides. */
  claims: string[];
  description: string;
  platforms: Platform[];
  /** Parameters, as the matrix writes them (validated there, passed as --param NAME=VALUE). */
  params: z.ZodObject;
  facts: FactSpec[];
  metrics: MetricSpec[];
  /** The --quick profile: parameters that keep it small, for CI-sized runs (the matrix's own still win). */
  quick?: Record<string, unknown>;
  /**
   * How long it takes with its default parameters in the committed H200 run
   * (records/driver-580.159.04/h200-linux-2026-12-02-issue24/events.jsonl, rounded): shards are balanced by it
   * (without it, 1 s).
   */
  typicalMs?: number;
  /** The numbers behind its claims: rows of the report's metric table (BEHAVIOUR.md, behaviour.html). */
  keyMetrics?: KeyMetric[];
  /**
   * The console's lines for a cell that passed, under "what the driver does" (helpers in
   * ./summary-lines.ts). Without it the console lists its key metrics' values.
   */
  summary?: (records: readonly ProbeRecord[]) => SummaryLine[];
  /**
   * Set for a probe that can exhaust memory or hang a desktop: why. It is left out of `probes:
   * all` and runs only where a matrix names it (or --probe names it exactly); bounded by its
   * parameters, and last on its target (it is at the end of the catalogue).
   */
  optIn?: string;
  /**
   * Sampled from outside too: on a WSL 2 target reached from its Windows host, that host's PDH
   * GPU Process Memory counters of the VM process while it runs (probes/host-vm-memory.ts, C27);
   * its metrics then include hostVmMetrics.
   */
  hostVmMemory?: true;
}

/** A key metric: one number per record, picked from the probe's metrics. */
export interface KeyMetric {
  /** A metric of the probe (its name without the probe's). */
  metric: string;
  label: string;
  /** Attributes the metric must have. */
  where?: Record<string, Scalar>;
  /** Of several matches, the one of the largest attrs.size_bytes (the steady-state transfer). */
  largestSize?: boolean;
  /**
   * How a negative value reads where its sign turns the label's meaning ({} its magnitude,
   * formatted): a negative "allocated past free VRAM" is an allocation that stopped under it.
   */
  negative?: string;
}
