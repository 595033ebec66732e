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
import { INIT } from './model.js';
import { Order } from './order.js';
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

/** Checks every axiom instance of `rel`'s triples with `co` (given by `pos`) as the commit order. */
export function satisfiesAxioms(rel: Relations, pos: Int32Array, sharesWrite: number[][]): boolean {
  const { model } = rel;
  for (const triple of rel.triples) {
    const read = model.reads[triple.read];
    const t3 = read.txn;
    const t1 = triple.from;
    if (pos[t1] >= pos[t3]) return false; // wr ⊆ co
    const level = model.txns[t3].level;
    for (const t2 of model.writersOf[triple.key]) {
      if (t2 === t1 || t2 === t3 || pos[t2] < pos[t1]) continue;
      if (rel.visible(t2, read, level, sharesWrite)) return false;
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

export function completeWitnesses(base: Relations, conflicts: Conflict[], sequence: number[], sharesWrite: number[][]): Completion {
  const { model } = base;
  const { order, pos } = totalOrder(model.n, sequence);
  const rel = base.clone();
  rel.pco = order;
  const choices: { c: Conflict; w: number }[] = [];
  const preferred: number[] = [];
  for (const c of conflicts) {
    const read = model.reads[c.read];
    const t3 = read.txn;
    const level = model.txns[t3].level;
    let canonical = INIT;
    for (const t of model.writersOf[c.key]) {
      if (t !== t3 && pos[t] < pos[t3] && pos[t] > pos[canonical] && rel.visible(t, read, level, sharesWrite)) canonical = t;
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
    preferred.push(chosen);
    if (chosen >= 0) choices.push({ c, w: chosen });
  }
  if (choices.length < conflicts.length) return { preferred };
  for (const { c, w } of choices) rel.addWitness(model.reads[c.read], c.key, w);
  // addWitness also touched pco, a total order already containing those edges (w before the reader).
  return { rel: satisfiesAxioms(rel, pos, sharesWrite) ? rel : undefined, preferred };
}
