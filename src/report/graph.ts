/**
 * An anomaly's explanation as Graphviz DOT: the transactions involved as boxes (id, label, session, level,
 * status, statements with rows and wids), the explanation's ordering facts as edges (`so`, `wr` with table and
 * key, `witness`, `axiom` with the reader and level that forced it, `assumed` for a case analysis), the cycle
 * in red. A case analysis gives one graph per case: its assumption (dashed) and the cycle it forces; the page
 * puts an overview of the split before them (`caseSplitGraph`): the pair, each order supposed, the cycle it
 * forces, and the orders derived on the way. Grey context edges show session order and reads-from among the
 * boxes that the explanation does not use. A cycle through more transactions than fit as boxes with statements
 * is drawn with small boxes (id, label, session, level) and no context, up to MAX_COMPACT_NODES.
 *
 * Every text from the history passes through `dotHtml` into HTML-like labels; node and edge ids are ours
 * (`t12`, `a0g1e2`), never the history's.
 */
import { anomalyEdges, type Anomaly, type CaseSplitAnomaly, type Edge } from '../checker/anomaly.js';
import { keyText, missingVersions } from '../checker/explain/explain.js';
import type { HistoryEvent } from '../history/format.js';
import type { History, Txn } from '../history/history.js';
import { INIT_WID } from '../history/format.js';
import { whereText } from '../checker/explain/describe.js';
import { dotHtml, truncate, truncateMiddle } from './escape.js';

export const LEVEL_COLORS: Record<string, string> = {
  RC: '#f4a261',
  RA: '#e9c46a',
  CC: '#2a9d8f',
  PC: '#8ab17d',
  SI: '#5b8def',
  SER: '#9b6fd0',
};

const KIND_COLORS: Record<string, string> = {
  so: '#555555',
  wr: '#2e7d32',
  rw: '#8d6e63',
  witness: '#b5651d',
  axiom: '#6a1b9a',
  assumed: '#1565c0',
};
const CYCLE = '#d62828';
const CONTEXT = '#9e9e9e';

/** At most this many transactions are drawn with their statements; more as small boxes, up to the second. */
const MAX_NODES = 14;
const MAX_COMPACT_NODES = 60;
/** Statements shown in a box (the cited ones always; others up to this many): cycle boxes, other boxes. */
const MAX_STATEMENTS = 8;
const MAX_STATEMENTS_CONTEXT = 4;
const MAX_LINE_CHARS = 68;
const MAX_ROWS = 2;

export type GraphStep = Edge & {
  /** Number of the step in the explanation (1-based); absent for a case's assumption. */
  step?: number;
  /** The SVG id of the drawn edge. */
  svgId: string;
};

export interface AnomalyGraph {
  /** For a case analysis: "Case 1: suppose T1 commits before T2", or "The case split" for its overview. */
  title?: string;
  dot: string;
  /** SVG node id -> transaction id (`init` for the initial database). */
  nodes: Record<string, string>;
  /** The explanation's edges in order, then the case's assumption (if not among them). */
  steps: GraphStep[];
  /** The overview of a case split: SVG node id -> the index of the case it stands for. */
  cases?: Record<string, number>;
  /** Drawn with small boxes (too many transactions for their statements). */
  compact?: boolean;
}

/** A DOT attribute value: a quoted string, a number, or an HTML-like label (already escaped). */
type DotValue = string | number | { html: string };

function dotAttrs(attrs: Record<string, DotValue | undefined>): string {
  const value = (v: DotValue) => (typeof v === 'number' ? String(v) : typeof v === 'string' ? `"${v}"` : `<${v.html}>`);
  return Object.entries(attrs)
    .flatMap(([k, v]) => (v === undefined ? [] : [`${k}=${value(v)}`]))
    .join(', ');
}
const dotNode = (id: string, attrs: Record<string, DotValue | undefined>) => `  ${id} [${dotAttrs(attrs)}];`;
const dotEdge = (from: string, to: string, attrs: Record<string, DotValue | undefined>) =>
  `  ${from} -> ${to} [${dotAttrs(attrs)}];`;

