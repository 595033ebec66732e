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
import type { Anomaly, AxiomEdge, CaseSplitAnomaly, Edge } from '../anomaly.js';
import {
  classifyContradiction,
  cycleAnomaly,
  forcedEdgeToEdge,
  forcedFact,
  keyRef,
  txnId,
  wrEdgeData,
  soEdgeData,
  type Fact,
} from '../explain/cycle.js';
import { RC, SER, levelName } from '../levels.js';
import { describeKey, INIT, type CheckModel } from '../model/model.js';
import { missingRowAnomaly } from '../explain/missing-row.js';
import type { ForcedEdge, Triple } from '../model/relations.js';
import { Arena } from './arena.js';
import { CandidateRows } from './candidate-rows.js';
import { candidateOrder, FORCED, WR, type GraphEdge } from './commit-order.js';
import {
  ANTI_DEPENDENCY,
  SO_VISIBLE,
  forcedEdges,
  overwriters,
  type ForcedEdges,
  type LostUpdate,
} from './constraints.js';
import { sessionChains } from './sessions.js';
import { flatten } from './flat.js';
import { verifyOrder, type Verified } from './verify.js';

export type LinearOutcome =
  | { verdict: 'consistent'; order: Int32Array }
  | { verdict: 'inconsistent'; anomalies: Anomaly[] }
  | { verdict: 'undecided'; reason: string };

/** Milliseconds spent in each stage of one linear check (for the benchmark's profile), when asked for. */
export type LinearPhases = Record<'flatten' | 'forced' | 'order' | 'verify', number>;

/** Knobs for tests: `manyWriters` lowers the number of writers read from above which lookups are indexed per key. */
export interface LinearTuning {
  manyWriters?: number;
  /** Writers above which a key is indexed rather than scanned (flat.ts). */
  hotKeyWriters?: number;
  /** Bytes of the arena's first chunk (tests make it small, so that the check takes many chunks). */
  arenaChunk?: number;
  /** Verify every transaction in every repair round (the differential test's reference). */
  reverifyAll?: boolean;
  /** Candidate rows of a read from which they are indexed by lifetime (live-rows.ts; tests: 0 and Infinity). */
  liveRowsFrom?: number;
}

/** Bytes of the arena's first chunk per transaction and read. */
const ARENA_BYTES = 160;

