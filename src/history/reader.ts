/**
 * Streaming reader and validator for history files (history-format.md, version 1), plain or gzip, from a file,
 * a named pipe or standard input (`-`).
 *
 * bytes (gunzip when they start with 1f 8b) -> lines, split here as the bytes stream, each bounded before it is
 * buffered -> UTF-8 check, size and density check -> JSON.parse -> depth check -> validateLine -> History
 *
 * Every problem names the file, the line and what is wrong; the reader collects up to MAX_PROBLEMS of them and
 * throws one HistoryFormatError. Limits (format.ts, docs/history-format.md "Limits") bound the memory and time
 * any input can cost: the longest line, the total size after decompression, nesting depth, values per line.
 * What the format allows but the checker judges (a wid nobody wrote, a row that does not match its WHERE) is not
 * a format error: those are anomalies, reported by the checker. Every dictionary keyed by names from the file is
 * a Map or a null-prototype object, so that `toString` or `__proto__` are names like any other.
 */
import { open, stat } from 'node:fs/promises';
import { isUtf8 } from 'node:buffer';
import { pipeline, type Readable } from 'node:stream';
import { createGunzip } from 'node:zlib';
import {
  BYTES_PER_CONTAINER,
  DEFAULT_MAX_INPUT_BYTES,
  DEFAULT_MAX_LINE_BYTES,
  HISTORY_FORMAT,
  HISTORY_VERSION,
  INIT_WID,
  ISOLATION_LEVELS,
  MAX_LINE_BYTES_LIMIT,
  MAX_LINE_DEPTH,
  MAX_PARAMS_DEPTH,
  STDIN_NAME,
  TXN_STATUSES,
  type ColumnTypes,
  type HistoryEvent,
  type Row,
  type SqlValue,
  type TxnLine,
} from './format.js';
import { HistoryFormatError, InputError, type FormatProblem } from './input-errors.js';
import type { History, TableSchema, Txn } from './history.js';
import { PredicateError } from '../sql/errors.js';
import { fromSqlFn, parseTypeName } from '../sql/values.js';
import { ReadVersions, type SelectRow } from './read-versions.js';

const MAX_PROBLEMS = 20;
/** Columns of a table: PostgreSQL's MaxHeapAttributeNumber. */
const MAX_COLUMNS = 1600;
/**
 * Members of one JSON object in a long line (rows and `columns` have at most 1600; `meta` is small). JSON.parse
 * and Object.keys of an object of millions of members take seconds each.
 */
const MAX_OBJECT_MEMBERS = 65536;
/** Lines at least this long are scanned for their number of objects and arrays before JSON.parse. */
const SCAN_FROM_BYTES = 1024 * 1024;

/** Raised inside validation to abandon one line; collected as a problem. */
class LineProblem extends Error {}

function fail(message: string): never {
  throw new LineProblem(message);
}

type Json = Record<string, unknown>;

function isObject(v: unknown): v is Json {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

const hasOwn = (o: object, k: string): boolean => Object.hasOwn(o, k);

/** A JSON value as a message shows it: short, and never `null` for a number JSON.parse made Infinity. */
export function show(v: unknown): string {
  if (typeof v === 'number') {
    if (!Number.isFinite(v)) return `a number beyond the range of a double (read as ${v})`;
    return Number.isInteger(v) && !Number.isSafeInteger(v)
      ? `${v} (or a neighbour: integers beyond 2^53 are rounded when read)`
      : String(v);
  }
  if (typeof v === 'string') {
    const s = JSON.stringify(v.length > 60 ? v.slice(0, 60) : v);
    return v.length > 60 ? `${s.slice(0, -1)}…" (${v.length} characters)` : s;
  }
  if (v === undefined) return 'nothing';
  if (Array.isArray(v)) return v.length === 0 ? '[]' : `an array of ${v.length}`;
  if (typeof v === 'object' && v !== null) return 'an object';
  return String(v);
}

/** A name from the file in a message: quoted, and cut when long. */
const q = (name: string): string => show(name);

/** Declared names in a message: the first few. */
const list = (names: string[]): string =>
  names.length > 8 ? `${names.slice(0, 8).map(q).join(', ')}, ... (${names.length})` : names.map(q).join(', ');

function field<T>(
  obj: Json,
  name: string,
  where: string,
  check: (v: unknown) => v is T,
  what: string,
  optional = false,
): T | undefined {
  const v = obj[name];
  if (v === undefined) {
    if (optional) return undefined;
    fail(`${where}: missing field "${name}" (${what})`);
  }
  if (!check(v)) fail(`${where}: field "${name}" must be ${what}, got ${show(v)}`);
  return v;
}

const isString = (v: unknown): v is string => typeof v === 'string';
const isName = (v: unknown): v is string => typeof v === 'string' && v !== '';
const isNumber = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v);
/** Session and seq numbers: exact integers (2^53 and beyond are rounded by JSON.parse, merging two). */
const isPositiveInt = (v: unknown): v is number => Number.isSafeInteger(v) && (v as number) >= 1;
const isCount = (v: unknown): v is number => Number.isSafeInteger(v) && (v as number) >= 0;
const isBool = (v: unknown): v is boolean => typeof v === 'boolean';
const isArray = (v: unknown): v is unknown[] => Array.isArray(v);
const isNameArray = (v: unknown): v is string[] => Array.isArray(v) && v.every(isName);
const ONE_OF_LEVELS = `one of ${ISOLATION_LEVELS.join(' ')}`;
const ONE_OF_STATUSES = `one of ${TXN_STATUSES.join(' ')}`;
const SAFE = `an integer >= 1 and at most 2^53 - 1 = ${Number.MAX_SAFE_INTEGER} (larger JSON numbers are not exact)`;