/** One left-aligned table row of an HTML-like label; `text` is already escaped. */
function cellRow(text: string, font: { face?: string; size?: number; color?: string } = {}, cell = ''): string {
  const f = [
    font.face ? ` FACE="${font.face}"` : '',
    font.size ? ` POINT-SIZE="${font.size}"` : '',
    font.color ? ` COLOR="${font.color}"` : '',
  ].join('');
  return `<TR><TD ALIGN="LEFT"${cell}>${f ? `<FONT${f}>${text}</FONT>` : text}</TD></TR>`;
}
const greyRow = (text: string) => cellRow(dotHtml(text), { size: 9, color: '#757575' });
const table = (attrs: string, rows: string[]) =>
  `<TABLE ${attrs} CELLBORDER="0" CELLSPACING="0" CELLPADDING="3">${rows.join('')}</TABLE>`;

const GRAPH_HEAD = [
  '  graph [rankdir=TB, nodesep=0.6, ranksep=0.7, bgcolor="transparent", pad=0.2, fontname="Helvetica"];',
  '  node [shape=plain, fontname="Helvetica", fontsize=11];',
  '  edge [fontname="Helvetica", fontsize=10, arrowsize=0.8];',
];

/** The label text of an explanation edge (before escaping): kind and what forced it. */
export function edgeLabel(e: Edge, step?: number): string[] {
  const head = `${step !== undefined ? `${step}. ` : ''}${e.kind}`;
  switch (e.kind) {
    case 'axiom':
      return [`${head} ${e.level}`, `reader ${e.reader}`, keyText(e.table, e.key)];
    case 'rw':
      return [`${head} ${e.level}`, keyText(e.table, e.key), `wid ${e.wid}`];
    case 'wr':
      return [head, keyText(e.table, e.key), `wid ${e.wid}`];
    case 'witness':
      return [head, keyText(e.table, e.key)];
    case 'assumed':
      return [step !== undefined ? head : 'assumed'];
    case 'so':
      return [head];
  }
}

export function anomalyGraphs(history: History, anomaly: Anomaly, prefix: string): AnomalyGraph[] {
  const byId = new Map<string, { txn: Txn; index: number }>();
  for (const [index, txn] of history.txns.entries()) byId.set(txn.id, { txn, index });
  if ('cases' in anomaly) {
    return anomaly.cases.flatMap((c, i) => {
      const { before, after } = c.assume;
      const premise: Edge[] = c.edges.some((e) => e.kind === 'assumed' && e.from === before && e.to === after)
        ? []
        : [{ from: before, to: after, kind: 'assumed' }];
      const g = buildGraph(history, byId, anomaly, c.edges, premise, `${prefix}g${i}`);
      return g ? [{ ...g, title: `Case ${i + 1}: suppose ${before} commits before ${after}` }] : [];
    });
  }
  const g = buildGraph(history, byId, anomaly, anomalyEdges(anomaly), [], `${prefix}g0`);
  return g ? [g] : [];
}

