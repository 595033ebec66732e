/**
 * The linear check (docs/scale.md): decides most histories in time about linear in their size and memory linear
 * in transactions × sessions, before (and usually instead of) the saturation and search of check.ts, whose n × n
 * partial orders stop at tens of thousands of transactions.
 *
 *   model -> forced edges and lost updates (constraints.ts)    -> lost update: inconsistent
 *         -> candidate commit order (commit-order.ts)           -> cycle of forced edges: inconsistent
 *         -> verify every axiom under that order (verify.ts)    -> holds: consistent, with the order
 *                                                               -> a row only init wrote is missing: inconsistent
 *                                                               -> otherwise undecided: the search decides
 * Every verdict is a proof: consistent comes with a commit order checked against the definitions, inconsistent
 * with edges forced in every commit order. `undecided` only means this order did not work.
 */
import type { Anomaly, Edge } from '../anomaly.js';
import { ANOMALY_TEXT } from '../anomaly.js';
import { cycleAnomaly, forcedEdgeToEdge, txnName } from '../cycle.js';
import { RC, SER, levelName } from '../levels.js';
import { describeKey, INIT, type CheckModel } from '../model.js';
import { missingRowAnomaly } from '../missing-row.js';
import type { ForcedEdge, Triple } from '../relations.js';
import { CandidateRows } from './candidate-rows.js';
import { candidateOrder, FORCED, WR, type GraphEdge } from './commit-order.js';
import { ANTI_DEPENDENCY, SO_VISIBLE, forcedEdges, overwriters, type ForcedEdges, type LostUpdate } from './constraints.js';
import { sessionChains } from './sessions.js';
import { flatten } from './flat.js';
import { verifyOrder } from './verify.js';

export type LinearOutcome =
  | { verdict: 'consistent'; order: Int32Array }
  | { verdict: 'inconsistent'; anomalies: Anomaly[] }
  | { verdict: 'undecided'; reason: string };

/** Milliseconds spent in each stage of one linear check (for the benchmark's profile), when asked for. */
export type LinearPhases = Record<'flatten' | 'forced' | 'order' | 'verify', number>;

/** Knobs for tests: `manyWriters` lowers the number of writers read from above which lookups are indexed per key. */
export interface LinearTuning {
  manyWriters?: number;
}

export function linearCheck(model: CheckModel, check: () => void, phases?: LinearPhases, stage?: (name: string) => void, tuning: LinearTuning = {}): LinearOutcome {
  let clock = Date.now();
  const lap = (name: keyof LinearPhases) => {
    const now = Date.now();
    if (phases) phases[name] = (phases[name] ?? 0) + now - clock;
    clock = now;
  };
  stage?.('indexing reads and writes');
  const flat = flatten(model, tuning.manyWriters);
  const chains = sessionChains(model);
  lap('flatten');
  stage?.('forced edges and lost updates');
  const over = overwriters(model, flat);
  const { edges, lostUpdates } = forcedEdges(model, flat, chains, over, check);
  lap('forced');
  if (lostUpdates.length > 0) return { verdict: 'inconsistent', anomalies: lostUpdates.slice(0, 10).map((l) => lostUpdateAnomaly(model, l)) };
  check();
  stage?.('a candidate commit order');
  let candidate = candidateOrder(model, flat, edges, check);
  lap('order');
  if (candidate.cycle) return { verdict: 'inconsistent', anomalies: [forcedCycleAnomaly(model, edges, candidate.cycle)] };
  const rows = new CandidateRows(model);
  // A failed order is repaired a few times: each writer that the order made visible where it must not be is
  // moved after its reader (a hint edge), and the candidate is rebuilt. Hints are guesses: a cycle through them,
  // or failures that remain, leave the decision to the search.
  const hints: number[] = [];
  const rounds = model.n <= 50_000 ? MAX_REPAIR_ROUNDS : 2;
  for (let round = 1; ; round++) {
    check();
    stage?.(round === 1 ? 'verifying every axiom under it' : `verifying every axiom under a repaired order (round ${round})`);
    const v = verifyOrder(model, flat, candidate.order!, candidate.pos!, chains, rows, check);
    lap('verify');
    if (v.ok) return { verdict: 'consistent', order: candidate.order! };
    if (v.missingRow) return { verdict: 'inconsistent', anomalies: [missingRowAnomaly(model, v.read, v.key, [INIT])] };
    const read = model.reads[v.read];
    const why = `the commit order by commit time${round > 1 ? ` (repaired ${round - 1} time(s))` : ''} fails at ${model.txns[read.txn].id} event ${read.ref.event} on ${describeKey(model, v.key)}: ${v.why}`;
    if (round >= rounds) return { verdict: 'undecided', reason: why };
    const before = hints.length;
    for (const f of [{ reader: read.txn, writer: v.writer }, ...(v.more ?? [])]) if (f.writer !== INIT && f.writer !== f.reader) hints.push(f.reader, f.writer);
    if (hints.length === before) return { verdict: 'undecided', reason: why };
    stage?.(`a repaired candidate commit order (round ${round + 1})`);
    candidate = candidateOrder(model, flat, edges, check, hints);
    lap('order');
    if (candidate.cycle) return { verdict: 'undecided', reason: `${why}; moving the writers after their readers closes a cycle` };
  }
}

/** Candidate orders tried on a history of up to 50,000 transactions (2 above: each costs a full verification). */
const MAX_REPAIR_ROUNDS = 8;

function wrTriple(model: CheckModel, read: number, index: number): Triple {
  const r = model.reads[read];
  return { read, key: r.fromKeys[index], from: r.fromTxns[index], index };
}

