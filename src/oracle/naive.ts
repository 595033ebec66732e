/**
 * A brute-force oracle for consistency (docs/semantics.md §1–§3), written independently of the real checker
 * (src/checker/: nothing of it is imported but levels.ts; test/oracle-independent.test.ts holds it to that): its
 * only purpose is to be obviously right on small histories so that tests can cross-check the real checker.
 *
 *   History -> well-formedness (§1)                                  -> inconsistent
 *           -> DFS over every total commit order extending so ∪ wr (init first), and, while placing each
 *              transaction t3, over the witnesses for t3's unreturned keys: for EVERY non-partial, non-local
 *              read and every key of its table it did not return (conflict or not), a committed writer placed
 *              before t3 whose value of the key fails the WHERE (init writes † for keys it has no row for)
 *           -> every axiom instance of §2 for t3's reads                 -> prune on the first violation
 *           -> a full order                                             -> consistent (that order)
 *           -> nothing                                                  -> inconsistent
 *           -> more than maxWork witness steps                          -> unknown
 *
 * Why checking t3's axiom instances when t3 is placed is exact: every instance of a read of t3 only depends on
 * so, on the wr edges into t3 and into its (so ∪ wr)+ predecessors, and on the commit order among transactions
 * placed before t3 (vis(t2, r) at every level implies t2 commits before t3), and all of these are fixed once t3
 * and its witness are chosen. Later transactions only observe t3's witness through the set of transactions t3
 * reads from (CC's (so ∪ wr)+).
 *
 * Two ways to enumerate t3's witness: `exhaustive` tries every combination of one writer per unreturned key
 * (the literal definition, exponential in the number of keys); the default enumerates the SET of transactions
 * t3 reads from, smallest first, which is exact because visibility is monotone in that set (see
 * placeBySources / placeRC). The test suite checks that both give the same verdicts.
 *
 * Decisions followed (docs/semantics.md §1.4, §3.2): aborted transactions write nothing and their reads are not
 * checked; each `unknown` transaction either committed or did not, and naiveCheck tries every combination (up
 * to MAX_UNKNOWN of them; a read of one taken as not committed is then an aborted read), the plain definition
 * behind the checker's rule (docs/semantics.md §1.4, §7); `build` itself counts an `unknown` transaction as
 * committed iff a checked transaction read one of its writes (least fixpoint); `partial` reads say nothing
 * about rows they did not return; a read of a key its transaction already wrote is local (must see the
 * transaction's own latest value, returned iff it matches the WHERE) and is not in wr.
 */
import type { History, Txn } from '../history/history.js';
import { INIT_WID, type IsolationLevel, type Row, type SqlValue } from '../history/format.js';
import { canonicalValue, compilePredicate, valuesEqual } from '../sql/predicate.js';
import { effectiveLevel, type IsoOverride } from '../checker/levels.js';

export interface NaiveOptions {
  /** The level each transaction is judged at (default: its recorded level, or `iso` if given). */
  levelOf?: (txn: Txn) => IsolationLevel;
  /** The `--iso` override, as parsed by parseIsoOverride. Ignored when levelOf is given. */
  iso?: IsoOverride;
  /** Bound on the witness combinations tried; beyond it the verdict is 'unknown'. Default 2,000,000. */
  maxWork?: number;
  /**
   * Enumerate every combination of witnesses (one writer per unreturned key) instead of the minimal sets of
   * transactions read from; slower, the most literal reading of §3, used to cross-check the faster mode.
   */
  exhaustive?: boolean;
}

export interface NaiveResult {
  verdict: 'consistent' | 'inconsistent' | 'unknown';
  /** Committed transactions (ids, init excluded) in a commit order that satisfies every axiom. */
  commitOrder?: string[];
  /** Why it is inconsistent (well-formedness), or why unknown. */
  reason?: string;
  work: number;
}

/** `null` is † (no row). */
type Value = Row | null;

interface NRead {
  /** Index of the event in its transaction (program order). */
  event: number;
  table: string;
  test: (row: Row) => boolean;
  partial: boolean;
  /** Non-local keys returned, with the transaction (index) they were read from. */
  from: Map<string, number>;
  /** Keys the transaction had already written before this event (local reads). */
  local: Set<string>;
}

