/**
 * Whether one total commit order is a consistent execution (docs/semantics.md §2–§3, the definition itself), in
 * time about linear in the reads and with no n × n structure: the certificate of the linear check.
 *
 * With co given as positions (`pos`, a topological order of so ∪ wr):
 *   1. every read r of t3 of key x from t1: no writer t2 ∉ {t1, t3} of x with t1 <co t2 <co t3 is visible to r.
 *      Visible writers at each level: the session's latest writer of x before t3 (so), the writers t3 read from
 *      that write x (wr; at RC only through an earlier statement), at CC those that causally precede t3 (vector
 *      clocks), at PC/SI everything before the bound of search/prefix.ts/witness.ts (the latest of t3's so/wr
 *      predecessors, and at SI also the latest writer of a key t3 writes that commits before it), at SER
 *      everything before t3.
 *   2. every row a non-partial read did not return (and did not write itself) whose WHERE some version could
 *      satisfy: the co-latest version visible to the read hides it (deleted, absent, or not matching). That
 *      version is the witness (paper §5): it is already visible, so adding wr from it changes no visibility (at
 *      RC it is so-visible or read earlier; RA: so or wr; CC: hb; PC/SI: below the bound or so/wr; SER: before
 *      t3), and the axioms of step 1 hold for it by the choice of the latest. This is Theorem 5's canonical
 *      witness, and it is why the check needs no enumeration when the order is right.
 * A failure says only that this order does not work (the caller then searches); success proves consistency.
 * A row only init wrote whose initial version matches is a missing row under every order: reported as such.
 */
import { CC, PC, RC, SER, SI } from '../levels.js';
import { INIT, predicateHolds, type CheckModel, type ReadEvent } from '../model/model.js';
import type { Arena } from './arena.js';
import type { CandidateRows } from './candidate-rows.js';
import { CausalClocks, MAX_CLOCK_ENTRIES, type Chains } from './sessions.js';
import { WritersByKey, writesKey, type Flat } from './flat.js';
import { LiveRows } from './live-rows.js';

export type Verification =
  | { ok: true }
  | { ok: false; missingRow: true; read: number; key: number }
  | {
      ok: false;
      missingRow?: false;
      read: number;
      key: number;
      writer: number;
      from?: number;
      /** A writer after the reader whose version hides a row the read did not return: it might commit before it. */
      hider?: number;
      why: string;
      more?: OrderFailure[];
    };

/** Where an order failed: a reader and a writer that, in another order, might commit after it; or, for a row the
 *  read did not return, a `hider` that might commit before it. */
export interface OrderFailure {
  reader: number;
  writer: number;
  hider?: number;
}

/** Writers after a reader looked at for a version that hides a row it did not return (a repair hint). */
const HIDER_SCAN = 64;

/** Failures collected in one pass beyond the first (hints for the next candidate order, linear-check.ts). */
const MAX_FAILURES = 256;

/** Writers of each key sorted by commit position (CSR). */
export class KeyWriters {
  readonly start: Int32Array;
  readonly ids: Int32Array;
  readonly at: Int32Array;

  constructor(model: CheckModel, pos: Int32Array, arena: Arena) {
    const { writersOf } = model;
    const k = writersOf.length;
    // the same sizes in every repair round: one set of arrays for all of them
    const start = (this.start = arena.reused('key writers: start', k + 1));
    for (let x = 0; x < k; x++) start[x + 1] = start[x] + writersOf[x].length;
    const ids = (this.ids = arena.reused('key writers: ids', start[k]));
    const at = (this.at = arena.reused('key writers: at', start[k]));
    for (let x = 0; x < k; x++) {
      const list = writersOf[x].slice().sort((a, b) => pos[a] - pos[b]);
      for (let i = 0; i < list.length; i++) {
        ids[start[x] + i] = list[i];
        at[start[x] + i] = pos[list[i]];
      }
    }
  }

  /** Index (into ids/at) of the first writer of x at a position > p. */
  after(x: number, p: number): number {
    let lo = this.start[x],
      hi = this.start[x + 1];
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.at[mid] <= p) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }
}

/**
 * Transactions verified under an earlier candidate order whose verdict carries over to this one (linear-check.ts):
 * `verified[t] === 1` means "t passed under an order with the same prefix through t" (linear-check.ts's carryOver
 * clears the flags from the first position where a repaired order differs from the last). What verifyTxn decides for t3
 * depends only on the order up to and including t3: every writer it looks at to decide (the latest visible, the
 * bound of PC/SI, a later version that hides a row) is at a position below pos[t3], and the rest is the model's.
 * So a transaction flagged need not be checked again: it passes, as a full verification would find. Only passes
 * are kept: a failure is found again in every round, and its repair hint (a `hider`) may be a writer after pos[t3].
 * Not used when the history has CC transactions: their pass needs the witnesses every reader chose (verifyPass's
 * `witnesses`).
 */
