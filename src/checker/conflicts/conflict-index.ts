/**
 * What finding conflicts (conflicts.ts; paper §5, Equation 4; docs/semantics.md §3.3) computes once per check and
 * keeps between its rounds: per read, the keys only init wrote whose initial row matches its WHERE and the
 * written keys its WHERE's key constraints allow; per table, an index of the written keys by each key column's
 * value; per key, its columns' canonical values; per (read, key), whether each version matches the WHERE.
 *
 * One index belongs to one check (check.ts makes it with the model and drops it with the check): only pco and the
 * witnesses change between rounds of findConflicts, never what is cached here.
 */
import { canonicalValue } from '../../sql/predicate.js';
import { INIT, predicateHolds, versionValue, type CheckModel, type ReadEvent } from '../model/model.js';
import { keysNamedBy } from '../model/key-lookup.js';

/** Above this many candidate keys, conditions on key columns alone are compiled and tested on each key. */
const KEY_FILTER_MIN = 32;
const UNKNOWN = 0,
  MATCH = 1,
  NO_MATCH = 2;

export class ConflictIndex {
  private readonly initKeys: (number[] | undefined)[];
  private readonly candidates: (number[] | undefined)[];
  private readonly matches: (Map<number, Uint8Array> | undefined)[];
  private readonly canon: string[][] = [];
  private readonly keyIndexes: Map<string, number[]>[][] = [];
  private readonly keyColumns: ReadonlySet<string>[] = [];

  constructor(readonly model: CheckModel) {
    const reads = model.reads.length;
    this.initKeys = new Array(reads);
    this.candidates = new Array(reads);
    this.matches = new Array(reads);
  }

  /** Keys of the read's table that only init wrote and whose initial row satisfies the WHERE (once per read). */
  matchingInitKeys(read: ReadEvent): number[] {
    return (this.initKeys[read.id] ??= this.scanInitKeys(read));
  }

  private scanInitKeys(read: ReadEvent): number[] {
    const model = this.model;
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

  /** Canonical values of each key's columns (as pointConstraints gives them). */
  private canonicalKey(key: number): string[] {
    let v = this.canon[key];
    if (!v) {
      const info = this.model.keys[key];
      const schema = this.model.tables[info.table].schema;
      v = this.canon[key] = info.values.map((x, i) => canonicalValue(x, schema.columns[schema.key[i]]));
    }
    return v;
  }

  /**
   * The written keys of the read's table that its WHERE's point constraints on key columns allow, in key order,
   * and its other conditions on key columns alone (the others are false on every version: key columns never
   * change for a key). Computed once per read, through an index of the written keys by each key column's value,
   * so that a read pinned to one district does not scan every written row of the table (TPC-C's order lines and
   * stock) on every call.
   */
  candidateKeys(read: ReadEvent): number[] {
    const cached = this.candidates[read.id];
    if (cached) return cached;
    const model = this.model;
    const table = model.tables[read.table];
    const schema = table.schema;
    const pinned: [number, Set<string>][] = [];
    schema.key.forEach((col, i) => {
      const values = read.pred.pointConstraints.get(col);
      if (values) pinned.push([i, new Set(values)]);
    });
    let result = table.writtenKeys;
    if (pinned.length > 0) {
      let index = this.keyIndexes[read.table];
      if (!index) {
        index = this.keyIndexes[read.table] = schema.key.map(() => new Map<string, number[]>());
        for (const key of table.writtenKeys) {
          this.canonicalKey(key).forEach((v, i) => {
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
      result = found.filter((key) => others.every(([i, set]) => set.has(this.canonicalKey(key)[i])));
    }
    // Conditions on key columns alone beyond equalities (TPC-C's StockLevel: ol_o_id >= $3 AND ol_o_id < $4).
    // Compiling them costs about as much as testing a few dozen versions: only worth it for many keys.
    const onKey =
      result.length > KEY_FILTER_MIN
        ? read.pred.conjunctsOn?.((this.keyColumns[read.table] ??= new Set(schema.key)))
        : undefined;
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
    this.candidates[read.id] = result;
    return result;
  }

  /**
   * Whether each version of `key` satisfies the read's WHERE, filled lazily: entry 0 for init, entry i + 1 for
   * writersOf[key][i] (0: not evaluated yet, MATCH, or NO_MATCH: does not, or deleted). Kept per (read, key):
   * findConflicts runs again after each round of forced witnesses. Versions a reader cannot have seen (written
   * by a transaction pco-after it) are never tested.
   */
  matchFlags(read: ReadEvent, key: number): Uint8Array {
    const byKey = (this.matches[read.id] ??= new Map());
    let flags = byKey.get(key);
    if (!flags) byKey.set(key, (flags = new Uint8Array(this.model.writersOf[key].length + 1)));
    return flags;
  }

  /** Whether version i of `key` (-1: init's) satisfies the read's WHERE, through its `flags`. */
  versionMatches(read: ReadEvent, key: number, flags: Uint8Array, i: number): boolean {
    let f = flags[i + 1];
    if (f === UNKNOWN) {
      const model = this.model;
      const writer = i < 0 ? INIT : model.writersOf[key][i];
      const value = versionValue(model, writer, key);
      f = flags[i + 1] = value !== null && predicateHolds(model, read, value, writer) ? MATCH : NO_MATCH;
    }
    return f === MATCH;
  }
}
