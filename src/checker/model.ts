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
 * A History read from a file is valid (reader.ts); one built in memory may not be, so what the walk relies on is
 * checked where it is used and refused as an InputError naming the line: every row holds every column of its
 * table (a WHERE reads them), key columns are declared, a WHERE is not blank, params nest at most
 * MAX_PARAMS_DEPTH deep, and a value a WHERE cannot read is the history's fault, not a crash. Columns and rows
 * are looked up as own properties only (a column may be called `toString` or `__proto__`).
 */
import type { HistoryEvent, IsolationLevel, Row, SqlValue } from '../history/format.js';
import { INIT_WID, MAX_PARAMS_DEPTH } from '../history/format.js';
import { deeperThan } from '../history/reader.js';
import type { History, TableSchema, Txn } from '../history/history.js';
import { canonicalValue, compilePredicate, valuesEqual, PredicateError, type CompiledPredicate } from '../history/predicate.js';
import { InputError } from '../history/input-errors.js';
import type { Anomaly, EventRef } from './anomaly.js';
import { effectiveLevel, levelIndex, type IsoOverride } from './levels.js';

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

/** One read event (select, update or delete) of a checked transaction. */
export interface ReadEvent {
  id: number;
  txn: number;
  /** Position among the transaction's events (0-based, program order). */
  po: number;
  ref: EventRef;
  table: number;
  pred: CompiledPredicate;
  partial: boolean;
  /** Non-local reads: parallel arrays of key, the transaction read from, and the wid read. */
  fromKeys: number[];
  fromTxns: number[];
  fromWids: string[];
  /** Keys returned (local or not): never "unreturned". */
  returned: Set<number>;
  /** Keys the transaction had written before this read (local: not part of any witness). */
  local: Set<number>;
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
  /** Last write of each transaction per key: the row, or null for a delete (†). Index 0 (init) is empty. */
  writes: Map<number, Row | null>[];
  /** The wid of that last write. */
  writeWids: Map<number, string>[];
  /** Writers of each key other than init, in T. */
  writersOf: number[][];
  reads: ReadEvent[];
  /** Reads of each transaction in program order. */
  readsOf: number[][];
  anomalies: Anomaly[];
  /** Transactions whose commit outcome is unknown and that nobody read: left out (they may have committed). */
  droppedUnknown: string[];
  /** Notes for the user (unresolved wids in a truncated file, dropped unknown transactions, ...). */
  notes: string[];
  stats: { transactions: number; committed: number; aborted: number; unknown: number; dropped: number; events: number; reads: number; keys: number; sessions: number };
}

export interface ModelOptions {
  iso?: IsoOverride;
  checkAbortedReads?: boolean;
  /** Called now and then while building (every 64 transactions walked): may throw to stop (a deadline). */
  deadline?: () => void;
}

interface WidInfo {
  rawTxn: number;
  event: HistoryEvent;
  eventIndex: number;
  /** key id -> value written by this event */
  values: Map<number, Row | null>;
}

const SEP = '\u001f';

const hasOwn = (o: object, k: string): boolean => Object.prototype.hasOwnProperty.call(o, k);

export function describeKey(model: Pick<CheckModel, 'keys' | 'tables'>, key: number): string {
  const k = model.keys[key];
  return `${model.tables[k.table].schema.name}(${k.values.map((v) => JSON.stringify(v)).join(', ')})`;
}