export type Verified = Uint8Array;

/** Rounds of witness choices per transaction before the check gives up on this order (each adds a writer). */
const MAX_WITNESS_ROUNDS = 8;

/**
 * Checks the readers `pass` selects; returns the witnesses it had to add (beyond the canonical ones, which add no
 * visibility) as (writer, reader) pairs, so that the causal clocks of a later pass can include them.
 */
function verifyPass(
  model: CheckModel,
  flat: Flat,
  order: Int32Array | undefined,
  pos: Int32Array,
  kw: KeyWriters,
  chains: Chains,
  clocks: CausalClocks | undefined,
  extraOf: Map<number, number[]> | undefined,
  rows: CandidateRows,
  live: LiveRows,
  pass: (level: number) => boolean,
  witnesses: number[],
  arena: Arena,
  check: () => void,
  verified?: Verified,
): Verification {
  const { n, reads, txns, soPrev } = model;
  const { readStart, tripleStart, tripleKey, tripleFrom, writeStart, writeKey } = flat;
  const widenForCausality = flat.level.some((l, t) => t !== INIT && l === CC);
  // scratch of this pass, the same arrays for every pass and repair round (passes run one after another)
  const lastWriter = arena.reused('verify: last writer', model.keys.length, -1);
  const lastSession = arena.reused('verify: last session', model.keys.length, -1);
  const wrStamp = arena.reused('verify: wr stamp', n, -1);
  const rcStamp = arena.reused('verify: rc stamp', n, -1);
  const wrList: number[] = [];
  const rcLater: number[] = [];
  // Writers of each key among wrList when it is long, and the wrList length it was built for (every key: the
  // unreturned rows a read is checked on are asked about too).
  const byKey = new WritersByKey(model.keys.length, arena);
  let byKeyOf = -1;
  let first: Verification | undefined;
  // Session order (dense ids) when no causal clocks are kept; commit order when they are (built as it goes).
  for (let i = 1; i < n; i++) {
    if ((i & 1023) === 0) check();
    const t3 = order ? order[i] : i;
    clocks?.begin(t3, extraOf?.get(t3));
    if (pass(flat.level[t3]) && verified?.[t3] !== 1) {
      const failed = verifyTxn(t3);
      if (verified) verified[t3] = failed ? 0 : 1;
      if (failed) {
        // A row missing under every order ends the check; another failure is noted and the walk goes on, so
        // that the next candidate order can move every offending writer at once.
        if (failed.ok === false && failed.missingRow) return failed;
        if (first === undefined) first = failed;
        else if (first.ok === false && !first.missingRow)
          (first.more ??= []).push(
            failed.ok === false && !failed.missingRow
              ? { reader: t3, writer: failed.writer, hider: failed.hider }
              : { reader: t3, writer: INIT },
          );
        if ((first.ok === false && !first.missingRow ? (first.more?.length ?? 0) : 0) >= MAX_FAILURES) return first;
      }
    }
    for (let k = writeStart[t3]; k < writeStart[t3 + 1]; k++) {
      lastWriter[writeKey[k]] = t3;
      lastSession[writeKey[k]] = chains.of[t3];
    }
  }
  return first ?? { ok: true };

  function verifyTxn(t3: number): Verification | undefined {
    const level = flat.level[t3];
    const session = chains.of[t3];
    const p3 = pos[t3];
    wrList.length = 0;
    byKeyOf = -1;
    for (let j = tripleStart[readStart[t3]]; j < tripleStart[readStart[t3 + 1]]; j++) {
      const w = tripleFrom[j];
      if (wrStamp[w] !== t3) {
        wrStamp[w] = t3;
        wrList.push(w);
      }
    }
    // PC/SI: every transaction at a position below `bound` is visible (recomputed when a witness is added).
    let bound = 0;
    const computeBound = () => {
      if (level === PC || level === SI) {
        bound = pos[soPrev[t3]];
        for (const w of wrList) if (pos[w] > bound) bound = pos[w];
        if (level === SI) {
          for (let k = writeStart[t3]; k < writeStart[t3 + 1]; k++) {
            const x = writeKey[k];
            const i = kw.after(x, p3 - 1); // first writer at >= p3; the one before commits last before t3
            if (i > kw.start[x] && kw.at[i - 1] + 1 > bound) bound = kw.at[i - 1] + 1;
          }
        }
      } else if (level === SER) bound = p3;
    };
    /** The latest writer of x before t3 that is visible to the read being checked (INIT when none). */
    let best = INIT;
    let bestPos = 0;
    const consider = (t: number) => {
      if (pos[t] > bestPos && pos[t] < p3) {
        best = t;
        bestPos = pos[t];
      }
    };
    const latestVisible = (x: number): number => {
      best = INIT;
      bestPos = 0;
      if (bound > 0) {
        const i = kw.after(x, bound - 1) - 1; // the last writer at a position < bound
        if (i >= kw.start[x]) consider(kw.ids[i]);
      }
      if (lastSession[x] === session) consider(lastWriter[x]);
      if (level === CC) {
        for (let i = kw.after(x, p3 - 1) - 1; i >= kw.start[x] && kw.at[i] > bestPos; i--) {
          if (kw.ids[i] !== t3 && clocks!.precedes(kw.ids[i], t3)) {
            consider(kw.ids[i]);
            break;
          }
        }
      } else {
        if (wrList.length > flat.manyWriters && flat.hot[x] === 0) {
          // the key's writers before t3, latest first: the first that t3 read from (and, at RC, at an earlier
          // statement) is the latest visible one through wr
          for (let i = kw.after(x, p3 - 1) - 1; i >= kw.start[x] && kw.at[i] > bestPos; i--) {
            const w = kw.ids[i];
            if (wrStamp[w] === t3 && (level !== RC || rcStamp[w] === t3)) {
              consider(w);
              break;
            }
          }
        } else if (wrList.length > flat.manyWriters) {
          if (byKeyOf < 0) byKey.build(flat, wrList);
          else if (byKeyOf !== wrList.length) byKey.extend(flat, wrList, byKeyOf);
          byKeyOf = wrList.length;
          for (let e = byKey.first(x); e >= 0; e = byKey.nextOf(e))
            if (level !== RC || rcStamp[byKey.writerOf(e)] === t3) consider(byKey.writerOf(e));
        } else
          for (const w of wrList)
            if (w !== INIT && (level !== RC || rcStamp[w] === t3) && writesKey(flat, w, x)) consider(w);
      }
      return best;
    };
    for (let round = 0; ; round++) {
      if (round === MAX_WITNESS_ROUNDS) {
        const r = readStart[t3];
        return {
          ok: false,
          read: r,
          key: tripleKey[tripleStart[r]] ?? 0,
          writer: INIT,
          why: `the witnesses of ${txns[t3].id}'s unreturned rows did not settle in ${MAX_WITNESS_ROUNDS} rounds`,
        };
      }
      computeBound();
      let added = false;
      if (level === RC) for (const w of wrList) rcStamp[w] = -1;
      for (let ri = readStart[t3]; ri < readStart[t3 + 1]; ri++) {
        for (let j = tripleStart[ri]; j < tripleStart[ri + 1]; j++) {
          const x = tripleKey[j];
          const t1 = tripleFrom[j];
          const latest = latestVisible(x);
          if (latest !== t1 && pos[latest] > pos[t1]) {
            return {
              ok: false,
              read: ri,
              key: x,
              writer: latest,
              from: t1,
              why: `${txns[latest].id} wrote the row after ${txns[t1].id} in this order and is visible to the read`,
            };
          }
        }
        rcLater.length = 0;
        const r = reads[ri];
        if (!r.partial) {
          // PC, SI, SER: only the rows neither absent nor deleted below the bound (live-rows.ts) on a long list
          for (const x of live.of(rows.of(r), p3, bound)) {
            if (r.returned.has(x) || r.local.has(x)) continue;
            if (kw.start[x + 1] === kw.start[x]) {
              // no writer (the key's count from the dense index: a read's candidates are thousands of keys)
              const init = model.initRow[x];
              if (init !== undefined && predicateHolds(model, r, init, INIT))
                return { ok: false, missingRow: true, read: r.id, key: x };
              continue;
            }
            if (live.unborn(x, p3)) continue; // absent for the read at any level: latestVisible would give init
            const w = latestVisible(x);
            if (hides(model, r, x, w)) continue;
            // A later version before the reader that hides the row: the witness is then read from it (paper §5),
            // which makes it visible (and, at PC/SI, everything before it): the transaction is checked again.
            let later = -1;
            if (level !== SER) {
              for (let j = kw.after(x, pos[w]); j < kw.start[x + 1] && kw.at[j] < p3; j++) {
                if (kw.ids[j] !== t3 && hides(model, r, x, kw.ids[j])) {
                  later = kw.ids[j];
                  break;
                }
              }
            }
            if (later < 0) {
              // When w cannot commit after the reader (init, or the reader's session before it), the repair hint
              // is the first later version, not a later transaction of the reader's session, that hides the row.
              let hider: number | undefined;
              if (w === INIT || chains.of[w] === session) {
                const from = kw.after(x, p3);
                for (let j = from, end = Math.min(kw.start[x + 1], from + HIDER_SCAN); j < end; j++) {
                  const h = kw.ids[j];
                  if (chains.of[h] !== session && hides(model, r, x, h)) {
                    hider = h;
                    break;
                  }
                }
              }
              return {
                ok: false,
                read: r.id,
                key: x,
                writer: w,
                hider,
                why:
                  `the read did not return the row, but the latest version visible to it in this order ` +
                  `(${w === INIT ? 'init' : txns[w].id}) matches its WHERE, and no later version before it hides ` +
                  `the row`,
              };
            }
            witnesses.push(later, t3);
            if (level === RC) rcLater.push(later);
            else if (level === CC) {
              if (!clocks!.precedes(later, t3)) {
                clocks!.join(t3, later);
                added = true;
              }
            } else if (wrStamp[later] !== t3) {
              wrStamp[later] = t3;
              wrList.push(later);
              added = true;
            }
          }
          // With CC transactions about, the witness of every unreturned row (a conflict or not, docs/semantics.md
          // §3.3) is a wr edge that CC readers after t3 see causally: the latest visible version of every other
          // written row of the table is recorded for their clocks (it is the witness when it hides the row; when it
          // does not, the later version chosen above is, and was recorded there).
          if (widenForCausality && level !== CC) {
            for (const x of rows.keysOf(r.table)) {
              if (r.returned.has(x) || r.local.has(x) || model.writersOf[x].length === 0 || live.unborn(x, p3))
                continue;
              const w = latestVisible(x);
              if (w !== INIT && hides(model, r, x, w)) witnesses.push(w, t3);
            }
          }
        }
        if (level === RC) {
          for (let j = tripleStart[ri]; j < tripleStart[ri + 1]; j++) rcStamp[tripleFrom[j]] = t3;
          for (const w of rcLater) {
            rcStamp[w] = t3;
            if (wrStamp[w] !== t3) {
              wrStamp[w] = t3;
              wrList.push(w);
            }
          }
        }
      }
      if (!added) return undefined;
    }
  }
}

