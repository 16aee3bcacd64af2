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
    .map((line) => line.trim().split(/\s+/))
    .filter((cells) => /^GPU\d+$/.test(cells[0] ?? ''));
  const header = text.split('\n').find((line) => /^\s*GPU0\b/.test(line) && !/^\s*GPU0\s+X\b/.test(line));
  const columns = (header ?? '').trim().split(/\s+/);
  const out: Record<string, string> = {};
  for (const cells of rows) {
    const rowGpu = Number(cells[0]!.slice(3));
    columns.forEach((col, i) => {
      const columnGpu = /^GPU(\d+)$/.exec(col)?.[1];
      if (columnGpu !== undefined && rowGpu < Number(columnGpu) && cells[i + 1]) out[`${rowGpu}-${columnGpu}`] = cells[i + 1]!;
    });
  }
  return out;
}

export function compareP2p(probeStdout: string, checkStdout: string, topoText = '', tolerance = 0.1): P2pComparison {
  const problems: string[] = [];
  const { records } = parseProbeOutput(probeStdout);
  const metric = (name: string, src: number, dst: number, peer: boolean) =>
    records.find(
      (record): record is MetricRecord =>
        record.type === 'metric' &&
        record.name === name &&
        record.attrs?.src === src &&
        record.attrs?.dst === dst &&
        record.attrs?.peer === peer,
    );
  const check: CheckLine[] = [];
  for (const line of checkStdout.split('\n')) {
    if (!line.trim()) continue;
    try {
      const checkLine = JSON.parse(line) as CheckLine;
      if (checkLine.error) problems.push(`p2p-check ${checkLine.src} to ${checkLine.dst}: ${checkLine.error}`);
      else if (typeof checkLine.src === 'number') check.push(checkLine);
    } catch {
      problems.push(`p2p-check printed a line that is not JSON: ${line.slice(0, 80)}`);
    }
  }
  const rows = check.map((checkLine): P2pRow => {
    const peer = checkLine.peer === true;
    const bw = metric('bandwidth_gbps', checkLine.src, checkLine.dst, peer);
    const wrong = metric('wrong_bytes', checkLine.src, checkLine.dst, peer);
    const probeGbps = bw?.value ?? null;
    const checkGbps = typeof checkLine.gbps === 'number' && checkLine.gbps > 0 ? checkLine.gbps : null;
    const ratio = probeGbps !== null && checkGbps !== null ? probeGbps / checkGbps : null;
    const probeIntact = wrong?.value === undefined || wrong.value === null ? null : wrong.value === 0;
    const checkIntact = typeof checkLine.intact === 'boolean' ? checkLine.intact : null;
    const agrees = ratio !== null && Math.abs(ratio - 1) <= tolerance && probeIntact !== null && probeIntact === checkIntact;
    return { src: checkLine.src, dst: checkLine.dst, peer, probeGbps, checkGbps, ratio, probeIntact, checkIntact, agrees };
  });
  const linkFact = records.find((record): record is FactRecord => record.type === 'fact' && record.name === 'link_class');
  const smi = parseTopo(topoText);
  const links: P2pComparison['links'] = {};
  for (const key of new Set([...Object.keys(linkFact?.evidence ?? {}), ...Object.keys(smi)])) {
    const probe = linkFact?.evidence?.[key];
    links[key] = { probe: typeof probe === 'string' ? probe : null, smi: smi[key] ?? null };
  }
  const linksAgree = Object.values(links).every((link) => link.probe !== null && link.probe === link.smi);
  if (!rows.length) problems.push('no pair was measured by both');
  return { rows, links, agrees: rows.length > 0 && rows.every((row) => row.agrees) && linksAgree && problems.length === 0, problems };
}
