/**
 * Unpacks the package tarball that `pnpm pack` writes (gzip over ustar, with pax headers for long
 * names), with nothing but Node.js: the action must run on a runner that has only the runner, and
 * `tar` is not on every Windows machine a runner may be (nor the same tar where it is).
 *
 * Only what a package holds is accepted: regular files and folders under package/. An entry whose
 * path leaves the folder (an absolute path, a drive, a `..` part, a backslash), a link, a device or
 * a FIFO is refused, naming it: a tarball with one is not a package, and unpacking it could write
 * outside the folder.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { gunzipSync } from 'node:zlib';

const BLOCK = 512;

export class TarError extends Error {}

/** A NUL-terminated text field of a header. */
function text(header, offset, length) {
  const field = header.subarray(offset, offset + length);
  const end = field.indexOf(0);
  return field.subarray(0, end === -1 ? length : end).toString('utf8');
}

/** A numeric field: octal text, or base-256 when its first byte has the high bit (GNU, for big sizes). */
function number(header, offset, length, what) {
  const field = header.subarray(offset, offset + length);
  if (field[0] & 0x80) {
    let value = field[0] & 0x7f;
    for (let i = 1; i < length; i++) value = value * 256 + field[i];
    return value;
  }
  const digits = text(header, offset, length).trim();
  if (digits === '') return 0;
  if (!/^[0-7]+$/.test(digits)) throw new TarError(`a header's ${what} field is not a number (${JSON.stringify(digits)})`);
  return parseInt(digits, 8);
}

/** The header checksum: the sum of its bytes, with the checksum field itself counted as spaces. */
function checksumOk(header) {
  let sum = 0;
  for (let i = 0; i < BLOCK; i++) sum += i >= 148 && i < 156 ? 0x20 : header[i];
  return sum === number(header, 148, 8, 'checksum');
}

/** Pax extended header records: "<length> <key>=<value>\n", lengths in bytes. */
function paxRecords(data) {
  const records = {};
  let at = 0;
  while (at < data.length) {
    const space = data.indexOf(0x20, at);
    const length = Number(data.subarray(at, space).toString('ascii'));
    if (space === -1 || !Number.isInteger(length) || length <= 0 || at + length > data.length)
      throw new TarError('a pax header is malformed');
    const record = data.subarray(space + 1, at + length - 1).toString('utf8');
    const equals = record.indexOf('=');
    if (equals > 0) records[record.slice(0, equals)] = record.slice(equals + 1);
    at += length;
  }
  return records;
}

/**
 * The entries of an uncompressed tar archive: { name, type, mode, data }. Pax ('x') and GNU long
 * name ('L') headers are applied to the entry after them; global pax headers ('g') are ignored.
 */
export function readTar(archive) {
  const entries = [];
  let at = 0;
  let pax = {};
  let longName;
  while (at + BLOCK <= archive.length) {
    const header = archive.subarray(at, at + BLOCK);
    // The archive ends with two blocks of zeros (one is enough to stop: nothing follows a zero header).
    if (header.every((b) => b === 0)) return entries;
    if (!checksumOk(header)) throw new TarError(`the header at byte ${at} has a wrong checksum (the tarball is damaged)`);
    const size = pax.size !== undefined ? Number(pax.size) : number(header, 124, 12, 'size');
    const type = String.fromCharCode(header[156] || 0x30);
    const dataStart = at + BLOCK;
    if (dataStart + size > archive.length)
      throw new TarError(`the tarball ends inside an entry (${size} bytes announced at byte ${at}): it is cut short`);
    const data = archive.subarray(dataStart, dataStart + size);
    at = dataStart + Math.ceil(size / BLOCK) * BLOCK;
    if (type === 'x') {
      pax = { ...pax, ...paxRecords(data) };
      continue;
    }
    if (type === 'g') continue;
    if (type === 'L') {
      longName = text(data, 0, data.length);
      continue;
    }
    let name = text(header, 0, 100);
    if (text(header, 257, 5) === 'ustar') {
      const prefix = text(header, 345, 155);
      if (prefix) name = `${prefix}/${name}`;
    }
    name = pax.path ?? longName ?? name;
    entries.push({ name, type, mode: number(header, 100, 8, 'mode'), data });
    pax = {};
    longName = undefined;
  }
  if (at < archive.length || entries.length === 0)
    throw new TarError('the tarball ends without its end-of-archive blocks: it is cut short');
  return entries;
}

const KINDS = { 1: 'a hard link', 2: 'a symbolic link', 3: 'a character device', 4: 'a block device', 6: 'a FIFO' };

/**
 * The path of an entry below `root`, or a TarError naming the entry. A package's entries all lie
 * under package/, as npm and pnpm write them.
 */
function target(root, name) {
  const parts = name.replace(/\/+$/, '').split('/');
  const bad =
    name.includes('\\') ||
    name.includes('\0') ||
    name.startsWith('/') ||
    /^[a-zA-Z]:/.test(name) ||
    parts.some((p) => p === '..' || p.includes(':')) ||
    parts[0] !== 'package';
  const file = path.resolve(root, ...parts.filter((p) => p !== '' && p !== '.'));
  const relative = path.relative(root, file);
  if (bad || relative.startsWith('..') || path.isAbsolute(relative)) {
    throw new TarError(
      `the entry ${JSON.stringify(name)} lies outside package/ (a package's entries all lie under package/); nothing of it was written`,
    );
  }
  return file;
}

/**
 * Gunzips and unpacks a package tarball into `root` (which must not exist yet or be empty).
 * Checks every entry before writing any, so a refused tarball leaves nothing behind but `root`.
 */
export function extractPackage(gzipped, root) {
  let archive;
  try {
    archive = gunzipSync(gzipped);
  } catch (error) {
    throw new TarError(`it is not a gzip-compressed tarball (${error.message})`);
  }
  const entries = readTar(archive);
  const planned = entries.map((e) => {
    if (e.type in KINDS)
      throw new TarError(`the entry ${JSON.stringify(e.name)} is ${KINDS[e.type]}, which a package never holds; nothing was written`);
    if (!['0', '7', '5'].includes(e.type))
      throw new TarError(`the entry ${JSON.stringify(e.name)} has the unknown type ${JSON.stringify(e.type)}; nothing was written`);
    return { ...e, file: target(root, e.name) };
  });
  for (const e of planned) {
    if (e.type === '5') {
      mkdirSync(e.file, { recursive: true });
      continue;
    }
    mkdirSync(path.dirname(e.file), { recursive: true });
    // Executable bits kept (the bin script), nothing else: no set-id, no group/other write.
    writeFileSync(e.file, e.data, { mode: e.mode & 0o111 ? 0o755 : 0o644 });
  }
  return planned.filter((e) => e.type !== '5').length;
}
