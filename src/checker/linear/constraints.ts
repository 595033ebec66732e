/**
 * Commit-order edges every consistent execution has, found in time linear in the reads (docs/scale.md;
 * docs/semantics.md §2.3 and §4.2): the first round of saturation restricted to the visibility that does not
 * depend on the commit order, plus two rules that do a case split on two transactions at once.
 *
 * For a read r of t3 that read key x from t1, and a writer t2 ≠ t1, t3 of x:
 *   - t2 precedes t3 in its session (so-visible at every level): t2 must commit before t1. Only the session's
 *     latest such writer is needed (the earlier ones precede it in so).
 *   - t3 read from t2 (wr-visible: at RC only through an earlier statement): t2 must commit before t1.
 *   - t3 is SER and t2 read x from t1 and overwrote it: t3 must commit before t2 (had t2 committed before t3,
 *     t3 would see it and t2 would have to commit before t1, which it read from): an anti-dependency.
 * Lost update: two SI or SER transactions that both read x from t1 and both write x cannot both commit: whichever
 * commits second sees the other (SER: it commits before; SI: Conflict, a common written key), which must then
 * commit before t1, which it read from. Inconsistent at once (Elle's lost update; paper §2, Figure 3).
 *
 *   model -> forced edges (from, to, why) + lost updates, each with what an explanation needs
 */
import { SER, SI, RC } from '../levels.js';
import { INIT, type CheckModel } from '../model.js';
import type { Chains } from './sessions.js';

/** Why a forced edge is there. */
export const SO_VISIBLE = 0, WR_VISIBLE = 1, ANTI_DEPENDENCY = 2;

export interface ForcedEdges {
  count: number;
  from: Int32Array;
  to: Int32Array;
  why: Uint8Array;
  /** The read whose axiom forces it, and the index into its from-arrays of the key it read. */
  read: Int32Array;
  index: Int32Array;
  /** For an anti-dependency: the read of the overwriter (`to`) that read the same version. */
  other: Int32Array;
}

export interface LostUpdate {
  key: number;
  /** The version both read. */
  from: number;
  /** Two reads (read ids, index into from-arrays) of two SI/SER transactions that both overwrote it. */
  a: { read: number; index: number };
  b: { read: number; index: number };
}

class Growable {
  count = 0;
  from = new Int32Array(1024);
  to = new Int32Array(1024);
  why = new Uint8Array(1024);
  read = new Int32Array(1024);
  index = new Int32Array(1024);
  other = new Int32Array(1024);

  push(from: number, to: number, why: number, read: number, index: number, other = -1): void {
    if (this.count === this.from.length) {
      const grow = <T extends Int32Array | Uint8Array>(a: T): T => {
        const b = new (a.constructor as new (n: number) => T)(a.length * 2);
        b.set(a);
        return b;
      };
      this.from = grow(this.from);
      this.to = grow(this.to);
      this.why = grow(this.why);
      this.read = grow(this.read);
      this.index = grow(this.index);
      this.other = grow(this.other);
    }
    const i = this.count++;
    this.from[i] = from;
    this.to[i] = to;
    this.why[i] = why;
    this.read[i] = read;
    this.index[i] = index;
    this.other[i] = other;
  }

  done(): ForcedEdges {
    const c = this.count;
    return { count: c, from: this.from.subarray(0, c), to: this.to.subarray(0, c), why: this.why.subarray(0, c), read: this.read.subarray(0, c), index: this.index.subarray(0, c), other: this.other.subarray(0, c) };
  }
}

/**
 * The reads that read each version and overwrote it: for key x and writer t1, the (read, index) pairs of
 * transactions that read x from t1 and write x themselves. Keyed by x * n + t1 (below 2^53 for any history
 * that fits in memory).
 */
export function overwriters(model: CheckModel): Map<number, number[]> {
  const { reads, writes, n } = model;
  const map = new Map<number, number[]>();
  for (const r of reads) {
    const w = writes[r.txn];
    if (w.size === 0) continue;
    for (let i = 0; i < r.fromKeys.length; i++) {
      const x = r.fromKeys[i];
      if (!w.has(x)) continue;
      const id = x * n + r.fromTxns[i];
      let list = map.get(id);
      if (!list) map.set(id, (list = []));
      list.push(r.id, i);
    }
  }
  return map;
}

export function forcedEdges(model: CheckModel, chains: Chains, over: Map<number, number[]>, check: () => void): { edges: ForcedEdges; lostUpdates: LostUpdate[] } {
  const { n, reads, readsOf, txns, writes } = model;
  const edges = new Growable();
  // The latest writer of each key in the session being walked (dense ids are by session, then seq).
  const lastWriter = new Int32Array(model.keys.length).fill(-1);
  const lastSession = new Int32Array(model.keys.length).fill(-1);
  // Writers t3 read from so far (stamp = t3), and, for RC, at an earlier statement (rcStamp = t3).
  const wrStamp = new Int32Array(n).fill(-1);
  const rcStamp = new Int32Array(n).fill(-1);
  const wrList: number[] = [];
  for (let t3 = 1; t3 < n; t3++) {
    if ((t3 & 4095) === 0) check();
    const level = txns[t3].level;
    const session = chains.of[t3];
    wrList.length = 0;
    for (const ri of readsOf[t3]) {
      for (const w of reads[ri].fromTxns) {
        if (wrStamp[w] !== t3) {
          wrStamp[w] = t3;
          wrList.push(w);
        }
      }
    }
    for (const ri of readsOf[t3]) {
      const r = reads[ri];
      for (let i = 0; i < r.fromKeys.length; i++) {
        const x = r.fromKeys[i];
        const t1 = r.fromTxns[i];
        if (lastSession[x] === session) {
          const t2 = lastWriter[x];
          if (t2 !== t1) edges.push(t2, t1, SO_VISIBLE, ri, i);
        }
        for (const t2 of wrList) {
          if (t2 === t1 || t2 === INIT || (level === RC && rcStamp[t2] !== t3) || !writes[t2].has(x)) continue;
          edges.push(t2, t1, WR_VISIBLE, ri, i);
        }
        if (level === SER) {
          const list = over.get(x * n + t1);
          if (list) {
            for (let j = 0; j < list.length; j += 2) {
              const t2 = reads[list[j]].txn;
              if (t2 !== t3) edges.push(t3, t2, ANTI_DEPENDENCY, ri, i, list[j]);
            }
          }
        }
      }
      if (level === RC) for (const w of r.fromTxns) rcStamp[w] = t3;
    }
    for (const x of writes[t3].keys()) {
      lastWriter[x] = t3;
      lastSession[x] = session;
    }
  }
  const lostUpdates: LostUpdate[] = [];
  for (const [id, list] of over) {
    if (list.length < 4) continue;
    let first = -1;
    for (let j = 0; j < list.length; j += 2) {
      const t = reads[list[j]].txn;
      if (txns[t].level !== SI && txns[t].level !== SER) continue;
      if (first < 0) first = j;
      else if (reads[list[first]].txn !== t) {
        lostUpdates.push({ key: Math.floor(id / n), from: id % n, a: { read: list[first], index: list[first + 1] }, b: { read: list[j], index: list[j + 1] } });
        break;
      }
    }
  }
  return { edges: edges.done(), lostUpdates };
}
