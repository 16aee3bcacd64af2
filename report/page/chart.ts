/**
 * The page's charts, drawn as SVG: a few kinds of axes, lines, markers and bars (no chart
 * library: the page needs nothing from outside).
 */
import { formatValue } from '../../core/units.ts';
import { el, exact, sv } from './dom.ts';

export const COLORS = [
  '#1f77b4',
  '#d62728',
  '#2ca02c',
  '#ff7f0e',
  '#9467bd',
  '#8c564b',
  '#e377c2',
  '#17becf',
  '#7f7f7f',
  '#bcbd22',
  '#393b79',
  '#637939',
];
/** Line styles of the sources that did not decide (the deciding one is solid, thick and on top). */
export const DASHES = ['7 4', '2 3', '10 3 2 3', '4 2', '1 4', '12 4'];

export interface Series {
  name: string;
  ys: (number | null)[];
  color?: string | undefined;
  dash?: string | undefined;
  width?: number;
  labels?: string[] | undefined;
  /** Named in bold in the legend. */
  strong?: boolean;
  /** The deciding source of a memory chart (drawn on top). */
  deciding?: boolean;
}

/**
 * One chart: kind 'line' (x numeric or categorical, lines with markers), 'points' (markers with
 * labels) or 'bars' (categorical x, grouped bars); xs values or cats labels; flat: what to say
 * instead of a chart with nothing to draw (plainChart).
 */
export interface ChartOptions {
  id: string;
  kind: 'line' | 'points' | 'bars';
  title: string;
  series: Series[];
  xs?: number[];
  cats?: string[];
  logX?: boolean;
  xLabel: string;
  yLabel: string;
  /** The unit of the values, for their hover text; without one, they are shown exactly. */
  unit?: string;
  xFmt?: (x: number) => string;
  yFmt?: (y: number) => string;
  hline?: { y: number; label: string } | undefined;
  flat?: string;
  note?: string | undefined;
  /** The series' indexes in the order the legend lists them, whatever order they are drawn in. */
  legendOrder?: number[];
}

/** A tick's or an x value's label: rounded as formatValue rounds, without a unit. */
export function scaled(v: number): string {
  const abs = Math.abs(v);
  const digits = abs >= 100 ? 0 : abs >= 10 ? 1 : abs >= 1 ? 2 : 3;
  return String(Number(v.toFixed(digits)));
}

/** Round ticks that cover [lo, hi]: the axis ends on a labelled tick at or beyond the data. */
function ticks(lo: number, hi: number, n: number): number[] {
  if (!(hi > lo)) hi = lo + 1;
  let step = Math.pow(10, Math.floor(Math.log10((hi - lo) / n)));
  const m = (hi - lo) / n / step;
  step *= m >= 5 ? 10 : m >= 2 ? 5 : m >= 1 ? 2 : 1;
  const out: number[] = [];
  for (let t = Math.floor(lo / step + 1e-9) * step; t < hi + step * (1 - 1e-9); t += step) out.push(Math.abs(t) < step * 1e-9 ? 0 : t);
  return out;
}

let chartWidth = 660;
/** The width charts are drawn at (main.ts sets it from the page's width, before any is drawn), so their text stays readable. */
export function setChartWidth(width: number): void {
  chartWidth = width;
}

const valueText = (o: ChartOptions, y: number) => (o.unit ? formatValue(y, o.unit) : exact(y));

