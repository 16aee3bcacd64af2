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
export function scaled(value: number): string {
  const abs = Math.abs(value);
  const digits = abs >= 100 ? 0 : abs >= 10 ? 1 : abs >= 1 ? 2 : 3;
  return String(Number(value.toFixed(digits)));
}

/** Round ticks that cover [lo, hi]: the axis ends on a labelled tick at or beyond the data. */
function ticks(lo: number, hi: number, count: number): number[] {
  if (!(hi > lo)) hi = lo + 1;
  let step = Math.pow(10, Math.floor(Math.log10((hi - lo) / count)));
  const ratio = (hi - lo) / count / step;
  step *= ratio >= 5 ? 10 : ratio >= 2 ? 5 : ratio >= 1 ? 2 : 1;
  const out: number[] = [];
  for (let tick = Math.floor(lo / step + 1e-9) * step; tick < hi + step * (1 - 1e-9); tick += step)
    out.push(Math.abs(tick) < step * 1e-9 ? 0 : tick);
  return out;
}

let chartWidth = 660;
/** The width charts are drawn at (main.ts sets it from the page's width, before any is drawn), so their text stays readable. */
export function setChartWidth(width: number): void {
  chartWidth = width;
}

const valueText = (options: ChartOptions, value: number) => (options.unit ? formatValue(value, options.unit) : exact(value));

