/**
 * Completing a commit order into a consistent execution (the fast path before enumerating extensions).
 *
 * The prefix search run on the history with its unresolved conflicts left open (as if those reads were
 * partial for those rows) is a relaxation: if it finds no commit order, the history is inconsistent. If it
 * finds one, `co`, we try to choose every conflict's witness for that order: the co-latest writer of the
 * row that is visible to the read (paper §5: with the writer visible already, the new wr edge adds no
 * visibility except causal visibility downstream, which the final check covers), or else a later writer
 * before the reader whose version does not match. Then every axiom instance of the extended history is
 * checked against `co` as a total order; success is a consistent execution (Theorem 5: the prefix search on
 * that conflict-free extension would accept `co`). Failure says nothing: the caller enumerates.
 *
 *   relaxed co -> canonical witnesses -> verify all axioms under co -> extension | undefined
 */
import type { Conflict } from './conflicts.js';
import { valueOf } from './conflicts.js';
import { PC, SI } from './levels.js';
import { INIT, type ReadEvent } from './model.js';
import { Order, setHas } from './order.js';
import type { WritePartners } from './write-partners.js';
import type { Relations } from './relations.js';

function totalOrder(n: number, sequence: number[]): { order: Order; pos: Int32Array } {
  const pos = new Int32Array(n);
  pos[INIT] = 0;
  sequence.forEach((t, i) => (pos[t] = i + 1));
  const order = new Order(n);
  const all = [INIT, ...sequence];
  // Row of all[i] = every later transaction: fill from the end.
  const { words, bits } = order;
  for (let i = all.length - 2; i >= 0; i--) {
    const row = all[i] * words;
    const nextRow = all[i + 1] * words;
    for (let w = 0; w < words; w++) bits[row + w] = bits[nextRow + w];
    const nxt = all[i + 1];
    bits[row + (nxt >>> 5)] |= 1 << (nxt & 31);
  }
  return { order, pos };
}

/**
 * vis(t3)(t2, ·) under a total commit order for a PC or SI reader, beyond so and wr: t2 is visible iff
 * pos[t2] < the returned bound (Prefix: before the previous transaction of the session or a wr-predecessor;
 * SI's Conflict: up to a writer of a key t3 writes that commits before t3). Equal to `Relations.visible` with
 * `co` for pco, in one pass over t3's co-writers instead of one per (t2, read).
 */
export function prefixBound(rel: Relations, t3: number, pos: Int32Array, partners: WritePartners, conflictBounds?: Int32Array): number {
  const { model } = rel;
  let bound = 0;
  const prev = model.soPrev[t3];
  if (prev >= 0) bound = pos[prev];
  const wr = rel.wrPred[t3];
  for (let w = 0; w < wr.length; w++) {
    let x = wr[w];
    while (x !== 0) {
      const low = x & -x;
      const t = (w << 5) + (31 - Math.clz32(low));
      if (pos[t] > bound) bound = pos[t];
      x ^= low;
    }
  }
  if (model.txns[t3].level === SI) {
    // The Conflict part depends on `co` and the writes only (not on witnesses): `conflictBounds` keeps it.
    let c = conflictBounds ? conflictBounds[t3] : -1;
    if (c < 0) {
      c = 0;
      partners.some(t3, (t4) => {
        if (pos[t4] < pos[t3] && pos[t4] + 1 > c) c = pos[t4] + 1;
        return false;
      });
      if (conflictBounds) conflictBounds[t3] = c;
    }
    if (c > bound) bound = c;
  }
  return bound;
}

/** vis(t3)(t2, read) with `co` (given by `pos`, also `rel.pco`) for the commit order; `bound` from prefixBound for PC/SI. */
export function visibleUnder(rel: Relations, t2: number, read: ReadEvent, level: number, pos: Int32Array, bound: number, partners: WritePartners): boolean {
  if (level !== PC && level !== SI) return rel.visible(t2, read, level, partners);
  return pos[t2] < bound || rel.soBefore(t2, read.txn) || setHas(rel.wrPred[read.txn], t2);
}

/** Checks every axiom instance of `rel`'s triples with `co` (given by `pos`) as the commit order. */
export function satisfiesAxioms(rel: Relations, pos: Int32Array, partners: WritePartners): boolean {
  const { model } = rel;
  const bounds = new Int32Array(model.n).fill(-1);
  for (const triple of rel.triples) {
    const read = model.reads[triple.read];
    const t3 = read.txn;
    const t1 = triple.from;
    if (pos[t1] >= pos[t3]) return false; // wr ⊆ co
    const level = model.txns[t3].level;
    if ((level === PC || level === SI) && bounds[t3] < 0) bounds[t3] = prefixBound(rel, t3, pos, partners);
    for (const t2 of model.writersOf[triple.key]) {
      if (t2 === t1 || t2 === t3 || pos[t2] < pos[t1]) continue;
      if (visibleUnder(rel, t2, read, level, pos, bounds[t3], partners)) return false;
    }
  }
  return true;
}

export interface Completion {
  /** The extension that makes `co` a consistent execution, if the check passed. */
  rel?: Relations;
  /** The witness tried for each conflict (by index), -1 where none fits `co`: the enumeration tries these first. */
  preferred: number[];
}

export function completeWitnesses(base: Relations, conflicts: Conflict[], sequence: number[], partners: WritePartners): Completion {
  const { model } = base;
  const { order, pos } = totalOrder(model.n, sequence);
  const conflictBounds = new Int32Array(model.n).fill(-1);
  const rel = base.clone();
  rel.pco = order;
  const preferred: number[] = new Array(conflicts.length).fill(-1);
  // Readers in commit order, each one's reads in program order, and every witness added as soon as it is
  // chosen: a witness of an earlier read can make its writer visible to a later read of the same transaction
  // (RC: an earlier statement read from it; RA, PC, SI: wr), which changes the later read's canonical writer.
  const todo = conflicts.map((_, i) => i);
  const readOf = (i: number) => model.reads[conflicts[i].read];
  todo.sort((a, b) => pos[readOf(a).txn] - pos[readOf(b).txn] || readOf(a).po - readOf(b).po || a - b);
  let complete = true;
  for (const i of todo) {
    const c = conflicts[i];
    const read = readOf(i);
    const t3 = read.txn;
    const level = model.txns[t3].level;
    const bound = level === PC || level === SI ? prefixBound(rel, t3, pos, partners, conflictBounds) : 0;
    let canonical = INIT;
    for (const t of model.writersOf[c.key]) {
      if (t !== t3 && pos[t] < pos[t3] && pos[t] > pos[canonical] && visibleUnder(rel, t, read, level, pos, bound, partners)) canonical = t;
    }
    let chosen = -1;
    const value = valueOf(model, canonical, c.key);
    if (value === null || !read.pred.test(value)) chosen = canonical;
    else {
      // A later writer before the reader whose version hides the row.
      let best = -1;
      for (const t of c.zeros) if (t !== t3 && pos[t] > pos[canonical] && pos[t] < pos[t3] && (best < 0 || pos[t] < pos[best])) best = t;
      chosen = best;
    }
    preferred[i] = chosen;
    if (chosen < 0) complete = false;
    // addWitness also touches pco, a total order already containing the edge (chosen before the reader).
    else if (complete) rel.addWitness(read, c.key, chosen);
  }
  if (!complete) return { preferred };
  return { rel: satisfiesAxioms(rel, pos, partners) ? rel : undefined, preferred };
}