function buildGraph(
  history: History,
  byId: Map<string, { txn: Txn; index: number }>,
  anomaly: Anomaly,
  cycle: Edge[],
  premise: Edge[],
  gid: string,
): Omit<AnomalyGraph, 'title'> | undefined {
  // The transactions to draw: the explanation's, then the anomaly's own list if there is room.
  const ids: string[] = [];
  const add = (id: string | undefined) => {
    if (id !== undefined && !ids.includes(id)) ids.push(id);
  };
  for (const e of [...cycle, ...premise]) {
    add(e.from);
    add(e.to);
  }
  for (const e of cycle) if (e.kind === 'axiom') add(e.reader);
  for (const ev of anomaly.events ?? []) add(ev.txn);
  const named = anomaly.txns.filter((id) => !ids.includes(id));
  if (ids.length + named.length <= MAX_NODES) named.forEach(add);
  if (ids.length === 0 || ids.length > MAX_COMPACT_NODES) return undefined;
  const compact = ids.length > MAX_NODES;

  const nodeId = (id: string) =>
    id === 'init' ? 'init' : byId.has(id) ? `t${byId.get(id)!.index}` : `u${ids.indexOf(id)}`;
  const cycleNodes = new Set(cycle.flatMap((e) => [e.from, e.to]));
  // Statements to emphasise: the reads the explanation cites, the anomaly's events, and the writes of cited wids.
  const citedEvents = new Set<string>();
  for (const e of cycle) if ('read' in e) citedEvents.add(`${e.read.txn}#${e.read.event}`);
  for (const ev of anomaly.events ?? []) citedEvents.add(`${ev.txn}#${ev.event}`);
  const citedWids = new Set(
    cycle.map((e) => ('wid' in e ? e.wid : undefined)).filter((w): w is string => !!w && w !== INIT_WID),
  );
  for (const id of ids) {
    const t = byId.get(id)?.txn;
    if (!t) continue;
    // The writes an edge cites: by wid, or (for an axiom) the `from` transaction's write of the edge's key.
    const keys = new Set(
      cycle.flatMap((e) => (e.kind === 'axiom' && e.from === id ? [`${e.table}\u0000${JSON.stringify(e.key)}`] : [])),
    );
    t.events.forEach((e, i) => {
      if (e.op === 'select') return;
      const cols = history.tables.get(e.table)?.key ?? [];
      const written = e.rows.map((r) => JSON.stringify('key' in r ? r.key : cols.map((c) => r.row[c])));
      if (citedWids.has(e.wid) || written.some((k) => keys.has(`${e.table}\u0000${k}`)))
        citedEvents.add(`${id}#${i + 1}`);
    });
  }

  const lines: string[] = [`digraph "${gid}" {`, ...GRAPH_HEAD];
  const nodes: Record<string, string> = {};
  for (const id of ids) {
    const svgId = `${gid}-${nodeId(id)}`;
    nodes[svgId] = id;
    const inCycle = cycleNodes.has(id);
    if (id === 'init') {
      lines.push(
        dotNode('init', {
          id: svgId,
          shape: 'ellipse',
          style: 'filled',
          fillcolor: '#eeeeee',
          color: inCycle ? CYCLE : '#777777',
          penwidth: inCycle ? 2 : 1,
          label: { html: '<B>init</B><BR/><FONT POINT-SIZE="9">initial database</FONT>' },
        }),
      );
      continue;
    }
    const entry = byId.get(id);
    const label = entry ? txnLabel(entry.txn, inCycle, compact ? undefined : citedEvents) : `<B>${dotHtml(id)}</B>`;
    lines.push(dotNode(nodeId(id), { id: svgId, class: 'txn', label: { html: label } }));
  }

  // A row a read should have returned (missing row): the row and the versions it could have been.
  const missing = missingRow(anomaly);
  if (missing) {
    const reader = anomaly.events?.[0]?.txn ?? anomaly.txns[0];
    const rows = [
      cellRow(`<B>${dotHtml(truncate(missing.row, 60))}</B>  not returned`),
      ...missing.versions
        .slice(0, 6)
        .map((v) => cellRow(dotHtml(truncate(v, MAX_LINE_CHARS)), { face: 'Courier', size: 9 })),
    ];
    if (missing.versions.length > 6) rows.push(greyRow(`… ${missing.versions.length - 6} more versions`));
    const box = table(`BORDER="2" STYLE="dashed" COLOR="${CYCLE}" BGCOLOR="#fff5f5"`, rows);
    lines.push(dotNode('missing', { id: `${gid}-missing`, label: { html: box } }));
    if (reader && ids.includes(reader))
      lines.push(
        dotEdge('missing', nodeId(reader), {
          id: `${gid}-missing-edge`,
          color: CYCLE,
          fontcolor: CYCLE,
          penwidth: 2,
          style: 'dashed',
          label: { html: '<B>not returned</B><BR/>every version matches the WHERE' },
        }),
      );
  }

  const steps: GraphStep[] = [];
  const drawn = new Set<string>();
  cycle.forEach((e, i) => {
    const svgId = `${gid}e${i}`;
    steps.push({ ...e, step: i + 1, svgId });
    drawn.add(`${e.from}\u0000${e.to}\u0000${e.kind}`);
    lines.push(
      dotEdge(nodeId(e.from), nodeId(e.to), {
        id: svgId,
        class: `step cycle ${e.kind}`,
        color: CYCLE,
        fontcolor: CYCLE,
        penwidth: 2.6,
        style: e.kind === 'assumed' ? 'dashed' : undefined,
        label: { html: labelHtml(edgeLabel(e, i + 1), true) },
      }),
    );
  });
  premise.forEach((e, i) => {
    const svgId = `${gid}p${i}`;
    steps.push({ ...e, svgId });
    drawn.add(`${e.from}\u0000${e.to}\u0000${e.kind}`);
    lines.push(
      dotEdge(nodeId(e.from), nodeId(e.to), {
        id: svgId,
        class: 'step assumed',
        color: KIND_COLORS.assumed,
        fontcolor: KIND_COLORS.assumed,
        penwidth: 2,
        style: 'dashed',
        label: { html: labelHtml(['assumed'], true) },
      }),
    );
  });
  for (const c of compact ? [] : contextEdges(history, byId, ids)) {
    if (drawn.has(`${c.from}\u0000${c.to}\u0000${c.kind}`)) continue;
    lines.push(
      dotEdge(nodeId(c.from), nodeId(c.to), {
        class: `context ${c.kind}`,
        color: CONTEXT,
        fontcolor: '#757575',
        style: 'dotted',
        constraint: 'false',
        label: { html: labelHtml(c.label, false) },
      }),
    );
  }
  lines.push('}');
  return { dot: lines.join('\n'), nodes, steps, ...(compact ? { compact } : {}) };
}

