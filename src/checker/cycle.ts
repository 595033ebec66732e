/**
 * Turning a cyclic partial commit order into an explanation (docs/semantics.md §5): the shortest cycle of direct
 * reasons (so, wr, witness wr, and the axiom instances saturation forced), each edge said in SQL terms, and
 * the anomaly's name derived from the cycle's shape.
 */
import type { IsolationLevel } from '../history/format.js';
import { ANOMALY_TEXT, type Anomaly, type ConsistencyType, type Edge } from './anomaly.js';
import { levelName } from './levels.js';
import { INIT, describeKey, type CheckModel } from './model.js';
import type { ForcedEdge, Relations, Visibility } from './relations.js';
import type { Order } from './order.js';

/** What a cycle explanation reads: the model, the wr triples, the forced and assumed edges, and the edge that
 *  closed the cycle. A saturated `Relations`, or the few edges of a cycle the linear check found (linear/). */
export type CycleSource = Pick<Relations, 'model' | 'triples' | 'forced' | 'assumed'> & { pco: Pick<Order, 'cycleEdge'> };

interface DirectEdge {
  to: number;
  edge: () => Edge;
  forced?: ForcedEdge;
  wrWriter?: number;
}

export function txnName(model: CheckModel, t: number): string {
  const x = model.txns[t];
  if (t === INIT) return 'init';
  return `${x.id} (session ${x.session} #${x.seq}${x.label ? `, ${x.label}` : ''}, ${levelName(x.level)})`;
}

const VIA_TEXT: Record<Visibility, string> = {
  so: 'precedes the reader in its session',
  'wr-earlier': 'an earlier statement of the reader read from it',
  wr: 'the reader read from it',
  causal: 'it causally precedes the reader (session order and reads)',
  prefix: 'it commits before a transaction the reader read from or follows in its session',
  conflict: 'it commits before a transaction that writes a row the reader also writes, and that commits before the reader',
  co: 'it commits before the reader',
};

export function forcedEdgeToEdge(model: CheckModel, f: ForcedEdge): Edge {
  const read = model.reads[f.triple.read];
  const reader = model.txns[read.txn];
  const key = describeKey(model, f.triple.key);
  const wid = f.triple.index >= 0 ? read.fromWids[f.triple.index] : undefined;
  const writerRead = f.to === INIT ? 'the initial version' : `the version of ${model.txns[f.to].id}`;
  const witness = f.triple.index < 0 ? ' (the row was not returned: among the versions that would hide it, this one was chosen)' : '';
  return {
    from: model.txns[f.from].id,
    to: model.txns[f.to].id,
    kind: 'axiom',
    reason: `${model.txns[f.from].id} must commit before ${model.txns[f.to].id}: ${reader.id} (${levelName(f.level)}) read ${key} as ${writerRead}${wid ? ` (wid ${wid})` : ''}${witness}, ${model.txns[f.from].id} also wrote ${key} and is visible to it (${VIA_TEXT[f.via]})`,
    read: read.ref,
    table: model.tables[model.keys[f.triple.key].table].schema.name,
    key: model.keys[f.triple.key].values,
    wid,
    level: levelName(f.level),
    reader: reader.id,
  };
}

