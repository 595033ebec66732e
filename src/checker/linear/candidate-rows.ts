/**
 * The rows a read's WHERE could match, found through indexes instead of a scan of the table (docs/scale.md):
 * the unreturned rows whose hiding the linear check verifies (docs/semantics.md §3.3: only a row some version
 * of which satisfies the WHERE can be a conflict or a missing row).
 *
 * - Point constraints on every key column: the keys they name (model/key-lookup.ts).
 * - Point constraints (`col = v`, `col IN (...)`, on any column): an index of the table's keys by the values
 *   every version of a row (initial or written) holds in that column. A key none of whose versions holds one of
 *   the values has no version that satisfies the WHERE.
 * - Numeric bounds on a key column (`id >= $1 AND id < $2`): the table's keys sorted by that column. Key columns
 *   never change for a key, so a key outside the bounds has no version that satisfies the WHERE.
 * - Otherwise every key of the table.
 * The result is a superset: the caller still evaluates the WHERE on the versions it considers. Results are
 * shared by reads with the same compiled predicate (the model compiles one per table, WHERE and parameters).
 */
import { canonicalValue, numericBounds, type CompiledPredicate } from '../../sql/predicate.js';
import type { CheckModel, ReadEvent } from '../model/model.js';
import { keysNamedBy } from '../model/key-lookup.js';
import { holds, lowerBound, upperBound } from './lower-bound.js';

interface SortedKeys {
  keys: Int32Array;
  values: Float64Array;
}

export class CandidateRows {
  private readonly tableKeys: (Int32Array | undefined)[] = [];
  private readonly valueIndex = new Map<string, Map<string, Int32Array>>();
  private readonly sortedIndex = new Map<string, SortedKeys | null>();
  private readonly cache = new WeakMap<CompiledPredicate, Int32Array>();

  constructor(private readonly model: CheckModel) {}

  /** Every key of the table (initial rows and written rows), ascending. */
  keysOf(table: number): Int32Array {
    let keys = this.tableKeys[table];
    if (!keys) {
      const t = this.model.tables[table];
      const all = new Int32Array(t.initKeys.length + t.writtenKeys.length);
      all.set(t.initKeys);
      all.set(t.writtenKeys, t.initKeys.length);
      all.sort();
      let m = 0;
      for (let i = 0; i < all.length; i++) if (i === 0 || all[i] !== all[i - 1]) all[m++] = all[i];
      keys = this.tableKeys[table] = all.slice(0, m);
    }
    return keys;
  }

  /** A superset of the keys of the read's table some version of which may satisfy its WHERE, ascending. */
  of(read: ReadEvent): Int32Array {
    let result = this.cache.get(read.pred);
    if (!result) {
      result = this.compute(read);
      this.cache.set(read.pred, result);
    }
    return result;
  }

  private compute(read: ReadEvent): Int32Array {
    // A WHERE that names whole keys (most point reads): those keys, with no index of the table.
    const named = keysNamedBy(this.model, read);
    if (named) return dedupe(Int32Array.from(named).sort());
    const schema = this.model.tables[read.table].schema;
    let best: Int32Array | undefined;
    for (const [col, values] of read.pred.pointConstraints) {
      const index = this.values(read.table, col);
      let total = 0;
      for (const v of values) total += index.get(v)?.length ?? 0;
      if (best !== undefined && total >= best.length) continue;
      const found = new Int32Array(total);
      let at = 0;
      for (const v of values) {
        const list = index.get(v);
        if (list) {
          found.set(list, at);
          at += list.length;
        }
      }
      if (values.length > 1) {
        found.sort();
        best = dedupe(found);
      } else best = found;
    }
    const bounds = numericBounds(read.ref.where, read.ref.params ?? [], schema.columns);
    for (const [col, [lo, hi]] of bounds) {
      const k = schema.key.indexOf(col);
      if (k < 0) continue;
      const sorted = this.sorted(read.table, k);
      if (!sorted) continue;
      // The keys whose own value in that column is within the bounds (a key's columns never change).
      const from = lowerBound(sorted.values, lo);
      const to = upperBound(sorted.values, hi);
      if (best === undefined) best = sorted.keys.slice(from, to).sort();
      else if (to - from < best.length) {
        // the point lookup's keys among them, looked up one by one: a district's order lines grow with the run,
        // a range of order ids does not (TPC-C's StockLevel)
        const range = sorted.keys.slice(from, to).sort();
        const inBest = best;
        best = range.filter((key) => holds(inBest, key));
      } else {
        const { keys } = this.model;
        best = best.filter((key) => {
          const raw = keys[key].values[k];
          const v = typeof raw === 'number' ? raw : Number(raw);
          return v >= lo && v <= hi;
        });
      }
    }
    return best ?? this.keysOf(read.table);
  }

  /** Index of the table's keys by the canonical value of `col` in any version of the row. */
  private values(table: number, col: string): Map<string, Int32Array> {
    const id = `${table}\u001f${col}`;
    let index = this.valueIndex.get(id);
    if (index) return index;
    const { model } = this;
    const type = model.tables[table].schema.columns[col];
    const lists = new Map<string, number[]>();
    // Canonical text per raw value: a column holds few distinct values (a group id) across many versions.
    const canon = new Map<unknown, string>();
    const add = (key: number, v: unknown) => {
      if (v === null || v === undefined) return;
      let c = typeof v === 'object' ? undefined : canon.get(v);
      if (c === undefined) {
        c = canonicalValue(v as never, type);
        if (typeof v !== 'object') canon.set(v, c);
      }
      let list = lists.get(c);
      if (!list) lists.set(c, (list = []));
      if (list[list.length - 1] !== key) list.push(key);
    };
    for (const key of this.keysOf(table)) {
      const init = model.initRow[key];
      if (init) add(key, init[col]);
      for (const t of model.writersOf[key]) {
        const row = model.writes[t].get(key);
        if (row) add(key, row[col]);
      }
    }
    index = new Map();
    for (const [v, list] of lists) index.set(v, Int32Array.from(list));
    this.valueIndex.set(id, index);
    return index;
  }

  /** The table's keys sorted by the numeric value of key column k; null when some value is not a finite number. */
  private sorted(table: number, k: number): SortedKeys | null {
    const id = `${table}\u001f${k}`;
    let s = this.sortedIndex.get(id);
    if (s !== undefined) return s;
    const keys = this.keysOf(table);
    const values = new Float64Array(keys.length);
    s = null;
    let ok = true;
    for (let i = 0; i < keys.length && ok; i++) {
      const raw = this.model.keys[keys[i]].values[k];
      const x = typeof raw === 'number' ? raw : typeof raw === 'string' && raw.trim() !== '' ? Number(raw) : NaN;
      if (!Number.isFinite(x)) ok = false;
      values[i] = x;
    }
    if (ok) {
      const order = Array.from(keys.keys()).sort((a, b) => values[a] - values[b]);
      s = { keys: Int32Array.from(order, (i) => keys[i]), values: Float64Array.from(order, (i) => values[i]) };
    }
    this.sortedIndex.set(id, s);
    return s;
  }
}

function dedupe(sorted: Int32Array): Int32Array {
  let m = 0;
  for (let i = 0; i < sorted.length; i++) if (i === 0 || sorted[i] !== sorted[i - 1]) sorted[m++] = sorted[i];
  return sorted.subarray(0, m);
}
