/**
 * The p2p probe against its independent check (bench/p2p-check.cu, the CUDA runtime API) and
 * nvidia-smi topo -m, on the same machine in the same run (scripts/gpu-suite.ts --p2p): per pair,
 * direction and mode, both bandwidths and their ratio, whether both found the copy intact, and
 * the link class against nvidia-smi's. A row agrees when the bandwidths are within `tolerance`
 * (default 10 %) of each other and the checks' verdicts match.
 */
import { parseProbeOutput, type FactRecord, type MetricRecord } from '../probes/protocol.ts';

export interface P2pRow {
  src: number;
  dst: number;
  peer: boolean;
  probeGbps: number | null;
  checkGbps: number | null;
  ratio: number | null;
  probeIntact: boolean | null;
  checkIntact: boolean | null;
  agrees: boolean;
}

export interface P2pComparison {
  rows: P2pRow[];
  /** Per pair "a-b": the probe's link class and nvidia-smi topo -m's. */
  links: Record<string, { probe: string | null; smi: string | null }>;
  agrees: boolean;
  problems: string[];
}

interface CheckLine {
  src: number;
  dst: number;
  peer?: boolean;
  gbps?: number;
  intact?: boolean;
  error?: string;
}

/** The GPU-to-GPU cells of nvidia-smi topo -m: {"0-1": "NV18"}. */
export function parseTopo(text: string): Record<string, string> {
  const rows = text
    .split('\n')
    .map((l) => l.trim().split(/\s+/))
    .filter((cells) => /^GPU\d+$/.test(cells[0] ?? ''));
  const header = text.split('\n').find((l) => /^\s*GPU0\b/.test(l) && !/^\s*GPU0\s+X\b/.test(l));
  const columns = (header ?? '').trim().split(/\s+/);
  const out: Record<string, string> = {};
  for (const cells of rows) {
    const a = Number(cells[0]!.slice(3));
    columns.forEach((col, i) => {
      const b = /^GPU(\d+)$/.exec(col)?.[1];
      if (b !== undefined && a < Number(b) && cells[i + 1]) out[`${a}-${b}`] = cells[i + 1]!;
    });
  }
  return out;
}

export function compareP2p(probeStdout: string, checkStdout: string, topoText = '', tolerance = 0.1): P2pComparison {
  const problems: string[] = [];
  const { records } = parseProbeOutput(probeStdout);
  const metric = (name: string, src: number, dst: number, peer: boolean) =>
    records.find(
      (r): r is MetricRecord =>
        r.type === 'metric' && r.name === name && r.attrs?.src === src && r.attrs?.dst === dst && r.attrs?.peer === peer,
    );
  const check: CheckLine[] = [];
  for (const line of checkStdout.split('\n')) {
    if (!line.trim()) continue;
    try {
      const v = JSON.parse(line) as CheckLine;
      if (v.error) problems.push(`p2p-check ${v.src} to ${v.dst}: ${v.error}`);
      else if (typeof v.src === 'number') check.push(v);
    } catch {
      problems.push(`p2p-check printed a line that is not JSON: ${line.slice(0, 80)}`);
    }
  }
  const rows = check.map((c): P2pRow => {
    const peer = c.peer === true;
    const bw = metric('bandwidth_gbps', c.src, c.dst, peer);
    const wrong = metric('wrong_bytes', c.src, c.dst, peer);
    const probeGbps = bw?.value ?? null;
    const checkGbps = typeof c.gbps === 'number' && c.gbps > 0 ? c.gbps : null;
    const ratio = probeGbps !== null && checkGbps !== null ? probeGbps / checkGbps : null;
    const probeIntact = wrong?.value === undefined || wrong.value === null ? null : wrong.value === 0;
    const checkIntact = typeof c.intact === 'boolean' ? c.intact : null;
    const agrees = ratio !== null && Math.abs(ratio - 1) <= tolerance && probeIntact !== null && probeIntact === checkIntact;
    return { src: c.src, dst: c.dst, peer, probeGbps, checkGbps, ratio, probeIntact, checkIntact, agrees };
  });
  const linkFact = records.find((r): r is FactRecord => r.type === 'fact' && r.name === 'link_class');
  const smi = parseTopo(topoText);
  const links: P2pComparison['links'] = {};
  for (const key of new Set([...Object.keys(linkFact?.evidence ?? {}), ...Object.keys(smi)])) {
    const probe = linkFact?.evidence?.[key];
    links[key] = { probe: typeof probe === 'string' ? probe : null, smi: smi[key] ?? null };
  }
  const linksAgree = Object.values(links).every((l) => l.probe !== null && l.probe === l.smi);
  if (!rows.length) problems.push('no pair was measured by both');
  return { rows, links, agrees: rows.length > 0 && rows.every((r) => r.agrees) && linksAgree && problems.length === 0, problems };
}
