/**
 * The checker's model of a client history (docs/semantics.md §1, paper §2): dense integer ids for transactions
 * (0 is init) and keys, each transaction's last write per key (`value(t, x)`), and every read event with the
 * keys it read from other transactions (`wr`). Building it runs the well-formedness checks of §1.5 on the way,
 * since they are exactly the failures of resolving a read to the write it saw:
 *
 *   History -> index writes by wid -> walk each checked transaction in po (local state per key)
 *           -> reads (wr, local reads) + anomalies -> promote `unknown` writers that were read -> G1c
 *
 * Decisions (docs/semantics.md §1.4): aborted transactions write nothing visible and their reads are not checked
 * unless `checkAbortedReads` (then for well-formedness only, never by an axiom); an `unknown` transaction is
 * committed iff one of its writes was read by a checked transaction (transitively), else left out of the model
 * (`droppedUnknown`: check.ts tries which of those committed before calling the history inconsistent, a
 * documented departure, docs/semantics.md §7). In a truncated file a wid nobody wrote is unresolved: the row is
 * dropped and the read becomes partial, instead of a garbage read.
 *
 * Built for histories of millions of transactions: the walk's state is dense ids and typed arrays (write events
 * and the rows they write as numbered records, per-key stamps instead of per-transaction Maps), a key's
 * canonical text is computed once per distinct key value, and a read holds no Set and no EventRef until asked.
 *
 * A History read from a file is valid (reader.ts); one built in memory may not be, so what the walk relies on is
 * checked where it is used and refused as an InputError naming the line: every row holds every column of its
 * table (a WHERE reads them), key columns are declared, a WHERE is not blank, params nest at most
 * MAX_PARAMS_DEPTH deep, and a value a WHERE cannot read is the history's fault, not a crash. Columns and rows
 * are looked up as own properties only (a column may be called `toString` or `__proto__`).
 */
import type { HistoryEvent, IsolationLevel, Row, SqlValue } from '../../history/format.js';
import { INIT_WID, MAX_PARAMS_DEPTH } from '../../history/format.js';
import { deeperThan } from '../../history/reader.js';
import type { History, TableSchema, Txn } from '../../history/history.js';
import {
  canonicalValue,
  compilePredicate,
  valuesEqual,
  PredicateError,
  type CompiledPredicate,
} from '../../sql/predicate.js';
import { InputError } from '../../history/input-errors.js';
import type { Anomaly, ColumnDifference, EventRef, ReadAnomaly, ReadProblem } from '../anomaly.js';
import { effectiveLevel, levelIndex, type IsoOverride } from '../levels.js';

export const INIT = 0;

export interface TableInfo {
  id: number;
  schema: TableSchema;
  /** Key ids of the table's initial rows. */
  initKeys: number[];
  /** Keys of this table written by some transaction other than init (in T). */
  writtenKeys: number[];
}

export interface KeyInfo {
  table: number;
  values: SqlValue[];
}

/** A read-only set of key ids (ReadEvent.returned, ReadEvent.local). */
export interface KeySet {
  has(key: number): boolean;
}

/** One read event (select, update or delete) of a checked transaction. */
export interface ReadEvent {
  id: number;
  txn: number;
  /** Position among the transaction's events (0-based, program order). */
  po: number;
  /** Where the event is in the file (made when first asked for, then the same object every time). */
  readonly ref: EventRef;
  table: number;
  pred: CompiledPredicate;
  partial: boolean;
  /**
   * Non-local reads, as triples: the key, the transaction read from and the wid read are `model.fromKey[i]`,
   * `model.fromTxn[i]` and `model.fromWid[i]` for i in [from, from + fromCount) (one array each for all reads:
   * three arrays per read were 190 MB and 2.2 million objects at a million transactions).
   */
  from: number;
  fromCount: number;
  /** Keys returned (local or not): never "unreturned". */
  returned: KeySet;
  /** Keys the transaction had written before this read (local: not part of any witness). */
  local: KeySet;
}

export interface ModelTxn {
  id: string;
  session: number;
  seq: number;
  level: number;
  recordedLevel: IsolationLevel;
  label?: string;
  begin?: number;
  end?: number;
  line: number;
  raw?: Txn;
}

export interface CheckModel {
  history: History;
  /** Transactions in T: init (0), then committed ones (and `unknown` ones that were read), by session and seq. */
  txns: ModelTxn[];
  n: number;
  /** Immediate session predecessor in T (init for the first of a session, -1 for init). */
  soPrev: Int32Array;
  tables: TableInfo[];
  tableIds: Map<string, number>;
  keys: KeyInfo[];
  keyIds: Map<string, number>;
  /** Initial row per key (undefined: † initially). */
  initRow: (Row | undefined)[];
  /**
   * Last write of each transaction per key: the row, or null for a delete (†), keys in the order the transaction
   * first wrote them. Index 0 (init) is empty. Read-only: transactions that write nothing share one empty Map.
   */
  writes: Map<number, Row | null>[];
  /** The wid of that last write (shared empty Maps as in `writes`; made when first read). */
  writeWids: Map<number, string>[];
  /** Writers of each key other than init, in T. */
  writersOf: number[][];
  reads: ReadEvent[];
  /** Reads of each transaction in program order. */
  readsOf: number[][];
  /** The triples of the reads (ReadEvent.from): the key read, the transaction read from, the wid read. */
  fromKey: Int32Array;
  fromTxn: Int32Array;
  fromWid: string[];
  anomalies: Anomaly[];
  /** Transactions whose commit outcome is unknown and that nobody read: left out (they may have committed). */
  droppedUnknown: string[];
  /** Notes for the user (unresolved wids in a truncated file, dropped unknown transactions, ...). */
  notes: string[];
  stats: {
    transactions: number;
    committed: number;
    aborted: number;
    unknown: number;
    dropped: number;
    events: number;
    reads: number;
    keys: number;
    sessions: number;
  };
}

export interface ModelOptions {
  iso?: IsoOverride;
  checkAbortedReads?: boolean;
  /** Called now and then while building (every 64 transactions walked): may throw to stop (a deadline). */
  deadline?: () => void;
}

const SEP = '\u001f';

const hasOwn = (o: object, k: string): boolean => Object.hasOwn(o, k);

export function describeKey(model: Pick<CheckModel, 'keys' | 'tables'>, key: number): string {
  const k = model.keys[key];
  return `${model.tables[k.table].schema.name}(${k.values.map((v) => JSON.stringify(v)).join(', ')})`;
}

function eventRef(txn: Txn, index: number): EventRef {
  const e = txn.events[index];
  const ref: EventRef = { txn: txn.id, event: index + 1, line: txn.line, op: e.op, table: e.table };
  if (e.op !== 'insert') {
    if (e.where !== undefined) ref.where = e.where;
    if (e.params !== undefined) ref.params = e.params;
  }
  return ref;
}

