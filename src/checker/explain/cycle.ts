/**
 * Turning a cyclic partial commit order into an explanation (docs/semantics.md §5): the shortest cycle of direct
 * reasons (so, wr, witness wr, and the axiom instances saturation forced), each edge as data (explain.ts says it
 * in SQL terms), and the one classifier that names a contradiction (a cycle here, a case split in cases.ts,
 * a linear check's cycle in linear/linear-check.ts) from the facts it rests on.
 */
import type { Anomaly, AxiomEdge, ContradictionType, Edge } from '../anomaly.js';
import { levelName } from '../levels.js';
import { INIT, type CheckModel } from '../model/model.js';
import type { ForcedEdge, Relations, Visibility } from '../model/relations.js';
import type { Order } from '../model/order.js';

/** What a cycle explanation reads: the model, the wr triples, the forced and assumed edges, and the edge that
 *  closed the cycle. A saturated `Relations`, or the few edges of a cycle the linear check found (linear/). */
export type CycleSource = Pick<Relations, 'model' | 'triples' | 'forced' | 'assumed'> & {
  pco: Pick<Order, 'cycleEdge'>;
};

interface DirectEdge {
  to: number;
  edge: () => Edge;
  forced?: ForcedEdge;
  wrWriter?: number;
}

export function txnId(model: CheckModel, t: number): string {
  return t === INIT ? 'init' : model.txns[t].id;
}

/** A key as data: its table's name and its values. */
export function keyRef(model: CheckModel, key: number): { table: string; key: unknown[] } {
  const k = model.keys[key];
  return { table: model.tables[k.table].schema.name, key: k.values };
}

export function forcedEdgeToEdge(model: CheckModel, f: ForcedEdge): AxiomEdge {
  const read = model.reads[f.triple.read];
  const wid = f.triple.index >= 0 ? model.fromWid[read.from + f.triple.index] : undefined;
  return {
    from: txnId(model, f.from),
    to: txnId(model, f.to),
    kind: 'axiom',
    reader: model.txns[read.txn].id,
    level: levelName(f.level),
    via: f.via,
    read: read.ref,
    ...keyRef(model, f.triple.key),
    ...(wid !== undefined ? { wid } : { unreturned: true }),
  };
}

/** The wr edge of a read's `index`-th version read (`overwrote`: the reader then wrote the row). */
export function wrEdgeData(model: CheckModel, readId: number, index: number, overwrote?: boolean): Edge {
  const read = model.reads[readId];
  return {
    from: txnId(model, model.fromTxn[read.from + index]),
    to: model.txns[read.txn].id,
    kind: 'wr',
    read: read.ref,
    ...keyRef(model, model.fromKey[read.from + index]),
    wid: model.fromWid[read.from + index],
    ...(overwrote ? { overwrote } : {}),
  };
}

export function soEdgeData(model: CheckModel, from: number, to: number): Edge {
  return from === INIT
    ? { from: 'init', to: model.txns[to].id, kind: 'so' }
    : { from: model.txns[from].id, to: model.txns[to].id, kind: 'so', session: model.txns[to].session };
}

/** One forced fact a contradiction rests on, as the classifier sees it. */
export interface Fact {
  /** Why the writer was visible to the reader; `anti` for an anti-dependency (rw) edge of a SER reader. */
  via: Visibility | 'anti';
  reader: number;
  /** The transaction whose write the reader missed (it also wrote `key` and had to be visible), when known. */
  writer?: number;
  key: number;
  /** The reader writes the row it read (it overwrote the version). */
  readerWritesKey: boolean;
  readerWrites: boolean;
  /** The reader's transaction (earlier statement) or session (up to it) had already read a newer version of
   *  the same row: the one of the writer that had to be visible. */
  sawNewerVersion: boolean;
}

/** Did `reader` (in a statement before `event`) or, with `session`, a transaction before it in its session read
 *  `key` as written by `writer`? */
function observed(
  model: CheckModel,
  reader: number,
  event: number,
  key: number,
  writer: number,
  session: boolean,
): boolean {
  for (let t = reader; t !== INIT && t >= 0; t = session ? model.soPrev[t] : INIT) {
    for (const ri of model.readsOf[t]) {
      const r = model.reads[ri];
      if (t === reader && r.ref.event >= event) continue;
      for (let i = r.from; i < r.from + r.fromCount; i++)
        if (model.fromKey[i] === key && model.fromTxn[i] === writer) return true;
    }
  }
  return false;
}

