/**
 * bench/physics's model: for each cell of one run's event log, the time of the work the probe
 * cannot avoid at its parameters (bytes pinned at the pin rate, bytes copied at the bandwidth,
 * processes started at the start and context times), computed from that run's own measurements
 * and never from figures typed in here, so that a log from another machine or driver gets its
 * own floor. What a probe does is read from its parameters and records; what each step costs,
 * from the yardsticks below (other cells of the same run) or the cell's own metrics.
 */
import type { CellEndEvent, RunEvent } from '../events/events.ts';
import type { MetricRecord, SampleRecord } from '../probes/protocol.ts';

/** One piece of a cell's unavoidable work: its time and how it was computed. */
export interface WorkPart {
  ms: number;
  /** A short phrase with the figures used ("64 chunks x 101 ms"). */
  what: string;
}

export interface CellPhysics {
  cell: string;
  probe: string;
  status: string;
  cellMs: number;
  /** null: not modelled (notModelled says why). */
  unavoidableMs: number | null;
  parts: WorkPart[];
  notModelled?: string;
}

/** What a step costs in this run, measured by other cells of the same log (null: not in the log). */
export interface Yardsticks {
  /** A cell whose cudaprobe skipped at once, doing no work (a probe for another platform): starting a cell. */
  cellStartMs: number | null;
  cellStartFrom: string | null;
  /** runtime-init, in a fresh process: loading the driver library and cuInit. */
  driverInitMs: number | null;
  /** runtime-init, in a fresh process: the first context (cudaSetDevice + cudaFree(0)) after the runtime initialised. */
  contextMs: number | null;
  /** pinned-vram's series: per-byte times of alloc, touch and free, by api and kind. */
  memorySeries: MemorySeries[];
}

export interface MemorySeries {
  api: string;
  kind: string;
  sizeBytes: number;
  allocMs: number;
  touchMs: number | null;
  freeMs: number | null;
}

/** Thrown by a model when a figure it needs is not in the log; the cell is then "not modelled". */
class NotInLog extends Error {}

const GiB = 1024 ** 3;
const MiB = 1024 ** 2;

const isMetric = (record: { type?: string }): record is MetricRecord => record.type === 'metric';
const isSample = (record: { type?: string }): record is SampleRecord => record.type === 'sample';
const metrics = (cell: CellEndEvent, name: string) => cell.records.filter(isMetric).filter((metric) => metric.name === name);
const seconds = (ms: number) => `${(ms / 1000).toFixed(2)} s`;
const msText = (ms: number) => (ms >= 100 ? ms.toFixed(0) : ms >= 10 ? ms.toFixed(1) : ms.toFixed(2));
const gib = (bytes: number) => `${+(bytes / GiB).toFixed(2)} GiB`;

function need<T>(value: T | null | undefined, what: string): T {
  if (value === null || value === undefined || (typeof value === 'number' && !Number.isFinite(value))) throw new NotInLog(what);
  return value;
}

function numberParam(cell: CellEndEvent, name: string): number {
  const value = cell.params?.[name];
  return need(typeof value === 'number' ? value : null, `parameter ${name} of ${cell.probe}`);
}

function numbersParam(cell: CellEndEvent, name: string): number[] {
  const value = cell.params?.[name];
  if (Array.isArray(value) && value.every((item) => typeof item === 'number')) return value as number[];
  return [numberParam(cell, name)];
}

