/**
 * The page's building blocks: elements, SVG elements, links, numbers and tables. Data strings
 * only ever go into text nodes and attributes (createTextNode, setAttribute), never into markup.
 */
import { formatValue } from '../../core/units.ts';

type Attrs = Record<string, string | number | null | undefined>;
export type Kid = Node | string | null | undefined;

export function el<K extends keyof HTMLElementTagNameMap>(tag: K, attrs: Attrs = {}, kids: readonly Kid[] = []): HTMLElementTagNameMap[K] {
  const element = document.createElement(tag);
  for (const name in attrs) {
    const value = attrs[name];
    if (value !== undefined && value !== null) element.setAttribute(name, String(value));
  }
  for (const kid of kids) {
    if (kid !== null && kid !== undefined && kid !== '') element.appendChild(typeof kid === 'string' ? document.createTextNode(kid) : kid);
  }
  return element;
}

const SVG = 'http://www.w3.org/2000/svg';

export function sv(tag: string, attrs: Record<string, string | number | undefined> = {}, text?: string): SVGElement {
  const element = document.createElementNS(SVG, tag) as SVGElement;
  for (const name in attrs) {
    const value = attrs[name];
    if (value !== undefined) element.setAttribute(name, String(value));
  }
  if (text !== undefined) element.textContent = text;
  return element;
}

export function link(text: string, href: string): HTMLAnchorElement {
  return el('a', { href }, [text]);
}

/**
 * An identifier (cuda_driver_version, probe.metric_name) that may wrap only after its
 * underscores and dots: a <wbr> there, and the CSS lets no word break elsewhere.
 */
export function breakable(text: string, cls?: string): HTMLSpanElement {
  // Split at the separators, kept (odd places): "cuda", "_", "driver", ...; a <wbr> after each.
  const kids: Kid[] = [];
  String(text)
    .split(/([_.])(?=\w)/)
    .forEach((part, i) => {
      kids.push(part);
      if (i % 2) kids.push(el('wbr'));
    });
  return el('span', { class: cls || 'ident' }, kids);
}

/** A recorded number exactly, with thousands separators if whole ("150,109,880,320"): what a value's hover shows. */
export function exact(value: number | null | undefined): string {
  if (value === null || value === undefined) return '—';
  if (Number.isInteger(value)) return String(value).replace(/\B(?=(\d{3})+(?!\d))/g, ',');
  return String(value);
}

/** A number with its unit as the console writes it; the exact value as recorded on hover. */
export function num(value: number | null | undefined, unit: string): HTMLSpanElement {
  const title = value === null || value === undefined ? undefined : exact(value) + (unit === 'ratio' ? '' : ' ' + unit);
  return el('span', { class: 'num', title }, [formatValue(value ?? null, unit)]);
}

/** A table of rows under their headings; the first cell of a row is its heading. */
export function table(head: readonly string[], rows: readonly (readonly Kid[])[], cls?: string): HTMLDivElement {
  return el('div', { class: 'scroll' }, [
    el('table', { class: cls || 'numbers' }, [
      el('thead', {}, [
        el(
          'tr',
          {},
          head.map((heading) => el('th', {}, [heading])),
        ),
      ]),
      // Each cell says its heading (data-label): on a narrow screen a row is a card of labelled values.
      el(
        'tbody',
        {},
        rows.map((row) =>
          el(
            'tr',
            {},
            row.map((cell, i) =>
              i ? el('td', { 'data-label': head[i] }, [cell]) : el('th', {}, [typeof cell === 'string' ? breakable(cell) : cell]),
            ),
          ),
        ),
      ),
    ]),
  ]);
}

/** A column's name on the page: "#1", "#2", ... */
export function colName(i: number): string {
  return '#' + (i + 1);
}
