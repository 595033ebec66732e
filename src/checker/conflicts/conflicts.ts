/**
 * Conflicts of a client history (paper §5, Equation 4; docs/semantics.md §3.3 and §4.3).
 *
 * For a non-partial read r of t3 and a key x of its table that r neither returned nor read locally:
 *   1ˣʳ = {t : (t3, t) ∉ pco, t writes x (init writes every key), WHERE(r)(value(t, x)) = true}
 *   0ˣʳ = the same with false († is false).
 * (r, x) is a conflict when 1ˣʳ ≠ ∅; a conflict with 0ˣʳ = ∅ is a missing row: no witness exists.
 *
 * Keys nobody but init wrote are looked up through the WHERE's point constraints on the primary key when it
 * has them (no scan of the table per read); otherwise the table's initial rows are scanned once per read.
 */
import type { Row } from '../../history/format.js';
import { canonicalValue } from '../../history/predicate.js';
import { INIT, predicateHolds, type CheckModel, type ReadEvent } from '../model/model.js';
import type { Order } from '../model/order.js';
import { memoryStage } from '../budget.js';
import { keysNamedBy } from '../model/key-lookup.js';

export interface Conflict {
  read: number;
  key: number;
  /** Writers whose value satisfies the WHERE (the 1 set). */
  ones: number[];
  /** Writers whose value does not (the 0 set): the witness choices. */
  zeros: number[];
}

export interface MissingRow {
  read: number;
  key: number;
  /** Writers whose version satisfies the WHERE and that the read should have seen. */
  ones: number[];
}

export function valueOf(model: CheckModel, t: number, key: number): Row | null {
  if (t === INIT) return model.initRow[key] ?? null;
  const v = model.writes[t].get(key);
  return v === undefined ? null : v;
}

const initKeysCache = new WeakMap<CheckModel, (number[] | undefined)[]>();

/** Keys of the read's table that only init wrote and whose initial row satisfies the WHERE (once per read). */
function matchingInitKeys(model: CheckModel, read: ReadEvent): number[] {
  let cache = initKeysCache.get(model);
  if (!cache) initKeysCache.set(model, (cache = new Array(model.reads.length)));
  return (cache[read.id] ??= scanInitKeys(model, read));
}

function scanInitKeys(model: CheckModel, read: ReadEvent): number[] {
  const table = model.tables[read.table];
  const result: number[] = [];
  const consider = (key: number): void => {
    if (model.writersOf[key].length > 0) return; // handled with the written keys
    const row = model.initRow[key];
    if (row !== undefined && predicateHolds(model, read, row, INIT)) result.push(key);
  };
  // the key tuples the WHERE allows, looked up; else every initial row
  const named = keysNamedBy(model, read);
  for (const key of named ?? table.initKeys) consider(key);
  return result;
}

const canonCache = new WeakMap<CheckModel, string[][]>();
/** Canonical values of each key's columns (as pointConstraints gives them), computed once per model. */
function canonicalKeys(model: CheckModel): (key: number) => string[] {
  let cache = canonCache.get(model);
  if (!cache) canonCache.set(model, (cache = []));
  const c = cache;
  return (key: number) => {
    let v = c[key];
    if (!v) {
      const info = model.keys[key];
      const schema = model.tables[info.table].schema;
      v = c[key] = info.values.map((x, i) => canonicalValue(x, schema.columns[schema.key[i]]));
    }
    return v;
  };
}

const keyColumnSets = new WeakMap<readonly string[], ReadonlySet<string>>();
function keyColumnSet(key: readonly string[]): ReadonlySet<string> {
  let set = keyColumnSets.get(key);
  if (!set) keyColumnSets.set(key, (set = new Set(key)));
  return set;
}

const KEY_FILTER_MIN = 32;
const candidateCache = new WeakMap<CheckModel, (number[] | undefined)[]>();
const keyIndexCache = new WeakMap<CheckModel, Map<string, number[]>[][]>();

