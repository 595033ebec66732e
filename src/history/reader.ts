/**
 * Streaming reader and validator for history files (history-format.md, version 1), plain or gzip.
 *
 * file -> lines (readline, never the whole file as one string) -> JSON.parse -> validateLine -> History
 *
 * Every problem names the file, the line and what is wrong; the reader collects up to MAX_PROBLEMS of them and
 * throws one HistoryFormatError. What the format allows but the checker judges (a wid nobody wrote, a row that
 * does not match its WHERE) is not a format error: those are anomalies, reported by the checker.
 */
import { createReadStream } from 'node:fs';
import { open, stat } from 'node:fs/promises';
import { createInterface } from 'node:readline';
import { createGunzip } from 'node:zlib';
import type { Readable } from 'node:stream';
import {
  HISTORY_FORMAT,
  HISTORY_VERSION,
  INIT_WID,
  ISOLATION_LEVELS,
  TXN_STATUSES,
  type ColumnTypes,
  type HistoryEvent,
  type Row,
  type SqlValue,
} from './format.js';
import { HistoryFormatError, InputError, type FormatProblem } from './input-errors.js';
import type { History, TableSchema, Txn } from './history.js';

const MAX_PROBLEMS = 20;

/** Raised inside validation to abandon one line; collected as a problem. */
class LineProblem extends Error {}

function fail(message: string): never {
  throw new LineProblem(message);
}

type Json = Record<string, unknown>;

function isObject(v: unknown): v is Json {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function field<T>(obj: Json, name: string, where: string, check: (v: unknown) => v is T, what: string, optional = false): T | undefined {
  const v = obj[name];
  if (v === undefined) {
    if (optional) return undefined;
    fail(`${where}: missing field "${name}" (${what})`);
  }
  if (!check(v)) fail(`${where}: field "${name}" must be ${what}, got ${JSON.stringify(v)?.slice(0, 80)}`);
  return v;
}

const isString = (v: unknown): v is string => typeof v === 'string';
const isNumber = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v);
const isPositiveInt = (v: unknown): v is number => Number.isInteger(v) && (v as number) >= 1;
const isBool = (v: unknown): v is boolean => typeof v === 'boolean';
const isArray = (v: unknown): v is unknown[] => Array.isArray(v);
const isStringArray = (v: unknown): v is string[] => Array.isArray(v) && v.every((s) => typeof s === 'string');

