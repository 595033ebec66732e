/**
 * Explanations (part of the page script, see context.ts): an anomaly as a section with its graphs (SVGs from the
 * page's `<template>`s), the same steps in words beside each (hovering one highlights the other), the
 * transactions statement by statement, and the text `isocheck check` prints. A case split's overview links each
 * case to its graph.
 */
import type { PageAnomaly, PageEdge, PageGraph } from '../page-data.js';
import type { Explanations, PageContext } from './context.js';

type Step = PageEdge & { step?: number; svgId?: string };

export function createExplanations(ctx: PageContext): Explanations {
  const { dom, idIndex } = ctx;
  const { el, add, text } = dom;
  let linked = 0;
  const fitted: { svg: SVGSVGElement; box: HTMLElement }[] = [];

  function hoverPair(item: HTMLElement, g: Element, both: boolean): void {
    item.addEventListener('mouseenter', () => g.classList.add('hl'));
    item.addEventListener('mouseleave', () => g.classList.remove('hl'));
    if (!both) return;
    g.addEventListener('mouseenter', () => {
      item.classList.add('hl');
      g.classList.add('hl');
    });
    g.addEventListener('mouseleave', () => {
      item.classList.remove('hl');
      g.classList.remove('hl');
    });
  }
  function edgeIn(svg: SVGSVGElement | null, svgId: string | undefined): Element | null {
    return svg && svgId ? svg.querySelector(`g.edge[id="${svgId}"]`) : null;
  }
  function stepItem(list: HTMLElement, step: Step, svg: SVGSVGElement | null): void {
    const li = add(list, 'li');
    if (step.step === undefined) li.className = 'assume';
    li.appendChild(el('span', `kind ${step.kind}`, step.kind));
    li.appendChild(dom.txnLink(step.from));
    text(li, ' \u2192 ');
    li.appendChild(dom.txnLink(step.to));
    text(li, `: ${step.reason}`);
    const g = edgeIn(svg, step.svgId);
    if (g) {
      linked++;
      hoverPair(li, g, true);
    }
  }
  function words(box: HTMLElement, steps: Step[], svg: SVGSVGElement | null, intro: string): void {
    for (const p of steps.filter((x) => x.step === undefined)) {
      const para = add(box, 'p', 'assume');
      para.appendChild(el('span', 'kind assumed', 'assumed'));
      text(para, `${p.reason} (dashed blue).`);
      const g = edgeIn(svg, p.svgId);
      if (g) hoverPair(para, g, false);
    }
    const cycle = steps.filter((x) => x.step !== undefined);
    if (cycle.length) {
      add(box, 'p', null, intro);
      const ol = add(box, 'ol', 'steps');
      for (const x of cycle) stepItem(ol, x, svg);
    }
  }
  const numbered = (edges: PageEdge[]): Step[] => edges.map((e, k) => ({ ...e, step: k + 1 }));

  function svgFor(index: number): SVGSVGElement | null {
    const tpl = document.getElementById(`svg-${index}`);
    const svg = tpl instanceof HTMLTemplateElement ? tpl.content.firstElementChild : null;
    return svg instanceof SVGSVGElement ? (document.importNode(svg, true) as SVGSVGElement) : null;
  }

  // A graph asks for its natural width: the words sit beside it when there is room, else below it.
  // It keeps at least 3/4 of its natural size (a scroll bar beats unreadable text).
  function fit(): void {
    const natural = (svg: SVGSVGElement) => (Number.parseFloat(svg.getAttribute('width') ?? '') * 4) / 3;
    for (const f of fitted) {
      const n = natural(f.svg);
      if (n > 0) f.box.style.flex = `0 1 ${Math.ceil(n + 16)}px`;
    }
    for (const f of fitted) {
      const n = natural(f.svg);
      if (!(n > 0)) continue;
      const avail = f.box.clientWidth - 14;
      f.svg.style.width = `${n <= avail ? n : Math.max(avail, n * 0.75)}px`;
    }
  }

  function graph(sec: HTMLElement, a: PageAnomaly, g: PageGraph, caseBoxes: Map<string, HTMLElement>): void {
    const c = add(sec, 'div', 'case');
    if (g.title) {
      add(c, 'h4', null, g.title);
      caseBoxes.set(g.title, c);
    }
    const body = add(c, 'div', 'case-body');
    const gbox = add(body, 'div', g.cases ? 'graph split' : 'graph');
    const svg = g.svg !== undefined ? svgFor(g.svg) : null;
    if (svg) {
      gbox.appendChild(svg);
      fitted.push({ svg, box: gbox });
      for (const [nid, id] of Object.entries(g.nodes)) {
        const node = svg.querySelector(`g.node[id="${nid}"]`);
        const i = idIndex.get(id);
        if (node && i !== undefined)
          node.addEventListener('click', () => ctx.select(i, { reveal: true, scroll: true }));
      }
      for (const [nid, k] of Object.entries(g.cases ?? {})) {
        const node = svg.querySelector(`g.node[id="${nid}"]`);
        node?.addEventListener('click', () => {
          const target = [...caseBoxes].find(([title]) => title.startsWith(`Case ${k + 1}:`))?.[1];
          if (!target) return;
          target.scrollIntoView({ block: 'start', behavior: 'smooth' });
          target.classList.add('flash');
          setTimeout(() => target.classList.remove('flash'), 1500);
        });
      }
    } else add(gbox, 'p', 'graph-error', `No drawing: ${g.error || 'Graphviz produced nothing'}`);
    const box = add(body, 'div', 'words');
    if (g.cases) {
      splitWords(box, a);
      return;
    }
    const intro = g.title ? 'Then a cycle is forced:' : 'Why (each step is forced; together they form a cycle):';
    words(box, g.steps, svg, intro);
    if (!g.steps.length && a.versions) {
      add(
        box,
        'p',
        null,
        'The versions the row could have had for this reader; each matches the WHERE, so the row should have ' +
          'been returned:',
      );
      add(box, 'pre', null, a.versions.join('\n'));
    } else if (!g.steps.length) add(box, 'p', 'muted', 'The statement in red is the one the message above is about.');
    if (g.compact)
      add(box, 'p', 'hint', 'Too many transactions to show their statements: click a box to see one on the timeline.');
    add(
      box,
      'p',
      'hint',
      'Red: the contradiction. Dotted grey: other session-order (so) and reads-from (wr) facts among these ' +
        'transactions. Click a box to see it on the timeline.',
    );
  }

  /** Beside a case split's overview: the argument in one paragraph per case. */
  function splitWords(box: HTMLElement, a: PageAnomaly): void {
    const cases = a.cases ?? [];
    const last = cases.length - 2;
    const [x, y] = cases.length >= 2 ? [cases[last].assume.before, cases[last].assume.after] : ['?', '?'];
    add(box, 'p', null, `${x} and ${y} both committed, so one of them committed first. Each order forces a cycle:`);
    const ol = add(box, 'ol', 'steps');
    cases.forEach((c, k) => {
      const li = add(ol, 'li');
      const derived = k < last;
      text(li, `suppose ${c.assume.before} commits before ${c.assume.after}: a cycle of ${c.edges.length} `);
      text(li, `${c.edges.length === 1 ? 'edge' : 'edges'} is forced (case ${k + 1} below)`);
      text(li, derived ? `, so ${c.assume.after} commits before ${c.assume.before}.` : '.');
    });
    add(box, 'p', null, 'Neither order is possible: no commit order explains what the transactions read.');
    add(box, 'p', 'hint', 'Click a case to go to its graph.');
  }

  function anomaly(parent: Element, a: PageAnomaly, id: string): HTMLElement {
    const sec = add(parent, 'section', 'anomaly');
    sec.id = id;
    const h = add(sec, 'h3', null, a.name.toUpperCase());
    if (a.literature) add(h, 'span', 'literature', a.literature);
    if (a.levels.length) add(h, 'span', 'violates', `violates ${a.levels.join(', ')}`);
    add(sec, 'p', 'message', a.message);
    for (const e of a.events) {
      const where = (e.where ? ` WHERE ${e.where}` : '') + (e.params ? ` params ${dom.json(e.params)}` : '');
      add(sec, 'p', 'mono', `statement ${e.event} of ${e.txn} (line ${e.line}): ${e.op} ${e.table}${where}`);
    }
    const caseBoxes = new Map<string, HTMLElement>();
    if (a.graphs.length) for (const g of a.graphs) graph(sec, a, g, caseBoxes);
    else if (a.cases) {
      a.cases.forEach((c, ci) => {
        const box = add(sec, 'div', 'words');
        add(box, 'h4', null, `Case ${ci + 1}: suppose ${c.assume.before} commits before ${c.assume.after}`);
        words(box, numbered(c.edges), null, 'Then a cycle is forced:');
      });
    } else if (a.edges.length) {
      const box = add(sec, 'div', 'words');
      words(box, numbered(a.edges), null, 'Why (each step is forced; together they form a cycle):');
    }
    if (a.transactions) {
      add(sec, 'h4', null, 'Transactions');
      for (const t of a.transactions) {
        const d = add(sec, 'div', 'txn-desc');
        const head = add(d, 'div', 'head');
        head.appendChild(dom.txnLink(t.id));
        const label = t.label ? ` ${t.label}` : '';
        text(head, `: session ${t.session} #${t.seq}${label}, ${t.iso}, ${t.status}${t.node ? `, on ${t.node}` : ''}`);
        const more = add(d, 'details');
        add(more, 'summary', null, dom.plural(t.statements.length, 'statement'));
        if (t.statements.length <= 8) more.open = true;
        add(more, 'pre', null, t.statements.join('\n'));
      }
    }
    if (a.subHistory) add(sec, 'p', null, `Smallest inconsistent sub-history found: ${a.subHistory.join(', ')}`);
    if (a.conflicts) {
      add(sec, 'p', null, 'Unreturned rows whose hiding version had to be chosen:');
      add(sec, 'pre', null, a.conflicts.join('\n'));
    }
    const det = add(sec, 'details', 'terminal');
    add(det, 'summary', null, 'As printed by isocheck check');
    add(det, 'pre', null, a.text.join('\n'));
    return sec;
  }

  return { anomaly, fit, linkedEdges: () => linked };
}
