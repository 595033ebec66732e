/**
 * Explanations by case analysis (docs/semantics.md §5) for contradictions that saturation alone does not show as
 * one cycle, such as a lost update or write skew under SI/SER, or a long fork under PC: the two transactions
 * must be ordered somehow, and each order forces a cycle.
 *
 *   saturated pco -> for a pair (a, b) unordered in pco: assume a < b, saturate; assume b < a, saturate
 *     both cyclic  -> the anomaly, with both cycles
 *     one cyclic   -> the other order is forced: keep it (with its reason) and look again
 *
 * Only for explanations: the verdict comes from the search in check.ts. Bounded by the budget and by the
 * number of pairs tried. The anomaly is data (anomaly.ts, `by: 'cases'`); its name comes from the classifier of
 * cycle.ts, fed the last forced edge of each of the two cases.
 */
import type { Anomaly, Case, CaseSplitAnomaly } from '../anomaly.js';
import { assumedOnPath, classifyContradiction, edgeTxns, findReasonCycle, forcedFact } from './cycle.js';
import { levelName } from '../levels.js';
import type { Budget } from '../budget.js';
import { blockingReader, type StuckPoint } from '../search/prefix.js';
import type { ForcedEdge, Relations } from '../model/relations.js';
import { INIT } from '../model/model.js';
import { saturate } from '../saturation/saturate.js';
import type { WritePartners } from '../model/write-partners.js';

const MAX_TRANSACTIONS = 80;
/** A stuck pair is tried on histories up to this size (two clones of the n × n order, each saturated). */
const MAX_STUCK_PAIR_TRANSACTIONS = 2000;

interface Tried extends Case {
  forced: ForcedEdge[];
  /** Assumed orders (`x,y`) the cycle rests on: its own assumed edges, and those on the path by which a writer
   *  commits before a reader its axiom edge says it is visible to. */
  uses: string[];
}

/** Visibilities that rest on the commit order (a path in the partial order, not an edge of the cycle). */
const BY_COMMIT_ORDER = new Set(['co', 'prefix', 'conflict']);

function tryOrder(
  rel: Relations,
  a: number,
  b: number,
  partners: WritePartners,
  budget: Budget,
): { rel: Relations; cycle?: Tried } {
  const next = rel.clone();
  next.assume(a, b);
  const ok = !next.pco.cyclic && saturate(next, partners, undefined, budget);
  if (ok) return { rel: next };
  const cycle = findReasonCycle(next) ?? [];
  const { model } = rel;
  const edges = cycle.map((e) => e.edge());
  const forced = cycle.filter((e) => e.forced).map((e) => e.forced!);
  const uses = new Set(edges.filter((e) => e.kind === 'assumed').map((e) => `${e.from},${e.to}`));
  for (const f of forced)
    if (BY_COMMIT_ORDER.has(f.via))
      for (const k of assumedOnPath(next, f.from, model.reads[f.triple.read].txn)) uses.add(k);
  return {
    rel: next,
    cycle: { assume: { before: model.txns[a].id, after: model.txns[b].id }, edges, forced, uses: [...uses] },
  };
}

/** The case split of `a` and `b` (both orders cyclic), with the derived orders its cycles use, earliest first. */
function caseSplit(
  rel: Relations,
  a: number,
  b: number,
  ab: Tried,
  ba: Tried,
  derived: Map<string, Tried>,
): CaseSplitAnomaly {
  const { model } = rel;
  const last = (c: Tried) => c.forced[c.forced.length - 1];
  const facts = last(ab) && last(ba) ? [forcedFact(model, last(ab)), forcedFact(model, last(ba))] : [];
  const type = facts.length ? classifyContradiction(facts) : 'commit-order-cycle';
  const used: Tried[] = [];
  const seen = new Set<string>();
  const visit = (c: Tried) => {
    for (const k of c.uses) {
      const d = derived.get(k);
      if (!d || seen.has(k)) continue;
      seen.add(k);
      visit(d);
      used.push(d);
    }
  };
  visit(ab);
  visit(ba);
  const all = [...used, ab, ba];
  const forced = all.flatMap((c) => c.forced);
  return {
    type,
    by: 'cases',
    pair: [model.txns[a].id, model.txns[b].id],
    txns: edgeTxns(all.flatMap((c) => c.edges)),
    levels: [...new Set(forced.map((f) => levelName(f.level)))],
    cases: all.map((c) => ({ assume: c.assume, edges: c.edges })),
    readers: [...new Set(facts.map((f) => model.txns[f.reader].id))],
  };
}

