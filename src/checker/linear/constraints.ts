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
import { INIT, type CheckModel } from '../model/model.js';
import type { Chains } from './sessions.js';
import type { Arena } from './arena.js';
import { WritersByKey, writesKey, type Flat } from './flat.js';
import { lowerBound } from './lower-bound.js';

/** Why a forced edge is there. */
export const SO_VISIBLE = 0,
  WR_VISIBLE = 1,
  ANTI_DEPENDENCY = 2;

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
  from: Int32Array;
  to: Int32Array;
  why: Uint8Array;
  read: Int32Array;
  index: Int32Array;
  other: Int32Array;

  constructor(
    private readonly arena: Arena,
    capacity: number,
  ) {
    this.from = arena.int32(capacity);
    this.to = arena.int32(capacity);
    this.why = arena.uint8(capacity);
    this.read = arena.int32(capacity);
    this.index = arena.int32(capacity);
    this.other = arena.int32(capacity);
  }

  push(from: number, to: number, why: number, read: number, index: number, other = -1): void {
    if (this.count === this.from.length) {
      const { arena } = this;
      this.from = arena.doubled(this.from);
      this.to = arena.doubled(this.to);
      this.why = arena.doubled(this.why);
      this.read = arena.doubled(this.read);
      this.index = arena.doubled(this.index);
      this.other = arena.doubled(this.other);
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
    return {
      count: c,
      from: this.from.subarray(0, c),
      to: this.to.subarray(0, c),
      why: this.why.subarray(0, c),
      read: this.read.subarray(0, c),
      index: this.index.subarray(0, c),
      other: this.other.subarray(0, c),
    };
  }
}

/**
 * The reads that read a version and overwrote it: every (read, index) whose transaction writes the key it read
 * there, sorted by (key, writer read from), with `version[i] = key * n + writer` to binary-search a version.
 * (Below 2^53 for any history that fits in memory.)
 */
export interface Overwriters {
  version: Float64Array;
  read: Int32Array;
  index: Int32Array;
}

export function overwriters(model: CheckModel, flat: Flat, arena: Arena): Overwriters {
  const { n } = model;
  const { tripleStart, tripleKey, tripleFrom, readStart } = flat;
  // Triples whose reader writes the key it read, bucketed by key (counting sort), then by writer read from.
  const picked = arena.int32(tripleKey.length);
  const readOf = arena.int32(tripleKey.length);
  const perKey = arena.int32(model.keys.length + 1);
  let m = 0;
  for (let t = 1; t < n; t++) {
    if (flat.writeStart[t] === flat.writeStart[t + 1]) continue;
    for (let r = readStart[t]; r < readStart[t + 1]; r++) {
      for (let j = tripleStart[r]; j < tripleStart[r + 1]; j++) {
        if (!writesKey(flat, t, tripleKey[j])) continue;
        picked[m] = j;
        readOf[m++] = r;
        perKey[tripleKey[j] + 1]++;
      }
    }
  }
  for (let x = 0; x < model.keys.length; x++) perKey[x + 1] += perKey[x];
  const fill = arena.int32Copy(perKey.subarray(0, model.keys.length));
  const ids = arena.int32(m);
  for (let i = 0; i < m; i++) ids[fill[tripleKey[picked[i]]]++] = i;
  for (let x = 0; x < model.keys.length; x++) {
    if (perKey[x + 1] - perKey[x] > 32) {
      ids.subarray(perKey[x], perKey[x + 1]).sort((a, b) => tripleFrom[picked[a]] - tripleFrom[picked[b]] || a - b);
      continue;
    }
    // Insertion sort by writer read from within one key's bucket (a handful of versions each).
    for (let a = perKey[x] + 1; a < perKey[x + 1]; a++) {
      const id = ids[a];
      const from = tripleFrom[picked[id]];
      let b = a - 1;
      while (b >= perKey[x] && tripleFrom[picked[ids[b]]] > from) {
        ids[b + 1] = ids[b];
        b--;
      }
      ids[b + 1] = id;
    }
  }
  const version = arena.float64(m);
  const read = arena.int32(m);
  const index = arena.int32(m);
  for (let k = 0; k < m; k++) {
    const i = ids[k];
    version[k] = tripleKey[picked[i]] * n + tripleFrom[picked[i]];
    read[k] = readOf[i];
    index[k] = picked[i] - tripleStart[readOf[i]];
  }
  return { version, read, index };
}

/** The range [from, to) of `over` for one version (key x written by t1). */
function versionRange(over: Overwriters, v: number): [number, number] {
  const a = over.version;
  const lo = lowerBound(a, v);
  let to = lo;
  while (to < a.length && a[to] === v) to++;
  return [lo, to];
}

