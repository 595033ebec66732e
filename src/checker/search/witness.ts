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
import type { Conflict } from '../conflicts/conflicts.js';
import { CC, PC, RC, SER, SI } from '../levels.js';
import { INIT, predicateHolds, versionValue, type CheckModel, type ReadEvent } from '../model/model.js';
import { Order, setHas } from '../model/order.js';
import type { WritePartners } from '../model/write-partners.js';
import type { Relations } from '../model/relations.js';
import { memoryStage } from '../budget.js';

function totalOrder(n: number, sequence: number[]): { order: Order; pos: Int32Array } {
  const pos = new Int32Array(n);
  pos[INIT] = 0;
  for (let i = 0; i < sequence.length; i++) pos[sequence[i]] = i + 1;
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
 * Writers of each key sorted by their position in one total commit order, built per key when first asked.
 *
 * - `conflictBound(t3)`: the Conflict part of `prefixBound` for an SI reader, 1 + the position of the last write
 *   partner committed before t3. It depends on `co` and the writes only (not on witnesses), so it is kept per
 *   reader, and found per written key by binary search (instead of a walk over every partner: hundreds per
 *   reader on TPC-C's district rows).
 * - `after(key, p)`: where the key's writers after position p start; an axiom instance (t1 read, t3 reader)
 *   involves only the writers between t1 and t3 once wr ∪ so ⊆ co (everything visible to t3 commits before it).
 */
export class PositionIndex {
  private readonly bounds: Int32Array;
  private readonly byKey = new Map<number, { ids: Int32Array; at: Int32Array }>();
  constructor(
    private readonly model: CheckModel,
    readonly pos: Int32Array,
  ) {
    this.bounds = new Int32Array(model.n).fill(-1);
  }

  writers(key: number): { ids: Int32Array; at: Int32Array } {
    let w = this.byKey.get(key);
    if (!w) {
      const { pos } = this;
      const ids = Int32Array.from(this.model.writersOf[key]).sort((a, b) => pos[a] - pos[b]);
      w = { ids, at: Int32Array.from(ids, (t) => pos[t]) };
      this.byKey.set(key, w);
    }
    return w;
  }

  /** Index of the first writer of the key at a position > p. */
  after(key: number, p: number): number {
    const { at } = this.writers(key);
    let lo = 0,
      hi = at.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (at[mid] <= p) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  conflictBound(t3: number): number {
    let c = this.bounds[t3];
    if (c >= 0) return c;
    c = 0;
    const p3 = this.pos[t3];
    for (const key of this.model.writes[t3].keys()) {
      const i = this.after(key, p3 - 1); // first writer at >= p3: the one before is the last before t3
      if (i > 0) {
        const p = this.writers(key).at[i - 1];
        if (p + 1 > c) c = p + 1;
      }
    }
    return (this.bounds[t3] = c);
  }
}

/**
 * vis(t3)(t2, ·) under a total commit order for a PC or SI reader, beyond so and wr: t2 is visible iff
 * pos[t2] < the returned bound (Prefix: before the previous transaction of the session or a wr-predecessor;
 * SI's Conflict: up to a writer of a key t3 writes that commits before t3). Equal to `Relations.visible` with
 * `co` for pco, in one pass over t3's co-writers instead of one per (t2, read).
 */
export function prefixBound(
  rel: Relations,
  t3: number,
  pos: Int32Array,
  partners: WritePartners,
  index?: PositionIndex,
): number {
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
    let c = 0;
    if (index) c = index.conflictBound(t3);
    else {
      partners.some(t3, (t4) => {
        if (pos[t4] < pos[t3] && pos[t4] + 1 > c) c = pos[t4] + 1;
        return false;
      });
    }
    if (c > bound) bound = c;
  }
  return bound;
}

/**
 * vis(t3)(t2, read) with `co` (given by `pos`, also `rel.pco`) for the commit order; `bound` from prefixBound for
 * PC/SI.
 */
export function visibleUnder(
  rel: Relations,
  t2: number,
  read: ReadEvent,
  level: number,
  pos: Int32Array,
  bound: number,
  partners: WritePartners,
): boolean {
  if (level !== PC && level !== SI) return rel.visible(t2, read, level, partners);
  return pos[t2] < bound || rel.soBefore(t2, read.txn) || setHas(rel.wrPred[read.txn], t2);
}

/** Checks every axiom instance of `rel`'s triples with `co` (given by `pos`) as the commit order. */
function satisfiesAxioms(
  rel: Relations,
  pos: Int32Array,
  partners: WritePartners,
  index = new PositionIndex(rel.model, pos),
): boolean {
  const { model } = rel;
  // co extends so and wr: then everything visible to a reader commits before it.
  for (let t = 1; t < model.n; t++) if (pos[model.soPrev[t]] >= pos[t]) return false;
  for (const triple of rel.triples) if (pos[triple.from] >= pos[model.reads[triple.read].txn]) return false;
  const bounds = new Int32Array(model.n).fill(-1);
  for (const triple of rel.triples) {
    const read = model.reads[triple.read];
    const t3 = read.txn;
    const t1 = triple.from;
    const level = model.txns[t3].level;
    if ((level === PC || level === SI) && bounds[t3] < 0) bounds[t3] = prefixBound(rel, t3, pos, partners, index);
    // Writers committed after t1 and before t3 (a writer after t3 is not visible to it).
    const { ids, at } = index.writers(triple.key);
    for (let i = index.after(triple.key, pos[t1]); i < ids.length && at[i] < pos[t3]; i++) {
      if (visibleUnder(rel, ids[i], read, level, pos, bounds[t3], partners)) return false;
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

/** Rounds of choices per reader (each adds a chosen writer: few are needed; the final check decides anyway). */
const MAX_CHOICE_ROUNDS = 50;

export function completeWitnesses(
  base: Relations,
  conflicts: Conflict[],
  sequence: number[],
  partners: WritePartners,
  budget?: { checkNow(): void },
): Completion {
  memoryStage('completing witnesses');
  const { model } = base;
  const { order, pos } = totalOrder(model.n, sequence);
  const index = new PositionIndex(model, pos);
  const rel = base.clone();
  rel.pco = order;
  const preferred: number[] = new Array(conflicts.length).fill(-1);
  // Readers in commit order. At RC, a reader's statements in program order, each witness added as soon as it
  // is chosen: it makes its writer visible to the later statements (rcFirst), never to its own. At the other
  // levels visibility is per transaction (wr, and at PC/SI everything committed before a wr-predecessor), so a
  // witness chosen for one read can change the canonical writer of any read of the same transaction, earlier
  // or later: the transaction's choices are iterated, counting the writers chosen so far as visible, until no
  // new one is chosen, and only then added.
  const todo = conflicts.map((_, i) => i);
  const readOf = (i: number) => model.reads[conflicts[i].read];
  todo.sort((a, b) => pos[readOf(a).txn] - pos[readOf(b).txn] || readOf(a).po - readOf(b).po || a - b);
  let complete = true;
  const { hb } = rel;
  /** The witness for conflict i: the co-latest writer visible to the read (with `chosen` counted as wr-predecessors
   *  of the reader, the latest at position `chosenMax`), or the first later one that hides the row. */
  const choose = (i: number, bound: number, chosen: Set<number>, chosenMax: number): number => {
    const c = conflicts[i];
    const read = readOf(i);
    const t3 = read.txn;
    const level = model.txns[t3].level;
    const visible = (t: number): boolean => {
      if (visibleUnder(rel, t, read, level, pos, bound, partners)) return true;
      if (chosen.size === 0 || level === SER || level === RC) return false;
      if (chosen.has(t)) return true;
      if (level === PC || level === SI) return pos[t] < chosenMax;
      if (level === CC) for (const w of chosen) if (hb.has(t, w)) return true;
      return false;
    };
    let canonical = INIT;
    const { ids } = index.writers(c.key);
    for (let j = index.after(c.key, pos[t3] - 1) - 1; j >= 0; j--) {
      const t = ids[j];
      if (t !== t3 && visible(t)) {
        canonical = t;
        break;
      }
    }
    const value = versionValue(model, canonical, c.key);
    if (value === null || !predicateHolds(model, read, value, canonical)) return canonical;
    // A later writer before the reader whose version hides the row.
    let best = -1;
    for (const t of c.zeros)
      if (t !== t3 && pos[t] > pos[canonical] && pos[t] < pos[t3] && (best < 0 || pos[t] < pos[best])) best = t;
    return best;
  };
  const none = new Set<number>();
  const add = (i: number, w: number) => {
    preferred[i] = w;
    if (w < 0) complete = false;
    // addWitness also touches pco, a total order already containing the edge (chosen before the reader).
    else if (complete) rel.addWitness(readOf(i), conflicts[i].key, w);
  };
  for (let g = 0, groups = 0; g < todo.length; ) {
    if ((++groups & 255) === 0) budget?.checkNow();
    const t3 = readOf(todo[g]).txn;
    let end = g;
    while (end < todo.length && readOf(todo[end]).txn === t3) end++;
    const group = todo.slice(g, end);
    g = end;
    const level = model.txns[t3].level;
    if (level === RC) {
      for (const i of group) add(i, choose(i, 0, none, 0));
      continue;
    }
    const bound = level === PC || level === SI ? prefixBound(rel, t3, pos, partners, index) : 0;
    const chosen = new Set<number>();
    let chosenMax = 0;
    let choices: number[] = [];
    for (let round = 0; round < MAX_CHOICE_ROUNDS; round++) {
      choices = group.map((i) => choose(i, bound, chosen, chosenMax));
      let grew = false;
      for (const w of choices) {
        if (w < 0 || chosen.has(w)) continue;
        chosen.add(w);
        if (pos[w] > chosenMax) chosenMax = pos[w];
        grew = true;
      }
      if (!grew) break;
    }
    for (let k = 0; k < group.length; k++) add(group[k], choices[k]);
  }
  if (!complete) return { preferred };
  return { rel: satisfiesAxioms(rel, pos, partners, index) ? rel : undefined, preferred };
}
