/**
 * An anomaly's explanation as Graphviz DOT: the transactions involved as boxes (id, label, session, level,
 * status, statements with rows and wids), the explanation's ordering facts as edges (`so`, `wr` with table and
 * key, `witness`, `axiom` with the reader and level that forced it, `assumed` for a case analysis), the cycle
 * in red. A case analysis gives one graph per case: its assumption (dashed) and the cycle it forces.
 * Grey context edges show session order and reads-from among the boxes that the explanation does not use.
 *
 * Every text from the history passes through `dotHtml` into HTML-like labels; node and edge ids are ours
 * (`t12`, `a0g1e2`), never the history's.
 */
import { anomalyEdges, type Anomaly, type Edge } from '../checker/anomaly.js';
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

/** At most this many transactions are drawn; an anomaly naming more is explained in words only. */
const MAX_NODES = 14;
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
  /** For a case analysis: "Case 1: suppose T1 commits before T2". */
  title?: string;
  dot: string;
  /** SVG node id -> transaction id (`init` for the initial database). */
  nodes: Record<string, string>;
  /** The explanation's edges in order, then the case's assumption (if not among them). */
  steps: GraphStep[];
}

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
  history.txns.forEach((txn, index) => byId.set(txn.id, { txn, index }));
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
  if (ids.length === 0 || ids.length > MAX_NODES) return undefined;

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

  const lines: string[] = [
    `digraph "${gid}" {`,
    '  graph [rankdir=TB, nodesep=0.6, ranksep=0.7, bgcolor="transparent", pad=0.2, fontname="Helvetica"];',
    '  node [shape=plain, fontname="Helvetica", fontsize=11];',
    '  edge [fontname="Helvetica", fontsize=10, arrowsize=0.8];',
  ];
  const nodes: Record<string, string> = {};
  for (const id of ids) {
    const svgId = `${gid}-${nodeId(id)}`;
    nodes[svgId] = id;
    const inCycle = cycleNodes.has(id);
    if (id === 'init') {
      lines.push(
        `  init [id="${svgId}", shape=ellipse, style=filled, fillcolor="#eeeeee", color="${inCycle ? CYCLE : '#777777'}", penwidth=${inCycle ? 2 : 1}, label=<<B>init</B><BR/><FONT POINT-SIZE="9">initial database</FONT>>];`,
      );
      continue;
    }
    const entry = byId.get(id);
    lines.push(
      `  ${nodeId(id)} [id="${svgId}", class="txn", label=<${entry ? txnLabel(entry.txn, inCycle, citedEvents) : `<B>${dotHtml(id)}</B>`}>];`,
    );
  }

  // A row a read should have returned (missing row): the row and the versions it could have been.
  const missing = missingRow(anomaly);
  if (missing) {
    const reader = anomaly.events?.[0]?.txn ?? anomaly.txns[0];
    const rows = [
      `<TR><TD ALIGN="LEFT"><B>${dotHtml(truncate(missing.row, 60))}</B>  not returned</TD></TR>`,
      ...missing.versions
        .slice(0, 6)
        .map(
          (v) =>
            `<TR><TD ALIGN="LEFT"><FONT FACE="Courier" POINT-SIZE="9">${dotHtml(truncate(v, MAX_LINE_CHARS))}</FONT></TD></TR>`,
        ),
    ];
    if (missing.versions.length > 6)
      rows.push(
        `<TR><TD ALIGN="LEFT"><FONT POINT-SIZE="9" COLOR="#757575">… ${missing.versions.length - 6} more versions</FONT></TD></TR>`,
      );
    lines.push(
      `  missing [id="${gid}-missing", label=<<TABLE BORDER="2" STYLE="dashed" COLOR="${CYCLE}" CELLBORDER="0" CELLSPACING="0" CELLPADDING="3" BGCOLOR="#fff5f5">${rows.join('')}</TABLE>>];`,
    );
    if (reader && ids.includes(reader))
      lines.push(
        `  missing -> ${nodeId(reader)} [id="${gid}-missing-edge", color="${CYCLE}", fontcolor="${CYCLE}", penwidth=2, style=dashed, label=<<B>not returned</B><BR/>every version matches the WHERE>];`,
      );
  }

  const steps: GraphStep[] = [];
  const drawn = new Set<string>();
  cycle.forEach((e, i) => {
    const svgId = `${gid}e${i}`;
    steps.push({ ...e, step: i + 1, svgId });
    drawn.add(`${e.from}\u0000${e.to}\u0000${e.kind}`);
    const color = CYCLE;
    const dashed = e.kind === 'assumed' ? ', style=dashed' : '';
    lines.push(
      `  ${nodeId(e.from)} -> ${nodeId(e.to)} [id="${svgId}", class="step cycle ${e.kind}", color="${color}", fontcolor="${color}", penwidth=2.6${dashed}, label=<${labelHtml(edgeLabel(e, i + 1), true)}>];`,
    );
  });
  premise.forEach((e, i) => {
    const svgId = `${gid}p${i}`;
    steps.push({ ...e, svgId });
    drawn.add(`${e.from}\u0000${e.to}\u0000${e.kind}`);
    lines.push(
      `  ${nodeId(e.from)} -> ${nodeId(e.to)} [id="${svgId}", class="step assumed", color="${KIND_COLORS.assumed}", fontcolor="${KIND_COLORS.assumed}", penwidth=2, style=dashed, label=<${labelHtml(['assumed'], true)}>];`,
    );
  });
  for (const c of contextEdges(history, byId, ids)) {
    if (drawn.has(`${c.from}\u0000${c.to}\u0000${c.kind}`)) continue;
    lines.push(
      `  ${nodeId(c.from)} -> ${nodeId(c.to)} [class="context ${c.kind}", color="${CONTEXT}", fontcolor="#757575", style=dotted, constraint=false, label=<${labelHtml(c.label, false)}>];`,
    );
  }
  lines.push('}');
  return { dot: lines.join('\n'), nodes, steps };
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
  const head = `${n}. ${e.op.toUpperCase()} ${e.table}${where}${partial}${e.op === 'select' ? '' : ` [${e.wid}]`}${e.rows.length === 0 ? ' -> no rows' : ''}`;
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