function missingRow(a: Anomaly): { row: string; versions: string[] } | undefined {
  if (a.type !== 'missing-row') return undefined;
  return { row: keyText(a.table, a.key), versions: missingVersions(a) };
}

function labelHtml(lines: string[], bold: boolean): string {
  return lines.map((l, i) => (i === 0 && bold ? `<B>${dotHtml(l)}</B>` : dotHtml(l))).join('<BR/>');
}

/** A statement as short lines for a box: the statement, then its first rows with their wids. */
function statementLines(e: HistoryEvent, n: number): string[] {
  const where =
    e.op !== 'insert' && e.where
      ? ` WHERE ${whereText(e.where)}${e.params?.length ? ` ${JSON.stringify(e.params)}` : ''}`
      : '';
  const partial = e.op !== 'insert' && e.partial ? ' (partial)' : '';
  const wid = e.op === 'select' ? '' : ` [${e.wid}]`;
  const none = e.rows.length === 0 ? ' -> no rows' : '';
  const head = `${n}. ${e.op.toUpperCase()} ${e.table}${where}${partial}${wid}${none}`;
  const rows: string[] =
    e.op === 'select'
      ? e.rows.map((r) => `   -> ${JSON.stringify(r.row)} [${r.wid}]`)
      : e.op === 'insert'
        ? e.rows.map((r) => `   ${JSON.stringify(r.row)}`)
        : e.op === 'update'
          ? e.rows.map((r) => `   -> ${JSON.stringify(r.row)} (was ${r.read})`)
          : e.rows.map((r) => `   key ${JSON.stringify(r.key)} (was ${r.read})`);
  return [
    head,
    ...rows.slice(0, MAX_ROWS),
    ...(rows.length > MAX_ROWS ? [`   … ${rows.length - MAX_ROWS} more rows`] : []),
  ];
}

/** A transaction's box: its id, label, session, level and status, then (unless compact) its statements, the
 *  cited ones in red. */
function txnLabel(t: Txn, inCycle: boolean, citedEvents: Set<string> | undefined): string {
  const head = `<B>${dotHtml(t.id)}</B>${t.label ? `  ${dotHtml(truncate(t.label, 40))}` : ''}`;
  const node = t.node ? ` · on ${truncate(t.node, 40)}` : '';
  const sub = `session ${t.session} #${t.seq} · ${t.iso} · ${t.status}${node}`;
  const rows = [
    cellRow(head, {}, ` BGCOLOR="${LEVEL_COLORS[t.iso] ?? '#dddddd'}"`),
    cellRow(dotHtml(sub), { size: 9 }),
    ...(citedEvents ? statementRows(t, inCycle, citedEvents) : []),
  ];
  return table(`BORDER="${inCycle ? 2 : 1}" COLOR="${inCycle ? CYCLE : '#616161'}" BGCOLOR="white"`, rows);
}