export function chart(o: ChartOptions): HTMLElement {
  const W = chartWidth,
    H = 280,
    L = 62,
    R = 16,
    T = 24,
    B = 56;
  const ys: number[] = [];
  const at: number[] = [];
  o.series.forEach((s) =>
    s.ys.forEach((y, i) => {
      if (typeof y === 'number' && isFinite(y)) {
        ys.push(y);
        if (at.indexOf(i) < 0) at.push(i);
      }
    }),
  );
  // Lines through one point, or values that are all 0 (the axis always holds 0), draw nothing
  // an axis could show: a 0-1 axis around a lone 0 reads as a measurement. Said in words instead.
  const allZero = ys.length > 0 && !o.hline && ys.every((y) => y === 0);
  if (allZero || (o.kind !== 'bars' && at.length === 1)) return plainChart(o, allZero);
  const svg = sv('svg', { class: 'chart', 'data-chart': o.id, viewBox: '0 0 ' + W + ' ' + H, role: 'img', 'aria-label': o.title });
  svg.appendChild(sv('title', {}, o.title));
  if (o.hline) ys.push(o.hline.y);
  let lo = Math.min(...ys, 0);
  let hi = Math.max(...ys, 0);
  if (hi === lo) hi = lo + 1;
  const yTicks = ticks(lo, hi, 5);
  lo = yTicks[0]!;
  hi = yTicks[yTicks.length - 1]!;
  svg.setAttribute('data-y-range', lo + ' ' + hi);
  svg.setAttribute('data-plot', [L, T, W - R, H - B].join(' '));
  const Y = (v: number) => T + (H - T - B) * (1 - (v - lo) / (hi - lo));
  const cats = o.cats;
  const xs = o.xs ?? [];
  const n = cats ? cats.length : 0;
  let X: (x: number) => number;
  if (cats) {
    X = (i) => L + (W - L - R) * ((i + 0.5) / n);
  } else {
    const xv = xs.map((x) => (o.logX ? Math.log2(x) : x));
    let xlo = Math.min(...xv);
    let xhi = Math.max(...xv);
    if (!o.logX) xlo = Math.min(0, xlo);
    if (xhi === xlo) {
      xhi = xlo + 1;
      xlo = xlo - 1;
    }
    const xpad = (xhi - xlo) * 0.06;
    X = (x) => L + (W - L - R) * (((o.logX ? Math.log2(x) : x) - xlo + xpad) / (xhi - xlo + 2 * xpad));
  }
  const axes = sv('g', { class: 'axes' });
  yTicks.forEach((t) => {
    axes.appendChild(sv('line', { x1: L, x2: W - R, y1: Y(t), y2: Y(t), class: t === 0 ? 'zero' : 'grid' }));
    axes.appendChild(sv('text', { x: L - 6, y: Y(t) + 4, 'text-anchor': 'end', class: 'y-tick' }, (o.yFmt || scaled)(t)));
  });
  const xLabels: [number, string][] = cats ? cats.map((c, i) => [X(i), c]) : xs.map((x) => [X(x), (o.xFmt || scaled)(x)]);
  // As many x labels as fit the width (about 60 px each).
  const every = Math.max(1, Math.ceil(xLabels.length / Math.max(2, Math.floor((W - L - R) / 60))));
  xLabels.forEach(([x, label], i) => {
    if (i % every === 0) axes.appendChild(sv('text', { x, y: H - B + 16, 'text-anchor': 'middle' }, label));
  });
  axes.appendChild(sv('text', { x: L + (W - L - R) / 2, y: H - 8, 'text-anchor': 'middle', class: 'label' }, o.xLabel));
  const middle = T + (H - T - B) / 2;
  axes.appendChild(
    sv('text', { x: 14, y: middle, transform: 'rotate(-90 14 ' + middle + ')', 'text-anchor': 'middle', class: 'label' }, o.yLabel),
  );
  svg.appendChild(axes);
  if (o.hline) {
    svg.appendChild(sv('line', { x1: L, x2: W - R, y1: Y(o.hline.y), y2: Y(o.hline.y), class: 'hline' }));
    svg.appendChild(sv('text', { x: W - R - 4, y: Y(o.hline.y) + 14, 'text-anchor': 'end', class: 'hline-label' }, o.hline.label));
  }
  const marks = sv('g', { class: 'marks' });
  const colorOf = (s: Series, si: number) => s.color || COLORS[si % COLORS.length]!;
  o.series.forEach((s, si) => {
    const color = colorOf(s, si);
    if (o.kind === 'bars') {
      const slot = (W - L - R) / Math.max(n, 1);
      const barWidth = Math.max(1, (slot * 0.8) / o.series.length);
      s.ys.forEach((y, i) => {
        if (typeof y !== 'number') return;
        const x = L + slot * i + slot * 0.1 + barWidth * si;
        const top = Math.min(Y(y), Y(0));
        const height = Math.max(1, Math.abs(Y(y) - Y(0)));
        marks
          .appendChild(sv('rect', { x, y: top, width: barWidth, height, fill: color, 'fill-opacity': s.dash ? 0.45 : 1 }))
          .appendChild(sv('title', {}, s.name + ': ' + (cats ? cats[i] : '') + ' ' + valueText(o, y)));
      });
      return;
    }
    // [x, y on the chart, the value, its index]
    const points: [number, number, number, number][] = [];
    s.ys.forEach((y, i) => {
      if (typeof y === 'number' && isFinite(y)) points.push([cats ? X(i) : X(xs[i]!), Y(y), y, i]);
    });
    if (o.kind === 'line' && points.length > 1) {
      const d = points.map((p, i) => (i ? 'L' : 'M') + p[0].toFixed(1) + ' ' + p[1].toFixed(1)).join(' ');
      marks.appendChild(sv('path', { d, stroke: color, fill: 'none', 'stroke-width': s.width || 2, 'stroke-dasharray': s.dash }));
    }
    points.forEach(([x, y, value, i]) => {
      const circle = marks.appendChild(
        sv('circle', {
          cx: x.toFixed(1),
          cy: y.toFixed(1),
          r: (s.width ?? 0) > 2 ? 4.5 : 3.5,
          fill: s.dash ? '#fff' : color,
          stroke: color,
          'stroke-width': 1.5,
        }),
      );
      circle.appendChild(sv('title', {}, s.name + ': ' + valueText(o, value)));
      // A label reads away from the nearer edge, so that none is cut off.
      if (s.labels) {
        const right = x > W / 2;
        marks.appendChild(
          sv('text', { x: right ? x - 6 : x + 6, y: y - 8, 'text-anchor': right ? 'end' : 'start', class: 'point-label' }, s.labels[i]),
        );
      }
    });
  });
  svg.appendChild(marks);
  // The legend in the order the series are listed (o.legendOrder), whatever order they are drawn in.
  const listed = (o.legendOrder || o.series.map((_, si) => si)).map((si): [Series, number] => [o.series[si]!, si]);
  const legend = el(
    'div',
    { class: 'legend' },
    listed.map(([s, si]) => {
      const color = colorOf(s, si);
      const key = sv('svg', { width: 22, height: 10, class: 'key' });
      const bars = o.kind === 'bars';
      key.appendChild(
        sv('line', {
          x1: 1,
          x2: 21,
          y1: 5,
          y2: 5,
          stroke: color,
          'stroke-width': bars ? 8 : s.width || 2,
          'stroke-dasharray': bars ? undefined : s.dash,
          'stroke-opacity': bars && s.dash ? 0.45 : 1,
        }),
      );
      return el('span', { class: s.strong ? 'strong' : undefined }, [key, ' ' + s.name]);
    }),
  );
  return el('figure', { class: 'chart-box' }, [
    el('figcaption', {}, [o.title]),
    svg,
    o.series.length > 1 ? legend : null,
    o.note ? el('p', { class: 'note' }, [o.note]) : null,
  ]);
}

/** A chart with nothing to draw (one point, or every value 0): its values as text. */
function plainChart(o: ChartOptions, allZero: boolean): HTMLElement {
  const values: string[] = [];
  o.series.forEach((s) =>
    s.ys.forEach((y, i) => {
      if (typeof y !== 'number' || !isFinite(y)) return;
      const x = o.cats ? o.cats[i] : (o.xFmt || scaled)(o.xs![i]!);
      values.push(s.name + ' at ' + x + ': ' + valueText(o, y));
    }),
  );
  const text =
    o.flat ||
    (allZero
      ? 'Every value is ' + (o.unit ? formatValue(0, o.unit) : '0') + ': nothing to draw.'
      : values.join('; ') + ' (one point: nothing to draw).');
  return el('figure', { class: 'chart-box plain', 'data-plain': o.id }, [
    el('figcaption', {}, [o.title]),
    el('p', { class: 'plain-value' }, [text]),
  ]);
}
