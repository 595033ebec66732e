/**
 * The details panel (part of the page script, see context.ts): the selected transaction's session, level,
 * status, time, error and place in the commit order, then each statement with its rows; a version read links to
 * the transaction that wrote it.
 */
import type { HistoryEvent } from '../../history/format.js';
import type { PageContext } from './context.js';

export function createDetails(ctx: PageContext, panel: HTMLElement): { show(i: number): void } {
  const MAX_ROWS = 200;
  const { data: D, txns: T, dom, orderRank, highlighted } = ctx;
  const { add, text, json, plural } = dom;
  let writerOf: Map<string, number> | null = null;

  function writers(): Map<string, number> {
    if (writerOf) return writerOf;
    const m = new Map<string, number>();
    T.forEach((t, i) => {
      for (const e of t.ev) if (e.op !== 'select') m.set(e.wid, i);
    });
    writerOf = m;
    return m;
  }
  function widCell(td: HTMLElement, wid: string, self: number): void {
    const w = writers().get(wid);
    if (wid === 'init' || w === undefined) {
      td.textContent = wid;
      if (wid === 'init') td.title = 'initial database';
      return;
    }
    if (w === self) {
      td.textContent = `${wid} (own)`;
      return;
    }
    const b = dom.el('button', 'link', wid);
    b.type = 'button';
    b.title = `written by ${T[w].id}`;
    b.addEventListener('click', () => ctx.select(w, { reveal: true }));
    td.appendChild(b);
    td.appendChild(dom.el('span', 'muted', ` by ${T[w].id}`));
  }
  /** `was <version read>` at the start of a written row's line; the line. */
  function was(line: HTMLElement, read: string, self = selected): HTMLElement {
    const w = add(line, 'span', 'w');
    text(w, 'was ');
    widCell(add(w, 'span'), read, self);
    return line;
  }
  let selected = -1;
  function statement(i: number, e: HistoryEvent, k: number): void {
    const box = add(panel, 'div', 'stmt');
    const head = add(box, 'div', 'stmt-head');
    text(head, `${k + 1}. `);
    add(head, 'span', 'op', String(e.op).toUpperCase());
    const where = e.op !== 'insert' && e.where ? ` WHERE ${e.where}` : '';
    const params = e.op !== 'insert' && e.params && e.params.length ? `  ${json(e.params)}` : '';
    const partial = e.op !== 'insert' && e.partial ? ' (partial)' : '';
    const wid = e.op !== 'select' && e.wid ? `  [${e.wid}]` : '';
    text(head, ` ${e.table}${where}${params}${partial}${wid}  \u2192 ${plural(e.rows.length, 'row')}`);
    if (!e.rows.length) return;
    // One line per row: where it came from (the version read, linked to its writer), then the row.
    const rowsBox = add(box, 'div', 'rows');
    const row = () => add(rowsBox, 'div', 'row');
    switch (e.op) {
      case 'select':
        for (const r of e.rows.slice(0, MAX_ROWS)) {
          const line = row();
          widCell(add(line, 'span', 'w'), r.wid, i);
          text(line, ` ${json(r.row)}`);
        }
        break;
      case 'insert':
        for (const r of e.rows.slice(0, MAX_ROWS)) text(row(), json(r.row));
        break;
      case 'update':
        for (const r of e.rows.slice(0, MAX_ROWS)) text(was(row(), r.read), ` \u2192 ${json(r.row)}`);
        break;
      case 'delete':
        for (const r of e.rows.slice(0, MAX_ROWS)) text(was(row(), r.read), ` deleted key ${json(r.key)}`);
        break;
    }
    if (e.rows.length > MAX_ROWS) add(box, 'div', 'muted', `\u2026 ${e.rows.length - MAX_ROWS} more rows`);
  }

  function show(i: number): void {
    selected = i;
    panel.textContent = '';
    const t = T[i];
    const h = add(panel, 'h3', null, t.id);
    if (t.lb) add(h, 'span', 'lb', t.lb);
    if (highlighted.has(i)) add(panel, 'p', 'flag', 'Involved in the anomaly');
    const kv = add(panel, 'table', 'kv');
    const row = (k: string, v: Node | string | number) => {
      const tr = add(kv, 'tr');
      add(tr, 'th', null, k);
      const td = add(tr, 'td');
      if (typeof v === 'object') td.appendChild(v);
      else td.textContent = String(v);
    };
    row('session', `${t.s} #${t.q}`);
    row('level', dom.chip(t.iso));
    row('status', t.st);
    if (D.timeline.mode === 'recorded')
      row('time', `${dom.fmtTime(t.b)} \u2013 ${dom.fmtTime(t.e)} (${dom.fmtTime(t.e - t.b)})`);
    row('file line', t.ln);
    if (t.err) row('error', typeof t.err === 'string' ? t.err : [t.err.code, t.err.message].filter(Boolean).join(': '));
    if (orderRank?.has(i)) row('commit order', `#${orderRank.get(i)} of ${D.commitOrder?.length ?? 0}`);
    add(panel, 'h4', null, plural(t.ev.length, 'statement'));
    t.ev.forEach((e, k) => {
      statement(i, e, k);
    });
  }

  return { show };
}