function toForcedEdge(model: CheckModel, edges: ForcedEdges, e: number): ForcedEdge {
  const read = model.reads[edges.read[e]];
  const level = model.txns[read.txn].level;
  return {
    from: edges.from[e],
    to: edges.to[e],
    triple: wrTriple(model, edges.read[e], edges.index[e]),
    via: edges.why[e] === SO_VISIBLE ? 'so' : level === RC ? 'wr-earlier' : 'wr',
    level,
  };
}

/** A cycle of so, wr and forced edges: explained by cycle.ts when it has no anti-dependency, else here. */
function forcedCycleAnomaly(model: CheckModel, edges: ForcedEdges, cycle: GraphEdge[]): Anomaly {
  const anti = cycle.filter((e) => e.kind === FORCED && edges.why[e.a] === ANTI_DEPENDENCY);
  if (anti.length === 0) {
    const triples = cycle.filter((e) => e.kind === WR).map((e) => wrTriple(model, e.a, e.b));
    const forced = cycle.filter((e) => e.kind === FORCED).map((e) => toForcedEdge(model, edges, e.a));
    return cycleAnomaly({ model, triples, forced, assumed: [], pco: { cycleEdge: [cycle[0].from, cycle[0].to] } });
  }
  const out: Edge[] = cycle.map((e) => graphEdge(model, edges, e));
  const readers = [...new Set(anti.map((e) => model.txns[e.from].id))];
  const type = anti.length === 1 ? 'g-single' : 'commit-order-cycle';
  const ids = [...new Set(cycle.map((e) => e.from))].filter((t) => t !== INIT).map((t) => model.txns[t].id);
  return { type, message: `${ANOMALY_TEXT[type]}; violated by ${readers.join(', ')}`, txns: ids, levels: ['SER'], edges: out };
}

function graphEdge(model: CheckModel, edges: ForcedEdges, e: GraphEdge): Edge {
  const { txns } = model;
  const from = txns[e.from].id, to = txns[e.to].id;
  if (e.kind === WR) {
    const r = model.reads[e.a];
    const key = r.fromKeys[e.b];
    return { from, to, kind: 'wr', reason: `${to} read ${describeKey(model, key)} written by ${from} (wid ${r.fromWids[e.b]})`, read: r.ref, table: model.tables[model.keys[key].table].schema.name, key: model.keys[key].values, wid: r.fromWids[e.b] };
  }
  if (e.kind !== FORCED) return { from, to, kind: 'so', reason: e.from === INIT ? 'init precedes every transaction' : `${from} precedes ${to} in session ${txns[e.to].session}` };
  if (edges.why[e.a] !== ANTI_DEPENDENCY) return forcedEdgeToEdge(model, toForcedEdge(model, edges, e.a));
  const r = model.reads[edges.read[e.a]];
  const i = edges.index[e.a];
  const key = describeKey(model, r.fromKeys[i]);
  const t1 = r.fromTxns[i];
  const version = t1 === INIT ? 'the initial version' : `the version of ${txns[t1].id}`;
  return {
    from,
    to,
    kind: 'axiom',
    reason: `${from} must commit before ${to}: ${from} (SER) read ${key} as ${version}, which ${to} read and overwrote; had ${to} committed first, ${from} would have seen it`,
    read: r.ref,
    table: model.tables[model.keys[r.fromKeys[i]].table].schema.name,
    key: model.keys[r.fromKeys[i]].values,
    wid: r.fromWids[i],
    level: 'SER',
    reader: from,
  };
}

function lostUpdateAnomaly(model: CheckModel, l: LostUpdate): Anomaly {
  const { txns, reads } = model;
  const ra = reads[l.a.read], rb = reads[l.b.read];
  const a = ra.txn, b = rb.txn;
  const key = describeKey(model, l.key);
  const version = l.from === INIT ? 'the initial version' : `the version of ${txns[l.from].id}`;
  const wid = ra.fromWids[l.a.index];
  const whyVisible = (x: number, y: number) => (txns[y].level === SER ? `${txns[y].id} (SER) sees ${txns[x].id}, committed before it` : `${txns[y].id} (SI) writes ${key} as ${txns[x].id} does, so it sees ${txns[x].id}`);
  const cases = [
    `if ${txns[a].id} commits before ${txns[b].id}: ${whyVisible(a, b)}, which must then commit before ${l.from === INIT ? 'init' : txns[l.from].id}, the version ${txns[b].id} read; but ${txns[a].id} read that version too, so it commits after it`,
    `if ${txns[b].id} commits before ${txns[a].id}: the same with the roles exchanged`,
  ];
  const wrEdge = (r: typeof ra, i: number): Edge => ({
    from: l.from === INIT ? 'init' : txns[l.from].id,
    to: txns[r.txn].id,
    kind: 'wr',
    reason: `${txns[r.txn].id} read ${key} as ${version} (wid ${r.fromWids[i]}) and overwrote it`,
    read: r.ref,
    table: model.tables[model.keys[l.key].table].schema.name,
    key: model.keys[l.key].values,
    wid: r.fromWids[i],
  });
  return {
    type: 'lost-update',
    message: `${ANOMALY_TEXT['lost-update']}: ${txnName(model, a)} and ${txnName(model, b)} both read ${key} as ${version} (wid ${wid}) and both wrote it; whichever committed second would have seen the other`,
    txns: [txns[a].id, txns[b].id, ...(l.from === INIT ? [] : [txns[l.from].id])],
    levels: [...new Set([levelName(txns[a].level), levelName(txns[b].level)])],
    events: [ra.ref, rb.ref],
    edges: [wrEdge(ra, l.a.index), wrEdge(rb, l.b.index)],
    details: { key: model.keys[l.key].values, table: model.tables[model.keys[l.key].table].schema.name, version: wid, cases },
  };
}
