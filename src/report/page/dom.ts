/** The page's DOM helpers (part of the page script, see context.ts): elements with text, chips, links. */
import type { PageData } from '../page-data.js';
import type { Dom, SelectOptions } from './context.js';

export function createDom(
  data: PageData,
  idIndex: Map<string, number>,
  select: (i: number, opts?: SelectOptions) => void,
): Dom {
  function el<K extends keyof HTMLElementTagNameMap>(
    tag: K,
    cls?: string | null,
    text?: unknown,
  ): HTMLElementTagNameMap[K] {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }
  function add<K extends keyof HTMLElementTagNameMap>(
    parent: Element,
    tag: K,
    cls?: string | null,
    text?: unknown,
  ): HTMLElementTagNameMap[K] {
    const e = el(tag, cls, text);
    parent.appendChild(e);
    return e;
  }
  function text(parent: Element, s: string): void {
    parent.appendChild(document.createTextNode(s));
  }
  function json(v: unknown): string {
    try {
      return JSON.stringify(v);
    } catch {
      return String(v);
    }
  }
  function plural(n: number, word: string): string {
    return `${n} ${word}${n === 1 ? '' : 's'}`;
  }
  function chip(level: string, label?: string): HTMLElement {
    const c = el('span', 'chip', label || level);
    c.style.background = data.levelColors[level] || '#ddd';
    return c;
  }
  function txnLink(id: string): HTMLElement {
    const i = idIndex.get(id);
    if (i === undefined) return el('span', 'mono', id);
    const b = el('button', 'link mono', id);
    b.type = 'button';
    b.addEventListener('click', () => select(i, { reveal: true, scroll: true }));
    return b;
  }
  function fmtTime(v: number): string {
    if (data.timeline.mode !== 'recorded') return `#${Math.round(v)}`;
    if (Math.abs(v) >= 1000) return `${(v / 1000).toFixed(3)} s`;
    return `${Math.round(v * 100) / 100} ms`;
  }
  return { el, add, text, json, plural, chip, txnLink, fmtTime };
}
