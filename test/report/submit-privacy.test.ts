/**
 * `cudamatrix record --submit` (in process, as a user runs it): what identifies a person or a
 * machine does not leave it, and what leaves is shown before the file is written.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { recordCommand } from '../../cli/record.ts';
import { parseSubmission } from '../../behaviour/submit.ts';
import { H200_RUNS } from '../record-fixture.ts';
import { tempDir } from '../helpers.ts';

/** What the log below holds that names a person or a machine (each must be gone from the file, in any case). */
const SECRETS = {
  hostname: 'gpu-box-7.lab.example.org',
  shortHostname: 'gpu-box-7',
  user: 'alice',
  home: '/home/alice',
  project: 'secret-project',
  otherHost: 'node-b.example.net',
  otherUser: 'bob',
  uuid1: 'GPU-8f3a2b1c-4d5e-6f70-8192-a3b4c5d6e7f8',
  uuid2: 'GPU-11111111-2222-3333-4444-555555555555',
  migUuid: 'MIG-99999999-aaaa-bbbb-cccc-dddddddddddd',
  serial: '1652422045384',
  boardSerial: 'PQ7X-00042',
  ipv4: '10.23.4.56',
  ipv6: '2001:db8:85a3::8a2e:370:7334',
  linkLocal: 'fe80::1c2d:3e4f:5a6b:7c8d',
  mac: '3c:ec:ef:12:34:56',
  macWindows: '3C-EC-EF-AB-CD-EF',
};
const MACHINE = { hosts: [SECRETS.hostname, SECRETS.shortHostname], users: [SECRETS.user] };

/**
 * The first H200 log with two targets (two GPUs of one machine, the second reached over SSH),
 * each identifier above put where a probe or a transport would put it: sysinfo, a fact's
 * evidence (as a value and as a key), a reason, a metric's attributes, the session.
 */
