/** The redaction's rules, one by one: what each replaces, and what it leaves alone. */
import { describe, expect, it } from 'vitest';
import { Redaction } from './redact.ts';

const machine = { hosts: ['gpu-box-7.lab.example.org', 'gpu-box-7'], users: ['alice'] };
const plain = () => new Redaction(null, machine);

describe('redaction rules (plain placeholders, as committed records get them)', () => {
  it.each([
    [
      'this machine’s host name in any case, long and short',
      'ran on GPU-BOX-7.lab.example.org and gpu-box-7.',
      'ran on <host> and <host>.',
    ],
    [
      'this machine’s user name, not inside another word',
      'alice ran it; malice and alicent are words',
      '<user> ran it; malice and alicent are words',
    ],
    [
      'a path in a user’s folder: the folders go, the file name stays',
      'loaded /home/alice/proj/lib/libcudart.so.12',
      'loaded <path>/libcudart.so.12',
    ],
    ['a Windows path with spaces in its folders', 'C:\\Users\\Alice Smith\\AppData\\cudart64_12.dll', '<path>\\cudart64_12.dll'],
    ['a UNC path (its server is a host)', 'from \\\\fileserver\\share\\cuda\\nvcuda.dll', 'from <path>\\nvcuda.dll'],
    ['a folder without a file name goes whole', 'cwd /scratch/alice-project', 'cwd <path>'],
    ['IPv4', 'at 10.23.4.56, then 192.168.1.1.', 'at <ip>, then <ip>.'],
    [
      'IPv6, full, compressed, link-local with a zone, v4-mapped',
      '2001:0db8:85a3:0000:0000:8a2e:0370:7334 2001:db8::1 fe80::1c2d:3e4f%eth0 ::ffff:10.0.0.1',
      '<ip> <ip> <ip> ::ffff:<ip>',
    ],
    ['MAC addresses, with colons or dashes', 'nic 3c:ec:ef:12:34:56 and 3C-EC-EF-AB-CD-EF', 'nic <mac> and <mac>'],
    ['a serial number after its label', 'Serial Number : 1652422045384, serial=PQ7X-00042', 'Serial Number : <serial>, serial=<serial>'],
    ['a Docker endpoint’s host', 'docker x (img) on tcp://dockerhost.corp:2376', 'docker x (img) on tcp://<host>'],
  ])('%s', (_what, text, expected) => {
    expect(plain().text(text)).toBe(expected);
  });

  it.each([
    [
      'the system’s folders',
      '/usr/local/cuda-13.0/targets/x86_64-linux/lib/libcudart.so.13.0.96 /usr/lib/wsl/lib/libcuda.so.1 /dev/dxg C:\\Windows\\System32\\nvcuda.dll',
    ],
    [
      'versions, times, a PCI bus id, a kernel release',
      'driver 580.159.04 at [17:05:05.423] on 0000:00:06.0, kernel 6.18.44-fc-v657-gpu, 2026-11-29T17:04:21.011Z',
    ],
    ['rates and ratios with a slash, a public URL', '55.3 GB/s, max_gib/max_fraction, see https://docs.nvidia.com/cuda/'],
    ['serial as a word, not a label', 'serial copies were slower'],
    ['a Docker image digest', 'nvidia/cuda@sha256:0123abcd'],
    ['generic names (a default host or user name names no one)', 'root on localhost in ubuntu'],
  ])('leaves alone %s', (_what, text) => {
    expect(new Redaction(null, { hosts: ['localhost', 'ubuntu'], users: ['root'] }).text(text)).toBe(text);
  });

  it('a host or user named in a session is redacted wherever else it appears; every rule is idempotent', () => {
    const redaction = plain();
    const record = {
      observed: { session: 'ssh bob@node-b.example.net:2222', target: 'second' },
      cells: [{ reason: 'node-b.example.net closed; bob logged out; slurm job 12 on gpu07 failed, gpu07 drained' }],
    };
    redaction.learnFrom([record as never]);
    redaction.learnFrom([{ observed: { session: 'slurm job 12 on gpu07' } } as never]);
    const once = redaction.text(record.cells[0]!.reason);
    expect(once).toBe('<host> closed; <user> logged out; slurm job <job> on <node> failed, <host> drained');
    expect(redaction.text(once)).toBe(once);
    for (const text of ['<path>/x.so', '<path>\\x.dll', 'GPU-<uuid>', '<user>@<host>', 'tcp://<host>', 'Serial Number : <serial>'])
      expect(redaction.text(text)).toBe(text);
  });

  it('a value under a key that says serial, numbers included, and a key that is a UUID', () => {
    const redaction = Redaction.forSubmission(machine);
    const uuid = 'MIG-99999999-aaaa-bbbb-cccc-dddddddddddd';
    const evidence = { board_serial: 1652422045384, [uuid]: { profile_bytes: 1 } };
    const out = JSON.stringify(
      redaction.record({ sysinfo: {}, facts: { 'p.f': { value: true, evidence } }, observed: {}, key: {} } as never),
    );
    expect(out).not.toMatch(/1652422045384|99999999/);
    expect(out).toMatch(/"board_serial":"<serial-[0-9a-f]{8}>"/);
    expect(out).toMatch(/"MIG-<[0-9a-f]{8}>":\{"profile_bytes":1\}/);
  });
});

describe('salted pseudonyms (a submission)', () => {
  it('the same thing gets the same pseudonym in any case, two things two; another submission others', () => {
    const [one, two] = [Redaction.forSubmission(machine), Redaction.forSubmission(machine)];
    const uuids = ['GPU-8f3a2b1c-4d5e-6f70-8192-a3b4c5d6e7f8', 'GPU-11111111-2222-3333-4444-555555555555'];
    const [first, second] = uuids.map((uuid) => one.text(uuid));
    expect(first).toMatch(/^GPU-<[0-9a-f]{8}>$/);
    expect(second).not.toBe(first);
    expect(one.text(uuids[0]!.toLowerCase())).toBe(`gpu-${first!.slice(4)}`);
    expect(two.text(uuids[0]!)).not.toBe(first);
    expect(one.text('GPU-BOX-7')).toBe(one.text('gpu-box-7'));
    expect(one.replaced.get(uuids[0]!)).toBe(first);
  });

  it('fact values get the plain placeholders (they are compared across submissions); the GPU UUID field a pseudonym', () => {
    const redaction = Redaction.forSubmission(machine);
    const uuid = 'GPU-8f3a2b1c-4d5e-6f70-8192-a3b4c5d6e7f8';
    const record = redaction.record({
      sysinfo: { gpu_uuid: uuid },
      facts: { 'p.f': { value: `on ${uuid}`, reason: `on ${uuid}` } },
      observed: {},
      key: {},
    } as never);
    expect(record.facts['p.f']!.value).toBe('on GPU-<uuid>');
    expect(record.facts['p.f']!.reason).toBe(`on ${record.sysinfo.gpu_uuid}`);
    expect(record.sysinfo.gpu_uuid).toMatch(/^GPU-<[0-9a-f]{8}>$/);
    // A committed record leaves the field out.
    expect(plain().record({ sysinfo: { gpu_uuid: uuid }, facts: {}, observed: {}, key: {} } as never).sysinfo).toEqual({});
  });
});