interface NTxn {
  /** 0 is init. */
  index: number;
  id: string;
  line?: Txn;
  level: IsolationLevel;
  /** Checked transactions before it in its session (init included). */
  soPreds: number[];
  /** Last value written per key. */
  writes: Map<string, Value>;
  reads: NRead[];
}

interface Ctx {
  txns: NTxn[];
  /** Keys per table: every key of init or written by a checked transaction. */
  tableKeys: Map<string, string[]>;
  /** Writers (indices, init = 0 included) per key. */
  writers: Map<string, number[]>;
}

class Inconsistent extends Error {}
class WorkExceeded extends Error {}

function bad(message: string): never {
  throw new Inconsistent(message);
}

const DEFAULT_MAX_WORK = 2_000_000;

// ---------------------------------------------------------------------------------------------------------------
// Building the model and checking well-formedness (§1)

function keyOf(history: History, table: string, values: SqlValue[]): string {
  const schema = history.tables.get(table)!;
  return `${table}\u0000${schema.key.map((k, i) => canonicalValue(values[i], schema.columns[k])).join('\u0000')}`;
}

function rowKey(history: History, table: string, row: Row): string {
  const schema = history.tables.get(table)!;
  return keyOf(
    history,
    table,
    schema.key.map((k) => row[k]),
  );
}

interface WidInfo {
  txn: Txn;
  event: number;
  table: string;
  /** What this event wrote, per key. */
  writes: Map<string, Value>;
}

function levelFn(options: NaiveOptions): (txn: Txn) => IsolationLevel {
  if (options.levelOf) return options.levelOf;
  const iso = options.iso;
  return (txn) => effectiveLevel(txn.iso, txn.label, iso);
}

