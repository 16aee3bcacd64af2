/**
 * The script of behaviour.html, as text: it reads the page's embedded data (page-data.ts) and
 * draws every table and chart with the DOM and SVG, so the page needs nothing from outside
 * (no CDN, no fetch) and a chart library is not needed: the charts are a few kinds of axes,
 * lines, markers and bars. Data strings only ever go into textContent and attributes, never
 * into markup. Written as plain ES2017 in a string (not a function's source): the TypeScript
 * toolchains insert helpers into functions that a browser would not have.
 */
export const CLIENT_SCRIPT = String.raw`
(function () {
  'use strict';
  var D = JSON.parse(document.getElementById('report-data').textContent);
  var S = D.strs;
  var SVG = 'http://www.w3.org/2000/svg';
  var COLORS = ['#1f77b4', '#d62728', '#2ca02c', '#ff7f0e', '#9467bd', '#8c564b', '#e377c2', '#17becf', '#7f7f7f', '#bcbd22', '#393b79', '#637939'];

  function el(tag, attrs, kids) {
    var e = document.createElement(tag);
    for (var k in attrs || {}) if (attrs[k] !== undefined && attrs[k] !== null) e.setAttribute(k, String(attrs[k]));
    (kids || []).forEach(function (c) { if (c !== null && c !== undefined) e.appendChild(typeof c === 'string' ? document.createTextNode(c) : c); });
    return e;
  }
  function sv(tag, attrs, text) {
    var e = document.createElementNS(SVG, tag);
    for (var k in attrs || {}) e.setAttribute(k, String(attrs[k]));
    if (text !== undefined) e.textContent = text;
    return e;
  }
  function link(text, href) { return el('a', { href: href }, [text]); }

  // Numbers: exact in the tables (as recorded, integers grouped by thousands), scaled on the axes.
  function exact(v) {
    if (v === null || v === undefined) return '—';
    if (Number.isInteger(v)) return String(v).replace(/\B(?=(\d{3})+(?!\d))/g, ',');
    return String(v);
  }
  function scaled(v) {
    var a = Math.abs(v);
    var d = a >= 100 ? 0 : a >= 10 ? 1 : a >= 1 ? 2 : 3;
    return String(Number(v.toFixed(d)));
  }
  function bytesUnit(maxAbs) { return maxAbs >= Math.pow(1024, 3) ? ['GiB', Math.pow(1024, 3)] : maxAbs >= Math.pow(1024, 2) ? ['MiB', Math.pow(1024, 2)] : maxAbs >= 1024 ? ['KiB', 1024] : ['B', 1]; }
  function sizeText(b) { var u = bytesUnit(b); return scaled(b / u[1]) + ' ' + u[0]; }

  function ticks(lo, hi, n) {
    if (!(hi > lo)) { hi = lo + 1; }
    var step = Math.pow(10, Math.floor(Math.log10((hi - lo) / n)));
    var m = (hi - lo) / n / step;
    step *= m >= 5 ? 10 : m >= 2 ? 5 : m >= 1 ? 2 : 1;
    var out = [];
    for (var t = Math.ceil(lo / step) * step; t <= hi + step * 1e-9; t += step) out.push(Math.abs(t) < step * 1e-9 ? 0 : t);
    return out;
  }

  var chartCount = 0;
  /**
   * One chart: o.kind 'line' (x numeric or categorical, lines with markers), 'points' (markers
   * with labels) or 'bars' (categorical x, grouped bars). o.series: [{name, ys}], o.xs values or
   * o.cats labels, o.logX, o.xLabel, o.yLabel, o.hline {y, label}.
   */
  function chart(o) {
    var W = 660, H = 280, L = 70, R = 20, T = 24, B = 56;
    var svg = sv('svg', { class: 'chart', 'data-chart': o.id, viewBox: '0 0 ' + W + ' ' + H, width: W, height: H, role: 'img', 'aria-label': o.title });
    svg.appendChild(sv('title', {}, o.title));
    var ys = [];
    o.series.forEach(function (s) { s.ys.forEach(function (y) { if (typeof y === 'number' && isFinite(y)) ys.push(y); }); });
    if (o.hline) ys.push(o.hline.y);
    var lo = Math.min.apply(null, ys.concat([0])), hi = Math.max.apply(null, ys.concat([0]));
    if (hi === lo) hi = lo + 1;
    var pad = (hi - lo) * 0.08; hi += pad; if (lo < 0) lo -= pad;
    var yt = ticks(lo, hi, 5);
    lo = Math.min(lo, yt[0]); hi = Math.max(hi, yt[yt.length - 1]);
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
      g.appendChild(sv('text', { x: L - 6, y: Y(t) + 4, 'text-anchor': 'end' }, (o.yFmt || scaled)(t)));
    });
    var xLabels = o.cats ? o.cats.map(function (c, i) { return [X(i), c]; }) : o.xs.map(function (x) { return [X(x), (o.xFmt || scaled)(x)]; });
    var every = Math.max(1, Math.ceil(xLabels.length / 16));
    xLabels.forEach(function (p, i) { if (i % every === 0) g.appendChild(sv('text', { x: p[0], y: H - B + 16, 'text-anchor': 'middle' }, p[1])); });
    g.appendChild(sv('text', { x: L + (W - L - R) / 2, y: H - 8, 'text-anchor': 'middle', class: 'label' }, o.xLabel));
    g.appendChild(sv('text', { x: 14, y: T + (H - T - B) / 2, transform: 'rotate(-90 14 ' + (T + (H - T - B) / 2) + ')', 'text-anchor': 'middle', class: 'label' }, o.yLabel));
    svg.appendChild(g);
    if (o.hline) {
      svg.appendChild(sv('line', { x1: L, x2: W - R, y1: Y(o.hline.y), y2: Y(o.hline.y), class: 'hline' }));
      svg.appendChild(sv('text', { x: W - R - 4, y: Y(o.hline.y) + 14, 'text-anchor': 'end', class: 'hline-label' }, o.hline.label));
    }
    var marks = sv('g', { class: 'marks' });
    o.series.forEach(function (s, si) {
      var color = COLORS[si % COLORS.length];
      if (o.kind === 'bars') {
        var slot = (W - L - R) / Math.max(n, 1), bw = Math.max(1, slot * 0.8 / o.series.length);
        s.ys.forEach(function (y, i) {
          if (typeof y !== 'number') return;
          var x = L + slot * i + slot * 0.1 + bw * si;
          var top = Math.min(Y(y), Y(0)), h = Math.max(1, Math.abs(Y(y) - Y(0)));
          marks.appendChild(sv('rect', { x: x, y: top, width: bw, height: h, fill: color }, undefined)).appendChild(sv('title', {}, s.name + ': ' + (o.cats ? o.cats[i] : '') + ' ' + exact(y)));
        });
        return;
      }
      var pts = [];
      s.ys.forEach(function (y, i) { if (typeof y === 'number' && isFinite(y)) pts.push([o.cats ? X(i) : X(o.xs[i]), Y(y), y, i]); });
      if (o.kind === 'line' && pts.length > 1) {
        marks.appendChild(sv('path', { d: pts.map(function (p, i) { return (i ? 'L' : 'M') + p[0].toFixed(1) + ' ' + p[1].toFixed(1); }).join(' '), stroke: color, fill: 'none', 'stroke-width': 2 }));
      }
      pts.forEach(function (p) {
        var c = marks.appendChild(sv('circle', { cx: p[0].toFixed(1), cy: p[1].toFixed(1), r: 3.5, fill: color }));
        c.appendChild(sv('title', {}, s.name + ': ' + exact(p[2])));
        // A label reads away from the nearer edge, so that none is cut off.
        if (s.labels) marks.appendChild(sv('text', { x: p[0] > W / 2 ? p[0] - 6 : p[0] + 6, y: p[1] - 8, 'text-anchor': p[0] > W / 2 ? 'end' : 'start', class: 'point-label' }, s.labels[p[3]]));
      });
    });
    svg.appendChild(marks);
    chartCount++;
    var legend = el('div', { class: 'legend' }, o.series.map(function (s, si) {
      return el('span', {}, [el('i', { style: 'background:' + COLORS[si % COLORS.length] }), s.name]);
    }));
    return el('figure', { class: 'chart-box' }, [el('figcaption', {}, [o.title]), svg, o.series.length > 1 ? legend : null, o.note ? el('p', { class: 'note' }, [o.note]) : null]);
  }

  function table(head, rows, cls) {
    return el('table', { class: cls || 'numbers' }, [
      el('thead', {}, [el('tr', {}, head.map(function (h) { return el('th', {}, [h]); }))]),
      el('tbody', {}, rows.map(function (r) { return el('tr', {}, r.map(function (c, i) { return el(i ? 'td' : 'th', {}, [c]); })); })),
    ]);
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

  // Facts: every column.
  root.appendChild(el('h2', { id: 'facts' }, ['Facts']));
  root.appendChild(el('p', {}, ['One column per observation (environment · GPU · driver · OS); every value links to the record it comes from. ⚠ marks records of one observation that disagree on a fact.']));
  var head = el('tr', {}, [el('th', {}, ['fact']), el('th', {}, ['claims'])].concat(cols.map(function (c, i) {
    return el('th', { class: 'col' }, [colName(i) + ' ', link(S[c.text], S[c.link]), c.records > 1 ? el('small', {}, [' (' + c.records + ' records)']) : null]);
  })));
  var body = el('tbody');
  D.facts.forEach(function (g) {
    body.appendChild(el('tr', { class: 'group' }, [el('th', { colspan: 2 + cols.length }, [S[g.probe] + ': ' + S[g.title] + (g.claims.length ? ' (' + g.claims.map(function (c) { return S[c]; }).join(', ') + ')' : '')])]));
    g.rows.forEach(function (row) {
      var tr = el('tr', { 'data-fact': S[g.probe] + '.' + S[row.fact] }, [el('th', { title: S[row.desc] }, [S[row.fact], el('small', {}, [S[row.desc] ? ' ' + S[row.desc] : ''])]), el('td', {}, [g.claims.map(function (c) { return S[c]; }).join(', ')])]);
      row.cells.forEach(function (cell, i) {
        if (cell === -1) { tr.appendChild(el('td', { class: 'none' }, ['–'])); return; }
        if (typeof cell === 'number') { tr.appendChild(el('td', { 'data-value': S[cell] }, [link(S[cell], S[cols[i].link])])); return; }
        var td = el('td', cell.length > 1 ? { class: row.sys ? 'varies' : 'conflict' } : { 'data-value': S[cell[0][0]] });
        if (cell.length > 1) td.appendChild(document.createTextNode(row.sys ? 'varies: ' : '⚠ conflict: '));
        cell.forEach(function (v, k) {
          if (k) td.appendChild(document.createTextNode(' ≠ '));
          var a = link(S[v[0]] + (v[2] !== undefined ? '*' : ''), S[v[1]]);
          if (v[2] !== undefined) a.setAttribute('title', S[v[2]]);
          td.appendChild(a);
        });
        tr.appendChild(td);
      });
      body.appendChild(tr);
    });
  });
  root.appendChild(el('div', { class: 'scroll' }, [el('table', { class: 'facts' }, [el('thead', {}, [head]), body])]));
  root.appendChild(el('p', { class: 'note' }, ['– : not recorded for that column. *: no value; hover it for the reason.']));

  // Key metrics: the newest record of every column, exact.
  root.appendChild(el('h2', { id: 'metrics' }, ['Key metrics']));
  root.appendChild(el('p', {}, ['Exact values as recorded, from the newest record of each column.']));
  root.appendChild(el('div', { class: 'scroll' }, [table(['metric', 'unit', 'claims'].concat(cols.map(function (c, i) { return colName(i); })), D.metrics.map(function (m) {
    return [S[m.metric] + ': ' + S[m.label], S[m.unit], m.claims.map(function (c) { return S[c]; }).join(', ')].concat(m.cells.map(function (v) {
      return v === null ? '–' : exact(v[0]) + (v.length > 1 ? ' (' + S[v[1]] + ')' : '');
    }));
  }), 'numbers metrics')]));
  function metricValues(name, label) {
    var m = D.metrics.filter(function (x) { return S[x.metric] === name && (!label || S[x.label] === label); })[0];
    return cols.map(function (c, i) { return m && m.cells[i] ? m.cells[i][0] : null; });
  }
  var cats = cols.map(function (c, i) { return colName(i); });
  var cmp = el('div', { class: 'charts' });
  cmp.appendChild(chart({ id: 'compare-sync-latency', kind: 'bars', title: 'Launch + synchronize latency per column (C5)', cats: cats, xLabel: 'column', yLabel: 'µs',
    series: [{ name: 'p50', ys: metricValues('sync-latency.p50_us') }, { name: 'p99', ys: metricValues('sync-latency.p99_us') }] }));
  cmp.appendChild(chart({ id: 'compare-bandwidth', kind: 'bars', title: 'Copy bandwidth at the largest size per column (C8)', cats: cats, xLabel: 'column', yLabel: 'GB/s',
    series: [{ name: 'H2D pinned', ys: metricValues('transfer-bandwidth.bandwidth_gbps', 'H2D pinned') }, { name: 'D2H pinned', ys: metricValues('transfer-bandwidth.bandwidth_gbps', 'D2H pinned') }, { name: 'H2D pageable', ys: metricValues('transfer-bandwidth.bandwidth_gbps', 'H2D pageable') }] }));
  root.appendChild(cmp);

  // Details of one column: the charts of its newest record.
  root.appendChild(el('h2', { id: 'details' }, ['Charts of one column']));
  var picker = el('select', { id: 'column-picker' }, cols.map(function (c, i) { return el('option', { value: i }, [colName(i) + ' ' + S[c.text]]); }));
  root.appendChild(el('p', {}, [el('label', { for: 'column-picker' }, ['Column: ']), picker]));
  var details = el('div', { id: 'column-details' });
  root.appendChild(details);

  function probeHeading(probe) {
    var p = D.probes[probe] || { title: '', claims: [] };
    return el('h3', {}, [probe + ': ' + p.title + (p.claims.length ? ' (' + p.claims.join(', ') + ')' : '')]);
  }

  function showColumn(i) {
    var c = cols[i], d = D.details[i];
    chartCount = 0;
    while (details.firstChild) details.removeChild(details.firstChild);
    details.appendChild(el('p', {}, [colName(i) + ' ' + S[c.text] + ': record ', link(S[c.date], S[c.link]), c.events >= 0 ? ' (' : null, c.events >= 0 ? link('event log', S[c.events]) : null, c.events >= 0 ? ')' : null,
      c.records > 1 ? ' (the newest of ' + c.records + ' records' + (c.conflicts ? ', which disagree on ' + c.conflicts + ' fact' + (c.conflicts > 1 ? 's' : '') : '') + ')' : '']));

    d.mem.forEach(function (m) {
      details.appendChild(probeHeading(S[m.probe]));
      var box = el('div', { class: 'charts' });
      m.series.forEach(function (s) {
        var phases = s.phases.map(function (p) { return S[p]; });
        var maxAbs = 0;
        var deltas = s.values.map(function (vals) {
          var base = vals[0];
          return vals.map(function (v) { if (typeof v !== 'number' || typeof base !== 'number') return null; maxAbs = Math.max(maxAbs, Math.abs(v - base)); return v - base; });
        });
        var u = bytesUnit(maxAbs);
        var title = S[m.probe] + ' · ' + S[s.label];
        box.appendChild(el('div', { class: 'chart-and-table' }, [
          chart({ id: 'memory:' + title, kind: 'line', title: title + ': change since ' + phases[0] + ', per source', cats: phases, xLabel: 'phase', yLabel: u[0],
            series: s.sources.map(function (src, k) { return { name: S[src], ys: deltas[k].map(function (v) { return v === null ? null : v / u[1]; }) }; }) }),
          table(['source (bytes as read)'].concat(phases), s.sources.map(function (src, k) {
            return [el('span', { title: D.sources[S[src]] || '' }, [S[src]])].concat(s.values[k].map(exact));
          })),
        ]));
      });
      details.appendChild(box);
    });

    var box = el('div', { class: 'charts' });
    if (d.bw.length) {
      var sizes = [];
      d.bw.forEach(function (s) { s.points.forEach(function (p) { if (sizes.indexOf(p[0]) < 0) sizes.push(p[0]); }); });
      sizes.sort(function (a, b) { return a - b; });
      var at = function (s, size) { var p = s.points.filter(function (q) { return q[0] === size; })[0]; return p ? p[1] : null; };
      box.appendChild(el('div', { class: 'chart-and-table' }, [probeHeading('transfer-bandwidth'),
        chart({ id: 'bandwidth', kind: 'line', title: 'Copy bandwidth against transfer size', xs: sizes, logX: true, xFmt: sizeText, xLabel: 'transfer size', yLabel: 'GB/s',
          series: d.bw.map(function (s) { return { name: S[s.name], ys: sizes.map(function (z) { return at(s, z); }) }; }) }),
        table(['size'].concat(d.bw.map(function (s) { return S[s.name] + ' GB/s'; })), sizes.map(function (z) { return [sizeText(z) + ' (' + exact(z) + ' B)'].concat(d.bw.map(function (s) { return exact(at(s, z)); })); })),
      ]));
    }
    if (d.sync.length) {
      box.appendChild(el('div', { class: 'chart-and-table' }, [probeHeading('sync-latency'),
        chart({ id: 'sync-latency', kind: 'bars', title: 'No-op kernel + stream synchronize: the latency distribution', cats: d.sync.map(function (p) { return S[p[0]]; }), xLabel: 'statistic', yLabel: 'µs',
          series: [{ name: 'latency', ys: d.sync.map(function (p) { return p[1]; }) }] }),
        table(['statistic', 'µs'], d.sync.map(function (p) { return [S[p[0]], exact(p[1])]; })),
      ]));
    }
    if (d.ev) {
      var ev = d.ev;
      box.appendChild(el('div', { class: 'chart-and-table' }, [probeHeading('event-timing'),
        chart({ id: 'event-timing', kind: 'line', title: 'Spin kernels timed with events and with the host clock', xs: ev.points.map(function (p) { return p[0]; }), xLabel: 'spin target (µs)', yLabel: 'measured µs',
          series: [{ name: 'event-timed', ys: ev.points.map(function (p) { return p[1]; }) }, { name: 'host-timed (launch to completion)', ys: ev.points.map(function (p) { return p[2]; }) }, { name: 'target', ys: ev.points.map(function (p) { return p[0]; }) }],
          note: 'Event resolution (smallest step between distinct event-timed values): ' + exact(ev.resolution) + ' µs' }),
        table(['target µs', 'event-timed µs', 'host-timed µs'], ev.points.map(function (p) { return [exact(p[0]), exact(p[1]), exact(p[2])]; }).concat([['resolution', exact(ev.resolution), '']])),
      ]));
    }
    if (d.ceil) {
      var cl = d.ceil, G = Math.pow(1024, 3);
      box.appendChild(el('div', { class: 'chart-and-table' }, [probeHeading('pinned-ceiling'),
        chart({ id: 'pinned-ceiling', kind: 'points', title: 'Pinned ceiling against free VRAM (VRAM pre-filled to each level)', xs: cl.levels.map(function (l) { return (l[1] || 0) / G; }), xLabel: 'free VRAM after the pre-fill (GiB)', yLabel: 'pinned before it stopped (GiB)',
          series: [{ name: 'ceiling', ys: cl.levels.map(function (l) { return l[2] === null ? null : l[2] / G; }), labels: cl.levels.map(function (l) { return l[0] + ' % pre-filled'; }) }],
          hline: cl.cap !== null ? { y: cl.cap / G, label: 'safety cap ' + sizeText(cl.cap) } : undefined,
          note: cl.levels.every(function (l) { return S[l[3]] === 'safety-cap'; }) ? 'Every level stopped at the safety cap: the real ceiling is higher than measured.' : undefined }),
        table(['pre-fill %', 'free VRAM bytes', 'ceiling bytes', 'stopped by', 'ms per chunk'], cl.levels.map(function (l) { return [exact(l[0]), exact(l[1]), exact(l[2]), S[l[3]], exact(l[4])]; })
          .concat(cl.variants.map(function (v) { return ['runtime, ' + S[v[0]], '', exact(v[1]), '', exact(v[2])]; }))),
      ]));
    }
    details.appendChild(box);
    document.body.setAttribute('data-charts', String(document.querySelectorAll('svg.chart').length));
  }
  picker.addEventListener('change', function () { showColumn(Number(picker.value)); });
  showColumn(0);
})();
`;