// ---------------------------------------------------------------------------------------------------------------
// Values

const INT_RANGES = new Map<string, [number, number]>([
  ['int2', [-32768, 32767]],
  ['int4', [-2147483648, 2147483647]],
]);
const INT8_MIN = -9223372036854775808n;
const INT8_MAX = 9223372036854775807n;
const INTEGER_TEXT = /^[+-]?\d+$/;
const NUMERIC_TEXT = /^([+-]?)(\d*)(?:\.(\d*))?(?:[eE]([+-]?\d+))?$/;
/** PostgreSQL's numeric: up to 131072 digits before the decimal point, 16383 after (NUMERIC_DSCALE_MAX). */
const NUMERIC_MAX_INT_DIGITS = 131072;
const NUMERIC_MAX_SCALE = 16383;
/** Spellings every reader of numeric and int8 accepts (no exponent, few digits): no need to convert them. */
const SIMPLE_DECIMAL = /^-?\d{1,30}(?:\.\d{1,30})?$/;
const SIMPLE_INT8 = /^-?\d{1,18}$/;

/** What is wrong with a numeric's text (PostgreSQL's input syntax and limits), computed without expanding it. */
function numericProblem(s: string): string | undefined {
  if (s === 'NaN' || s === 'Infinity' || s === '-Infinity') return undefined;
  const m = NUMERIC_TEXT.exec(s);
  if (!m || (m[2] === '' && (m[3] ?? '') === '')) return 'a decimal as a JSON string for numeric (exact)';
  const int = m[2];
  const frac = m[3] ?? '';
  const exp = m[4] === undefined ? 0 : Number(m[4]); // may be ±Infinity: compared, never used to expand
  const scale = Math.max(0, frac.length - exp);
  if (!(scale <= NUMERIC_MAX_SCALE))
    return `a numeric with at most ${NUMERIC_MAX_SCALE} digits after the decimal point (PostgreSQL's limit)`;
  const digits = int + frac;
  const first = digits.search(/[1-9]/);
  if (first >= 0 && !(int.length + exp - first <= NUMERIC_MAX_INT_DIGITS))
    return `a numeric with at most ${NUMERIC_MAX_INT_DIGITS} digits before the decimal point (PostgreSQL's limit)`;
  return undefined;
}

/** What is wrong with an int8's text: not digits, or outside PostgreSQL's bigint range. */
function int8Problem(s: string): string | undefined {
  if (!INTEGER_TEXT.test(s)) return 'an integer as a JSON string for int8 (exact)';
  const digits = s.replace(/^[+-]?0*/, '');
  if (digits.length > 19 || BigInt(s) < INT8_MIN || BigInt(s) > INT8_MAX)
    return `an integer from ${INT8_MIN} to ${INT8_MAX} for int8`;
  return undefined;
}

/** Checks one (non-null) value of a column; returns what it should be, or undefined when it is fine. */
type ValueCheck = (v: unknown) => string | undefined;

const typeChecks = new Map<string, ValueCheck>();

/** The check of values of a column type (history-format.md "Values"), by PostgreSQL's rules for its base type. */
function valueCheckFor(type: string): ValueCheck {
  let check = typeChecks.get(type);
  if (check) return check;
  const ts = parseTypeName(type);
  const base = ts.supported ? ts.base : type;
  let shape: ValueCheck;
  switch (base) {
    case 'int2':
    case 'int4': {
      const [lo, hi] = INT_RANGES.get(base)!;
      shape = (v) =>
        typeof v === 'number' && Number.isInteger(v) && v >= lo && v <= hi
          ? undefined
          : `an integer (JSON number) from ${lo} to ${hi} for ${base}`;
      break;
    }
    case 'float4':
    case 'float8':
      shape = (v) => {
        if (v === 'NaN' || v === 'Infinity' || v === '-Infinity') return undefined;
        if (typeof v !== 'number') return `a JSON number (or "NaN", "Infinity", "-Infinity") for ${base}`;
        if (!Number.isFinite(v) || (base === 'float4' && !Number.isFinite(Math.fround(v))))
          return `a finite number within the range of ${base} (write "Infinity" as a string)`;
        return undefined;
      };
      break;
    case 'int8':
      shape = (v) => (typeof v === 'string' ? int8Problem(v) : 'an integer as a JSON string for int8 (exact)');
      break;
    case 'numeric':
      shape = (v) => (typeof v === 'string' ? numericProblem(v) : 'a decimal as a JSON string for numeric (exact)');
      break;
    case 'bool':
      shape = (v) => (typeof v === 'boolean' ? undefined : 'a JSON boolean for bool');
      break;
    case 'text':
    case 'varchar':
    case 'bpchar':
    case 'date':
    case 'timestamp':
    case 'timestamptz':
    case 'uuid':
      shape = (v) => (typeof v === 'string' ? undefined : `a JSON string for ${base}`);
      break;
    default:
      shape = () => undefined; // other types are recorded as given; reads that inspect them become partial
  }
  if (ts.supported) {
    // What the checker will do with the value: it must be able to read it (dates in range, valid uuids, ...).
    // Text needs no conversion, and the common short spellings of numbers are known to convert.
    const convert = fromSqlFn(ts);
    const plain = base === 'text' || base === 'varchar' || (base === 'bpchar' && ts.mods.length === 0);
    const simple = base === 'numeric' ? SIMPLE_DECIMAL : base === 'int8' ? SIMPLE_INT8 : undefined;
    check = (v) => {
      const problem = shape(v);
      if (problem || plain || simple?.test(v as string)) return problem;
      try {
        convert(v as Exclude<SqlValue, null>);
      } catch (e) {
        if (e instanceof PredicateError)
          return (
            `a valid ${type} value ` +
            `(${/\(([^()]*)\)$/.exec(e.message)?.[1].slice(0, 120) ?? 'PostgreSQL would not accept it'})`
          );
        throw e;
      }
      return undefined;
    };
  } else check = shape;
  typeChecks.set(type, check);
  return check;
}