/** Builds the model; throws Inconsistent on a well-formedness failure. */
function build(history: History, options: NaiveOptions): Ctx {
  const levelOf = levelFn(options);
  // Every write event, by wid.
  const wids = new Map<string, WidInfo>();
  for (const txn of history.txns) {
    txn.events.forEach((e, i) => {
      if (e.op === 'select') return;
      const writes = new Map<string, Value>();
      if (e.op === 'insert') for (const r of e.rows) writes.set(rowKey(history, e.table, r.row), r.row);
      if (e.op === 'update') for (const r of e.rows) writes.set(rowKey(history, e.table, r.row), r.row);
      if (e.op === 'delete') for (const r of e.rows) writes.set(keyOf(history, e.table, r.key), null);
      wids.set(e.wid, { txn, event: i, table: e.table, writes });
    });
  }
  const initValue = new Map<string, Row>();
  for (const [table, rows] of history.init) for (const r of rows) initValue.set(rowKey(history, table, r.row), r.row);

  /** The wids a transaction's events returned / updated / deleted. */
  const widsRead = (txn: Txn): string[] => {
    const out: string[] = [];
    for (const e of txn.events) {
      if (e.op === 'select') for (const r of e.rows) out.push(r.wid);
      else if (e.op === 'update' || e.op === 'delete') for (const r of e.rows) out.push(r.read);
    }
    return out;
  };

  // Checked transactions: committed, plus (least fixpoint) unknown ones whose writes a checked one read.
  const checked = new Set<Txn>(history.txns.filter((t) => t.status === 'committed'));
  for (let changed = true; changed; ) {
    changed = false;
    for (const t of [...checked]) {
      for (const w of widsRead(t)) {
        const info = wids.get(w);
        if (info && info.txn !== t && info.txn.status === 'unknown' && !checked.has(info.txn)) {
          checked.add(info.txn);
          changed = true;
        }
      }
    }
  }

  const txns: NTxn[] = [{ index: 0, id: INIT_WID, level: 'SER', soPreds: [], writes: new Map(), reads: [] }];
  const indexOf = new Map<Txn, number>();
  for (const t of history.txns) {
    if (!checked.has(t)) continue;
    indexOf.set(t, txns.length);
    txns.push({ index: txns.length, id: t.id, line: t, level: levelOf(t), soPreds: [0], writes: new Map(), reads: [] });
  }
  for (const a of txns) {
    if (!a.line) continue;
    for (const b of txns)
      if (b.line && b.line.session === a.line.session && b.line.seq < a.line.seq) a.soPreds.push(b.index);
  }

  // Last writes per key of each checked transaction.
  for (const t of txns) {
    if (!t.line) continue;
    for (const e of t.line.events) {
      if (e.op === 'select') continue;
      for (const [k, v] of wids.get(e.wid)!.writes) t.writes.set(k, v);
    }
  }

  // Reads, with the well-formedness conditions.
  for (const t of txns) {
    if (!t.line) continue;
    const txn = t.line;
    const own = new Map<string, { wid: string; value: Value }>();
    txn.events.forEach((e, ei) => {
      const where = `${txn.id} event ${ei + 1} (${e.op})`;
      if (e.op !== 'insert') {
        const schema = history.tables.get(e.table)!;
        let partial = e.partial === true;
        let test: (row: Row) => boolean;
        try {
          const p = compilePredicate(e.where, e.params ?? [], schema.columns);
          test = (row) => p.test(row);
        } catch {
          // A WHERE we cannot evaluate: the read says nothing beyond the rows it returned.
          partial = true;
          test = () => true;
        }
        const read: NRead = { event: ei, table: e.table, test, partial, from: new Map(), local: new Set() };
        for (const k of own.keys()) if (k.startsWith(`${e.table}\u0000`)) read.local.add(k);
        const seen = new Set<string>();
        const entries: { wid: string; key: string; row?: Row }[] =
          e.op === 'select'
            ? e.rows.map((r) => ({ wid: r.wid, key: rowKey(history, e.table, r.row), row: r.row }))
            : e.op === 'update'
              ? e.rows.map((r) => ({ wid: r.read, key: rowKey(history, e.table, r.row) }))
              : e.rows.map((r) => ({ wid: r.read, key: keyOf(history, e.table, r.key) }));
        for (const { wid, key, row } of entries) {
          if (seen.has(key)) bad(`${where}: returned the same key twice`);
          seen.add(key);
          let value: Value;
          const mine = own.get(key);
          if (mine) {
            // Local read: must see the transaction's own latest write.
            if (wid !== mine.wid)
              bad(`${where}: internal inconsistency (read ${wid}, own latest write is ${mine.wid})`);
            value = mine.value;
            if (value === null) bad(`${where}: internal inconsistency (returned a row it deleted)`);
          } else if (wid === INIT_WID) {
            const v = initValue.get(key);
            if (!v) bad(`${where}: garbage read (init has no row for this key)`);
            value = v;
            read.from.set(key, 0);
          } else {
            const info = wids.get(wid);
            if (!info) {
              if (history.truncated) {
                read.partial = true; // unresolved in a truncated file
                continue;
              }
              bad(`${where}: garbage read (wid ${wid} was never written)`);
            }
            if (info.txn.status === 'aborted') bad(`${where}: aborted read (G1a) of ${wid}`);
            if (info.txn === txn) bad(`${where}: reads its own later write ${wid}`);
            if (info.table !== e.table || !info.writes.has(key))
              bad(`${where}: garbage read (${wid} did not write this key)`);
            const writer = txns[indexOf.get(info.txn)!];
            // The writer's last write of the key must be this event's.
            let last = -1;
            info.txn.events.forEach((we, wi) => {
              if (we.op !== 'select' && wids.get(we.wid)!.writes.has(key)) last = wi;
            });
            if (last !== info.event) bad(`${where}: intermediate read (G1b) of ${wid}`);
            value = info.writes.get(key)!;
            if (value === null) bad(`${where}: garbage read (${wid} deleted this key)`);
            read.from.set(key, writer.index);
          }
          if (!test(value)) bad(`${where}: predicate mismatch (${JSON.stringify(value)})`);
          if (row) {
            for (const [col, v] of Object.entries(row)) {
              const type = schema.columns[col];
              if (!(col in value) || !valuesEqual(v, value[col], type))
                bad(`${where}: value mismatch in column ${col}`);
            }
          }
        }
        if (!read.partial) {
          for (const k of read.local) {
            const v = own.get(k)!.value;
            if (!seen.has(k) && v !== null && test(v))
              bad(`${where}: internal inconsistency (own row ${JSON.stringify(v)} matches but was not returned)`);
          }
        }
        t.reads.push(read);
      }
      if (e.op !== 'select') for (const [k, v] of wids.get(e.wid)!.writes) own.set(k, { wid: e.wid, value: v });
    });
  }

  // Keys and writers.
  const tableKeys = new Map<string, string[]>();
  const writers = new Map<string, number[]>();
  const addKey = (k: string) => {
    if (writers.has(k)) return;
    writers.set(k, [0]);
    const table = k.slice(0, k.indexOf('\u0000'));
    if (!tableKeys.has(table)) tableKeys.set(table, []);
    tableKeys.get(table)!.push(k);
  };
  for (const k of initValue.keys()) addKey(k);
  for (const t of txns) {
    for (const k of t.writes.keys()) {
      addKey(k);
      writers.get(k)!.push(t.index);
    }
  }
  for (const [k, v] of initValue) txns[0].writes.set(k, v);
  return { txns, tableKeys, writers };
}

