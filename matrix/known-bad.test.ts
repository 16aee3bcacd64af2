/**
 * The known-bad driver registry: the committed file is valid and sourced, its JSON Schema is
 * current, versions compare numerically, ranges match by OS, model and GPU, and a bad file is
 * refused naming the file, the entry and the field.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import Ajv2020 from 'ajv/dist/2020.js';
import { describe, expect, it } from 'vitest';
import { parseDocument } from 'yaml';
import { probeNames } from '../probes/catalogue.ts';
import {
  compareDriverVersions,
  driverSubjectOf,
  type KnownBadEntry,
  KnownBadError,
  knownBadFor,
  knownBadLine,
  loadKnownBad,
  parseKnownBad,
} from './known-bad.ts';
import { knownBadSchemaText } from './write-schema.ts';

const here = import.meta.dirname;
const yamlFile = path.join(here, 'known-bad-drivers.yaml');
const claimIds = [...readFileSync(path.join(here, '..', 'docs', 'claims.md'), 'utf8').matchAll(/^### (C\d+):/gm)].map((match) => match[1]!);

function entry(over: Partial<KnownBadEntry> = {}): KnownBadEntry {
  return {
    id: 'test-entry',
    drivers: [{ os: 'windows', models: ['wddm'], from: '591.32', before: '591.59' }],
    symptom: 'something the driver does wrong',
    fixedIn: '591.59',
    source: 'https://github.com/example/repo/issues/1',
    trust: 'single-report',
    concerns: [],
    ...over,
  };
}

describe('matrix/known-bad-drivers.yaml', () => {
  const entries = loadKnownBad(yamlFile);

  it('parses and validates, with at least ten sourced entries and unique ids', () => {
    expect(entries.length).toBeGreaterThanOrEqual(10);
    expect(new Set(entries.map((e) => e.id)).size).toBe(entries.length);
  });

  it('gives every entry a public https source and a symptom', () => {
    for (const e of entries) {
      expect(new URL(e.source).protocol, e.id).toBe('https:');
      expect(e.symptom.length, e.id).toBeGreaterThan(20);
    }
  });

  it('names in concerns only probes of the catalogue and claims of docs/claims.md', () => {
    expect(claimIds).toContain('C28');
    for (const e of entries) {
      for (const concern of e.concerns) expect([...probeNames(), ...claimIds], `${e.id}: ${concern}`).toContain(concern);
    }
  });

  it('ends a range only at the fix it names (before is fixedIn), and leaves it open without one', () => {
    for (const e of entries) {
      for (const range of e.drivers) {
        if (e.fixedIn === null) expect(range.before, e.id).toBeUndefined();
        else if (range.before !== undefined) expect(range.before, e.id).toBe(e.fixedIn);
      }
    }
  });

  it('validates against matrix/known-bad-drivers.schema.json, which is current ("pnpm schema")', () => {
    const committed = readFileSync(path.join(here, 'known-bad-drivers.schema.json'), 'utf8');
    expect(committed).toBe(knownBadSchemaText());
    const ajv = new Ajv2020.default({
      allErrors: true,
      strict: true,
      strictRequired: false,
      allowUnionTypes: true,
      validateFormats: false,
    });
    const validate = ajv.compile(JSON.parse(committed) as object);
    const ok = validate(parseDocument(readFileSync(yamlFile, 'utf8')).toJS());
    expect(ok ? [] : validate.errors).toEqual([]);
    expect(validate({ version: 1, entries: [{ ...entry(), concerns: ['no-such-probe'] }] })).toBe(false);
    expect(validate({ version: 1, entries: [{ ...entry(), concerns: ['transfer-bandwidth', 'C8'] }] })).toBe(true);
  });
});

describe('driver versions compare numerically, part by part', () => {
  it.each([
    ['580.159.04', '580.95.05', 1],
    ['580.95.05', '580.159.04', -1],
    ['591.59', '591.59', 0],
    ['580', '580.0.0', 0],
    ['580.65.06', '580', 1],
    ['1000.1', '999.99', 1],
  ])('%s vs %s: %i', (left, right, sign) => {
    expect(compareDriverVersions(left, right)).toBe(sign);
  });
});

describe('knownBadFor', () => {
  const windows = entry();
  const linuxOpen = entry({ id: 'linux-open', drivers: [{ os: 'linux', from: '580' }], fixedIn: null });
  const rtx50 = entry({
    id: 'rtx50',
    drivers: [{ os: 'windows', from: '576.02', before: '576.28' }],
    gpus: ['*RTX 50*'],
    fixedIn: '576.28',
  });
  const all = [windows, linuxOpen, rtx50];
  const ids = (subject: Parameters<typeof knownBadFor>[0]) => knownBadFor(subject, all).map((e) => e.id);

  it('includes from and excludes before', () => {
    expect(ids({ driver: '591.31', os: 'windows', model: 'wddm' })).toEqual([]);
    expect(ids({ driver: '591.32', os: 'windows', model: 'wddm' })).toEqual(['test-entry']);
    expect(ids({ driver: '591.58', os: 'windows', model: 'wddm' })).toEqual(['test-entry']);
    expect(ids({ driver: '591.59', os: 'windows', model: 'wddm' })).toEqual([]);
  });

  it('leaves a range without before open, and takes "580" as every 580.x', () => {
    expect(ids({ driver: '575.64', os: 'linux' })).toEqual([]);
    expect(ids({ driver: '580.65.06', os: 'linux' })).toEqual(['linux-open']);
    expect(ids({ driver: '610.1', os: 'linux' })).toEqual(['linux-open']);
  });

  it('filters by OS and by Windows driver model', () => {
    expect(ids({ driver: '591.40', os: 'wsl2' })).toEqual([]);
    expect(ids({ driver: '591.40', os: 'windows', model: 'tcc' })).toEqual([]);
    expect(ids({ driver: '591.40', os: 'windows' })).toEqual([]);
    expect(ids({ driver: '580.65.06', os: 'wsl2' })).toEqual([]);
  });

  it('matches GPU globs on the name sysinfo gives, case-insensitively; a GPU-limited entry needs the GPU', () => {
    expect(ids({ driver: '576.02', os: 'windows', model: 'wddm', gpu: 'NVIDIA GeForce RTX 5090' })).toEqual(['rtx50']);
    expect(ids({ driver: '576.02', os: 'windows', model: 'wddm', gpu: 'nvidia geforce rtx 5070 ti' })).toEqual(['rtx50']);
    expect(ids({ driver: '576.02', os: 'windows', model: 'wddm', gpu: 'NVIDIA GeForce RTX 4090' })).toEqual([]);
    expect(ids({ driver: '576.02', os: 'windows', model: 'wddm' })).toEqual([]);
    expect(ids({ driver: '576.28', os: 'windows', model: 'tcc', gpu: 'NVIDIA GeForce RTX 5090' })).toEqual([]);
  });

  it('takes OS and model from sysinfo: environment, driver_model, driver_version, gpu_name', () => {
    expect(driverSubjectOf({ environment: 'linux', driver_version: '580.159.04', gpu_name: 'NVIDIA H200' })).toEqual({
      driver: '580.159.04',
      os: 'linux',
      gpu: 'NVIDIA H200',
    });
    expect(driverSubjectOf({ environment: 'wsl2-docker', driver_version: '591.86' })).toEqual({ driver: '591.86', os: 'wsl2' });
    expect(driverSubjectOf({ environment: 'wddm', driver_model: 'wddm', driver_version: '591.40' })).toEqual({
      driver: '591.40',
      os: 'windows',
      model: 'wddm',
    });
    expect(driverSubjectOf({ environment: 'tcc', driver_model: null, driver_version: '591.40' })?.model).toBe('tcc');
    expect(driverSubjectOf({ environment: 'linux', driver_version: null })).toBeUndefined();
    expect(driverSubjectOf({ environment: null, driver_version: '580.159.04' })).toBeUndefined();
  });

  it('says an entry in one line: symptom, OS and range, fix, source and trust', () => {
    expect(knownBadLine(windows)).toBe(
      'known-bad driver: something the driver does wrong (windows wddm, from 591.32 before 591.59; fixed in 591.59; source https://github.com/example/repo/issues/1, single-report)',
    );
    expect(knownBadLine(linuxOpen)).toBe(
      'known-bad driver: something the driver does wrong (linux, from 580 on; not fixed; source https://github.com/example/repo/issues/1, single-report)',
    );
    expect(knownBadLine(rtx50)).toContain('(windows, from 576.02 before 576.28, GPUs *RTX 50*; fixed in 576.28;');
  });
});

describe('a bad registry is refused, naming the file, the entry and the field', () => {
  const head = 'version: 1\nentries:\n';
  const good = `  - id: fine-entry
    drivers: [{os: linux, from: "580"}]
    symptom: something the driver does wrong
    fixedIn: null
    source: https://github.com/example/repo/issues/1
    trust: single-report
    concerns: []
`;
  const refuse = (text: string) => {
    try {
      parseKnownBad(text, 'bad.yaml');
    } catch (error) {
      expect(error).toBeInstanceOf(KnownBadError);
      return error as KnownBadError;
    }
    throw new Error('accepted a bad registry');
  };

  it('a field of the wrong form: file, entry index and id, and the field path', () => {
    const e = refuse(head + good + good.replace('fine-entry', 'second').replace('from: "580"', 'from: "580.x"'));
    expect(e.message).toMatch(/^bad\.yaml: entry 1 \(second\), field drivers\[0\]\.from: a driver version is dot-separated numbers/m);
    expect(e.file).toBe('bad.yaml');
    expect(e.entry).toEqual({ index: 1, id: 'second' });
    expect(e.field).toBe('drivers[0].from');
    expect(e.code).toBe('MATRIX_INVALID');
  });

  it('an unknown concern, a bad trust, a missing source, models off Windows, an end without a fix', () => {
    expect(refuse(head + good.replace('concerns: []', 'concerns: [bandwith]')).message).toMatch(
      /entry 0 \(fine-entry\), field concerns\[0\]: "bandwith" is neither a probe/,
    );
    expect(refuse(head + good.replace('trust: single-report', 'trust: rumour')).message).toMatch(/entry 0 \(fine-entry\), field trust:/);
    expect(refuse(head + good.replace(/ {4}source: .*\n/, '')).message).toMatch(/entry 0 \(fine-entry\), field source:/);
    expect(refuse(head + good.replace('{os: linux, from: "580"}', '{os: linux, models: [wddm], from: "580"}')).message).toMatch(
      /field drivers\[0\]\.models: models are for os: windows, not linux/,
    );
    expect(refuse(head + good.replace('from: "580"', 'from: "580", before: "590"')).message).toMatch(
      /field drivers\[0\]\.before: a range ends \(before\) but fixedIn is null/,
    );
    expect(
      refuse(head + good.replace('from: "580"', 'from: "580", before: "570"').replace('fixedIn: null', 'fixedIn: "570"')).message,
    ).toMatch(/field drivers\[0\]\.before: before \(570\) must be above from \(580\)/);
  });

  it('a duplicate id, an unknown key, and YAML that does not parse', () => {
    expect(refuse(head + good + good).message).toMatch(/bad\.yaml: entry 1 \(fine-entry\), field id: the id of entry 0 too/);
    expect(refuse(head + good.replace('    trust:', '    trusted: yes\n    trust:')).message).toMatch(
      /entry 0 \(fine-entry\), field \(the entry\): .*trusted/,
    );
    expect(refuse('version: 1\nentries: [\n').message).toMatch(/^bad\.yaml: not valid YAML/);
  });
});
