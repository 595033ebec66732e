/**
 * The versions a file's selects returned, each kept once (docs/scale.md §4). A row a select returns,
 * `{ wid, row }`, is the version one write (its wid) made of one key, and workloads read the same version again and
 * again: TPC-C's Delivery reads every undelivered new_order row of its district each time (14 selects per version
 * on the benchmark's TPC-C histories), the bank benchmark 3.3. The reader keeps the first `{ wid, row }` of each
 * version that it validated and hands that object out for every later one equal to it (the same wid, the same
 * value in every column by Object.is, no other field), so that the copies JSON.parse made die young instead of
 * filling the old generation, and are validated once. A history is read-only: nothing writes to a row once it is read.
 *
 * Per table: wid -> its one version, a short list (a statement that wrote a few rows), or past LIST_MAX versions
 * (init, a statement that wrote many rows) a Map by the text of the key values. A lookup is exact whatever the
 * text: the row found is compared column by column, and a row that differs is simply not shared.
 */
import type { Row } from './format.js';

/** A select's row as the reader validated it. */
export interface SelectRow {
  wid: string;
  row: Row;
}

type Versions = SelectRow | SelectRow[] | Map<string, SelectRow>;

const LIST_MAX = 8;

export class ReadVersions {
  readonly #byWid = new Map<string, Versions>();

  /** `columns`: every column of the table (a validated row has exactly these); `key`: its key columns. */
  constructor(
    private readonly columns: readonly string[],
    private readonly key: readonly string[],
  ) {}

  /** The row kept for the version `r` is, if `r` (not validated) equals it in every column and has no other field. */
  find(r: Record<string, unknown>): SelectRow | undefined {
    const wid = r.wid;
    if (typeof wid !== 'string') return undefined;
    const kept = this.#byWid.get(wid);
    if (kept === undefined) return undefined;
    const row = r.row;
    if (typeof row !== 'object' || row === null || Array.isArray(row)) return undefined;
    const values = row as Row;
    let found: SelectRow | undefined;
    if (kept instanceof Map) {
      found = kept.get(this.#keyText(values));
      if (found !== undefined && !this.#same(found.row, values)) found = undefined;
    } else if (Array.isArray(kept)) {
      found = kept.find((k) => this.#same(k.row, values));
    } else if (this.#same(kept.row, values)) found = kept;
    if (found === undefined) return undefined;
    // no field beyond wid and row, no column beyond the table's (a row with more is validated, and refused)
    return Object.keys(r).length === 2 && Object.keys(values).length === this.columns.length ? found : undefined;
  }

  /** Keeps `r`, validated, as the row of its version, unless one is kept already or `r` has other fields. */
  keep(r: SelectRow): void {
    if (Object.keys(r).length !== 2) return;
    const kept = this.#byWid.get(r.wid);
    if (kept === undefined) {
      this.#byWid.set(r.wid, r);
      return;
    }
    if (kept instanceof Map) {
      const text = this.#keyText(r.row);
      if (!kept.has(text)) kept.set(text, r);
      return;
    }
    const list = Array.isArray(kept) ? kept : [kept];
    if (list.some((k) => this.#same(k.row, r.row))) return;
    if (list.length < LIST_MAX) {
      list.push(r);
      if (list !== kept) this.#byWid.set(r.wid, list);
      return;
    }
    const byKey = new Map<string, SelectRow>();
    for (const k of [...list, r]) {
      const text = this.#keyText(k.row);
      if (!byKey.has(text)) byKey.set(text, k);
    }
    this.#byWid.set(r.wid, byKey);
  }

  /**
   * Whether a kept (validated) row and `row` hold the same value in every column of the table. Object.is, not ===:
   * -0 and 0 are different values of a float column (its text is '-0', as PostgreSQL prints it).
   */
  #same(kept: Row, row: Row): boolean {
    for (const c of this.columns) if (!Object.is(kept[c], row[c]) || !Object.hasOwn(row, c)) return false;
    return true;
  }

  #keyText(row: Row): string {
    const key = this.key;
    if (key.length === 1) return String(row[key[0]]);
    let text = '';
    for (let i = 0; i < key.length; i++) text += (i > 0 ? '\u0000' : '') + String(row[key[i]]);
    return text;
  }
}