/** value(t, x); init writes † for keys it has no row for. */
function writtenValue(ctx: Ctx, t: number, key: string): Value {
  return ctx.txns[t].writes.get(key) ?? null;
}

// ---------------------------------------------------------------------------------------------------------------
// The search (§2, §3)

interface SearchState {
  pos: Int32Array; // -1 when not placed
  placed: number[];
  /** (so ∪ wr)+ predecessors of each placed transaction (possibly over-approximated, see placeBySources). */
  causal: (Set<number> | undefined)[];
  work: number;
  maxWork: number;
  exhaustive: boolean;
}

interface Pair {
  read: number;
  key: string;
  /** Placed committed writers of the key (init included), other than the reader, whose value fails the WHERE. */
  cands: number[];
}

function tick(st: SearchState): void {
  if (++st.work > st.maxWork) throw new WorkExceeded();
}

function matches(r: NRead, v: Value): boolean {
  return v !== null && r.test(v);
}

/**
 * The axiom instance of (t3's read of `key` from t1): every placed writer t2 ∉ {t1, t3} visible to it precedes t1.
 */
function instanceHolds(
  ctx: Ctx,
  st: SearchState,
  t3: number,
  key: string,
  t1: number,
  vis: (t2: number) => boolean,
): boolean {
  for (const t2 of ctx.writers.get(key)!) {
    if (t2 === t1 || t2 === t3 || st.pos[t2] < 0) continue;
    if (vis(t2) && !(st.pos[t2] < st.pos[t1])) return false;
  }
  return true;
}

/** (so ∪ wr)+ predecessors of a transaction whose so ∪ wr predecessors are `preds`. */
function closure(st: SearchState, preds: Iterable<number>): Set<number> {
  const out = new Set<number>();
  for (const p of preds) {
    out.add(p);
    for (const q of st.causal[p] ?? []) out.add(q);
  }
  return out;
}

/**
 * vis(t2, r) for a read of t3 at a level other than RC, where `soWr` is so ∪ wr into t3 (so-predecessors and
 * every transaction t3 reads from). §2: RA so ∪ wr; CC (so ∪ wr)+; PC t2 ≤co some t4 ∈ so ∪ wr; SI PC or
 * t2 ≤co some t4 <co t3 writing a key t3 writes; SER t2 <co t3.
 */
function visFor(ctx: Ctx, st: SearchState, t3: number, soWr: Set<number>): (t2: number) => boolean {
  const T = ctx.txns[t3];
  const pos = st.pos;
  switch (T.level) {
    case 'RC':
      throw new Error('RC visibility depends on the read (see placeRC)');
    case 'RA':
      return (t2) => soWr.has(t2);
    case 'CC': {
      const causal = closure(st, soWr);
      return (t2) => causal.has(t2);
    }
    case 'PC':
    case 'SI': {
      let prefixPos = -1;
      for (const p of soWr) prefixPos = Math.max(prefixPos, pos[p]);
      let conflictPos = -1;
      if (T.level === 'SI') {
        for (const t4 of st.placed) {
          if (t4 === t3) continue;
          for (const y of T.writes.keys()) {
            if (t4 === 0 || ctx.txns[t4].writes.has(y)) {
              conflictPos = Math.max(conflictPos, pos[t4]);
              break;
            }
          }
        }
      }
      return (t2) => pos[t2] <= prefixPos || pos[t2] <= conflictPos;
    }
    case 'SER':
      return (t2) => pos[t2] < pos[t3];
  }
}

/** Subsets of {0..n-1} as bit masks, smallest first. */
function masksBySize(n: number): number[] {
  if (n > 24) throw new WorkExceeded();
  const masks = Array.from({ length: 1 << n }, (_, i) => i);
  const pop = (m: number) => {
    let c = 0;
    for (; m; m &= m - 1) c++;
    return c;
  };
  return masks.sort((a, b) => pop(a) - pop(b) || a - b);
}