/** Whether the version of x written by w (init: the initial row) hides the row from the read: absent, deleted,
 *  or not satisfying its WHERE. */
function hides(model: CheckModel, r: ReadEvent, x: number, w: number): boolean {
  const row = w === INIT ? model.initRow[x] : model.writes[w].get(x);
  return row === undefined || row === null || !predicateHolds(model, r, row, w);
}

export function verifyOrder(
  model: CheckModel,
  flat: Flat,
  order: Int32Array,
  pos: Int32Array,
  chains: Chains,
  rows: CandidateRows,
  arena: Arena,
  check: () => void,
  verified?: Verified,
  liveRowsFrom?: number,
): Verification {
  const kw = new KeyWriters(model, pos, arena);
  const live = new LiveRows(model, kw, liveRowsFrom);
  const hasCC = model.txns.some((t, i) => i !== INIT && t.level === CC);
  const witnesses: number[] = [];
  const first = verifyPass(
    model,
    flat,
    undefined,
    pos,
    kw,
    chains,
    undefined,
    undefined,
    rows,
    live,
    (level) => level !== CC,
    witnesses,
    arena,
    check,
    hasCC ? undefined : verified,
  );
  if (!first.ok || !hasCC) return first;
  if (model.n * chains.count > MAX_CLOCK_ENTRIES) {
    return {
      ok: false,
      read: 0,
      key: 0,
      writer: INIT,
      why: `causal clocks for ${model.n} transactions in ${chains.count} sessions would not fit`,
    };
  }
  // CC readers see what causally precedes them, the witnesses chosen for the other readers included.
  const extraOf = new Map<number, number[]>();
  for (let i = 0; i < witnesses.length; i += 2) {
    let list = extraOf.get(witnesses[i + 1]);
    if (!list) extraOf.set(witnesses[i + 1], (list = []));
    list.push(witnesses[i]);
  }
  return verifyPass(
    model,
    flat,
    order,
    pos,
    kw,
    chains,
    new CausalClocks(model, flat, chains, arena),
    extraOf,
    rows,
    live,
    (level) => level === CC,
    [],
    arena,
    check,
  );
}