export function forcedEdges(
  model: CheckModel,
  flat: Flat,
  chains: Chains,
  over: Overwriters,
  arena: Arena,
  check: () => void,
): { edges: ForcedEdges; lostUpdates: LostUpdate[] } {
  const { n } = model;
  const { readStart, tripleStart, tripleKey, tripleFrom, level: levels } = flat;
  const readTxn = (r: number) => {
    // the transaction of read r: binary search in readStart
    let lo = 0,
      hi = n - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >>> 1;
      if (readStart[mid] <= r) lo = mid;
      else hi = mid - 1;
    }
    return lo;
  };
  // Capacity for about one forced edge per row read from another transaction (grows by doubling past that).
  const edges = new Growable(arena, Math.max(1024, tripleKey.length));
  // The latest writer of each key in the session being walked (dense ids are by session, then seq).
  const lastWriter = arena.int32Filled(model.keys.length, -1);
  const lastSession = arena.int32Filled(model.keys.length, -1);
  // Writers t3 read from (stamp = t3), and, for RC, at an earlier statement (rcStamp = t3).
  const wrStamp = arena.int32Filled(n, -1);
  const rcStamp = arena.int32Filled(n, -1);
  const wrList: number[] = [];
  const byKey = new WritersByKey(model.keys.length, arena);
  /** t2, a writer of x that t3 read from, is visible to t3's read of x from t1: t2 before t1. */
  const wrVisible = (t2: number, t1: number, t3: number, level: number, r: number, i: number) => {
    if (t2 !== t1 && t2 !== INIT && (level !== RC || rcStamp[t2] === t3)) edges.push(t2, t1, WR_VISIBLE, r, i);
  };
  for (let t3 = 1; t3 < n; t3++) {
    if ((t3 & 4095) === 0) check();
    const level = levels[t3];
    const session = chains.of[t3];
    wrList.length = 0;
    const first = tripleStart[readStart[t3]],
      last = tripleStart[readStart[t3 + 1]];
    for (let j = first; j < last; j++) {
      const w = tripleFrom[j];
      if (wrStamp[w] !== t3) {
        wrStamp[w] = t3;
        wrList.push(w);
      }
    }
    // Many writers read from: every key they wrote that t3 read is indexed (the writes of the writers read from
    // are fewer than the writers of the keys read, and each of those was a lookup in a stamp as long as the history).
    const many = wrList.length > flat.manyWriters;
    if (many) byKey.build(flat, wrList, t3, true);
    for (let r = readStart[t3]; r < readStart[t3 + 1]; r++) {
      for (let j = tripleStart[r]; j < tripleStart[r + 1]; j++) {
        const x = tripleKey[j];
        const t1 = tripleFrom[j];
        const i = j - tripleStart[r];
        if (lastSession[x] === session) {
          const t2 = lastWriter[x];
          if (t2 !== t1) edges.push(t2, t1, SO_VISIBLE, r, i);
        }
        if (!many) {
          for (const t2 of wrList) if (writesKey(flat, t2, x)) wrVisible(t2, t1, t3, level, r, i);
        } else
          for (let e = byKey.first(x); e >= 0; e = byKey.nextOf(e)) wrVisible(byKey.writerOf(e), t1, t3, level, r, i);
        if (level === SER) {
          const [from, to] = versionRange(over, x * n + t1);
          for (let k = from; k < to; k++) {
            const t2 = readTxn(over.read[k]);
            if (t2 !== t3) edges.push(t3, t2, ANTI_DEPENDENCY, r, i, over.read[k]);
          }
        }
      }
      if (level === RC) for (let j = tripleStart[r]; j < tripleStart[r + 1]; j++) rcStamp[tripleFrom[j]] = t3;
    }
    for (let k = flat.writeStart[t3]; k < flat.writeStart[t3 + 1]; k++) {
      lastWriter[flat.writeKey[k]] = t3;
      lastSession[flat.writeKey[k]] = session;
    }
  }
  const lostUpdates: LostUpdate[] = [];
  for (let from = 0; from < over.version.length && lostUpdates.length < 10; ) {
    let to = from;
    while (to < over.version.length && over.version[to] === over.version[from]) to++;
    let a = -1;
    for (let k = from; k < to; k++) {
      const t = readTxn(over.read[k]);
      if (levels[t] !== SI && levels[t] !== SER) continue;
      if (a < 0) a = k;
      else if (readTxn(over.read[a]) !== t) {
        const v = over.version[from];
        lostUpdates.push({
          key: Math.floor(v / n),
          from: v % n,
          a: { read: over.read[a], index: over.index[a] },
          b: { read: over.read[k], index: over.index[k] },
        });
        break;
      }
    }
    from = to;
  }
  return { edges: edges.done(), lostUpdates };
}