/**
 * Tries to place t3 next. Calls `next` for witnesses of t3 that satisfy every axiom instance of t3's reads;
 * returns true as soon as `next` does. Fails at once if t3's so or recorded wr predecessors are not placed, or if
 * some unreturned key has no possible witness among the placed transactions.
 */
function place(ctx: Ctx, st: SearchState, t3: number, next: () => boolean): boolean {
  const T = ctx.txns[t3];
  for (const p of T.soPreds) if (st.pos[p] < 0) return false;
  for (const r of T.reads) for (const t1 of r.from.values()) if (st.pos[t1] < 0) return false;

  const pairs: Pair[] = [];
  T.reads.forEach((r, ri) => {
    if (r.partial) return;
    for (const key of ctx.tableKeys.get(r.table) ?? []) {
      if (r.from.has(key) || r.local.has(key)) continue;
      const cands = ctx.writers
        .get(key)!
        .filter((w) => w !== t3 && st.pos[w] >= 0 && !matches(r, writtenValue(ctx, w, key)));
      pairs.push({ read: ri, key, cands });
    }
  });
  if (pairs.some((p) => p.cands.length === 0)) return false;

  st.pos[t3] = st.placed.length;
  st.placed.push(t3);
  try {
    if (st.exhaustive) return placeByProduct(ctx, st, t3, pairs, next);
    if (T.level === 'RC') return placeRC(ctx, st, t3, pairs, 0, new Set(T.soPreds), next);
    return placeBySources(ctx, st, t3, pairs, next);
  } finally {
    st.placed.pop();
    st.pos[t3] = -1;
    st.causal[t3] = undefined;
  }
}

/**
 * The plain enumeration: every combination of one candidate per pair; all instances of t3 checked on the
 * resulting wr. Combinations giving the same set of sources are explored downstream once (later transactions
 * only see that set, through CC's (so ∪ wr)+).
 */
function placeByProduct(ctx: Ctx, st: SearchState, t3: number, pairs: Pair[], next: () => boolean): boolean {
  const T = ctx.txns[t3];
  const tried = new Set<string>();
  const choice = new Array<number>(pairs.length).fill(0);
  for (;;) {
    tick(st);
    const from: Map<string, number>[] = T.reads.map((r) => new Map(r.from));
    for (let i = 0; i < pairs.length; i++) from[pairs[i].read].set(pairs[i].key, pairs[i].cands[choice[i]]);
    const sources = new Set<number>(T.soPreds);
    for (const f of from) for (const t of f.values()) sources.add(t);
    const sig = [...sources].sort((a, b) => a - b).join(',');
    if (!tried.has(sig) && allInstancesHold(ctx, st, t3, from, sources)) {
      tried.add(sig);
      st.causal[t3] = closure(st, sources);
      if (next()) return true;
    }
    let i = 0;
    while (i < pairs.length && ++choice[i] === pairs[i].cands.length) choice[i++] = 0;
    if (i === pairs.length) return false;
  }
}

/** Every instance of t3's reads for a complete wr (`from` per read; `soWr` = so-predecessors ∪ sources). */
function allInstancesHold(
  ctx: Ctx,
  st: SearchState,
  t3: number,
  from: Map<string, number>[],
  soWr: Set<number>,
): boolean {
  const T = ctx.txns[t3];
  if (T.level === 'RC') {
    // vis(t2, r): (t2, t3) ∈ so, or an earlier read (program order) of t3 reads any key from t2.
    const earlier = new Set<number>(T.soPreds);
    for (let ri = 0; ri < T.reads.length; ri++) {
      for (const [key, t1] of from[ri]) if (!instanceHolds(ctx, st, t3, key, t1, (t2) => earlier.has(t2))) return false;
      for (const t of from[ri].values()) earlier.add(t);
    }
    return true;
  }
  const vis = visFor(ctx, st, t3, soWr);
  for (const f of from) for (const [key, t1] of f) if (!instanceHolds(ctx, st, t3, key, t1, vis)) return false;
  return true;
}