// Key sets of reads: most reads return one key and have no local key, so those two cases take no Set.
class NoKeys implements KeySet {
  has(_key: number): boolean {
    return false;
  }
}
class OneKey implements KeySet {
  constructor(readonly key: number) {}
  has(key: number): boolean {
    return key === this.key;
  }
}
class SortedKeys implements KeySet {
  constructor(readonly keys: Int32Array) {}
  has(key: number): boolean {
    const a = this.keys;
    let lo = 0;
    let hi = a.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      const v = a[mid];
      if (v === key) return true;
      if (v < key) lo = mid + 1;
      else hi = mid;
    }
    return false;
  }
}
const NO_KEYS: KeySet = new NoKeys();

/** A read of the model; `ref` is made from the raw transaction when first asked for (most never are). */
class ModelRead implements ReadEvent {
  #raw: Txn;
  #ref: EventRef | undefined = undefined;
  id = 0;
  /** The raw transaction's index while the model is built, then its dense id. */
  txn: number;
  po: number;
  table: number;
  pred: CompiledPredicate;
  partial: boolean;
  // set once the read's rows are resolved
  from = 0;
  fromCount = 0;
  returned: KeySet = NO_KEYS;
  local: KeySet = NO_KEYS;
  constructor(raw: Txn, txn: number, po: number, table: number, pred: CompiledPredicate, partial: boolean) {
    this.#raw = raw;
    this.txn = txn;
    this.po = po;
    this.table = table;
    this.pred = pred;
    this.partial = partial;
  }
  get ref(): EventRef {
    return (this.#ref ??= eventRef(this.#raw, this.po));
  }
}

type KeyValue = SqlValue | undefined;

/** A JSON scalar (or undefined): usable as a Map key that stands for the value exactly as written. */
const isScalar = (v: unknown): v is KeyValue =>
  v === null || v === undefined || typeof v === 'number' || typeof v === 'string' || typeof v === 'boolean';

/** Per table, key values as written to key ids: a Map per level, the last level's values are the ids. */
type KeyTrie = Map<KeyValue, KeyTrie | number>;

/** Scratch for the key values of a row (keyOfRow). */
const keyScratch: SqlValue[] = [];

/**
 * The Map at the last level of the trie for `values` (two or more), made as needed; undefined when a value is
 * not a scalar (not cached). Map keys are equal as SameValueZero: 0 and -0 are one key, as their canonical texts.
 */
function trieLeaf(trie: KeyTrie, values: readonly SqlValue[]): KeyTrie | undefined {
  let node = trie;
  const last = values.length - 1;
  if (last < 1) return undefined;
  for (let i = 0; i <= last; i++) {
    const v = values[i];
    if (!isScalar(v)) return undefined;
    if (i === last) return node;
    let next = node.get(v) as KeyTrie | undefined;
    if (next === undefined) node.set(v, (next = new Map()));
    node = next;
  }
  return node;
}

/** The first n elements of a scratch array, as an array of exactly that size. */
const firstOf = <T>(scratch: T[], n: number): T[] => scratch.slice(0, n);

// Arrays of the model that hold nothing or one element are mostly shared: frozen, as the model is read-only.
const NO_NUMBERS = Object.freeze([]) as unknown as number[];
/** A raw transaction's status (model's statusOf; OTHER only in a History built in memory). */
const COMMITTED = 0;
const ABORTED = 1;
const UNKNOWN = 2;
const OTHER = 3;

/** Status flags of a write event's transaction (model's `we`). */
const WRITER_ABORTED = 1;
const WRITER_UNKNOWN = 2;

/** A scratch list: a plain array reused across calls (never shrunk, so never reallocated), and its length. */
interface Scratch<T> {
  items: T[];
  n: number;
}
const scratch = <T>(): Scratch<T> => ({ items: [], n: 0 });
/** Appends to a scratch (a store at an array's length appends to it). */
const push = (s: Scratch<number>, v: number): void => {
  s.items[s.n++] = v;
};
const pushText = (s: Scratch<string>, v: string): void => {
  s.items[s.n++] = v;
};

/**
 * The same model with each transaction's level chosen by another override (`--levels` checks one history at
 * several levels). Levels are the only part of the model that depends on the override (buildModel: the txns'
 * `level`); everything else (reads, writes, keys, anomalies, lazily built indexes) is shared, read-only.
 */
export function withLevels(model: CheckModel, iso: IsoOverride | undefined): CheckModel {
  const copy = Object.defineProperties({}, Object.getOwnPropertyDescriptors(model)) as CheckModel;
  copy.txns = model.txns.map((t, d) =>
    d === INIT ? t : { ...t, level: levelIndex(effectiveLevel(t.recordedLevel, t.label, iso)) },
  );
  return copy;
}

export function buildModel(history: History, options: ModelOptions = {}): CheckModel {
  const anomalies: Anomaly[] = [];
  const notes: string[] = [];
  const tables: TableInfo[] = [];
  const tableIds = new Map<string, number>();
  const keys: KeyInfo[] = [];
  const keyIds = new Map<string, number>();
  const initRow: (Row | undefined)[] = [];

  const columnNames: string[][] = [];
  for (const schema of history.tables.values()) {
    for (const k of schema.key) {
      if (!hasOwn(schema.columns, k))
        throw new InputError(
          `${history.file}:${schema.line}: table "${schema.name}": key column "${k}" is not declared in "columns"`,
        );
    }
    tableIds.set(schema.name, tables.length);
    tables.push({ id: tables.length, schema, initKeys: [], writtenKeys: [] });
    columnNames.push(Object.keys(schema.columns));
  }
  /** A row must hold every column of its table (docs/history-format.md): a WHERE may read any of them. */
  const complete = (table: number, row: Row, line: number, where: () => string): Row => {
    if (typeof row !== 'object' || row === null)
      throw new InputError(`${history.file}:${line}: ${where()}: a row must be an object`);
    for (const c of columnNames[table]) {
      if (!hasOwn(row, c))
        throw new InputError(
          `${history.file}:${line}: ${where()}: the row lacks column "${c}" of table ` +
            `"${tables[table].schema.name}" (every row holds every column)`,
        );
    }
    return row;
  };
  const cleanPrototype = !enumerableInObjectPrototype();
  // For a plain object (a row as JSON.parse makes it), a column that is not a property of Object.prototype is
  // its own property exactly when reading it gives something: a load, cheaper than hasOwnProperty.
  const inherited: boolean[][] = columnNames.map((cols) => cols.map((c) => c in Object.prototype));
  /** `complete` for row i of an event (the message, and its closure, are made only for a row that fails). */
  const completeRow = (table: number, row: Row, txn: Txn, ei: number, e: HistoryEvent, i: number): Row => {
    let whole = typeof row === 'object' && row !== null;
    if (whole) {
      const cols = columnNames[table];
      const plain = Object.getPrototypeOf(row) === Object.prototype;
      const names = inherited[table];
      for (let c = 0; c < cols.length; c++) {
        if (!(plain && !names[c] && row[cols[c]] !== undefined) && !hasOwn(row, cols[c])) whole = false;
      }
    }
    return whole
      ? row
      : complete(table, row, txn.line, () => `txn "${txn.id}" event ${ei + 1} (${e.op} on ${e.table}) rows[${i}]`);
  };

  // Key ids. keyIds maps a key's canonical text (table id, then canonicalValue of each key value) to its id.
  // That text costs most of the time for a row, so per table a cache maps the values as written to the id: equal
  // values as written have equal texts. A one-value key is looked up by its value; a key of several values in a
  // trie of Maps, one level per key column, so that no text is built for it either (TPC-C's order_line key has
  // four values; a text per lookup was 2.5 s of a 62 s check).
  const oneValue: Map<KeyValue, number>[] = tables.map(() => new Map());
  const manyValues: KeyTrie[] = tables.map(() => new Map());
  /** Shared OneKey sets per key id (undefined until a read needs one). */
  const oneKeySets: (OneKey | undefined)[] = [];
  const internKey = (table: number, values: SqlValue[]): number => {
    const schema = tables[table].schema;
    let text = String(table);
    for (let i = 0; i < values.length; i++) text += SEP + canonicalValue(values[i], schema.columns[schema.key[i]]);
    let id = keyIds.get(text);
    if (id === undefined) {
      id = keys.length;
      keyIds.set(text, id);
      keys.push({ table, values });
      initRow.push(undefined);
      oneKeySets.push(undefined);
    }
    return id;
  };
  const keyOf = (table: number, values: SqlValue[]): number => {
    if (values.length === 1) {
      const v = values[0];
      if (!isScalar(v)) return internKey(table, values);
      const cache = oneValue[table];
      let id = cache.get(v);
      if (id === undefined) cache.set(v, (id = internKey(table, values)));
      return id;
    }
    return keyOfMany(table, values, true);
  };
  /**
   * A key of several values, through the trie; `own`: the list may be kept as the key's values (else it is copied
   * for a key seen the first time, as keyOfRow's scratch is). A list of another length than the key, from a
   * History built in memory, is not cached: the trie's levels are the key's columns.
   */
  const keyOfMany = (table: number, values: SqlValue[], own: boolean): number => {
    const leaf = values.length === tables[table].schema.key.length ? trieLeaf(manyValues[table], values) : undefined;
    if (leaf === undefined) return internKey(table, own ? values : values.slice());
    const v = values[values.length - 1] as KeyValue;
    let id = leaf.get(v) as number | undefined;
    if (id === undefined) leaf.set(v, (id = internKey(table, own ? values : values.slice())));
    return id;
  };
  /** The key column of each table with a one-column key. */
  const keyColumn = tables.map((t) => (t.schema.key.length === 1 ? t.schema.key[0] : undefined));
  const keyOfRow = (table: number, row: Row): number => {
    const col = keyColumn[table];
    if (col !== undefined) {
      const v = row[col] ?? null;
      if (isScalar(v)) {
        const cache = oneValue[table];
        let id = cache.get(v);
        if (id === undefined) cache.set(v, (id = internKey(table, [v])));
        return id;
      }
    }
    // the values in a scratch array, copied only for a key seen for the first time (keys[] keeps them)
    const cols = tables[table].schema.key;
    keyScratch.length = cols.length;
    for (let i = 0; i < cols.length; i++) keyScratch[i] = row[cols[i]] ?? null;
    return keyOfMany(table, keyScratch, false);
  };
  const keySetOf = (s: Scratch<number>): KeySet => {
    if (s.n === 0) return NO_KEYS;
    if (s.n === 1) {
      const k = s.items[0];
      return (oneKeySets[k] ??= new OneKey(k));
    }
    const a = new Int32Array(s.n);
    for (let i = 0; i < s.n; i++) a[i] = s.items[i];
    return new SortedKeys(a.sort());
  };

  for (const [name, rows] of history.init) {
    const t = tableIds.get(name)!;
    rows.forEach(({ row, line }, i) => {
      complete(t, row, line, () => `init of "${name}" rows[${i}]`);
      const key = keyOfRow(t, row);
      if (initRow[key] !== undefined)
        throw new InputError(
          `${history.file}:${line}: init of "${name}" has two rows with key ${describeKey({ keys, tables }, key)}`,
        );
      initRow[key] = row;
      tables[t].initKeys.push(key);
    });
  }

  // Index every write event by wid. Write events are numbered in file order, and each row they write is a
  // record (key, value, event), numbered in the same order: a transaction's records are one range, and so
  // are an event's. A key's last write by a transaction is its last record of that key in the range.
  const raw = history.txns;
  let eventCount = 0;
  let writeEventCount = 0;
  let recordCount = 0;
  for (const txn of raw) {
    for (const e of txn.events) {
      eventCount++;
      if (e.op !== 'select') {
        writeEventCount++;
        recordCount += e.rows.length;
      }
    }
  }
  // What resolving a read needs of a write event, and of a record, is kept together (a read of an old version
  // is a few cache misses: at a million transactions, most of the walk's time).
  /**
   * Write event w: we[4w] its raw transaction, we[4w + 1] its first record (its records end where w + 1's
   * start), we[4w + 2] its index among the transaction's events, we[4w + 3] its writer's status flags.
   */
  const we = new Int32Array(4 * (writeEventCount + 1));
  const weTxn = (w: number): number => we[4 * w];
  const weStart = (w: number): number => we[4 * w + 1];
  const weEvent = (w: number): number => we[4 * w + 2];
  /** Write event w's wid. */
  const wids: string[] = [];
  const weWid = (w: number): string => wids[w];
  /** Record r: recs[2r] its key, recs[2r + 1] its write event times 2, plus 1 when it is its transaction's last
   *  write of the key. */
  const recs = new Int32Array(2 * recordCount);
  const recKey = (r: number): number => recs[2 * r];
  const recEvent = (r: number): number => recs[2 * r + 1] >> 1;
  const recValue: (Row | null)[] = [];
  /** Records of raw transaction i: [txnRecords[i], txnRecords[i + 1]); its write events start at txnWrites[i]. */
  const txnRecords = new Int32Array(raw.length + 1);
  const txnWrites = new Int32Array(raw.length + 1);
  const widEvent = new Map<string, number>();
  // Each raw transaction's status, session and seq, read here once: later passes over all of them (T, sessions,
  // the order of T) then touch no transaction object, at a million transactions each a cache miss.
  const statusOf = new Uint8Array(raw.length);
  const sessionOf: number[] = [];
  const seqOf: number[] = [];
  {
    let w = 0;
    let rc = 0;
    for (let ti = 0; ti < raw.length; ti++) {
      const txn = raw[ti];
      txnRecords[ti] = rc;
      txnWrites[ti] = w;
      const status = (statusOf[ti] =
        txn.status === 'committed'
          ? COMMITTED
          : txn.status === 'aborted'
            ? ABORTED
            : txn.status === 'unknown'
              ? UNKNOWN
              : OTHER);
      sessionOf.push(txn.session);
      seqOf.push(txn.seq);
      const flags = status === ABORTED ? WRITER_ABORTED : status === UNKNOWN ? WRITER_UNKNOWN : 0;
      const events = txn.events;
      for (let ei = 0; ei < events.length; ei++) {
        const e = events[ei];
        if (e.op === 'select') continue;
        const t = tableIds.get(e.table)!;
        we[4 * w] = ti;
        we[4 * w + 1] = rc;
        we[4 * w + 2] = ei;
        we[4 * w + 3] = flags;
        if (e.op === 'delete') {
          for (const r of e.rows) {
            recs[2 * rc] = keyOf(t, r.key);
            recs[2 * rc++ + 1] = 2 * w;
            recValue.push(null);
          }
        } else {
          const rows = e.rows;
          for (let i = 0; i < rows.length; i++) {
            const row = completeRow(t, rows[i].row, txn, ei, e, i);
            recs[2 * rc] = keyOfRow(t, row);
            recs[2 * rc++ + 1] = 2 * w;
            recValue.push(row);
          }
        }
        wids.push(e.wid);
        widEvent.set(e.wid, w++);
      }
    }
    txnRecords[raw.length] = rc;
    txnWrites[raw.length] = w;
    we[4 * w + 1] = rc;
  }
  /** A History built in memory may reuse a wid: then a wid names the last event that has it, as a Map would. */
  const duplicateWids = widEvent.size !== writeEventCount;
  const eventIndexes = new Map<number, Map<number, number>>();
  const txnIndexes = new Map<number, Map<number, number>>();
  /** The last record of `key` among [start, end), or -1: a scan, or for a long range a Map made when first asked. */
  const lastRecord = (
    start: number,
    end: number,
    key: number,
    indexes: Map<number, Map<number, number>>,
    id: number,
  ): number => {
    if (end - start <= 16) {
      for (let r = end - 1; r >= start; r--) if (recs[2 * r] === key) return r;
      return -1;
    }
    let index = indexes.get(id);
    if (index === undefined) {
      index = new Map();
      for (let r = start; r < end; r++) index.set(recs[2 * r], r);
      indexes.set(id, index);
    }
    return index.get(key) ?? -1;
  };
  /** Write event w's record of `key` (its value), or -1 when it did not write the key. */
  const eventRecord = (w: number, key: number): number => lastRecord(weStart(w), weStart(w + 1), key, eventIndexes, w);
  /** Raw transaction ti's last record of `key`, or -1. */
  const txnRecord = (ti: number, key: number): number =>
    lastRecord(txnRecords[ti], txnRecords[ti + 1], key, txnIndexes, ti);
  /** Whether record r is its transaction's last write of its key (the version others may read). */
  const lastInTxn = (r: number): boolean => (recs[2 * r + 1] & 1) === 1;
  {
    const seen = new Int32Array(keys.length);
    for (let ti = 0; ti < raw.length; ti++) {
      for (let rec = txnRecords[ti + 1] - 1; rec >= txnRecords[ti]; rec--) {
        if (seen[recKey(rec)] !== ti + 1) {
          seen[recKey(rec)] = ti + 1;
          recs[2 * rec + 1] |= 1;
        }
      }
    }
  }

  // Which transactions are in T, and whose reads are checked.
  const inT = new Uint8Array(raw.length);
  const queue: number[] = [];
  for (let i = 0; i < raw.length; i++) {
    if (statusOf[i] === COMMITTED) {
      inT[i] = 1;
      queue.push(i);
    } else if (statusOf[i] === ABORTED && options.checkAbortedReads) queue.push(i);
  }

  /** Reads of walked transactions, in walk order; those of raw transaction i are [readStart[i], readEnd[i]). */
  const pending: ModelRead[] = [];
  const readStart = new Int32Array(raw.length);
  const readEnd = new Int32Array(raw.length);
  // Compiled WHEREs per table and WHERE text, by params: by the one param itself when there is one and it is a
  // string or a finite number (most statements), else by the params' JSON text. Equal JSON texts share one.
  const predicateCache: Map<
    string | undefined,
    { byParam: Map<string | number, CompiledPredicate>; byJson: Map<string, CompiledPredicate> }
  >[] = tables.map(() => new Map());
  const at = (txn: Txn, ei: number, e: HistoryEvent, table: TableSchema): string =>
    `${history.file}:${txn.line}: txn "${txn.id}" event ${ei + 1} (${e.op} on ${table.name})`;
  const compile = (
    txn: Txn,
    ei: number,
    e: HistoryEvent & { where?: string; params?: unknown[] },
    t: number,
    table: TableSchema,
  ): CompiledPredicate => {
    let byWhere = predicateCache[t].get(e.where);
    if (byWhere === undefined) {
      if (e.where !== undefined && (typeof e.where !== 'string' || e.where.trim() === ''))
        throw new InputError(`${at(txn, ei, e, table)}: "where" is blank or not text (leave it out to read every row)`);
      predicateCache[t].set(e.where, (byWhere = { byParam: new Map(), byJson: new Map() }));
    }
    const params = e.params;
    const param = params !== undefined && Array.isArray(params) && params.length === 1 ? params[0] : undefined;
    const byParam = typeof param === 'string' || (typeof param === 'number' && Number.isFinite(param));
    let json = '';
    if (!byParam) {
      // The cache key is JSON text: params nested too deep for JSON.stringify are refused first.
      if (params !== undefined && deeperThan(params, MAX_PARAMS_DEPTH) !== undefined)
        throw new InputError(`${at(txn, ei, e, table)}: "params" nested deeper than ${MAX_PARAMS_DEPTH} levels`);
      json = JSON.stringify(params ?? []);
    }
    let pred = byParam ? byWhere.byParam.get(param) : byWhere.byJson.get(json);
    if (pred === undefined) {
      try {
        // the budget's clock is consulted during long compilations and evaluations (a WHERE of 20,000 ORs on
        // every version of every key): --timeout holds however costly a WHERE is
        pred = compilePredicate(
          e.where,
          params ?? [],
          table.columns,
          options.deadline ? { checkDeadline: options.deadline } : undefined,
        );
      } catch (err) {
        if (err instanceof PredicateError) {
          throw new InputError(`${at(txn, ei, e, table)}: unsupported WHERE: ${err.message}`);
        }
        throw err;
      }
      if (byParam) byWhere.byParam.set(param, pred);
      else byWhere.byJson.set(json, pred);
    }
    return pred;
  };

  /**
   * Whether a version satisfies a read's WHERE. The predicate throws PredicateError when the row lacks a column
   * it reads or holds a value it cannot read: a malformed history (one built in memory; the reader refuses such
   * files), reported at the reading statement's line and the line of the write of that version.
   */
  const satisfies = (
    pred: CompiledPredicate,
    row: Row,
    txn: Txn,
    ei: number,
    e: HistoryEvent,
    wid: string,
  ): boolean => {
    try {
      return pred.test(row);
    } catch (err) {
      if (!(err instanceof PredicateError)) throw err;
      const w = widEvent.get(wid);
      const writer = wid === INIT_WID ? 'the initial rows' : w !== undefined ? writerText(raw[weTxn(w)]) : undefined;
      throw unevaluableWhere(
        history.file,
        { line: txn.line, txn: txn.id, event: ei + 1, op: e.op, table: e.table },
        writer,
        wid,
        err,
      );
    }
  };

  // The walked transaction's own writes so far: for each key it wrote, its record of the latest version (valid
  // while localStamp[key] is the walk's number), and the keys in the order it first wrote them.
  const localStamp = new Int32Array(keys.length);
  const localRecord = new Int32Array(keys.length);
  const localKeys = scratch<number>();
  let walks = 0;
  /** The last write event of each key in the walk so far: most reads read it, and a wid lookup can be saved. */
  const latestEvent = new Int32Array(keys.length).fill(-1);
  // Per read: keys of its rows, keys returned (returnedStamp[key] is the read's number), local keys, from-arrays.
  let returnedStamp = new Int32Array(keys.length + 16);
  let readCount = 0;
  const rowKeys = scratch<number>();
  const returnedKeys = scratch<number>();
  const localKeysOfRead = scratch<number>();
  /** The triples of all pending reads in one list, pending read p's from fromStart[p]: the key, the raw
   *  transaction read from (-1: init), the wid (copied into the model's fromKey, fromTxn, fromWid at the end). */
  const pendingKeys = scratch<number>();
  const pendingWids = scratch<string>();
  const fromRaw = scratch<number>();
  const fromStart: number[] = [];
  const unresolvedShapes = new Set<string>();
  /** A well-formedness anomaly of a read (anomaly.ts `ReadAnomaly`; explain/explain.ts says it in words). */
  const readAnomaly = (
    type: ReadAnomaly['type'],
    problem: ReadProblem,
    txn: Txn,
    ref: EventRef,
    key: number,
    more: Partial<ReadAnomaly> = {},
    writeEvent?: number,
  ): void => {
    const info = keys[key];
    const writer = writeEvent === undefined ? undefined : raw[weTxn(writeEvent)];
    const events = writer ? [ref, eventRef(writer, weEvent(writeEvent!))] : [ref];
    anomalies.push({
      type,
      problem,
      txns: writer ? [txn.id, writer.id] : [txn.id],
      events,
      reader: txn.id,
      read: ref,
      table: tables[info.table].schema.name,
      key: info.values,
      ...more,
      ...(writer ? { writer: writer.id } : {}),
    });
  };
  // The version object a read returned that was found equal to a record's value (or a key's initial row): the
  // reader keeps one object per version read (history/read-versions.ts), and a version is read many times (13.7 on
  // average in TPC-C), so the same two objects are not compared again. Dense: one slot per record, per key.
  const sameAsRecord: (Row | undefined)[] = new Array(recValue.length).fill(undefined);
  const sameAsInit: (Row | undefined)[] = [];
  const walk = (ti: number): void => {
    const stamp = ++walks;
    const txn = raw[ti];
    localKeys.n = 0;
    let nextWrite = txnWrites[ti];
    readStart[ti] = pending.length;
    const events = txn.events;
    for (let ei = 0; ei < events.length; ei++) {
      const e = events[ei];
      const t = tableIds.get(e.table)!;
      const schema = tables[t].schema;
      if (e.op !== 'insert') {
        const pred = compile(txn, ei, e, t, schema);
        const read = new ModelRead(txn, ti, ei, t, pred, e.partial === true);
        // Keys of every row first: a row that is not whole is refused before any row is judged.
        const rows = e.rows;
        rowKeys.n = 0;
        if (e.op === 'select')
          for (let i = 0; i < e.rows.length; i++)
            push(rowKeys, keyOfRow(t, completeRow(t, e.rows[i].row, txn, ei, e, i)));
        // a write's rows: their keys as the index found them
        else for (let i = 0; i < rows.length; i++) push(rowKeys, recKey(weStart(nextWrite) + i));
        if (keys.length > returnedStamp.length) {
          const grown = new Int32Array(keys.length * 2);
          grown.set(returnedStamp);
          returnedStamp = grown;
        }
        const serial = ++readCount;
        returnedKeys.n = 0;
        localKeysOfRead.n = 0;
        fromStart.push(fromRaw.n);
        for (let i = 0; i < rows.length; i++) {
          const key = rowKeys.items[i];
          const r = rows[i];
          const wid = e.op === 'select' ? (r as { wid: string }).wid : (r as { read: string }).read;
          const row = e.op === 'select' ? (r as { row: Row }).row : undefined;
          if (returnedStamp[key] === serial) {
            readAnomaly('value-mismatch', 'returned-twice', txn, read.ref, key);
            continue;
          }
          returnedStamp[key] = serial;
          push(returnedKeys, key);
          // The version read: its value, or a reason it cannot be resolved.
          let value: Row | null | undefined;
          let local = false;
          let source = -1; // the record whose value the version is (-1: the key's initial row)
          if (localStamp[key] === stamp) {
            local = true;
            push(localKeysOfRead, key);
            const rec = localRecord[key];
            source = rec;
            const own = weWid(recEvent(rec));
            value = recValue[rec];
            if (wid !== own) {
              readAnomaly('internal-inconsistency', 'own-version-overwritten', txn, read.ref, key, {
                wid,
                laterWid: own,
              });
              continue;
            }
            if (value === null) {
              readAnomaly('internal-inconsistency', 'own-row-deleted', txn, read.ref, key, { wid });
              continue;
            }
          } else if (wid === INIT_WID) {
            value = initRow[key];
            if (value === undefined) {
              readAnomaly('garbage-read', 'no-initial-row', txn, read.ref, key, { wid });
              continue;
            }
            push(pendingKeys, key);
            push(fromRaw, -1);
            pushText(pendingWids, wid);
          } else {
            const guess = duplicateWids || key >= latestEvent.length ? -1 : latestEvent[key];
            const w = guess >= 0 && weWid(guess) === wid ? guess : widEvent.get(wid);
            if (w === undefined) {
              if (history.truncated) {
                read.partial = true;
                const shape = `${txn.id}`;
                if (!unresolvedShapes.has(shape)) {
                  unresolvedShapes.add(shape);
                  notes.push(
                    `${txn.id} event ${ei + 1} read ${describeKey({ keys, tables }, key)} from wid ${wid}, which ` +
                      `is not in this truncated file: the read is treated as partial`,
                  );
                }
                continue;
              }
              readAnomaly('garbage-read', 'unknown-wid', txn, read.ref, key, { wid });
              continue;
            }
            const wt = weTxn(w);
            const flags = we[4 * w + 3];
            if (wt === ti) {
              readAnomaly('internal-inconsistency', 'own-later-write', txn, read.ref, key, { wid });
              continue;
            }
            const rec = eventRecord(w, key);
            if (rec < 0) {
              readAnomaly('garbage-read', 'writer-did-not-write-row', txn, read.ref, key, { wid }, w);
              continue;
            }
            if (flags & WRITER_ABORTED) {
              readAnomaly('aborted-read', 'writer-aborted', txn, read.ref, key, { wid }, w);
              continue;
            }
            // (a later write of the key by wt is in a later event: its wid is another, or the Map would give that
            // event)
            if (!lastInTxn(rec)) {
              const lastWid = weWid(recEvent(txnRecord(wt, key)));
              readAnomaly('intermediate-read', 'writer-overwrote', txn, read.ref, key, { wid, laterWid: lastWid }, w);
              continue;
            }
            value = recValue[rec];
            source = rec;
            if (value === null) {
              readAnomaly('value-mismatch', 'writer-deleted-row', txn, read.ref, key, { wid }, w);
              continue;
            }
            push(pendingKeys, key);
            push(fromRaw, wt);
            pushText(pendingWids, wid);
            // an unknown transaction a checked committed one read from committed: it joins T, to be walked
            if (flags & WRITER_UNKNOWN && inT[ti] && !inT[wt]) {
              inT[wt] = 1;
              queue.push(wt);
            }
          }
          // Value and predicate of the version read.
          const same = source >= 0 ? sameAsRecord : sameAsInit;
          const slot = source >= 0 ? source : key;
          if (row && same[slot] !== row) {
            const diff = rowDifference(row, value, schema, cleanPrototype);
            if (!diff) {
              while (same.length < slot) same.push(undefined); // (no holes: the array stays packed)
              same[slot] = row;
            } else {
              const kind = local ? 'internal-inconsistency' : 'value-mismatch';
              readAnomaly(kind, 'values-differ', txn, read.ref, key, {
                wid,
                differences: diff,
                own: local,
                row: value,
              });
            }
          }
          const seen = row ?? value;
          if (!satisfies(pred, seen, txn, ei, e, wid)) {
            readAnomaly('predicate-mismatch', 'where-not-satisfied', txn, read.ref, key, { wid, row: seen });
          }
        }
        // Local rows of this table that were not returned must not match the WHERE.
        for (let j = 0; j < localKeys.n; j++) {
          const key = localKeys.items[j];
          if (keys[key].table !== t || returnedStamp[key] === serial) continue;
          push(localKeysOfRead, key);
          const rec = localRecord[key];
          const value = recValue[rec];
          if (!read.partial && value !== null && satisfies(pred, value, txn, ei, e, weWid(recEvent(rec)))) {
            readAnomaly('internal-inconsistency', 'own-row-not-returned', txn, read.ref, key, { row: value });
          }
        }
        read.returned = keySetOf(returnedKeys);
        read.local = keySetOf(localKeysOfRead);
        // from is set once the reads in T are numbered (its triples' places are final then)
        read.fromCount = fromRaw.n - fromStart[fromStart.length - 1];
        pending.push(read);
      }
      if (e.op !== 'select') {
        const w = duplicateWids ? widEvent.get(e.wid)! : nextWrite;
        nextWrite++;
        for (let rec = weStart(w); rec < weStart(w + 1); rec++) {
          const key = recKey(rec);
          latestEvent[key] = w;
          if (localStamp[key] !== stamp) {
            localStamp[key] = stamp;
            push(localKeys, key);
          }
          localRecord[key] = rec;
        }
      }
    }
    readEnd[ti] = pending.length;
  };

  // Walk checked transactions; an unknown transaction joins T (and is walked) once a checked read reads it (an
  // aborted reader, with --check-aborted-reads, makes nobody committed).
  for (let qi = 0; qi < queue.length; qi++) {
    if ((qi & 63) === 63) options.deadline?.();
    walk(queue[qi]);
  }
  fromStart.push(fromRaw.n);

  // Dense ids: init, then T by session and seq (each session's transactions in file order, sorted by seq when
  // they are not already: a stable sort by session, then seq).
  const bySession = new Map<number, number[]>();
  for (let i = 0; i < raw.length; i++) {
    if (!inT[i]) continue;
    const s = sessionOf[i];
    const list = bySession.get(s);
    if (list) list.push(i);
    else bySession.set(s, [i]);
  }
  const members: number[] = [];
  for (const s of [...bySession.keys()].sort((a, b) => a - b)) {
    const list = bySession.get(s)!;
    let sorted = true;
    for (let j = 1; j < list.length && sorted; j++) if (seqOf[list[j - 1]] > seqOf[list[j]]) sorted = false;
    if (!sorted) list.sort((a, b) => seqOf[a] - seqOf[b]);
    for (const i of list) members.push(i);
  }
  const n = members.length + 1;
  const dense = new Int32Array(raw.length).fill(-1);
  for (let d = 1; d < n; d++) dense[members[d - 1]] = d;
  // made in file order (the order the raw transactions lie in memory), each put at its dense id
  const txns = new Array<ModelTxn>(n);
  txns[INIT] = { id: 'init', session: 0, seq: 0, level: levelIndex('SER'), recordedLevel: 'SER', line: 0 };
  for (let i = 0; i < raw.length; i++) {
    if (dense[i] < 0) continue;
    const r = raw[i];
    const level = effectiveLevel(r.iso, r.label, options.iso);
    txns[dense[i]] = {
      id: r.id,
      session: r.session,
      seq: r.seq,
      level: levelIndex(level),
      recordedLevel: r.iso,
      label: r.label,
      begin: r.begin,
      end: r.end,
      line: r.line,
      raw: r,
    };
  }
  const soPrev = new Int32Array(n).fill(INIT);
  soPrev[INIT] = -1;
  /** Some edge of so ∪ wr goes backwards in the file: only then can there be a cycle (G1c) to search for. */
  let backward = false;
  for (let d = 2; d < n; d++) {
    if (sessionOf[members[d - 1]] !== sessionOf[members[d - 2]]) continue;
    soPrev[d] = d - 1;
    if (members[d - 2] > members[d - 1]) backward = true;
  }

  // Last writes per transaction, keys in the order it first wrote them (their records: lastRecords from
  // lastStart[d], for writeWids); then the writers of each key.
  const noValues = new Map<number, Row | null>();
  const writes: Map<number, Row | null>[] = [noValues];
  const lastStart = new Int32Array(n + 1);
  const lastRecords = scratch<number>();
  const writeStamp = new Int32Array(keys.length);
  const lastOf = new Int32Array(keys.length);
  const order = scratch<number>();
  const writerCount = new Int32Array(keys.length);
  for (let d = 1; d < n; d++) {
    const ri = members[d - 1];
    const start = txnRecords[ri];
    const end = txnRecords[ri + 1];
    lastStart[d] = lastRecords.n;
    if (start === end) {
      writes.push(noValues);
      continue;
    }
    order.n = 0;
    for (let rec = start; rec < end; rec++) {
      const key = recKey(rec);
      if (writeStamp[key] !== d) {
        writeStamp[key] = d;
        push(order, key);
      }
      lastOf[key] = rec;
    }
    const values = new Map<number, Row | null>();
    for (let j = 0; j < order.n; j++) {
      const key = order.items[j];
      const rec = lastOf[key];
      let value = recValue[rec];
      if (duplicateWids) {
        const other = eventRecord(widEvent.get(weWid(recEvent(rec)))!, key);
        value = other < 0 ? (undefined as unknown as null) : recValue[other];
      }
      values.set(key, value);
      push(lastRecords, rec);
      writerCount[key]++;
    }
    writes.push(values);
  }
  lastStart[n] = lastRecords.n;
  const writersOf: number[][] = [];
  {
    // writers of every key in one array (offsets from the counts), then each key's as an array of its size
    const offset = new Int32Array(keys.length + 1);
    for (let key = 0; key < keys.length; key++) offset[key + 1] = offset[key] + writerCount[key];
    const all = new Int32Array(offset[keys.length]);
    const fill = offset.slice(0, keys.length);
    for (let d = 1; d < n; d++) for (const key of writes[d].keys()) all[fill[key]++] = d;
    const list = scratch<number>();
    for (let key = 0; key < keys.length; key++) {
      list.n = 0;
      for (let i = offset[key]; i < offset[key + 1]; i++) push(list, all[i]);
      writersOf.push(list.n === 0 ? NO_NUMBERS : firstOf(list.items, list.n));
      if (list.n > 0) tables[keys[key].table].writtenKeys.push(key);
    }
  }

  // Reads by transaction (dense order) and program order: each walked transaction's reads are one range of
  // pending, so ids follow from the ranges. The reads themselves are visited in pending order, the order they
  // were made in and lie in memory (in dense order, sessions interleaved in the file, each would be a miss).
  const readBase = new Int32Array(n + 1);
  for (let d = 1; d < n; d++) readBase[d + 1] = readBase[d] + readEnd[members[d - 1]] - readStart[members[d - 1]];
  const readCountInT = readBase[n];
  /** The pending read of each read id. */
  const pendingOf = new Int32Array(readCountInT);
  const readsOf: number[][] = [NO_NUMBERS];
  {
    const ids = scratch<number>();
    for (let d = 1; d < n; d++) {
      const first = readStart[members[d - 1]];
      ids.n = 0;
      for (let id = readBase[d]; id < readBase[d + 1]; id++) {
        pendingOf[id] = first + id - readBase[d];
        push(ids, id);
      }
      readsOf.push(ids.n === 0 ? NO_NUMBERS : firstOf(ids.items, ids.n));
    }
  }
  // wr edges (writer -> reader, writer not the reader) of pending read p: edgeFrom/edgeTo[edgeStart[p] ..]
  const edgeFrom = scratch<number>();
  const edgeTo = scratch<number>();
  const edgeStart = new Int32Array(pending.length + 1);
  const reads = new Array<ReadEvent>(readCountInT);
  /** The raw transaction of pending read p (its txn becomes the dense id). */
  const rawOfPending = new Int32Array(pending.length);
  for (let p = 0; p < pending.length; p++) {
    const read = pending[p];
    const ri = read.txn;
    rawOfPending[p] = ri;
    const d = dense[ri];
    if (d < 0) continue; // an aborted reader, checked for well-formedness only
    read.id = readBase[d] + p - readStart[ri];
    read.txn = d;
    reads[read.id] = read;
  }
  // the triples of the reads in T, in the order of their ids (a transaction's reads are contiguous)
  let triples = 0;
  for (let id = 0; id < readCountInT; id++) {
    reads[id].from = triples;
    triples += reads[id].fromCount;
  }
  const fromKey = new Int32Array(triples);
  const fromTxn = new Int32Array(triples);
  const fromWid = new Array<string>(triples);
  for (let p = 0; p < pending.length; p++) {
    edgeStart[p] = edgeFrom.n;
    const read = pending[p];
    const ri = rawOfPending[p];
    if (dense[ri] < 0) continue;
    const d = read.txn;
    const start = fromStart[p];
    for (let j = 0, at = read.from; j < read.fromCount; j++, at++) {
      const r = fromRaw.items[start + j];
      const w = r < 0 ? INIT : dense[r];
      fromKey[at] = pendingKeys.items[start + j];
      fromTxn[at] = w;
      fromWid[at] = pendingWids.items[start + j];
      if (w !== d) {
        push(edgeFrom, w);
        push(edgeTo, d);
        if (r > ri) backward = true;
      }
    }
  }
  edgeStart[pending.length] = edgeFrom.n;
  // the wr edges in the order of the reads, for the G1c search
  const wrFrom = scratch<number>();
  const wrTo = scratch<number>();
  if (backward) {
    for (let id = 0; id < readCountInT; id++) {
      const p = pendingOf[id];
      for (let e = edgeStart[p]; e < edgeStart[p + 1]; e++) {
        push(wrFrom, edgeFrom.items[e]);
        push(wrTo, edgeTo.items[e]);
      }
    }
  }

  let committed = 0,
    aborted = 0,
    unknown = 0;
  const sessions = new Set<number>();
  const droppedUnknown: string[] = [];
  for (let i = 0; i < raw.length; i++) {
    if (statusOf[i] === COMMITTED) committed++;
    else if (statusOf[i] === ABORTED) aborted++;
    else unknown++;
    sessions.add(sessionOf[i]);
    if (statusOf[i] === UNKNOWN && !inT[i]) droppedUnknown.push(raw[i].id);
  }
  const dropped = droppedUnknown.length;
  if (dropped > 0) notes.push(`${dropped} transaction(s) with unknown outcome were never read and are left out`);
  const model: CheckModel = {
    droppedUnknown,
    history,
    txns,
    n,
    soPrev,
    tables,
    tableIds,
    keys,
    keyIds,
    initRow,
    writes,
    writeWids: [],
    writersOf,
    reads,
    readsOf,
    fromKey,
    fromTxn,
    fromWid,
    anomalies,
    notes,
    stats: {
      transactions: raw.length,
      committed,
      aborted,
      unknown,
      dropped,
      events: eventCount,
      reads: reads.length,
      keys: keys.length,
      sessions: sessions.size,
    },
  };
  const lastRecordsOf = new Int32Array(lastRecords.n);
  for (let i = 0; i < lastRecords.n; i++) lastRecordsOf[i] = lastRecords.items[i];
  lazyWriteWids(model, lastStart, lastRecordsOf, recs, wids);
  // every edge forwards in the file: the file's order is a topological order, no cycle
  const cycle = backward ? findInformationFlowCycle(model, wrFrom, wrTo) : undefined;
  if (cycle) anomalies.push(cycle);
  return model;
}

/**
 * model.writeWids, made when first read (nothing in the checker reads it): the wid of each last write, from the
 * records of the last writes of transaction d, lastRecords[lastStart[d] .. lastStart[d + 1]). A function of its
 * own, so that the getter keeps these arrays and not everything buildModel's closures share.
 */
function lazyWriteWids(
  model: CheckModel,
  lastStart: Int32Array,
  lastRecords: Int32Array,
  recs: Int32Array,
  wids: readonly string[],
): void {
  let made: Map<number, string>[] | undefined;
  const make = (): Map<number, string>[] => {
    const noWids = new Map<number, string>();
    const all: Map<number, string>[] = [noWids];
    for (let d = 1; d < model.n; d++) {
      if (lastStart[d] === lastStart[d + 1]) {
        all.push(noWids);
        continue;
      }
      const ws = new Map<number, string>();
      for (let i = lastStart[d]; i < lastStart[d + 1]; i++) {
        const rec = lastRecords[i];
        ws.set(recs[2 * rec], wids[recs[2 * rec + 1] >> 1]);
      }
      all.push(ws);
    }
    return all;
  };
  Object.defineProperty(model, 'writeWids', { get: () => (made ??= make()), enumerable: true, configurable: true });
}

/** Columns where a returned row differs from the written one, as text, or undefined when they agree. */
/** cleanPrototype: Object.prototype has nothing enumerable (enumerableInObjectPrototype() is false). */
function rowDifference(
  returned: Row,
  written: Row,
  schema: TableSchema,
  cleanPrototype: boolean,
): ColumnDifference[] | undefined {
  let diffs: ColumnDifference[] | undefined;
  const plain = Object.getPrototypeOf(written) === Object.prototype;
  // for-in lists what Object.keys does, without making an array, when nothing enumerable can be inherited
  if (cleanPrototype && Object.getPrototypeOf(returned) === Object.prototype) {
    for (const col in returned) {
      const d = columnDifference(col, returned, written, plain, schema);
      if (d !== undefined) (diffs ??= []).push(d);
    }
  } else {
    for (const col of Object.keys(returned)) {
      const d = columnDifference(col, returned, written, plain, schema);
      if (d !== undefined) (diffs ??= []).push(d);
    }
  }
  return diffs;
}

function columnDifference(
  col: string,
  returned: Row,
  written: Row,
  plain: boolean,
  schema: TableSchema,
): ColumnDifference | undefined {
  const v = returned[col];
  const w = written[col];
  // the common case without hasOwnProperty: the same value, read from a plain object by a name it cannot inherit
  if (v === w && plain && w !== undefined && !(col in Object.prototype)) return undefined;
  if (!hasOwn(written, col)) return { column: col, returned: v, notWritten: true };
  if (v !== w && !valuesEqual(v, w, schema.columns[col])) return { column: col, returned: v };
  return undefined;
}

/** Whether Object.prototype has an enumerable property (something added it): for-in would list it. */
function enumerableInObjectPrototype(): boolean {
  for (const _ in Object.prototype) return true;
  return false;
}

const writerText = (t: { id: string; line: number }): string => `txn "${t.id}" at line ${t.line}`;

/** The error for a WHERE that cannot be evaluated on a version: the reading statement's line, who wrote the
 *  version (and which, when known), and the evaluator's reason. One wording for the model and the searches. */
function unevaluableWhere(
  file: string,
  at: { line: number; txn: string; event: number; op: string; table: string },
  writtenBy: string | undefined,
  version: string | undefined,
  err: Error,
): InputError {
  return new InputError(
    `${file}:${at.line}: txn "${at.txn}" event ${at.event} (${at.op} on ${at.table}): cannot evaluate its WHERE ` +
      `on a row` +
      `${writtenBy ? ` written by ${writtenBy}` : ''}${version !== undefined ? ` (version ${version})` : ''}: ` +
      `${err.message}`,
  );
}

/**
 * `read.pred.test(row)` on a version of a key, for the conflict search and the witness
 * (conflicts/conflicts.ts, search/witness.ts).
 * test() throws PredicateError on a value it cannot read or cast (a text cast to date in a format other than ISO,
 * a string past the evaluator's limit): that is turned into an InputError naming the reading statement's line
 * and the version's writer (a transaction id in the model, INIT for the initial rows), instead of a crash.
 */
export function predicateHolds(
  model: Pick<CheckModel, 'history' | 'txns'>,
  read: ReadEvent,
  row: Row,
  writer?: number,
): boolean {
  try {
    return read.pred.test(row);
  } catch (err) {
    if (!(err instanceof PredicateError)) throw err;
    const by = writer === undefined ? undefined : writer === INIT ? 'the initial rows' : writerText(model.txns[writer]);
    throw unevaluableWhere(model.history.file, read.ref, by, undefined, err);
  }
}

/** The wr edges of the model as (writer, reader, read, index into its from-arrays), for explanations. */
function wrEdge(model: CheckModel, writer: number, reader: number): { read: ReadEvent; i: number } | undefined {
  for (const ri of model.readsOf[reader]) {
    const r = model.reads[ri];
    for (let i = 0; i < r.fromCount; i++) if (model.fromTxn[r.from + i] === writer) return { read: r, i };
  }
  return undefined;
}

/** G1c: a cycle in so ∪ wr, found by depth-first search, reported with its edges. */
function findInformationFlowCycle(
  model: CheckModel,
  wrFrom: Scratch<number>,
  wrTo: Scratch<number>,
): Anomaly | undefined {
  const { n, txns, soPrev } = model;
  // Successors as one array (CSR): of each transaction, its session successor, then the readers of its writes
  // (wrFrom -> wrTo) in the order of the reads (the order the search takes them in: it decides which cycle is
  // reported).
  const degree = new Int32Array(n + 1);
  for (let t = 1; t < n; t++) degree[soPrev[t]]++;
  for (let e = 0; e < wrFrom.n; e++) degree[wrFrom.items[e]]++;
  const first = new Int32Array(n + 1);
  for (let t = 0; t < n; t++) first[t + 1] = first[t] + degree[t];
  const next = first.slice(0, n);
  const succ = new Int32Array(first[n]);
  for (let t = 1; t < n; t++) succ[next[soPrev[t]]++] = t;
  for (let e = 0; e < wrFrom.n; e++) succ[next[wrFrom.items[e]]++] = wrTo.items[e];
  const color = new Uint8Array(n);
  const parent = new Int32Array(n).fill(-1);
  // the search's stack: a transaction and the position of its next successor in succ
  const stackNode = new Int32Array(n);
  const stackAt = new Int32Array(n);
  for (let s = 0; s < n; s++) {
    if (color[s]) continue;
    let top = 0;
    stackNode[0] = s;
    stackAt[0] = first[s];
    color[s] = 1;
    while (top >= 0) {
      const u = stackNode[top];
      const i = stackAt[top];
      if (i >= first[u + 1]) {
        color[u] = 2;
        top--;
        continue;
      }
      stackAt[top]++;
      const v = succ[i];
      if (color[v] === 0) {
        color[v] = 1;
        parent[v] = u;
        top++;
        stackNode[top] = v;
        stackAt[top] = first[v];
      } else if (color[v] === 1) {
        const path = [v];
        for (let x = u; x !== v; x = parent[x]) path.push(x);
        path.reverse(); // child of v, ..., u, v
        const cyc = [v, ...path.slice(0, -1)]; // v -> ... -> u, and u -> v closes it
        const edges = cyc.map((a, j) => {
          const b = cyc[(j + 1) % cyc.length];
          if (soPrev[b] === a)
            return { from: txns[a].id, to: txns[b].id, kind: 'so' as const, session: txns[b].session };
          const wr = wrEdge(model, a, b)!;
          const k = model.keys[model.fromKey[wr.read.from + wr.i]];
          return {
            from: txns[a].id,
            to: txns[b].id,
            kind: 'wr' as const,
            read: wr.read.ref,
            table: model.tables[k.table].schema.name,
            key: k.values,
            wid: model.fromWid[wr.read.from + wr.i],
          };
        });
        return { type: 'circular-information-flow', txns: cyc.map((c) => txns[c].id), edges };
      }
    }
  }
  return undefined;
}

/** value(t, x) (docs/semantics.md §1): the row t's last write of key x left (init: the initial row), null when t
 *  deleted it or has no row for it. */
export function versionValue(model: CheckModel, t: number, key: number): Row | null {
  if (t === INIT) return model.initRow[key] ?? null;
  const v = model.writes[t].get(key);
  return v === undefined ? null : v;
}
