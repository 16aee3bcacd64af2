/**
 * The script of behaviour.html, as text: it reads the page's embedded data (page-data.ts) and
 * draws every table and chart with the DOM and SVG, so the page needs nothing from outside
 * (no CDN, no fetch) and a chart library is not needed: the charts are a few kinds of axes,
 * lines, markers and bars. Data strings only ever go into textContent and attributes, never
 * into markup. Written as plain ES2017 in a string (not a function's source): the TypeScript
 * toolchains insert helpers into functions that a browser would not have.
 */

/**
 * core/units.ts's formatValue (what the console writes: "55.4 GB/s", "8.43 us", "1.02 GiB"),
 * in the page's plain JavaScript; report/report.test.ts checks that the two agree.
 */
export const FORMAT_SCRIPT = String.raw`
  function formatValue(value, unit) {
    if (value === null || value === undefined || typeof value !== 'number' || !isFinite(value)) return '—';
    if (unit === 'bytes') {
      var abs = Math.abs(value), steps = [['GiB', Math.pow(1024, 3)], ['MiB', Math.pow(1024, 2)], ['KiB', 1024]];
      for (var i = 0; i < steps.length; i++) if (abs >= steps[i][1]) return roundValue(value / steps[i][1]) + ' ' + steps[i][0];
      return value + ' B';
    }
    if (unit === 'ratio') return roundValue(value);
    if (unit === 'percent') return roundValue(value) + ' %';
    return roundValue(value) + ' ' + unit;
  }
  function roundValue(v) {
    var abs = Math.abs(v);
    var text = v.toFixed(abs >= 100 ? 0 : abs >= 10 ? 1 : abs >= 1 ? 2 : 3);
    return text.indexOf('.') >= 0 ? text.replace(/\.?0+$/, '') : text;
  }
`;