/**
 * Levels other than RC: vis depends on the witness only through the set W of transactions t3 reads from, and
 * monotonically (a larger W makes more writers visible, to t3 and, through (so ∪ wr)+, to later transactions).
 * So enumerate the extra sources S (candidates not already in so ∪ recorded wr) smallest first: S is feasible
 * when, with W = so ∪ recorded wr ∪ S, the recorded instances hold and every pair has a candidate in W whose
 * instance holds. Exact: a real witness with extra sources S' makes S' feasible (each pair's own candidate works,
 * and vis under S' is what it is); a feasible S yields a real witness whose sources are a subset of W, under
 * which vis is no larger. Supersets of a feasible S are skipped: they only add constraints downstream.
 */
function placeBySources(ctx: Ctx, st: SearchState, t3: number, pairs: Pair[], next: () => boolean): boolean {
  const T = ctx.txns[t3];
  const base = new Set<number>(T.soPreds);
  for (const r of T.reads) for (const t of r.from.values()) base.add(t);
  const extra = [...new Set(pairs.flatMap((p) => p.cands))].filter((t) => !base.has(t));
  const feasible: number[] = [];
  for (const mask of masksBySize(extra.length)) {
    if (feasible.some((f) => (f & mask) === f)) continue;
    tick(st);
    const W = new Set(base);
    for (let i = 0; i < extra.length; i++) if (mask & (1 << i)) W.add(extra[i]);
    const vis = visFor(ctx, st, t3, W);
    const ok =
      T.reads.every((r) => [...r.from].every(([key, t1]) => instanceHolds(ctx, st, t3, key, t1, vis))) &&
      pairs.every((p) => p.cands.some((c) => W.has(c) && instanceHolds(ctx, st, t3, p.key, c, vis)));
    if (!ok) continue;
    feasible.push(mask);
    st.causal[t3] = closure(st, W);
    if (next()) return true;
  }
  return false;
}

/**
 * RC: vis for read r depends on the sources of t3's earlier reads only (and monotonically), so go read by read
 * in program order: `seen` = so-predecessors ∪ sources of earlier reads. For read r: its recorded instances and,
 * per pair, the candidates whose instance holds are fixed by `seen`; choose the extra sources S of r smallest
 * first such that every pair of r has a valid candidate in seen ∪ recorded(r) ∪ S (exact, as in placeBySources).
 */
function placeRC(
  ctx: Ctx,
  st: SearchState,
  t3: number,
  pairs: Pair[],
  ri: number,
  seen: Set<number>,
  next: () => boolean,
): boolean {
  const T = ctx.txns[t3];
  if (ri === T.reads.length) {
    st.causal[t3] = closure(st, seen);
    return next();
  }
  const r = T.reads[ri];
  const vis = (t2: number) => seen.has(t2);
  for (const [key, t1] of r.from) if (!instanceHolds(ctx, st, t3, key, t1, vis)) return false;
  const mine = pairs
    .filter((p) => p.read === ri)
    .map((p) => p.cands.filter((c) => instanceHolds(ctx, st, t3, p.key, c, vis)));
  if (mine.some((v) => v.length === 0)) return false;
  const base = new Set(seen);
  for (const t of r.from.values()) base.add(t);
  const extra = [...new Set(mine.flat())].filter((t) => !base.has(t));
  const feasible: number[] = [];
  for (const mask of masksBySize(extra.length)) {
    if (feasible.some((f) => (f & mask) === f)) continue;
    tick(st);
    const next2 = new Set(base);
    for (let i = 0; i < extra.length; i++) if (mask & (1 << i)) next2.add(extra[i]);
    if (!mine.every((v) => v.some((c) => next2.has(c)))) continue;
    feasible.push(mask);
    if (placeRC(ctx, st, t3, pairs, ri + 1, next2, next)) return true;
  }
  return false;
}

function runSearch(
  ctx: Ctx,
  maxWork: number,
  exhaustive: boolean,
  fixed?: number[],
): { order?: number[]; work: number; exceeded: boolean } {
  const n = ctx.txns.length;
  const st: SearchState = {
    pos: new Int32Array(n).fill(-1),
    placed: [0],
    causal: new Array(n).fill(undefined),
    work: 0,
    maxWork,
    exhaustive,
  };
  st.pos[0] = 0;
  st.causal[0] = new Set();
  let found: number[] | undefined;
  const dfs = (): boolean => {
    if (st.placed.length === n) {
      found = st.placed.slice(1);
      return true;
    }
    if (fixed) return place(ctx, st, fixed[st.placed.length - 1], dfs);
    for (let t = 1; t < n; t++) if (st.pos[t] < 0 && place(ctx, st, t, dfs)) return true;
    return false;
  };
  try {
    dfs();
  } catch (e) {
    if (e instanceof WorkExceeded) return { work: st.work, exceeded: true };
    throw e;
  }
  return { order: found, work: st.work, exceeded: false };
}

