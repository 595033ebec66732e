/**
 * Consistent-prefix search (paper Algorithm 4, Definition 10, Table 1; docs/semantics.md §4.5) on a conflict-free
 * extension whose pco is saturated.
 *
 * A prefix P is a pco-closed set of transactions placed first in the commit order, plus, when some
 * transaction is SI, the last writer M_P(x) of each key. Adding t to P (P' = P ∪ {t}) is allowed iff
 *   1. every pco-predecessor of t is in P;
 *   2. for every pending reader t3 ∉ P' with a read r of key x from t1 ∈ P, where t writes x and t ≠ t1:
 *      vis(t, r) is false under co̅ = pco ∪ (P × {t}) ∪ (P' × pending). Everything placed precedes everything
 *      pending, so visibility of t through a later t4 (PC's prefix, SER) is decided now: under PC/SI, t is
 *      visible iff some direct so/wr-predecessor of t3 is not in P (it will come after t);
 *   3. (SI, Conflict) if t writes a key that a pending SI reader t3 also writes, every transaction of P' is
 *      now Conflict-visible to t3, so for each read of t3 of key x from t1 ∈ P', t1 must be M_P'(x).
 * Failed prefixes are memoized on the set (and M_P over keys SI readers read, when any transaction is SI).
 *
 *   Relations (saturated, acyclic) -> DFS over prefixes -> commit order | undefined
 */
import { PC, SER, SI } from '../levels.js';
import { INIT } from '../model/model.js';
import type { Relations } from '../model/relations.js';
import { newSet, setAdd, setHas } from '../model/order.js';
import type { WritePartners } from '../model/write-partners.js';
import { memoryStage, type Budget } from '../budget.js';

export interface PrefixStats {
  prefixes: number;
  memoHits: number;
}

/** Where a failed search got deepest, and why no transaction could commit next there (for explanations). */
export interface StuckPoint {
  placed: number[];
  blocked: { txn: number; reason: BlockReason }[];
}

/** Why a transaction cannot commit next (transaction and key numbers of the model): it must follow `after`; a
 *  pending `reader` read `key` from `version`, already committed, and would see this write; a pending SI `reader`
 *  would see everything committed, but read `key` from `version` while `later` wrote it since; or every prefix it
 *  leads to failed already. `explain/explain.ts` says each in words. */
export type BlockReason =
  | { why: 'forced-order'; after: number }
  | { why: 'visible-writer'; reader: number; key: number; version: number }
  | { why: 'stale-snapshot'; reader: number; key: number; version: number; later: number }
  | { why: 'explored' };

/** The pending reader whose read keeps a transaction from committing next, when one does (explain/cases.ts looks for
 *  two transactions that block each other). */
export function blockingReader(reason: BlockReason): number | undefined {
  return reason.why === 'visible-writer' || reason.why === 'stale-snapshot' ? reason.reader : undefined;
}

