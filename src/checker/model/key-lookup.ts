/**
 * The keys a WHERE names outright: when its point constraints cover every key column of its table
 * (`id = $1`, `w_id = 1 AND d_id IN (2, 3)`), the key tuples they allow, looked up in the model's key index
 * (model.ts: a key's canonical text is its table id and the canonical values of its columns). Only keys some
 * version of which exists are returned. Used by the search (conflicts/conflicts.ts) and the linear check
 * (linear/candidate-rows.ts) to find a read's candidate rows without scanning or indexing the table.
 */
import type { CheckModel, ReadEvent } from './model.js';

/** Above this many key tuples the caller scans instead. */
const MAX_KEY_TUPLES = 100_000;

/** The existing keys the read's point constraints name, in the order of the tuples; undefined when they do not pin
 *  every key column, or allow more than MAX_KEY_TUPLES tuples. */
export function keysNamedBy(model: CheckModel, read: ReadEvent): number[] | undefined {
  const schema = model.tables[read.table].schema;
  const points = schema.key.map((col) => read.pred.pointConstraints.get(col));
  if (!points.every((p) => p !== undefined)) return undefined;
  let prefixes = [String(read.table)];
  for (const values of points as string[][]) {
    if (prefixes.length * values.length > MAX_KEY_TUPLES) return undefined;
    const next: string[] = [];
    for (const p of prefixes) for (const v of values) next.push(`${p}\u001f${v}`);
    prefixes = next;
  }
  const keys: number[] = [];
  for (const text of prefixes) {
    const key = model.keyIds.get(text);
    if (key !== undefined) keys.push(key);
  }
  return keys;
}