export function chart(options: ChartOptions): HTMLElement {
  const svgWidth = chartWidth,
    svgHeight = 280,
    marginLeft = 62,
    marginRight = 16,
    marginTop = 24,
    marginBottom = 56;
  const ys: number[] = [];
  const at: number[] = [];
  options.series.forEach((series) =>
    series.ys.forEach((value, i) => {
      if (typeof value === 'number' && isFinite(value)) {
        ys.push(value);
        if (at.indexOf(i) < 0) at.push(i);
      }
    }),
  );
  // Lines through one point, or values that are all 0 (the axis always holds 0), draw nothing
  // an axis could show: a 0-1 axis around a lone 0 reads as a measurement. Said in words instead.
  const allZero = ys.length > 0 && !options.hline && ys.every((value) => value === 0);
  if (allZero || (options.kind !== 'bars' && at.length === 1)) return plainChart(options, allZero);
  const svg = sv('svg', {
    class: 'chart',
    'data-chart': options.id,
    viewBox: '0 0 ' + svgWidth + ' ' + svgHeight,
    role: 'img',
    'aria-label': options.title,
  });
  svg.appendChild(sv('title', {}, options.title));
  if (options.hline) ys.push(options.hline.y);
  let lo = Math.min(...ys, 0);
  let hi = Math.max(...ys, 0);
  if (hi === lo) hi = lo + 1;
  const yTicks = ticks(lo, hi, 5);
  lo = yTicks[0]!;
  hi = yTicks[yTicks.length - 1]!;
  svg.setAttribute('data-y-range', lo + ' ' + hi);
  svg.setAttribute('data-plot', [marginLeft, marginTop, svgWidth - marginRight, svgHeight - marginBottom].join(' '));
  const yPixel = (value: number) => marginTop + (svgHeight - marginTop - marginBottom) * (1 - (value - lo) / (hi - lo));
  const cats = options.cats;
  const xs = options.xs ?? [];
  const catCount = cats ? cats.length : 0;
  let xPixel: (x: number) => number;
  if (cats) {
    xPixel = (i) => marginLeft + (svgWidth - marginLeft - marginRight) * ((i + 0.5) / catCount);
  } else {
    const xv = xs.map((xValue) => (options.logX ? Math.log2(xValue) : xValue));
    let xlo = Math.min(...xv);
    let xhi = Math.max(...xv);
    if (!options.logX) xlo = Math.min(0, xlo);
    if (xhi === xlo) {
      xhi = xlo + 1;
      xlo = xlo - 1;
    }
    const xpad = (xhi - xlo) * 0.06;
    xPixel = (xValue) =>
      marginLeft +
      (svgWidth - marginLeft - marginRight) * (((options.logX ? Math.log2(xValue) : xValue) - xlo + xpad) / (xhi - xlo + 2 * xpad));
  }
  const axes = sv('g', { class: 'axes' });
  yTicks.forEach((tick) => {
    axes.appendChild(
      sv('line', { x1: marginLeft, x2: svgWidth - marginRight, y1: yPixel(tick), y2: yPixel(tick), class: tick === 0 ? 'zero' : 'grid' }),
    );
    axes.appendChild(
      sv('text', { x: marginLeft - 6, y: yPixel(tick) + 4, 'text-anchor': 'end', class: 'y-tick' }, (options.yFmt || scaled)(tick)),
    );
  });
  const xLabels: [number, string][] = cats
    ? cats.map((category, i) => [xPixel(i), category])
    : xs.map((xValue) => [xPixel(xValue), (options.xFmt || scaled)(xValue)]);
  // As many x labels as fit the width (about 60 px each).
  const every = Math.max(1, Math.ceil(xLabels.length / Math.max(2, Math.floor((svgWidth - marginLeft - marginRight) / 60))));
  xLabels.forEach(([labelX, label], i) => {
    if (i % every === 0) axes.appendChild(sv('text', { x: labelX, y: svgHeight - marginBottom + 16, 'text-anchor': 'middle' }, label));
  });
  axes.appendChild(
    sv(
      'text',
      { x: marginLeft + (svgWidth - marginLeft - marginRight) / 2, y: svgHeight - 8, 'text-anchor': 'middle', class: 'label' },
      options.xLabel,
    ),
  );
  const middle = marginTop + (svgHeight - marginTop - marginBottom) / 2;
  axes.appendChild(
    sv('text', { x: 14, y: middle, transform: 'rotate(-90 14 ' + middle + ')', 'text-anchor': 'middle', class: 'label' }, options.yLabel),
  );
  svg.appendChild(axes);
  if (options.hline) {
    svg.appendChild(
      sv('line', { x1: marginLeft, x2: svgWidth - marginRight, y1: yPixel(options.hline.y), y2: yPixel(options.hline.y), class: 'hline' }),
    );
    svg.appendChild(
      sv(
        'text',
        { x: svgWidth - marginRight - 4, y: yPixel(options.hline.y) + 14, 'text-anchor': 'end', class: 'hline-label' },
        options.hline.label,
      ),
    );
  }
  const marks = sv('g', { class: 'marks' });
  const colorOf = (series: Series, si: number) => series.color || COLORS[si % COLORS.length]!;
  options.series.forEach((series, si) => {
    const color = colorOf(series, si);
    if (options.kind === 'bars') {
      const slot = (svgWidth - marginLeft - marginRight) / Math.max(catCount, 1);
      const barWidth = Math.max(1, (slot * 0.8) / options.series.length);
      series.ys.forEach((value, i) => {
        if (typeof value !== 'number') return;
        const barX = marginLeft + slot * i + slot * 0.1 + barWidth * si;
        const top = Math.min(yPixel(value), yPixel(0));
        const height = Math.max(1, Math.abs(yPixel(value) - yPixel(0)));
        marks
          .appendChild(sv('rect', { x: barX, y: top, width: barWidth, height, fill: color, 'fill-opacity': series.dash ? 0.45 : 1 }))
          .appendChild(sv('title', {}, series.name + ': ' + (cats ? cats[i] : '') + ' ' + valueText(options, value)));
      });
      return;
    }
    // [x, y on the chart, the value, its index]
    const points: [number, number, number, number][] = [];
    series.ys.forEach((value, i) => {
      if (typeof value === 'number' && isFinite(value)) points.push([cats ? xPixel(i) : xPixel(xs[i]!), yPixel(value), value, i]);
    });
    if (options.kind === 'line' && points.length > 1) {
      const pathData = points.map((point, i) => (i ? 'L' : 'M') + point[0].toFixed(1) + ' ' + point[1].toFixed(1)).join(' ');
      marks.appendChild(
        sv('path', { d: pathData, stroke: color, fill: 'none', 'stroke-width': series.width || 2, 'stroke-dasharray': series.dash }),
      );
    }
    points.forEach(([pointX, pointY, value, i]) => {
      const circle = marks.appendChild(
        sv('circle', {
          cx: pointX.toFixed(1),
          cy: pointY.toFixed(1),
          r: (series.width ?? 0) > 2 ? 4.5 : 3.5,
          fill: series.dash ? '#fff' : color,
          stroke: color,
          'stroke-width': 1.5,
        }),
      );
      circle.appendChild(sv('title', {}, series.name + ': ' + valueText(options, value)));
      // A label reads away from the nearer edge, so that none is cut off.
      if (series.labels) {
        const right = pointX > svgWidth / 2;
        marks.appendChild(
          sv(
            'text',
            { x: right ? pointX - 6 : pointX + 6, y: pointY - 8, 'text-anchor': right ? 'end' : 'start', class: 'point-label' },
            series.labels[i],
          ),
        );
      }
    });
  });
  svg.appendChild(marks);
  // The legend in the order the series are listed (options.legendOrder), whatever order they are drawn in.
  const listed = (options.legendOrder || options.series.map((_, si) => si)).map((si): [Series, number] => [options.series[si]!, si]);
  const legend = el(
    'div',
    { class: 'legend' },
    listed.map(([series, si]) => {
      const color = colorOf(series, si);
      const key = sv('svg', { width: 22, height: 10, class: 'key' });
      const bars = options.kind === 'bars';
      key.appendChild(
        sv('line', {
          x1: 1,
          x2: 21,
          y1: 5,
          y2: 5,
          stroke: color,
          'stroke-width': bars ? 8 : series.width || 2,
          'stroke-dasharray': bars ? undefined : series.dash,
          'stroke-opacity': bars && series.dash ? 0.45 : 1,
        }),
      );
      return el('span', { class: series.strong ? 'strong' : undefined }, [key, ' ' + series.name]);
    }),
  );
  return el('figure', { class: 'chart-box' }, [
    el('figcaption', {}, [options.title]),
    svg,
    options.series.length > 1 ? legend : null,
    options.note ? el('p', { class: 'note' }, [options.note]) : null,
  ]);
}

/** A chart with nothing to draw (one point, or every value 0): its values as text. */
function plainChart(options: ChartOptions, allZero: boolean): HTMLElement {
  const values: string[] = [];
  options.series.forEach((series) =>
    series.ys.forEach((value, i) => {
      if (typeof value !== 'number' || !isFinite(value)) return;
      const xText = options.cats ? options.cats[i] : (options.xFmt || scaled)(options.xs![i]!);
      values.push(series.name + ' at ' + xText + ': ' + valueText(options, value));
    }),
  );
  const text =
    options.flat ||
    (allZero
      ? 'Every value is ' + (options.unit ? formatValue(0, options.unit) : '0') + ': nothing to draw.'
      : values.join('; ') + ' (one point: nothing to draw).');
  return el('figure', { class: 'chart-box plain', 'data-plain': options.id }, [
    el('figcaption', {}, [options.title]),
    el('p', { class: 'plain-value' }, [text]),
  ]);
}
