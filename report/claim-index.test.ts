/**
 * The answer per claim: the index built from the committed records (every claim of
 * docs/claims.md, counts that match the record files, links that resolve) and from a hand-built
 * folder of two environments and several drivers (counts, first and last driver, links), and
 * the pages and claims.json the report writes from it.
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { catalogue } from '../probes/catalogue.ts';
import { recordPath, type BehaviourRecord } from '../behaviour/behaviour-record.ts';
import { buildTable } from './behaviour-table.ts';
import { loadRecords } from './load.ts';
import { buildClaimIndex, claimTitles, environmentClass, gpuFamily, parseClaimTitles, type ClaimIndex } from './claim-index.ts';
import { renderReport, reportFiles, reportPaths } from './write-report.ts';
import { h200Records, loaded, variant } from '../test/report-fixture.ts';
import { repoRoot } from '../test/helpers.ts';

const recordsDir = path.join(repoRoot, 'records');
const claimsDir = path.join(recordsDir, 'claims');

describe('the claim index of the committed records', () => {
  const records = loadRecords(recordsDir);
  const index = buildClaimIndex(buildTable(records), claimTitles(), '..');

  it("has every claim of docs/claims.md, in its order, with its title, and the probes' claims are those claims", () => {
    const docs = parseClaimTitles(readFileSync(path.join(repoRoot, 'docs', 'claims.md'), 'utf8'));
    expect(docs.length).toBeGreaterThanOrEqual(28);
    expect(index.claims.map((claim) => [claim.id, claim.title])).toEqual(docs.map((claim) => [claim.id, claim.title]));
    // The specs and the docs agree: no probe cites a claim docs/claims.md does not head, no claim is left without a probe.
    const cited = new Set(catalogue.flatMap((spec) => spec.claims));
    expect([...cited].filter((id) => !docs.some((claim) => claim.id === id))).toEqual([]);
    expect(docs.filter((claim) => !cited.has(claim.id)).map((claim) => claim.id)).toEqual([]);
  });

  it('counts each claim as the record files say, in the environment they were observed in, linking to them', () => {
    const withFact = (fact: string) =>
      records.filter((loadedRecord) => fact in loadedRecord.record.facts).map((loadedRecord) => `../${loadedRecord.file}`);
    const c1 = index.claims.find((claim) => claim.id === 'C1')!;
    const expected = withFact('pinned-vram.counts_as_vram');
    expect(expected.length).toBeGreaterThan(1);
    // The committed records are of an H200 in Docker on Linux: every other class has none.
    const observed = c1.environments.filter((env) => env.observations > 0);
    expect(observed.map((env) => [env.environment, env.observations])).toEqual([['docker', expected.length]]);
    expect(c1.environments.find((env) => env.environment === 'wddm')).toMatchObject({ observations: 0, drivers: [], held: [] });
    const [driver] = observed[0]!.drivers;
    expect(driver).toMatchObject({ driver: '580.159.04', gpuFamily: 'Hopper (9.0)', gpus: ['NVIDIA H200'] });
    const values = driver!.facts.find((fact) => fact.fact === 'pinned-vram.counts_as_vram')!.values;
    expect(values.map((count) => [count.value, count.observations])).toEqual([[false, expected.length]]);
    expect([...values[0]!.records].sort()).toEqual([...expected].sort());
    for (const link of driver!.records) expect(existsSync(path.resolve(claimsDir, link)), link).toBe(true);
    expect(observed[0]!.held).toContainEqual(
      expect.objectContaining({
        fact: 'pinned-vram.counts_as_vram',
        value: false,
        firstDriver: '580.159.04',
        lastDriver: '580.159.04',
        drivers: 1,
      }),
    );
    // A Windows-only probe's claim: nothing observed anywhere.
    expect(index.claims.find((claim) => claim.id === 'C10')!.observations).toBe(0);
  });

  it('is what records/claims/claims.json holds (pnpm cudamatrix report writes it)', () => {
    const committed = JSON.parse(readFileSync(path.join(claimsDir, 'claims.json'), 'utf8')) as ClaimIndex;
    expect(committed).toEqual(JSON.parse(JSON.stringify(index)));
  });
});

describe('the claim index of two environments and several drivers', () => {
  let index: ClaimIndex;
  let files: Map<string, string>;
  let fixture: BehaviourRecord[];
  const link = (record: BehaviourRecord) => `../${recordPath(record)}`;

  beforeAll(async () => {
    const [first] = await h200Records();
    const linux = (id: string, driver: string, date: string) =>
      variant(first, id, (record) => {
        record.key = { ...record.key, container: null, driver };
        record.observed.date = date;
      });
    const wddm = (id: string, driver: string, counts: boolean | string) =>
      variant(first, id, (record) => {
        record.key = {
          environment: 'wddm',
          gpu: 'NVIDIA GeForce RTX 4090',
          driver,
          os: 'Windows 11 Pro',
          osBuild: '26100',
          container: null,
        };
        record.sysinfo = { ...record.sysinfo, compute_capability: '8.9' };
        record.facts['pinned-vram.counts_as_vram'] = { value: counts };
      });
    fixture = [
      linux('1111111111111111', '570.10', '2026-10-01T10:00:00.000Z'),
      linux('2222222222222222', '580.159.04', '2026-11-01T10:00:00.000Z'),
      linux('3333333333333333', '580.159.04', '2026-11-02T10:00:00.000Z'),
      wddm('4444444444444444', '581.57', true),
      wddm('5555555555555555', '590.10', 'partial'),
      wddm('6666666666666666', '591.44', true),
    ];
    const dir = path.join(repoRoot, 'records');
    const outputs = renderReport(
      loaded(fixture),
      reportPaths(dir, dir),
      parseClaimTitles('### C1: pinned counts\n\n### C2: freed pinned\n'),
    );
    files = new Map(reportFiles(outputs));
    index = JSON.parse(files.get('claims/claims.json')!) as ClaimIndex;
  });

  it('counts the observations per environment, driver and GPU family, with first and last driver where each value held', () => {
    expect(index.claims.map((claim) => claim.id)).toEqual(['C1', 'C2']);
    const c1 = index.claims[0]!;
    expect(c1.observations).toBe(6);
    const linux = c1.environments.find((env) => env.environment === 'linux')!;
    expect(linux.drivers.map((driver) => [driver.driver, driver.gpuFamily, driver.observations])).toEqual([
      ['570.10', 'Hopper (9.0)', 1],
      ['580.159.04', 'Hopper (9.0)', 2],
    ]);
    expect(linux.drivers[1]!.records).toEqual([link(fixture[1]!), link(fixture[2]!)]);
    expect(linux.held.find((span) => span.fact === 'pinned-vram.counts_as_vram')).toEqual({
      fact: 'pinned-vram.counts_as_vram',
      value: false,
      firstDriver: '570.10',
      lastDriver: '580.159.04',
      drivers: 2,
      observations: 3,
    });
    const wddm = c1.environments.find((env) => env.environment === 'wddm')!;
    expect(wddm.observations).toBe(3);
    expect(wddm.drivers.map((driver) => [driver.driver, driver.gpuFamily, driver.gpus])).toEqual([
      ['581.57', 'Ada Lovelace (8.9)', ['NVIDIA GeForce RTX 4090']],
      ['590.10', 'Ada Lovelace (8.9)', ['NVIDIA GeForce RTX 4090']],
      ['591.44', 'Ada Lovelace (8.9)', ['NVIDIA GeForce RTX 4090']],
    ]);
    const spans = wddm.held.filter((span) => span.fact === 'pinned-vram.counts_as_vram');
    expect(spans.map((span) => [span.value, span.firstDriver, span.lastDriver, span.drivers, span.observations])).toEqual([
      [true, '581.57', '591.44', 2, 2],
      ['partial', '590.10', '590.10', 1, 1],
    ]);
    const partial = wddm.drivers[1]!.facts.find((fact) => fact.fact === 'pinned-vram.counts_as_vram')!;
    expect(partial.values).toEqual([{ value: 'partial', observations: 1, records: [link(fixture[4]!)] }]);
    for (const envClass of ['tcc', 'mcdm', 'wsl2', 'wsl2-docker', 'docker'])
      expect(c1.environments.find((env) => env.environment === envClass)?.observations, envClass).toBe(0);
  });

  it("writes a page per claim that says 'no observation yet' where there is none, links the records and the docs, and runs no script", () => {
    expect([...files.keys()].filter((file) => file.startsWith('claims/'))).toEqual([
      'claims/index.html',
      'claims/claims.json',
      'claims/claims.css',
      'claims/C1.html',
      'claims/C2.html',
    ]);
    const page = files.get('claims/C1.html')!;
    expect(page).toContain('<h1>C1: pinned counts</h1>');
    expect(page).not.toMatch(/<script|src=|https?:/);
    for (const record of fixture) expect(page).toContain(`href="${link(record)}"`);
    // TCC, MCDM, WSL2, Docker on WSL2 and Docker on Linux have no observation.
    expect(page.match(/<td data-label="answer" class="text none">no observation yet<\/td>/g)).toHaveLength(5);
    expect(page).toContain('href="../../docs/measure-your-machine.md"');
    expect(page).toContain('href="../behaviour.html"');
    expect(page).toMatch(
      /<tr><th><code class="ident">pinned-vram\.<wbr>counts_<wbr>as_<wbr>vram<\/code><\/th>.*?<td data-label="first driver">581\.57<\/td><td data-label="last driver">591\.44<\/td>/,
    );
    expect(files.get('behaviour.html')).toContain('href="claims/index.html"');
    expect(files.get('claims/index.html')).toContain('<a href="C1.html#env-wddm">3 observations</a>');
  });
});

describe('environment classes and GPU families', () => {
  it('tells a container apart from its host environment', () => {
    const key = { environment: 'linux', gpu: 'x', driver: '1', os: 'y', osBuild: null, container: null };
    expect(environmentClass(key)).toBe('linux');
    expect(environmentClass({ ...key, container: 'docker' })).toBe('docker');
    expect(environmentClass({ ...key, environment: 'wsl2', container: 'docker' })).toBe('wsl2-docker');
    expect(environmentClass({ ...key, environment: 'wsl2-docker' })).toBe('wsl2-docker');
    expect(environmentClass({ ...key, environment: 'tcc' })).toBe('tcc');
  });

  it('names the family of a compute capability', () => {
    expect([gpuFamily('9.0'), gpuFamily('8.6'), gpuFamily('12.0'), gpuFamily('3.5'), gpuFamily(null)]).toEqual([
      'Hopper (9.0)',
      'Ampere (8.6)',
      'Blackwell (12.0)',
      'compute capability 3.5',
      'unknown',
    ]);
  });
});
