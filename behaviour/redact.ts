/**
 * What a record must not carry out of the machine it was made on. Records are committed to a
 * public repository, and users send theirs in a submitted file: so every record that `record`
 * writes or `record --submit` puts in a file goes through here first.
 *
 * What a record holds (checked against the H200 record and the probes' sources): the sysinfo
 * (OS name and kernel, driver, GPU name and UUID, PCI bus id, library names), facts with their
 * evidence (numbers, and cuda-log's first logged line), metrics, memory readings, the matrix's
 * target name, and the session the target was reached through. What is removed:
 * - sysinfo.gpu_uuid: a serial number of the user's GPU, the same in every run (nothing reads it);
 *   and a GPU or MIG UUID anywhere else (a fact's evidence, a reason, a fact's value), as GPU-<uuid>;
 * - user and host names where a string names them: `user@host[:port]` (an SSH session, "ssh
 *   alice@box:22 → wsl Ubuntu") becomes `<user>@<host>`, and the user's folder in a path
 *   (/home/alice/, /Users/alice/, C:\Users\alice\) becomes `<user>` (a library loaded from there).
 * - a slurm session's job number and node ("slurm job 12 on gpu07" becomes "slurm job <job> on <node>").
 * The matrix's target name stays: the user chose it (the README says to name targets plainly).
 */
import type { BehaviourRecord } from './behaviour-record.ts';

/** What redaction removes, for the submitted file's summary. */
export const REDACTED = [
  'the GPU UUID (sysinfo.gpu_uuid; GPU-… and MIG-… UUIDs anywhere else become GPU-<uuid>)',
  'user and host names in the session a target was reached through (user@host:port becomes <user>@<host>)',
  'user names in paths (/home/NAME, /Users/NAME, C:\\Users\\NAME become <user>)',
  'the Slurm job and node of a slurm session (slurm job 12 on gpu07 becomes slurm job <job> on <node>)',
] as const;

// Not an image digest (nvidia/cuda@sha256:...), which a Docker session names.
const userAtHost = /[A-Za-z0-9._%+-]+@(?!sha\d+:)(?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+)(?::\d+)?/g;
const homeFolder = /(\/home\/|\/Users\/|[A-Za-z]:[\\/]+Users[\\/]+|\\\\[^\\]+\\Users\\)(?!<user>)[^\\/\s"']+/gi;

// nvidia-smi's and NVML's GPU and MIG UUIDs: a serial number of the user's GPU wherever a probe logged it.
const gpuUuid = /\b(GPU|MIG)-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b/gi;

/** A string without GPU UUIDs. */
const redactUuid = (text: string) => text.replace(gpuUuid, '$1-<uuid>');

// A slurm session's job and node (transports/slurm): a cluster's node names are its hosts'.
const slurmJob = /\bslurm job (?!<job>)\S+ on (?!<node>)[^\s,;)]+/g;

/** A string without user and host names and GPU UUIDs. */
export function redactText(text: string): string {
  return redactUuid(
    text.replace(userAtHost, '<user>@<host>').replace(homeFolder, '$1<user>').replace(slurmJob, 'slurm job <job> on <node>'),
  );
}

function redactDeep(value: unknown): unknown {
  if (typeof value === 'string') return redactText(value);
  if (Array.isArray(value)) return value.map(redactDeep);
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(Object.entries(value).map(([k, child]) => [k, redactDeep(child)]));
}

/**
 * The record without what identifies a person or a machine (see above). The key, the id, the
 * dates and every fact value are left as they are: sameObservation and the file's name depend
 * on them, and none of them names a user or a host.
 */
export function redactRecord(record: BehaviourRecord): BehaviourRecord {
  const { gpu_uuid: _uuid, ...sysinfo } = record.sysinfo;
  const out = redactDeep({ ...record, sysinfo }) as BehaviourRecord;
  return {
    ...out,
    id: record.id,
    key: record.key,
    observed: { ...out.observed, date: record.observed.date, runId: record.observed.runId },
    facts: Object.fromEntries(
      Object.entries(out.facts).map(([factName, fact]) => {
        const originalValue = record.facts[factName]!.value;
        return [factName, { ...fact, value: typeof originalValue === 'string' ? redactUuid(originalValue) : originalValue }];
      }),
    ),
  };
}