/** A table as the reader checks rows against it: the declared columns and one value check per column. */
interface TableCheck {
  schema: TableSchema;
  checks: Map<string, ValueCheck>;
  names: string[];
  /** The versions its selects returned, each kept once (read-versions.ts); only when transactions are kept. */
  versions?: ReadVersions;
}

/**
 * Checks a row: an object holding every declared column (the recorder writes whole rows) and nothing else, each
 * value a scalar of its column's type. `where` prefixes messages.
 */
function validateRow(row: unknown, table: TableCheck, where: string): Row {
  if (!isObject(row)) fail(`${where}: a row must be a JSON object, got ${show(row)}`);
  const cols = Object.keys(row);
  for (const col of cols) {
    const check = table.checks.get(col);
    if (check === undefined)
      fail(
        `${where}: column ${q(col)} is not a column of table ${q(table.schema.name)} (declared: ${list(table.names)})`,
      );
    const v = row[col];
    if (v === null) continue;
    if (typeof v === 'object') fail(`${where}: column ${q(col)} has a non-scalar value (${show(v)})`);
    const problem = check(v);
    if (problem) fail(`${where}: column ${q(col)} = ${show(v)} should be ${problem}`);
  }
  if (cols.length !== table.names.length) {
    const missing = table.names.find((c) => !hasOwn(row, c))!;
    fail(
      `${where}: the row lacks column ${q(missing)} of table ${q(table.schema.name)} (every row holds every column)`,
    );
  }
  for (const k of table.schema.key)
    if (row[k] === null) fail(`${where}: key column ${q(k)} of table ${q(table.schema.name)} is null`);
  return row as Row;
}

// ---------------------------------------------------------------------------------------------------------------
// JSON shape

/** How deep arrays and objects nest in `root`, up to `limit`: the path to the first place deeper, or undefined. */
export function deeperThan(root: unknown, limit: number): string | undefined {
  if (typeof root !== 'object' || root === null) return undefined;
  const path = tooDeep(root, limit - 1);
  if (path === undefined) return undefined;
  let text = '';
  for (const k of path) {
    if (text.length >= 60) return `${text}…`;
    text += typeof k === 'number' ? `[${k}]` : `${text === '' ? '' : '.'}${k}`;
  }
  return text;
}

/**
 * The keys down to a container nested more than `left` levels below `v`, innermost last, or undefined. Recursive,
 * but never deeper than the limit (the input may nest 100,000 deep); no allocation unless it finds one.
 */
function tooDeep(v: object, left: number): (string | number)[] | undefined {
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) {
      const x: unknown = v[i];
      if (typeof x !== 'object' || x === null) continue;
      if (left === 0) return [i];
      const p = tooDeep(x, left - 1);
      if (p) {
        p.unshift(i);
        return p;
      }
    }
  } else {
    for (const k in v) {
      const x: unknown = (v as Json)[k];
      if (typeof x !== 'object' || x === null || !hasOwn(v, k)) continue;
      if (left === 0) return [k];
      const p = tooDeep(x, left - 1);
      if (p) {
        p.unshift(k);
        return p;
      }
    }
  }
  return undefined;
}

/**
 * Scans a long line's bytes before JSON.parse: the number of objects and arrays, and of elements in each array,
 * must stay under `max`, and members of each object under MAX_OBJECT_MEMBERS (JSON.parse of millions of
 * elements in one array takes minutes and gigabytes).
 */
function densityProblem(buf: Buffer, maxLine: number): string | undefined {
  const max = Math.max(1, Math.floor(maxLine / BYTES_PER_CONTAINER));
  const why =
    `(at most one per ${BYTES_PER_CONTAINER} bytes of the line limit, ${sizeText(maxLine)}; raise it ` +
    `with --max-line-mb)`;
  let containers = 0;
  let inString = false;
  // per open container, by depth: the most elements it may have, and how many it has (a comma adds one)
  const limits: number[] = [];
  const counts: number[] = [];
  let depth = 0;
  for (let i = 0, n = buf.length; i < n; i++) {
    const b = buf[i];
    if (inString) {
      if (b === 0x5c) i++;
      else if (b === 0x22) inString = false;
    } else if (b === 0x22) inString = true;
    else if (b === 0x7b || b === 0x5b) {
      if (++containers > max) return `more than ${max} JSON objects and arrays in one line ${why}`;
      limits[depth] = b === 0x7b ? MAX_OBJECT_MEMBERS : max;
      counts[depth++] = 0;
    } else if (b === 0x7d || b === 0x5d) depth = Math.max(0, depth - 1);
    else if (b === 0x2c && depth > 0 && ++counts[depth - 1] >= limits[depth - 1]) {
      return limits[depth - 1] === max
        ? `more than ${max} elements in one JSON array ${why}`
        : `more than ${MAX_OBJECT_MEMBERS} members in one JSON object (a table has at most ${MAX_COLUMNS} columns)`;
    }
  }
  return undefined;
}

// ---------------------------------------------------------------------------------------------------------------
// Lines

