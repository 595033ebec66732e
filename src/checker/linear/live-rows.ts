/**
 * Which of a read's candidate rows (candidate-rows.ts) can matter to the linear check's verification of it under
 * one commit order (verify.ts, step 2), found without visiting the others: a read of a table that only grows
 * and shrinks (TPC-C's new_order: inserted by NewOrder, deleted by Delivery) has candidates that grow with the
 * history, and most are rows that did not exist yet or were deleted long before the reader.
 *
 * For a reader t3 at position p3 whose visible writers include every transaction below `bound` (PC, SI: the bound
 * of verify.ts; SER: p3), a candidate x is hidden from the read, whatever its WHERE, when
 *   - it has no initial row and no writer before p3 (birth ≥ p3): the latest visible version is init's, absent;
 *   - its last writer in the order deletes it and is below `bound` (death < bound): that writer is the latest of x
 *     visible to t3 (every writer of x is at or below it, and it is visible), and a deleted row is hidden.
 * The first rule holds at every level (no writer of x below p3 is visible to anyone at p3): `unborn` applies it one
 * key at a time for RC, RA and CC readers, which have no bound and so no index.
 * These are exactly rows whose check verify.ts would pass over, so the index only skips work: the rows it keeps are
 * visited in key order, as before. Each candidate is an interval [birth, death]; the query reports those that
 * overlap [bound, p3) with a max-segment tree over deaths in birth order, in time O((k + 1) log m) for k found.
 */
import type { CheckModel } from '../model/model.js';
import { lowerBound } from './lower-bound.js';

/** The writers of each key by position in the order (verify.ts's KeyWriters): CSR, ids and their positions. */
export interface WritersInOrder {
  readonly start: Int32Array;
  readonly ids: Int32Array;
  readonly at: Int32Array;
}

/** Candidates from which a list is indexed. */
const LONG_LIST = 32;

/** A death for a row that is never deleted for good. */
export const NEVER = 0x7fffffff;

export class LiveRows {
  readonly #index = new WeakMap<Int32Array, Lifetimes>();
  readonly #found = { keys: new Int32Array(64) };

  /** `from`: lists shorter than this are visited whole (an index costs more than it saves on them); Infinity
   *  turns every skip off (the tests' reference). */
  constructor(
    private readonly model: CheckModel,
    private readonly writers: WritersInOrder,
    private readonly from = LONG_LIST,
  ) {}

  /** Whether x has writers, none below p3, and no initial row: for a reader at p3 its latest visible version is
   *  init's, absent, at every level (the birth half of the rule above, one key at a time). */
  unborn(x: number, p3: number): boolean {
    return this.from !== Number.POSITIVE_INFINITY && this.#birth(x) >= p3;
  }

  /** The candidates that can be neither absent nor deleted for a reader at p3 that sees everything below `bound`,
   *  ascending (for a long list, a view of a scratch array valid until the next call). A reader with no bound
   *  (RC, RA, CC: 0) gets the candidates as they are. */
  of(candidates: Int32Array, p3: number, bound: number): Int32Array {
    if (bound === 0 || candidates.length < this.from) return candidates;
    let index = this.#index.get(candidates);
    if (!index) this.#index.set(candidates, (index = this.#lifetimes(candidates)));
    return index.overlapping(bound, p3, this.#found);
  }

  /** Position of x's first version: 0 with an initial row (or no writer), else its first writer's. */
  #birth(x: number): number {
    const { start, at } = this.writers;
    const init = this.model.initRow[x];
    return (init !== undefined && init !== null) || start[x] === start[x + 1] ? 0 : at[start[x]];
  }

  #lifetimes(candidates: Int32Array): Lifetimes {
    const { model } = this;
    const { start, ids, at } = this.writers;
    const m = candidates.length;
    const births = new Int32Array(m),
      deaths = new Int32Array(m);
    for (let i = 0; i < m; i++) {
      const x = candidates[i];
      births[i] = this.#birth(x);
      const last = start[x + 1] - 1;
      const row = last < start[x] ? undefined : model.writes[ids[last]].get(x);
      deaths[i] = last >= start[x] && (row === null || row === undefined) ? at[last] : NEVER;
    }
    return new Lifetimes(candidates, births, deaths);
  }
}

/**
 * Keys with a lifetime [birth, death]: those whose lifetime overlaps a window [from, to) (birth < to, death ≥
 * from), through the births sorted and a max-segment tree over the deaths in birth order.
 */
export class Lifetimes {
  /** Keys by ascending birth. */
  readonly #keys: Int32Array;
  readonly #births: Float64Array;
  /** Max-segment tree over the deaths in birth order: leaves at [size, size + m), -1 past m. */
  readonly #tree: Int32Array;
  readonly #size: number;
  #count = 0;

  constructor(keys: Int32Array, births: Int32Array, deaths: Int32Array) {
    const m = keys.length;
    const order = Array.from({ length: m }, (_, i) => i).sort((a, b) => births[a] - births[b]);
    let size = 1;
    while (size < m) size <<= 1;
    this.#size = size;
    this.#keys = new Int32Array(m);
    this.#births = new Float64Array(m);
    const tree = (this.#tree = new Int32Array(2 * size).fill(-1));
    for (let j = 0; j < m; j++) {
      this.#keys[j] = keys[order[j]];
      this.#births[j] = births[order[j]];
      tree[size + j] = deaths[order[j]];
    }
    for (let node = size - 1; node >= 1; node--) tree[node] = Math.max(tree[2 * node], tree[2 * node + 1]);
  }

  /** The keys whose lifetime overlaps [from, to), ascending: a view of `out.keys` (grown when too short). */
  overlapping(from: number, to: number, out: { keys: Int32Array }): Int32Array {
    this.#count = 0;
    // born before `to`: a prefix in birth order
    this.#visit(lowerBound(this.#births, to), from, 1, 0, this.#size, out);
    const found = out.keys.subarray(0, this.#count);
    found.sort();
    return found;
  }

  /** Reports the leaves of `node` (covering [l, l + width)) below `lo` whose death is at least `from`. */
  #visit(lo: number, from: number, node: number, l: number, width: number, out: { keys: Int32Array }): void {
    if (l >= lo || this.#tree[node] < from) return;
    if (width === 1) {
      if (this.#count === out.keys.length) {
        const grown = new Int32Array(this.#count * 2);
        grown.set(out.keys);
        out.keys = grown;
      }
      out.keys[this.#count++] = this.#keys[l];
      return;
    }
    const half = width >> 1;
    this.#visit(lo, from, 2 * node, l, half, out);
    this.#visit(lo, from, 2 * node + 1, l + half, half, out);
  }
}