/** The yardsticks of one run: runtime-init's fresh-process figures, pinned-vram's series, the cheapest cell. */
export function yardsticks(cells: CellEndEvent[]): Yardsticks {
  const init = cells.find((cell) => cell.probe === 'runtime-init' && cell.status === 'passed');
  const first = (name: string) => (init ? (metrics(init, name)[0]?.value ?? null) : null);
  const driverLoad = first('driver_load_ms');
  const cuinit = first('cuinit_ms');
  // A cell whose probe said at once that it does not run here: cudamatrix starting cudaprobe,
  // cudaprobe starting and answering, nothing else.
  const idle = cells
    .filter((cell) => cell.status === 'skipped' && cell.records.length > 0 && cell.records.every((record) => record.type === 'skip'))
    .sort((left, right) => left.durationMs - right.durationMs)[0];
  const vram = cells.find((cell) => cell.probe === 'pinned-vram');
  const memorySeries: MemorySeries[] = [];
  if (vram) {
    const key = (metric: MetricRecord) => `${metric.attrs?.api}/${metric.attrs?.kind}/${metric.attrs?.size_bytes}`;
    const byKey = (name: string) => new Map(metrics(vram, name).map((metric) => [key(metric), metric.value]));
    const touch = byKey('touch_ms');
    const free = byKey('free_ms');
    for (const alloc of metrics(vram, 'alloc_ms')) {
      if (alloc.value === null) continue;
      memorySeries.push({
        api: String(alloc.attrs?.api),
        kind: String(alloc.attrs?.kind),
        sizeBytes: Number(alloc.attrs?.size_bytes),
        allocMs: alloc.value,
        touchMs: touch.get(key(alloc)) ?? null,
        freeMs: free.get(key(alloc)) ?? null,
      });
    }
  }
  return {
    cellStartMs: idle?.durationMs ?? null,
    cellStartFrom: idle?.probe ?? null,
    driverInitMs: driverLoad !== null && cuinit !== null ? driverLoad + cuinit : null,
    contextMs: first('runtime_context_ms'),
    memorySeries,
  };
}

/**
 * pinned-vram's series of this api and kind at `sizeBytes`, or at its largest size (the steadiest
 * per-byte rate) when that size was not measured.
 */
function series(sticks: Yardsticks, api: string, kind: string, sizeBytes: number): MemorySeries {
  const candidates = sticks.memorySeries.filter((entry) => entry.api === api && entry.kind === kind);
  const exact = candidates.find((entry) => entry.sizeBytes === sizeBytes);
  const largest = [...candidates].sort((left, right) => right.sizeBytes - left.sizeBytes)[0];
  return need(exact ?? largest, `pinned-vram's ${api} ${kind} series in this run (the pin rate)`);
}

/** Pinning, touching and freeing `bytes` at the rates pinned-vram measured in this run. */
function pinTouchFree(sticks: Yardsticks, api: string, kind: string, bytes: number, steps: ('alloc' | 'touch' | 'free')[]): WorkPart {
  const rates = series(sticks, api, kind, bytes);
  const per = bytes / rates.sizeBytes;
  const stepMs = { alloc: rates.allocMs, touch: need(rates.touchMs, 'touch_ms'), free: need(rates.freeMs, 'free_ms') };
  const ms = steps.reduce((sum, step) => sum + stepMs[step] * per, 0);
  const perGib = steps.map((step) => msText((stepMs[step] * GiB) / rates.sizeBytes)).join('+');
  return { ms, what: `${gib(bytes)} ${api} ${kind} ${steps.join('+')} at ${perGib} ms/GiB` };
}

function cellStart(sticks: Yardsticks): WorkPart {
  return { ms: need(sticks.cellStartMs, 'a cell that did no work (the cell start)'), what: `start ${msText(sticks.cellStartMs!)} ms` };
}

function driverInit(sticks: Yardsticks): WorkPart {
  return { ms: need(sticks.driverInitMs, "runtime-init's cuinit_ms"), what: `cuInit ${msText(sticks.driverInitMs!)} ms` };
}

function context(sticks: Yardsticks): WorkPart {
  return { ms: need(sticks.contextMs, "runtime-init's runtime_context_ms"), what: `context ${msText(sticks.contextMs!)} ms` };
}

/**
 * Fresh subject processes, each started and its context made. Their cuInit is left out: the
 * probe's own process holds the device open by then, and a cuInit beside it is faster than
 * runtime-init's cold one (no log measures it), so counting the cold one would overstate the floor.
 */
function subjects(sticks: Yardsticks, count: number): WorkPart {
  const each = need(sticks.cellStartMs, 'the cell start') + need(sticks.contextMs, 'runtime_context_ms');
  return { ms: count * each, what: `${count} subject${count === 1 ? '' : 's'} x ${msText(each)} ms` };
}

