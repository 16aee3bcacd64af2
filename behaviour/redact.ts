/**
 * What a record must not carry out of the machine it was made on. Records are committed to a
 * public repository, and users send theirs in a submitted file: so every record that `record`
 * writes or `record --submit` puts in a file goes through here first.
 *
 * What a record holds (checked against the H200 records, the probes' sources and the event log):
 * the sysinfo (OS name and kernel, driver, GPU name and UUID, PCI bus id, library names or
 * paths), facts with their evidence (numbers, cuda-log's first logged line, MIG UUIDs as keys),
 * metrics with their attributes (a MIG slice's UUID), memory readings, cells' reasons, the
 * matrix's target name, the session the target was reached through (`ssh user@host:port`,
 * `slurm job 12 on gpu07`, `docker … on tcp://host:2376`) and its transports. The event log's
 * other lines (the probe's remote path, host keys) never reach a record. What is replaced, in
 * every string and every key of a map (a fact's evidence, a metric's attributes):
 * - GPU and MIG UUIDs, and serial numbers (a value under a key that says serial, or after
 *   "serial number:" in a text);
 * - user and host names: `user@host[:port]`, a URL's host, a slurm job and node, and then every
 *   other place those names, this machine's host name (long and short) and its user name appear
 *   (a reason, a path, the kernel string), in any case;
 * - paths outside the system's folders (/usr, /opt, C:\Windows…): the folders go, the file name stays;
 * - IPv4 and IPv6 addresses, and MAC addresses.
 * A submitted file gets salted pseudonyms (`<host-1a2b3c4d>`, `GPU-<5e6f7a8b>`): the same thing
 * gets the same one within the submission, two GPUs (or hosts, or network cards) stay apart, and
 * the salt is made per submission and never written, so nothing can be matched back to the
 * machine. Committed records (`record` into records/) get plain placeholders (`<host>`,
 * `GPU-<uuid>`): they must be what `record` writes from their committed log on any day, which a
 * salt made once cannot give; the GPU UUID field itself is left out there (nothing reads it).
 * Fact values always get the plain placeholders: they are compared across submissions.
 */
import { createHash, randomBytes } from 'node:crypto';
import { hostname, userInfo } from 'node:os';
import type { BehaviourRecord } from './behaviour-record.ts';

/** What redaction removes, for the submitted file's summary and the console. */
export const REDACTED = [
  'GPU and MIG UUIDs and serial numbers',
  'user and host names (user@host, Docker endpoints, Slurm jobs and nodes, and wherever else those names or this machine’s host and user name appear)',
  'the folders of paths outside the system’s (/home/NAME/x/lib.so becomes <path>/lib.so)',
  'IPv4, IPv6 and MAC addresses',
] as const;

type Kind = 'host' | 'user' | 'gpu' | 'serial' | 'path' | 'ip' | 'mac' | 'job' | 'node';

/** Names too common to be anyone's (a default host or user name): replacing them would only blur the record. */
const GENERIC = new Set(
  'localhost root user admin administrator ubuntu debian fedora runner docker nvidia cuda gpu local host node linux windows wsl'.split(' '),
);

