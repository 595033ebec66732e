/**
 * The report page's script (inline, plain ES2017, no template literals). It reads the page data from
 * `<script type="application/json" id="isocheck-data">` and builds every text with textContent: nothing
 * from the history is ever parsed as HTML. Parts: header and configuration, explanations (SVG graphs from
 * `<template>`s, steps in words, hover links between them), the canvas timeline (lanes per session, zoom,
 * pan, hit-testing, commit order) and the details panel. `window.__isocheck` exposes the layout for tests.
 */
export const PAGE_SCRIPT = String.raw`
(function () {
  'use strict';
  var started = performance.now();
  var D = JSON.parse(document.getElementById('isocheck-data').textContent);
  var T = D.txns;
  var COLORS = D.levelColors;
  var idIndex = new Map();
  T.forEach(function (t, i) { idIndex.set(t.id, i); });
  var highlighted = new Set(D.highlight);
  var orderRank = null;
  if (D.commitOrder) { orderRank = new Map(); D.commitOrder.forEach(function (i, k) { orderRank.set(i, k + 1); }); }

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }
  function add(parent, tag, cls, text) { var e = el(tag, cls, text); parent.appendChild(e); return e; }
  function json(v) { try { return JSON.stringify(v); } catch (e) { return String(v); } }
  function plural(n, word) { return n + ' ' + word + (n === 1 ? '' : 's'); }
  function fmtTime(v) {
    if (D.timeline.mode !== 'recorded') return '#' + Math.round(v);
    if (Math.abs(v) >= 1000) return (v / 1000).toFixed(3) + ' s';
    return (Math.round(v * 100) / 100) + ' ms';
  }
  function axisLabel(v, step) {
    if (D.timeline.mode !== 'recorded') return '#' + Math.round(v);
    var unit = step >= 1000 ? 1000 : 1;
    var digits = Math.max(0, Math.min(6, -Math.floor(Math.log10(step / unit) + 1e-9)));
    return (v / unit).toFixed(digits) + (unit === 1000 ? ' s' : ' ms');
  }
  function chip(level, text) {
    var c = el('span', 'chip', text || level);
    c.style.background = COLORS[level] || '#ddd';
    return c;
  }
  function txnLink(id) {
    var i = idIndex.get(id);
    if (i === undefined) return el('span', 'mono', id);
    var b = el('button', 'link mono', id);
    b.type = 'button';
    b.addEventListener('click', function () { select(i, { reveal: true, scroll: true }); });
    return b;
  }

  var app = document.getElementById('app');

  // ---------------------------------------------------------------- header
  var top = add(app, 'header', 'top');
  var titles = add(top, 'div', 'titles');
  add(titles, 'h1', null, D.title);
  add(titles, 'div', 'file', D.file + (D.truncated ? '  (truncated: no end line)' : ''));
  add(top, 'div', 'verdict ' + D.verdict, String(D.verdict).toUpperCase());
  var s = D.stats;
  add(app, 'p', 'summary',
    s.committed + ' committed, ' + s.aborted + ' aborted, ' + s.unknown + ' unknown of ' + plural(s.transactions, 'transaction') +
    ' in ' + plural(s.sessions, 'session') + '; ' + plural(s.events, 'statement') + ', ' + plural(s.conflicts, 'conflict') +
    '; checked in ' + (s.timeMs / 1000).toFixed(2) + ' s' +
    (D.anomalies.length ? '; ' + plural(D.anomalies.length + D.moreAnomalies, 'anomaly').replace('anomalys', 'anomalies') : ''));
  if (D.reason) add(app, 'p', 'reason', D.reason);
  D.notes.forEach(function (n) { add(app, 'p', 'note', 'note: ' + n); });

  // ---------------------------------------------------------------- configuration
  add(app, 'h2', null, 'Configuration');
  var grid = add(app, 'div', 'grid');
  var levelsBox = add(grid, 'div');
  add(levelsBox, 'h4', null, 'Isolation levels by transaction label');
  if (D.iso) add(levelsBox, 'p', 'note', 'checked with --iso ' + D.iso + ' (the levels below are the recorded ones)');
  var lt = add(levelsBox, 'table', 'levels');
  var lh = add(add(lt, 'thead'), 'tr');
  ['label', 'levels', 'committed', 'aborted', 'unknown'].forEach(function (h) { add(lh, 'th', null, h); });
  var lb = add(lt, 'tbody');
  D.labels.forEach(function (l) {
    var tr = add(lb, 'tr');
    add(tr, 'td', null, l.label);
    var td = add(tr, 'td');
    Object.keys(l.levels).forEach(function (lv) { td.appendChild(chip(lv, lv + ' \u00d7' + l.levels[lv])); });
    add(tr, 'td', 'n', l.statuses.committed);
    add(tr, 'td', 'n', l.statuses.aborted);
    add(tr, 'td', 'n', l.statuses.unknown);
  });
  var metaBox = add(grid, 'div');
  add(metaBox, 'h4', null, 'Recording');
  var mt = add(metaBox, 'table', 'kv');
  if (D.meta.length === 0) add(add(mt, 'tr'), 'td', 'muted', '(no metadata in the history header)');
  D.meta.forEach(function (m) { var tr = add(mt, 'tr'); add(tr, 'th', null, m.key); add(tr, 'td', 'v', m.value); });
  var statBox = add(grid, 'div');
  add(statBox, 'h4', null, 'Check');
  var st = add(statBox, 'table', 'kv');
  [['transactions', s.transactions], ['sessions', s.sessions], ['statements', s.events], ['reads', s.reads], ['keys', s.keys],
   ['conflicts', s.conflicts], ['forced witnesses', s.forcedWitnesses], ['saturation edges', s.saturationEdges],
   ['prefixes explored', s.prefixes], ['time', (s.timeMs / 1000).toFixed(2) + ' s']].forEach(function (kv) {
    var tr = add(st, 'tr'); add(tr, 'th', null, kv[0]); add(tr, 'td', 'v', kv[1]);
  });

  // ---------------------------------------------------------------- explanations
  var svgEdgeCount = 0;
  function stepItem(list, step, svgRoot) {
    var li = add(list, 'li');
    if (step.step === undefined) li.className = 'assume';
    li.appendChild(el('span', 'kind ' + step.kind, step.kind));
    li.appendChild(txnLink(step.from));
    li.appendChild(document.createTextNode(' \u2192 '));
    li.appendChild(txnLink(step.to));
    li.appendChild(document.createTextNode(': ' + step.reason));
    if (svgRoot && step.svgId) {
      var g = svgRoot.querySelector('g.edge[id="' + step.svgId + '"]');
      if (g) {
        svgEdgeCount++;
        li.addEventListener('mouseenter', function () { g.classList.add('hl'); });
        li.addEventListener('mouseleave', function () { g.classList.remove('hl'); });
        g.addEventListener('mouseenter', function () { li.classList.add('hl'); g.classList.add('hl'); });
        g.addEventListener('mouseleave', function () { li.classList.remove('hl'); g.classList.remove('hl'); });
      }
    }
    return li;
  }
  function wordsFor(box, steps, svgRoot, intro) {
    var cycle = steps.filter(function (x) { return x.step !== undefined; });
    var premise = steps.filter(function (x) { return x.step === undefined; });
    premise.forEach(function (p) {
      var para = add(box, 'p', 'assume');
      para.appendChild(el('span', 'kind assumed', 'assumed'));
      para.appendChild(document.createTextNode(p.reason + ' (dashed blue).'));
      if (svgRoot && p.svgId) {
        var g = svgRoot.querySelector('g.edge[id="' + p.svgId + '"]');
        if (g) { para.addEventListener('mouseenter', function () { g.classList.add('hl'); }); para.addEventListener('mouseleave', function () { g.classList.remove('hl'); }); }
      }
    });
    if (cycle.length) {
      add(box, 'p', null, intro);
      var ol = add(box, 'ol', 'steps');
      cycle.forEach(function (x) { stepItem(ol, x, svgRoot); });
    }
  }
  // A graph asks for its natural width: the words sit beside it when there is room, else below it.
  // It keeps at least 3/4 of its natural size (a scroll bar beats unreadable text).
  var fitted = [];
  function fitSvgs() {
    fitted.forEach(function (f) {
      var natural = parseFloat(f.svg.getAttribute('width')) * 4 / 3;
      if (!(natural > 0)) return;
      f.box.style.flex = '0 1 ' + Math.ceil(natural + 16) + 'px';
    });
    fitted.forEach(function (f) {
      var natural = parseFloat(f.svg.getAttribute('width')) * 4 / 3;
      if (!(natural > 0)) return;
      var avail = f.box.clientWidth - 14;
      f.svg.style.width = (natural <= avail ? natural : Math.max(avail, natural * 0.75)) + 'px';
    });
  }
  function svgFor(index) {
    var tpl = document.getElementById('svg-' + index);
    if (!tpl) return null;
    var svg = tpl.content.firstElementChild;
    return svg ? document.importNode(svg, true) : null;
  }

  if (D.anomalies.length) {
    add(app, 'h2', null, D.anomalies.length + D.moreAnomalies === 1 ? 'Explanation' : 'Explanations (' + (D.anomalies.length + D.moreAnomalies) + ' anomalies)');
    D.anomalies.forEach(function (a, ai) {
      var sec = add(app, 'section', 'anomaly');
      sec.id = 'anomaly-' + ai;
      var h = add(sec, 'h3', null, a.name.toUpperCase());
      if (a.literature) add(h, 'span', 'literature', a.literature);
      if (a.levels.length) add(h, 'span', 'violates', 'violates ' + a.levels.join(', '));
      add(sec, 'p', 'message', a.message);
      a.events.forEach(function (e) {
        add(sec, 'p', 'mono', 'statement ' + e.event + ' of ' + e.txn + ' (line ' + e.line + '): ' + e.op + ' ' + e.table +
          (e.where ? ' WHERE ' + e.where : '') + (e.params ? ' params ' + json(e.params) : ''));
      });
      if (a.graphs.length) {
        a.graphs.forEach(function (g) {
          var c = add(sec, 'div', 'case');
          if (g.title) add(c, 'h4', null, g.title);
          var body = add(c, 'div', 'case-body');
          var gbox = add(body, 'div', 'graph');
          var svg = g.svg !== undefined ? svgFor(g.svg) : null;
          if (svg) {
            gbox.appendChild(svg);
            fitted.push({ svg: svg, box: gbox });
            Object.keys(g.nodes).forEach(function (nid) {
              var node = svg.querySelector('g.node[id="' + nid + '"]');
              var i = idIndex.get(g.nodes[nid]);
              if (node && i !== undefined) node.addEventListener('click', function () { select(i, { reveal: true, scroll: true }); });
            });
          } else add(gbox, 'p', 'graph-error', 'No drawing: ' + (g.error || 'Graphviz produced nothing'));
          var words = add(body, 'div', 'words');
          wordsFor(words, g.steps, svg, g.title ? 'Then a cycle is forced:' : 'Why (each step is forced; together they form a cycle):');
          if (!g.steps.length && a.versions) {
            add(words, 'p', null, 'The versions the row could have had for this reader; each matches the WHERE, so the row should have been returned:');
            add(words, 'pre', null, a.versions.join('\n'));
          } else if (!g.steps.length) add(words, 'p', 'muted', 'The statement in red is the one the message above is about.');
          add(words, 'p', 'hint', 'Red: the contradiction. Dotted grey: other session-order (so) and reads-from (wr) facts among these transactions. Click a box to see it on the timeline.');
        });
      } else if (a.cases) {
        a.cases.forEach(function (c, ci) {
          var box = add(sec, 'div', 'words');
          add(box, 'h4', null, 'Case ' + (ci + 1) + ': suppose ' + c.assume.before + ' commits before ' + c.assume.after);
          wordsFor(box, c.edges.map(function (e, k) { return Object.assign({}, e, { step: k + 1 }); }), null, 'Then a cycle is forced:');
        });
      } else if (a.edges.length) {
        wordsFor(add(sec, 'div', 'words'), a.edges.map(function (e, k) { return Object.assign({}, e, { step: k + 1 }); }), null, 'Why (each step is forced; together they form a cycle):');
      }
      if (a.transactions) {
        add(sec, 'h4', null, 'Transactions');
        a.transactions.forEach(function (t) {
          var d = add(sec, 'div', 'txn-desc');
          var head = add(d, 'div', 'head');
          head.appendChild(txnLink(t.id));
          head.appendChild(document.createTextNode(': session ' + t.session + ' #' + t.seq + (t.label ? ' ' + t.label : '') + ', ' + t.iso + ', ' + t.status + (t.node ? ', on ' + t.node : '')));
          var more = add(d, 'details');
          add(more, 'summary', null, plural(t.statements.length, 'statement'));
          if (t.statements.length <= 8) more.open = true;
          add(more, 'pre', null, t.statements.join('\n'));
        });
      }
      if (a.subHistory) add(sec, 'p', null, 'Smallest inconsistent sub-history found: ' + a.subHistory.join(', '));
      if (a.conflicts) {
        add(sec, 'p', null, 'Unreturned rows whose hiding version had to be chosen:');
        add(sec, 'pre', null, a.conflicts.join('\n'));
      }
      var det = add(sec, 'details', 'terminal');
      add(det, 'summary', null, 'As printed by isocheck check');
      add(det, 'pre', null, a.text.join('\n'));
    });
    if (D.moreAnomalies) add(app, 'p', 'note', '\u2026 and ' + D.moreAnomalies + ' more anomalies (use isocheck check --json to see all).');
  }
  if (orderRank) {
    add(app, 'h2', null, 'Witness commit order');
    var shown = D.commitOrder.slice(0, 300).map(function (i) { return T[i].id; }).join(', ');
    add(app, 'p', null, 'A commit order of the ' + D.commitOrder.length + ' committed transactions that satisfies every transaction\'s level' +
      ' (numbered markers and the dark line on the timeline): ');
    add(app, 'pre', null, shown + (D.commitOrder.length > 300 ? ', \u2026 (' + (D.commitOrder.length - 300) + ' more)' : ''));
  }

  // ---------------------------------------------------------------- timeline
  add(app, 'h2', null, 'Timeline');
  add(app, 'p', 'hint', (D.timeline.mode === 'recorded'
    ? 'One lane per session; each bar spans a transaction from BEGIN to its end (milliseconds since the recording started). '
    : 'The history has no recorded times: one lane per session, transactions placed in file order. ') +
    'Scroll to zoom, drag to pan, click a bar for its statements.');
  var toolbar = add(app, 'div', 'toolbar');
  function button(text, fn) { var b = add(toolbar, 'button', null, text); b.type = 'button'; b.addEventListener('click', fn); return b; }
  button('Fit', function () { fit(); });
  button('Zoom in', function () { zoomAround((view.a + view.z) / 2, 1 / 1.6); });
  button('Zoom out', function () { zoomAround((view.a + view.z) / 2, 1.6); });
  if (D.highlight.length) button('Zoom to anomaly', function () { zoomTo(D.highlight); });
  var showOrder = !!orderRank;
  if (orderRank) {
    var lab = add(toolbar, 'label');
    var cb = add(lab, 'input');
    cb.type = 'checkbox'; cb.checked = true;
    cb.addEventListener('change', function () { showOrder = cb.checked; draw(); });
    lab.appendChild(document.createTextNode(' commit order'));
  }
  var legend = add(app, 'div', 'legend');
  var levelsPresent = [];
  ['RC', 'RA', 'CC', 'PC', 'SI', 'SER'].forEach(function (lv) { if (D.labels.some(function (l) { return l.levels[lv]; })) levelsPresent.push(lv); });
  levelsPresent.forEach(function (lv) { var it = add(legend, 'span'); var sw = add(it, 'span', 'sw'); sw.style.background = COLORS[lv]; it.appendChild(document.createTextNode(lv)); });
  function legendItem(text, css) { var it = add(legend, 'span'); var sw = add(it, 'span', 'sw'); Object.keys(css).forEach(function (k) { sw.style[k] = css[k]; }); it.appendChild(document.createTextNode(text)); }
  legendItem('committed', { background: '#9aa4ae' });
  legendItem('aborted', { background: 'repeating-linear-gradient(45deg, #9aa4ae 0 2px, #fff 2px 5px)' });
  legendItem('unknown', { background: 'rgba(154,164,174,.35)', border: '1px dashed #333' });
  if (D.highlight.length) legendItem('in the anomaly', { background: '#fff', border: '2px solid #d62828' });
  legendItem('selected', { background: '#fff', border: '2px solid #000' });
  if (orderRank) legendItem('commit order', { background: 'linear-gradient(#fff 0 4px, #333 4px 6px, #fff 6px)' });

  var layout = add(app, 'div', 'tl-layout');
  var main = add(layout, 'div', 'tl-main');
  var canvas = add(main, 'canvas');
  canvas.id = 'tl';
  var tip = add(main, 'div');
  tip.id = 'tip';
  var details = add(layout, 'aside');
  details.id = 'details';
  add(details, 'p', 'empty', 'Click a transaction on the timeline (or a box in a graph) to see its statements.');

  var ctx = canvas.getContext('2d');
  var sessions = D.timeline.sessions;
  var laneOf = new Map();
  sessions.forEach(function (x, i) { laneOf.set(x, i); });
  var LANE_H = sessions.length > 40 ? 14 : sessions.length > 16 ? 20 : 30;
  var BAR_H = LANE_H - (LANE_H >= 30 ? 12 : LANE_H >= 20 ? 8 : 4);
  var AXIS_H = 28, GUT = 88, RIGHT = 14, BOTTOM = 6;
  var lanes = sessions.map(function () { return []; });
  T.forEach(function (t, i) { lanes[laneOf.get(t.s)].push(i); });
  lanes.forEach(function (l) { l.sort(function (a, b) { return T[a].b - T[b].b || a - b; }); });
  var fullA = Infinity, fullZ = -Infinity;
  T.forEach(function (t) { if (t.b < fullA) fullA = t.b; if (t.e > fullZ) fullZ = t.e; });
  if (!isFinite(fullA)) { fullA = 0; fullZ = 1; }
  if (fullZ <= fullA) fullZ = fullA + 1;
  var view = { a: 0, z: 1 };
  var W = 600, H = 100, dpr = 1;
  var selected = -1;
  var patterns = {};

  function fit() {
    var pad = (fullZ - fullA) * 0.02;
    view.a = fullA - pad; view.z = fullZ + pad; draw();
  }
  function plotW() { return Math.max(10, W - GUT - RIGHT); }
  function X(t) { return GUT + (t - view.a) / (view.z - view.a) * plotW(); }
  function tAt(x) { return view.a + (x - GUT) / plotW() * (view.z - view.a); }
  function laneTop(l) { return AXIS_H + l * LANE_H; }
  function barRect(i) {
    var t = T[i], l = laneOf.get(t.s);
    var x0 = X(t.b), x1 = X(t.e);
    return { x: x0, y: laneTop(l) + (LANE_H - BAR_H) / 2, w: Math.max(x1 - x0, 2), h: BAR_H };
  }
  function hatch(level) {
    if (patterns[level]) return patterns[level];
    var c = document.createElement('canvas');
    c.width = 6; c.height = 6;
    var g = c.getContext('2d');
    g.fillStyle = '#ffffff'; g.fillRect(0, 0, 6, 6);
    g.strokeStyle = COLORS[level] || '#999'; g.lineWidth = 2;
    g.beginPath(); g.moveTo(-1, 7); g.lineTo(7, -1); g.moveTo(-1, 1); g.lineTo(1, -1); g.moveTo(5, 7); g.lineTo(7, 5); g.stroke();
    patterns[level] = ctx.createPattern(c, 'repeat');
    return patterns[level];
  }
  function niceStep(raw) {
    var p = Math.pow(10, Math.floor(Math.log10(raw)));
    var m = raw / p;
    return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) * p;
  }
  function resize() {
    W = Math.max(300, main.clientWidth);
    H = AXIS_H + sessions.length * LANE_H + BOTTOM;
    dpr = window.devicePixelRatio || 1;
    canvas.width = Math.round(W * dpr); canvas.height = Math.round(H * dpr);
    canvas.style.width = W + 'px'; canvas.style.height = H + 'px';
    draw();
  }
  function draw() {
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, W, H);
    ctx.font = '11px system-ui, sans-serif';
    ctx.textBaseline = 'middle';
    for (var l = 0; l < sessions.length; l++) {
      ctx.fillStyle = l % 2 ? '#f6f8fa' : '#ffffff';
      ctx.fillRect(0, laneTop(l), W, LANE_H);
      ctx.fillStyle = '#57606a'; ctx.textAlign = 'right';
      if (LANE_H >= 14) ctx.fillText('session ' + sessions[l], GUT - 8, laneTop(l) + LANE_H / 2);
    }
    // axis
    ctx.fillStyle = '#ffffff'; ctx.fillRect(0, 0, W, AXIS_H);
    ctx.strokeStyle = '#d0d7de'; ctx.lineWidth = 1;
    ctx.beginPath(); ctx.moveTo(0, AXIS_H - 0.5); ctx.lineTo(W, AXIS_H - 0.5); ctx.stroke();
    var step = niceStep((view.z - view.a) / Math.max(1, plotW() / 110));
    if (D.timeline.mode !== 'recorded') step = Math.max(1, step);
    ctx.textAlign = 'center'; ctx.fillStyle = '#57606a';
    for (var tk = Math.ceil(view.a / step) * step; tk <= view.z; tk += step) {
      var xx = Math.round(X(tk)) + 0.5;
      if (xx < GUT - 1 || xx > W - RIGHT + 1) continue;
      ctx.strokeStyle = '#eaeef2'; ctx.beginPath(); ctx.moveTo(xx, AXIS_H); ctx.lineTo(xx, H); ctx.stroke();
      ctx.strokeStyle = '#8c959f'; ctx.beginPath(); ctx.moveTo(xx, AXIS_H - 6); ctx.lineTo(xx, AXIS_H); ctx.stroke();
      var tickText = axisLabel(Math.abs(tk) < step / 1e6 ? 0 : tk, step);
      if (xx + ctx.measureText(tickText).width / 2 <= W - 2) ctx.fillText(tickText, xx, AXIS_H / 2 - 1);
    }
    ctx.save();
    ctx.beginPath(); ctx.rect(GUT, AXIS_H, plotW(), H - AXIS_H); ctx.clip();
    var visible = [];
    for (var li = 0; li < lanes.length; li++) {
      var list = lanes[li];
      for (var k = 0; k < list.length; k++) {
        var i = list[k], r = barRect(i);
        if (r.x > W || r.x + r.w < GUT) continue;
        visible.push(i);
        var t = T[i], color = COLORS[t.iso] || '#999';
        var w = r.w > 4 ? r.w - 1 : r.w;
        if (t.st === 'committed') {
          ctx.fillStyle = color; ctx.fillRect(r.x, r.y, w, r.h);
        } else if (t.st === 'aborted') {
          ctx.fillStyle = hatch(t.iso); ctx.fillRect(r.x, r.y, w, r.h);
          if (w > 3) { ctx.strokeStyle = color; ctx.lineWidth = 1; ctx.strokeRect(r.x + 0.5, r.y + 0.5, w - 1, r.h - 1); }
        } else {
          ctx.globalAlpha = 0.35; ctx.fillStyle = color; ctx.fillRect(r.x, r.y, w, r.h); ctx.globalAlpha = 1;
          if (w > 3) { ctx.setLineDash([3, 2]); ctx.strokeStyle = '#333'; ctx.lineWidth = 1; ctx.strokeRect(r.x + 0.5, r.y + 0.5, w - 1, r.h - 1); ctx.setLineDash([]); }
        }
      }
    }
    // labels inside wide bars
    if (visible.length < 3000) {
      ctx.textAlign = 'left'; ctx.font = '10px system-ui, sans-serif';
      visible.forEach(function (i) {
        var r = barRect(i);
        if (r.w < 28) return;
        var text = T[i].id;
        var room = r.w - 6 - (showOrder && orderRank && orderRank.has(i) ? 16 : 0);
        if (ctx.measureText(text).width > room) return;
        ctx.fillStyle = '#111';
        ctx.fillText(text, Math.max(r.x, GUT) + 3, r.y + r.h / 2);
      });
    }
    // commit order: a line through the bars' ends in commit order, numbered markers where there is room.
    // Zoomed out over thousands of transactions the line would only smear the lanes: then a hint instead.
    if (showOrder && orderRank) {
      var inView = [];
      D.commitOrder.forEach(function (i, k) { var x = X(T[i].e); if (x >= GUT - 40 && x <= W + 40) inView.push(k); });
      if (inView.length > 600) {
        ctx.font = '12px system-ui, sans-serif'; ctx.textAlign = 'right';
        var hintText = 'zoom in to see the commit order (' + inView.length + ' transactions in view)';
        var hw = ctx.measureText(hintText).width;
        ctx.fillStyle = 'rgba(255,255,255,0.9)'; ctx.fillRect(W - RIGHT - hw - 12, AXIS_H + 3, hw + 10, 18);
        ctx.fillStyle = '#1f2328'; ctx.fillText(hintText, W - RIGHT - 6, AXIS_H + 12);
      } else if (inView.length) {
        var pt = function (k) { var t = T[D.commitOrder[k]]; return { x: X(t.e), y: laneTop(laneOf.get(t.s)) + LANE_H / 2 }; };
        var from = Math.max(0, inView[0] - 1), to = Math.min(D.commitOrder.length - 1, inView[inView.length - 1] + 1);
        ctx.strokeStyle = 'rgba(31,35,40,0.7)'; ctx.lineWidth = 1.3;
        ctx.beginPath();
        for (var k2 = from; k2 <= to; k2++) { var p2 = pt(k2); if (k2 === from) ctx.moveTo(p2.x, p2.y); else ctx.lineTo(p2.x, p2.y); }
        ctx.stroke();
        ctx.font = 'bold 9px system-ui, sans-serif'; ctx.textAlign = 'center';
        inView.forEach(function (k) {
          var p = pt(k), label = String(k + 1);
          var w = Math.max(14, ctx.measureText(label).width + 6);
          ctx.fillStyle = '#1f2328';
          ctx.beginPath();
          if (ctx.roundRect) ctx.roundRect(p.x - w / 2, p.y - 7, w, 14, 7); else ctx.rect(p.x - w / 2, p.y - 7, w, 14);
          ctx.fill();
          ctx.fillStyle = '#ffffff'; ctx.fillText(label, p.x, p.y + 0.5);
        });
      }
    }
    // anomaly transactions: red outline and a marker above
    ctx.strokeStyle = '#d62828'; ctx.fillStyle = '#d62828'; ctx.lineWidth = 2.5;
    D.highlight.forEach(function (i) {
      var r = barRect(i);
      ctx.strokeRect(r.x - 1.5, r.y - 1.5, r.w + 2, r.h + 3);
      var cx = Math.min(Math.max(r.x + r.w / 2, GUT + 4), W - RIGHT - 4);
      ctx.beginPath(); ctx.moveTo(cx - 4, r.y - 6); ctx.lineTo(cx + 4, r.y - 6); ctx.lineTo(cx, r.y - 1); ctx.closePath(); ctx.fill();
    });
    if (selected >= 0) {
      var sr = barRect(selected);
      ctx.strokeStyle = '#000'; ctx.lineWidth = 2;
      ctx.strokeRect(sr.x - 2.5, sr.y - 2.5, sr.w + 4, sr.h + 5);
    }
    ctx.restore();
  }

  function zoomAround(t, factor) {
    var span = (view.z - view.a) * factor;
    var full = fullZ - fullA;
    var minSpan = D.timeline.mode === 'recorded' ? Math.max(full * 1e-6, 0.01) : 2;
    if (span < minSpan) { factor = minSpan / (view.z - view.a); }
    if (span > full * 3) { factor = full * 3 / (view.z - view.a); }
    view.a = t - (t - view.a) * factor;
    view.z = t + (view.z - t) * factor;
    draw();
  }
  function zoomTo(indices) {
    if (!indices.length) return;
    var a = Infinity, z = -Infinity;
    indices.forEach(function (i) { a = Math.min(a, T[i].b); z = Math.max(z, T[i].e); });
    var span = Math.max(z - a, (fullZ - fullA) * 0.002, D.timeline.mode === 'recorded' ? 1 : 4);
    view.a = a - span * 0.25; view.z = z + span * 0.25;
    draw();
  }
  function reveal(i) {
    var r = barRect(i);
    if (r.x >= GUT && r.x + r.w <= W - RIGHT && r.w >= 4) return;
    var span = view.z - view.a, t = T[i];
    if (t.e - t.b > span * 0.8 || r.w < 4) span = Math.max(span, (t.e - t.b) * 1.6);
    if (r.w < 4) span = Math.min(span, Math.max((t.e - t.b) * 12, D.timeline.mode === 'recorded' ? 1 : 8));
    var mid = (t.b + t.e) / 2;
    view.a = mid - span / 2; view.z = mid + span / 2;
    draw();
  }
  function hit(cx, cy) {
    var l = Math.floor((cy - AXIS_H) / LANE_H);
    if (l < 0 || l >= lanes.length || cx < GUT) return -1;
    var list = lanes[l], t = tAt(cx);
    var lo = 0, hi = list.length;
    while (lo < hi) { var mid = (lo + hi) >> 1; if (T[list[mid]].b <= t) lo = mid + 1; else hi = mid; }
    var best = -1, bestD = 4.01;
    for (var k = Math.max(0, lo - 12); k < Math.min(list.length, lo + 12); k++) {
      var r = barRect(list[k]);
      var d = cx < r.x ? r.x - cx : cx > r.x + r.w ? cx - r.x - r.w : 0;
      if (d < bestD || (d === 0 && bestD === 0)) { best = list[k]; bestD = d; }
    }
    return best;
  }
  function local(ev) { var rect = canvas.getBoundingClientRect(); return { x: ev.clientX - rect.left, y: ev.clientY - rect.top }; }

  var drag = null, suppressClick = false;
  canvas.addEventListener('mousedown', function (ev) {
    if (ev.button !== 0) return;
    drag = { x: ev.clientX, a: view.a, z: view.z, moved: false };
  });
  window.addEventListener('mousemove', function (ev) {
    if (drag) {
      var dx = ev.clientX - drag.x;
      if (Math.abs(dx) > 3) { drag.moved = true; canvas.classList.add('dragging'); tip.style.display = 'none'; }
      if (drag.moved) {
        var dt = dx / plotW() * (drag.z - drag.a);
        view.a = drag.a - dt; view.z = drag.z - dt; draw();
      }
      return;
    }
    if (ev.target !== canvas) return;
    var p = local(ev), i = hit(p.x, p.y);
    canvas.classList.toggle('over', i >= 0);
    if (i < 0) { tip.style.display = 'none'; return; }
    var t = T[i];
    tip.textContent = t.id + (t.lb ? '  ' + t.lb : '') + '\n' + t.iso + ', ' + t.st + ', session ' + t.s + ' #' + t.q +
      '\n' + fmtTime(t.b) + ' \u2013 ' + fmtTime(t.e) + (orderRank && orderRank.has(i) ? '\ncommit order #' + orderRank.get(i) : '') +
      (highlighted.has(i) ? '\nin the anomaly' : '');
    tip.style.display = 'block';
    var left = Math.min(p.x + 14, W - tip.offsetWidth - 4);
    tip.style.left = Math.max(0, left) + 'px';
    tip.style.top = (p.y + 16) + 'px';
  });
  window.addEventListener('mouseup', function () {
    if (drag) { suppressClick = drag.moved; drag = null; canvas.classList.remove('dragging'); }
  });
  canvas.addEventListener('mouseleave', function () { tip.style.display = 'none'; });
  canvas.addEventListener('click', function (ev) {
    if (suppressClick) { suppressClick = false; return; }
    var p = local(ev), i = hit(p.x, p.y);
    if (i >= 0) select(i, {});
  });
  canvas.addEventListener('wheel', function (ev) {
    ev.preventDefault();
    var p = local(ev);
    var delta = ev.deltaMode === 1 ? ev.deltaY * 16 : ev.deltaY;
    zoomAround(tAt(Math.max(GUT, p.x)), Math.exp(delta * 0.0015));
  }, { passive: false });
  window.addEventListener('resize', resize);

  // ---------------------------------------------------------------- details panel
  var writerOf = null;
  function writers() {
    if (writerOf) return writerOf;
    writerOf = new Map();
    T.forEach(function (t, i) { t.ev.forEach(function (e) { if (e.op !== 'select') writerOf.set(e.wid, i); }); });
    return writerOf;
  }
  function widCell(td, wid, self) {
    var w = writers().get(wid);
    if (wid === 'init' || w === undefined) { td.textContent = wid; if (wid === 'init') td.title = 'initial database'; return; }
    if (w === self) { td.textContent = wid + ' (own)'; return; }
    var b = el('button', 'link', wid);
    b.type = 'button';
    b.title = 'written by ' + T[w].id;
    b.addEventListener('click', function () { select(w, { reveal: true }); });
    td.appendChild(b);
    td.appendChild(el('span', 'muted', ' by ' + T[w].id));
  }
  var MAX_ROWS = 200;
  function showDetails(i) {
    details.textContent = '';
    var t = T[i];
    var h = add(details, 'h3', null, t.id);
    if (t.lb) add(h, 'span', 'lb', t.lb);
    if (highlighted.has(i)) add(details, 'p', 'flag', 'Involved in the anomaly');
    var kv = add(details, 'table', 'kv');
    function row(k, v) { var tr = add(kv, 'tr'); add(tr, 'th', null, k); var td = add(tr, 'td'); if (v instanceof Node) td.appendChild(v); else td.textContent = String(v); return td; }
    row('session', t.s + ' #' + t.q);
    row('level', chip(t.iso));
    row('status', t.st);
    if (D.timeline.mode === 'recorded') row('time', fmtTime(t.b) + ' \u2013 ' + fmtTime(t.e) + ' (' + fmtTime(t.e - t.b) + ')');
    row('file line', t.ln);
    if (t.err) row('error', typeof t.err === 'string' ? t.err : [t.err.code, t.err.message].filter(Boolean).join(': '));
    if (orderRank && orderRank.has(i)) row('commit order', '#' + orderRank.get(i) + ' of ' + D.commitOrder.length);
    add(details, 'h4', null, plural(t.ev.length, 'statement'));
    t.ev.forEach(function (e, k) {
      var box = add(details, 'div', 'stmt');
      var head = add(box, 'div', 'stmt-head');
      head.appendChild(document.createTextNode((k + 1) + '. '));
      add(head, 'span', 'op', String(e.op).toUpperCase());
      head.appendChild(document.createTextNode(' ' + e.table + (e.op !== 'insert' && e.where ? ' WHERE ' + e.where : '') +
        (e.op !== 'insert' && e.params && e.params.length ? '  ' + json(e.params) : '') + (e.partial ? ' (partial)' : '') +
        (e.wid ? '  [' + e.wid + ']' : '') + '  \u2192 ' + plural(e.rows.length, 'row')));
      if (!e.rows.length) return;
      // One line per row: where it came from (the version read, linked to its writer), then the row.
      var rowsBox = add(box, 'div', 'rows');
      e.rows.slice(0, MAX_ROWS).forEach(function (r) {
        var line = add(rowsBox, 'div', 'row');
        if (e.op === 'select') { widCell(add(line, 'span', 'w'), r.wid, i); line.appendChild(document.createTextNode(' ' + json(r.row))); }
        else if (e.op === 'insert') line.appendChild(document.createTextNode(json(r.row)));
        else {
          var w = add(line, 'span', 'w');
          w.appendChild(document.createTextNode('was '));
          widCell(add(w, 'span'), r.read, i);
          line.appendChild(document.createTextNode(e.op === 'update' ? ' → ' + json(r.row) : ' deleted key ' + json(r.key)));
        }
      });
      if (e.rows.length > MAX_ROWS) add(box, 'div', 'muted', '\u2026 ' + (e.rows.length - MAX_ROWS) + ' more rows');
    });
  }
  function select(i, opts) {
    selected = i;
    if (opts && opts.reveal) reveal(i); else draw();
    showDetails(i);
    if (opts && opts.scroll) main.scrollIntoView({ block: 'nearest', behavior: 'smooth' });
  }

  fitSvgs();
  window.addEventListener('resize', fitSvgs);
  resize();
  fit();
  var loadMs = performance.now() - started;

  window.__isocheck = {
    ready: true,
    loadMs: loadMs,
    transactions: T.length,
    barOf: function (id) {
      var i = idIndex.get(id);
      if (i === undefined) return null;
      var r = barRect(i), rect = canvas.getBoundingClientRect();
      var x0 = Math.max(r.x, GUT), x1 = Math.min(r.x + r.w, W - RIGHT);
      return { x: rect.left + r.x, y: rect.top + r.y, width: r.w, height: r.h, cx: rect.left + (x0 + x1) / 2, cy: rect.top + r.y + r.h / 2, visible: x1 > x0 };
    },
    select: function (id) { var i = idIndex.get(id); if (i !== undefined) select(i, { reveal: true }); },
    selected: function () { return selected >= 0 ? T[selected].id : null; },
    zoomTo: function (ids) { zoomTo(ids.map(function (id) { return idIndex.get(id); }).filter(function (i) { return i !== undefined; })); },
    fit: fit,
    view: function () { return { a: view.a, z: view.z }; },
    highlighted: function () { return D.highlight.map(function (i) { return T[i].id; }); },
    svgEdges: function () { return svgEdgeCount; }
  };
})();
`;
