/**
 * matrix/schema.json checked with a real JSON Schema validator: it refuses the malformed matrices
 * the loader refuses (but for a few it cannot express), and accepts every matrix we ship.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import Ajv2020 from 'ajv/dist/2020.js';
import { describe, expect, it } from 'vitest';
import { parseDocument } from 'yaml';
import { MatrixError } from './errors.ts';
import { parseMatrix } from './load.ts';

const here = import.meta.dirname;
const fixtures = path.join(here, '..', 'test', 'fixtures', 'matrix-invalid');
const schema = JSON.parse(readFileSync(path.join(here, 'schema.json'), 'utf8')) as Record<string, unknown>;

/** Malformed matrices that JSON Schema cannot refuse, and why. Keep it short. */
const beyondJsonSchema: Record<string, string> = {
  'duplicate-target.yaml': 'target names must be unique: uniqueItems compares whole items, not one key of them',
  'expect-probe-not-run.yaml':
    "an expectation must name a probe its target runs: a cross-reference to the target's (or the defaults') probe list",
  'secret-private-key.yaml': 'a private key pasted into a text value: any string may hold one, and the loader looks in all of them',
  'slurm-nodes-product-too-large.yaml': 'a hostlist that names too many nodes: the count is the product of its ranges, not a length',
};

/** Fixtures that are not YAML the validator could be given: the loader stops at the YAML. */
const notYaml = (file: string) => file.startsWith('syntax-');

let compiled: ReturnType<typeof compile> | undefined;
const validator = () => (compiled ??= compile());

function compile() {
  // Strict, but for three idioms: "required" in a subschema (the keys are declared beside it),
  // union types (zod writes type: [string, number] for a union of primitives), and an open tuple
  // (a transport chain: the first hop of any kind, then any number of hops that can follow one).
  const ajv = new Ajv2020.default({ allErrors: true, strict: true, strictRequired: false, allowUnionTypes: true, strictTuples: false });
  return ajv.compile(schema);
}

function readYaml(file: string): { value: unknown; yamlErrors: number } {
  const doc = parseDocument(readFileSync(file, 'utf8'), { uniqueKeys: true, strict: true, stringKeys: true });
  const yamlErrors = doc.errors.length + doc.warnings.length;
  let value: unknown;
  try {
    value = yamlErrors ? undefined : doc.toJS({ maxAliasCount: 100 });
  } catch {
    value = undefined; // too many alias expansions: the loader refuses it before the schema
  }
  return { value, yamlErrors };
}