function directEdges(rel: CycleSource): DirectEdge[][] {
  const { model } = rel;
  const out: DirectEdge[][] = Array.from({ length: model.n }, () => []);
  for (let t = 1; t < model.n; t++) {
    const p = model.soPrev[t];
    out[p].push({
      to: t,
      edge: () => ({ from: model.txns[p].id, to: model.txns[t].id, kind: 'so', reason: p === INIT ? `init precedes every transaction` : `${model.txns[p].id} precedes ${model.txns[t].id} in session ${model.txns[t].session}` }),
    });
  }
  for (const tr of rel.triples) {
    const read = model.reads[tr.read];
    if (tr.from === read.txn) continue;
    out[tr.from].push({
      to: read.txn,
      wrWriter: tr.from,
      edge: () => {
        const key = describeKey(model, tr.key);
        const wid = tr.index >= 0 ? read.fromWids[tr.index] : undefined;
        return tr.index >= 0
          ? { from: model.txns[tr.from].id, to: model.txns[read.txn].id, kind: 'wr', reason: `${model.txns[read.txn].id} read ${key} written by ${model.txns[tr.from].id} (wid ${wid})`, read: read.ref, table: model.tables[model.keys[tr.key].table].schema.name, key: model.keys[tr.key].values, wid }
          : { from: model.txns[tr.from].id, to: model.txns[read.txn].id, kind: 'witness', reason: `${model.txns[read.txn].id} did not return ${key}: it is taken to have read the version of ${model.txns[tr.from].id}, which does not match its WHERE`, read: read.ref, table: model.tables[model.keys[tr.key].table].schema.name, key: model.keys[tr.key].values };
      },
    });
  }
  for (const f of rel.forced) out[f.from].push({ to: f.to, forced: f, edge: () => forcedEdgeToEdge(model, f) });
  for (const [a, b] of rel.assumed) {
    out[a].push({ to: b, edge: () => ({ from: model.txns[a].id, to: model.txns[b].id, kind: 'assumed', reason: `suppose ${model.txns[a].id} commits before ${model.txns[b].id}` }) });
  }
  return out;
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

/** Names a commit-order cycle by its shape (Adya / Cerone et al. vocabulary). */
function classify(model: CheckModel, cycle: DirectEdge[]): ConsistencyType {
  const forced = cycle.filter((e) => e.forced).map((e) => e.forced!);
  if (forced.length === 0) return 'commit-order-cycle';
  const readers = new Set(forced.map((f) => model.reads[f.triple.read].txn));
  const f0 = forced[0];
  if (forced.length === 1) {
    const t3 = model.reads[f0.triple.read].txn;
    if (f0.via === 'so') return 'read-your-writes';
    if (f0.via === 'conflict' && model.writes[t3].has(f0.triple.key)) return 'lost-update';
    if (f0.via === 'wr' || f0.via === 'wr-earlier') return 'fractured-read';
    if (f0.via === 'causal') return 'causality-violation';
    if (f0.via === 'co' && model.writes[t3].has(f0.triple.key)) return 'lost-update';
    return 'g-single';
  }
  if (forced.length === 2 && readers.size === 2) {
    const [a, b] = forced;
    const ra = model.reads[a.triple.read].txn;
    const rb = model.reads[b.triple.read].txn;
    if (a.triple.key === b.triple.key && model.writes[ra].has(a.triple.key) && model.writes[rb].has(b.triple.key)) return 'lost-update';
    if (a.via === 'prefix' || b.via === 'prefix') {
      if (!model.writes[ra].has(a.triple.key) && !model.writes[rb].has(b.triple.key)) return 'long-fork';
    }
    if ((a.via === 'co' || a.via === 'conflict') && (b.via === 'co' || b.via === 'conflict')) {
      const wa = [...model.writes[ra].keys()];
      const wb = [...model.writes[rb].keys()];
      if (wa.length && wb.length) return 'write-skew';
    }
  }
  return 'commit-order-cycle';
}


/** The anomaly for a cyclic saturated pco. */
export function cycleAnomaly(rel: CycleSource): Anomaly {
  const { model } = rel;
  const cycle = findReasonCycle(rel);
  if (!cycle) {
    return { type: 'commit-order-cycle', message: 'the forced commit order is cyclic', txns: [] };
  }
  const type = classify(model, cycle);
  const involved = new Set<number>();
  const levels = new Set<IsolationLevel>();
  let at = cycle[cycle.length - 1].to;
  for (const e of cycle) {
    involved.add(at);
    if (e.forced) levels.add(levelName(e.forced.level));
    at = e.to;
  }
  const readerIds = [...new Set(cycle.filter((e) => e.forced).map((e) => model.reads[e.forced!.triple.read].txn))];
  for (const r of readerIds) involved.add(r);
  const txns = [...involved].filter((t) => t !== INIT).map((t) => model.txns[t].id);
  const readers = readerIds.map((t) => model.txns[t].id);
  return {
    type,
    message: `${ANOMALY_TEXT[type] ?? type}${readers.length ? `; violated by ${readers.join(', ')}` : ''}`,
    txns,
    levels: [...levels],
    edges: cycle.map((e) => e.edge()),
  };
}