export function eventRef(txn: Txn, index: number): EventRef {
  const e = txn.events[index];
  const ref: EventRef = { txn: txn.id, event: index + 1, line: txn.line, op: e.op, table: e.table };
  if (e.op !== 'insert') {
    if (e.where !== undefined) ref.where = e.where;
    if (e.params !== undefined) ref.params = e.params;
  }
  return ref;
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
      if (!hasOwn(schema.columns, k)) throw new InputError(`${history.file}:${schema.line}: table "${schema.name}": key column "${k}" is not declared in "columns"`);
    }
    tableIds.set(schema.name, tables.length);
    tables.push({ id: tables.length, schema, initKeys: [], writtenKeys: [] });
    columnNames.push(Object.keys(schema.columns));
  }
  /** A row must hold every column of its table (docs/history-format.md): a WHERE may read any of them. */
  const complete = (table: number, row: Row, line: number, where: () => string): Row => {
    if (typeof row !== 'object' || row === null) throw new InputError(`${history.file}:${line}: ${where()}: a row must be an object`);
    for (const c of columnNames[table]) {
      if (!hasOwn(row, c)) throw new InputError(`${history.file}:${line}: ${where()}: the row lacks column "${c}" of table "${tables[table].schema.name}" (every row holds every column)`);
    }
    return row;
  };

  const keyOf = (table: number, values: SqlValue[]): number => {
    const schema = tables[table].schema;
    let text = String(table);
    for (let i = 0; i < values.length; i++) text += SEP + canonicalValue(values[i], schema.columns[schema.key[i]]);
    let id = keyIds.get(text);
    if (id === undefined) {
      id = keys.length;
      keyIds.set(text, id);
      keys.push({ table, values });
      initRow.push(undefined);
    }
    return id;
  };
  const keyOfRow = (table: number, row: Row): number => keyOf(table, tables[table].schema.key.map((k) => row[k] ?? null));

  for (const [name, rows] of history.init) {
    const t = tableIds.get(name)!;
    rows.forEach(({ row, line }, i) => {
      complete(t, row, line, () => `init of "${name}" rows[${i}]`);
      const key = keyOfRow(t, row);
      if (initRow[key] !== undefined) throw new InputError(`${history.file}:${line}: init of "${name}" has two rows with key ${describeKey({ keys, tables }, key)}`);
      initRow[key] = row;
      tables[t].initKeys.push(key);
    });
  }

  // Index every write event by wid; per transaction, the last wid per key.
  const raw = history.txns;
  const wids = new Map<string, WidInfo>();
  const lastWidOf: Map<number, string>[] = raw.map(() => new Map());
  let eventCount = 0;
  raw.forEach((txn, ti) => {
    txn.events.forEach((e, ei) => {
      eventCount++;
      if (e.op === 'select') return;
      const t = tableIds.get(e.table)!;
      const values = new Map<number, Row | null>();
      if (e.op === 'delete') for (const r of e.rows) values.set(keyOf(t, r.key), null);
      else e.rows.forEach((r, i) => values.set(keyOfRow(t, complete(t, r.row, txn.line, () => `txn "${txn.id}" event ${ei + 1} (${e.op} on ${e.table}) rows[${i}]`)), r.row));
      wids.set(e.wid, { rawTxn: ti, event: e, eventIndex: ei, values });
      for (const k of values.keys()) lastWidOf[ti].set(k, e.wid);
    });
  });

  // Which transactions are in T, and whose reads are checked.
  const inT = new Uint8Array(raw.length);
  const checked = new Uint8Array(raw.length);
  const queue: number[] = [];
  raw.forEach((txn, i) => {
    if (txn.status === 'committed') {
      inT[i] = 1;
      queue.push(i);
    } else if (txn.status === 'aborted' && options.checkAbortedReads) queue.push(i);
  });

  interface PendingRead {
    rawTxn: number;
    eventIndex: number;
    ref: EventRef;
    table: number;
    pred: CompiledPredicate;
    partial: boolean;
    fromKeys: number[];
    fromRaw: number[];
    fromWids: string[];
    returned: Set<number>;
    local: Set<number>;
  }
  const pending: PendingRead[] = [];
  const predicateCache = new Map<string, CompiledPredicate>();
  const compile = (txn: Txn, ei: number, e: HistoryEvent & { where?: string; params?: unknown[] }, table: TableSchema): CompiledPredicate => {
    const at = () => `${history.file}:${txn.line}: txn "${txn.id}" event ${ei + 1} (${e.op} on ${table.name})`;
    if (e.where !== undefined && (typeof e.where !== 'string' || e.where.trim() === '')) throw new InputError(`${at()}: "where" is blank or not text (leave it out to read every row)`);
    // The cache key is JSON text: params nested too deep for JSON.stringify are refused first.
    if (e.params !== undefined && deeperThan(e.params, MAX_PARAMS_DEPTH) !== undefined) throw new InputError(`${at()}: "params" nested deeper than ${MAX_PARAMS_DEPTH} levels`);
    const cacheKey = `${table.name}${SEP}${e.where ?? ''}${SEP}${JSON.stringify(e.params ?? [])}`;
    let pred = predicateCache.get(cacheKey);
    if (!pred) {
      try {
        // the budget's clock is consulted during long compilations and evaluations (a WHERE of 20,000 ORs on
        // every version of every key): --timeout holds however costly a WHERE is
        pred = compilePredicate(e.where, e.params ?? [], table.columns, options.deadline ? { checkDeadline: options.deadline } : undefined);
      } catch (err) {
        if (err instanceof PredicateError) {
          throw new InputError(`${at()}: unsupported WHERE: ${err.message}`);
        }
        throw err;
      }
      predicateCache.set(cacheKey, pred);
    }
    return pred;
  };

  /**
   * Whether a version satisfies a read's WHERE. The predicate throws PredicateError when the row lacks a column
   * it reads or holds a value it cannot read: a malformed history (one built in memory; the reader refuses such
   * files), reported at the reading statement's line and the line of the write of that version.
   */
  const satisfies = (pred: CompiledPredicate, row: Row, txn: Txn, ei: number, e: HistoryEvent, wid: string): boolean => {
    try {
      return pred.test(row);
    } catch (err) {
      if (!(err instanceof PredicateError)) throw err;
      const info = wids.get(wid);
      const writer = wid === INIT_WID ? 'the initial rows' : info ? writerText(raw[info.rawTxn]) : undefined;
      throw unevaluableWhere(history.file, { line: txn.line, txn: txn.id, event: ei + 1, op: e.op, table: e.table }, writer, wid, err);
    }
  };

  const unresolvedShapes = new Set<string>();
  const walk = (ti: number): void => {
    checked[ti] = 1;
    const txn = raw[ti];
    const localWid = new Map<number, string>();
    const localValue = new Map<number, Row | null>();
    txn.events.forEach((e, ei) => {
      const t = tableIds.get(e.table)!;
      const schema = tables[t].schema;
      const ref = eventRef(txn, ei);
      if (e.op !== 'insert') {
        const pred = compile(txn, ei, e, schema);
        const read: PendingRead = { rawTxn: ti, eventIndex: ei, ref, table: t, pred, partial: e.partial === true, fromKeys: [], fromRaw: [], fromWids: [], returned: new Set(), local: new Set() };
        const rows: { key: number; wid: string; row?: Row }[] =
          e.op === 'select' ? e.rows.map((r, i) => ({ key: keyOfRow(t, complete(t, r.row, txn.line, () => `txn "${txn.id}" event ${ei + 1} (select on ${e.table}) rows[${i}]`)), wid: r.wid, row: r.row }))
          : e.op === 'update' ? e.rows.map((r) => ({ key: keyOfRow(t, r.row), wid: r.read }))
          : e.rows.map((r) => ({ key: keyOf(t, r.key), wid: r.read }));
        for (const { key, wid, row } of rows) {
          // Described only for an anomaly (JSON of the key values: most of the walk's garbage otherwise).
          const keyText = (): string => describeKey({ keys, tables }, key);
          if (read.returned.has(key)) {
            anomalies.push({ type: 'value-mismatch', message: `${txn.id} ${e.op} returned ${keyText()} twice`, txns: [txn.id], events: [ref], details: { key: keys[key].values } });
            continue;
          }
          read.returned.add(key);
          // The version read: its value, or a reason it cannot be resolved.
          let value: Row | null | undefined;
          if (localWid.has(key)) {
            read.local.add(key);
            const own = localWid.get(key)!;
            value = localValue.get(key)!;
            if (wid !== own) {
              anomalies.push({ type: 'internal-inconsistency', message: `${txn.id} ${e.op} read ${keyText()} as version ${wid}, but it had itself written version ${own} before`, txns: [txn.id], events: [ref], details: { key: keys[key].values, wid, own } });
              continue;
            }
            if (value === null) {
              anomalies.push({ type: 'internal-inconsistency', message: `${txn.id} ${e.op} read ${keyText()}, a row it had deleted itself`, txns: [txn.id], events: [ref], details: { key: keys[key].values, wid } });
              continue;
            }
          } else if (wid === INIT_WID) {
            value = initRow[key];
            if (value === undefined) {
              anomalies.push({ type: 'garbage-read', message: `${txn.id} ${e.op} read ${keyText()} as written by init, but the initial database has no such row`, txns: [txn.id], events: [ref], details: { key: keys[key].values, wid } });
              continue;
            }
            read.fromKeys.push(key);
            read.fromRaw.push(-1);
            read.fromWids.push(wid);
          } else {
            const info = wids.get(wid);
            if (!info) {
              if (history.truncated) {
                read.partial = true;
                const shape = `${txn.id}`;
                if (!unresolvedShapes.has(shape)) {
                  unresolvedShapes.add(shape);
                  notes.push(`${txn.id} event ${ei + 1} read ${keyText()} from wid ${wid}, which is not in this truncated file: the read is treated as partial`);
                }
                continue;
              }
              anomalies.push({ type: 'garbage-read', message: `${txn.id} ${e.op} read ${keyText()} from wid ${wid}, which no event of the history wrote`, txns: [txn.id], events: [ref], details: { key: keys[key].values, wid } });
              continue;
            }
            const writer = raw[info.rawTxn];
            if (info.rawTxn === ti) {
              anomalies.push({ type: 'internal-inconsistency', message: `${txn.id} ${e.op} read ${keyText()} from its own wid ${wid}, written later in the transaction`, txns: [txn.id], events: [ref], details: { key: keys[key].values, wid } });
              continue;
            }
            if (!info.values.has(key)) {
              anomalies.push({ type: 'garbage-read', message: `${txn.id} ${e.op} read ${keyText()} from wid ${wid} (${writer.id}), which did not write that row`, txns: [txn.id, writer.id], events: [ref, eventRef(writer, info.eventIndex)], details: { key: keys[key].values, wid } });
              continue;
            }
            if (writer.status === 'aborted') {
              anomalies.push({ type: 'aborted-read', message: `${txn.id} ${e.op} read ${keyText()} from wid ${wid} of ${writer.id}, which aborted (G1a)`, txns: [txn.id, writer.id], events: [ref, eventRef(writer, info.eventIndex)], details: { key: keys[key].values, wid } });
              continue;
            }
            if (lastWidOf[info.rawTxn].get(key) !== wid) {
              anomalies.push({ type: 'intermediate-read', message: `${txn.id} ${e.op} read ${keyText()} from wid ${wid} of ${writer.id}, which later overwrote it with ${lastWidOf[info.rawTxn].get(key)} (G1b)`, txns: [txn.id, writer.id], events: [ref, eventRef(writer, info.eventIndex)], details: { key: keys[key].values, wid } });
              continue;
            }
            value = info.values.get(key)!;
            if (value === null) {
              anomalies.push({ type: 'value-mismatch', message: `${txn.id} ${e.op} read ${keyText()} from wid ${wid} of ${writer.id}, which deleted that row`, txns: [txn.id, writer.id], events: [ref, eventRef(writer, info.eventIndex)], details: { key: keys[key].values, wid } });
              continue;
            }
            read.fromKeys.push(key);
            read.fromRaw.push(info.rawTxn);
            read.fromWids.push(wid);
          }
          // Value and predicate of the version read.
          if (row) {
            const diff = rowDifference(row, value, schema);
            if (diff) {
              const kind = read.local.has(key) ? 'internal-inconsistency' : 'value-mismatch';
              anomalies.push({ type: kind, message: `${txn.id} ${e.op} returned ${keyText()} with ${diff}, but ${read.local.has(key) ? 'it had itself written' : `wid ${wid} wrote`} ${JSON.stringify(value)}`, txns: [txn.id], events: [ref], details: { key: keys[key].values, wid, returned: row, written: value } });
            }
          }
          const seen = row ?? value;
          if (!satisfies(pred, seen, txn, ei, e, wid)) {
            anomalies.push({ type: 'predicate-mismatch', message: `${txn.id} ${e.op} returned ${keyText()} = ${JSON.stringify(seen)}, which does not satisfy WHERE ${e.where}${e.params ? ` with ${JSON.stringify(e.params)}` : ''}`, txns: [txn.id], events: [ref], details: { key: keys[key].values, wid, row: seen } });
          }
        }
        // Local rows of this table that were not returned must not match the WHERE.
        for (const [key, value] of localValue) {
          if (keys[key].table !== t || read.returned.has(key)) continue;
          read.local.add(key);
          if (!read.partial && value !== null && satisfies(pred, value, txn, ei, e, localWid.get(key)!)) {
            anomalies.push({ type: 'internal-inconsistency', message: `${txn.id} ${e.op} did not return ${describeKey({ keys, tables }, key)} = ${JSON.stringify(value)}, which it had written itself and which satisfies WHERE ${e.where}`, txns: [txn.id], events: [ref], details: { key: keys[key].values, row: value } });
          }
        }
        pending.push(read);
      }
      if (e.op !== 'select') {
        for (const [key, value] of wids.get(e.wid)!.values) {
          localWid.set(key, e.wid);
          localValue.set(key, value);
        }
      }
    });
  };

  // Walk checked transactions; an unknown transaction joins T (and is walked) once a checked read reads it.
  for (let qi = 0; qi < queue.length; qi++) {
    const ti = queue[qi];
    const before = pending.length;
    if ((qi & 63) === 63) options.deadline?.();
    walk(ti);
    if (!inT[ti]) continue; // an aborted reader (--check-aborted-reads) makes nobody committed
    for (let p = before; p < pending.length; p++) {
      for (const w of pending[p].fromRaw) {
        if (w >= 0 && !inT[w] && raw[w].status === 'unknown') {
          inT[w] = 1;
          queue.push(w);
        }
      }
    }
  }

  // Dense ids: init, then T by session and seq.
  const members = raw.map((_, i) => i).filter((i) => inT[i]);
  members.sort((a, b) => raw[a].session - raw[b].session || raw[a].seq - raw[b].seq);
  const dense = new Int32Array(raw.length).fill(-1);
  const txns: ModelTxn[] = [{ id: 'init', session: 0, seq: 0, level: levelIndex('SER'), recordedLevel: 'SER', line: 0 }];
  for (const i of members) {
    dense[i] = txns.length;
    const r = raw[i];
    const level = effectiveLevel(r.iso, r.label, options.iso);
    txns.push({ id: r.id, session: r.session, seq: r.seq, level: levelIndex(level), recordedLevel: r.iso, label: r.label, begin: r.begin, end: r.end, line: r.line, raw: r });
  }
  const n = txns.length;
  const soPrev = new Int32Array(n).fill(INIT);
  soPrev[INIT] = -1;
  for (let i = 2; i < n; i++) if (txns[i].session === txns[i - 1].session) soPrev[i] = i - 1;

  const writes: Map<number, Row | null>[] = [new Map()];
  const writeWids: Map<number, string>[] = [new Map()];
  const writersOf: number[][] = keys.map(() => []);
  for (let d = 1; d < n; d++) {
    const ri = members[d - 1];
    const values = new Map<number, Row | null>();
    const ws = new Map<number, string>();
    for (const [key, wid] of lastWidOf[ri]) {
      values.set(key, wids.get(wid)!.values.get(key)!);
      ws.set(key, wid);
      writersOf[key].push(d);
    }
    writes.push(values);
    writeWids.push(ws);
  }
  for (let key = 0; key < keys.length; key++) if (writersOf[key].length > 0) tables[keys[key].table].writtenKeys.push(key);

  const reads: ReadEvent[] = [];
  const readsOf: number[][] = txns.map(() => []);
  for (const p of pending) {
    const d = dense[p.rawTxn];
    if (d < 0) continue; // aborted reader checked for well-formedness only
    const read: ReadEvent = {
      id: reads.length,
      txn: d,
      po: p.eventIndex,
      ref: p.ref,
      table: p.table,
      pred: p.pred,
      partial: p.partial,
      fromKeys: p.fromKeys,
      fromTxns: p.fromRaw.map((w) => (w < 0 ? INIT : dense[w])),
      fromWids: p.fromWids,
      returned: p.returned,
      local: p.local,
    };
    reads.push(read);
  }
  reads.sort((a, b) => a.txn - b.txn || a.po - b.po);
  reads.forEach((r, i) => {
    r.id = i;
    readsOf[r.txn].push(i);
  });

  let committed = 0, aborted = 0, unknown = 0;
  for (const t of raw) {
    if (t.status === 'committed') committed++;
    else if (t.status === 'aborted') aborted++;
    else unknown++;
  }
  const droppedUnknown = raw.filter((t, i) => t.status === 'unknown' && !inT[i]).map((t) => t.id);
  const dropped = droppedUnknown.length;
  if (dropped > 0) notes.push(`${dropped} transaction(s) with unknown outcome were never read and are left out`);
  const model: CheckModel = {
    droppedUnknown, history, txns, n, soPrev, tables, tableIds, keys, keyIds, initRow, writes, writeWids, writersOf, reads, readsOf, anomalies, notes,
    stats: { transactions: raw.length, committed, aborted, unknown, dropped, events: eventCount, reads: reads.length, keys: keys.length, sessions: new Set(raw.map((t) => t.session)).size },
  };
  const cycle = findInformationFlowCycle(model);
  if (cycle) anomalies.push(cycle);
  return model;
}