export function forcedFact(model: CheckModel, f: ForcedEdge): Fact {
  const read = model.reads[f.triple.read];
  const reader = read.txn;
  const session = f.via === 'causal' || f.via === 'so';
  const sameRow = f.via === 'wr' || f.via === 'wr-earlier' || f.via === 'causal';
  return {
    via: f.via,
    reader,
    writer: f.from,
    key: f.triple.key,
    readerWritesKey: model.writes[reader].has(f.triple.key),
    readerWrites: model.writes[reader].size > 0,
    sawNewerVersion: sameRow && observed(model, reader, read.ref.event, f.triple.key, f.from, session),
  };
}

const is =
  (...vias: Fact['via'][]) =>
  (f: Fact) =>
    vias.includes(f.via);
const orderedByCommit = is('co', 'conflict', 'anti');

/**
 * The classifier: the first row whose arity and condition hold names the contradiction; none: a commit-order
 * cycle. The facts are the forced edges of a cycle, or the last forced edge of each case of a case split.
 * Vocabulary: Adya 1999, Berenson et al. 1995, Cerone et al. CONCUR 2015, Terry et al. 1994 (anomaly.ts).
 */
const RULES: { type: ContradictionType; facts: 1 | 2; when: (f: Fact[]) => boolean }[] = [
  // One fact: one reader failed to see one visible write.
  { type: 'read-your-writes', facts: 1, when: ([f]) => f.via === 'so' },
  { type: 'lost-update', facts: 1, when: ([f]) => orderedByCommit(f) && f.via !== 'anti' && f.readerWritesKey },
  { type: 'non-monotonic-read', facts: 1, when: ([f]) => is('wr', 'wr-earlier', 'causal')(f) && f.sawNewerVersion },
  { type: 'fractured-read', facts: 1, when: ([f]) => is('wr', 'wr-earlier')(f) },
  { type: 'causality-violation', facts: 1, when: ([f]) => f.via === 'causal' },
  { type: 'read-skew', facts: 1, when: () => true },
  // Two facts of two readers.
  { type: 'lost-update', facts: 2, when: ([a, b]) => a.key === b.key && a.readerWritesKey && b.readerWritesKey },
  {
    type: 'long-fork',
    facts: 2,
    when: ([a, b]) => (a.via === 'prefix' || b.via === 'prefix') && !a.readerWritesKey && !b.readerWritesKey,
  },
  // Each of the two readers missed the other's write (when the writers are known).
  {
    type: 'write-skew',
    facts: 2,
    when: ([a, b]) =>
      orderedByCommit(a) &&
      orderedByCommit(b) &&
      a.readerWrites &&
      b.readerWrites &&
      (a.writer === undefined || b.writer === undefined || (a.writer === b.reader && b.writer === a.reader)),
  },
];

export function classifyContradiction(facts: Fact[]): ContradictionType {
  if (facts.length === 2 && facts[0].reader === facts[1].reader) return 'commit-order-cycle';
  for (const r of RULES) if (r.facts === facts.length && r.when(facts)) return r.type;
  return 'commit-order-cycle';
}

function directEdges(rel: CycleSource): DirectEdge[][] {
  const { model } = rel;
  const out: DirectEdge[][] = Array.from({ length: model.n }, () => []);
  for (let t = 1; t < model.n; t++) {
    const p = model.soPrev[t];
    out[p].push({
      to: t,
      edge: () => soEdgeData(model, p, t),
    });
  }
  for (const tr of rel.triples) {
    const read = model.reads[tr.read];
    if (tr.from === read.txn) continue;
    out[tr.from].push({
      to: read.txn,
      wrWriter: tr.from,
      edge: (): Edge =>
        tr.index >= 0
          ? wrEdgeData(model, tr.read, tr.index)
          : {
              from: txnId(model, tr.from),
              to: model.txns[read.txn].id,
              kind: 'witness',
              read: read.ref,
              ...keyRef(model, tr.key),
            },
    });
  }
  for (const f of rel.forced) out[f.from].push({ to: f.to, forced: f, edge: () => forcedEdgeToEdge(model, f) });
  for (const [a, b] of rel.assumed) {
    out[a].push({ to: b, edge: () => ({ from: txnId(model, a), to: txnId(model, b), kind: 'assumed' }) });
  }
  return out;
}