/**
 * The written keys of the read's table that its WHERE's point constraints on key columns allow, in key order,
 * and its other conditions on key columns alone (the others are false on every version: key columns never
 * change for a key). Computed once per read and
 * model, through an index of the written keys by each key column's value, so that a read pinned to one
 * district does not scan every written row of the table (TPC-C's order lines and stock) on every call.
 */
function candidateKeys(model: CheckModel, read: ReadEvent, canon: (key: number) => string[]): number[] {
  let cache = candidateCache.get(model);
  if (!cache) candidateCache.set(model, (cache = new Array(model.reads.length)));
  const cached = cache[read.id];
  if (cached) return cached;
  const table = model.tables[read.table];
  const schema = table.schema;
  const pinned: [number, Set<string>][] = [];
  schema.key.forEach((col, i) => {
    const values = read.pred.pointConstraints.get(col);
    if (values) pinned.push([i, new Set(values)]);
  });
  let result = table.writtenKeys;
  if (pinned.length > 0) {
    let indexes = keyIndexCache.get(model);
    if (!indexes) keyIndexCache.set(model, (indexes = []));
    let index = indexes[read.table];
    if (!index) {
      index = indexes[read.table] = schema.key.map(() => new Map<string, number[]>());
      for (const key of table.writtenKeys) {
        canon(key).forEach((v, i) => {
          let list = index![i].get(v);
          if (!list) index![i].set(v, (list = []));
          list.push(key);
        });
      }
    }
    // Look up the most selective pinned column; filter by the others.
    const size = ([i, set]: [number, Set<string>]) => {
      let total = 0;
      for (const v of set) total += index![i].get(v)?.length ?? 0;
      return total;
    };
    const [best, ...others] = pinned.sort((a, b) => size(a) - size(b));
    const found: number[] = [];
    for (const v of best[1]) for (const key of index[best[0]].get(v) ?? []) found.push(key);
    if (best[1].size > 1) found.sort((a, b) => a - b);
    result = found.filter((key) => others.every(([i, set]) => set.has(canon(key)[i])));
  }
  // Conditions on key columns alone beyond equalities (TPC-C's StockLevel: ol_o_id >= $3 AND ol_o_id < $4).
  // Compiling them costs about as much as testing a few dozen versions: only worth it for many keys.
  const onKey = result.length > KEY_FILTER_MIN ? read.pred.conjunctsOn?.(keyColumnSet(schema.key)) : undefined;
  if (onKey) {
    // On each version's own row (they read only key columns): two versions of one key have equal key values
    // as canonical values, but may spell them differently (numeric 1.0 and 1.00), which `n::text` tells apart.
    result = result.filter((key) => {
      const init = model.initRow[key];
      if (init !== undefined && onKey(init)) return true;
      for (const t of model.writersOf[key]) {
        const row = model.writes[t].get(key);
        if (row && onKey(row)) return true;
      }
      return false;
    });
  }
  cache[read.id] = result;
  return result;
}

const matchCache = new WeakMap<CheckModel, (Map<number, Uint8Array> | undefined)[]>();
const UNKNOWN = 0, MATCH = 1, NO_MATCH = 2;

/**
 * Whether each version of `key` satisfies the read's WHERE, filled lazily: entry 0 for init, entry i + 1 for
 * writersOf[key][i] (0: not evaluated yet, MATCH, or NO_MATCH: does not, or deleted). Kept per (read, key) and
 * model: findConflicts runs again after each round of forced witnesses, and only pco and the witnesses change
 * between rounds. Versions a reader cannot have seen (written by a transaction pco-after it) are never tested.
 */
function matchFlags(model: CheckModel, read: ReadEvent, key: number): Uint8Array {
  let cache = matchCache.get(model);
  if (!cache) matchCache.set(model, (cache = new Array(model.reads.length)));
  const byKey = (cache[read.id] ??= new Map());
  let flags = byKey.get(key);
  if (!flags) byKey.set(key, (flags = new Uint8Array(model.writersOf[key].length + 1)));
  return flags;
}