interface ReaderState {
  file: string;
  history: History;
  tables: Map<string, TableCheck>;
  wids: Set<string>;
  txnIds: Set<string>;
  /** Per session: its seq numbers, the highest, and the line of the transaction with the highest. */
  sessions: Map<number, { seqs: Seqs; max: number; line: number }>;
  sawHeader: boolean;
  keep: boolean;
  /** ReadOptions.onTxn. */
  onTxn?: (txn: TxnLine, line: number) => void;
  txnCount: number;
  endLine?: { line: number; transactions: number };
}

/**
 * A session's seq numbers: 1..prefix all present, and the others in a Set. A recorder writes a session's
 * transactions in seq order, so the Set stays empty and a million transactions cost no hashing.
 */
class Seqs {
  private prefix = 0;
  private readonly rest = new Set<number>();
  constructor(first: number) {
    this.add(first);
  }
  get size(): number {
    return this.prefix + this.rest.size;
  }
  /** For an integer n >= 1 (seqs are checked to be such before they get here). */
  has(n: number): boolean {
    return n <= this.prefix || this.rest.has(n);
  }
  add(n: number): void {
    if (n !== this.prefix + 1) {
      this.rest.add(n);
      return;
    }
    this.prefix++;
    while (this.rest.size > 0 && this.rest.delete(this.prefix + 1)) this.prefix++;
  }
}

function paramsProblem(params: unknown[]): string | undefined {
  const deep = deeperThan(params, MAX_PARAMS_DEPTH);
  if (deep !== undefined) return `"params" nested deeper than ${MAX_PARAMS_DEPTH} levels (at params${deep})`;
  // A number JSON.parse made ±Infinity (1e400) has no value to bind.
  const stack: unknown[] = [params];
  while (stack.length > 0) {
    const v = stack.pop();
    if (typeof v === 'number' && !Number.isFinite(v)) return `"params" holds ${show(v)}`;
    if (Array.isArray(v)) stack.push(...v);
    else if (typeof v === 'object' && v !== null) stack.push(...Object.values(v));
  }
  return undefined;
}

function validateEvent(raw: unknown, state: ReaderState, where: string): HistoryEvent {
  if (!isObject(raw)) fail(`${where}: an event must be a JSON object, got ${show(raw)}`);
  const op = field(raw, 'op', where, isString, 'one of select, insert, update, delete')!;
  if (op !== 'select' && op !== 'insert' && op !== 'update' && op !== 'delete')
    fail(`${where}: unknown op ${show(op)} (expected select, insert, update or delete)`);
  where = `${where} (${op})`;
  const tableName = field(raw, 'table', where, isString, 'a table name')!;
  const table = state.tables.get(tableName);
  if (!table) fail(`${where}: unknown table ${show(tableName)} (no "table" line declares it before this line)`);
  const rows = field(raw, 'rows', where, isArray, 'an array')!;
  if (op !== 'insert') {
    const text = field(raw, 'where', where, isString, 'SQL text', true);
    if (text !== undefined && text.trim() === '')
      fail(`${where}: field "where" is blank (leave it out to read every row)`);
    const params = field(raw, 'params', where, isArray, 'an array of values', true);
    if (params !== undefined) {
      const problem = paramsProblem(params);
      if (problem) fail(`${where}: ${problem}`);
    }
    field(raw, 'partial', where, isBool, 'a boolean', true);
    if (params !== undefined && text === undefined) fail(`${where}: "params" without "where"`);
  } else {
    for (const f of ['where', 'params', 'partial']) if (raw[f] !== undefined) fail(`${where}: an insert has no "${f}"`);
  }
  if (op !== 'select') {
    const wid = field(raw, 'wid', where, isString, 'a string')!;
    if (wid === INIT_WID) fail(`${where}: wid "init" is reserved for the initial rows`);
    if (wid === '') fail(`${where}: wid must not be empty`);
    const known = state.wids.size;
    state.wids.add(wid); // (one hash lookup, not has() and then add())
    if (state.wids.size === known) fail(`${where}: duplicate wid ${show(wid)} (a wid is unique in the file)`);
  }
  const key = table.schema.key;
  rows.forEach((r, i) => {
    const at = `${where} rows[${i}]`;
    if (!isObject(r)) fail(`${at}: must be a JSON object, got ${show(r)}`);
    switch (op) {
      case 'select': {
        const kept = table.versions?.find(r);
        if (kept !== undefined) {
          rows[i] = kept; // equal to r, validated when first read
          break;
        }
        field(r, 'wid', at, isName, 'the wid of the write that produced the row');
        validateRow(field(r, 'row', at, isObject, 'an object'), table, at);
        table.versions?.keep(r as unknown as SelectRow);
        break;
      }
      case 'insert':
        validateRow(field(r, 'row', at, isObject, 'an object'), table, at);
        break;
      case 'update':
        field(r, 'read', at, isName, 'the wid of the version it replaced');
        validateRow(field(r, 'row', at, isObject, 'an object'), table, at);
        break;
      case 'delete': {
        field(r, 'read', at, isName, 'the wid of the version it deleted');
        const values = field(r, 'key', at, isArray, 'an array of key values')!;
        if (values.length !== key.length)
          fail(
            `${at}: key has ${values.length} values, table ${q(table.schema.name)} has key ` +
              `(${key.map((k) => (k.length > 60 ? q(k) : k)).join(', ')})`,
          );
        values.forEach((v, j) => {
          if (v === null || typeof v === 'object')
            fail(`${at}: key value ${show(v)} for ${q(key[j])} should be a non-null scalar`);
          const problem = table.checks.get(key[j])!(v);
          if (problem) fail(`${at}: key value ${show(v)} for ${q(key[j])} should be ${problem}`);
        });
        break;
      }
    }
  });
  return raw as unknown as HistoryEvent;
}