function statementRows(t: Txn, inCycle: boolean, citedEvents: Set<string>): string[] {
  const statements = t.events.map((e, i) => ({
    lines: statementLines(e, i + 1),
    cited: citedEvents.has(`${t.id}#${i + 1}`),
  }));
  let shown = statements;
  const max = inCycle ? MAX_STATEMENTS : MAX_STATEMENTS_CONTEXT;
  if (statements.length > max) {
    const room = Math.max(0, max - statements.filter((s) => s.cited).length);
    let others = 0;
    shown = statements.filter((s) => s.cited || others++ < room);
  }
  const rows = shown.map((s) => {
    const text = s.lines.map((l) => dotHtml(truncateMiddle(l, MAX_LINE_CHARS))).join('<BR ALIGN="LEFT"/>');
    const font = { face: 'Courier', size: 9, color: s.cited ? CYCLE : undefined };
    return cellRow(text, font, ` BALIGN="LEFT"${s.cited ? ' BGCOLOR="#fde2e2"' : ''}`);
  });
  if (shown.length < statements.length) rows.push(greyRow(`… ${statements.length - shown.length} more statements`));
  if (statements.length === 0) rows.push(greyRow('(no statements)'));
  return rows;
}

/** How many steps of a cycle the overview spells out before an ellipsis. */
const MAX_PATH_STEPS = 6;

/**
 * The overview of a case split: the pair that cannot be ordered, each order supposed (blue, dashed) leading to
 * the cycle it forces (red, ✗); an order derived on the way (its opposite forced a cycle) is a green fact that
 * the cases using it point from. Each case box is clickable in the page (`cases`: SVG id -> case index).
 */
export function caseSplitGraph(anomaly: CaseSplitAnomaly, gid: string): AnomalyGraph {
  const [a, b] = anomaly.pair;
  const lines: string[] = [`digraph "${gid}" {`, ...GRAPH_HEAD];
  const cases: Record<string, number> = {};
  const pairLabel = table('BORDER="1" COLOR="#616161" BGCOLOR="white"', [
    cellRow(`<B>${dotHtml(a)}</B> and <B>${dotHtml(b)}</B>`),
    cellRow('must commit in some order', { size: 9 }),
  ]);
  lines.push(dotNode('pair', { id: `${gid}-pair`, label: { html: pairLabel } }));
  const last = anomaly.cases.length - 2;
  // Derived orders: the edge "x,y" kept because the case supposing y before x forced a cycle.
  const derivedFrom = new Map<string, number>();
  anomaly.cases.forEach((c, i) => {
    if (i < last) derivedFrom.set(`${c.assume.after},${c.assume.before}`, i);
  });
  anomaly.cases.forEach((c, i) => {
    const id = `c${i}`;
    const svgId = `${gid}-${id}`;
    cases[svgId] = i;
    const derived = i < last;
    const head = `Case ${i + 1}: suppose ${c.assume.before} commits before ${c.assume.after}`;
    const rows = [
      cellRow(`<B>${dotHtml(head)}</B>`),
      cellRow(dotHtml(`a cycle is forced: ${cyclePath(c.edges)}`), { size: 9, color: CYCLE }),
      cellRow(dotHtml(`✗ impossible${derived ? `: so ${c.assume.after} commits before ${c.assume.before}` : ''}`), {
        size: 9,
        color: CYCLE,
      }),
    ];
    const box = table(`BORDER="2" COLOR="${CYCLE}" BGCOLOR="#fff5f5"`, rows);
    lines.push(dotNode(id, { id: svgId, class: 'case', label: { html: box } }));
    if (derived) {
      const fact = `d${i}`;
      const factBox = table(`BORDER="1" COLOR="${KIND_COLORS.wr}" BGCOLOR="#f1f8f1"`, [
        cellRow(dotHtml(`so ${c.assume.after} commits before ${c.assume.before}`), { color: KIND_COLORS.wr }),
      ]);
      lines.push(dotNode(fact, { id: `${gid}-${fact}`, label: { html: factBox } }));
      lines.push(dotEdge(id, fact, { color: KIND_COLORS.wr, penwidth: 1.6, label: 'refuted' }));
    } else {
      lines.push(
        dotEdge('pair', id, {
          id: `${svgId}-edge`,
          class: 'step assumed',
          color: KIND_COLORS.assumed,
          fontcolor: KIND_COLORS.assumed,
          penwidth: 2,
          style: 'dashed',
          label: { html: labelHtml([`suppose ${c.assume.before} first`], true) },
        }),
      );
    }
    // the derived orders this case's cycle uses
    for (const e of c.edges) {
      const from = e.kind === 'assumed' ? derivedFrom.get(`${e.from},${e.to}`) : undefined;
      if (from !== undefined && from !== i)
        lines.push(dotEdge(`d${from}`, id, { color: KIND_COLORS.wr, style: 'dashed', label: 'used' }));
    }
  });
  lines.push('}');
  return { title: 'The case split', dot: lines.join('\n'), nodes: {}, steps: [], cases };
}

