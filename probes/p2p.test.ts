/**
 * The p2p probe without GPUs: its no-driver path for real, and its decisions (probes/p2p_topology.cpp,
 * the same code the probe calls) on handwritten topologies fed to `cudaprobe selftest p2p-*`:
 * what cuDeviceCanAccessPeer, nvmlDeviceGetTopologyCommonAncestor, nvmlDeviceGetP2PStatus and
 * the NVLink state would report on the machines the claims are about. The multi-GPU run itself
 * is the device machine's (docs/probes.md, "p2p").
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, realpathSync } from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { integrationAvailable, testCacheDir } from '../test/helpers.ts';
import { nodeArch } from '../transports/local.ts';
import { buildProbe, type ProbeBinary } from './build.ts';
import { probeSpec } from './catalogue.ts';
import { parseProbeOutput, type FactRecord, type ProbeRecord } from './protocol.ts';

let probe: ProbeBinary;
beforeAll(async () => {
  probe = await buildProbe({ platform: 'linux', arch: nodeArch(), cacheDir: testCacheDir });
});

function selftest(mode: string, input: unknown): { code: number | null; records: ProbeRecord[] } {
  const result = spawnSync(probe.path, ['selftest', mode], { input: JSON.stringify(input), encoding: 'utf8' });
  const out = parseProbeOutput(result.stdout);
  expect(out.problems).toEqual([]);
  return { code: result.status, records: out.records };
}

function facts(records: ProbeRecord[]): Record<string, FactRecord> {
  return Object.fromEntries(records.filter((record): record is FactRecord => record.type === 'fact').map((fact) => [fact.name, fact]));
}

// nvmlGpuTopologyLevel_t and nvmlGpuP2PStatus_t, as NVML numbers them.
const SINGLE = 10,
  HOSTBRIDGE = 30,
  SYSTEM = 50;
const OK = 0,
  CHIPSET_NOT_SUPPORTED = 1,
  IOH_TOPOLOGY_NOT_SUPPORTED = 3,
  NOT_SUPPORTED = 5;
const devices = (count: number, mig: number[] = []) =>
  Array.from({ length: count }, (_, i) => ({ index: i, uuid: `GPU-${i}`, mig: mig.includes(i) }));
const pair = (deviceA: number, deviceB: number, fields: Record<string, unknown>) => ({ a: deviceA, b: deviceB, ...fields });
// An HGX board: every pair through the NVSwitches with 18 links, CUDA and NVML say yes.
const hgxPair = { can_ab: 1, can_ba: 1, ancestor: SYSTEM, nvml_read: OK, nvml_write: OK, nvml_nvlink: OK, nvlinks: 18 };

describe('p2p: the pairs and their link class', () => {
  it('pairs four GPUs six times, each once, and names their NVLink as nvidia-smi topo -m does', () => {
    const pairs = [];
    for (let deviceA = 0; deviceA < 4; deviceA++)
      for (let deviceB = deviceA + 1; deviceB < 4; deviceB++) pairs.push(pair(deviceA, deviceB, hgxPair));
    const { code, records } = selftest('p2p-topology', { devices: devices(4), pairs });
    expect(code).toBe(0);
    const reported = facts(records);
    expect(reported.pair_count!.value).toBe(6);
    expect(reported.link_class).toMatchObject({ value: 'NV18', evidence: { '0-1': 'NV18', '0-3': 'NV18', '2-3': 'NV18' } });
    expect(Object.keys(reported.link_class!.evidence!)).toEqual(['0-1', '0-2', '0-3', '1-2', '1-3', '2-3']);
    expect(reported.can_access_peer!.value).toBe(true);
    expect(reported.capability_agrees!.value).toBe(true);
  });

  it('takes the PCIe class from the common ancestor when there is no NVLink, and says mixed when pairs differ', () => {
    const pairs = [
      pair(0, 1, { can_ab: 1, can_ba: 1, ancestor: SINGLE, nvml_read: OK, nvml_write: OK, nvml_nvlink: NOT_SUPPORTED }),
      pair(0, 2, { can_ab: 1, can_ba: 1, ancestor: HOSTBRIDGE, nvml_read: OK, nvml_write: OK, nvml_nvlink: NOT_SUPPORTED }),
      pair(1, 2, { can_ab: 1, can_ba: 1, ancestor: SYSTEM, nvml_read: OK, nvml_write: OK, nvml_nvlink: NOT_SUPPORTED }),
    ];
    const reported = facts(selftest('p2p-topology', { devices: devices(3), pairs }).records);
    expect(reported.link_class).toMatchObject({ value: 'mixed', evidence: { '0-1': 'PIX', '0-2': 'PHB', '1-2': 'SYS' } });
  });

  it('reports no peer access where the GPUs have none (L40S-like: NCCL error 217), and that CUDA and NVML agree on it', () => {
    const pairs = [
      pair(0, 1, {
        can_ab: 0,
        can_ba: 0,
        ancestor: HOSTBRIDGE,
        nvml_read: CHIPSET_NOT_SUPPORTED,
        nvml_write: CHIPSET_NOT_SUPPORTED,
        nvml_nvlink: NOT_SUPPORTED,
      }),
    ];
    const reported = facts(selftest('p2p-topology', { devices: devices(2), pairs }).records);
    expect(reported.can_access_peer!.value).toBe(false);
    expect(reported.nvml_p2p_read!.value).toBe('CHIPSET_NOT_SUPPORTED');
    expect(reported.capability_agrees!.value).toBe(true);
    expect(reported.link_class!.value).toBe('PHB');
  });

  it('flags a pair where cuDeviceCanAccessPeer says yes and NVML says the topology does not support it', () => {
    const pairs = [
      pair(0, 1, hgxPair),
      pair(0, 2, {
        can_ab: 1,
        can_ba: 1,
        ancestor: SYSTEM,
        nvml_read: IOH_TOPOLOGY_NOT_SUPPORTED,
        nvml_write: OK,
        nvml_nvlink: NOT_SUPPORTED,
      }),
      pair(1, 2, hgxPair),
    ];
    const reported = facts(selftest('p2p-topology', { devices: devices(3), pairs }).records);
    expect(reported.capability_agrees).toMatchObject({ value: false, evidence: { '0-1': true, '0-2': false, '1-2': true } });
    expect(reported.can_access_peer!.value).toBe(true);
    expect(reported.nvml_p2p_read).toMatchObject({ value: 'mixed', evidence: { '0-2': 'IOH_TOPOLOGY_NOT_SUPPORTED' } });
  });

  it('counts an NVLink that NVML reports but whose links it cannot count as NV (WSL2-like readings are null with the reason)', () => {
    const nv = [pair(0, 1, { can_ab: 1, can_ba: 1, ancestor: -1, nvml_read: OK, nvml_write: OK, nvml_nvlink: OK, nvlinks: 0 })];
    expect(facts(selftest('p2p-topology', { devices: devices(2), pairs: nv }).records).link_class!.value).toBe('NV');
    // NVML without the topology calls: every NVML answer unknown, CUDA's still there.
    const unknown = [pair(0, 1, { can_ab: 1, can_ba: 1, unknown_why: 'nvmlDeviceGetTopologyCommonAncestor failed or is missing' })];
    const reported = facts(selftest('p2p-topology', { devices: devices(2), pairs: unknown }).records);
    expect(reported.link_class).toMatchObject({
      value: null,
      reason: expect.stringContaining('pair 0-1: nvmlDeviceGetTopologyCommonAncestor failed'),
    });
    expect(reported.capability_agrees!.value).toBeNull();
    expect(reported.can_access_peer!.value).toBe(true);
  });

  it('leaves a GPU in MIG mode out of the pairs', () => {
    const pairs = [pair(0, 1, hgxPair), pair(0, 2, hgxPair), pair(1, 2, hgxPair)];
    const reported = facts(selftest('p2p-topology', { devices: devices(3, [1]), pairs }).records);
    expect(reported.pair_count!.value).toBe(1);
    expect(Object.keys(reported.link_class!.evidence!)).toEqual(['0-2']);
  });

  it("has nothing to pair on one device: the skip with its reason, exit 3 (the probe's one-device path)", () => {
    const one = selftest('p2p-topology', { devices: devices(1), pairs: [] });
    expect(one.code).toBe(3);
    expect(facts(one.records).pair_count!.value).toBe(0);
    expect(one.records.at(-1)).toMatchObject({ type: 'skip', reason: 'p2p needs two or more GPUs outside MIG: 1 device present' });
    const mig = selftest('p2p-topology', { devices: devices(2, [1]), pairs: [pair(0, 1, hgxPair)] });
    expect(mig.records.at(-1)).toMatchObject({
      type: 'skip',
      reason: 'p2p needs two or more GPUs outside MIG: 2 devices present, 1 in MIG mode',
    });
  });
});

describe('p2p: a copy without peer access staged through the host', () => {
  const staged = (input: Record<string, unknown>) => facts(selftest('p2p-staged', input).records).staged_through_host!;

  it('is staged when it is no faster than the host path and far slower than the peer path (NVLink)', () => {
    expect(staged({ peer_possible: true, off_gbps: 38, on_gbps: 360, host_gbps: 40 }).value).toBe(true);
  });

  it("is direct when it runs at the peer path's speed, above what the host path allows", () => {
    expect(staged({ peer_possible: true, off_gbps: 350, on_gbps: 360, host_gbps: 40 }).value).toBe(false);
  });

  it('cannot tell on a PCIe pair whose peer and host paths are about as fast', () => {
    expect(staged({ peer_possible: true, off_gbps: 24, on_gbps: 26, host_gbps: 25 })).toMatchObject({
      value: null,
      reason: expect.stringContaining('bandwidth cannot tell'),
    });
  });

  it('is staged by necessity without a peer path, and unknown when a bandwidth is missing', () => {
    expect(staged({ peer_possible: false, off_gbps: 20, on_gbps: null, host_gbps: 22 }).value).toBe(true);
    expect(staged({ peer_possible: true, off_gbps: 20, on_gbps: null, host_gbps: 22 })).toMatchObject({
      value: null,
      reason: 'the copy with peer access was not measured',
    });
  });
});

describe('p2p: MIG slices, one process per MIG device UUID', () => {
  const GiB = 1024 ** 3;
  const slice = (uuid: string, extra: Record<string, unknown> = {}) => ({
    uuid,
    profile_bytes: 16.25 * GiB,
    cu_total_bytes: 16.25 * GiB,
    free_before_pin: 16 * GiB,
    free_after_pin: 16 * GiB,
    pinned_bytes: 0.25 * GiB,
    visible_devices: 1,
    ...extra,
  });
  const mig = (slices: unknown[]) => facts(selftest('p2p-mig', { slices }).records);

  it("a slice as documented: its profile's memory, pinned memory not charged to it, no peer", () => {
    const reported = mig([slice('MIG-a'), slice('MIG-b')]);
    expect(reported.mig_memory_matches_profile!.value).toBe(true);
    expect(reported.mig_pinned_charged).toMatchObject({
      value: false,
      evidence: { 'MIG-a': { pinned_bytes: 0.25 * GiB, free_drop_bytes: 0 } },
    });
    expect(reported.mig_peer_access).toMatchObject({ value: false, evidence: { 'MIG-b': { visible_devices: 1 } } });
  });

  it('finds a slice that sees more than its profile, pinned memory charged to a slice, and two slices in one process', () => {
    const reported = mig([
      slice('MIG-a', { cu_total_bytes: 80 * GiB }),
      slice('MIG-b', { free_after_pin: 15.75 * GiB, visible_devices: 2 }),
    ]);
    expect(reported.mig_memory_matches_profile).toMatchObject({ value: false, evidence: { 'MIG-a': { cu_total_bytes: 80 * GiB } } });
    expect(reported.mig_pinned_charged!.value).toBe(true);
    expect(reported.mig_peer_access!.value).toBe(true);
  });

  it('says partial for a slice charged a part, and null with the reason for a slice that could not be measured', () => {
    expect(mig([slice('MIG-a', { free_after_pin: 16 * GiB - 0.1 * GiB })]).mig_pinned_charged!.value).toBe('partial');
    const reported = mig([slice('MIG-a', { error: 'cuInit failed: CUDA_ERROR_NO_DEVICE (100)' })]);
    expect(reported.mig_memory_matches_profile).toMatchObject({ value: null, reason: 'MIG-a: cuInit failed: CUDA_ERROR_NO_DEVICE (100)' });
    expect(reported.mig_peer_access!.value).toBeNull();
  });

  it('every fact the selftests print is one the catalogue declares, with one of its values', () => {
    const spec = probeSpec('p2p')!;
    const printed = [
      ...selftest('p2p-topology', { devices: devices(2), pairs: [pair(0, 1, hgxPair)] }).records,
      ...selftest('p2p-staged', { peer_possible: true, off_gbps: 38, on_gbps: 360, host_gbps: 40 }).records,
      ...selftest('p2p-mig', { slices: [slice('MIG-a')] }).records,
    ].filter((record): record is FactRecord => record.type === 'fact');
    for (const fact of printed) {
      const declared = spec.facts.find((specFact) => specFact.name === fact.name);
      expect(declared, fact.name).toBeDefined();
      if (declared!.values && fact.value !== null) expect(declared!.values, fact.name).toContain(fact.value);
    }
  });
});

describe('p2p: without a driver', () => {
  it('skips with the reason and exits 3, and refuses bad parameters first', () => {
    const result = spawnSync(probe.path, ['run', 'p2p'], { encoding: 'utf8' });
    expect(result.status).toBe(3);
    expect(parseProbeOutput(result.stdout).records).toEqual([
      expect.objectContaining({ type: 'skip', reason: expect.stringContaining('no NVIDIA driver found') }),
    ]);
    const bad = spawnSync(probe.path, ['run', 'p2p', '--param', 'repetitions=2'], { encoding: 'utf8' });
    expect(bad.status).toBe(2);
    expect(bad.stdout).toContain('parameter repetitions must be at least 3');
  });
});

/**
 * C34: the IOMMU and ACS state, read by cudaprobe from sysfs and checked here against a second
 * reading made in TypeScript from the same files (this machine's real PCI devices), and the
 * ACS parser on a configuration space built by hand.
 */