/** Columns where a returned row differs from the written one, as text, or undefined when they agree. */
function rowDifference(returned: Row, written: Row, schema: TableSchema): string | undefined {
  let diffs: string[] | undefined;
  for (const col of Object.keys(returned)) {
    const v = returned[col];
    if (!hasOwn(written, col)) (diffs ??= []).push(`${col} = ${JSON.stringify(v)} (not written)`);
    else {
      const w = written[col];
      if (v !== w && !valuesEqual(v, w, schema.columns[col])) (diffs ??= []).push(`${col} = ${JSON.stringify(v)}`);
    }
  }
  return diffs?.join(', ');
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
    `${file}:${at.line}: txn "${at.txn}" event ${at.event} (${at.op} on ${at.table}): cannot evaluate its WHERE on a row` +
      `${writtenBy ? ` written by ${writtenBy}` : ''}${version !== undefined ? ` (version ${version})` : ''}: ${err.message}`,
  );
}

/**
 * `read.pred.test(row)` on a version of a key, for the conflict search and the witness (conflicts.ts, witness.ts).
 * test() throws PredicateError on a value it cannot read or cast (a text cast to date in a format other than ISO,
 * a string past the evaluator's limit): that is turned into an InputError naming the reading statement's line
 * and the version's writer (a transaction id in the model, INIT for the initial rows), instead of a crash.
 */