/** A GPU cell's floor: the cell started, the driver initialised, and with `withContext` a context made. */
function floor(sticks: Yardsticks, withContext: boolean): WorkPart[] {
  return withContext ? [cellStart(sticks), driverInit(sticks), context(sticks)] : [cellStart(sticks), driverInit(sticks)];
}

/** The sum of a metric's repetitions (or its value times `count` when it kept none). */
function repeatedMs(metric: MetricRecord, count: number, toMs: number): number {
  const value = need(metric.value, `${metric.name}`);
  return (metric.repeats ? metric.repeats.reduce((sum, repeat) => sum + repeat, 0) : value * count) * toMs;
}

type Model = (cell: CellEndEvent, sticks: Yardsticks) => WorkPart[];

const MODELS: Record<string, Model> = {
  sysinfo: (_cell, sticks) => floor(sticks, false),
  watchdog: (_cell, sticks) => floor(sticks, false),
  p2p: (cell, sticks) => {
    if (cell.status !== 'skipped') throw new NotInLog('p2p between GPUs (this model knows only its skip)');
    return floor(sticks, false);
  },
  'windows-registry': (cell, sticks) => {
    if (cell.status !== 'skipped') throw new NotInLog('reading the registry');
    return [cellStart(sticks)];
  },
  'runtime-init': (cell, sticks) => {
    // Its own two children: the driver's (load + cuInit) and the runtime's (load + first call + context).
    const sum = (names: string[]) => names.reduce((total, name) => total + need(metrics(cell, name)[0]?.value, name), 0);
    const driverChild = sum(['driver_load_ms', 'cuinit_ms']);
    const runtimeChild = sum(['runtime_load_ms', 'runtime_first_call_ms', 'runtime_context_ms']);
    const start = need(sticks.cellStartMs, 'the cell start');
    return [
      { ms: 3 * start, what: `3 process starts x ${msText(start)} ms` },
      { ms: driverChild, what: `driver child ${msText(driverChild)} ms` },
      { ms: runtimeChild, what: `runtime child ${msText(runtimeChild)} ms` },
    ];
  },
  'pinned-vram': (cell, sticks) => {
    const allocs = metrics(cell, 'alloc_ms');
    const done = allocs.filter((metric) => metric.value !== null);
    const work = done.reduce(
      (sum, alloc) => {
        const same = (metric: MetricRecord) => JSON.stringify(metric.attrs) === JSON.stringify(alloc.attrs);
        const touch = metrics(cell, 'touch_ms').find(same)?.value ?? 0;
        const free = metrics(cell, 'free_ms').find(same)?.value ?? 0;
        const pinned = alloc.attrs?.kind === 'device' ? 0 : Number(alloc.attrs?.size_bytes);
        return { ms: sum.ms + alloc.value! + touch + free, bytes: sum.bytes + pinned };
      },
      { ms: 0, bytes: 0 },
    );
    const wait = numberParam(cell, 'wait_s') * 1000;
    return [
      ...floor(sticks, false),
      subjects(sticks, allocs.length),
      { ms: work.ms, what: `${gib(work.bytes)} pinned or registered (+ device controls): alloc_ms+touch_ms+free_ms ${seconds(work.ms)}` },
      { ms: done.length * wait, what: `${done.length} x wait_s ${msText(wait)} ms` },
    ];
  },
  'pinned-release': (cell, sticks) => {
    const bytes = numberParam(cell, 'size_gib') * GiB;
    const samples = cell.records.filter(isSample);
    const apis = [...new Set(samples.filter((sample) => sample.phase === 'baseline').map((sample) => String(sample.attrs?.api)))];
    const parts = [...floor(sticks, false), subjects(sticks, apis.length)];
    for (const api of apis) {
      parts.push(pinTouchFree(sticks, api, 'pinned', bytes, ['alloc', 'touch', 'free']));
      // The waits after the free that the log shows were taken (the probe stops once released).
      const waited = Math.max(
        0,
        ...samples.filter((sample) => sample.attrs?.api === api).map((sample) => Number(sample.attrs?.wait_s ?? 0)),
      );
      if (waited > 0) parts.push({ ms: waited * 1000, what: `${api} waited ${waited} s after the free` });
    }
    return parts;
  },
  'multi-process-pinned': (cell, sticks) => {
    const processes = numberParam(cell, 'processes');
    const bytes = numberParam(cell, 'size_gib') * GiB;
    const each = pinTouchFree(sticks, 'driver', 'pinned', bytes, ['alloc', 'touch', 'free']);
    return [...floor(sticks, false), subjects(sticks, processes), { ms: processes * each.ms, what: `${processes} x ${each.what}` }];
  },
  'pinned-ceiling': (cell, sticks) => {
    const chunkBytes = numberParam(cell, 'chunk_mib') * MiB;
    const ceilings = metrics(cell, 'ceiling_bytes');
    const chunkTimes = metrics(cell, 'chunk_alloc_ms');
    // Each round's ceiling and its chunk time, paired in the order emitted (one subject per round).
    let pinMs = 0;
    let chunks = 0;
    let freeMs = 0;
    let pinnedBytes = 0;
    const perChunk: number[] = [];
    const used = new Set<MetricRecord>();
    for (const ceiling of ceilings) {
      const bytes = need(ceiling.value, 'ceiling_bytes');
      const api = String(ceiling.attrs?.api);
      const variant = ceiling.attrs?.variant;
      const chunk = chunkTimes.find(
        (metric) =>
          !used.has(metric) &&
          metric.attrs?.api === api &&
          metric.attrs?.variant === variant &&
          metric.attrs?.prefill_percent === ceiling.attrs?.prefill_percent,
      );
      used.add(need(chunk, `chunk_alloc_ms of the ${api} ${variant ?? 'prefill'} round`));
      const count = Math.round(bytes / chunkBytes);
      pinMs += count * need(chunk!.value, 'chunk_alloc_ms');
      perChunk.push(chunk!.value!);
      chunks += count;
      pinnedBytes += bytes;
      freeMs += pinTouchFree(sticks, api, variant === 'registered' ? 'registered' : 'pinned', bytes, ['free']).ms;
    }
    const low = Math.min(...perChunk);
    const high = Math.max(...perChunk);
    return [
      ...floor(sticks, false),
      subjects(sticks, ceilings.length),
      {
        ms: pinMs,
        what: `${chunks} x ${chunkBytes / MiB} MiB chunks at ${msText(low)}-${msText(high)} ms (chunk_alloc_ms) ${seconds(pinMs)}`,
      },
      { ms: freeMs, what: `${gib(pinnedBytes)} freed at pinned-vram's free_ms ${seconds(freeMs)}` },
    ];
  },
  'transfer-bandwidth': (cell, sticks) => {
    const copies = numberParam(cell, 'repetitions') + numberParam(cell, 'warmup');
    const largest = Math.max(...numbersParam(cell, 'sizes_mib')) * MiB;
    let copyMs = 0;
    let copied = 0;
    for (const metric of metrics(cell, 'bandwidth_gbps')) {
      const bytes = Number(metric.attrs?.size_bytes) * copies;
      copyMs += (bytes / (need(metric.value, 'bandwidth_gbps') * 1e9)) * 1000;
      copied += bytes;
    }
    let hostMs = 0;
    for (const metric of metrics(cell, 'host_memcpy_gbps'))
      hostMs += ((Number(metric.attrs?.size_bytes) * copies) / (need(metric.value, 'host_memcpy_gbps') * 1e9)) * 1000;
    // One pinned buffer of the largest size, pinned and freed; it and two pageable ones written once.
    const pin = pinTouchFree(sticks, 'driver', 'pinned', largest, ['alloc', 'free']);
    const touch = series(sticks, 'driver', 'pinned', largest);
    const writeMs = 3 * need(touch.touchMs, 'touch_ms') * (largest / touch.sizeBytes);
    return [
      ...floor(sticks, true),
      { ms: copyMs, what: `${gib(copied)} copied at bandwidth_gbps (${copies} copies a series) ${seconds(copyMs)}` },
      { ms: hostMs, what: `host memcpy at host_memcpy_gbps ${seconds(hostMs)}` },
      pin,
      { ms: writeMs, what: `3 x ${gib(largest)} written at touch_ms` },
    ];
  },
  'event-timing': (cell, sticks) => {
    const repetitions = numberParam(cell, 'repetitions');
    const spins = metrics(cell, 'host_elapsed_us').reduce((sum, metric) => sum + repeatedMs(metric, repetitions, 1e-3), 0);
    return [...floor(sticks, true), { ms: spins, what: `timed spins ${msText(spins)} ms (host_elapsed_us)` }];
  },
  'event-host-gap': (cell, sticks) => {
    const repetitions = numberParam(cell, 'repetitions');
    const gaps = metrics(cell, 'host_gap_ms').reduce((sum, metric) => sum + repeatedMs(metric, repetitions, 1), 0);
    return [...floor(sticks, true), { ms: gaps, what: `host gaps ${msText(gaps)} ms (host_gap_ms)` }];
  },
  'sync-latency': (cell, sticks) => {
    const iterations = numberParam(cell, 'iterations');
    const mean = need(metrics(cell, 'mean_us')[0]?.value, 'mean_us');
    const ms = (iterations * mean) / 1000;
    return [...floor(sticks, true), { ms, what: `${iterations} syncs x ${mean.toFixed(1)} us` }];
  },
  'stream-priority': (cell, sticks) => {
    const repetitions = numberParam(cell, 'repetitions');
    const long = metrics(cell, 'long_done_ms').reduce((sum, metric) => sum + repeatedMs(metric, repetitions, 1), 0);
    return [...floor(sticks, true), { ms: long, what: `long kernels ${msText(long)} ms (long_done_ms)` }];
  },
  'cuda-graph': (cell, sticks) => {
    // repetitions timed after two warm-up ones, of the graph and of the plain launches.
    const launches = numberParam(cell, 'repetitions') + 2;
    const each = ['graph_us', 'plain_us'].reduce((sum, name) => sum + need(metrics(cell, name)[0]?.value, name), 0);
    return [...floor(sticks, true), { ms: (launches * each) / 1000, what: `${launches} x (graph + plain) ${msText(each / 1000)} ms` }];
  },
  'managed-memory': (cell, sticks) => {
    const names = ['cpu_first_touch_ms', 'gpu_fill_ms', 'cpu_read_back_ms'];
    const ms = names.reduce((sum, name) => sum + need(metrics(cell, name)[0]?.value, name), 0);
    return [...floor(sticks, true), { ms, what: `touch + fill + read back ${msText(ms)} ms` }];
  },
  // Two subjects, each logging to a file of its own: one pin, one failing allocation.
  'cuda-log': (_cell, sticks) => [...floor(sticks, false), subjects(sticks, 2)],
};

/** Every cell of one run's log with its unavoidable work, or why it is not modelled. */
export function physicsOfRun(events: RunEvent[]): { yardsticks: Yardsticks; cells: CellPhysics[] } {
  const cells = events.filter((e): e is CellEndEvent => e.type === 'cell-end');
  const sticks = yardsticks(cells);
  return {
    yardsticks: sticks,
    cells: cells.map((cell) => {
      const base = { cell: cell.cell, probe: cell.probe, status: cell.status, cellMs: cell.durationMs };
      const model = MODELS[cell.probe];
      if (!model) return { ...base, unavoidableMs: null, parts: [], notModelled: 'no model of this probe' };
      if (cell.status === 'error' || cell.status === 'not-run')
        return { ...base, unavoidableMs: null, parts: [], notModelled: `the cell ended ${cell.status}` };
      try {
        const parts = model(cell, sticks);
        return { ...base, unavoidableMs: parts.reduce((sum, part) => sum + part.ms, 0), parts };
      } catch (e) {
        if (!(e instanceof NotInLog)) throw e;
        return { ...base, unavoidableMs: null, parts: [], notModelled: `not in the log: ${e.message}` };
      }
    }),
  };
}