function validateTable(obj: Json, lineNo: number, state: ReaderState): void {
  const name = field(obj, 'name', 'table', isName, 'a non-empty string')!;
  const where = `table ${show(name)}`;
  if (state.tables.has(name)) fail(`${where}: declared twice`);
  const key = field(obj, 'key', where, isNameArray, 'an array of column names')!;
  const declared = field(obj, 'columns', where, isObject, 'an object of column -> type')!;
  // A null-prototype copy: `columns[c]` is a declared type or undefined, whatever c is (toString, __proto__).
  const columns = Object.create(null) as ColumnTypes;
  const checks = new Map<string, ValueCheck>();
  let count = 0;
  for (const c in declared)
    if (hasOwn(declared, c) && ++count > MAX_COLUMNS)
      fail(`${where}: more than ${MAX_COLUMNS} columns (PostgreSQL's limit)`);
  const names = Object.keys(declared);
  if (names.length === 0) fail(`${where}: "columns" declares no column`);
  for (const c of names) {
    const t = declared[c];
    if (c === '') fail(`${where}: a column name must not be empty`);
    if (typeof t !== 'string' || t.trim() === '')
      fail(`${where}: type of column ${show(c)} must be a type name (string), got ${show(t)}`);
    columns[c] = t;
    checks.set(c, valueCheckFor(t));
  }
  if (key.length === 0) fail(`${where}: "key" must name at least one column`);
  for (const k of key)
    if (!checks.has(k)) fail(`${where}: key column ${q(k)} is not in "columns" (declared: ${list(names)})`);
  if (new Set(key).size !== key.length) fail(`${where}: "key" names a column twice`);
  const schema: TableSchema = { name, key, columns, line: lineNo };
  state.tables.set(name, { schema, checks, names, versions: state.keep ? new ReadVersions(names, key) : undefined });
  state.history.tables.set(name, schema);
  state.history.init.set(name, []);
}