/** The assumed orders (`x,y` by id) on the shortest path of direct edges from `from` to `to` (not through
 *  init): what a visibility by commit order (an axiom edge's `co`, `prefix` or `conflict`) rests on. */
export function assumedOnPath(rel: CycleSource, from: number, to: number): string[] {
  const out = directEdges(rel);
  const prev = new Map<number, { node: number; edge: DirectEdge }>();
  const queue = [from];
  for (let qi = 0; qi < queue.length && !prev.has(to); qi++) {
    const u = queue[qi];
    // Not through init: an edge into it is a contradiction's own, never the reason of a visibility.
    if (u === INIT && u !== from) continue;
    for (const e of out[u]) {
      if (e.to === from || prev.has(e.to)) continue;
      prev.set(e.to, { node: u, edge: e });
      queue.push(e.to);
    }
  }
  const keys: string[] = [];
  for (let x = to; prev.has(x); x = prev.get(x)!.node) {
    const e = prev.get(x)!.edge.edge();
    if (e.kind === 'assumed') keys.push(`${e.from},${e.to}`);
  }
  return keys;
}

/** The shortest cycle of direct edges through the edge that closed the cycle (or any cycle). */
export function findReasonCycle(rel: CycleSource): DirectEdge[] | undefined {
  const out = directEdges(rel);
  const n = rel.model.n;
  const starts = rel.pco.cycleEdge ? [rel.pco.cycleEdge[0]] : Array.from({ length: n }, (_, i) => i);
  let best: DirectEdge[] | undefined;
  for (const s of starts) {
    // BFS from s back to s.
    const prev = new Array<DirectEdge | undefined>(n);
    const prevNode = new Int32Array(n).fill(-1);
    const seen = new Uint8Array(n);
    const queue = [s];
    let found = false;
    for (let qi = 0; qi < queue.length && !found; qi++) {
      const u = queue[qi];
      for (const e of out[u]) {
        if (e.to === s) {
          const path: DirectEdge[] = [e];
          for (let x = u; x !== s; x = prevNode[x]) path.push(prev[x]!);
          path.reverse();
          if (!best || path.length < best.length) best = path;
          found = true;
          break;
        }
        if (!seen[e.to]) {
          seen[e.to] = 1;
          prev[e.to] = e;
          prevNode[e.to] = u;
          queue.push(e.to);
        }
      }
    }
    if (best && starts.length === 1) break;
  }
  return best;
}

/** The anomaly for a cyclic saturated pco. */
export function cycleAnomaly(rel: CycleSource): Anomaly {
  const { model } = rel;
  const cycle = findReasonCycle(rel);
  if (!cycle) return { type: 'commit-order-cycle', by: 'cycle', txns: [], edges: [], readers: [] };
  const forced = cycle.filter((e) => e.forced).map((e) => e.forced!);
  const type = forced.length ? classifyContradiction(forced.map((f) => forcedFact(model, f))) : 'commit-order-cycle';
  const involved = new Set<number>();
  let at = cycle[cycle.length - 1].to;
  for (const e of cycle) {
    involved.add(at);
    at = e.to;
  }
  const readerIds = [...new Set(forced.map((f) => model.reads[f.triple.read].txn))];
  for (const r of readerIds) involved.add(r);
  return {
    type,
    by: 'cycle',
    txns: [...involved].filter((t) => t !== INIT).map((t) => model.txns[t].id),
    levels: [...new Set(forced.map((f) => levelName(f.level)))],
    edges: cycle.map((e) => e.edge()),
    readers: readerIds.map((t) => model.txns[t].id),
  };
}

/** The transactions an explanation's edges name (readers included), without init. */
export function edgeTxns(edges: Edge[]): string[] {
  const out = new Set<string>();
  for (const e of edges)
    for (const id of [e.from, e.to, e.kind === 'axiom' ? e.reader : undefined])
      if (id !== undefined && id !== 'init') out.add(id);
  return [...out];
}