const INTEGER_TEXT = /^[+-]?\d+$/;
const NUMERIC_TEXT = /^([+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?|NaN|[+-]?Infinity)$/;

/** Checks that a JSON value has the shape history-format.md gives for a column type. */
export function valueTypeProblem(v: SqlValue | undefined, type: string): string | undefined {
  if (v === null) return undefined;
  switch (type) {
    case 'int2':
    case 'int4':
      return Number.isInteger(v) ? undefined : `an integer (JSON number) for ${type}`;
    case 'float4':
    case 'float8':
      return typeof v === 'number' || v === 'NaN' || v === 'Infinity' || v === '-Infinity' ? undefined : `a JSON number for ${type}`;
    case 'int8':
      return typeof v === 'string' && INTEGER_TEXT.test(v) ? undefined : `an integer as a JSON string for int8 (exact)`;
    case 'numeric':
      return typeof v === 'string' && NUMERIC_TEXT.test(v) ? undefined : `a decimal as a JSON string for numeric (exact)`;
    case 'bool':
      return typeof v === 'boolean' ? undefined : `a JSON boolean for bool`;
    case 'text':
    case 'varchar':
    case 'bpchar':
    case 'date':
    case 'timestamp':
    case 'timestamptz':
      return typeof v === 'string' ? undefined : `a JSON string for ${type}`;
    default:
      return undefined; // other types are recorded as given; reads that inspect them become partial
  }
}

function validateRow(row: unknown, table: TableSchema, where: string, needAllKeys: boolean): Row {
  if (!isObject(row)) fail(`${where}: a row must be a JSON object`);
  for (const [col, v] of Object.entries(row)) {
    const type = table.columns[col];
    if (type === undefined) fail(`${where}: column "${col}" is not a column of table "${table.name}"`);
    if (v !== null && typeof v === 'object') fail(`${where}: column "${col}" has a non-scalar value ${JSON.stringify(v).slice(0, 80)}`);
    const problem = valueTypeProblem(v as SqlValue, type);
    if (problem) fail(`${where}: column "${col}" = ${JSON.stringify(v)} should be ${problem}`);
  }
  if (needAllKeys) {
    for (const k of table.key) {
      if (row[k] === undefined || row[k] === null) fail(`${where}: the row lacks key column "${k}" of table "${table.name}"`);
    }
  }
  return row as Row;
}

interface ReaderState {
  file: string;
  history: History;
  wids: Set<string>;
  txnIds: Set<string>;
  sessions: Map<number, Set<number>>;
  sawHeader: boolean;
  keep: boolean;
  txnCount: number;
  endLine?: { line: number; transactions: number };
}

function validateEvent(raw: unknown, state: ReaderState, where: string): HistoryEvent {
  if (!isObject(raw)) fail(`${where}: an event must be a JSON object`);
  const op = field(raw, 'op', where, isString, 'one of select, insert, update, delete');
  if (!['select', 'insert', 'update', 'delete'].includes(op!)) fail(`${where}: unknown op "${op}" (expected select, insert, update or delete)`);
  where = `${where} (${op})`;
  const tableName = field(raw, 'table', where, isString, 'a table name')!;
  const table = state.history.tables.get(tableName);
  if (!table) fail(`${where}: unknown table "${tableName}" (no "table" line declares it before this line)`);
  const rows = field(raw, 'rows', where, isArray, 'an array')!;
  if (op !== 'insert') {
    field(raw, 'where', where, isString, 'SQL text', true);
    field(raw, 'params', where, isArray, 'an array of values', true);
    field(raw, 'partial', where, isBool, 'a boolean', true);
    if (raw.params !== undefined && raw.where === undefined) fail(`${where}: "params" without "where"`);
  } else {
    for (const f of ['where', 'params', 'partial']) if (raw[f] !== undefined) fail(`${where}: an insert has no "${f}"`);
  }
  if (op !== 'select') {
    const wid = field(raw, 'wid', where, isString, 'a string')!;
    if (wid === INIT_WID) fail(`${where}: wid "init" is reserved for the initial rows`);
    if (wid === '') fail(`${where}: wid must not be empty`);
    if (state.wids.has(wid)) fail(`${where}: duplicate wid "${wid}" (a wid is unique in the file)`);
    state.wids.add(wid);
  }
  rows.forEach((r, i) => {
    const at = `${where} rows[${i}]`;
    if (!isObject(r)) fail(`${at}: must be a JSON object`);
    switch (op) {
      case 'select':
        field(r, 'wid', at, isString, 'the wid of the write that produced the row');
        validateRow(field(r, 'row', at, isObject, 'an object'), table, at, true);
        break;
      case 'insert':
        validateRow(field(r, 'row', at, isObject, 'an object'), table, at, true);
        break;
      case 'update':
        field(r, 'read', at, isString, 'the wid of the version it replaced');
        validateRow(field(r, 'row', at, isObject, 'an object'), table, at, true);
        break;
      case 'delete': {
        field(r, 'read', at, isString, 'the wid of the version it deleted');
        const key = field(r, 'key', at, isArray, 'an array of key values')!;
        if (key.length !== table.key.length) fail(`${at}: key has ${key.length} values, table "${table.name}" has key (${table.key.join(', ')})`);
        key.forEach((v, j) => {
          const problem = valueTypeProblem(v as SqlValue, table.columns[table.key[j]]);
          if (problem || v === null || typeof v === 'object') fail(`${at}: key value ${JSON.stringify(v)} for "${table.key[j]}" should be ${problem ?? 'a non-null scalar'}`);
        });
        break;
      }
    }
  });
  return raw as unknown as HistoryEvent;
}

function validateLine(obj: unknown, lineNo: number, state: ReaderState): void {
  if (!isObject(obj)) fail('each line must be a JSON object');
  const kind = obj.kind;
  if (!state.sawHeader) {
    if (kind !== 'history') fail(`the first line must be the "history" header, found kind ${JSON.stringify(kind)}`);
  } else if (state.endLine) {
    fail(`line after the "end" line (line ${state.endLine.line})`);
  }
  switch (kind) {
    case 'history': {
      if (state.sawHeader) fail('a second "history" header');
      if (obj.format !== HISTORY_FORMAT) fail(`"format" must be "${HISTORY_FORMAT}", got ${JSON.stringify(obj.format)}`);
      if (obj.version !== HISTORY_VERSION) fail(`unsupported version ${JSON.stringify(obj.version)} (this isocheck reads version ${HISTORY_VERSION})`);
      const meta = field(obj, 'meta', 'history', isObject, 'an object', true);
      state.history.meta = meta ?? {};
      state.sawHeader = true;
      return;
    }
    case 'table': {
      const name = field(obj, 'name', 'table', isString, 'a string')!;
      const where = `table "${name}"`;
      const key = field(obj, 'key', where, isStringArray, 'an array of column names')!;
      const columns = field(obj, 'columns', where, isObject, 'an object of column -> type')! as ColumnTypes;
      for (const [c, t] of Object.entries(columns)) if (typeof t !== 'string') fail(`${where}: type of column "${c}" must be a string`);
      if (key.length === 0) fail(`${where}: "key" must name at least one column`);
      for (const k of key) if (!(k in columns)) fail(`${where}: key column "${k}" is not in "columns"`);
      if (state.history.tables.has(name)) fail(`${where}: declared twice`);
      state.history.tables.set(name, { name, key, columns, line: lineNo });
      state.history.init.set(name, []);
      return;
    }
    case 'init': {
      const name = field(obj, 'table', 'init', isString, 'a table name')!;
      const table = state.history.tables.get(name);
      if (!table) fail(`init: unknown table "${name}" (declare it with a "table" line first)`);
      const rows = field(obj, 'rows', `init of "${name}"`, isArray, 'an array of rows')!;
      const list = state.history.init.get(name)!;
      rows.forEach((r, i) => list.push({ row: validateRow(r, table, `init of "${name}" rows[${i}]`, true), line: lineNo }));
      return;
    }
    case 'txn': {
      const id = field(obj, 'id', 'txn', isString, 'a string')!;
      const where = `txn "${id}"`;
      if (state.txnIds.has(id)) fail(`${where}: duplicate transaction id`);
      const session = field(obj, 'session', where, isPositiveInt, 'an integer >= 1')!;
      const seq = field(obj, 'seq', where, isPositiveInt, 'an integer >= 1')!;
      const iso = field(obj, 'iso', where, isString, `one of ${ISOLATION_LEVELS.join(' ')}`)!;
      if (!(ISOLATION_LEVELS as readonly string[]).includes(iso)) fail(`${where}: unknown isolation level "${iso}" (expected ${ISOLATION_LEVELS.join(', ')})`);
      const status = field(obj, 'status', where, isString, `one of ${TXN_STATUSES.join(' ')}`)!;
      if (!(TXN_STATUSES as readonly string[]).includes(status)) fail(`${where}: unknown status "${status}" (expected ${TXN_STATUSES.join(', ')})`);
      field(obj, 'label', where, isString, 'a string', true);
      field(obj, 'begin', where, isNumber, 'a number (ms)', true);
      field(obj, 'end', where, isNumber, 'a number (ms)', true);
      if (obj.error !== undefined && !isString(obj.error) && !isObject(obj.error)) fail(`${where}: "error" must be a string or an object {code, message}`);
      const events = field(obj, 'events', where, isArray, 'an array')!;
      const seqs = state.sessions.get(session) ?? new Set<number>();
      if (seqs.has(seq)) fail(`${where}: session ${session} already has a transaction with seq ${seq}`);
      const validated = events.map((e, i) => validateEvent(e, state, `${where} event ${i + 1}`));
      seqs.add(seq);
      state.sessions.set(session, seqs);
      state.txnIds.add(id);
      if (state.keep) state.history.txns.push({ ...(obj as unknown as Txn), events: validated, line: lineNo });
      state.txnCount++;
      return;
    }
    case 'end': {
      const n = field(obj, 'transactions', 'end', (v): v is number => Number.isInteger(v) && (v as number) >= 0, 'a count')!;
      state.endLine = { line: lineNo, transactions: n };
      return;
    }
    default:
      fail(`unknown line kind ${JSON.stringify(kind)} (expected history, table, init, txn or end)`);
  }
}

async function endsWithNewline(file: string): Promise<boolean> {
  const handle = await open(file, 'r');
  try {
    const { size } = await handle.stat();
    if (size === 0) return false;
    const buf = Buffer.alloc(1);
    await handle.read(buf, 0, 1, size - 1);
    return buf[0] === 0x0a;
  } finally {
    await handle.close();
  }
}

/** Lines of a (possibly gzip) file, streamed. */
export async function* readLines(file: string): AsyncGenerator<string> {
  let input: Readable = createReadStream(file);
  if (file.endsWith('.gz')) input = input.pipe(createGunzip());
  const rl = createInterface({ input, crlfDelay: Infinity });
  for await (const line of rl) yield line;
}

export interface ReadOptions {
  /** Called every 10,000 lines with the count of lines read. */
  onProgress?: (lines: number) => void;
  /** Keep the transactions in the History (default true); false validates the file in bounded memory. */
  keepTransactions?: boolean;
}

/** Reads and validates one history file. Throws HistoryFormatError (user error) listing what is wrong. */
export async function readHistory(file: string, options: ReadOptions = {}): Promise<History> {
  try {
    const st = await stat(file);
    if (!st.isFile()) throw new InputError(`${file}: not a file`);
  } catch (e) {
    if (e instanceof InputError) throw e;
    throw new InputError(`${file}: cannot read (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`);
  }
  const state: ReaderState = {
    file,
    history: { file, meta: {}, tables: new Map(), init: new Map(), txns: [], truncated: true },
    wids: new Set(),
    txnIds: new Set(),
    sessions: new Map(),
    sawHeader: false,
    keep: options.keepTransactions !== false,
    txnCount: 0,
  };
  const problems: FormatProblem[] = [];
  let lineNo = 0;
  let lastLineBroken = false;
  try {
    for await (const text of readLines(file)) {
      lineNo++;
      if (options.onProgress && lineNo % 10000 === 0) options.onProgress(lineNo);
      if (text.trim() === '') continue;
      let obj: unknown;
      try {
        obj = JSON.parse(text);
        lastLineBroken = false;
      } catch (e) {
        lastLineBroken = true;
        problems.push({ file, line: lineNo, message: `not valid JSON (${(e as Error).message})` });
        if (problems.length >= MAX_PROBLEMS) break;
        continue;
      }
      try {
        validateLine(obj, lineNo, state);
      } catch (e) {
        if (!(e instanceof LineProblem)) throw e;
        problems.push({ file, line: lineNo, message: e.message });
        if (problems.length >= MAX_PROBLEMS || !state.sawHeader) break;
      }
    }
  } catch (e) {
    if (e instanceof LineProblem) throw e;
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'Z_DATA_ERROR' || code === 'Z_BUF_ERROR' || /incorrect header check|unexpected end of file/.test((e as Error).message)) {
      // A gzip stream cut short by a crash: keep what was read, as with a plain file cut mid-line.
      if (!state.sawHeader) throw new InputError(`${file}: not a readable gzip file (${(e as Error).message})`);
      lastLineBroken = true;
    } else {
      throw new InputError(`${file}: cannot read (${code ?? (e as Error).message})`);
    }
  }
  // A crash may cut the very last line in half (no newline after it): a truncated file, not a malformed one.
  if (lastLineBroken && !state.endLine && (file.endsWith('.gz') || !(await endsWithNewline(file))) && problems.length === 1 && problems[0].line === lineNo && problems[0].message.startsWith('not valid JSON')) {
    problems.pop();
  }
  if (!state.sawHeader && problems.length === 0) problems.push({ file, line: Math.max(lineNo, 1), message: 'empty file: no "history" header' });
  if (problems.length === 0) {
    for (const [session, seqs] of state.sessions) {
      const max = Math.max(...seqs);
      if (max !== seqs.size) {
        const missing: number[] = [];
        for (let s = 1; s <= max && missing.length < 5; s++) if (!seqs.has(s)) missing.push(s);
        problems.push({ file, line: lineNo, message: `session ${session}: seq numbers have gaps (missing ${missing.join(', ')}; a session's transactions are numbered 1, 2, ...)` });
      }
    }
    if (state.endLine && state.endLine.transactions !== state.txnCount) {
      problems.push({ file, line: state.endLine.line, message: `"end" says ${state.endLine.transactions} transactions, the file has ${state.txnCount}` });
    }
  }
  if (problems.length > 0) throw new HistoryFormatError(problems);
  state.history.truncated = state.endLine === undefined;
  return state.history;
}
