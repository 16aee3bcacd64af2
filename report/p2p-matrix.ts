/**
 * The p2p probe's matrix per column of the report (the newest record of one observation that ran it): a row
 * per source GPU, a column per destination, each cell the pair's link class, its copy bandwidth
 * with and without peer access, and whether the verified copies arrived intact.
 */
import { formatValue } from '../core/units.ts';
import type { RecordedMetric } from '../behaviour/behaviour-record.ts';
import type { Column } from './behaviour-table.ts';

export interface P2pCell {
  link: string | null;
  onGbps: number | null;
  offGbps: number | null;
  /** Wrong bytes of the verified copies with and without peer access (null: not measured). */
  wrongOn: number | null;
  wrongOff: number | null;
}

export interface P2pMatrix {
  column: string;
  file: string;
  devices: number[];
  /** "src-dst" -> the cell. */
  cells: Record<string, P2pCell>;
}

const num = (metric: RecordedMetric | undefined) => (metric && typeof metric.value === 'number' ? metric.value : null);

/** The matrix of each column whose newest record of the p2p probe measured a pair; none where no record did. */
export function p2pMatrices(columns: readonly Column[]): P2pMatrix[] {
  const out: P2pMatrix[] = [];
  for (const column of columns) {
    const shown = column.byProbe.get('p2p');
    if (!shown) continue;
    const record = shown.record;
    const metrics = record.metrics.filter(
      (metric) => metric.name.startsWith('p2p.') && typeof metric.attrs?.src === 'number' && typeof metric.attrs?.dst === 'number',
    );
    if (!metrics.length) continue;
    const find = (name: string, src: number, dst: number, peer: boolean) =>
      metrics.find(
        (metric) => metric.name === `p2p.${name}` && metric.attrs?.src === src && metric.attrs?.dst === dst && metric.attrs?.peer === peer,
      );
    const links = record.facts['p2p.link_class']?.evidence ?? {};
    const pairs = [...new Set(metrics.map((metric) => `${metric.attrs!.src}-${metric.attrs!.dst}`))];
    const devices = [...new Set(metrics.flatMap((metric) => [metric.attrs!.src as number, metric.attrs!.dst as number]))].sort(
      (left, right) => left - right,
    );
    const cells: Record<string, P2pCell> = {};
    for (const key of pairs) {
      const [src, dst] = key.split('-').map(Number) as [number, number];
      const link = links[`${Math.min(src, dst)}-${Math.max(src, dst)}`];
      cells[key] = {
        link: typeof link === 'string' ? link : null,
        onGbps: num(find('bandwidth_gbps', src, dst, true)),
        offGbps: num(find('bandwidth_gbps', src, dst, false)),
        wrongOn: num(find('wrong_bytes', src, dst, true)),
        wrongOff: num(find('wrong_bytes', src, dst, false)),
      };
    }
    out.push({ column: column.text, file: shown.file, devices, cells });
  }
  return out;
}

/** A cell as text: "NV18: 380 GB/s peer, 40 GB/s staged; intact". */
export function p2pCellText(cell: P2pCell | undefined): string {
  if (!cell) return '–';
  const gbps = (value: number | null) => (value === null ? '—' : formatValue(value, 'GB/s'));
  const wrong = [cell.wrongOn, cell.wrongOff].filter((bytes): bytes is number => bytes !== null);
  const intact =
    wrong.length === 0
      ? 'not verified'
      : wrong.every((bytes) => bytes === 0)
        ? 'intact'
        : `${formatValue(Math.max(...wrong), 'bytes')} wrong`;
  return `${cell.link ?? '?'}: ${gbps(cell.onGbps)} with peer access, ${gbps(cell.offGbps)} without; ${intact}`;
}