function leakyLog(): string {
  const lines = readFileSync(H200_RUNS[0]!, 'utf8').trimEnd().split('\n');
  const events = lines.map((line) => JSON.parse(line) as Record<string, unknown> & { type: string; target?: string });
  const targetLines = events.filter((e) => e.target === 'local');
  const second = structuredClone(targetLines).map((e) => {
    e.target = 'second';
    if (typeof e.cell === 'string') e.cell = e.cell.replace(/^local\//, 'second/');
    if (e.type === 'target-ready') e.session = `ssh ${SECRETS.otherUser}@${SECRETS.otherHost}:2222`;
    if (e.type === 'target-start') e.transport = [`ssh:${SECRETS.otherUser}@${SECRETS.otherHost}:2222`];
    // Another fact value: not the same observation (which a submission carries once).
    for (const probeRecord of (e.records ?? []) as Record<string, unknown>[])
      if (probeRecord.type === 'fact' && probeRecord.name === 'reset_helps') probeRecord.value = true;
    return e;
  });
  const withSecrets = (e: Record<string, unknown>, uuid: string) => {
    if (e.type !== 'cell-end') return e;
    for (const probeRecord of e.records as Record<string, unknown>[]) {
      if (probeRecord.type === 'sysinfo' && probeRecord.name === 'gpu_uuid') probeRecord.value = uuid;
      // The OS name is part of a record's key (and of the summary's headings): cleaned there too.
      if (probeRecord.type === 'sysinfo' && probeRecord.name === 'os_name')
        probeRecord.value = `Ubuntu 24.04.3 LTS on ${SECRETS.shortHostname} ${SECRETS.ipv4} ${SECRETS.mac}`;
      if (probeRecord.type === 'sysinfo' && probeRecord.name === 'kernel')
        probeRecord.value = `6.8.0-51-generic #52 SMP ${SECRETS.shortHostname}`;
      if (probeRecord.type === 'sysinfo' && probeRecord.name === 'cudart_library')
        probeRecord.value = `${SECRETS.home}/${SECRETS.project}/lib/libcudart.so.12`;
      if (probeRecord.type === 'fact' && probeRecord.name === 'log_file_written')
        probeRecord.evidence = {
          first_line: `[${SECRETS.hostname.toUpperCase()}] ${uuid.toLowerCase()} at ${SECRETS.ipv4} via ${SECRETS.ipv6} and ${SECRETS.linkLocal}%eth0, nic ${SECRETS.mac} / ${SECRETS.macWindows}`,
          board_serial: SECRETS.boardSerial,
          [SECRETS.migUuid]: { note: `Serial Number : ${SECRETS.serial}` },
        };
      if (probeRecord.type === 'fact' && probeRecord.name === 'reset_helps')
        probeRecord.reason = `${SECRETS.user} ran it on ${SECRETS.shortHostname}; ${SECRETS.otherHost} answered; log in C:\\Users\\Alice\\${SECRETS.project}\\cuda.log`;
      if (probeRecord.type === 'metric' && probeRecord.name === 'bandwidth_gbps' && probeRecord.attrs)
        (probeRecord.attrs as Record<string, unknown>).device = uuid;
    }
    return e;
  };
  const out = [
    ...events.filter((e) => e.type !== 'run-end').map((e) => withSecrets(e, SECRETS.uuid1)),
    ...second.map((e) => withSecrets(e, SECRETS.uuid2)),
    events.at(-1)!,
  ];
  return `${out.map((e) => JSON.stringify(e)).join('\n')}\n`;
}

/** Each secret and its case variants (as written, lower, upper, and with the first letter changed). */
function variants(secret: string): string[] {
  const flipped = secret[0] === secret[0]!.toLowerCase() ? secret[0]!.toUpperCase() : secret[0]!.toLowerCase();
  return [...new Set([secret, secret.toLowerCase(), secret.toUpperCase(), flipped + secret.slice(1)])];
}

/** Runs record --submit in process; the console, and whether the file existed when each line was written. */
async function submitted(log: string, sub: string) {
  const lines: { text: string; fileThere: boolean }[] = [];
  const capture = (chunk: unknown) => {
    for (const text of String(chunk).replace(/\n$/, '').split('\n')) lines.push({ text, fileThere: existsSync(sub) });
    return true;
  };
  const out = vi.spyOn(process.stdout, 'write').mockImplementation(capture);
  const err = vi.spyOn(process.stderr, 'write').mockImplementation(capture);
  let status: number;
  try {
    status = await recordCommand([log], { recordsDir: 'records', submit: sub }, MACHINE);
  } finally {
    out.mockRestore();
    err.mockRestore();
  }
  return { status, lines };
}

describe('record --submit: a private submission', () => {
  it('a log holding host and user names, home paths, two GPU UUIDs, serials, IPv4, IPv6 and MAC addresses gives a file with none of them; the two GPUs stay apart', async () => {
    const dir = tempDir('cm-privacy-');
    const log = path.join(dir, 'events.jsonl');
    writeFileSync(log, leakyLog());
    const logText = readFileSync(log, 'utf8').toLowerCase();
    for (const secret of Object.values(SECRETS)) expect(logText.includes(secret.toLowerCase()), `the log holds ${secret}`).toBe(true);
    const sub = path.join(dir, 'cudamatrix-records.txt');
    const { status } = await submitted(log, sub);
    expect(status).toBe(0);
    const bytes = readFileSync(sub);
    for (const [what, secret] of Object.entries(SECRETS))
      for (const variant of variants(secret)) expect(bytes.includes(variant), `${what}: ${variant} is in the file`).toBe(false);
    // Each shortest part that names someone, too (no "alice" left in a path, no "gpu-box" in a kernel string).
    const lower = bytes.toString('utf8').toLowerCase();
    for (const part of ['alice', 'gpu-box', 'node-b', 'example', 'secret', '8f3a2b1c', '1652422045384', 'pq7x'])
      expect(lower.includes(part), `${part} is in the file`).toBe(false);

    const records = parseSubmission(bytes.toString('utf8'), sub);
    expect(records.map((record) => record.observed.target)).toEqual(['local', 'second']);
    const [first, second] = records.map((record) => record.sysinfo.gpu_uuid as string);
    expect(first).toMatch(/^GPU-<[0-9a-f]{8}>$/);
    expect(second).toMatch(/^GPU-<[0-9a-f]{8}>$/);
    expect(first).not.toBe(second);
    // The same GPU has the same pseudonym wherever it appears (a metric's attributes), the other another.
    const devices = records.map(
      (record) => new Set(record.metrics.filter((metric) => metric.attrs?.device).map((metric) => metric.attrs!.device)),
    );
    expect(devices.map((set) => [...set])).toEqual([[first], [second]]);
    // What is kept: the key, the measurements, the system's own paths.
    expect(records[0]!.key.gpu).toBe('NVIDIA H200');
    expect(records[0]!.sysinfo.cudart_library).toMatch(/^<path-[0-9a-f]{8}>\/libcudart\.so\.12$/);
    expect(records[1]!.observed.session).toMatch(/^ssh <user-[0-9a-f]{8}>@<host-[0-9a-f]{8}>$/);

    // Another submission of the same log: other pseudonyms (a salt of its own, never written).
    const again = path.join(dir, 'again.txt');
    await submitted(log, again);
    const [otherFirst] = parseSubmission(readFileSync(again, 'utf8'), again).map((record) => record.sysinfo.gpu_uuid);
    expect(otherFirst).not.toBe(first);
  });

  it('says what leaves before it writes the file: every text in it, each once, and what was replaced with what', async () => {
    const dir = tempDir('cm-privacy-');
    const log = path.join(dir, 'events.jsonl');
    writeFileSync(log, leakyLog());
    const sub = path.join(dir, 'out.txt');
    const { lines } = await submitted(log, sub);
    const start = lines.findIndex((line) => line.text.startsWith('What leaves this machine: '));
    const wrote = lines.findIndex((line) => line.text.startsWith(`wrote ${sub}`));
    expect(start).toBeGreaterThanOrEqual(0);
    expect(wrote).toBeGreaterThan(start);
    // Shown while the file was not there yet.
    const listing = lines.slice(start, lines.findIndex((line) => /^and \d+ numbers/.test(line.text)) + 1);
    expect(listing.every((line) => !line.fileThere)).toBe(true);
    expect(lines[wrote]!.fileThere).toBe(true);

    // The texts listed are exactly the records' (keys included): nothing more, nothing left out.
    const texts = listing.map((line) => line.text);
    const from = texts.findIndex((text) => text.startsWith('Every text in the records'));
    const to = texts.findIndex((text) => /^and \d+ numbers/.test(text));
    const listed = texts
      .slice(from + 1, to)
      .flatMap((text) => [...text.matchAll(/"(?:[^"\\]|\\.)*"/g)].map((quoted) => JSON.parse(quoted[0]) as string));
    const written = new Set<string>();
    const collect = (value: unknown): void => {
      if (typeof value === 'string') written.add(value);
      else if (Array.isArray(value)) value.forEach(collect);
      else if (value && typeof value === 'object')
        for (const [k, child] of Object.entries(value)) {
          written.add(k);
          collect(child);
        }
    };
    collect(JSON.parse(JSON.stringify(parseSubmission(readFileSync(sub, 'utf8'), sub))));
    expect(listed.length).toBe(new Set(listed).size);
    expect(new Set(listed)).toEqual(written);
    expect(texts[from]).toBe(`Every text in the records, each once (${written.size}):`);

    // Each replacement, original → pseudonym; the pseudonym is in the file, the original only on the console.
    const text = readFileSync(sub, 'utf8');
    const replaced = texts.slice(texts.findIndex((line) => line.startsWith('Replaced in it')) + 1, from);
    expect(replaced.length).toBeGreaterThan(10);
    for (const secret of [
      SECRETS.uuid1,
      SECRETS.uuid2,
      SECRETS.ipv4,
      SECRETS.mac,
      SECRETS.boardSerial,
      `${SECRETS.home}/${SECRETS.project}/lib/`,
    ])
      expect(replaced.some((line) => line.trimStart().startsWith(secret))).toBe(true);
    for (const line of replaced) {
      const [, pseudonym] = line.split('  →  ');
      // (as JSON writes it: a Windows path's backslash doubled)
      expect(text).toContain(JSON.stringify(pseudonym!.trim()).slice(1, -1));
    }
  });

  it('--submit - writes the file to standard output and what leaves to standard error, before it', async () => {
    const dir = tempDir('cm-privacy-');
    const log = path.join(dir, 'events.jsonl');
    writeFileSync(log, leakyLog());
    const chunks: { stream: string; text: string }[] = [];
    const out = vi
      .spyOn(process.stdout, 'write')
      .mockImplementation((chunk) => (chunks.push({ stream: 'out', text: String(chunk) }), true));
    const err = vi
      .spyOn(process.stderr, 'write')
      .mockImplementation((chunk) => (chunks.push({ stream: 'err', text: String(chunk) }), true));
    try {
      expect(await recordCommand([log], { recordsDir: 'records', submit: '-' }, MACHINE)).toBe(0);
    } finally {
      out.mockRestore();
      err.mockRestore();
    }
    const file = chunks
      .filter((chunk) => chunk.stream === 'out')
      .map((chunk) => chunk.text)
      .join('');
    expect(parseSubmission(file, '-')).toHaveLength(2);
    const leaves = chunks.findIndex(
      (chunk) => chunk.stream === 'err' && chunk.text.startsWith('What leaves this machine: standard output'),
    );
    expect(leaves).toBeGreaterThanOrEqual(0);
    expect(leaves).toBeLessThan(chunks.findIndex((chunk) => chunk.stream === 'out'));
    for (const secret of Object.values(SECRETS)) expect(file.toLowerCase().includes(secret.toLowerCase()), secret).toBe(false);
  });
});
