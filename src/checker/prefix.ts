/**
 * Consistent-prefix search (paper Algorithm 4, Definition 10, Table 1; semantics.md §4.5) on a conflict-free
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
import { PC, SER, SI, RC, RA, CC } from './levels.js';
import { INIT } from './model.js';
import type { Relations } from './relations.js';
import { newSet, setAdd, setHas } from './order.js';

export class BudgetExceeded extends Error {
  constructor() {
    super('search budget exceeded');
  }
}

/** A deadline (and an optional step limit) shared by every stage of one check. */
export class Budget {
  steps = 0;
  constructor(readonly deadline: number = Infinity, readonly maxSteps: number = Infinity) {}
  tick(): void {
    this.steps++;
    if (this.steps > this.maxSteps) throw new BudgetExceeded();
    if ((this.steps & 1023) === 0 && Date.now() > this.deadline) throw new BudgetExceeded();
  }

  /** Checks the clock now: before and inside expensive steps (a saturation pass can take seconds). */
  checkNow(): void {
    if (Date.now() > this.deadline) throw new BudgetExceeded();
  }
}

export interface PrefixStats {
  prefixes: number;
  memoHits: number;
}

/** Where a failed search got deepest, and why no transaction could commit next there (for explanations). */
export interface StuckPoint {
  placed: number[];
  blocked: { txn: number; reason: string }[];
}