export function linearCheck(
  model: CheckModel,
  check: () => void,
  phases?: LinearPhases,
  stage?: (name: string) => void,
  tuning: LinearTuning = {},
): LinearOutcome {
  let clock = Date.now();
  const lap = (name: keyof LinearPhases) => {
    const now = Date.now();
    if (phases) phases[name] = (phases[name] ?? 0) + now - clock;
    clock = now;
  };
  // The check's typed arrays (arena.ts), the first chunk sized to hold all of them on the histories of the
  // benchmark (about 160 bytes per transaction and read at a million transactions).
  const arena = new Arena(tuning.arenaChunk ?? Math.max(1 << 16, ARENA_BYTES * (model.n + model.reads.length)));
  stage?.('indexing reads and writes');
  const flat = flatten(model, arena, tuning.manyWriters, tuning.hotKeyWriters);
  const chains = sessionChains(model, arena);
  lap('flatten');
  stage?.('forced edges and lost updates');
  const over = overwriters(model, flat, arena);
  const { edges, lostUpdates } = forcedEdges(model, flat, chains, over, arena, check);
  lap('forced');
  if (lostUpdates.length > 0)
    return { verdict: 'inconsistent', anomalies: lostUpdates.slice(0, 10).map((l) => lostUpdateAnomaly(model, l)) };
  check();
  stage?.('a candidate commit order');
  let candidate = candidateOrder(model, flat, edges, arena, check);
  lap('order');
  if (candidate.cycle)
    return { verdict: 'inconsistent', anomalies: [forcedCycleAnomaly(model, edges, candidate.cycle)] };
  const rows = new CandidateRows(model);
  // A failed order is repaired a few times: each writer that the order made visible where it must not be is
  // moved after its reader, and each later version that would hide a row a read did not return is moved before
  // it (hint edges), and the candidate is rebuilt. Hints are guesses: a cycle through them,
  // or failures that remain, leave the decision to the search.
  const hints: number[] = [];
  const rounds = model.n <= 50_000 ? MAX_REPAIR_ROUNDS : 2;
  // Transactions that passed under an order agreeing with the current one up to them (verify.ts, Verified): a
  // repaired order usually keeps a long prefix of the last, and that part is not verified again.
  const verified: Verified | undefined = tuning.reverifyAll ? undefined : arena.uint8(model.n);
  let kept = 0;
  for (let round = 1; ; round++) {
    check();
    stage?.(
      round === 1
        ? 'verifying every axiom under it'
        : `verifying every axiom under a repaired order (round ${round}` +
            `${verified ? `; ${kept} of ${model.n - 1} transactions kept from the last round` : ''})`,
    );
    const v = verifyOrder(
      model,
      flat,
      candidate.order!,
      candidate.pos!,
      chains,
      rows,
      arena,
      check,
      verified,
      tuning.liveRowsFrom,
    );
    lap('verify');
    // a copy: the order outlives the check, its arena need not
    if (v.ok) return { verdict: 'consistent', order: candidate.order!.slice() };
    if (v.missingRow) return { verdict: 'inconsistent', anomalies: [missingRowAnomaly(model, v.read, v.key, [INIT])] };
    const read = model.reads[v.read];
    const why =
      `the commit order by commit time${round > 1 ? ` (repaired ${round - 1} time(s))` : ''} fails at ` +
      `${model.txns[read.txn].id} event ${read.ref.event} on ${describeKey(model, v.key)}: ${v.why}`;
    if (round >= rounds) return { verdict: 'undecided', reason: why };
    const before = hints.length;
    for (const f of [{ reader: read.txn, writer: v.writer, hider: v.hider }, ...(v.more ?? [])])
      if (f.hider !== undefined) hints.push(f.hider, f.reader);
      else if (f.writer !== INIT && f.writer !== f.reader) hints.push(f.reader, f.writer);
    if (hints.length === before) return { verdict: 'undecided', reason: why };
    stage?.(`a repaired candidate commit order (round ${round + 1})`);
    const last = candidate.order!;
    candidate = candidateOrder(model, flat, edges, arena, check, hints);
    lap('order');
    if (candidate.cycle)
      return { verdict: 'undecided', reason: `${why}; moving the writers after their readers closes a cycle` };
    if (verified) kept = carryOver(verified, last, candidate.order!);
  }
}

/** Candidate orders tried on a history of up to 50,000 transactions (2 above: each costs a verification). */
const MAX_REPAIR_ROUNDS = 8;

/** Moves `verified` from order `last` to order `next`: the prefix where they agree keeps its verdicts, every
 *  transaction after it is to be checked again. Returns how many passed transactions are kept. */
function carryOver(verified: Verified, last: Int32Array, next: Int32Array): number {
  const n = next.length;
  let prefix = 0;
  while (prefix < n && last[prefix] === next[prefix]) prefix++;
  let kept = 0;
  for (let i = 0; i < prefix; i++) kept += verified[next[i]];
  for (let i = prefix; i < n; i++) verified[next[i]] = 0;
  return kept;
}