describe('p2p: IOMMU mode, ACS redirect and the override variables (C34)', () => {
  const ACS_ID = 0x000d;

  /** A 4096-byte configuration space with the given extended capabilities (id, ACS control) chained from 0x100. */
  function configSpace(capabilities: { id: number; control?: number }[]): Buffer {
    const config = Buffer.alloc(4096);
    capabilities.forEach((capability, i) => {
      const at = 0x100 + i * 0x40;
      const next = i + 1 < capabilities.length ? at + 0x40 : 0;
      config.writeUInt32LE((capability.id & 0xffff) | (1 << 16) | (next << 20), at);
      config.writeUInt16LE(capability.control ?? 0, at + 6);
    });
    return config;
  }

  const acs = (config: Buffer) => {
    const result = spawnSync(probe.path, ['selftest', 'acs'], { input: config });
    expect(result.status).toBe(0);
    return JSON.parse(String(result.stdout)) as { control: number; redirects: boolean };
  };

  it('finds the ACS capability down the chain and reads Request/Completion Redirect from its control register', () => {
    // AER (1), then ACS with Source Validation + Request Redirect + Completion Redirect + Upstream Forwarding.
    expect(acs(configSpace([{ id: 1 }, { id: ACS_ID, control: 0x1d }]))).toEqual({ control: 0x1d, redirects: true });
    expect(acs(configSpace([{ id: ACS_ID, control: 0x01 }]))).toEqual({ control: 0x01, redirects: false });
    expect(acs(configSpace([{ id: 1 }, { id: 0x10 }]))).toEqual({ control: -1, redirects: false });
    // What a process that is not root reads: the first 256 bytes only.
    expect(acs(configSpace([{ id: ACS_ID, control: 0x1d }]).subarray(0, 256))).toEqual({ control: -1, redirects: false });
  });

  /** ACS control of one device's configuration space, parsed here (the peer of cudaprobe's parser). */
  function acsControlOf(config: Buffer): number {
    if (config.length < 4096) return -1;
    for (let at = 0x100, hops = 0; at >= 0x100 && hops < 64; hops++) {
      const header = config.readUInt32LE(at);
      if (header === 0 || header === 0xffffffff) return -1;
      if ((header & 0xffff) === ACS_ID) return config.readUInt16LE(at + 6);
      at = (header >>> 20) & 0xffc;
    }
    return -1;
  }

  it('reads the IOMMU mode and every bridge above a real PCI device of this machine as sysfs says', () => {
    const devicesDir = '/sys/bus/pci/devices';
    const names = existsSync(devicesDir) ? readdirSync(devicesDir) : [];
    if (!integrationAvailable('a PCI device in /sys/bus/pci/devices', names.length > 0, 'a machine with PCI sysfs')) return;
    // One behind a bridge where there is one (this machine's devices all sit on the root bus).
    const behindBridge = (name: string) => /^[0-9a-f]{4}:/.test(path.basename(path.dirname(realpathSync(path.join(devicesDir, name)))));
    const leaf = names.find(behindBridge) ?? names[0]!;
    const result = spawnSync(probe.path, ['selftest', 'iommu', `0000${leaf}`], {
      encoding: 'utf8',
      env: { ...process.env, CUDA_TEST_P2P_OVERRIDE: '1', NCCL_P2P_DISABLE: '1', CUDA_VISIBLE_DEVICES: '0' },
    });
    expect(result.status).toBe(0);
    const reported = facts(parseProbeOutput(result.stdout).records);
    expect(reported.peer_override_variables!.value).toBe(['CUDA_TEST_P2P_OVERRIDE', 'NCCL_P2P_DISABLE'].sort().join(','));
    expect(reported.peer_override_variables!.evidence).toEqual({ CUDA_TEST_P2P_OVERRIDE: '1', NCCL_P2P_DISABLE: '1' });

    const device = path.join(devicesDir, leaf);
    const group = existsSync(path.join(device, 'iommu_group')) ? realpathSync(path.join(device, 'iommu_group')) : null;
    const iommus = existsSync('/sys/class/iommu') ? readdirSync('/sys/class/iommu') : [];
    const mode = group ? readFileSync(path.join(group, 'type'), 'utf8').trim() : iommus.length ? null : 'off';
    expect(reported.iommu_mode!.value).toBe(mode);

    const bridges: Record<string, string> = {};
    let redirect = false;
    let unknown = false;
    for (let dir = path.dirname(realpathSync(device)); /^[0-9a-f]{4}:/.test(path.basename(dir)); dir = path.dirname(dir)) {
      const config = readFileSync(path.join(dir, 'config'));
      const control = acsControlOf(config);
      bridges[path.basename(dir)] =
        control >= 0
          ? `0x${control.toString(16).padStart(4, '0')}`
          : config.length < 4096
            ? 'the extended configuration space is readable by root only'
            : 'no ACS capability';
      redirect ||= control >= 0 && (control & 0x0c) !== 0;
      unknown ||= control < 0 && config.length < 4096;
    }
    expect(reported.acs_redirect!.evidence).toEqual(Object.keys(bridges).length ? bridges : undefined);
    expect(reported.acs_redirect!.value).toBe(redirect ? true : unknown ? null : false);
  });
});