export function explorePrefixes(rel: Relations, sharesWrite: number[][], budget: Budget, stats: PrefixStats, stuck?: StuckPoint): number[] | undefined {
  const { model, pco } = rel;
  const { n, txns, reads, soPrev } = model;
  const words = pco.words;
  const pred = pco.predecessors();
  const level = Int32Array.from(txns, (t) => t.level);
  const hasSI = txns.some((t, i) => i !== INIT && t.level === SI);

  // Direct so/wr predecessors of each transaction (PC and SI prefix visibility).
  const direct = rel.wrPred.map((s) => s.slice());
  for (let t = 1; t < n; t++) if (soPrev[t] >= 0) setAdd(direct[t], soPrev[t]);

  // For each t: the triples where t writes the key read and is neither the reader nor the writer read from.
  const writerTriples: number[][] = Array.from({ length: n }, () => []);
  const triplesOfTxn: number[][] = Array.from({ length: n }, () => []);
  rel.triples.forEach((tr, id) => {
    const t3 = reads[tr.read].txn;
    triplesOfTxn[t3].push(id);
  });
  for (let t = 1; t < n; t++) {
    for (const key of model.writes[t].keys()) {
      for (const id of rel.triplesOfKey.get(key) ?? []) {
        const tr = rel.triples[id];
        if (tr.from !== t && reads[tr.read].txn !== t) writerTriples[t].push(id);
      }
    }
  }
  // For each t, the SI readers that write a key t writes (sharesWrite is filled for SI transactions only).
  const siPartners: number[][] = Array.from({ length: n }, () => []);
  for (let t3 = 1; t3 < n; t3++) {
    if (level[t3] !== SI || triplesOfTxn[t3].length === 0) continue;
    for (const t of sharesWrite[t3]) siPartners[t].push(t3);
  }
  // Keys whose last writer is part of the memo key: read by an SI reader and written by two transactions or
  // more (with one writer t, M_P(x) is t iff t ∈ P: P already says it).
  const memoKeys: number[] = [];
  if (hasSI) {
    const seenKeys = new Set<number>();
    for (const tr of rel.triples) if (level[reads[tr.read].txn] === SI && !seenKeys.has(tr.key)) {
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

  const allowed = (t: number): boolean => {
    const row = t * words;
    for (let w = 0; w < words; w++) if ((pred[row + w] & ~P[w]) !== 0) return false;
    for (const id of writerTriples[t]) {
      const tr = rel.triples[id];
      const r = reads[tr.read];
      const t3 = r.txn;
      if (inP(t3) || !inP(tr.from)) continue;
      let visible: boolean;
      switch (level[t3]) {
        case RC: {
          const first = rel.rcFirst[t3].get(t);
          visible = rel.soBefore(t, t3) || (first !== undefined && first < r.po);
          break;
        }
        case RA:
          visible = rel.soBefore(t, t3) || setHas(rel.wrPred[t3], t);
          break;
        case CC:
          visible = rel.hb.has(t, t3);
          break;
        case PC:
        case SI: {
          const d = direct[t3];
          visible = false;
          for (let w = 0; w < words; w++) if ((d[w] & ~P[w]) !== 0) {
            visible = true;
            break;
          }
          break;
        }
        case SER:
          visible = true;
          break;
        default:
          throw new Error(`unknown level ${level[t3]}`);
      }
      if (visible) return false;
    }
    const writes = model.writes[t];
    for (const t3 of siPartners[t]) {
      if (inP(t3)) continue;
      for (const id of triplesOfTxn[t3]) {
        const tr = rel.triples[id];
        const t1 = tr.from;
        if (t1 !== t && !inP(t1)) continue;
        const last = writes.has(tr.key) ? t : lastWriter[tr.key];
        if (last !== t1) return false;
      }
    }
    return true;
  };

  const name = (t: number) => txns[t].id;
  const keyName = (k: number) => {
    const info = model.keys[k];
    return `${model.tables[info.table].schema.name}(${info.values.map((v) => JSON.stringify(v)).join(', ')})`;
  };
  /** The reason allowed(t) is false, in words (same checks, slow path). */
  const whyBlocked = (t: number): string => {
    for (let u = 0; u < n; u++) if (setHas(pred.subarray(t * words, (t + 1) * words), u) && !inP(u)) return `must commit after ${name(u)}, which has not committed yet (forced order)`;
    for (const id of writerTriples[t]) {
      const tr = rel.triples[id];
      const r = reads[tr.read];
      const t3 = r.txn;
      if (inP(t3) || !inP(tr.from)) continue;
      const saved = allowedTriple(t, id);
      if (!saved) return `${name(t3)} (${['RC', 'RA', 'CC', 'PC', 'SI', 'SER'][level[t3]]}) read ${keyName(tr.key)} from ${name(tr.from)}, which already committed; ${name(t)} also writes ${keyName(tr.key)} and would be visible to that read, so it would have had to commit before ${name(tr.from)}`;
    }
    const writes = model.writes[t];
    for (const t3 of siPartners[t]) {
      if (inP(t3)) continue;
      for (const id of triplesOfTxn[t3]) {
        const tr = rel.triples[id];
        if (tr.from !== t && !inP(tr.from)) continue;
        const last = writes.has(tr.key) ? t : lastWriter[tr.key];
        if (last !== tr.from) return `${name(t3)} (SI) writes a row ${name(t)} writes, so everything committed so far is visible to it, but it read ${keyName(tr.key)} from ${name(tr.from)} while ${name(last)} wrote it later`;
      }
    }
    return 'every prefix it leads to was already explored and failed';
  };
  const allowedTriple = (t: number, id: number): boolean => {
    const tr = rel.triples[id];
    const r = reads[tr.read];
    const t3 = r.txn;
    switch (level[t3]) {
      case RC: {
        const first = rel.rcFirst[t3].get(t);
        return !(rel.soBefore(t, t3) || (first !== undefined && first < r.po));
      }
      case RA:
        return !(rel.soBefore(t, t3) || setHas(rel.wrPred[t3], t));
      case CC:
        return !rel.hb.has(t, t3);
      case PC:
      case SI: {
        const d = direct[t3];
        for (let w = 0; w < words; w++) if ((d[w] & ~P[w]) !== 0) return false;
        return true;
      }
      default:
        return false;
    }
  };
  let deepest = 0;

  const apply = (t: number): void => {
    setAdd(P, t);
    placed.push(t);
    next[sessionOf[t]]++;
    undoMarks.push(undoKeys.length);
    for (const key of model.writes[t].keys()) {
      undoKeys.push(key);
      undoWriters.push(lastWriter[key]);
      lastWriter[key] = t;
    }
  };
  const undo = (t: number): void => {
    P[t >>> 5] &= ~(1 << (t & 31));
    placed.pop();
    next[sessionOf[t]]--;
    const mark = undoMarks.pop()!;
    while (undoKeys.length > mark) lastWriter[undoKeys.pop()!] = undoWriters.pop()!;
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
    key: string;
  }
  const stack: Frame[] = [{ cands: candidates(), i: 0, t: INIT, key: '' }];
  while (stack.length > 0) {
    if (placed.length === n) return placed.slice(1);
    const frame = stack[stack.length - 1];
    if (frame.i < frame.cands.length) {
      const t = frame.cands[frame.i++];
      budget.tick();
      if (!allowed(t)) continue;
      apply(t);
      const key = memoKey();
      if (seen.has(key)) {
        stats.memoHits++;
        undo(t);
        continue;
      }
      stats.prefixes++;
      stack.push({ cands: candidates(), i: 0, t, key });
    } else {
      if (stuck && placed.length > deepest) {
        deepest = placed.length;
        stuck.placed = placed.slice(1);
        stuck.blocked = frame.cands.map((t) => ({ txn: t, reason: whyBlocked(t) }));
      }
      stack.pop();
      if (frame.t !== INIT) {
        seen.add(frame.key);
        undo(frame.t);
      }
    }
  }
  return undefined;
}