function validateLine(obj: unknown, lineNo: number, state: ReaderState): void {
  if (!isObject(obj)) fail(`each line must be a JSON object, got ${show(obj)}`);
  const kind = obj.kind;
  if (!state.sawHeader) {
    if (kind !== 'history') fail(`the first line must be the "history" header, found kind ${show(kind)}`);
  } else if (state.endLine) {
    fail(`line after the "end" line (line ${state.endLine.line})`);
  }
  switch (kind) {
    case 'history': {
      if (state.sawHeader) fail('a second "history" header');
      if (obj.format !== HISTORY_FORMAT) fail(`"format" must be "${HISTORY_FORMAT}", got ${show(obj.format)}`);
      if (obj.version !== HISTORY_VERSION)
        fail(`unsupported version ${show(obj.version)} (this isocheck reads version ${HISTORY_VERSION})`);
      const meta = field(obj, 'meta', 'history', isObject, 'an object', true);
      state.history.meta = meta ?? {};
      state.sawHeader = true;
      return;
    }
    case 'table':
      validateTable(obj, lineNo, state);
      return;
    case 'init': {
      const name = field(obj, 'table', 'init', isString, 'a table name')!;
      const table = state.tables.get(name);
      if (!table) fail(`init: unknown table ${show(name)} (declare it with a "table" line first)`);
      const rows = field(obj, 'rows', `init of ${q(name)}`, isArray, 'an array of rows')!;
      const valid = rows.map((r, i) => validateRow(r, table, `init of ${q(name)} rows[${i}]`));
      const list = state.history.init.get(name)!;
      for (const row of valid) list.push({ row, line: lineNo });
      return;
    }
    case 'txn': {
      const id = field(obj, 'id', 'txn', isName, 'a non-empty string')!;
      const where = `txn ${show(id)}`;
      if (id === INIT_WID) fail(`${where}: the id "init" is reserved for the initial database`);
      if (state.txnIds.has(id)) fail(`${where}: duplicate transaction id`);
      const session = field(obj, 'session', where, isPositiveInt, SAFE)!;
      const seq = field(obj, 'seq', where, isPositiveInt, SAFE)!;
      const iso = field(obj, 'iso', where, isString, ONE_OF_LEVELS)!;
      if (!(ISOLATION_LEVELS as readonly string[]).includes(iso))
        fail(`${where}: unknown isolation level ${show(iso)} (expected ${ISOLATION_LEVELS.join(', ')})`);
      const status = field(obj, 'status', where, isString, ONE_OF_STATUSES)!;
      if (!(TXN_STATUSES as readonly string[]).includes(status))
        fail(`${where}: unknown status ${show(status)} (expected ${TXN_STATUSES.join(', ')})`);
      field(obj, 'label', where, isString, 'a string', true);
      field(obj, 'node', where, isString, 'a string', true);
      field(obj, 'begin', where, isNumber, 'a number (ms)', true);
      field(obj, 'end', where, isNumber, 'a number (ms)', true);
      const error = obj.error;
      if (error !== undefined && !isString(error)) {
        if (!isObject(error))
          fail(`${where}: "error" must be a string or an object {code, message}, got ${show(error)}`);
        for (const f of ['code', 'message'])
          if (error[f] !== undefined && !isString(error[f]))
            fail(`${where}: field "error.${f}" must be a string, got ${show(error[f])}`);
      }
      const events = field(obj, 'events', where, isArray, 'an array')!;
      const s = state.sessions.get(session);
      if (s?.seqs.has(seq)) fail(`${where}: session ${session} already has a transaction with seq ${seq}`);
      for (let i = 0; i < events.length; i++) validateEvent(events[i], state, `${where} event ${i + 1}`);
      if (s) {
        s.seqs.add(seq);
        if (seq > s.max) {
          s.max = seq;
          s.line = lineNo;
        }
      } else state.sessions.set(session, { seqs: new Seqs(seq), max: seq, line: lineNo });
      state.txnIds.add(id);
      if (state.keep) {
        // The line's own object becomes the Txn (a copy, {...obj}, would give each transaction a hidden class
        // of its own in V8: hundreds of bytes more per transaction, and slow reads of its fields).
        const txn = obj as unknown as Txn;
        txn.line = lineNo;
        state.history.txns.push(txn);
      }
      state.onTxn?.(obj as unknown as TxnLine, lineNo);
      state.txnCount++;
      return;
    }
    case 'end': {
      const n = field(obj, 'transactions', 'end', isCount, `a count from 0 to ${Number.MAX_SAFE_INTEGER}`)!;
      state.endLine = { line: lineNo, transactions: n };
      return;
    }
    default:
      fail(`unknown line kind ${show(kind)} (expected history, table, init, txn or end)`);
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Input

export interface ReadOptions {
  /** Called every 10,000 lines with the count of lines read. */
  onProgress?: (lines: number) => void;
  /** Called before each line with its number; may throw to stop reading (check() polls its memory guard so). */
  poll?: (line: number) => void;
  /** Keep the transactions in the History (default true); false validates the file in bounded memory. */
  keepTransactions?: boolean;
  /**
   * Called with each transaction once its line is valid (and its line number), as it is read: with
   * keepTransactions false, a file is streamed through in bounded memory (isocheck merge). An InputError thrown
   * here stops the reading and is thrown by readHistory.
   */
  onTxn?: (txn: TxnLine, line: number) => void;
  /** Longest line accepted, in bytes (default 64 MiB, DEFAULT_MAX_LINE_BYTES; at most 511 MiB). */
  maxLineBytes?: number;
  /** Most bytes read, after decompression (default 16 GiB, DEFAULT_MAX_INPUT_BYTES). */
  maxInputBytes?: number;
}

const GZIP_MAGIC = [0x1f, 0x8b];

function sizeText(bytes: number): string {
  const GiB = 1024 ** 3;
  const MiB = 1024 ** 2;
  if (bytes >= GiB && bytes % (GiB / 16) === 0) return `${bytes / GiB} GiB`;
  if (bytes >= MiB && bytes % (MiB / 16) === 0) return `${bytes / MiB} MiB`;
  return `${bytes} bytes`;
}

function limitOption(value: number | undefined, fallback: number, max: number, name: string): number {
  if (value === undefined) return fallback;
  if (!Number.isSafeInteger(value) || value < 1 || value > max)
    throw new InputError(`${name} must be a whole number of bytes from 1 to ${max}, got ${value}`);
  return value;
}

/** The input's bytes, decompressed when they start with the gzip magic bytes (whatever the name says). */
async function* inputBytes(input: Readable, display: string, gzName: boolean): AsyncGenerator<Buffer> {
  const it = (input as AsyncIterable<Buffer>)[Symbol.asyncIterator]();
  let head: Buffer = Buffer.alloc(0);
  while (head.length < 2) {
    const r = await it.next();
    if (r.done) break;
    head = head.length === 0 ? r.value : Buffer.concat([head, r.value]);
  }
  const gzip = head.length >= 2 && head[0] === GZIP_MAGIC[0] && head[1] === GZIP_MAGIC[1];
  if (!gzip) {
    if (gzName && head.length > 0)
      throw new InputError(
        `${display}:1: not a readable gzip file (the name ends in .gz, but the data does not start with gzip's ` +
          `magic bytes 1f 8b)`,
      );
    if (head.length > 0) yield head;
    for (;;) {
      const r = await it.next();
      if (r.done) return;
      yield r.value;
    }
  }
  // 64 KiB of output per zlib call: what a call produced is lost when it fails, so an error keeps its line number
  const gunzip = createGunzip({ chunkSize: 64 * 1024 });
  // pipeline: an error of the input reaches the gunzip stream, and stopping early destroys both
  pipeline(
    async function* () {
      yield head;
      for (;;) {
        const r = await it.next();
        if (r.done) return;
        yield r.value;
      }
    },
    gunzip,
    () => undefined,
  );
  yield* flowing(gunzip);
}

/**
 * A stream's chunks, taken as they come ('data'), so that every byte produced before an error is yielded before
 * the error is thrown (an async iterator drops what is buffered when the stream fails: a corrupt gzip would lose
 * the lines before the corruption, and its line number).
 */
async function* flowing(stream: Readable): AsyncGenerator<Buffer> {
  const HIGH = 4 * 1024 * 1024;
  const queue: Buffer[] = [];
  let queued = 0;
  let done = false;
  let error: unknown;
  let wake: (() => void) | undefined;
  const notify = (): void => {
    const w = wake;
    wake = undefined;
    w?.();
  };
  stream.on('data', (c: Buffer) => {
    queue.push(c);
    queued += c.length;
    if (queued >= HIGH) stream.pause();
    notify();
  });
  const finish = (e?: Error) => {
    if (e) error = e;
    done = true;
    notify();
  };
  stream.on('end', () => finish());
  stream.on('close', () => finish());
  stream.on('error', (e) => finish(e));
  try {
    for (;;) {
      const c = queue.shift();
      if (c !== undefined) {
        queued -= c.length;
        if (queued < HIGH && stream.isPaused()) stream.resume();
        yield c;
      } else if (done) {
        if (error !== undefined) throw error;
        return;
      } else await new Promise<void>((resolve) => (wake = resolve));
    }
  } finally {
    stream.destroy();
  }
}

/** Opens a history for reading: `-` is standard input; anything else is a path (file, named pipe, /dev/stdin). */
async function openInput(file: string): Promise<{ display: string; stream: Readable }> {
  if (file === '-') return { display: STDIN_NAME, stream: process.stdin };
  try {
    const st = await stat(file);
    if (st.isDirectory()) throw new InputError(`${file}: is a directory, not a history file`);
    const handle = await open(file, 'r');
    return { display: file, stream: handle.createReadStream({ highWaterMark: 1024 * 1024 }) };
  } catch (e) {
    if (e instanceof InputError) throw e;
    const code = (e as NodeJS.ErrnoException).code;
    // Standard input that is a socket (as Node's child processes get) cannot be opened by name: read it directly.
    if (code === 'ENXIO' && STDIN_PATHS.has(file)) return { display: file, stream: process.stdin };
    throw new InputError(`${file}: cannot read (${code ?? (e as Error).message})`);
  }
}

const STDIN_PATHS = new Set(['/dev/stdin', '/dev/fd/0', '/proc/self/fd/0']);

/**
 * Reads and validates one history: a file (plain or gzip), a named pipe, or standard input for `-` (named
 * `<stdin>` in messages). Throws HistoryFormatError (user error) listing what is wrong, InputError when the input
 * cannot be read.
 */
export async function readHistory(file: string, options: ReadOptions = {}): Promise<History> {
  const maxLine = limitOption(options.maxLineBytes, DEFAULT_MAX_LINE_BYTES, MAX_LINE_BYTES_LIMIT, 'maxLineBytes');
  const maxInput = limitOption(
    options.maxInputBytes,
    DEFAULT_MAX_INPUT_BYTES,
    Number.MAX_SAFE_INTEGER,
    'maxInputBytes',
  );
  const { display, stream } = await openInput(file);
  const state: ReaderState = {
    file: display,
    history: { file: display, meta: {}, tables: new Map(), init: new Map(), txns: [], truncated: true },
    tables: new Map(),
    wids: new Set(),
    txnIds: new Set(),
    sessions: new Map(),
    sawHeader: false,
    keep: options.keepTransactions !== false,
    onTxn: options.onTxn,
    txnCount: 0,
  };
  const problems: FormatProblem[] = [];
  const problem = (line: number, message: string): void => void problems.push({ file: display, line, message });
  /** Number of the line being read (1-based). */
  let lineNo = 1;
  let total = 0;
  /** The last line had no newline after it, or the gzip stream ended inside it: a crash may have cut it. */
  let lastLineCut = false;
  let stopped = false;

  /** One complete line; false stops reading. */
  const handleLine = (buf: Buffer, terminated: boolean): boolean => {
    if (options.onProgress && lineNo % 10000 === 0) options.onProgress(lineNo);
    options.poll?.(lineNo);
    // a UTF-8 byte order mark
    if (lineNo === 1 && buf[0] === 0xef && buf[1] === 0xbb && buf[2] === 0xbf) buf = buf.subarray(3);
    let blank = true;
    for (let i = 0; i < buf.length; i++) {
      const b = buf[i];
      if (b !== 0x20 && b !== 0x09 && b !== 0x0d) {
        blank = false;
        break;
      }
    }
    if (blank) {
      // The recorder never writes one; a run of them (a gzip of newlines) must not keep the reader busy.
      problem(lineNo, 'blank line (every line of a history is one JSON object); reading stopped here');
      return false;
    }
    if (!isUtf8(buf)) {
      problem(lineNo, 'not UTF-8 text');
      return problems.length < MAX_PROBLEMS && state.sawHeader;
    }
    if (buf.length >= SCAN_FROM_BYTES) {
      const dense = densityProblem(buf, maxLine);
      if (dense) {
        problem(lineNo, dense);
        return problems.length < MAX_PROBLEMS && state.sawHeader;
      }
    }
    let obj: unknown;
    try {
      obj = JSON.parse(buf.toString('utf8'));
      lastLineCut = false;
    } catch (e) {
      lastLineCut = !terminated;
      const why = (e as Error).message;
      problem(lineNo, `not valid JSON (${why.length > 200 ? `${why.slice(0, 200)}…` : why})`);
      return problems.length < MAX_PROBLEMS && state.sawHeader;
    }
    const deep = deeperThan(obj, MAX_LINE_DEPTH);
    if (deep !== undefined) {
      problem(lineNo, `JSON nested deeper than ${MAX_LINE_DEPTH} levels (at ${deep})`);
      return problems.length < MAX_PROBLEMS && state.sawHeader;
    }
    try {
      validateLine(obj, lineNo, state);
    } catch (e) {
      if (!(e instanceof LineProblem)) throw e;
      problem(lineNo, e.message);
      return problems.length < MAX_PROBLEMS && state.sawHeader;
    }
    return true;
  };

  let pending: Buffer[] = [];
  let pendingBytes = 0;
  try {
    outer: for await (const chunk of inputBytes(stream, display, file.endsWith('.gz'))) {
      let data = chunk;
      if (total + data.length > maxInput) data = data.subarray(0, maxInput - total);
      total += data.length;
      let start = 0;
      while (start < data.length) {
        const nl = data.indexOf(0x0a, start);
        const end = nl < 0 ? data.length : nl;
        if (pendingBytes + (end - start) > maxLine) {
          problem(
            lineNo,
            `line longer than ${sizeText(maxLine)} (the limit; raise it with --max-line-mb); reading stopped here`,
          );
          stopped = true;
          break outer;
        }
        if (nl < 0) {
          pending.push(data.subarray(start));
          pendingBytes += data.length - start;
          break;
        }
        const line =
          pendingBytes === 0 ? data.subarray(start, nl) : Buffer.concat([...pending, data.subarray(start, nl)]);
        pending = [];
        pendingBytes = 0;
        if (!handleLine(line, true)) {
          stopped = true;
          break outer;
        }
        lineNo++;
        start = nl + 1;
      }
      if (data !== chunk) {
        problem(
          lineNo,
          `the input is larger than ${sizeText(maxInput)} (after decompression; the limit: raise it with ` +
            `--max-input-gb); reading stopped here`,
        );
        stopped = true;
        break;
      }
    }
    if (!stopped && pendingBytes > 0) {
      // the last line, without a newline after it
      handleLine(Buffer.concat(pending), false);
    }
  } catch (e) {
    if (e instanceof LineProblem || e instanceof InputError) throw e;
    const code = (e as NodeJS.ErrnoException).code;
    const message = (e as Error).message;
    if (code === 'Z_BUF_ERROR' || /unexpected end of file/.test(message)) {
      // A gzip stream cut short by a crash: keep what was read, as with a plain file cut mid-line.
      if (!state.sawHeader) throw new InputError(`${display}:${lineNo}: not a readable gzip file (${message})`);
      lastLineCut = true;
    } else if (code === 'Z_DATA_ERROR' || code?.startsWith('Z_')) {
      throw new InputError(`${display}:${lineNo}: the gzip data is corrupt at or after this line (${message})`);
    } else if (code !== undefined) {
      throw new InputError(`${display}:${lineNo}: cannot read (${code})`);
    } else throw e;
  } finally {
    stream.destroy();
  }
  // A crash may cut the very last line in half: a truncated file, not a malformed one (only after a header).
  const last = problems[problems.length - 1];
  if (
    lastLineCut &&
    state.sawHeader &&
    !state.endLine &&
    problems.length === 1 &&
    last.line === lineNo &&
    last.message.startsWith('not valid JSON')
  ) {
    problems.pop();
  }
  if (!state.sawHeader && problems.length === 0) problem(Math.max(lineNo, 1), 'empty file: no "history" header');
  if (problems.length === 0) wholeFileProblems(state, problem);
  if (problems.length > 0) throw new HistoryFormatError(problems);
  state.history.truncated = state.endLine === undefined;
  fromReader.add(state.history);
  return state.history;
}

/** Problems only the whole file shows: gaps in a session's seq numbers, the `end` line's count. */
function wholeFileProblems(state: ReaderState, problem: (line: number, message: string) => void): void {
  let count = 0;
  for (const [session, s] of state.sessions) {
    if (s.max !== s.seqs.size) {
      const missing: number[] = [];
      for (let n = 1; n <= s.max && missing.length < 5; n++) if (!s.seqs.has(n)) missing.push(n);
      problem(
        s.line,
        `session ${session}: seq numbers have gaps (missing ` +
          `${missing.join(', ')}${missing.length === 5 ? ', ...' : ''}; a session's transactions are numbered 1, ` +
          `2, ...)`,
      );
      if (++count >= MAX_PROBLEMS) break;
    }
  }
  if (state.endLine && state.endLine.transactions !== state.txnCount) {
    problem(
      state.endLine.line,
      `"end" says ${state.endLine.transactions} transactions, the file has ${state.txnCount}`,
    );
  }
}

/** Histories readHistory returned (already valid). */
const fromReader = new WeakSet<History>();

/**
 * Validates a History built in memory (not by readHistory) as the reader validates a file: its tables, initial
 * rows and transactions are checked as the lines they would be, with their `line` numbers. Throws
 * HistoryFormatError. A History from readHistory passes at once.
 */
export function validateHistory(h: History): void {
  if (fromReader.has(h)) return;
  const state: ReaderState = {
    file: h.file,
    history: { file: h.file, meta: {}, tables: new Map(), init: new Map(), txns: [], truncated: true },
    tables: new Map(),
    wids: new Set(),
    txnIds: new Set(),
    sessions: new Map(),
    sawHeader: false,
    keep: false,
    txnCount: 0,
  };
  const problems: FormatProblem[] = [];
  const problem = (line: number, message: string): void => void problems.push({ file: h.file, line, message });
  let last = 1;
  const feed = (obj: object, line: number): void => {
    last = Math.max(last, line);
    if (problems.length >= MAX_PROBLEMS) return;
    const deep = deeperThan(obj, MAX_LINE_DEPTH);
    if (deep !== undefined) {
      problem(line, `JSON nested deeper than ${MAX_LINE_DEPTH} levels (at ${deep})`);
      return;
    }
    try {
      validateLine(obj, line, state);
    } catch (e) {
      if (!(e instanceof LineProblem)) throw e;
      problem(line, e.message);
    }
  };
  feed({ kind: 'history', format: HISTORY_FORMAT, version: HISTORY_VERSION, meta: h.meta }, 1);
  for (const t of h.tables.values())
    feed({ kind: 'table', name: t.name, key: t.key, columns: { ...t.columns } }, t.line);
  for (const [table, rows] of h.init) for (const r of rows) feed({ kind: 'init', table, rows: [r.row] }, r.line);
  for (const t of h.txns) {
    const { line, ...rest } = t;
    feed({ ...rest, kind: 'txn' }, line);
  }
  if (!h.truncated) feed({ kind: 'end', transactions: h.txns.length }, last + 1);
  if (problems.length === 0) wholeFileProblems(state, problem);
  if (problems.length > 0) throw new HistoryFormatError(problems.slice(0, MAX_PROBLEMS));
}
