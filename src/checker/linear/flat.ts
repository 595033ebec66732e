/**
 * The model's reads and writes as flat typed arrays (compressed rows), built in one pass: the linear check walks
 * them several times, and on a history of a million transactions every walk over the model's objects (a read
 * event, its arrays, a Map of writes per transaction, scattered over gigabytes of heap) costs a cache miss per
 * object. Read ids are the model's (sorted by transaction, then program order), so a transaction's reads are
 * the contiguous range [readStart[t], readStart[t + 1]).
 */
import type { CheckModel } from '../model/model.js';
import type { Arena } from './arena.js';

export interface Flat {
  readStart: Int32Array;
  /** The (key, writer read from) pairs of read r: [tripleStart[r], tripleStart[r + 1]). */
  tripleStart: Int32Array;
  /** The model's own fromKey and fromTxn (read-only). */
  tripleKey: Int32Array;
  tripleFrom: Int32Array;
  /** Keys each transaction writes, ascending: [writeStart[t], writeStart[t + 1]). */
  writeStart: Int32Array;
  writeKey: Int32Array;
  level: Uint8Array;
  /** Above this many writers read from, a transaction's per-key lookups go through WritersByKey. */
  manyWriters: number;
  /**
   * Keys with more than HOT_KEY_WRITERS writers (1) and the others (0). In verification, for a key with few writers,
   * "which writers a transaction read from wrote it" is answered by scanning the key's writers for the transaction's
   * stamp, with no index, and WritersByKey indexes only the hot keys, which a writer writes a few of at most. The
   * forced edges (constraints.ts) index every key read (WritersByKey's `all`): there a transaction's read keys are
   * all asked about once, and the writes of its writers are fewer than the writers of those keys.
   */
  hot: Uint8Array;
}

export function flatten(
  model: CheckModel,
  arena: Arena,
  manyWriters = MANY_WRITERS,
  hotKeyWriters = HOT_KEY_WRITERS,
): Flat {
  const { n, reads, readsOf, writes, txns } = model;
  const readStart = arena.int32(n + 1);
  for (let t = 0; t < n; t++) readStart[t + 1] = readStart[t] + readsOf[t].length;
  // the model keeps the triples in the order of the read ids: the flat view reads them where they are
  const tripleStart = arena.int32(reads.length + 1);
  for (let r = 0; r < reads.length; r++) {
    const read = reads[r];
    if (read.id !== r || read.from !== tripleStart[r]) throw new Error('model reads are not numbered in order');
    tripleStart[r + 1] = read.from + read.fromCount;
  }
  const tripleKey = model.fromKey;
  const tripleFrom = model.fromTxn;
  const writeStart = arena.int32(n + 1);
  for (let t = 0; t < n; t++) writeStart[t + 1] = writeStart[t] + writes[t].size;
  const writeKey = arena.int32(writeStart[n]);
  for (let t = 0; t < n; t++) {
    let at = writeStart[t];
    for (const x of writes[t].keys()) writeKey[at++] = x;
    writeKey.subarray(writeStart[t], at).sort();
  }
  const level = arena.uint8(n);
  for (let t = 0; t < n; t++) level[t] = txns[t].level;
  const hot = arena.uint8(model.writersOf.length);
  for (let x = 0; x < hot.length; x++) if (model.writersOf[x].length > hotKeyWriters) hot[x] = 1;
  return { readStart, tripleStart, tripleKey, tripleFrom, writeStart, writeKey, level, manyWriters, hot };
}

/** Whether transaction t writes key x. */
export function writesKey(flat: Flat, t: number, x: number): boolean {
  let lo = flat.writeStart[t],
    hi = flat.writeStart[t + 1];
  const keys = flat.writeKey;
  if (hi - lo <= 8) {
    for (; lo < hi; lo++) if (keys[lo] === x) return true;
    return false;
  }
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (keys[mid] < x) lo = mid + 1;
    else hi = mid;
  }
  return lo < flat.writeStart[t + 1] && keys[lo] === x;
}

/**
 * For a transaction that read from many writers (TPC-C's StockLevel reads hundreds of rows from hundreds of
 * transactions), which of those writers wrote each key: one pass over their writes, instead of asking each writer
 * about each key read (quadratic per transaction). Per key a list threaded through typed arrays, valid for the
 * latest build only (a build number per key says which lists are current): nothing is allocated per build, which
 * at a million reads is the difference between a pass and a garbage collector's afternoon.
 */
export class WritersByKey {
  private built = 0;
  private readonly stamp: Int32Array;
  private readonly head: Int32Array;
  private next: Int32Array;
  private who: Int32Array;
  private size = 0;
  private onlyRead = false;
  private all = false;

  constructor(
    keys: number,
    private readonly arena: Arena,
  ) {
    this.stamp = arena.int32(keys);
    this.head = arena.int32(keys);
    this.next = arena.int32(1024);
    this.who = arena.int32(1024);
  }

  /**
   * Indexes the writes of `writers` (init skipped) to hot keys, or with `all` to every key. With `onlyReadBy`,
   * only the keys that transaction read from other transactions are indexed (the others are then reported as
   * written by none: ask only about those).
   */
  build(flat: Flat, writers: readonly number[], onlyReadBy = -1, all = false): void {
    const b = ++this.built;
    const { stamp, head } = this;
    this.size = 0;
    this.onlyRead = onlyReadBy >= 0;
    this.all = all;
    if (onlyReadBy >= 0) {
      // a read key is marked current with an empty list; other keys stay stale and are skipped below
      let hot = 0;
      for (
        let j = flat.tripleStart[flat.readStart[onlyReadBy]];
        j < flat.tripleStart[flat.readStart[onlyReadBy + 1]];
        j++
      ) {
        stamp[flat.tripleKey[j]] = b;
        head[flat.tripleKey[j]] = -1;
        hot += flat.hot[flat.tripleKey[j]];
      }
      if (hot === 0 && !all) return; // only hot keys are indexed: none of those read, nothing to index
    }
    this.extend(flat, writers, 0);
  }

  /**
   * Adds writers[from..] to the current build: a list of writers that only grows (verify.ts adds the witnesses it
   * chooses, statement after statement) is indexed once in all, not once per growth.
   */
  extend(flat: Flat, writers: readonly number[], from: number): void {
    const b = this.built;
    const { stamp, head } = this;
    for (let i = from; i < writers.length; i++) {
      const w = writers[i];
      if (w === 0) continue;
      for (let k = flat.writeStart[w]; k < flat.writeStart[w + 1]; k++) {
        const x = flat.writeKey[k];
        if (flat.hot[x] === 0 && !this.all) continue;
        if (stamp[x] !== b) {
          if (this.onlyRead) continue;
          stamp[x] = b;
          head[x] = -1;
        }
        if (this.size === this.who.length) {
          this.next = this.arena.doubled(this.next);
          this.who = this.arena.doubled(this.who);
        }
        const e = this.size++;
        this.who[e] = w;
        this.next[e] = head[x];
        head[x] = e;
      }
    }
  }

  /** The first entry of x's list (-1: none; x hot, or any with `all`); walk with `nextOf`, the writer `writerOf`. */
  first(x: number): number {
    return this.stamp[x] === this.built ? this.head[x] : -1;
  }
  nextOf(e: number): number {
    return this.next[e];
  }
  writerOf(e: number): number {
    return this.who[e];
  }
}

/** Above this many writers read from, per-key lookups go through WritersByKey (tests lower it to cover that path). */
export const MANY_WRITERS = 8;
/** Above this many writers a key is hot: indexed by WritersByKey rather than scanned (tests vary it). */
export const HOT_KEY_WRITERS = 32;