export function predicateHolds(model: Pick<CheckModel, 'history' | 'txns'>, read: ReadEvent, row: Row, writer?: number): boolean {
  try {
    return read.pred.test(row);
  } catch (err) {
    if (!(err instanceof PredicateError)) throw err;
    const by = writer === undefined ? undefined : writer === INIT ? 'the initial rows' : writerText(model.txns[writer]);
    throw unevaluableWhere(model.history.file, read.ref, by, undefined, err);
  }
}

/** The wr edges of the model as (writer, reader, read, index into its from-arrays), for explanations. */
export function wrEdge(model: CheckModel, writer: number, reader: number): { read: ReadEvent; i: number } | undefined {
  for (const ri of model.readsOf[reader]) {
    const r = model.reads[ri];
    const i = r.fromTxns.indexOf(writer);
    if (i >= 0) return { read: r, i };
  }
  return undefined;
}

/** G1c: a cycle in so ∪ wr, found by depth-first search, reported with its edges. */
function findInformationFlowCycle(model: CheckModel): Anomaly | undefined {
  const { n, txns, soPrev } = model;
  const succ: number[][] = Array.from({ length: n }, () => []);
  for (let t = 1; t < n; t++) succ[soPrev[t]].push(t);
  for (const r of model.reads) for (const w of r.fromTxns) if (w !== r.txn) succ[w].push(r.txn);
  const color = new Uint8Array(n);
  const parent = new Int32Array(n).fill(-1);
  for (let s = 0; s < n; s++) {
    if (color[s]) continue;
    const stack: [number, number][] = [[s, 0]];
    color[s] = 1;
    while (stack.length) {
      const top = stack[stack.length - 1];
      const [u, i] = top;
      if (i >= succ[u].length) {
        color[u] = 2;
        stack.pop();
        continue;
      }
      top[1]++;
      const v = succ[u][i];
      if (color[v] === 0) {
        color[v] = 1;
        parent[v] = u;
        stack.push([v, 0]);
      } else if (color[v] === 1) {
        const path = [v];
        for (let x = u; x !== v; x = parent[x]) path.push(x);
        path.reverse(); // child of v, ..., u, v
        const cyc = [v, ...path.slice(0, -1)]; // v -> ... -> u, and u -> v closes it
        const edges = cyc.map((a, j) => {
          const b = cyc[(j + 1) % cyc.length];
          if (soPrev[b] === a) return { from: txns[a].id, to: txns[b].id, kind: 'so' as const, reason: `${txns[a].id} precedes ${txns[b].id} in session ${txns[b].session}` };
          const wr = wrEdge(model, a, b)!;
          return { from: txns[a].id, to: txns[b].id, kind: 'wr' as const, reason: `${txns[b].id} read ${describeKey(model, wr.read.fromKeys[wr.i])} written by ${txns[a].id} (wid ${wr.read.fromWids[wr.i]})`, read: wr.read.ref, wid: wr.read.fromWids[wr.i] };
        });
        return { type: 'circular-information-flow', message: `information flows in a cycle (G1c): ${cyc.map((c) => txns[c].id).join(' -> ')} -> ${txns[v].id}`, txns: cyc.map((c) => txns[c].id), edges };
      }
    }
  }
  return undefined;
}