function versionMatches(model: CheckModel, read: ReadEvent, key: number, flags: Uint8Array, i: number): boolean {
  let f = flags[i + 1];
  if (f === UNKNOWN) {
    const writer = i < 0 ? INIT : model.writersOf[key][i];
    const value = valueOf(model, writer, key);
    f = flags[i + 1] = value !== null && predicateHolds(model, read, value, writer) ? MATCH : NO_MATCH;
  }
  return f === MATCH;
}

export interface ConflictResult {
  conflicts: Conflict[];
  missing: MissingRow[];
}

/**
 * Computes the conflicts and missing rows of every non-partial read, against the partial commit order `pco`.
 *
 * `widen`: also treat unreturned rows whose every version hides them as conflicts (they need a witness too).
 * The paper's Theorem 5 (non-conflicts need no witness) holds for SER, SI, PC, RA and RC but not CC: a
 * witness edge into a reader puts its writer in the causal past of the reader's successors, which a CC
 * transaction must then see. So when some transaction is CC, every unreturned row with a non-init writer
 * gets a witness (found by the brute-force oracle; see test/fixtures/disagreements/regression-CC-*). This is a
 * documented departure from the paper: docs/semantics.md §3.3 and §7.
 *
 * `previous`: the conflicts of an earlier call on the same model whose pco was a subset of this one (and whose
 * decided pairs a subset of these). Only those pairs are looked at again: the 1 and 0 sets only lose writers
 * as pco grows (a writer pco-after the reader leaves both) and decided pairs stay decided, so a pair that was
 * neither a conflict nor a missing row then is neither now. Rounds of forced witnesses cost O(conflicts)
 * instead of O(reads × keys).
 */
export function findConflicts(model: CheckModel, pco: Order, decided?: (read: number, key: number) => boolean, widen = false, previous?: Conflict[], budget?: { checkNow(): void }): ConflictResult {
  memoryStage('finding conflicts');
  const conflicts: Conflict[] = [];
  const missing: MissingRow[] = [];
  const classify = (read: ReadEvent, key: number): void => {
    const t3 = read.txn;
    const ones: number[] = [];
    const zeros: number[] = [];
    const writers = model.writersOf[key];
    const flags = matchFlags(model, read, key);
    for (let i = -1; i < writers.length; i++) {
      const t = i < 0 ? INIT : writers[i];
      if (t === t3 || pco.has(t3, t)) continue;
      if (versionMatches(model, read, key, flags, i)) ones.push(t);
      else zeros.push(t);
    }
    if (ones.length === 0 && !(widen && zeros.length > 0)) return;
    if (zeros.length === 0) missing.push({ read: read.id, key, ones });
    else conflicts.push({ read: read.id, key, ones, zeros });
  };
  if (previous) {
    let i = 0;
    for (const c of previous) {
      if ((++i & 4095) === 0) budget?.checkNow();
      if (!(decided !== undefined && decided(c.read, c.key))) classify(model.reads[c.read], c.key);
    }
    return { conflicts, missing };
  }
  const canon = canonicalKeys(model);
  for (const read of model.reads) {
    if ((read.id & 255) === 255) budget?.checkNow();
    if (read.partial) continue;
    // Key columns never change for a key, so a WHERE that pins a key column to values this key does not have
    // is false on every version of it: no conflict (unless every unreturned row needs a witness).
    const skip = (key: number) => read.returned.has(key) || read.local.has(key) || (decided !== undefined && decided(read.id, key));
    for (const key of matchingInitKeys(model, read)) {
      if (!skip(key)) missing.push({ read: read.id, key, ones: [INIT] });
    }
    for (const key of widen ? model.tables[read.table].writtenKeys : candidateKeys(model, read, canon)) {
      if (!skip(key)) classify(read, key);
    }
  }
  return { conflicts, missing };
}
