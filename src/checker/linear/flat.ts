/**
 * The model's reads and writes as flat typed arrays (compressed rows), built in one pass: the linear check walks
 * them several times, and on a history of a million transactions every walk over the model's objects (a read
 * event, its arrays, a Map of writes per transaction, scattered over gigabytes of heap) costs a cache miss per
 * object. Read ids are the model's (sorted by transaction, then program order), so a transaction's reads are
 * the contiguous range [readStart[t], readStart[t + 1]).
 */
import type { CheckModel } from '../model.js';

export interface Flat {
  readStart: Int32Array;
  /** The (key, writer read from) pairs of read r: [tripleStart[r], tripleStart[r + 1]). */
  tripleStart: Int32Array;
  tripleKey: Int32Array;
  tripleFrom: Int32Array;
  /** Keys each transaction writes, ascending: [writeStart[t], writeStart[t + 1]). */
  writeStart: Int32Array;
  writeKey: Int32Array;
  level: Uint8Array;
}

export function flatten(model: CheckModel): Flat {
  const { n, reads, readsOf, writes, txns } = model;
  const readStart = new Int32Array(n + 1);
  for (let t = 0; t < n; t++) readStart[t + 1] = readStart[t] + readsOf[t].length;
  const tripleStart = new Int32Array(reads.length + 1);
  let triples = 0;
  for (let r = 0; r < reads.length; r++) {
    if (reads[r].id !== r) throw new Error('model reads are not numbered in order');
    triples += reads[r].fromKeys.length;
    tripleStart[r + 1] = triples;
  }
  const tripleKey = new Int32Array(triples);
  const tripleFrom = new Int32Array(triples);
  for (let r = 0, at = 0; r < reads.length; r++) {
    const { fromKeys, fromTxns } = reads[r];
    for (let i = 0; i < fromKeys.length; i++, at++) {
      tripleKey[at] = fromKeys[i];
      tripleFrom[at] = fromTxns[i];
    }
  }
  const writeStart = new Int32Array(n + 1);
  for (let t = 0; t < n; t++) writeStart[t + 1] = writeStart[t] + writes[t].size;
  const writeKey = new Int32Array(writeStart[n]);
  for (let t = 0; t < n; t++) {
    let at = writeStart[t];
    for (const x of writes[t].keys()) writeKey[at++] = x;
    writeKey.subarray(writeStart[t], at).sort();
  }
  const level = Uint8Array.from(txns, (t) => t.level);
  return { readStart, tripleStart, tripleKey, tripleFrom, writeStart, writeKey, level };
}

/** Whether transaction t writes key x. */
export function writesKey(flat: Flat, t: number, x: number): boolean {
  let lo = flat.writeStart[t], hi = flat.writeStart[t + 1];
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
 * about each key read (quadratic per transaction). `into` is cleared and refilled.
 */
export function writersByKey(flat: Flat, writers: readonly number[], into: Map<number, number[]>): Map<number, number[]> {
  into.clear();
  for (const w of writers) {
    if (w === 0) continue;
    for (let k = flat.writeStart[w]; k < flat.writeStart[w + 1]; k++) {
      const x = flat.writeKey[k];
      const list = into.get(x);
      if (list) list.push(w);
      else into.set(x, [w]);
    }
  }
  return into;
}

/** Above this many writers read from, per-key lookups go through writersByKey. */
export const MANY_WRITERS = 8;