/**
 * A transaction whose commit outcome is unknown either committed or not: the history is consistent iff it is
 * for some choice of which of them committed (the others count as aborted). Straight from that definition.
 */
const MAX_UNKNOWN = 10;
function withOutcomes(history: History, committed: Set<string>): History {
  return {
    ...history,
    txns: history.txns.map((t) =>
      t.status !== 'unknown'
        ? t
        : { ...t, status: committed.has(t.id) ? ('committed' as const) : ('aborted' as const) },
    ),
  };
}

/** Consistency of a (client) history by brute force. Requires loadPredicateParser() to have been awaited. */
export function naiveCheck(history: History, options: NaiveOptions = {}): NaiveResult {
  const unknown = history.txns.filter((t) => t.status === 'unknown').map((t) => t.id);
  if (unknown.length === 0) return naiveCheckKnown(history, options);
  if (unknown.length > MAX_UNKNOWN)
    return { verdict: 'unknown', reason: `more than ${MAX_UNKNOWN} transactions with unknown outcome`, work: 0 };
  let last: NaiveResult | undefined;
  let work = 0;
  for (let mask = 0; mask < 1 << unknown.length; mask++) {
    const r = naiveCheckKnown(withOutcomes(history, new Set(unknown.filter((_, i) => mask & (1 << i)))), options);
    work += r.work;
    if (r.verdict === 'consistent') return { ...r, work };
    if (r.verdict === 'unknown' || !last || last.verdict !== 'unknown') last = r;
  }
  return { ...last!, work };
}

function naiveCheckKnown(history: History, options: NaiveOptions): NaiveResult {
  let ctx: Ctx;
  try {
    ctx = build(history, options);
  } catch (e) {
    if (e instanceof Inconsistent) return { verdict: 'inconsistent', reason: e.message, work: 0 };
    throw e;
  }
  const { order, work, exceeded } = runSearch(ctx, options.maxWork ?? DEFAULT_MAX_WORK, options.exhaustive === true);
  if (exceeded)
    return {
      verdict: 'unknown',
      reason: `more than ${options.maxWork ?? DEFAULT_MAX_WORK} witness combinations`,
      work,
    };
  if (!order) return { verdict: 'inconsistent', reason: 'no commit order and witness satisfy every axiom', work };
  return { verdict: 'consistent', commitOrder: order.map((t) => ctx.txns[t].id), work };
}

/**
 * Whether SOME witness makes exactly this total order of the committed transactions (ids, init optional at the
 * front) satisfy so ∪ wr ⊆ co and every axiom: 'invalid' also when the history is not well-formed or the list
 * is not a permutation of the transactions that count as committed; 'unknown' past options.maxWork.
 */
export function checkCommitOrder(
  history: History,
  commitOrder: string[],
  options: NaiveOptions = {},
): 'valid' | 'invalid' | 'unknown' {
  // The unknown-outcome transactions in the order are the ones taken as committed.
  if (history.txns.some((t) => t.status === 'unknown')) history = withOutcomes(history, new Set(commitOrder));
  let ctx: Ctx;
  try {
    ctx = build(history, options);
  } catch (e) {
    if (e instanceof Inconsistent) return 'invalid';
    throw e;
  }
  const ids =
    commitOrder[0] === INIT_WID && !ctx.txns.some((t, i) => i > 0 && t.id === INIT_WID)
      ? commitOrder.slice(1)
      : commitOrder;
  const index = new Map<string, number>();
  for (let i = 1; i < ctx.txns.length; i++) index.set(ctx.txns[i].id, i);
  if (ids.length !== ctx.txns.length - 1) return 'invalid';
  const fixed: number[] = [];
  for (const id of ids) {
    const i = index.get(id);
    if (i === undefined || fixed.includes(i)) return 'invalid';
    fixed.push(i);
  }
  const { order, exceeded } = runSearch(ctx, options.maxWork ?? Infinity, options.exhaustive === true, fixed);
  return exceeded ? 'unknown' : order ? 'valid' : 'invalid';
}