function txnLabel(t: Txn, inCycle: boolean, citedEvents: Set<string>): string {
  const border = inCycle ? CYCLE : '#616161';
  const head = `<B>${dotHtml(t.id)}</B>${t.label ? `  ${dotHtml(truncate(t.label, 40))}` : ''}`;
  const sub = `session ${t.session} #${t.seq} · ${t.iso} · ${t.status}${t.node ? ` · on ${truncate(t.node, 40)}` : ''}`;
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
    return `<TR><TD ALIGN="LEFT" BALIGN="LEFT"${s.cited ? ' BGCOLOR="#fde2e2"' : ''}><FONT FACE="Courier" POINT-SIZE="9"${s.cited ? ` COLOR="${CYCLE}"` : ''}>${text}</FONT></TD></TR>`;
  });
  if (shown.length < statements.length)
    rows.push(
      `<TR><TD ALIGN="LEFT"><FONT POINT-SIZE="9" COLOR="#757575">… ${statements.length - shown.length} more statements</FONT></TD></TR>`,
    );
  if (statements.length === 0)
    rows.push('<TR><TD ALIGN="LEFT"><FONT POINT-SIZE="9" COLOR="#757575">(no statements)</FONT></TD></TR>');
  return (
    `<TABLE BORDER="${inCycle ? 2 : 1}" COLOR="${border}" CELLBORDER="0" CELLSPACING="0" CELLPADDING="3" BGCOLOR="white">` +
    `<TR><TD ALIGN="LEFT" BGCOLOR="${LEVEL_COLORS[t.iso] ?? '#dddddd'}">${head}</TD></TR>` +
    `<TR><TD ALIGN="LEFT"><FONT POINT-SIZE="9">${dotHtml(sub)}</FONT></TD></TR>` +
    rows.join('') +
    '</TABLE>'
  );
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