// nvidia-smi's and NVML's GPU and MIG UUIDs: a serial number of the user's GPU wherever a probe logged it.
const gpuUuid = /\b(GPU|MIG)-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b/gi;
// Not an image digest (nvidia/cuda@sha256:...), which a Docker session names.
const userAtHost = /([A-Za-z0-9._%+-]+)@(?!sha\d+:)(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+)(?::\d+)?/g;
// A Docker endpoint's host (tcp://gpu-box:2376, ssh://…; unix:///… has none). Not http(s): a
// reason may link to public documentation, whose host names no one.
const urlHost = /\b((?:tcp|udp|ssh|npipe):\/\/)(?:[^@/\s<>]+@)?([A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\])(?::\d+)?/g;
// A slurm session's job and node (transports/slurm): a cluster's node names are its hosts'.
const slurmJob = /\bslurm job (?!<job)(\S+) on (?!<node)([^\s,;)]+)/g;
const homeUser = /(?:\/home\/|\/Users\/|[A-Za-z]:[\\/]+Users[\\/]+)([^\\/\s"'<>]+)/gi;
// An absolute path (POSIX, Windows, UNC): its folders, then its last part.
const posixPath = /(?<![\w.:/~<>\\-])(\/(?:[^\s/"'`<>|:;,()[\]{}]+\/)+)([^\s/"'`<>|:;,()[\]{}]*)/g;
const windowsPath = /(?<![\w<])((?:[A-Za-z]:|\\\\[^\\\s"'<>]+)[\\/]+(?:[^\\/\n"'<>|*?:,;]+[\\/]+)*)([^\\/\s"'<>|*?:,;]*)/g;
// The system's own folders: where a path says nothing about whose machine it is.
const systemFolder =
  /^(?:\/(?:usr|lib|lib32|lib64|libx32|bin|sbin|etc|opt|proc|sys|dev|run|var|snap|mnt\/wsl|mnt\/[a-z]\/(?:windows|program files[^/]*))(?:\/|$)|[a-z]:[\\/]+(?:windows|program files[^\\/]*|programdata)(?:[\\/]|$))/i;
const mac = /(?<![0-9A-Fa-f:-])(?:[0-9A-Fa-f]{2}([:-]))(?:[0-9A-Fa-f]{2}\1){4}[0-9A-Fa-f]{2}(?![0-9A-Fa-f:-])/g;
const hex4 = '[0-9A-Fa-f]{1,4}';
const ipv6 = new RegExp(
  `(?<![\\w:.])(?:(?:${hex4}:){7}${hex4}|(?:${hex4}:){1,6}(?::${hex4}){1,6}|(?:${hex4}:){1,7}:|::(?:${hex4}:){0,5}${hex4})(?:%[\\w.-]+)?(?!\\.?[\\w:])`,
  'g',
);
const octet = '(?:25[0-5]|2[0-4]\\d|1\\d\\d|[1-9]?\\d)';
const ipv4 = new RegExp(`(?<![\\w.])${octet}(?:\\.${octet}){3}(?!\\.?\\d)`, 'g');
// "Serial Number : 1652422045384" (nvidia-smi -q), "serial=…", "serial no 42AB…"; not "serial copies".
const serialText =
  /\b(serial(?:[ _-]?(?:number|no\.?|num))?"?\s*[:=#]\s*"?|serial[ _-]?(?:number|no\.?|num)\s+)(?!<serial)([A-Za-z0-9][A-Za-z0-9-]{3,})/gi;
const serialKey = /serial/i;
const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** This machine's host name (long and short) and user name: what is redacted wherever it appears. */
export function thisMachine(): { hosts: string[]; users: string[] } {
  const host = hostname();
  let user = '';
  try {
    user = userInfo().username;
  } catch {
    // no passwd entry (a container with an arbitrary uid): nothing to redact by name
  }
  return { hosts: [host, host.split('.')[0]!], users: [user] };
}

/**
 * One redaction: the names it replaces, its salt (none: plain placeholders), and what it
 * replaced with what (for the console, never written).
 */
export class Redaction {
  /** Original -> what the record holds instead, in the order found. */
  readonly replaced = new Map<string, string>();
  private readonly names = new Map<string, Kind>();
  private namePattern: RegExp | null = null;

  constructor(
    private readonly salt: Buffer | null = null,
    machine = thisMachine(),
  ) {
    for (const host of machine.hosts) this.learn(host, 'host');
    for (const user of machine.users) this.learn(user, 'user');
  }

  /** A redaction for one submitted file: salted pseudonyms, the salt made here and never written. */
  static forSubmission(machine = thisMachine()): Redaction {
    return new Redaction(randomBytes(32), machine);
  }

  get salted(): boolean {
    return this.salt !== null;
  }

  /** A name to redact wherever it appears (found in a session, a URL, a home folder). */
  private learn(name: string, kind: 'host' | 'user'): void {
    const clean = name.trim();
    if (clean.length < 3 || /^\d+$/.test(clean) || GENERIC.has(clean.toLowerCase()) || /[<>]/.test(clean)) return;
    // An address is replaced by its own rule wherever it is.
    if (/^[\d.]+$|^\[/.test(clean)) return;
    if (this.names.has(clean.toLowerCase())) return;
    this.names.set(clean.toLowerCase(), kind);
    this.namePattern = null;
  }

  /** The pseudonym of `original`: salted, the same for the same thing in any case; plain without a salt. */
  private alias(kind: Kind, original: string, salted: boolean): string {
    let pseudonym: string;
    if (!salted || !this.salt) pseudonym = kind === 'gpu' ? '<uuid>' : `<${kind}>`;
    else {
      // A slurm node is a host: the same name, the same pseudonym, in the session and in a reason.
      const family = kind === 'node' ? 'host' : kind;
      const hash = createHash('sha256').update(this.salt).update(`${family}\0${original.toLowerCase()}`).digest('hex').slice(0, 8);
      pseudonym = kind === 'gpu' ? `<${hash}>` : `<${kind}-${hash}>`;
    }
    return pseudonym;
  }

  private note(original: string, replacement: string): string {
    if (original !== replacement && !this.replaced.has(original)) this.replaced.set(original, replacement);
    return replacement;
  }

  /** Learns the user and host names that the records' strings name (user@host, URLs, slurm nodes, home folders). */
  learnFrom(records: BehaviourRecord[]): void {
    const visit = (value: unknown): void => {
      if (typeof value === 'string') {
        for (const match of value.matchAll(userAtHost)) {
          this.learn(match[1]!, 'user');
          this.learn(match[2]!, 'host');
        }
        for (const match of value.matchAll(urlHost)) this.learn(match[2]!, 'host');
        for (const match of value.matchAll(slurmJob)) this.learn(match[2]!, 'host');
        for (const match of value.matchAll(homeUser)) this.learn(match[1]!, 'user');
      } else if (Array.isArray(value)) value.forEach(visit);
      else if (value && typeof value === 'object') for (const [k, child] of Object.entries(value)) (visit(k), visit(child));
    };
    for (const record of records) visit({ ...record, key: null });
  }

  /** A string without what identifies a person or a machine. `salted` false: the plain placeholders. */
  text(text: string, salted = true): string {
    const swap = (kind: Kind) => (original: string) => this.note(original, this.alias(kind, original, salted));
    let out = text
      .replace(gpuUuid, (original, prefix: string) => this.note(original, `${prefix}-${this.alias('gpu', original, salted)}`))
      .replace(userAtHost, (original, user: string, host: string) =>
        this.note(original, `${this.alias('user', user, salted)}@${this.alias('host', host, salted)}`),
      )
      .replace(urlHost, (original, scheme: string, host: string) => this.note(original, `${scheme}${this.alias('host', host, salted)}`))
      .replace(slurmJob, (original, job: string, node: string) =>
        this.note(original, `slurm job ${this.alias('job', job, salted)} on ${this.alias('node', node, salted)}`),
      )
      .replace(posixPath, (original, folders: string, last: string) => this.path(original, folders, last, '/', salted))
      .replace(windowsPath, (original, folders: string, last: string) => this.path(original, folders, last, '\\', salted))
      .replace(mac, swap('mac'))
      .replace(ipv6, swap('ip'))
      .replace(ipv4, swap('ip'))
      .replace(serialText, (original, label: string, serial: string) =>
        this.note(original, `${label}${this.alias('serial', serial, salted)}`),
      );
    const names = this.names.size ? this.pattern() : null;
    if (names)
      out = out.replace(names, (original) => this.note(original, this.alias(this.names.get(original.toLowerCase())!, original, salted)));
    return out;
  }

  /** The names learnt, longest first (a full host name before its short one), in any case, not inside a longer word. */
  private pattern(): RegExp {
    this.namePattern ??= new RegExp(
      `(?<![A-Za-z0-9])(?:${[...this.names.keys()]
        .sort((first, second) => second.length - first.length)
        .map(escape)
        .join('|')})(?![A-Za-z0-9])`,
      'gi',
    );
    return this.namePattern;
  }

  /** A path outside the system's folders: its folders go (a user's, a project's), its file name stays where it has one. */
  private path(original: string, folders: string, last: string, separator: string, salted: boolean): string {
    if (systemFolder.test(original)) return original;
    const keep = /^[\w-]*\.[\w.-]+$/.test(last) ? `${separator}${last}` : '';
    return this.note(original, `${this.alias('path', folders.toLowerCase(), salted)}${keep}`);
  }

  private deep(value: unknown, key: string | undefined, salted: boolean): unknown {
    if (key !== undefined && serialKey.test(key) && (typeof value === 'string' || typeof value === 'number'))
      return this.note(String(value), this.alias('serial', String(value), salted));
    if (typeof value === 'string') return this.text(value, salted);
    if (Array.isArray(value)) return value.map((child) => this.deep(child, undefined, salted));
    if (value === null || typeof value !== 'object') return value;
    return Object.fromEntries(Object.entries(value).map(([k, child]) => [this.text(k, salted), this.deep(child, k, salted)]));
  }

  /**
   * The record without what identifies a person or a machine (see above). The id and the dates
   * are left as they are (sameObservation and the file's name depend on them, and they name
   * nobody); the key's texts (the OS name is free text) get the plain placeholders, so that two
   * submissions of one observation keep one key.
   */
  record(record: BehaviourRecord): BehaviourRecord {
    const { gpu_uuid: uuid, ...sysinfo } = record.sysinfo;
    // A submission keeps the GPU as a pseudonym (two GPUs stay apart); a committed record leaves it out.
    if (this.salt && typeof uuid === 'string') sysinfo.gpu_uuid = uuid;
    const out = this.deep({ ...record, sysinfo, facts: {} }, undefined, true) as BehaviourRecord;
    return {
      ...out,
      id: record.id,
      key: Object.fromEntries(
        Object.entries(record.key).map(([field, value]) => [field, typeof value === 'string' ? this.text(value, false) : value]),
      ) as BehaviourRecord['key'],
      observed: { ...out.observed, date: record.observed.date, runId: record.observed.runId },
      facts: Object.fromEntries(
        Object.entries(record.facts).map(([factName, fact]) => {
          const { value, ...rest } = fact;
          const clean = this.deep(rest, undefined, true) as Omit<typeof fact, 'value'>;
          return [factName, { value: typeof value === 'string' ? this.text(value, false) : value, ...clean }];
        }),
      ),
    };
  }

  /** Every record, after learning the names any of them holds (a host in one record's session is redacted in the others' reasons). */
  records(records: BehaviourRecord[]): BehaviourRecord[] {
    this.learnFrom(records);
    return records.map((record) => this.record(record));
  }
}

/** The record as a committed record holds it: plain placeholders, this machine's names. */
export function redactRecord(record: BehaviourRecord, redaction = new Redaction()): BehaviourRecord {
  return redaction.records([record])[0]!;
}

/** A string as a committed record holds it. */
export function redactText(text: string): string {
  return new Redaction().text(text);
}