export function explorePrefixes(
  rel: Relations,
  partners: WritePartners,
  budget: Budget,
  stats: PrefixStats,
  stuck?: StuckPoint,
): number[] | undefined {
  memoryStage('searching for a commit order');
  const { model, pco } = rel;
  const { n, txns, reads, soPrev } = model;
  const words = pco.words;
  const pred = pco.predecessors();
  const level = Int32Array.from(txns, (t) => t.level);
  const hasSI = txns.some((t, i) => i !== INIT && t.level === SI);

  // Direct so/wr predecessors of each transaction (PC and SI prefix visibility).
  const direct = rel.wrPred.map((s) => s.slice());
  for (let t = 1; t < n; t++) if (soPrev[t] >= 0) setAdd(direct[t], soPrev[t]);

  // Triples by reader and by writer read from; the prefix search keeps, for each key, the "active" triples
  // (writer read from in P, reader pending): only those can block a writer of the key (conditions 2 and 3).
  const triplesOfTxn: number[][] = Array.from({ length: n }, () => []);
  const triplesFrom: number[][] = Array.from({ length: n }, () => []);
  rel.triples.forEach((tr, id) => {
    triplesOfTxn[reads[tr.read].txn].push(id);
    triplesFrom[tr.from].push(id);
  });
  const tripleReader = Int32Array.from(rel.triples, (tr) => reads[tr.read].txn);
  const tripleKey = Int32Array.from(rel.triples, (tr) => tr.key);
  const tripleFrom = Int32Array.from(rel.triples, (tr) => tr.from);
  // Keys whose last writer is part of the memo key: read by an SI reader and written by two transactions or
  // more (with one writer t, M_P(x) is t iff t ∈ P: P already says it).
  const memoKeys: number[] = [];
  if (hasSI) {
    const seenKeys = new Set<number>();
    for (const tr of rel.triples)
      if (level[reads[tr.read].txn] === SI && !seenKeys.has(tr.key)) {
        seenKeys.add(tr.key);
        if (model.writersOf[tr.key].length >= 2) memoKeys.push(tr.key);
      }
  }

  // Sessions as contiguous ranges of dense ids.
  const sessionStart: number[] = [];
  const sessionEnd: number[] = [];
  for (let t = 1; t < n; t++) {
    if (t === 1 || txns[t].session !== txns[t - 1].session) {
      sessionStart.push(t);
      sessionEnd.push(t);
    }
    sessionEnd[sessionEnd.length - 1] = t + 1;
  }
  const next = sessionStart.slice();
  const sessionOf = new Int32Array(n).fill(-1);
  sessionStart.forEach((s, i) => {
    for (let t = s; t < sessionEnd[i]; t++) sessionOf[t] = i;
  });
  const commitTime = (t: number) => txns[t].end ?? txns[t].begin ?? t;

  const P = newSet(n);
  setAdd(P, INIT);
  const lastWriter = new Int32Array(model.keys.length); // INIT = 0
  const placed: number[] = [INIT];
  const undoKeys: number[] = [];
  const undoWriters: number[] = [];
  const undoMarks: number[] = [];
  const seen = new Set<string>();

  const inP = (t: number) => setHas(P, t);

  // Active triples per key (writer read from in P, reader not in P), as swap-remove lists with positions.
  const active: number[][] = [];
  const activePos = new Int32Array(rel.triples.length).fill(-1);
  // For pending SI readers: how many of their active triples read a version that is no longer the last one
  // placed (M_P(x) ≠ t1); the readers with such a stale read, as a swap-remove list.
  const stale = new Int32Array(n);
  const staleReaders: number[] = [];
  const stalePos = new Int32Array(n).fill(-1);
  /** Swap-remove lists: `pos[x]` is x's index in its list, -1 when in none. */
  const listAdd = (list: number[], pos: Int32Array, x: number) => {
    pos[x] = list.length;
    list.push(x);
  };
  const listRemove = (list: number[], pos: Int32Array, x: number) => {
    const last = list.pop()!;
    if (last !== x) {
      list[pos[x]] = last;
      pos[last] = pos[x];
    }
    pos[x] = -1;
  };
  const staleInc = (t3: number) => {
    if (stale[t3]++ === 0) listAdd(staleReaders, stalePos, t3);
  };
  const staleDec = (t3: number) => {
    if (--stale[t3] === 0) listRemove(staleReaders, stalePos, t3);
  };
  const activate = (id: number) => {
    const key = tripleKey[id];
    listAdd((active[key] ??= []), activePos, id);
    const t3 = tripleReader[id];
    if (level[t3] === SI && lastWriter[key] !== tripleFrom[id]) staleInc(t3);
  };
  const deactivate = (id: number) => {
    const key = tripleKey[id];
    listRemove(active[key], activePos, id);
    const t3 = tripleReader[id];
    if (level[t3] === SI && lastWriter[key] !== tripleFrom[id]) staleDec(t3);
  };
  for (const id of triplesFrom[INIT]) if (tripleReader[id] !== INIT) activate(id);

  /** Condition 2 for one active triple and a writer t of its key: vis(t, r) under the prefix. Only PC/SI and
   *  SER depend on the prefix; RC, RA and CC visibility is the same under any commit order (Relations.visible). */
  const visibleToRead = (t: number, id: number): boolean => {
    const t3 = tripleReader[id];
    switch (level[t3]) {
      case PC:
      case SI: {
        const d = direct[t3];
        for (let w = 0; w < words; w++) if ((d[w] & ~P[w]) !== 0) return true;
        return false;
      }
      case SER:
        return true;
      default:
        return rel.visible(t, reads[rel.triples[id].read], level[t3], partners);
    }
  };

  const allowed = (t: number): boolean => {
    const row = t * words;
    for (let w = 0; w < words; w++) if ((pred[row + w] & ~P[w]) !== 0) return false;
    const writes = model.writes[t];
    for (const key of writes.keys()) {
      const list = active[key];
      if (list === undefined) continue;
      for (const id of list) {
        const t3 = tripleReader[id];
        if (t3 === t) continue;
        if (visibleToRead(t, id)) return false;
        // 3, on a key t writes: t becomes M_P'(x) while t3 read an earlier version.
        if (level[t3] === SI && partners.share(t, t3)) return false;
      }
    }
    // 3, on the other keys: a pending SI reader that t would make see everything already read a stale version.
    for (const t3 of staleReaders) if (t3 !== t && partners.share(t, t3)) return false;
    return true;
  };

  /** The reason allowed(t) is false, as data (same checks, slow path). */
  const whyBlocked = (t: number): BlockReason => {
    for (let u = 0; u < n; u++)
      if (setHas(pred.subarray(t * words, (t + 1) * words), u) && !inP(u)) return { why: 'forced-order', after: u };
    const writes = model.writes[t];
    for (const key of writes.keys()) {
      for (const id of rel.triplesOfKey.get(key) ?? []) {
        const t3 = tripleReader[id];
        const t1 = tripleFrom[id];
        if (t3 === t || t1 === t || inP(t3) || !inP(t1)) continue;
        if (visibleToRead(t, id)) return { why: 'visible-writer', reader: t3, key, version: t1 };
      }
    }
    for (let t3 = 1; t3 < n; t3++) {
      if (t3 === t || inP(t3) || level[t3] !== SI || !partners.share(t, t3)) continue;
      for (const id of triplesOfTxn[t3]) {
        const t1 = tripleFrom[id];
        if (t1 !== t && !inP(t1)) continue;
        const key = tripleKey[id];
        const last = writes.has(key) ? t : lastWriter[key];
        if (last !== t1) return { why: 'stale-snapshot', reader: t3, key, version: t1, later: last };
      }
    }
    return { why: 'explored' };
  };
  let deepest = 0;

  const apply = (t: number): void => {
    for (const id of triplesOfTxn[t]) if (activePos[id] >= 0) deactivate(id);
    setAdd(P, t);
    placed.push(t);
    next[sessionOf[t]]++;
    undoMarks.push(undoKeys.length);
    for (const key of model.writes[t].keys()) {
      const old = lastWriter[key];
      // Every active triple of the key reads a writer in P, now overwritten by t: stale from here on.
      for (const id of active[key] ?? []) {
        const t3 = tripleReader[id];
        if (level[t3] === SI && tripleFrom[id] === old) staleInc(t3);
      }
      undoKeys.push(key);
      undoWriters.push(old);
      lastWriter[key] = t;
    }
    for (const id of triplesFrom[t]) if (!inP(tripleReader[id])) activate(id);
  };
  const undo = (t: number): void => {
    for (const id of triplesFrom[t]) if (activePos[id] >= 0) deactivate(id);
    const mark = undoMarks.pop()!;
    while (undoKeys.length > mark) {
      const key = undoKeys.pop()!;
      const old = undoWriters.pop()!;
      for (const id of active[key] ?? []) {
        const t3 = tripleReader[id];
        if (level[t3] === SI && tripleFrom[id] === old) staleDec(t3);
      }
      lastWriter[key] = old;
    }
    P[t >>> 5] &= ~(1 << (t & 31));
    placed.pop();
    next[sessionOf[t]]--;
    for (const id of triplesOfTxn[t]) if (inP(tripleFrom[id])) activate(id);
  };
  // The memo key: P's words then M_P over memoKeys, packed into one flat string (4 bytes per entry, latin1), not
  // concatenated piece by piece (thousands of short-lived rope nodes per prefix were most of the GC time).
  const keyWords = new Int32Array(words + memoKeys.length);
  const keyBytes = Buffer.from(keyWords.buffer);
  const memoKey = (): string => {
    keyWords.set(P);
    for (let i = 0; i < memoKeys.length; i++) keyWords[words + i] = lastWriter[memoKeys[i]];
    return keyBytes.toString('latin1');
  };
  const candidates = (): number[] => {
    const list: number[] = [];
    for (let s = 0; s < next.length; s++) if (next[s] < sessionEnd[s]) list.push(next[s]);
    list.sort((a, b) => commitTime(a) - commitTime(b) || a - b);
    return list;
  };

  interface Frame {
    cands: number[];
    i: number;
    t: number;
  }
  // Memo keys are built only once a prefix has failed (a search that never backtracks builds none).
  const stack: Frame[] = [{ cands: candidates(), i: 0, t: INIT }];
  while (stack.length > 0) {
    if (placed.length === n) return placed.slice(1);
    const frame = stack[stack.length - 1];
    if (frame.i < frame.cands.length) {
      const t = frame.cands[frame.i++];
      budget.tick();
      if (!allowed(t)) continue;
      apply(t);
      if (seen.size > 0 && seen.has(memoKey())) {
        stats.memoHits++;
        undo(t);
        continue;
      }
      stats.prefixes++;
      stack.push({ cands: candidates(), i: 0, t });
    } else {
      if (stuck && placed.length > deepest) {
        deepest = placed.length;
        stuck.placed = placed.slice(1);
        stuck.blocked = frame.cands.map((t) => ({ txn: t, reason: whyBlocked(t) }));
      }
      stack.pop();
      if (frame.t !== INIT) {
        seen.add(memoKey());
        undo(frame.t);
      }
    }
  }
  return undefined;
}