/** A cycle as a path of ids with each edge's kind: `T1 -axiom-> init -so-> T1`, long ones shortened. */
function cyclePath(edges: Edge[]): string {
  if (edges.length === 0) return '(none shown)';
  const shown = edges.length > MAX_PATH_STEPS ? [...edges.slice(0, MAX_PATH_STEPS - 1)] : edges;
  const path = shown.map((e, i) => `${i === 0 ? e.from : ''} -${e.kind}-> ${e.to}`).join('');
  const rest = edges.length - shown.length;
  return rest > 0 ? `${path} … (${rest} more steps) -> ${edges[0].from}` : path;
}

interface ContextEdge {
  from: string;
  to: string;
  kind: 'so' | 'wr';
  label: string[];
}

/** Session order between consecutive drawn transactions of a session, and who read from whom among them. */
function contextEdges(history: History, byId: Map<string, { txn: Txn; index: number }>, ids: string[]): ContextEdge[] {
  const drawn = ids.map((id) => byId.get(id)?.txn).filter((t): t is Txn => !!t);
  const out: ContextEdge[] = [];
  const bySession = new Map<number, Txn[]>();
  for (const t of drawn) bySession.set(t.session, [...(bySession.get(t.session) ?? []), t]);
  for (const list of bySession.values()) {
    list.sort((a, b) => a.seq - b.seq);
    for (let i = 1; i < list.length; i++) out.push({ from: list[i - 1].id, to: list[i].id, kind: 'so', label: ['so'] });
  }
  const writerOf = new Map<string, string>();
  for (const t of drawn) for (const e of t.events) if (e.op !== 'select') writerOf.set(e.wid, t.id);
  const keyCols = (table: string) => history.tables.get(table)?.key ?? [];
  const reads = new Map<string, Set<string>>();
  for (const t of drawn) {
    for (const e of t.events) {
      const pairs: [string, unknown[]][] =
        e.op === 'select'
          ? e.rows.map((r) => [r.wid, keyCols(e.table).map((k) => r.row[k])])
          : e.op === 'update'
            ? e.rows.map((r) => [r.read, keyCols(e.table).map((k) => r.row[k])])
            : e.op === 'delete'
              ? e.rows.map((r) => [r.read, r.key])
              : [];
      for (const [wid, key] of pairs) {
        const writer = writerOf.get(wid);
        if (!writer || writer === t.id) continue;
        const k = `${writer}\u0000${t.id}`;
        if (!reads.has(k)) reads.set(k, new Set());
        reads.get(k)!.add(keyText(e.table, key));
      }
    }
  }
  for (const [k, keys] of reads) {
    const [from, to] = k.split('\u0000');
    const list = [...keys];
    out.push({
      from,
      to,
      kind: 'wr',
      label: [
        'wr',
        ...list.slice(0, 3).map((s) => truncate(s, 40)),
        ...(list.length > 3 ? [`+${list.length - 3} more`] : []),
      ],
    });
  }
  return out;
}