export const CLIENT_SCRIPT =
  String.raw`
(function () {
  'use strict';
  var D = JSON.parse(document.getElementById('report-data').textContent);
  var S = D.strs;
  var SVG = 'http://www.w3.org/2000/svg';
  var COLORS = ['#1f77b4', '#d62728', '#2ca02c', '#ff7f0e', '#9467bd', '#8c564b', '#e377c2', '#17becf', '#7f7f7f', '#bcbd22', '#393b79', '#637939'];
  /** Line styles of the sources that did not decide (the deciding one is solid, thick and on top). */
  var DASHES = ['7 4', '2 3', '10 3 2 3', '4 2', '1 4', '12 4'];
` +
  FORMAT_SCRIPT +
  String.raw`
  function el(tag, attrs, kids) {
    var e = document.createElement(tag);
    for (var k in attrs || {}) if (attrs[k] !== undefined && attrs[k] !== null) e.setAttribute(k, String(attrs[k]));
    (kids || []).forEach(function (c) { if (c !== null && c !== undefined && c !== '') e.appendChild(typeof c === 'string' ? document.createTextNode(c) : c); });
    return e;
  }
  /**
   * An identifier (cuda_driver_version, probe.metric_name) that may wrap only after its
   * underscores and dots: a <wbr> there, and the CSS lets no word break elsewhere.
   */
  function breakable(text, cls) {
    // Split at the separators, kept (odd places): "cuda", "_", "driver", ...; a <wbr> after each.
    var kids = [];
    String(text).split(/([_.])(?=\w)/).forEach(function (part, i) { kids.push(part); if (i % 2) kids.push(el('wbr')); });
    return el('span', { class: cls || 'ident' }, kids);
  }
  function sv(tag, attrs, text) {
    var e = document.createElementNS(SVG, tag);
    for (var k in attrs || {}) if (attrs[k] !== undefined) e.setAttribute(k, String(attrs[k]));
    if (text !== undefined) e.textContent = text;
    return e;
  }
  function link(text, href) { return el('a', { href: href }, [text]); }

  // Numbers: with their unit as the console writes them; the exact value as recorded on hover.
  function exact(v) {
    if (v === null || v === undefined) return '—';
    if (Number.isInteger(v)) return String(v).replace(/\B(?=(\d{3})+(?!\d))/g, ',');
    return String(v);
  }
  function num(v, unit) { return el('span', { class: 'num', title: v === null || v === undefined ? undefined : exact(v) + (unit === 'ratio' ? '' : ' ' + unit) }, [formatValue(v, unit)]); }
  function scaled(v) {
    var a = Math.abs(v);
    var d = a >= 100 ? 0 : a >= 10 ? 1 : a >= 1 ? 2 : 3;
    return String(Number(v.toFixed(d)));
  }
  function bytesUnit(maxAbs) { return maxAbs >= Math.pow(1024, 3) ? ['GiB', Math.pow(1024, 3)] : maxAbs >= Math.pow(1024, 2) ? ['MiB', Math.pow(1024, 2)] : maxAbs >= 1024 ? ['KiB', 1024] : ['B', 1]; }
  function sizeText(b) { return formatValue(b, 'bytes'); }

  /** Round ticks that cover [lo, hi]: the axis ends on a labelled tick at or beyond the data. */
  function ticks(lo, hi, n) {
    if (!(hi > lo)) { hi = lo + 1; }
    var step = Math.pow(10, Math.floor(Math.log10((hi - lo) / n)));
    var m = (hi - lo) / n / step;
    step *= m >= 5 ? 10 : m >= 2 ? 5 : m >= 1 ? 2 : 1;
    var out = [];
    for (var t = Math.floor(lo / step + 1e-9) * step; t < hi + step * (1 - 1e-9); t += step) out.push(Math.abs(t) < step * 1e-9 ? 0 : t);
    return out;
  }

  var chartWidth = 660;
  /**
   * One chart: o.kind 'line' (x numeric or categorical, lines with markers), 'points' (markers
   * with labels) or 'bars' (categorical x, grouped bars). o.series: [{name, ys, color?, dash?,
   * width?, labels?}], o.xs values or o.cats labels, o.logX, o.xLabel, o.yLabel, o.hline {y, label};
   * o.flat: what to say instead of a chart with nothing to draw (plainChart).
   */
  function chart(o) {
    var W = chartWidth, H = 280, L = 62, R = 16, T = 24, B = 56;
    var ys = [], at = [];
    o.series.forEach(function (s) { s.ys.forEach(function (y, i) { if (typeof y === 'number' && isFinite(y)) { ys.push(y); if (at.indexOf(i) < 0) at.push(i); } }); });
    // Lines through one point, or values that are all 0 (the axis always holds 0), draw nothing
    // an axis could show: a 0-1 axis around a lone 0 reads as a measurement. Said in words instead.
    var allZero = ys.length && !o.hline && ys.every(function (y) { return y === 0; });
    if (allZero || (o.kind !== 'bars' && at.length === 1)) return plainChart(o, allZero);
    var svg = sv('svg', { class: 'chart', 'data-chart': o.id, viewBox: '0 0 ' + W + ' ' + H, role: 'img', 'aria-label': o.title });
    svg.appendChild(sv('title', {}, o.title));
    if (o.hline) ys.push(o.hline.y);
    var lo = Math.min.apply(null, ys.concat([0])), hi = Math.max.apply(null, ys.concat([0]));
    if (hi === lo) hi = lo + 1;
    var yt = ticks(lo, hi, 5);
    lo = yt[0]; hi = yt[yt.length - 1];
    svg.setAttribute('data-y-range', lo + ' ' + hi);
    svg.setAttribute('data-plot', [L, T, W - R, H - B].join(' '));
    var Y = function (v) { return T + (H - T - B) * (1 - (v - lo) / (hi - lo)); };
    var n = o.cats ? o.cats.length : 0;
    var X;
    if (o.cats) {
      X = function (i) { return L + (W - L - R) * ((i + 0.5) / n); };
    } else {
      var xv = o.xs.map(function (x) { return o.logX ? Math.log2(x) : x; });
      var xlo = Math.min.apply(null, xv), xhi = Math.max.apply(null, xv);
      if (!o.logX) { xlo = Math.min(0, xlo); }
      if (xhi === xlo) { xhi = xlo + 1; xlo = xlo - 1; }
      var xpad = (xhi - xlo) * 0.06;
      X = function (x) { var v = o.logX ? Math.log2(x) : x; return L + (W - L - R) * ((v - xlo + xpad) / (xhi - xlo + 2 * xpad)); };
    }
    var g = sv('g', { class: 'axes' });
    yt.forEach(function (t) {
      g.appendChild(sv('line', { x1: L, x2: W - R, y1: Y(t), y2: Y(t), class: t === 0 ? 'zero' : 'grid' }));
      g.appendChild(sv('text', { x: L - 6, y: Y(t) + 4, 'text-anchor': 'end', class: 'y-tick' }, (o.yFmt || scaled)(t)));
    });
    var xLabels = o.cats ? o.cats.map(function (c, i) { return [X(i), c]; }) : o.xs.map(function (x) { return [X(x), (o.xFmt || scaled)(x)]; });
    // As many x labels as fit the width (about 60 px each).
    var every = Math.max(1, Math.ceil(xLabels.length / Math.max(2, Math.floor((W - L - R) / 60))));
    xLabels.forEach(function (p, i) { if (i % every === 0) g.appendChild(sv('text', { x: p[0], y: H - B + 16, 'text-anchor': 'middle' }, p[1])); });
    g.appendChild(sv('text', { x: L + (W - L - R) / 2, y: H - 8, 'text-anchor': 'middle', class: 'label' }, o.xLabel));
    g.appendChild(sv('text', { x: 14, y: T + (H - T - B) / 2, transform: 'rotate(-90 14 ' + (T + (H - T - B) / 2) + ')', 'text-anchor': 'middle', class: 'label' }, o.yLabel));
    svg.appendChild(g);
    if (o.hline) {
      svg.appendChild(sv('line', { x1: L, x2: W - R, y1: Y(o.hline.y), y2: Y(o.hline.y), class: 'hline' }));
      svg.appendChild(sv('text', { x: W - R - 4, y: Y(o.hline.y) + 14, 'text-anchor': 'end', class: 'hline-label' }, o.hline.label));
    }
    var marks = sv('g', { class: 'marks' });
    var colorOf = function (s, si) { return s.color || COLORS[si % COLORS.length]; };
    o.series.forEach(function (s, si) {
      var color = colorOf(s, si);
      if (o.kind === 'bars') {
        var slot = (W - L - R) / Math.max(n, 1), bw = Math.max(1, slot * 0.8 / o.series.length);
        s.ys.forEach(function (y, i) {
          if (typeof y !== 'number') return;
          var x = L + slot * i + slot * 0.1 + bw * si;
          var top = Math.min(Y(y), Y(0)), h = Math.max(1, Math.abs(Y(y) - Y(0)));
          marks.appendChild(sv('rect', { x: x, y: top, width: bw, height: h, fill: color, 'fill-opacity': s.dash ? 0.45 : 1 }, undefined)).appendChild(sv('title', {}, s.name + ': ' + (o.cats ? o.cats[i] : '') + ' ' + (o.unit ? formatValue(y, o.unit) : exact(y))));
        });
        return;
      }
      var pts = [];
      s.ys.forEach(function (y, i) { if (typeof y === 'number' && isFinite(y)) pts.push([o.cats ? X(i) : X(o.xs[i]), Y(y), y, i]); });
      if (o.kind === 'line' && pts.length > 1) {
        marks.appendChild(sv('path', { d: pts.map(function (p, i) { return (i ? 'L' : 'M') + p[0].toFixed(1) + ' ' + p[1].toFixed(1); }).join(' '), stroke: color, fill: 'none', 'stroke-width': s.width || 2, 'stroke-dasharray': s.dash }));
      }
      pts.forEach(function (p) {
        var c = marks.appendChild(sv('circle', { cx: p[0].toFixed(1), cy: p[1].toFixed(1), r: s.width > 2 ? 4.5 : 3.5, fill: s.dash ? '#fff' : color, stroke: color, 'stroke-width': 1.5 }));
        c.appendChild(sv('title', {}, s.name + ': ' + (o.unit ? formatValue(p[2], o.unit) : exact(p[2]))));
        // A label reads away from the nearer edge, so that none is cut off.
        if (s.labels) marks.appendChild(sv('text', { x: p[0] > W / 2 ? p[0] - 6 : p[0] + 6, y: p[1] - 8, 'text-anchor': p[0] > W / 2 ? 'end' : 'start', class: 'point-label' }, s.labels[p[3]]));
      });
    });
    svg.appendChild(marks);
    // The legend in the order the series are listed (o.legendOrder), whatever order they are drawn in.
    var listed = (o.legendOrder || o.series.map(function (s, si) { return si; })).map(function (si) { return [o.series[si], si]; });
    var legend = el('div', { class: 'legend' }, listed.map(function (p) {
      var s = p[0], color = colorOf(s, p[1]);
      var key = sv('svg', { width: 22, height: 10, class: 'key' });
      key.appendChild(sv('line', { x1: 1, x2: 21, y1: 5, y2: 5, stroke: color, 'stroke-width': o.kind === 'bars' ? 8 : s.width || 2, 'stroke-dasharray': o.kind === 'bars' ? undefined : s.dash, 'stroke-opacity': o.kind === 'bars' && s.dash ? 0.45 : 1 }));
      return el('span', { class: s.strong ? 'strong' : undefined }, [key, ' ' + s.name]);
    }));
    return el('figure', { class: 'chart-box' }, [el('figcaption', {}, [o.title]), svg, o.series.length > 1 ? legend : null, o.note ? el('p', { class: 'note' }, [o.note]) : null]);
  }

  /** A chart with nothing to draw (one point, or every value 0): its values as text. */
  function plainChart(o, allZero) {
    var values = [];
    o.series.forEach(function (s) {
      s.ys.forEach(function (y, i) {
        if (typeof y !== 'number' || !isFinite(y)) return;
        var x = o.cats ? o.cats[i] : (o.xFmt || scaled)(o.xs[i]);
        values.push(s.name + ' at ' + x + ': ' + (o.unit ? formatValue(y, o.unit) : exact(y)));
      });
    });
    var text = o.flat || (allZero ? 'Every value is ' + (o.unit ? formatValue(0, o.unit) : '0') + ': nothing to draw.' : values.join('; ') + ' (one point: nothing to draw).');
    return el('figure', { class: 'chart-box plain', 'data-plain': o.id }, [el('figcaption', {}, [o.title]), el('p', { class: 'plain-value' }, [text])]);
  }

  function table(head, rows, cls) {
    return el('div', { class: 'scroll' }, [el('table', { class: cls || 'numbers' }, [
      el('thead', {}, [el('tr', {}, head.map(function (h) { return el('th', {}, [h]); }))]),
      // Each cell says its heading (data-label): on a narrow screen a row is a card of labelled values.
      el('tbody', {}, rows.map(function (r) { return el('tr', {}, r.map(function (c, i) { return i ? el('td', { 'data-label': head[i] }, [c]) : el('th', {}, [typeof c === 'string' ? breakable(c) : c]); })); })),
    ])]);
  }

  var cols = D.columns;
  function colName(i) { return '#' + (i + 1); }

  // The summary line.
  var root = document.getElementById('report');
  var envs = [], drivers = [];
  cols.forEach(function (c) { if (envs.indexOf(S[c.env]) < 0) envs.push(S[c.env]); if (drivers.indexOf(S[c.driver]) < 0) drivers.push(S[c.driver]); });
  root.appendChild(el('p', { id: 'summary' }, [D.records + ' record' + (D.records === 1 ? '' : 's') + ' in ' + cols.length + ' column' + (cols.length === 1 ? '' : 's') +
    (cols.length ? '; environments: ' + envs.join(', ') + '; driver versions: ' + drivers.join(', ') : '') + '.']));
  if (!cols.length) {
    root.appendChild(el('p', {}, ['No behaviour records yet: write some with cudamatrix record <events.jsonl>, then run cudamatrix report.']));
    return;
  }
  // Two charts a row where the page is wide enough, one where it is not: drawn at the width they get, so the text stays readable.
  var avail = root.clientWidth || 660;
  // (As html.ts's .charts grid: two columns of at least 580 px, the width a memory table of six phases needs, and a 28 px gap.)
  chartWidth = Math.round(Math.max(300, Math.min(900, avail >= 2 * 580 + 28 ? (avail - 28) / 2 : avail)));

  // Facts: every column.
  root.appendChild(el('h2', { id: 'facts' }, ['Facts']));
  root.appendChild(el('p', {}, ['One column per observation (environment · GPU · driver · OS); every value links to the record it comes from. ⚠ marks records of one observation that disagree on a fact; a highlighted value changed from the previous driver of the same environment, GPU and OS (its value there is shown under it).']));
  var head = el('tr', {}, [el('th', {}, ['fact']), el('th', {}, ['claims'])].concat(cols.map(function (c, i) {
    return el('th', { class: 'col' }, [colName(i) + ' ', link(S[c.text], S[c.link]), c.records > 1 ? el('small', {}, [' (' + c.records + ' records)']) : null]);
  })));
  var body = el('tbody');
  // The reasons facts have no value: one note per reason, numbered in the order of the table, with the facts it is for.
  var reasons = [];
  function reasonNote(reason, fact, col) {
    var k = reasons.map(function (r) { return r.reason; }).indexOf(reason);
    if (k < 0) { reasons.push({ reason: reason, facts: [] }); k = reasons.length - 1; }
    reasons[k].facts.push([fact, col]);
    return k + 1;
  }
  D.facts.forEach(function (g) {
    body.appendChild(el('tr', { class: 'group' }, [el('th', { colspan: 2 + cols.length }, [S[g.probe] + ': ' + S[g.title] + (g.claims.length ? ' (' + g.claims.map(function (c) { return S[c]; }).join(', ') + ')' : '')])]));
    g.rows.forEach(function (row) {
      var tr = el('tr', { 'data-fact': S[g.probe] + '.' + S[row.fact] }, [el('th', { title: S[row.desc] }, [breakable(S[row.fact], 'ident fact-name'), S[row.desc] ? el('small', {}, [' ', breakable(S[row.desc], 'desc')]) : null]), el('td', {}, [g.claims.map(function (c) { return S[c]; }).join(', ')])]);
      var changed = {};
      (row.changed || []).forEach(function (ch) { changed[ch[0]] = ch[1]; });
      row.cells.forEach(function (cell, i) {
        var td;
        if (cell === -1) td = el('td', { class: 'none' }, ['–']);
        else if (typeof cell === 'number') td = el('td', { 'data-value': S[cell] }, [link(S[cell], S[cols[i].link])]);
        else {
          td = el('td', cell.length > 1 ? { class: row.sys ? 'varies' : 'conflict' } : { 'data-value': S[cell[0][0]] });
          if (cell.length > 1) td.appendChild(document.createTextNode(row.sys ? 'varies: ' : '⚠ conflict: '));
          cell.forEach(function (v, k) {
            if (k) td.appendChild(document.createTextNode(' ≠ '));
            var a = link(S[v[0]], S[v[1]]);
            td.appendChild(a);
            if (v[2] !== undefined) {
              // The reason a value is missing, as a numbered note under the table (visible, and printed), and on hover.
              a.setAttribute('title', S[v[2]]);
              var n = reasonNote(v[2], S[g.probe] + '.' + S[row.fact], i);
              td.appendChild(el('a', { href: '#reason-' + n, class: 'note-ref', title: S[v[2]] }, [el('sup', {}, [String(n)])]));
            }
          });
        }
        if (changed[i] !== undefined) {
          td.classList.add('changed');
          td.setAttribute('title', 'changed: ' + S[changed[i]] + ' in ' + colName(cols[i].prev) + ' (driver ' + S[cols[cols[i].prev].driver] + ')');
          td.appendChild(el('small', { class: 'was' }, ['was ' + S[changed[i]] + ' in ' + colName(cols[i].prev)]));
        }
        tr.appendChild(td);
      });
      body.appendChild(tr);
    });
  });
  root.appendChild(el('div', { class: 'scroll' }, [el('table', { class: 'facts' }, [el('thead', {}, [head]), body])]));
  root.appendChild(el('p', { class: 'note' }, ['– : not recorded for that column. A number after a value: the value is missing (null), and the note of that number below says why.']));
  if (reasons.length) {
    root.appendChild(el('ol', { class: 'reasons', id: 'reasons' }, reasons.map(function (r, k) {
      var facts = r.facts.map(function (f) { return f[0] + ' (' + colName(f[1]) + ')'; }).join(', ');
      return el('li', { id: 'reason-' + (k + 1), 'data-reason': S[r.reason] }, [S[r.reason], el('small', {}, [' ', breakable(facts, 'desc')])]);
    })));
  }

  // Key metrics: the newest record of every column.
  root.appendChild(el('h2', { id: 'metrics' }, ['Key metrics']));
  root.appendChild(el('p', {}, ['From the newest record of each column, with units as the console writes them (hover a value for the exact one). ⚠ marks a value that moved beyond its noise against the column\'s earlier records (see "Metrics drifted", the value before under it) or against the previous driver\'s column of the same environment and GPU (see "Changed between drivers", its value there under it).']));
  // A key metric's value: formatValue's, or for a negative value of a metric whose sign turns its
  // meaning, what it means (table.ts keyMetricText: "none: stopped 135 GiB under free VRAM").
  function keyText(m, v) {
    return m.negative !== undefined && typeof v === 'number' && v < 0 ? S[m.negative].replace('{}', formatValue(-v, S[m.unit])) : formatValue(v, S[m.unit]);
  }
  function keyValue(m, v) {
    var span = num(v, S[m.unit]);
    span.textContent = keyText(m, v);
    return span;
  }
  var mhead = el('tr', {}, ['metric', 'claims'].concat(cols.map(function (c, i) { return colName(i); })).map(function (h) { return el('th', {}, [h]); }));
  var mbody = el('tbody', {}, D.metrics.map(function (m) {
    var was = {}, before = {};
    (m.drifted || []).forEach(function (d) { was[d[0]] = d[1]; });
    (m.changed || []).forEach(function (d) { before[d[0]] = d[1]; });
    return el('tr', { 'data-metric': S[m.metric] + ': ' + S[m.label] }, [el('th', {}, [breakable(S[m.metric]), ': ' + S[m.label]]), el('td', { class: 'claims', 'data-label': 'claims' }, [m.claims.map(function (c) { return S[c]; }).join(', ')])].concat(m.cells.map(function (v, i) {
      if (v === null) return el('td', { class: 'none', 'data-label': colName(i) }, ['–']);
      var td = el('td', { 'data-label': colName(i) }, [keyValue(m, v[0]), v.length > 1 ? ' (' + S[v[1]] + ')' : null]);
      if (i in was || i in before) td.insertBefore(document.createTextNode('⚠ '), td.firstChild);
      if (i in was) {
        td.classList.add('drifted');
        td.appendChild(el('small', { class: 'was' }, ['was ' + keyText(m, was[i])]));
      }
      if (i in before) {
        var p = cols[i].prev;
        td.classList.add('changed-driver');
        td.setAttribute('title', 'beyond its noise against ' + colName(p) + ' (driver ' + S[cols[p].driver] + '): see Changed between drivers');
        td.appendChild(el('small', { class: 'was' }, ['was ' + keyText(m, before[i]) + ' (driver ' + S[cols[p].driver] + ')']));
      }
      return td;
    })));
  }));
  root.appendChild(el('div', { class: 'scroll' }, [el('table', { class: 'numbers metrics' }, [el('thead', {}, [mhead]), mbody])]));

  root.appendChild(el('h2', { id: 'between-drivers' }, ['Changed between drivers']));
  var changed = D.changes.filter(function (ch) { return ch.facts.length || ch.cells.length || ch.series.length; });
  if (!D.changes.length) root.appendChild(el('p', {}, ['None: no environment and GPU (with the same OS and container) has records of two driver versions.']));
  else root.appendChild(el('p', {}, [(changed.length ? '' : 'None: every driver has the facts, cell outcomes and metrics (within their noise) of the driver before it. ') +
    'Per environment, GPU, OS and container with records of two or more drivers: each driver\'s column against the previous driver\'s, by cudamatrix diff\'s engine. Each column is compared as one record (each probe from its newest record, as the column shows it); a metric with several runs in a column as their geometric mean, its noise measured from the runs of both columns. Every fact and cell outcome is compared; of the metrics, the series of the key metrics (every attribute, e.g. every transfer size).']));
  D.changes.forEach(function (ch) {
    var n = function (k, one, more) { return k + ' ' + (k === 1 ? one : more); };
    var series = ch.series.length + ch.more;
    root.appendChild(el('p', { class: 'change-head' }, [el('strong', {}, [S[ch.key]]), ': driver ' + S[cols[ch.from].driver] + ' (' + colName(ch.from) + ') → ' + S[cols[ch.to].driver] + ' (' + colName(ch.to) + '): ' +
      n(ch.facts.length, 'fact', 'facts') + ' changed' + (ch.cells.length ? ', ' + n(ch.cells.length, 'cell outcome', 'cell outcomes') + ' changed' : '') + ', ' + series + ' metric series beyond their noise (of ' + ch.compared[0] + ' facts and ' + ch.compared[1] + ' series compared)' +
      (ch.more ? '; the first ' + ch.series.length + ' here, cudamatrix diff lists them all' : '')]));
    var rows = ch.facts.map(function (f) { return [S[f[0]], S[f[1]], S[f[2]], '', '']; })
      .concat(ch.cells.map(function (c) { return ['cell ' + S[c[0]], S[c[1]], S[c[2]], '', '']; }))
      .concat(ch.series.map(function (s) {
        return [S[s[0]], num(s[2], S[s[1]]), num(s[3], S[s[1]]), s[4] === null ? '—' : formatValue(s[4] * 100, 'percent'), el('span', { title: S[s[6]] }, ['±' + formatValue(s[5] * 100, 'percent')])];
      }));
    if (rows.length) root.appendChild(table(['fact, cell or series', 'driver ' + S[cols[ch.from].driver], 'driver ' + S[cols[ch.to].driver], 'moved', 'noise'], rows, 'numbers changes'));
  });

  var drifted = cols.map(function (c, i) { return i; }).filter(function (i) { return cols[i].drift.length; });
  root.appendChild(el('h2', { id: 'drift' }, ['Metrics drifted']));
  if (!drifted.length) root.appendChild(el('p', {}, ['None: in every column with several records, each metric series\' newest value is within its noise of the column\'s earlier records.']));
  else root.appendChild(el('p', {}, ['Per metric series, a column\'s newest value (from the newest record that measured its probe) against the column\'s earlier records of that probe (the newest 16, since the last drift before them), where it moved beyond its noise (cudamatrix diff\'s engine). Earlier records are compared by their key metrics. The same facts with other numbers (a same-driver regression) is kept as a newer record of the column.']));
  drifted.forEach(function (i) {
    var c = cols[i];
    c.drift.forEach(function (d) {
      var against = d.earlier === 1 ? [link(S[d.from], S[d.link])] : [d.earlier + ' earlier records (the newest ', link(S[d.from], S[d.link]), ')'];
      root.appendChild(el('p', { class: 'drift-head' }, [el('strong', {}, [colName(i) + ' ' + S[c.text]]), ': ', link(S[d.to], S[d.toLink]), ' against '].concat(against).concat([': ' + (d.series.length + d.more) + ' metric series beyond their noise' + (d.more ? ' (the first ' + d.series.length + ' here; cudamatrix diff lists them all)' : '')])));
      root.appendChild(table(['series', 'before', 'newest', 'moved', 'noise'], d.series.map(function (s) {
        return [S[s[0]], num(s[2], S[s[1]]), num(s[3], S[s[1]]), s[4] === null ? '—' : formatValue(s[4] * 100, 'percent'), '±' + formatValue(s[5] * 100, 'percent')];
      }), 'numbers drift'));
    });
  });

  function metricValues(name, label) {
    var m = D.metrics.filter(function (x) { return S[x.metric] === name && (!label || S[x.label] === label); })[0];
    return cols.map(function (c, i) { return m && m.cells[i] ? m.cells[i][0] : null; });
  }
  var cats = cols.map(function (c, i) { return colName(i); });
  var cmp = el('div', { class: 'charts' });
  cmp.appendChild(chart({ id: 'compare-sync-latency', kind: 'bars', title: 'Launch + synchronize latency per column (C5)', cats: cats, xLabel: 'column', yLabel: 'µs', unit: 'us',
    series: [{ name: 'p50', ys: metricValues('sync-latency.p50_us') }, { name: 'p99', ys: metricValues('sync-latency.p99_us') }] }));
  cmp.appendChild(chart({ id: 'compare-bandwidth', kind: 'bars', title: 'Copy bandwidth at the largest size per column (C8)', cats: cats, xLabel: 'column', yLabel: 'GB/s', unit: 'GB/s',
    series: [{ name: 'H2D pinned', ys: metricValues('transfer-bandwidth.bandwidth_gbps', 'H2D pinned') }, { name: 'D2H pinned', ys: metricValues('transfer-bandwidth.bandwidth_gbps', 'D2H pinned') }, { name: 'H2D pageable', ys: metricValues('transfer-bandwidth.bandwidth_gbps', 'H2D pageable') }] }));
  root.appendChild(cmp);

  // Details of one column (its newest record), optionally with another column's drawn over it.
  root.appendChild(el('h2', { id: 'details' }, ['Charts of one column']));
  var option = function (c, i) { return el('option', { value: i }, [colName(i) + ' ' + S[c.text]]); };
  var picker = el('select', { id: 'column-picker' }, cols.map(option));
  var against = el('select', { id: 'compare-picker' }, [el('option', { value: '-1' }, ['nothing'])].concat(cols.map(option)));
  root.appendChild(el('p', { class: 'pickers' }, [el('label', {}, ['Column: ', picker]), ' ', el('label', {}, ['compared with: ', against])]));
  var details = el('div', { id: 'column-details' });
  root.appendChild(details);

  function probeHeading(probe) {
    var p = D.probes[probe] || { title: '', claims: [] };
    return el('h3', {}, [probe + ': ' + p.title + (p.claims.length ? ' (' + p.claims.join(', ') + ')' : '')]);
  }
  /** A series of the compared column: the same colour, dashed, its name prefixed with the column. */
  function other(s, j) { return { name: colName(j) + ' ' + s.name, ys: s.ys, color: s.color, dash: '6 4', labels: s.labels }; }
  function ownName(s, i, j) { return j >= 0 ? Object.assign({}, s, { name: colName(i) + ' ' + s.name }) : s; }

  function memoryChart(m, s, i, j) {
    var phases = s.phases.map(function (p) { return S[p]; });
    var deltas = function (series) {
      return series.values.map(function (vals) { var base = vals[0]; return vals.map(function (v) { return typeof v === 'number' && typeof base === 'number' ? v - base : null; }); });
    };
    var own = deltas(s);
    var deciding = m.deciding >= 0 ? S[m.deciding] : null;
    var lines = s.sources.map(function (src, k) {
      var isDeciding = S[src] === deciding;
      return { name: S[src] + (isDeciding ? ' (deciding)' : ''), ys: own[k], color: COLORS[k % COLORS.length], width: isDeciding ? 4 : 1.5, dash: isDeciding ? undefined : DASHES[k % DASHES.length], strong: isDeciding, deciding: isDeciding };
    });
    // The compared column's deciding source, for the series of the same subject (same label).
    var om = j >= 0 ? D.details[j].mem.filter(function (x) { return x.probe === m.probe; })[0] : null;
    var os = om ? om.series.filter(function (x) { return S[x.label] === S[s.label] && x.phases.length === s.phases.length; })[0] : null;
    if (os && om.deciding >= 0) {
      var k = os.sources.map(function (x) { return S[x]; }).indexOf(S[om.deciding]);
      if (k >= 0) lines.push({ name: colName(j) + ' ' + S[om.deciding] + ' (deciding)', ys: deltas(os)[k], color: '#000', width: 2.5, dash: '6 4', strong: true });
    }
    var maxAbs = 0;
    lines.forEach(function (l) { l.ys.forEach(function (v) { if (typeof v === 'number') maxAbs = Math.max(maxAbs, Math.abs(v)); }); });
    var u = bytesUnit(maxAbs);
    lines.forEach(function (l) { l.ys = l.ys.map(function (v) { return v === null ? null : v / u[1]; }); });
    // Drawn with the deciding source last (on top): sources that read 0 throughout would hide it.
    var order = lines.map(function (l, k) { return k; });
    var drawn = order.filter(function (k) { return !lines[k].deciding; }).concat(order.filter(function (k) { return lines[k].deciding; }));
    var title = S[m.probe] + ' · ' + S[s.label];
    return el('div', { class: 'chart-and-table' }, [
      chart({ id: 'memory:' + title, kind: 'line', title: title + ': change since ' + phases[0] + ', per source', cats: phases, xLabel: 'phase', yLabel: u[0], unit: u[0] === 'B' ? 'bytes' : u[0],
        flat: phases.length < 2 ? 'One phase only (' + phases[0] + '): no change to draw; its readings are in the table.' : 'No source changed from ' + phases[0] + ' on: nothing to draw; the readings are in the table.',
        series: drawn.map(function (k) { return lines[k]; }), legendOrder: drawn.map(function (k, at) { return at; }).sort(function (a, b) { return drawn[a] - drawn[b]; }) }),
      table(['source (as read)'].concat(phases), s.sources.map(function (src, k) {
        return [el('span', { title: D.sources[S[src]] || '' }, [breakable(S[src]), S[src] === deciding ? ' (deciding)' : ''])].concat(s.values[k].map(function (v) { return num(v, 'bytes'); }));
      })),
    ]);
  }

  function showColumn(i, j) {
    var c = cols[i], d = D.details[i], e = j >= 0 ? D.details[j] : null;
    while (details.firstChild) details.removeChild(details.firstChild);
    details.appendChild(el('p', {}, [colName(i) + ' ' + S[c.text] + ': record ', link(S[c.date], S[c.link]), c.events >= 0 ? ' (' : null, c.events >= 0 ? link('event log', S[c.events]) : null, c.events >= 0 ? ')' : null,
      c.records > 1 ? ' (the newest of ' + c.records + ' records' + (c.conflicts ? ', which disagree on ' + c.conflicts + ' fact' + (c.conflicts > 1 ? 's' : '') : '') + ')' : '',
      j >= 0 ? '; drawn over it, dashed: ' + colName(j) + ' ' + S[cols[j].text] + ' (record ' + S[cols[j].date] + '). The tables are ' + colName(i) + '\'s.' : '']));

    d.mem.forEach(function (m) {
      details.appendChild(probeHeading(S[m.probe]));
      var box = el('div', { class: 'charts' });
      m.series.forEach(function (s) { box.appendChild(memoryChart(m, s, i, j)); });
      details.appendChild(box);
    });

    var box = el('div', { class: 'charts' });
    if (d.bw.length) {
      var sizes = [];
      d.bw.concat(e ? e.bw : []).forEach(function (s) { s.points.forEach(function (p) { if (sizes.indexOf(p[0]) < 0) sizes.push(p[0]); }); });
      sizes.sort(function (a, b) { return a - b; });
      var at = function (s, size) { var p = s.points.filter(function (q) { return q[0] === size; })[0]; return p ? p[1] : null; };
      var bwSeries = function (list) { return list.map(function (s, k) { return { name: S[s.name], ys: sizes.map(function (z) { return at(s, z); }), color: COLORS[k % COLORS.length] }; }); };
      var own = bwSeries(d.bw);
      box.appendChild(el('div', { class: 'chart-and-table' }, [probeHeading('transfer-bandwidth'),
        chart({ id: 'bandwidth', kind: 'line', title: 'Copy bandwidth against transfer size', xs: sizes, logX: true, xFmt: sizeText, xLabel: 'transfer size', yLabel: 'GB/s', unit: 'GB/s',
          series: own.map(function (s) { return ownName(s, i, j); }).concat(e ? bwSeries(e.bw).map(function (s) { return other(s, j); }) : []) }),
        table(['size'].concat(d.bw.map(function (s) { return S[s.name]; })), sizes.map(function (z) { return [sizeText(z)].concat(d.bw.map(function (s) { return num(at(s, z), 'GB/s'); })); })),
      ]));
    }
    if (d.sync.length) {
      var stats = d.sync.map(function (p) { return S[p[0]]; });
      var syncOf = function (list) { return stats.map(function (n) { var p = list.filter(function (q) { return S[q[0]] === n; })[0]; return p ? p[1] : null; }); };
      box.appendChild(el('div', { class: 'chart-and-table' }, [probeHeading('sync-latency'),
        chart({ id: 'sync-latency', kind: 'bars', title: 'No-op kernel + stream synchronize: the latency distribution', cats: stats, xLabel: 'statistic', yLabel: 'µs', unit: 'us',
          series: [ownName({ name: 'latency', ys: syncOf(d.sync) }, i, j)].concat(e ? [other({ name: 'latency', ys: syncOf(e.sync), color: COLORS[0] }, j)] : []) }),
        table(['statistic', 'latency'], d.sync.map(function (p) { return [S[p[0]], num(p[1], 'us')]; })),
      ]));
    }
    if (d.ev) {
      var ev = d.ev;
      var targets = ev.points.map(function (p) { return p[0]; });
      var evOf = function (x, k) { return targets.map(function (t) { var p = x.points.filter(function (q) { return q[0] === t; })[0]; return p ? p[k] : null; }); };
      var evSeries = function (x) { return [{ name: 'event-timed', ys: evOf(x, 1), color: COLORS[0] }, { name: 'host-timed (launch to completion)', ys: evOf(x, 2), color: COLORS[1] }]; };
      box.appendChild(el('div', { class: 'chart-and-table' }, [probeHeading('event-timing'),
        chart({ id: 'event-timing', kind: 'line', title: 'Spin kernels timed with events and with the host clock', xs: targets, xLabel: 'spin target (µs)', yLabel: 'measured µs', unit: 'us',
          series: evSeries(ev).map(function (s) { return ownName(s, i, j); }).concat(e && e.ev ? evSeries(e.ev).map(function (s) { return other(s, j); }) : []).concat([{ name: 'target', ys: targets, color: COLORS[2] }]),
          note: 'Event resolution (smallest step between distinct event-timed values): ' + formatValue(ev.resolution, 'us') + (e && e.ev ? '; ' + colName(j) + ': ' + formatValue(e.ev.resolution, 'us') : '') }),
        table(['target', 'event-timed', 'host-timed'], ev.points.map(function (p) { return [formatValue(p[0], 'us'), num(p[1], 'us'), num(p[2], 'us')]; }).concat([['resolution', num(ev.resolution, 'us'), '']])),
      ]));
    }
    if (d.ceil) {
      var cl = d.ceil, G = Math.pow(1024, 3);
      var ceilSeries = function (x, name) { return { name: name, ys: x.levels.map(function (l) { return l[2] === null ? null : l[2] / G; }), labels: x.levels.map(function (l) { return l[0] + ' % pre-filled'; }) }; };
      var frees = cl.levels.map(function (l) { return (l[1] || 0) / G; });
      var ceilOther = e && e.ceil ? e.ceil : null;
      box.appendChild(el('div', { class: 'chart-and-table' }, [probeHeading('pinned-ceiling'),
        chart({ id: 'pinned-ceiling', kind: 'points', title: 'Pinned ceiling against free VRAM (VRAM pre-filled to each level)', xs: frees.concat(ceilOther ? ceilOther.levels.map(function (l) { return (l[1] || 0) / G; }) : []), xLabel: 'free VRAM after the pre-fill (GiB)', yLabel: 'pinned before it stopped (GiB)', unit: 'GiB',
          series: ceilOther
            ? [ownName(Object.assign(ceilSeries(cl, 'ceiling'), { ys: ceilSeries(cl, '').ys.concat(ceilOther.levels.map(function () { return null; })) }), i, j),
              other(Object.assign(ceilSeries(ceilOther, 'ceiling'), { ys: cl.levels.map(function () { return null; }).concat(ceilSeries(ceilOther, '').ys), labels: cl.levels.map(function () { return ''; }).concat(ceilSeries(ceilOther, '').labels), color: COLORS[0] }), j)]
            : [ceilSeries(cl, 'ceiling')],
          hline: cl.cap !== null ? { y: cl.cap / G, label: 'safety cap ' + sizeText(cl.cap) } : undefined,
          note: cl.levels.every(function (l) { return S[l[3]] === 'safety-cap'; }) ? 'Every level stopped at the safety cap: the real ceiling is higher than measured.' : undefined }),
        table(['measurement', 'free VRAM', 'pinned before it stopped', 'stopped by', 'time per chunk'], cl.levels.map(function (l) { return ['driver API, ' + l[0] + ' % pre-filled', num(l[1], 'bytes'), num(l[2], 'bytes'), S[l[3]], num(l[4], 'ms')]; })
          .concat(cl.variants.map(function (v) { return ['runtime API, ' + S[v[0]] + ', round ' + v[1], num(v[2], 'bytes'), num(v[3], 'bytes'), S[v[4]], num(v[5], 'ms')]; }))),
      ]));
    }
    details.appendChild(box);
    document.body.setAttribute('data-charts', String(document.querySelectorAll('svg.chart').length));
  }
  function redraw() { showColumn(Number(picker.value), Number(against.value)); }
  picker.addEventListener('change', redraw);
  against.addEventListener('change', redraw);
  showColumn(0, -1);
})();
`;
