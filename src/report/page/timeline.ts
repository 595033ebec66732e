/**
 * The timeline (part of the page script, see context.ts): one lane per session on a canvas, each transaction a
 * bar coloured by level (hatched: aborted; faded and dashed: unknown), zoom (wheel, buttons), pan (drag),
 * hit-testing (hover tip, click to select), the anomaly's transactions outlined in red, and the witness commit
 * order as a numbered line through the bars' ends.
 */
import type { PageContext, Timeline } from './context.js';

export function createTimeline(ctx: PageContext, app: HTMLElement): Timeline {
  const { data: D, txns: T, dom, orderRank, highlighted } = ctx;
  const { add } = dom;
  const COLORS = D.levelColors;
  const recorded = D.timeline.mode === 'recorded';

  add(app, 'h2', null, 'Timeline');
  add(
    app,
    'p',
    'hint',
    (recorded
      ? 'One lane per session; each bar spans a transaction from BEGIN to its end (milliseconds since the ' +
        'recording started). '
      : 'The history has no recorded times: one lane per session, transactions placed in file order. ') +
      'Scroll to zoom, drag to pan, click a bar for its statements.',
  );
  const toolbar = add(app, 'div', 'toolbar');
  function button(label: string, fn: () => void): void {
    const b = add(toolbar, 'button', null, label);
    b.type = 'button';
    b.addEventListener('click', fn);
  }
  button('Fit', () => fitView());
  button('Zoom in', () => zoomAround((view.a + view.z) / 2, 1 / 1.6));
  button('Zoom out', () => zoomAround((view.a + view.z) / 2, 1.6));
  if (D.highlight.length) button('Zoom to anomaly', () => zoomTo(D.highlight));
  let showOrder = !!orderRank;
  if (orderRank) {
    const lab = add(toolbar, 'label');
    const cb = add(lab, 'input');
    cb.type = 'checkbox';
    cb.checked = true;
    cb.addEventListener('change', () => {
      showOrder = cb.checked;
      draw();
    });
    dom.text(lab, ' commit order');
  }
  const legend = add(app, 'div', 'legend');
  function legendItem(label: string, css: Partial<CSSStyleDeclaration>): void {
    const it = add(legend, 'span');
    Object.assign(add(it, 'span', 'sw').style, css);
    dom.text(it, label);
  }
  for (const lv of ['RC', 'RA', 'CC', 'PC', 'SI', 'SER'])
    if (D.labels.some((l) => l.levels[lv as keyof typeof l.levels])) legendItem(lv, { background: COLORS[lv] });
  legendItem('committed', { background: '#9aa4ae' });
  legendItem('aborted', { background: 'repeating-linear-gradient(45deg, #9aa4ae 0 2px, #fff 2px 5px)' });
  legendItem('unknown', { background: 'rgba(154,164,174,.35)', border: '1px dashed #333' });
  if (D.highlight.length) legendItem('in the anomaly', { background: '#fff', border: '2px solid #d62828' });
  legendItem('selected', { background: '#fff', border: '2px solid #000' });
  if (orderRank) legendItem('commit order', { background: 'linear-gradient(#fff 0 4px, #333 4px 6px, #fff 6px)' });

  const layout = add(app, 'div', 'tl-layout');
  const main = add(layout, 'div', 'tl-main');
  const canvas = add(main, 'canvas');
  canvas.id = 'tl';
  const tip = add(main, 'div');
  tip.id = 'tip';
  const panel = add(layout, 'aside');
  panel.id = 'details';
  add(panel, 'p', 'empty', 'Click a transaction on the timeline (or a box in a graph) to see its statements.');
  const c2d = canvas.getContext('2d');
  if (!c2d) throw new Error('no 2D canvas');
  const ctx2: CanvasRenderingContext2D = c2d;

  const sessions = D.timeline.sessions;
  const laneOf = new Map<number, number>();
  for (const [i, x] of sessions.entries()) laneOf.set(x, i);
  const LANE_H = sessions.length > 40 ? 14 : sessions.length > 16 ? 20 : 30;
  const BAR_H = LANE_H - (LANE_H >= 30 ? 12 : LANE_H >= 20 ? 8 : 4);
  const AXIS_H = 28;
  const GUT = 88;
  const RIGHT = 14;
  const BOTTOM = 6;
  const lanes: number[][] = sessions.map(() => []);
  for (const [i, t] of T.entries()) lanes[laneOf.get(t.s)!].push(i);
  for (const l of lanes) l.sort((a, b) => T[a].b - T[b].b || a - b);
  let fullA = Number.POSITIVE_INFINITY;
  let fullZ = Number.NEGATIVE_INFINITY;
  for (const t of T) {
    if (t.b < fullA) fullA = t.b;
    if (t.e > fullZ) fullZ = t.e;
  }
  if (!Number.isFinite(fullA)) {
    fullA = 0;
    fullZ = 1;
  }
  if (fullZ <= fullA) fullZ = fullA + 1;
  const view = { a: 0, z: 1 };
  let W = 600;
  let H = 100;
  let dpr = 1;
  const patterns: Record<string, CanvasPattern | string> = {};

  const plotW = () => Math.max(10, W - GUT - RIGHT);
  const X = (t: number) => GUT + ((t - view.a) / (view.z - view.a)) * plotW();
  const tAt = (x: number) => view.a + ((x - GUT) / plotW()) * (view.z - view.a);
  const laneTop = (l: number) => AXIS_H + l * LANE_H;
  function barRect(i: number): { x: number; y: number; w: number; h: number } {
    const t = T[i];
    const x0 = X(t.b);
    const x1 = X(t.e);
    return { x: x0, y: laneTop(laneOf.get(t.s)!) + (LANE_H - BAR_H) / 2, w: Math.max(x1 - x0, 2), h: BAR_H };
  }
  function fitView(): void {
    const pad = (fullZ - fullA) * 0.02;
    view.a = fullA - pad;
    view.z = fullZ + pad;
    draw();
  }
  function hatch(level: string): CanvasPattern | string {
    if (patterns[level]) return patterns[level];
    const c = document.createElement('canvas');
    c.width = 6;
    c.height = 6;
    const g = c.getContext('2d');
    if (!g) return '#ffffff';
    g.fillStyle = '#ffffff';
    g.fillRect(0, 0, 6, 6);
    g.strokeStyle = COLORS[level] || '#999';
    g.lineWidth = 2;
    g.beginPath();
    g.moveTo(-1, 7);
    g.lineTo(7, -1);
    g.moveTo(-1, 1);
    g.lineTo(1, -1);
    g.moveTo(5, 7);
    g.lineTo(7, 5);
    g.stroke();
    patterns[level] = ctx2.createPattern(c, 'repeat') ?? '#ffffff';
    return patterns[level];
  }
  function niceStep(raw: number): number {
    const p = 10 ** Math.floor(Math.log10(raw));
    const m = raw / p;
    return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) * p;
  }
  function axisLabel(v: number, step: number): string {
    if (!recorded) return `#${Math.round(v)}`;
    const unit = step >= 1000 ? 1000 : 1;
    const digits = Math.max(0, Math.min(6, -Math.floor(Math.log10(step / unit) + 1e-9)));
    return (v / unit).toFixed(digits) + (unit === 1000 ? ' s' : ' ms');
  }
  function resize(): void {
    W = Math.max(300, main.clientWidth);
    H = AXIS_H + sessions.length * LANE_H + BOTTOM;
    dpr = window.devicePixelRatio || 1;
    canvas.width = Math.round(W * dpr);
    canvas.height = Math.round(H * dpr);
    canvas.style.width = `${W}px`;
    canvas.style.height = `${H}px`;
    draw();
  }
  function line(x0: number, y0: number, x1: number, y1: number): void {
    ctx2.beginPath();
    ctx2.moveTo(x0, y0);
    ctx2.lineTo(x1, y1);
    ctx2.stroke();
  }

  function draw(): void {
    const c = ctx2;
    c.setTransform(dpr, 0, 0, dpr, 0, 0);
    c.clearRect(0, 0, W, H);
    c.font = '11px system-ui, sans-serif';
    c.textBaseline = 'middle';
    for (let l = 0; l < sessions.length; l++) {
      c.fillStyle = l % 2 ? '#f6f8fa' : '#ffffff';
      c.fillRect(0, laneTop(l), W, LANE_H);
      c.fillStyle = '#57606a';
      c.textAlign = 'right';
      if (LANE_H >= 14) c.fillText(`session ${sessions[l]}`, GUT - 8, laneTop(l) + LANE_H / 2);
    }
    // axis
    c.fillStyle = '#ffffff';
    c.fillRect(0, 0, W, AXIS_H);
    c.strokeStyle = '#d0d7de';
    c.lineWidth = 1;
    line(0, AXIS_H - 0.5, W, AXIS_H - 0.5);
    let step = niceStep((view.z - view.a) / Math.max(1, plotW() / 110));
    if (!recorded) step = Math.max(1, step);
    c.textAlign = 'center';
    c.fillStyle = '#57606a';
    for (let tk = Math.ceil(view.a / step) * step; tk <= view.z; tk += step) {
      const xx = Math.round(X(tk)) + 0.5;
      if (xx < GUT - 1 || xx > W - RIGHT + 1) continue;
      c.strokeStyle = '#eaeef2';
      line(xx, AXIS_H, xx, H);
      c.strokeStyle = '#8c959f';
      line(xx, AXIS_H - 6, xx, AXIS_H);
      const tickText = axisLabel(Math.abs(tk) < step / 1e6 ? 0 : tk, step);
      if (xx + c.measureText(tickText).width / 2 <= W - 2) c.fillText(tickText, xx, AXIS_H / 2 - 1);
    }
    c.save();
    c.beginPath();
    c.rect(GUT, AXIS_H, plotW(), H - AXIS_H);
    c.clip();
    const visible: number[] = [];
    for (const list of lanes) {
      for (const i of list) {
        const r = barRect(i);
        if (r.x > W || r.x + r.w < GUT) continue;
        visible.push(i);
        const t = T[i];
        const color = COLORS[t.iso] || '#999';
        const w = r.w > 4 ? r.w - 1 : r.w;
        if (t.st === 'committed') {
          c.fillStyle = color;
          c.fillRect(r.x, r.y, w, r.h);
        } else if (t.st === 'aborted') {
          c.fillStyle = hatch(t.iso);
          c.fillRect(r.x, r.y, w, r.h);
          if (w > 3) {
            c.strokeStyle = color;
            c.lineWidth = 1;
            c.strokeRect(r.x + 0.5, r.y + 0.5, w - 1, r.h - 1);
          }
        } else {
          c.globalAlpha = 0.35;
          c.fillStyle = color;
          c.fillRect(r.x, r.y, w, r.h);
          c.globalAlpha = 1;
          if (w > 3) {
            c.setLineDash([3, 2]);
            c.strokeStyle = '#333';
            c.lineWidth = 1;
            c.strokeRect(r.x + 0.5, r.y + 0.5, w - 1, r.h - 1);
            c.setLineDash([]);
          }
        }
      }
    }
    // labels inside wide bars
    if (visible.length < 3000) {
      c.textAlign = 'left';
      c.font = '10px system-ui, sans-serif';
      for (const i of visible) {
        const r = barRect(i);
        if (r.w < 28) continue;
        const label = T[i].id;
        const room = r.w - 6 - (showOrder && orderRank?.has(i) ? 16 : 0);
        if (c.measureText(label).width > room) continue;
        c.fillStyle = '#111';
        c.fillText(label, Math.max(r.x, GUT) + 3, r.y + r.h / 2);
      }
    }
    if (showOrder && orderRank && D.commitOrder) drawOrder(D.commitOrder);
    // anomaly transactions: red outline and a marker above
    c.strokeStyle = '#d62828';
    c.fillStyle = '#d62828';
    c.lineWidth = 2.5;
    for (const i of D.highlight) {
      const r = barRect(i);
      c.strokeRect(r.x - 1.5, r.y - 1.5, r.w + 2, r.h + 3);
      const cx = Math.min(Math.max(r.x + r.w / 2, GUT + 4), W - RIGHT - 4);
      c.beginPath();
      c.moveTo(cx - 4, r.y - 6);
      c.lineTo(cx + 4, r.y - 6);
      c.lineTo(cx, r.y - 1);
      c.closePath();
      c.fill();
    }
    if (api.selected >= 0) {
      const sr = barRect(api.selected);
      c.strokeStyle = '#000';
      c.lineWidth = 2;
      c.strokeRect(sr.x - 2.5, sr.y - 2.5, sr.w + 4, sr.h + 5);
    }
    c.restore();
  }

  // The commit order: a line through the bars' ends in commit order, numbered markers where there is room.
  // Zoomed out over thousands of transactions the line would only smear the lanes: then a hint instead.
  function drawOrder(order: number[]): void {
    const c = ctx2;
    const inView: number[] = [];
    order.forEach((i, k) => {
      const x = X(T[i].e);
      if (x >= GUT - 40 && x <= W + 40) inView.push(k);
    });
    if (inView.length > 600) {
      c.font = '12px system-ui, sans-serif';
      c.textAlign = 'right';
      const hintText = `zoom in to see the commit order (${inView.length} transactions in view)`;
      const hw = c.measureText(hintText).width;
      c.fillStyle = 'rgba(255,255,255,0.9)';
      c.fillRect(W - RIGHT - hw - 12, AXIS_H + 3, hw + 10, 18);
      c.fillStyle = '#1f2328';
      c.fillText(hintText, W - RIGHT - 6, AXIS_H + 12);
      return;
    }
    if (!inView.length) return;
    const pt = (k: number) => {
      const t = T[order[k]];
      return { x: X(t.e), y: laneTop(laneOf.get(t.s)!) + LANE_H / 2 };
    };
    const from = Math.max(0, inView[0] - 1);
    const to = Math.min(order.length - 1, inView[inView.length - 1] + 1);
    c.strokeStyle = 'rgba(31,35,40,0.7)';
    c.lineWidth = 1.3;
    c.beginPath();
    for (let k = from; k <= to; k++) {
      const p = pt(k);
      if (k === from) c.moveTo(p.x, p.y);
      else c.lineTo(p.x, p.y);
    }
    c.stroke();
    c.font = 'bold 9px system-ui, sans-serif';
    c.textAlign = 'center';
    for (const k of inView) {
      const p = pt(k);
      const label = String(k + 1);
      const w = Math.max(14, c.measureText(label).width + 6);
      c.fillStyle = '#1f2328';
      c.beginPath();
      if (c.roundRect) c.roundRect(p.x - w / 2, p.y - 7, w, 14, 7);
      else c.rect(p.x - w / 2, p.y - 7, w, 14);
      c.fill();
      c.fillStyle = '#ffffff';
      c.fillText(label, p.x, p.y + 0.5);
    }
  }

  function zoomAround(t: number, factor: number): void {
    const span = (view.z - view.a) * factor;
    const full = fullZ - fullA;
    const minSpan = recorded ? Math.max(full * 1e-6, 0.01) : 2;
    let f = factor;
    if (span < minSpan) f = minSpan / (view.z - view.a);
    if (span > full * 3) f = (full * 3) / (view.z - view.a);
    view.a = t - (t - view.a) * f;
    view.z = t + (view.z - t) * f;
    draw();
  }
  function zoomTo(indices: number[]): void {
    if (!indices.length) return;
    let a = Number.POSITIVE_INFINITY;
    let z = Number.NEGATIVE_INFINITY;
    for (const i of indices) {
      a = Math.min(a, T[i].b);
      z = Math.max(z, T[i].e);
    }
    const span = Math.max(z - a, (fullZ - fullA) * 0.002, recorded ? 1 : 4);
    view.a = a - span * 0.25;
    view.z = z + span * 0.25;
    draw();
  }
  function reveal(i: number): void {
    const r = barRect(i);
    if (r.x >= GUT && r.x + r.w <= W - RIGHT && r.w >= 4) {
      draw();
      return;
    }
    let span = view.z - view.a;
    const t = T[i];
    if (t.e - t.b > span * 0.8 || r.w < 4) span = Math.max(span, (t.e - t.b) * 1.6);
    if (r.w < 4) span = Math.min(span, Math.max((t.e - t.b) * 12, recorded ? 1 : 8));
    const mid = (t.b + t.e) / 2;
    view.a = mid - span / 2;
    view.z = mid + span / 2;
    draw();
  }
  function hit(cx: number, cy: number): number {
    const l = Math.floor((cy - AXIS_H) / LANE_H);
    if (l < 0 || l >= lanes.length || cx < GUT) return -1;
    const list = lanes[l];
    const t = tAt(cx);
    let lo = 0;
    let hi = list.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (T[list[mid]].b <= t) lo = mid + 1;
      else hi = mid;
    }
    let best = -1;
    let bestD = 4.01;
    for (let k = Math.max(0, lo - 12); k < Math.min(list.length, lo + 12); k++) {
      const r = barRect(list[k]);
      const d = cx < r.x ? r.x - cx : cx > r.x + r.w ? cx - r.x - r.w : 0;
      if (d < bestD || (d === 0 && bestD === 0)) {
        best = list[k];
        bestD = d;
      }
    }
    return best;
  }
  function local(ev: MouseEvent): { x: number; y: number } {
    const rect = canvas.getBoundingClientRect();
    return { x: ev.clientX - rect.left, y: ev.clientY - rect.top };
  }

  let drag: { x: number; a: number; z: number; moved: boolean } | null = null;
  let suppressClick = false;
  canvas.addEventListener('mousedown', (ev) => {
    if (ev.button !== 0) return;
    drag = { x: ev.clientX, a: view.a, z: view.z, moved: false };
  });
  window.addEventListener('mousemove', (ev) => {
    if (drag) {
      const dx = ev.clientX - drag.x;
      if (Math.abs(dx) > 3) {
        drag.moved = true;
        canvas.classList.add('dragging');
        tip.style.display = 'none';
      }
      if (drag.moved) {
        const dt = (dx / plotW()) * (drag.z - drag.a);
        view.a = drag.a - dt;
        view.z = drag.z - dt;
        draw();
      }
      return;
    }
    if (ev.target !== canvas) return;
    const p = local(ev);
    const i = hit(p.x, p.y);
    canvas.classList.toggle('over', i >= 0);
    if (i < 0) {
      tip.style.display = 'none';
      return;
    }
    const t = T[i];
    tip.textContent = [
      t.id + (t.lb ? `  ${t.lb}` : ''),
      `${t.iso}, ${t.st}, session ${t.s} #${t.q}`,
      `${dom.fmtTime(t.b)} \u2013 ${dom.fmtTime(t.e)}`,
      ...(orderRank?.has(i) ? [`commit order #${orderRank.get(i)}`] : []),
      ...(highlighted.has(i) ? ['in the anomaly'] : []),
    ].join('\n');
    tip.style.display = 'block';
    const left = Math.min(p.x + 14, W - tip.offsetWidth - 4);
    tip.style.left = `${Math.max(0, left)}px`;
    tip.style.top = `${p.y + 16}px`;
  });
  window.addEventListener('mouseup', () => {
    if (drag) {
      suppressClick = drag.moved;
      drag = null;
      canvas.classList.remove('dragging');
    }
  });
  canvas.addEventListener('mouseleave', () => {
    tip.style.display = 'none';
  });
  canvas.addEventListener('click', (ev) => {
    if (suppressClick) {
      suppressClick = false;
      return;
    }
    const p = local(ev);
    const i = hit(p.x, p.y);
    if (i >= 0) ctx.select(i, {});
  });
  canvas.addEventListener(
    'wheel',
    (ev) => {
      ev.preventDefault();
      const p = local(ev);
      const delta = ev.deltaMode === 1 ? ev.deltaY * 16 : ev.deltaY;
      zoomAround(tAt(Math.max(GUT, p.x)), Math.exp(delta * 0.0015));
    },
    { passive: false },
  );
  window.addEventListener('resize', resize);

  function barOf(i: number) {
    const r = barRect(i);
    const rect = canvas.getBoundingClientRect();
    const x0 = Math.max(r.x, GUT);
    const x1 = Math.min(r.x + r.w, W - RIGHT);
    return {
      x: rect.left + r.x,
      y: rect.top + r.y,
      width: r.w,
      height: r.h,
      cx: rect.left + (x0 + x1) / 2,
      cy: rect.top + r.y + r.h / 2,
      visible: x1 > x0,
    };
  }

  const api: Timeline = {
    draw,
    fit: fitView,
    zoomTo,
    reveal,
    resize,
    selected: -1,
    element: main,
    panel,
    barOf,
    view: () => ({ a: view.a, z: view.z }),
  };
  return api;
}
