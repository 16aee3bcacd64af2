/**
 * The strict parser of cudaprobe's JSON-lines protocol (cudaprobe/1). A line that is not valid
 * is reported as a problem naming the probe and the line; it never throws, so one bad line
 * cannot lose the good ones around it.
 */
import { z } from 'zod';

export const PROTOCOL = 'cudaprobe/1';

const scalar = z.union([z.string(), z.number(), z.boolean(), z.null()]);
const base = { schema: z.literal(PROTOCOL), probe: z.string().min(1) };

const sysinfoRecord = z.looseObject({
  ...base,
  type: z.literal('sysinfo'),
  name: z.string().min(1),
  value: scalar,
  source: z.string().optional(),
  reason: z.string().optional(),
});
const factRecord = z.looseObject({
  ...base,
  type: z.literal('fact'),
  name: z.string().min(1),
  value: scalar,
  evidence: z.record(z.string(), z.unknown()).optional(),
  reason: z.string().optional(),
});
const metricRecord = z.looseObject({
  ...base,
  type: z.literal('metric'),
  name: z.string().min(1),
  value: z.number().nullable(),
  unit: z.string().min(1),
  attrs: z.record(z.string(), scalar).optional(),
  reason: z.string().optional(),
  /** The per-repetition values behind a median or percentile, in the metric's unit (issue 32). */
  repeats: z.array(z.number()).optional(),
});
const sampleRecord = z.looseObject({
  ...base,
  type: z.literal('sample'),
  phase: z.string().min(1),
  readings: z.record(z.string(), z.number().nullable()),
  reasons: z.record(z.string(), z.string()).optional(),
  attrs: z.record(z.string(), scalar).optional(),
});
const skipRecord = z.looseObject({
  ...base,
  type: z.literal('skip'),
  reason: z.string().min(1),
  what: z.string().optional(),
});
const errorRecord = z.looseObject({
  ...base,
  type: z.literal('error'),
  message: z.string().min(1),
  code: z.string().optional(),
});
/**
 * Whether other processes used the probe's GPU during its cell (issue 32): NVML's compute
 * processes on the device, other than cudaprobe and its subjects, right before the probe made
 * its first context ("start") and right after its work ("end"). processes and used_bytes are
 * null, with the reason, where NVML cannot say (missing, WSL 2, WDDM's per-process memory,
 * another PID namespace at the end).
 */
const neighboursRecord = z.looseObject({
  ...base,
  type: z.literal('neighbours'),
  phase: z.enum(['start', 'end']),
  processes: z.number().int().nonnegative().nullable(),
  used_bytes: z.number().nonnegative().nullable(),
  pids: z.array(z.number().int().nonnegative()),
  reason: z.string().optional(),
});
const probeListing = z.looseObject({
  ...base,
  type: z.literal('probe'),
  description: z.string(),
  claims: z.string(),
  platforms: z.string(),
});

const record = z.discriminatedUnion('type', [
  sysinfoRecord,
  factRecord,
  metricRecord,
  sampleRecord,
  skipRecord,
  errorRecord,
  probeListing,
  neighboursRecord,
]);

export type ProbeRecord = z.infer<typeof record>;
export type SysinfoRecord = z.infer<typeof sysinfoRecord>;
export type FactRecord = z.infer<typeof factRecord>;
export type MetricRecord = z.infer<typeof metricRecord>;
export type SampleRecord = z.infer<typeof sampleRecord>;
export type NeighboursRecord = z.infer<typeof neighboursRecord>;
export type Scalar = z.infer<typeof scalar>;

export interface ProtocolProblem {
  /** 1-based line number in the probe's stdout. */
  line: number;
  /** The start of the offending line, for the message. */
  excerpt: string;
  reason: string;
}

export interface ParsedOutput {
  records: ProbeRecord[];
  problems: ProtocolProblem[];
}

const MAX_LINE = 1024 * 1024;

export function parseProbeOutput(stdout: string): ParsedOutput {
  const records: ProbeRecord[] = [];
  const problems: ProtocolProblem[] = [];
  const lines = stdout.split('\n');
  // Output that does not end in a newline was cut off mid-line (a killed or crashed probe).
  const lastIsPartial = !stdout.endsWith('\n') && stdout.length > 0;
  lines.forEach((raw, index) => {
    const text = raw.endsWith('\r') ? raw.slice(0, -1) : raw;
    if (text.trim() === '') return;
    const lineNo = index + 1;
    const problem = (reason: string): void => {
      problems.push({ line: lineNo, excerpt: excerptOf(text), reason });
    };
    if (text.length > MAX_LINE) return problem(`line is longer than ${MAX_LINE} characters`);
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      if (index === lines.length - 1 && lastIsPartial) return problem('truncated line: the output ends in the middle of it');
      if (/}\s*{/.test(text)) return problem('two records on one line (interleaved output)');
      return problem('not JSON');
    }
    if (typeof value !== 'object' || value === null || Array.isArray(value)) return problem('not a JSON object');
    const schema = (value as { schema?: unknown }).schema;
    if (schema !== PROTOCOL) {
      return problem(schema === undefined ? 'no "schema" field' : `unsupported schema ${JSON.stringify(schema)} (expected "${PROTOCOL}")`);
    }
    const parsed = record.safeParse(value);
    if (!parsed.success) {
      const issue = parsed.error.issues[0]!;
      const where = issue.path.length ? `field "${issue.path.join('.')}"` : 'record';
      return problem(`${where}: ${issue.message}`);
    }
    records.push(parsed.data);
  });
  return { records, problems };
}

function excerptOf(text: string): string {
  return text.length > 120 ? `${text.slice(0, 117)}...` : text;
}

/** "probe sysinfo, stdout line 3: not JSON: {"sch..." */
export function describeProblem(probe: string, problem: ProtocolProblem): string {
  return `probe ${probe}, stdout line ${problem.line}: ${problem.reason}: ${problem.excerpt}`;
}