describe('matrix/schema.json with a JSON Schema validator', () => {
  it('is JSON Schema 2020-12, and compiles in strict mode', () => {
    expect(schema.$schema).toBe('https://json-schema.org/draft/2020-12/schema');
    expect(() => validator()).not.toThrow();
  });

  it('refuses every malformed matrix of test/fixtures/matrix-invalid, but those it cannot express', () => {
    const validate = validator();
    const files = readdirSync(fixtures)
      .filter((fileName) => fileName.endsWith('.yaml'))
      .sort();
    expect(files.length).toBeGreaterThanOrEqual(50);
    const passing: string[] = [];
    for (const file of files) {
      const { value, yamlErrors } = readYaml(path.join(fixtures, file));
      if (yamlErrors) {
        expect(notYaml(file), `${file} is not valid YAML; name it syntax-*.yaml`).toBe(true);
        continue;
      }
      expect(notYaml(file), `${file} is valid YAML; a syntax-* fixture should not be`).toBe(false);
      if (value !== undefined && validate(value)) passing.push(file);
    }
    expect(passing).toEqual(Object.keys(beyondJsonSchema).sort());
  });

  it('accepts matrix/default.yaml and every example (no false alarms in an editor)', () => {
    const validate = validator();
    const files = ['default.yaml', ...readdirSync(path.join(here, 'examples')).map((fileName) => path.join('examples', fileName))];
    for (const file of files) {
      const { value } = readYaml(path.join(here, file));
      const ok = validate(value);
      expect(ok ? [] : validate.errors, file).toEqual([]);
    }
  });

  it('accepts what the loader accepts: every form of probes, params, expectations and transports', () => {
    const validate = validator();
    const matrices = [
      `version: 1
defaults: {probes: [sysinfo, pinned-vram], timeout: 90s, device: 1, params: {pinned-vram: {sizes_gib: [0.5], apis: [driver], wait_s: 0}, sysinfo: {}}}
expectations:
  all: [{fact: sysinfo.driver_found, equals: true, why: the driver is there}]
  linux: [{fact: sysinfo.tcc_driver, equals: false}, {fact: sysinfo.environment, equals: null}]
  wsl2: [{fact: sysinfo.wsl_version, equals: 2}, {fact: sysinfo.gpu_name, equals: NVIDIA H200}]
targets:
  - name: a
  - name: b.c_d-1
    environment: wsl2
    transport: [local]
    probes: all
    timeout: 500ms
    params: {transfer-bandwidth: {sizes_mib: [1], repetitions: 20}, cuda-log: {log_level: ''}}
    expect:
      - {metric: sync-latency.p50_us, "<=": 50 us}
      - {metric: sync-latency.p99_us, ">=": 0.5, "<=": "2 ms"}
      - {metric: transfer-bandwidth.bandwidth_gbps, ">=": 10 GB/s, where: {direction: h2d, size_bytes: 1048576}}
      - {metric: pinned-vram.device_growth_bytes, between: [0, 1 GiB]}
      - {metric: transfer-bandwidth.pageable_pinned_ratio, between: ["50 %", 1e2 percent]}
  - name: d
    transport: {kind: docker, endpoint: "ssh://me@gpu-box:2222", gpus: ["0"], image: cudamatrix-probe:local}
  - name: e
    transport: [{kind: ssh, host: gpu-box, identityFile: ~/.ssh/id_ed25519, sshConfig: false}]
  - name: f
    transport: {kind: docker, context: lab-box}
`,
    ];
    for (const text of matrices) {
      expect(() => parseMatrix(text, 'ok.yaml', { checkFiles: false })).not.toThrow();
      const ok = validate(parseDocument(text).toJS());
      expect(ok ? [] : validate.errors).toEqual([]);
    }
  });

  it('refuses, like the loader, what only the catalogue and the transports know', () => {
    const validate = validator();
    const bad = {
      'a probe in "all"': 'probes: all-of-them',
      'an unknown parameter': 'params: {pinned-vram: {size_gib: 1}}',
      'a parameter of the wrong type': 'params: {sync-latency: {iterations: lots}}',
      'a value no fact takes': 'expect: [{fact: pinned-release.released, equals: sometimes}]',
      'a bound in another unit': 'expect: [{metric: sync-latency.p50_us, "<=": 5 GiB}]',
      'a bound in no unit at all': 'expect: [{metric: sync-latency.p50_us, between: [1, 5 fortnights]}]',
      'a fact with a bound': 'expect: [{fact: sysinfo.tcc_driver, equals: false, "<=": 1}]',
      'a metric without a bound': 'expect: [{metric: sync-latency.p50_us}]',
      'a chain that local follows': 'transport: [{kind: ssh, host: h}, local]',
      'an engine by endpoint and context': 'transport: {kind: docker, endpoint: "tcp://h:2376", context: lab}',
      'an ssh path with ~user': 'transport: {kind: ssh, host: h, knownHosts: ~bob/known_hosts}',
    };
    for (const [what, line] of Object.entries(bad)) {
      const text = `version: 1\ntargets:\n  - name: a\n    ${line}\n`;
      expect(() => parseMatrix(text, 'bad.yaml'), what).toThrow(MatrixError);
      expect(validate(parseDocument(text).toJS()), what).toBe(false);
    }
  });
});