export function explainByCases(base: Relations, partners: WritePartners, budget: Budget): Anomaly | undefined {
  const { model } = base;
  if (model.n > MAX_TRANSACTIONS) return undefined;
  let rel = base.clone();
  // Orders derived on the way (the opposite order forced a cycle), keyed by the kept edge "x,y".
  const derived = new Map<string, Tried>();
  for (let round = 0; round < model.n; round++) {
    let progress = false;
    for (let a = 1; a < model.n; a++) {
      for (let b = a + 1; b < model.n; b++) {
        budget.tick();
        if (rel.pco.has(a, b) || rel.pco.has(b, a)) continue;
        if (model.writes[a].size === 0 && model.writes[b].size === 0) continue;
        const ab = tryOrder(rel, a, b, partners, budget);
        const ba = tryOrder(rel, b, a, partners, budget);
        if (ab.cycle && ba.cycle) return caseSplit(rel, a, b, ab.cycle, ba.cycle, derived);
        if (ab.cycle) {
          derived.set(`${model.txns[b].id},${model.txns[a].id}`, ab.cycle);
          rel = ba.rel;
          progress = true;
        } else if (ba.cycle) {
          derived.set(`${model.txns[a].id},${model.txns[b].id}`, ba.cycle);
          rel = ab.rel;
          progress = true;
        }
      }
    }
    if (!progress) break;
  }
  return undefined;
}

/** How many pairs of a stuck frontier are tried (the frontier has a transaction per session at most); the pairs
 *  that do not block each other only while pairs × transactions stays under MAX_OTHER_PAIRS_WORK (each try
 *  clones and saturates the n × n order twice). */
const MAX_STUCK_PAIRS = 24;
const MAX_OTHER_PAIRS_WORK = 20_000;

/**
 * A stuck search's frontier (search/prefix.ts) where two transactions each block the other: each writes a row a
 * pending reader read an older version of (or is the write an SI reader's commit would make stale), and that
 * reader is the other transaction or follows it in its session. Both orders of the pair are tried on the
 * saturated base; when both force a cycle, that is the explanation (often a write skew), at any size. Pairs that
 * block each other directly come first, then those through a session successor, then the other pairs of the
 * frontier's transactions that a reader blocks.
 */
export function explainStuckPair(
  base: Relations,
  partners: WritePartners,
  stuck: StuckPoint,
  budget: Budget,
): CaseSplitAnomaly | undefined {
  const { model } = base;
  if (model.n > MAX_STUCK_PAIR_TRANSACTIONS) return undefined;
  const frontier = new Set(stuck.blocked.map((b) => b.txn));
  /** The frontier transaction a pending reader waits for: itself, or its nearest session predecessor there. */
  const waitsFor = (x: number): number | undefined => {
    for (let t = x; t !== INIT && t >= 0; t = model.soPrev[t]) if (frontier.has(t)) return t;
    return undefined;
  };
  const by = new Map<number, number>();
  for (const b of stuck.blocked) {
    const x = blockingReader(b.reason);
    if (x !== undefined) by.set(b.txn, x);
  }
  const rank = (a: number, b: number) => {
    if (by.get(a) === b && by.get(b) === a) return 0;
    return waitsFor(by.get(a)!) === b && waitsFor(by.get(b)!) === a ? 1 : 2;
  };
  const blocked = [...by.keys()];
  const pairs: [number, number, number][] = [];
  for (let i = 0; i < blocked.length; i++)
    for (let j = i + 1; j < blocked.length; j++) {
      const [a, b] = blocked[i] < blocked[j] ? [blocked[i], blocked[j]] : [blocked[j], blocked[i]];
      pairs.push([a, b, rank(a, b)]);
    }
  pairs.sort((p, q) => p[2] - q[2] || p[0] - q[0] || p[1] - q[1]);
  let tried = 0;
  for (const [a, b, r] of pairs) {
    if (++tried > MAX_STUCK_PAIRS || (r === 2 && tried * model.n > MAX_OTHER_PAIRS_WORK)) break;
    budget.tick();
    const ab = tryOrder(base, a, b, partners, budget);
    const ba = ab.cycle ? tryOrder(base, b, a, partners, budget) : undefined;
    if (ab.cycle && ba?.cycle) return { ...caseSplit(base, a, b, ab.cycle, ba.cycle, new Map()), fromStuck: true };
  }
  return undefined;
}