function wrTriple(model: CheckModel, read: number, index: number): Triple {
  const r = model.reads[read];
  return { read, key: model.fromKey[r.from + index], from: model.fromTxn[r.from + index], index };
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

/** A cycle of so, wr and forced edges: explained by explain/cycle.ts when it has no anti-dependency, else here
 *  (the same classifier, fed the anti-dependencies as facts of their SER readers). */
function forcedCycleAnomaly(model: CheckModel, edges: ForcedEdges, cycle: GraphEdge[]): Anomaly {
  const anti = cycle.filter((e) => e.kind === FORCED && edges.why[e.a] === ANTI_DEPENDENCY);
  if (anti.length === 0) {
    const triples = cycle.filter((e) => e.kind === WR).map((e) => wrTriple(model, e.a, e.b));
    const forced = cycle.filter((e) => e.kind === FORCED).map((e) => toForcedEdge(model, edges, e.a));
    return cycleAnomaly({ model, triples, forced, assumed: [], pco: { cycleEdge: [cycle[0].from, cycle[0].to] } });
  }
  const facts: Fact[] = cycle
    .filter((e) => e.kind === FORCED)
    .map((e) => {
      if (edges.why[e.a] !== ANTI_DEPENDENCY) return forcedFact(model, toForcedEdge(model, edges, e.a));
      const key = model.fromKey[model.reads[edges.read[e.a]].from + edges.index[e.a]];
      return {
        via: 'anti',
        reader: e.from,
        key,
        readerWritesKey: model.writes[e.from].has(key),
        readerWrites: model.writes[e.from].size > 0,
        sawNewerVersion: false,
      };
    });
  const out: Edge[] = cycle.map((e) => graphEdge(model, edges, e));
  return {
    type: classifyContradiction(facts),
    by: 'cycle',
    txns: [...new Set(cycle.map((e) => e.from))].filter((t) => t !== INIT).map((t) => model.txns[t].id),
    levels: ['SER'],
    edges: out,
    readers: [...new Set(anti.map((e) => model.txns[e.from].id))],
  };
}

function graphEdge(model: CheckModel, edges: ForcedEdges, e: GraphEdge): Edge {
  if (e.kind === WR) return wrEdgeData(model, e.a, e.b);
  if (e.kind !== FORCED) return soEdgeData(model, e.from, e.to);
  if (edges.why[e.a] !== ANTI_DEPENDENCY) return forcedEdgeToEdge(model, toForcedEdge(model, edges, e.a));
  const r = model.reads[edges.read[e.a]];
  const i = edges.index[e.a];
  return {
    from: txnId(model, e.from),
    to: txnId(model, e.to),
    kind: 'rw',
    read: r.ref,
    ...keyRef(model, model.fromKey[r.from + i]),
    wid: model.fromWid[r.from + i],
    version: txnId(model, model.fromTxn[r.from + i]),
    level: 'SER',
  };
}

/** Two SI/SER transactions read the same version and both overwrote it: a case split on their order (each order
 *  makes the first visible to the second, which then must commit before the version it read). */
function lostUpdateAnomaly(model: CheckModel, l: LostUpdate): CaseSplitAnomaly {
  const { txns, reads } = model;
  const ra = reads[l.a.read],
    rb = reads[l.b.read];
  const a = ra.txn,
    b = rb.txn;
  /** Suppose x commits before y: y sees x (SER: committed before it; SI: both write the row), so x must commit
   *  before the version y read, which x read too. */
  const order = (x: number, y: number, readY: number, iy: number, readX: number, ix: number) => {
    const axiom: AxiomEdge = forcedEdgeToEdge(model, {
      from: x,
      to: l.from,
      triple: { read: readY, key: l.key, from: l.from, index: iy },
      via: txns[y].level === SER ? 'co' : 'conflict',
      level: txns[y].level,
    });
    return { assume: { before: txns[x].id, after: txns[y].id }, edges: [axiom, wrEdgeData(model, readX, ix, true)] };
  };
  const cases = [
    order(a, b, l.b.read, l.b.index, l.a.read, l.a.index),
    order(b, a, l.a.read, l.a.index, l.b.read, l.b.index),
  ];
  return {
    type: 'lost-update',
    by: 'cases',
    pair: [txns[a].id, txns[b].id],
    txns: [txns[a].id, txns[b].id, ...(l.from === INIT ? [] : [txns[l.from].id])],
    levels: [...new Set([levelName(txns[a].level), levelName(txns[b].level)])],
    events: [ra.ref, rb.ref],
    cases,
    readers: [txns[a].id, txns[b].id],
    ...keyRef(model, l.key),
    wid: model.fromWid[ra.from + l.a.index],
  };
}
