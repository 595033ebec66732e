// Evaluation of a recorded read's "where" clause (history-format.md "where" semantics): the SQL
// boolean expression over one table's columns, with $1..$n bound to the read's JSON params, is
// parsed with libpg-query and compiled once into a tree of JS closures that evaluates it on row
// values with PostgreSQL semantics (three-valued logic, PostgreSQL's operator and unknown-literal
// type resolution, exact numeric, COLLATE "C" text, bpchar padding rules, dates/timestamps).
//
// Conventions (see also values.ts):
//  - Parameters behave like untyped ('unknown') literals whose text is what node-postgres sends
//    for the JSON value (String(number), 'true'/'false', strings as is but lone surrogates as U+FFFD,
//    arrays as array literals),
//    so their type is deduced from the context (the first use fixes it), as PostgreSQL does for a
//    statement prepared without parameter types.
//  - Run-time errors PostgreSQL would raise (division by zero, integer overflow, failing casts)
//    make test() return false: a read whose evaluation raised could not have succeeded. AND/OR
//    evaluate left to right with short-circuit like PostgreSQL's executor (constant arguments are
//    simplified first, like its planner). The planner may reorder top-level AND conjuncts by cost;
//    that cannot change test(): TRUE needs every conjunct TRUE without error in any order.
//  - Errors PostgreSQL raises while planning (type errors, bad literals or params, constant
//    subexpressions that fail) and anything unsupported throw PredicateError at compile time.
//  - The session TimeZone is taken to be UTC; text collation is "C".
//
// Hostile input (PREDICATE_LIMITS): a WHERE longer than 1,000,000 characters, with more than
// 200,000 parse-tree nodes or nested more than 1,000 nodes deep, and parameters nested more than 64
// levels deep are refused with a PredicateError naming the limit (PostgreSQL has no such limits
// short of its stack depth; the evaluator is recursive, so depth must be bounded). Evaluation is
// linear in the size of the clause per row: AND/OR/IN lists are flat loops, and an operand that
// PostgreSQL evaluates several times (the left side of BETWEEN and IN, BETWEEN's bounds) is
// evaluated once per row. Work that depends on the data (LIKE on long strings, numerics with
// thousands of digits) is charged to a work meter that calls PredicateOptions.checkDeadline.

import { loadModule, parseSync } from 'libpg-query';
import { deparseSync } from 'pgsql-deparser';
import { Decimal } from './decimal.js';
import { SqlEvalError, PredicateError, charge, clip, setWorkHook, showValue } from './errors.js';
import { asciiLower, likeEscape, likeMatcher } from './likepattern.js';
import {
  CATEGORY,
  DISPLAY,
  canonicalFn,
  castFn,
  cmpFn,
  eqFn,
  fromSqlFn,
  inputFn,
  isFloat,
  isImplicitCast,
  isInt,
  isPreferred,
  keyFn,
  parseIntText,
  parseTypeName,
  spec,
  typmodFn,
  type BaseType,
  type Internal,
  type SqlValue,
  type TypeSpec,
} from './values.js';
import { checkDateRange } from './datetime.js';

export { PredicateError } from './errors.js';
export { canonicalValue, valuesEqual } from './values.js';
export type { SqlValue } from './values.js';

export type Row = Record<string, SqlValue>;
export type ColumnTypes = Record<string, string>;

/** Limits on what compilePredicate accepts (see the header). */
export const PREDICATE_LIMITS = Object.freeze({
  /** characters of WHERE text */
  maxLength: 1_000_000,
  /** parse-tree nodes (a comparison "col = 1" is 4: the operator, the column, its name, the constant) */
  maxNodes: 200_000,
  /** nesting of parse-tree nodes */
  maxDepth: 1_000,
  /** nesting of arrays/objects in a parameter value */
  maxParamDepth: 64,
  /** characters of a string computed by || (PostgreSQL's limit, 1 GB, is beyond what JavaScript strings hold) */
  maxStringLength: 1 << 28,
});

export interface PredicateOptions {
  /** Called now and then (every ~2^20 units of work: compiled-node evaluations, pattern steps,
   *  digits of big numerics) while compiling and inside test(). It may throw (e.g. the checker's
   *  BudgetExceeded) to abort: the exception propagates out of compilePredicate/test unchanged. */
  checkDeadline?: () => void;
}

export interface CompiledPredicate {
  /** true iff the WHERE evaluates to TRUE on the row (NULL/unknown counts as not satisfied).
   *  Absent where => always true. Evaluation errors PostgreSQL would raise => false. Throws
   *  PredicateError if the row is not an object or lacks a column the predicate reads (own
   *  properties only), holds a malformed value (not a JSON scalar valid for the column's type), a
   *  value cast to a type in an input format this evaluator does not implement (e.g. text to date
   *  in a non-ISO format: PostgreSQL may accept it), or a computed string exceeds maxStringLength.
   *  Never throws anything else on data, except what PredicateOptions.checkDeadline throws. */
  test(row: Row): boolean;
  /** Static estimate of the work of one test() call (parse-tree nodes), in the units of the work
   *  meter; each test() charges it. Data-dependent work (long strings, huge numerics) comes on top
   *  and is metered as it happens. A caller without a checkDeadline hook can use it to weigh calls
   *  against its own time budget (e.g. a clock check every max(1, 2^20 / cost) calls). */
  cost: number;
  /** Columns the predicate reads. */
  columns: string[];
  /** Point constraints implied by the top-level AND conjuncts: column -> the finite set of values
   *  it must equal (canonicalValue strings for the column's type). */
  pointConstraints: Map<string, string[]>;
  /** The top-level AND conjuncts that read only the given columns and imply no point constraint (those are
   *  in `pointConstraints`), as one test on a row (it reads only those columns); undefined when there is none.
   *  When it is false on a row, `test` is false on every row with the same values, spelled the same way, in
   *  those columns: a conjunct that is not TRUE makes the AND not TRUE. The checker tests it on each version of
   *  a key (key columns keep their canonical values, not always their spelling: numeric 1.0 and 1.00) to skip
   *  keys a WHERE excludes by ranges or other conditions on key columns that `pointConstraints` misses. */
  conjunctsOn?(columns: ReadonlySet<string>): ((row: Row) => boolean) | undefined;
}

let loadPromise: Promise<void> | undefined;
let loaded = false;

/** A caller's mistake, not the history's: the synchronous API was used before the parser was loaded. */
export class ParserNotLoadedError extends Error {
  override name = 'ParserNotLoadedError';
  constructor() {
    super(
      'the WHERE-clause parser is not loaded: await loadPredicateParser() before checkHistory() (the async ' +
        'check() of the isocheck package loads it itself)',
    );
  }
}

/** Must be called (awaited) once before compilePredicate; loads the parser WASM. Idempotent. */
export async function loadPredicateParser(): Promise<void> {
  if (!loadPromise) {
    loadPromise = loadModule().then(() => {
      loaded = true;
    });
  }
  return loadPromise;
}

// ---------------------------------------------------------------------------------------------
// Compiled expression nodes

// libpg-query's parse tree, walked by node kind; typing it with @pgsql/types is a rewrite of this file (issue 18)
// biome-ignore lint/suspicious/noExplicitAny: see above
type Node = any;
type Ev = (row: Row) => Internal;
type T = BaseType | 'unknown';

interface Ex {
  t: T;
  ev: Ev;
  /** independent of the row (then cval holds the value) */
  konst: boolean;
  cval?: Internal;
  /** for 'unknown' literals/params: the text (null = NULL) */
  text?: string | null;
  /** for 'unknown' params: the 1-based number */
  param?: number;
  /** for 'unknown' params: this occurrence, marked when its type gets resolved */
  occ?: ParamOccurrence;
  /** for a bare column reference: the column name */
  col?: string;
  node: Node;
  /** implied point constraints (boolean expressions) */
  points?: Map<string, string[]>;
}

interface ParamOccurrence {
  n: number;
  resolved: boolean;
}

interface Ctx {
  /** per column: converter of history values with a one-entry cache */
  colCache: Map<string, (v: Exclude<SqlValue, null>) => Internal>;
  /** untyped parameter occurrences: PostgreSQL requires each to end up with the parameter's type */
  occurrences: ParamOccurrence[];
  params: unknown[];
  /** parameters referenced by the clause */
  referenced: Set<number>;
  paramTypes: (string | undefined)[];
  /** parameters whose nesting depth was checked */
  paramChecked: Set<number>;
  columns: ColumnTypes;
  used: string[];
  usedSet: Set<string>;
  /** generation of the current test() call (operands evaluated once per row are cached per generation) */
  run: { gen: number };
}

const NO_ROW = Object.freeze({}) as Row;

function describe(node: Node): string {
  try {
    const s = deparseSync(node);
    if (typeof s === 'string' && s.length > 0) return clip(s, 200);
  } catch {
    /* fall through */
  }
  try {
    return clip(JSON.stringify(node) ?? '', 200);
  } catch {
    return '(expression)';
  }
}

function fail(node: Node, why: string): never {
  throw new PredicateError(`${why} in "${describe(node)}"`);
}

function typeName(t: T): string {
  return DISPLAY[t] ?? t;
}

function unreachableEv(): never {
  throw new Error('internal error: evaluating an unresolved unknown-type expression');
}

function konstEx(t: T, v: Internal, node: Node): Ex {
  return { t, ev: () => v, konst: true, cval: v, node };
}

function unknownEx(text: string | null, node: Node, param?: number): Ex {
  return { t: 'unknown', ev: unreachableEv, konst: true, cval: undefined, text, param, node };
}

/** Builds a derived node; folds it to a constant if all its inputs are constant (PostgreSQL folds
 *  immutable constant subexpressions while planning, so their errors fail the whole query). */
function derive(t: T, ev: Ev, kids: Ex[], node: Node): Ex {
  if (kids.every((k) => k.konst)) {
    let v: Internal;
    try {
      v = ev(NO_ROW);
    } catch (e) {
      if (e instanceof SqlEvalError) fail(node, `${e.message} (PostgreSQL raises this error while planning the query)`);
      throw e;
    }
    return konstEx(t, v, node);
  }
  return { t, ev, konst: false, node };
}

/** An operand used several times (IN's and BETWEEN's left side, BETWEEN's bounds: PostgreSQL
 *  copies these expressions) is evaluated once per test() call: nested BETWEEN/IN would otherwise
 *  cost exponential time. The expression is immutable, so its value (or error) is the same. */
function shared(ctx: Ctx, e: Ex): Ex {
  if (e.konst || e.col !== undefined) return e;
  const f = e.ev;
  const run = ctx.run;
  let gen = -1;
  let lastRow: Row | undefined;
  let val: Internal;
  let err: unknown;
  let threw = false;
  const ev: Ev = (row) => {
    if (gen === run.gen && row === lastRow) {
      if (threw) throw err;
      return val;
    }
    gen = run.gen;
    lastRow = row;
    threw = false;
    try {
      val = f(row);
    } catch (x) {
      threw = true;
      err = x;
      throw x;
    }
    return val;
  };
  return { ...e, ev };
}

function isNullConst(e: Ex): boolean {
  return e.konst && e.t !== 'unknown' && e.cval === null;
}

// ---------------------------------------------------------------------------------------------
// Parameters

/** Parameter $n's value, refused if nested deeper than PREDICATE_LIMITS.maxParamDepth (node-postgres
 *  serialises arrays and objects recursively; JSON.parse builds any depth). */
function paramValue(ctx: Ctx, n: number, node: Node): unknown {
  const v = ctx.params[n - 1];
  if (ctx.paramChecked.has(n)) return v;
  // PostgreSQL verifies the encoding of parameter texts: a NUL byte is refused while binding
  const nul = () => fail(node, `invalid byte sequence for encoding "UTF8": 0x00 (parameter $${n})`);
  if (typeof v === 'string' && v.includes('\0')) nul();
  if (v !== null && typeof v === 'object') {
    const max = PREDICATE_LIMITS.maxParamDepth;
    const stack: [object, number][] = [[v, 1]];
    while (stack.length > 0) {
      const [x, d] = stack.pop()!;
      if (d > max) fail(node, `parameter $${n} is nested more than ${max} levels deep (limit ${max})`);
      const isArray = Array.isArray(x);
      const kids = isArray ? x : Object.values(x);
      charge(kids.length);
      for (const y of kids) {
        if (y !== null && typeof y === 'object') stack.push([y, d + 1]);
        else if (isArray && typeof y === 'string' && y.includes('\0')) nul(); // (objects are sent as JSON: escaped)
      }
    }
  }
  ctx.paramChecked.add(n);
  return v;
}

const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

/** The text PostgreSQL receives for a JavaScript string: node-postgres encodes it in UTF-8, lone
 *  surrogates becoming U+FFFD (String.prototype.toWellFormed). */
function wellFormed(s: string): string {
  return /[\ud800-\udfff]/.test(s) ? s.replace(LONE_SURROGATE, '\ufffd') : s;
}

/** The text node-postgres sends for a parameter value (null for NULL). */
function paramText(v: unknown): string | null {
  if (v === null || v === undefined) return null;
  if (typeof v === 'string') return wellFormed(v);
  if (typeof v === 'number' || typeof v === 'bigint') return String(v);
  if (typeof v === 'boolean') return v ? 'true' : 'false';
  if (Array.isArray(v)) return arrayString(v);
  return JSON.stringify(v) ?? null;
}

/** node-postgres' serialisation of a JS array parameter. */
function arrayString(a: unknown[]): string {
  charge(a.length);
  let r = '{';
  a.forEach((x, i) => {
    if (i > 0) r += ',';
    if (x === null || x === undefined) r += 'NULL';
    else if (Array.isArray(x)) r += arrayString(x);
    else r += `"${paramText(x)!.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;
  });
  return `${r}}`;
}

/** PostgreSQL's MAXDIM */
const MAX_ARRAY_DIMS = 6;

function tooManyDims(d: number): never {
  throw new SqlEvalError(`number of array dimensions (${d}) exceeds the maximum allowed (${MAX_ARRAY_DIMS})`);
}

/** Parses a PostgreSQL array literal ('{1,2,"a b",NULL}'), flattening nested dimensions. */
function parseArrayLiteral(s: string): (string | null)[] {
  charge(s.length);
  const out: (string | null)[] = [];
  let i = 0;
  const ws = () => {
    while (i < s.length && /\s/.test(s[i]!)) i++;
  };
  const bad = (): never => {
    throw new SqlEvalError(`malformed array literal: "${clip(s)}"`);
  };
  const level = (depth: number) => {
    if (s[i] !== '{') bad();
    if (depth > MAX_ARRAY_DIMS) tooManyDims(depth);
    i++;
    ws();
    if (s[i] === '}') {
      i++;
      return;
    }
    for (;;) {
      ws();
      if (s[i] === '{') level(depth + 1);
      else if (s[i] === '"') {
        i++;
        let v = '';
        while (i < s.length && s[i] !== '"') {
          if (s[i] === '\\') i++;
          if (i >= s.length) bad();
          v += s[i++];
        }
        if (s[i] !== '"') bad();
        i++;
        out.push(v);
      } else {
        let v = '';
        let escaped = false;
        let lastNonWs = 0;
        while (i < s.length && s[i] !== ',' && s[i] !== '}') {
          if (s[i] === '{' || s[i] === '"') bad();
          if (s[i] === '\\') {
            i++;
            if (i >= s.length) bad();
            escaped = true;
            v += s[i++];
            lastNonWs = v.length;
            continue;
          }
          v += s[i];
          if (!/\s/.test(s[i]!)) lastNonWs = v.length;
          i++;
        }
        v = v.slice(0, lastNonWs);
        if (v === '' && !escaped) bad();
        out.push(!escaped && v.toUpperCase() === 'NULL' ? null : v);
      }
      ws();
      if (s[i] === ',') {
        i++;
        continue;
      }
      if (s[i] === '}') {
        i++;
        return;
      }
      bad();
    }
  };
  ws();
  if (s[i] === '[') throw new PredicateError(`array literals with explicit bounds are not supported: "${clip(s)}"`);
  level(1);
  ws();
  if (i !== s.length) bad();
  return out;
}

function flattenJsonArray(a: unknown[], out: (string | null)[] = [], depth = 1): (string | null)[] {
  if (depth > MAX_ARRAY_DIMS) tooManyDims(depth);
  charge(a.length);
  for (const x of a) {
    if (Array.isArray(x)) flattenJsonArray(x, out, depth + 1);
    else out.push(paramText(x));
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Coercion

/** Resolves an unknown literal/param to type `ts` (input function, then explicit length coercion). */
function coerceUnknown(ctx: Ctx, e: Ex, ts: TypeSpec): Ex {
  const base = ts.base as BaseType;
  if (e.occ) e.occ.resolved = true;
  if (e.param !== undefined) {
    const prev = ctx.paramTypes[e.param];
    if (prev !== undefined && prev !== base) {
      fail(
        e.node,
        `inconsistent types deduced for parameter $${e.param} (${typeName(prev as T)} and ${typeName(base)})`,
      );
    }
    ctx.paramTypes[e.param] = base;
  }
  if (e.text === null || e.text === undefined) return konstEx(base, null, e.node);
  charge(1);
  try {
    let v = inputFn(base)(e.text);
    const tm = typmodFn(ts);
    if (tm) v = tm(v);
    return konstEx(base, v, e.node);
  } catch (err) {
    if (err instanceof SqlEvalError) {
      fail(
        e.node,
        e.param !== undefined
          ? `${err.message} (parameter $${e.param} = ${showValue(ctx.params[e.param - 1])})`
          : err.message,
      );
    }
    throw err;
  }
}

/** An unknown parameter whose type has been deduced meanwhile becomes a typed constant. */
function refresh(ctx: Ctx, e: Ex): Ex {
  if (e.t !== 'unknown' || e.param === undefined) return e;
  const t = ctx.paramTypes[e.param];
  return t === undefined || t.endsWith('[]') ? e : coerceUnknown(ctx, e, spec(t as BaseType));
}

function mapEx(t: T, e: Ex, fn: (v: Internal) => Internal, node: Node): Ex {
  const f = e.ev;
  const out = derive(
    t,
    (row) => {
      const v = f(row);
      return v === null ? null : fn(v);
    },
    [e],
    node,
  );
  return out;
}

/** Implicit coercion to `to` (the caller made sure it exists). */
function coerceTo(ctx: Ctx, e: Ex, to: BaseType): Ex {
  if (e.t === 'unknown') return coerceUnknown(ctx, e, spec(to));
  if (e.t === to) return e;
  const fn = castFn(e.t, to, false);
  if (!fn) fail(e.node, `cannot coerce ${typeName(e.t)} to ${typeName(to)}`);
  return mapEx(to, e, fn, e.node);
}

function toBool(ctx: Ctx, e: Ex, what: string): Ex {
  if (e.t === 'unknown') return coerceUnknown(ctx, e, spec('bool'));
  if (e.t !== 'bool') fail(e.node, `argument of ${what} must be type boolean, not type ${typeName(e.t)}`);
  return e;
}

/** For LIKE patterns and ||: unknown -> text, string types -> text. */
function toText(ctx: Ctx, e: Ex, what: string): Ex {
  if (e.t === 'unknown' || e.t === 'text') return coerceTo(ctx, e, 'text');
  if (CATEGORY[e.t] === 'S') return coerceTo(ctx, e, 'text');
  fail(e.node, `${what}: expected a string, got type ${typeName(e.t)}`);
}

// ---------------------------------------------------------------------------------------------
// Operator resolution (a faithful subset of PostgreSQL's for the supported types)

const CMP_OPS = new Set(['=', '<>', '<', '<=', '>', '>=']);

function opError(node: Node, op: string, l: T, r: T): never {
  fail(node, `operator does not exist: ${typeName(l)} ${op} ${typeName(r)}`);
}

/** The type both sides of a comparison are coerced to. */
function compareType(node: Node, op: string, l: T, r: T): BaseType {
  if (l === 'unknown' && r === 'unknown') return 'text';
  if (l === 'unknown') return r === 'varchar' ? 'text' : (r as BaseType);
  if (r === 'unknown') return l === 'varchar' ? 'text' : l;
  if (l === r) return l === 'varchar' ? 'text' : l;
  const cl = CATEGORY[l];
  if (cl !== CATEGORY[r]) opError(node, op, l, r);
  switch (cl) {
    case 'N':
      if (isFloat(l) || isFloat(r)) return 'float8';
      if (l === 'numeric' || r === 'numeric') return 'numeric';
      return l === 'int8' || r === 'int8' ? 'int8' : 'int4';
    case 'S':
      if (l === 'bpchar' || r === 'bpchar') return l === 'varchar' || r === 'varchar' ? 'bpchar' : 'text';
      return 'text';
    case 'D':
      return l === 'timestamptz' || r === 'timestamptz' ? 'timestamptz' : 'timestamp';
  }
  opError(node, op, l, r);
}

function selectCommonType(exprs: Ex[], node: Node | undefined, what: string): BaseType | undefined {
  let p: BaseType | undefined;
  for (const e of exprs) {
    if (e.t === 'unknown') continue;
    if (p === undefined) {
      p = e.t;
      continue;
    }
    if (e.t === p) continue;
    if (CATEGORY[e.t] !== CATEGORY[p]) {
      if (node === undefined) return undefined;
      fail(node, `${what} types ${typeName(p)} and ${typeName(e.t)} cannot be matched`);
    }
    if (!isPreferred(p) && isImplicitCast(p, e.t) && !isImplicitCast(e.t, p)) p = e.t;
  }
  return p ?? 'text';
}

interface ArithSig {
  a: BaseType;
  b: BaseType;
  res: BaseType;
}

function numericSig(op: string, node: Node, l: BaseType, r: BaseType): ArithSig {
  let t: BaseType;
  if (isFloat(l) || isFloat(r)) {
    if (op === '%') opError(node, op, l, r);
    t = l === 'float4' && r === 'float4' ? 'float4' : 'float8';
  } else if (l === 'numeric' || r === 'numeric') t = 'numeric';
  else if (l === 'int8' || r === 'int8') t = 'int8';
  else if (l === 'int2' && r === 'int2') t = 'int2';
  else t = 'int4';
  return { a: t, b: t, res: t };
}

function arithSig(node: Node, op: string, l: T, r: T): ArithSig {
  if (l === 'unknown' && r === 'unknown') fail(node, `operator is not unique: unknown ${op} unknown`);
  if (l === 'unknown' || r === 'unknown') {
    const x = (l === 'unknown' ? r : l) as BaseType;
    if (CATEGORY[x] === 'N') return numericSig(op, node, x, x);
    if (x === 'date' && op === '-') return { a: 'date', b: 'date', res: 'int4' };
    if (x === 'date' && op === '+') fail(node, `operator is not unique: ${typeName(l)} + ${typeName(r)}`);
    opError(node, op, l, r);
  }
  if (CATEGORY[l] === 'N' && CATEGORY[r] === 'N') return numericSig(op, node, l, r);
  const smallInt = (t: T) => t === 'int2' || t === 'int4';
  if (l === 'date' && smallInt(r) && (op === '+' || op === '-')) return { a: 'date', b: 'int4', res: 'date' };
  if (smallInt(l) && r === 'date' && op === '+') return { a: 'int4', b: 'date', res: 'date' };
  if (l === 'date' && r === 'date' && op === '-') return { a: 'date', b: 'date', res: 'int4' };
  opError(node, op, l, r);
}

const INT_MIN: Record<string, number> = { int2: -32768, int4: -2147483648 };
const INT_MAX: Record<string, number> = { int2: 32767, int4: 2147483647 };
const I8_MIN = -9223372036854775808n;
const I8_MAX = 9223372036854775807n;

function divZero(): never {
  throw new SqlEvalError('division by zero');
}

function arithFn(op: string, sig: ArithSig): (x: Internal, y: Internal) => Internal {
  const t = sig.res;
  if (t === 'int4' && sig.a === 'date') {
    // date - date (before the int4 operators: -infinity - -infinity is no integer)
    return (x: number, y: number) => {
      if (!Number.isFinite(x) || !Number.isFinite(y)) throw new SqlEvalError('cannot subtract infinite dates');
      return x - y;
    };
  }
  if (t === 'int2' || t === 'int4') {
    const lo = INT_MIN[t]!;
    const hi = INT_MAX[t]!;
    const chk = (v: number) => {
      if (v < lo || v > hi) throw new SqlEvalError(`${typeName(t)} out of range`);
      return v + 0;
    };
    switch (op) {
      case '+':
        return (x: number, y: number) => chk(x + y);
      case '-':
        return (x: number, y: number) => chk(x - y);
      case '*':
        return (x: number, y: number) => chk(x * y);
      case '/':
        return (x: number, y: number) => (y === 0 ? divZero() : chk(Math.trunc(x / y)));
      case '%':
        return (x: number, y: number) => (y === 0 ? divZero() : (x % y) + 0);
    }
  }
  if (t === 'int8') {
    const chk = (v: bigint) => {
      if (v < I8_MIN || v > I8_MAX) throw new SqlEvalError('bigint out of range');
      return v;
    };
    switch (op) {
      case '+':
        return (x: bigint, y: bigint) => chk(x + y);
      case '-':
        return (x: bigint, y: bigint) => chk(x - y);
      case '*':
        return (x: bigint, y: bigint) => chk(x * y);
      case '/':
        return (x: bigint, y: bigint) => (y === 0n ? divZero() : chk(x / y));
      case '%':
        return (x: bigint, y: bigint) => (y === 0n ? divZero() : x % y);
    }
  }
  if (t === 'numeric') {
    switch (op) {
      case '+':
        return Decimal.add;
      case '-':
        return Decimal.sub;
      case '*':
        return Decimal.mul;
      case '/':
        return Decimal.div;
      case '%':
        return Decimal.mod;
    }
  }
  if (t === 'float4' || t === 'float8') {
    const r = t === 'float4' ? Math.fround : (v: number) => v;
    const over = () => {
      throw new SqlEvalError('value out of range: overflow');
    };
    const under = () => {
      throw new SqlEvalError('value out of range: underflow');
    };
    switch (op) {
      case '+':
      case '-':
        return (x: number, y: number) => {
          const v = r(op === '+' ? x + y : x - y);
          if (!Number.isFinite(v) && !Number.isNaN(v) && Number.isFinite(x) && Number.isFinite(y)) over();
          return v;
        };
      case '*':
        return (x: number, y: number) => {
          const v = r(x * y);
          if (!Number.isFinite(v) && !Number.isNaN(v) && Number.isFinite(x) && Number.isFinite(y)) over();
          if (v === 0 && x !== 0 && y !== 0) under();
          return v;
        };
      case '/':
        return (x: number, y: number) => {
          if (y === 0 && !Number.isNaN(x)) divZero();
          const v = r(x / y);
          if (!Number.isFinite(v) && !Number.isNaN(v) && Number.isFinite(x)) over();
          if (v === 0 && x !== 0 && Number.isFinite(y)) under();
          return v;
        };
    }
  }
  if (t === 'date') {
    // date +/- int4, int4 + date
    if (sig.a === 'date') {
      return op === '+'
        ? (d: number, n: number) => (Number.isFinite(d) ? checkDateRange(d + n) : d)
        : (d: number, n: number) => (Number.isFinite(d) ? checkDateRange(d - n) : d);
    }
    return (n: number, d: number) => (Number.isFinite(d) ? checkDateRange(d + n) : d);
  }
  throw new Error(`internal error: no arithmetic for ${op} ${t}`);
}

// ---------------------------------------------------------------------------------------------
// Compilation

function lastName(list: Node[]): string {
  const n = list[list.length - 1];
  return n?.String?.sval ?? '';
}

function nodeKind(node: Node): [string, Node] {
  const keys = Object.keys(node);
  if (keys.length !== 1) throw new PredicateError(`unexpected parse tree node ${JSON.stringify(node).slice(0, 100)}`);
  return [keys[0]!, node[keys[0]!]];
}

function typeSpecOf(node: Node, typeNameNode: Node): { ts: TypeSpec; array: boolean } {
  const names: string[] = (typeNameNode.names ?? []).map((n: Node) => n.String?.sval ?? '');
  if (typeNameNode.setof || typeNameNode.pct_type) fail(node, 'unsupported type syntax');
  let name: string;
  if (names.length === 2 && names[0] === 'pg_catalog') name = names[1]!;
  else if (names.length === 1 && names[0] !== 'char') name = names[0]!;
  else fail(node, `unsupported type ${names.join('.')}`);
  const mods: number[] = (typeNameNode.typmods ?? []).map((m: Node) => {
    const v = m.A_Const?.ival;
    if (v === undefined) fail(node, 'unsupported type modifier');
    return v.ival ?? 0;
  });
  const ts = parseTypeName(mods.length ? `${name}(${mods.join(',')})` : name);
  if (!ts.supported) fail(node, `unsupported type ${name}${mods.length ? `(${mods.join(',')})` : ''}`);
  const bounds = typeNameNode.arrayBounds ?? [];
  return { ts, array: bounds.length > 0 };
}

function compile(ctx: Ctx, node: Node): Ex {
  const [kind, b] = nodeKind(node);
  switch (kind) {
    case 'A_Const':
      return compileConst(node, b);
    case 'ColumnRef':
      return compileColumn(ctx, node, b);
    case 'ParamRef':
      return compileParam(ctx, node, b);
    case 'TypeCast': {
      const { ts, array } = typeSpecOf(node, b.typeName);
      if (array) fail(node, 'array types are only supported as the right operand of ANY/ALL');
      return castEx(ctx, compile(ctx, b.arg), ts, node);
    }
    case 'CollateClause': {
      const coll = lastName(b.collname ?? []);
      if (!['C', 'POSIX', 'ucs_basic', 'pg_c_utf8'].includes(coll))
        fail(node, `unsupported collation "${coll}" (only "C" is modelled)`);
      let e = compile(ctx, b.arg);
      if (e.t === 'unknown') e = coerceTo(ctx, e, 'text');
      if (CATEGORY[e.t as BaseType] !== 'S') fail(node, `collations are not supported by type ${typeName(e.t)}`);
      return e;
    }
    case 'A_Expr':
      return compileAExpr(ctx, node, b);
    case 'BoolExpr':
      return compileBoolExpr(ctx, node, b);
    case 'NullTest': {
      if (b.argisrow) fail(node, 'row-wise IS NULL is not supported');
      const e = compile(ctx, b.arg);
      const isNull = b.nulltesttype === 'IS_NULL';
      if (e.t === 'unknown') return konstEx('bool', (e.text === null) === isNull, node);
      const f = e.ev;
      return derive('bool', isNull ? (row) => f(row) === null : (row) => f(row) !== null, [e], node);
    }
    case 'BooleanTest': {
      const e = toBool(ctx, compile(ctx, b.arg), String(b.booltesttype).replace(/_/g, ' '));
      const f = e.ev;
      let ev: Ev;
      switch (b.booltesttype) {
        case 'IS_TRUE':
          ev = (row) => f(row) === true;
          break;
        case 'IS_NOT_TRUE':
          ev = (row) => f(row) !== true;
          break;
        case 'IS_FALSE':
          ev = (row) => f(row) === false;
          break;
        case 'IS_NOT_FALSE':
          ev = (row) => f(row) !== false;
          break;
        case 'IS_UNKNOWN':
          ev = (row) => f(row) === null;
          break;
        case 'IS_NOT_UNKNOWN':
          ev = (row) => f(row) !== null;
          break;
        default:
          fail(node, `unsupported boolean test ${b.booltesttype}`);
      }
      const out = derive('bool', ev, [e], node);
      if (b.booltesttype === 'IS_TRUE' && e.points) out.points = e.points;
      return out;
    }
    case 'FuncCall':
      return fail(node, `function calls are not supported (${lastName(b.funcname ?? [])})`);
    case 'SubLink':
      return fail(node, 'subqueries are not supported');
    default:
      return fail(node, `unsupported expression (${kind})`);
  }
}

function compileConst(node: Node, b: Node): Ex {
  if (b.isnull) return unknownEx(null, node);
  if (b.ival !== undefined) return konstEx('int4', b.ival.ival ?? 0, node);
  if (b.fval !== undefined) {
    // make_const: an integer literal (decimal, 0x/0o/0b, underscores; negated by the grammar) is
    // int4 if it fits, else int8 if it fits, else numeric, as are other numeric literals
    const s: string = b.fval.fval ?? '0';
    let v: bigint | undefined;
    try {
      v = parseIntText(s, 'int8') as bigint;
    } catch (e) {
      if (!(e instanceof SqlEvalError)) throw e;
    }
    if (v !== undefined)
      return v >= -2147483648n && v <= 2147483647n ? konstEx('int4', Number(v), node) : konstEx('int8', v, node);
    let d: Decimal | undefined;
    try {
      d = Decimal.parse(s);
    } catch (e) {
      // "value overflows numeric format": PostgreSQL raises it while parsing the statement
      if (e instanceof SqlEvalError) fail(node, e.message);
      throw e;
    }
    if (d === undefined) fail(node, `invalid numeric constant ${clip(s)}`);
    return konstEx('numeric', d, node);
  }
  if (b.sval !== undefined) return unknownEx(b.sval.sval ?? '', node);
  if (b.boolval !== undefined) return konstEx('bool', b.boolval.boolval ?? false, node);
  fail(node, 'unsupported constant (bit strings are not supported)');
}

function compileColumn(ctx: Ctx, node: Node, b: Node): Ex {
  const fields: Node[] = b.fields ?? [];
  const last = fields[fields.length - 1];
  if (!last || last.A_Star !== undefined) fail(node, '"*" is not supported');
  const name: string = last.String?.sval ?? '';
  // columns and rows are looked up as own properties only ("toString" is a column name like any other)
  if (ctx.columns === null || typeof ctx.columns !== 'object' || !Object.hasOwn(ctx.columns, name)) {
    const known = ctx.columns !== null && typeof ctx.columns === 'object' ? Object.keys(ctx.columns) : [];
    fail(node, `unknown column "${clip(name)}" (known: ${clip(known.join(', '), 200)})`);
  }
  const type: unknown = ctx.columns[name];
  const ts = parseTypeName(type as string);
  if (!ts.supported)
    fail(
      node,
      `column "${clip(name)}" has unsupported type ${typeof type === 'string' ? clip(type) : showValue(type)}`,
    );
  if (!ctx.usedSet.has(name)) {
    ctx.usedSet.add(name);
    ctx.used.push(name);
  }
  const t = ts.base as BaseType;
  const missing = (): never => {
    throw new PredicateError(`row has no value for column "${clip(name)}" read by the where clause`);
  };
  let ev: Ev;
  if ((t === 'text' || t === 'varchar') && ts.mods.length === 0) {
    const conv = fromSqlFn(ts, name);
    ev = (row) => {
      const v = Object.hasOwn(row, name) ? row[name] : undefined;
      if (typeof v === 'string') return v;
      if (v === null) return null;
      if (v === undefined) return missing();
      return conv(v);
    };
  } else {
    let conv = fromSqlFn(ts, name);
    if (t === 'int8' || t === 'numeric' || t === 'date' || t === 'timestamp' || t === 'timestamptz' || t === 'uuid') {
      // one-entry cache of the last converted history value, shared by all reads of the column
      // (BETWEEN and IN read a column several times per row; the value, not the row, is the key)
      let cache = ctx.colCache.get(name);
      if (!cache) {
        const base = conv;
        const c = { raw: undefined as unknown, val: undefined as Internal };
        cache = (v) => {
          if (v === c.raw) return c.val;
          const r = base(v);
          c.raw = v;
          c.val = r;
          return r;
        };
        ctx.colCache.set(name, cache);
      }
      conv = cache;
    }
    if (t === 'int4') {
      ev = (row) => {
        const v = Object.hasOwn(row, name) ? row[name] : undefined;
        if (typeof v === 'number' && (v | 0) === v) return v + 0;
        if (v === null) return null;
        if (v === undefined) return missing();
        return conv(v);
      };
    } else if (t === 'float8') {
      ev = (row) => {
        const v = Object.hasOwn(row, name) ? row[name] : undefined;
        if (typeof v === 'number') return v;
        if (v === null) return null;
        if (v === undefined) return missing();
        return conv(v);
      };
    } else {
      ev = (row) => {
        const v = Object.hasOwn(row, name) ? row[name] : undefined;
        if (v === null) return null;
        if (v === undefined) return missing();
        return conv(v);
      };
    }
  }
  return { t, ev, konst: false, col: name, node };
}

function compileParam(ctx: Ctx, node: Node, b: Node): Ex {
  const n: number = b.number ?? 0;
  if (n < 1 || n > ctx.params.length) fail(node, `there is no parameter $${n} (${ctx.params.length} given)`);
  ctx.referenced.add(n);
  const text = paramText(paramValue(ctx, n, node));
  const typed = ctx.paramTypes[n];
  const u = unknownEx(text, node, n);
  if (typed === undefined) {
    u.occ = { n, resolved: false };
    ctx.occurrences.push(u.occ);
    return u;
  }
  if (typed.endsWith('[]')) fail(node, `parameter $${n} is used both as an array and as a scalar`);
  return coerceUnknown(ctx, u, spec(typed as BaseType));
}

function castEx(ctx: Ctx, e: Ex, ts: TypeSpec, node: Node): Ex {
  if (e.t === 'unknown') {
    const out = coerceUnknown(ctx, e, ts);
    return { ...out, node };
  }
  const to = ts.base as BaseType;
  const fn = castFn(e.t, to, true);
  if (!fn) fail(node, `cannot cast type ${typeName(e.t)} to ${typeName(to)}`);
  const tm = typmodFn(ts);
  if (e.t === to && !tm) return { ...e, col: undefined, points: undefined, node };
  return mapEx(to, e, tm ? (v) => tm(fn(v)) : fn, node);
}

function compileAExpr(ctx: Ctx, node: Node, b: Node): Ex {
  const op = lastName(b.name ?? []);
  switch (b.kind) {
    case 'AEXPR_OP': {
      if (b.lexpr === undefined) {
        if (b.rexpr === undefined) fail(node, 'malformed operator expression');
        return compileUnary(node, op, compile(ctx, b.rexpr));
      }
      if (b.rexpr === undefined) fail(node, `unsupported postfix operator ${op}`);
      if (CMP_OPS.has(op)) return compileCompare(ctx, node, op, compile(ctx, b.lexpr), compile(ctx, b.rexpr));
      if (op === '+' || op === '-' || op === '*' || op === '/' || op === '%') {
        return compileArith(ctx, node, op, compile(ctx, b.lexpr), compile(ctx, b.rexpr));
      }
      if (op === '||') return compileConcat(ctx, node, compile(ctx, b.lexpr), compile(ctx, b.rexpr));
      return fail(node, `unsupported operator ${op}`);
    }
    case 'AEXPR_OP_ANY':
    case 'AEXPR_OP_ALL':
      return compileAnyAll(ctx, node, op, b.kind === 'AEXPR_OP_ANY', b.lexpr, b.rexpr);
    case 'AEXPR_DISTINCT':
    case 'AEXPR_NOT_DISTINCT': {
      // like PostgreSQL: "x IS [NOT] DISTINCT FROM NULL" (an undecorated NULL) is "x IS [NOT] NULL"
      const isNullLit = (n: Node) => n?.A_Const?.isnull === true;
      if (isNullLit(b.lexpr) || isNullLit(b.rexpr)) {
        const arg = isNullLit(b.rexpr) ? b.lexpr : b.rexpr;
        return compile(ctx, {
          NullTest: { arg, nulltesttype: b.kind === 'AEXPR_DISTINCT' ? 'IS_NOT_NULL' : 'IS_NULL' },
        });
      }
      return compileDistinct(ctx, node, b.kind === 'AEXPR_NOT_DISTINCT', compile(ctx, b.lexpr), compile(ctx, b.rexpr));
    }
    case 'AEXPR_IN':
      return compileIn(ctx, node, op, b.lexpr, b.rexpr);
    case 'AEXPR_LIKE':
    case 'AEXPR_ILIKE':
      return compileLike(ctx, node, op, b.kind === 'AEXPR_ILIKE', b.lexpr, b.rexpr);
    case 'AEXPR_BETWEEN':
    case 'AEXPR_NOT_BETWEEN':
    case 'AEXPR_BETWEEN_SYM':
    case 'AEXPR_NOT_BETWEEN_SYM':
      return compileBetween(ctx, node, b.kind, b.lexpr, b.rexpr);
    default:
      fail(node, `unsupported expression kind ${b.kind}`);
  }
}

function compileUnary(node: Node, op: string, e: Ex): Ex {
  if (op !== '-' && op !== '+') fail(node, `unsupported prefix operator ${op}`);
  if (e.t === 'unknown') fail(node, `operator is not unique: ${op} unknown`);
  if (CATEGORY[e.t] !== 'N') fail(node, `operator does not exist: ${op} ${typeName(e.t)}`);
  if (op === '+') return { ...e, col: undefined, node };
  if (isNullConst(e)) return konstEx(e.t, null, node);
  const t = e.t;
  let fn: (v: Internal) => Internal;
  if (t === 'int2' || t === 'int4') {
    const lo = INT_MIN[t]!;
    fn = (v: number) => {
      if (v === lo) throw new SqlEvalError(`${typeName(t)} out of range`);
      return 0 - v;
    };
  } else if (t === 'int8') {
    fn = (v: bigint) => {
      if (v === I8_MIN) throw new SqlEvalError('bigint out of range');
      return -v;
    };
  } else if (t === 'numeric') fn = (v: Decimal) => v.neg();
  else fn = (v: number) => -v;
  return mapEx(t, e, fn, node);
}

function makeCmp(op: string, t: BaseType): (a: Internal, b: Internal) => boolean {
  const eq = eqFn(t);
  const cmp = cmpFn(t);
  const prim = isInt(t) || t === 'date' || t === 'timestamp' || t === 'timestamptz' || t === 'bool';
  switch (op) {
    case '=':
      return eq ?? ((a, b) => a === b);
    case '<>':
      return eq ? (a, b) => !eq(a, b) : (a, b) => a !== b;
    case '<':
      return prim ? (a, b) => a < b : (a, b) => cmp(a, b) < 0;
    case '<=':
      return prim ? (a, b) => a <= b : (a, b) => cmp(a, b) <= 0;
    case '>':
      return prim ? (a, b) => a > b : (a, b) => cmp(a, b) > 0;
    case '>=':
      return prim ? (a, b) => a >= b : (a, b) => cmp(a, b) >= 0;
  }
  throw new Error(`internal error: comparison ${op}`);
}

/** Canonical value of a column whose comparison with `v` (in type t) is equality; null if no
 *  value of the column can be equal; undefined if not derivable. */
function pointValue(colType: string, t: BaseType, v: Internal): string | null | undefined {
  const colBase = parseTypeName(colType).base;
  if (t === colBase || (t === 'text' && colBase === 'varchar')) return canonicalFn(t)(v);
  if (isInt(colBase) && isInt(t)) return String(v);
  if (isInt(colBase) && t === 'numeric') {
    const d = v as Decimal;
    return d.isInteger() ? d.truncToBigInt().toString() : null;
  }
  return undefined;
}

function pointsFor(ctx: Ctx, col: string, t: BaseType, vals: Internal[]): Map<string, string[]> | undefined {
  const out = new Set<string>();
  charge(vals.length);
  for (const v of vals) {
    if (v === null) continue;
    const c = pointValue(ctx.columns[col]!, t, v);
    if (c === undefined) return undefined;
    if (c !== null) out.add(c);
  }
  return new Map([[col, [...out]]]);
}

function compileCompare(ctx: Ctx, node: Node, op: string, L: Ex, R: Ex): Ex {
  const t = compareType(node, op, L.t, R.t);
  const l = coerceTo(ctx, L, t);
  const r = coerceTo(ctx, R, t);
  if (isNullConst(l) || isNullConst(r)) return konstEx('bool', null, node);
  const p = makeCmp(op, t);
  const lf = l.ev;
  const rf = r.ev;
  let ev: Ev;
  const prim = eqFn(t) === undefined;
  if (r.konst) {
    const c = r.cval;
    if (op === '=' && prim) {
      ev = (row) => {
        const a = lf(row);
        return a === null ? null : a === c;
      };
    } else {
      ev = (row) => {
        const a = lf(row);
        return a === null ? null : p(a, c);
      };
    }
  } else if (l.konst) {
    const c = l.cval;
    ev = (row) => {
      const b = rf(row);
      return b === null ? null : p(c, b);
    };
  } else {
    ev = (row) => {
      const a = lf(row);
      const b = rf(row);
      return a === null || b === null ? null : p(a, b);
    };
  }
  const out = derive('bool', ev, [l, r], node);
  if (op === '=' && !out.konst) {
    if (L.col !== undefined && r.konst) out.points = pointsFor(ctx, L.col, t, [r.cval]);
    else if (R.col !== undefined && l.konst) out.points = pointsFor(ctx, R.col, t, [l.cval]);
  }
  return out;
}

function compileArith(ctx: Ctx, node: Node, op: string, L: Ex, R: Ex): Ex {
  const sig = arithSig(node, op, L.t, R.t);
  const l = coerceTo(ctx, L, sig.a);
  const r = coerceTo(ctx, R, sig.b);
  if (isNullConst(l) || isNullConst(r)) return konstEx(sig.res, null, node);
  const f = arithFn(op, sig);
  const lf = l.ev;
  const rf = r.ev;
  return derive(
    sig.res,
    (row) => {
      const a = lf(row);
      const b = rf(row);
      return a === null || b === null ? null : f(a, b);
    },
    [l, r],
    node,
  );
}

function compileConcat(ctx: Ctx, node: Node, L: Ex, R: Ex): Ex {
  const isStr = (e: Ex) => e.t === 'unknown' || CATEGORY[e.t] === 'S';
  if (!isStr(L) && !isStr(R)) opError(node, '||', L.t, R.t);
  const asText = (e: Ex): Ex => (isStr(e) ? toText(ctx, e, '||') : castEx(ctx, e, spec('text'), e.node));
  const l = asText(L);
  const r = asText(R);
  if (isNullConst(l) || isNullConst(r)) return konstEx('text', null, node);
  const lf = l.ev;
  const rf = r.ev;
  const max = PREDICATE_LIMITS.maxStringLength;
  return derive(
    'text',
    (row) => {
      const a = lf(row);
      const b = rf(row);
      if (a === null || b === null) return null;
      if (a.length + b.length > max)
        throw new PredicateError(`a string computed by || is longer than ${max} characters (limit ${max})`);
      return a + b;
    },
    [l, r],
    node,
  );
}

function compileDistinct(ctx: Ctx, node: Node, not: boolean, L: Ex, R: Ex): Ex {
  const t = compareType(node, '=', L.t, R.t);
  const l = coerceTo(ctx, L, t);
  const r = coerceTo(ctx, R, t);
  const eq = makeCmp('=', t);
  const lf = l.ev;
  const rf = r.ev;
  const ev: Ev = (row) => {
    const a = lf(row);
    const b = rf(row);
    const same = a === null || b === null ? a === b : eq(a, b);
    return not ? same : !same;
  };
  const out = derive('bool', ev, [l, r], node);
  if (not && !out.konst) {
    if (L.col !== undefined && r.konst && r.cval !== null) out.points = pointsFor(ctx, L.col, t, [r.cval]);
    else if (R.col !== undefined && l.konst && l.cval !== null) out.points = pointsFor(ctx, R.col, t, [l.cval]);
  }
  return out;
}

/** `L op ANY/ALL (elems)` with PostgreSQL's ScalarArrayOpExpr semantics. elems null = NULL array.
 *  L and elems are already coerced to t. */
function scalarArrayOp(
  ctx: Ctx,
  node: Node,
  op: string,
  useOr: boolean,
  Lorig: Ex,
  l: Ex,
  elems: Ex[] | null,
  t: BaseType,
): Ex {
  const lf = l.ev;
  if (elems === null)
    return derive(
      'bool',
      (row) => {
        lf(row);
        return null;
      },
      [l],
      node,
    );
  const n = elems.length;
  if (isNullConst(l)) return konstEx('bool', n === 0 ? !useOr : null, node);
  const p = makeCmp(op, t);
  let ev: Ev;
  const allConst = elems.every((e) => e.konst);
  if (allConst && ((op === '=' && useOr) || (op === '<>' && !useOr))) {
    const vals = elems.map((e) => e.cval);
    const key = keyFn(t);
    const set = new Set(vals.filter((v) => v !== null).map((v) => (key ? key(v) : v)));
    const hasNull = vals.some((v) => v === null);
    const hit = useOr; // result when found
    if (n === 0)
      ev = (row) => {
        lf(row);
        return !useOr;
      };
    else if (key) {
      ev = (row) => {
        const a = lf(row);
        if (a === null) return null;
        if (set.has(key(a))) return hit;
        return hasNull ? null : !hit;
      };
    } else {
      ev = (row) => {
        const a = lf(row);
        if (a === null) return null;
        if (set.has(a)) return hit;
        return hasNull ? null : !hit;
      };
    }
  } else {
    const fs = elems.map((e) => e.ev);
    ev = (row) => {
      const a = lf(row);
      const vs = fs.map((f) => f(row));
      if (vs.length === 0) return !useOr;
      if (a === null) return null;
      let sawNull = false;
      for (const v of vs) {
        if (v === null) {
          sawNull = true;
          continue;
        }
        const r = p(a, v);
        if (r === useOr) return useOr;
      }
      return sawNull ? null : !useOr;
    };
  }
  const out = derive('bool', ev, [l, ...elems], node);
  if (!out.konst && op === '=' && useOr && Lorig.col !== undefined && allConst) {
    out.points = pointsFor(
      ctx,
      Lorig.col,
      t,
      elems.map((e) => e.cval),
    );
  }
  return out;
}

function unknownElems(ctx: Ctx, texts: (string | null)[], ts: TypeSpec, node: Node): Ex[] {
  return texts.map((s) => coerceUnknown(ctx, unknownEx(s, node), ts));
}

function compileAnyAll(ctx: Ctx, node: Node, op: string, useOr: boolean, lexpr: Node, rexpr: Node): Ex {
  if (!CMP_OPS.has(op)) fail(node, `unsupported operator ${op} with ANY/ALL`);
  const L = compile(ctx, lexpr);
  const [rk, rb] = nodeKind(rexpr);
  // Untyped array text (param or literal): elements take the type the operator resolves to.
  const fromUnknown = (texts: (string | null)[] | null, param: number | undefined): Ex => {
    const t = compareType(node, op, L.t, 'unknown');
    if (param !== undefined) ctx.paramTypes[param] = `${t}[]`;
    const l = coerceTo(ctx, L, t);
    return scalarArrayOp(
      ctx,
      node,
      op,
      useOr,
      L,
      l,
      texts === null ? null : unknownElems(ctx, texts, spec(t), rexpr),
      t,
    );
  };
  const fromTyped = (elemType: BaseType, elems: Ex[] | null): Ex => {
    const t = compareType(node, op, L.t, elemType);
    const l = coerceTo(ctx, L, t);
    return scalarArrayOp(ctx, node, op, useOr, L, l, elems?.map((e) => coerceTo(ctx, e, t)) ?? null, t);
  };
  const textsOf = (v: unknown, what: Node): (string | null)[] | null => {
    if (v === null || v === undefined) return null;
    try {
      return Array.isArray(v) ? flattenJsonArray(v) : parseArrayLiteral(paramText(v)!);
    } catch (e) {
      if (e instanceof SqlEvalError) fail(what, e.message);
      throw e;
    }
  };
  if (rk === 'ParamRef') {
    const n: number = rb.number ?? 0;
    if (n < 1 || n > ctx.params.length) fail(rexpr, `there is no parameter $${n} (${ctx.params.length} given)`);
    ctx.referenced.add(n);
    const typed = ctx.paramTypes[n];
    const texts = textsOf(paramValue(ctx, n, rexpr), rexpr);
    if (typed === undefined) return fromUnknown(texts, n);
    if (!typed.endsWith('[]')) fail(rexpr, `parameter $${n} is used both as a scalar and as an array`);
    const et = typed.slice(0, -2) as BaseType;
    return fromTyped(et, texts && unknownElems(ctx, texts, spec(et), rexpr));
  }
  if (rk === 'A_Const' && (rb.sval !== undefined || rb.isnull)) {
    return fromUnknown(rb.isnull ? null : textsOf(rb.sval.sval ?? '', rexpr), undefined);
  }
  if (rk === 'A_ArrayExpr') {
    const elems: Ex[] = (rb.elements ?? []).map((e: Node) => compile(ctx, e));
    if (elems.length === 0) fail(rexpr, 'cannot determine type of empty array');
    const et = selectCommonType(elems, rexpr, 'ARRAY')!;
    return fromTyped(
      et,
      elems.map((e) => coerceTo(ctx, e, et)),
    );
  }
  if (rk === 'TypeCast') {
    const { ts, array } = typeSpecOf(rexpr, rb.typeName);
    if (!array) fail(rexpr, 'op ANY/ALL (array) requires an array on the right side');
    const et = ts.base as BaseType;
    const [ak, ab] = nodeKind(rb.arg);
    if (ak === 'ParamRef' || (ak === 'A_Const' && (ab.sval !== undefined || ab.isnull))) {
      let texts: (string | null)[] | null;
      if (ak === 'ParamRef') {
        const n: number = ab.number ?? 0;
        if (n < 1 || n > ctx.params.length) fail(rb.arg, `there is no parameter $${n} (${ctx.params.length} given)`);
        ctx.referenced.add(n);
        const prev = ctx.paramTypes[n];
        if (prev !== undefined && prev !== `${et}[]`) fail(rb.arg, `inconsistent types deduced for parameter $${n}`);
        ctx.paramTypes[n] = `${et}[]`;
        texts = textsOf(paramValue(ctx, n, rb.arg), rb.arg);
      } else texts = ab.isnull ? null : textsOf(ab.sval.sval ?? '', rb.arg);
      return fromTyped(et, texts && unknownElems(ctx, texts, ts, rexpr));
    }
    if (ak === 'A_ArrayExpr') {
      const elems: Ex[] = (ab.elements ?? []).map((e: Node) => castEx(ctx, compile(ctx, e), ts, e));
      return fromTyped(et, elems);
    }
    fail(rexpr, 'unsupported array expression');
  }
  fail(rexpr, 'unsupported right operand of ANY/ALL (expected a parameter, an array literal or ARRAY[...])');
}

function compileIn(ctx: Ctx, node: Node, op: string, lexpr: Node, rexpr: Node): Ex {
  const useOr = op !== '<>';
  const items: Node[] = rexpr?.List?.items;
  if (!Array.isArray(items)) fail(node, 'IN (subquery) is not supported');
  const L = shared(ctx, compile(ctx, lexpr));
  const R = items.map((i) => compile(ctx, i));
  const nonvars = R.filter((e) => e.konst);
  let rest = R.filter((e) => !e.konst);
  const parts: Ex[] = [];
  let lhs = L;
  if (nonvars.length > 1) {
    const all = [L, ...nonvars];
    const common = selectCommonType(all, undefined, 'IN');
    if (common !== undefined && all.every((e) => e.t === 'unknown' || isImplicitCast(e.t, common))) {
      const t = compareType(node, op, L.t, common);
      const l = coerceTo(ctx, L, t);
      const elems = nonvars.map((e) => coerceTo(ctx, coerceTo(ctx, e, common), t));
      parts.push(scalarArrayOp(ctx, node, op, useOr, L, l, elems, t));
      // PostgreSQL coerced the left operand in place: a parameter keeps the type just deduced
      lhs = refresh(ctx, L);
    } else rest = R;
  } else rest = R;
  for (const e of rest) parts.push(compileCompare(ctx, node, op, lhs, e));
  return combineBool(node, useOr ? 'OR' : 'AND', parts);
}

function compileBetween(ctx: Ctx, node: Node, kind: string, lexpr: Node, rexpr: Node): Ex {
  const items: Node[] = rexpr?.List?.items;
  if (!Array.isArray(items) || items.length !== 2) fail(node, 'malformed BETWEEN');
  // PostgreSQL expands BETWEEN into comparisons on copies of its operands, each typed on its own: the
  // operands are compiled once (and evaluated once per row), and an untyped parameter takes the type
  // its first comparison deduced in the next ones (refresh), as the copies do.
  const x = shared(ctx, compile(ctx, lexpr));
  const lo = shared(ctx, compile(ctx, items[0]));
  const hi = shared(ctx, compile(ctx, items[1]));
  const cmp = (op: string, a: Ex, b: Ex) => compileCompare(ctx, node, op, refresh(ctx, a), refresh(ctx, b));
  switch (kind) {
    case 'AEXPR_BETWEEN':
      return combineBool(node, 'AND', [cmp('>=', x, lo), cmp('<=', x, hi)]);
    case 'AEXPR_NOT_BETWEEN':
      return combineBool(node, 'OR', [cmp('<', x, lo), cmp('>', x, hi)]);
    case 'AEXPR_BETWEEN_SYM':
      return combineBool(node, 'OR', [
        combineBool(node, 'AND', [cmp('>=', x, lo), cmp('<=', x, hi)]),
        combineBool(node, 'AND', [cmp('>=', x, hi), cmp('<=', x, lo)]),
      ]);
    default:
      return combineBool(node, 'AND', [
        combineBool(node, 'OR', [cmp('<', x, lo), cmp('>', x, hi)]),
        combineBool(node, 'OR', [cmp('<', x, hi), cmp('>', x, lo)]),
      ]);
  }
}

function compileLike(ctx: Ctx, node: Node, op: string, ci: boolean, lexpr: Node, rexpr: Node): Ex {
  const negate = op.startsWith('!');
  let L = compile(ctx, lexpr);
  if (L.t === 'unknown' || L.t === 'varchar') L = coerceTo(ctx, L, 'text');
  if (L.t !== 'text' && L.t !== 'bpchar') fail(node, `operator does not exist: ${typeName(L.t)} ${op} text`);
  let P: Ex;
  const [rk, rb] = nodeKind(rexpr);
  if (rk === 'FuncCall' && lastName(rb.funcname ?? []) === 'like_escape' && (rb.args ?? []).length === 2) {
    const pat = toText(ctx, compile(ctx, rb.args[0]), 'LIKE pattern');
    const esc = toText(ctx, compile(ctx, rb.args[1]), 'ESCAPE');
    if (isNullConst(pat) || isNullConst(esc)) P = konstEx('text', null, rexpr);
    else {
      const pf = pat.ev;
      const ef = esc.ev;
      P = derive(
        'text',
        (row) => {
          const p = pf(row);
          const e = ef(row);
          return p === null || e === null ? null : likeEscape(p, e);
        },
        [pat, esc],
        rexpr,
      );
    }
  } else P = toText(ctx, compile(ctx, rexpr), 'LIKE pattern');
  if (isNullConst(L) || isNullConst(P)) return konstEx('bool', null, node);
  const lf = L.ev;
  const norm = ci ? asciiLower : (s: string) => s;
  let ev: Ev;
  if (P.konst) {
    const m = likeMatcher(norm(P.cval as string));
    ev = ci
      ? (row) => {
          const s = lf(row);
          return s === null ? null : m(asciiLower(s)) !== negate;
        }
      : (row) => {
          const s = lf(row);
          return s === null ? null : m(s) !== negate;
        };
  } else {
    const pf = P.ev;
    let lastPat: string | undefined;
    let lastM: ((s: string) => boolean) | undefined;
    ev = (row) => {
      const s = lf(row);
      const p = pf(row);
      if (s === null || p === null) return null;
      if (p !== lastPat) {
        lastM = likeMatcher(norm(p));
        lastPat = p;
      }
      return lastM!(norm(s)) !== negate;
    };
  }
  return derive('bool', ev, [L, P], node);
}

function mergeAnd(parts: Ex[]): Map<string, string[]> | undefined {
  let out: Map<string, string[]> | undefined;
  for (const p of parts) {
    if (!p.points) continue;
    out ??= new Map();
    for (const [c, vs] of p.points) {
      const prev = out.get(c);
      if (prev === undefined) out.set(c, vs);
      else {
        const s = new Set(vs);
        out.set(
          c,
          prev.filter((v) => s.has(v)),
        );
      }
    }
  }
  return out;
}

function mergeOr(parts: Ex[]): Map<string, string[]> | undefined {
  if (parts.length === 0 || parts.some((p) => !p.points)) return undefined;
  // union per column (sets: linear in the total size of the parts' constraints)
  let out: Map<string, Set<string>> | undefined;
  for (const p of parts) {
    if (out === undefined) {
      out = new Map([...p.points!].map(([c, vs]) => [c, new Set(vs)]));
      continue;
    }
    for (const [c, set] of out) {
      const vs = p.points!.get(c);
      if (vs === undefined) out.delete(c);
      else for (const v of vs) set.add(v);
    }
    if (out.size === 0) return undefined;
  }
  return out && out.size > 0 ? new Map([...out].map(([c, set]) => [c, [...set]])) : undefined;
}

/** AND / OR with three-valued logic (constant arguments simplified like PostgreSQL does). */
function combineBool(node: Node, kind: 'AND' | 'OR', args: Ex[]): Ex {
  const dominant = kind === 'OR'; // value that decides the result
  let hasNull = false;
  const live: Ex[] = [];
  for (const a of args) {
    if (a.konst) {
      if (a.cval === dominant) return konstEx('bool', dominant, node);
      if (a.cval === null) hasNull = true;
    } else live.push(a);
  }
  if (live.length === 0) return konstEx('bool', hasNull ? null : !dominant, node);
  // (a NULL constant argument never makes an OR true nor an AND true: points stay valid)
  const points = kind === 'AND' ? mergeAnd(live) : mergeOr(live);
  if (live.length === 1 && !hasNull) return { ...live[0]!, node, points };
  // Left to right with short-circuit, like PostgreSQL's executor (ExecEvalBoolAnd/Or): an error
  // raised by an argument evaluated before the deciding one propagates (test() => false).
  const fs = live.map((a) => a.ev);
  const other = !dominant;
  let ev: Ev;
  if (fs.length === 2 && !hasNull) {
    const [f, g] = fs as [Ev, Ev];
    ev = (row) => {
      const a = f(row);
      if (a === dominant) return dominant;
      const b = g(row);
      if (b === dominant) return dominant;
      return a === null || b === null ? null : other;
    };
  } else {
    ev = (row) => {
      let n = hasNull;
      for (let i = 0; i < fs.length; i++) {
        const v = fs[i]!(row);
        if (v === dominant) return dominant;
        if (v === null) n = true;
      }
      return n ? null : other;
    };
  }
  return { t: 'bool', ev, konst: false, node, points };
}

function compileBoolExpr(ctx: Ctx, node: Node, b: Node): Ex {
  const args: Ex[] = (b.args ?? []).map((a: Node) => compile(ctx, a));
  switch (b.boolop) {
    case 'AND_EXPR':
      return combineBool(
        node,
        'AND',
        args.map((a) => toBool(ctx, a, 'AND')),
      );
    case 'OR_EXPR':
      return combineBool(
        node,
        'OR',
        args.map((a) => toBool(ctx, a, 'OR')),
      );
    case 'NOT_EXPR': {
      const e = toBool(ctx, args[0]!, 'NOT');
      const f = e.ev;
      return derive(
        'bool',
        (row) => {
          const v = f(row);
          return v === null ? null : !v;
        },
        [e],
        node,
      );
    }
  }
  fail(node, `unsupported boolean operator ${b.boolop}`);
}

// ---------------------------------------------------------------------------------------------
// Entry point

const ALLOWED_SELECT_KEYS = new Set(['targetList', 'fromClause', 'whereClause', 'limitOption', 'op']);

/** Compiles a recorded read's where clause. Throws PredicateError (one line) for anything that
 *  cannot be evaluated faithfully (unsupported construct, unknown column, missing or ill-typed
 *  param, a clause beyond PREDICATE_LIMITS...). */
export function compilePredicate(
  where: string | undefined | null,
  params: unknown[],
  columns: ColumnTypes,
  options: PredicateOptions = {},
): CompiledPredicate {
  if (where === undefined || where === null || (typeof where === 'string' && where.trim() === '')) {
    return { test: () => true, columns: [], pointConstraints: new Map(), cost: 0 };
  }
  if (typeof where !== 'string') throw new PredicateError(`where clause is not a string: ${showValue(where)}`);
  if (!loaded) throw new ParserNotLoadedError();
  const what = `where clause "${clip(where, 200)}"`;
  // the parser reads a C string: text after a NUL would be silently ignored (PostgreSQL cannot receive it either)
  if (where.includes('\0')) throw new PredicateError(`${what}: contains a NUL character`);
  if (params !== undefined && params !== null && !Array.isArray(params))
    throw new PredicateError(`${what}: params is not an array: ${showValue(params)}`);
  if (columns === null || typeof columns !== 'object') throw new PredicateError(`${what}: no column types`);
  const hook = options.checkDeadline;
  const prev = setWorkHook(hook);
  try {
    return compileWhere(where, params ?? [], columns, hook);
  } catch (e) {
    if (e instanceof PredicateError) throw new PredicateError(clip(`${what}: ${e.message}`, 1000));
    // a recursion or size limit of the engine that the limits above did not catch
    if (e instanceof RangeError)
      throw new PredicateError(clip(`${what}: too large or too deeply nested to compile (${e.message})`, 1000));
    throw e;
  } finally {
    setWorkHook(prev);
  }
}

interface Parsed {
  clause: Node;
  /** parse-tree nodes */
  nodes: number;
}

// Parse trees of recent where texts (parsing dominates compile time; compilation never mutates them),
// at most AST_CACHE_MAX of them and AST_CACHE_CHARS characters of text in all.
const AST_CACHE = new Map<string, Parsed>();
const AST_CACHE_MAX = 4096;
const AST_CACHE_CHARS = 8_000_000;
let astCacheChars = 0;

/** Node count and nesting depth of a parse tree (node wrappers such as {"A_Expr": ...}), iteratively. */
function measure(root: Node): { nodes: number; depth: number } {
  let nodes = 0;
  let depth = 0;
  const stack: [Node, number][] = [[root, 0]];
  while (stack.length > 0) {
    const [v, d] = stack.pop()!;
    if (Array.isArray(v)) {
      for (const x of v) if (x !== null && typeof x === 'object') stack.push([x, d]);
      continue;
    }
    const keys = Object.keys(v);
    let dd = d;
    if (keys.length === 1 && /^[A-Z]/.test(keys[0]!)) {
      nodes++;
      dd = d + 1;
      if (dd > depth) depth = dd;
      if (nodes > PREDICATE_LIMITS.maxNodes || depth > PREDICATE_LIMITS.maxDepth) break;
    }
    for (const k of keys) {
      const x = v[k];
      if (x !== null && typeof x === 'object') stack.push([x, dd]);
    }
  }
  return { nodes, depth };
}

function tooDeep(): never {
  throw new PredicateError(`expression nested too deeply (limit ${PREDICATE_LIMITS.maxDepth} levels)`);
}

function parseWhere(where: string): Parsed {
  const hit = AST_CACHE.get(where);
  if (hit !== undefined) return hit;
  const { maxLength, maxNodes, maxDepth } = PREDICATE_LIMITS;
  if (where.length > maxLength) throw new PredicateError(`too long: ${where.length} characters (limit ${maxLength})`);
  let parsed: Node;
  try {
    // as node-postgres sends it (lone surrogates become U+FFFD; the parser's own conversion differs)
    parsed = parseSync(`SELECT 1 FROM t WHERE ${wellFormed(where)}`);
  } catch (e) {
    const msg = String((e as Error)?.message ?? e);
    // the parser's own stack (bison's "memory exhausted", or its JavaScript side running out of stack)
    if (e instanceof RangeError || /memory exhausted|stack depth limit/i.test(msg)) tooDeep();
    throw new PredicateError(`syntax error: ${clip(msg, 200)}`);
  }
  const stmts: Node[] = parsed.stmts ?? [];
  const sel = stmts.length === 1 ? stmts[0].stmt?.SelectStmt : undefined;
  if (
    !sel?.whereClause ||
    Object.keys(sel).some((k) => !ALLOWED_SELECT_KEYS.has(k)) ||
    (sel.op && sel.op !== 'SETOP_NONE')
  ) {
    throw new PredicateError('not a single boolean expression');
  }
  const { nodes, depth } = measure(sel.whereClause);
  if (nodes > maxNodes)
    throw new PredicateError(`too large: more than ${maxNodes} expression nodes (limit ${maxNodes})`);
  if (depth > maxDepth) tooDeep();
  const out: Parsed = { clause: sel.whereClause, nodes };
  while (AST_CACHE.size > 0 && (AST_CACHE.size >= AST_CACHE_MAX || astCacheChars + where.length > AST_CACHE_CHARS)) {
    const oldest = AST_CACHE.keys().next().value!;
    AST_CACHE.delete(oldest);
    astCacheChars -= oldest.length;
  }
  if (where.length <= AST_CACHE_CHARS) {
    AST_CACHE.set(where, out);
    astCacheChars += where.length;
  }
  return out;
}

function newCtx(params: unknown[], columns: ColumnTypes, run: { gen: number }): Ctx {
  return {
    params,
    referenced: new Set(),
    occurrences: [],
    paramTypes: [],
    paramChecked: new Set(),
    columns,
    used: [],
    usedSet: new Set(),
    colCache: new Map(),
    run,
  };
}

/** test(): TRUE without error; evaluation errors PostgreSQL raises are "not satisfied". */
function makeTest(f: Ev, run: { gen: number }, cost: number, hook: (() => void) | undefined): (row: Row) => boolean {
  return (row: Row): boolean => {
    if (row === null || typeof row !== 'object') throw new PredicateError(`row is not an object: ${showValue(row)}`);
    const prev = setWorkHook(hook);
    try {
      run.gen++;
      charge(cost);
      return f(row) === true;
    } catch (x) {
      if (x instanceof SqlEvalError) return false;
      // a size or recursion limit of the engine: an error naming it, never a crash
      if (x instanceof RangeError) throw new PredicateError(`evaluation exceeded an internal limit (${x.message})`);
      throw x;
    } finally {
      setWorkHook(prev);
    }
  };
}

function compileWhere(
  where: string,
  params: unknown[],
  columns: ColumnTypes,
  hook: (() => void) | undefined,
): CompiledPredicate {
  const { clause: whereClause, nodes } = parseWhere(where);
  charge(nodes);
  const run = { gen: 0 };
  const ctx = newCtx(params, columns, run);
  const e = toBool(ctx, compile(ctx, whereClause), 'WHERE');
  // PostgreSQL (check_variable_parameters) rejects a statement in which a parameter's type is not
  // determined, or an occurrence was left untyped (e.g. "$1 IS NULL OR col = $1")
  for (const n of ctx.referenced) {
    if (ctx.paramTypes[n] === undefined) throw new PredicateError(`could not determine data type of parameter $${n}`);
  }
  for (const o of ctx.occurrences) {
    if (!o.resolved)
      throw new PredicateError(
        `could not determine data type of parameter $${o.n} (an occurrence is used where no type is deduced, ` +
          `e.g. IS NULL, before its type is deduced; cast it)`,
      );
  }
  const pointConstraints = e.konst ? new Map<string, string[]>() : (e.points ?? new Map<string, string[]>());
  if (e.konst) {
    const v = e.cval === true;
    return { test: () => v, columns: ctx.used, pointConstraints, cost: 1 };
  }
  const cost = nodes;
  const test = makeTest(e.ev, run, cost, hook);
  const onColumns = new Map<ReadonlySet<string>, ((row: Row) => boolean) | undefined>();
  const conjunctsOn = (only: ReadonlySet<string>) => {
    if (!onColumns.has(only)) {
      const prev = setWorkHook(hook);
      try {
        onColumns.set(only, conjunctsTest(whereClause, params ?? [], columns, ctx.paramTypes, only, hook));
      } finally {
        setWorkHook(prev);
      }
    }
    return onColumns.get(only);
  };
  return { test, columns: ctx.used, pointConstraints, conjunctsOn, cost };
}

/**
 * The top-level conjuncts of `whereClause` that read only columns in `only` and imply no point constraint,
 * each compiled on its own, as one test. A conjunct is kept only if it compiles alone with the same types for its
 * parameters as in the whole clause (so that it evaluates as it does there); any other is left out, which only makes
 * the test weaker.
 */
function conjunctsTest(
  whereClause: Node,
  params: unknown[],
  columns: ColumnTypes,
  paramTypes: (string | undefined)[],
  only: ReadonlySet<string>,
  hook: (() => void) | undefined,
): ((row: Row) => boolean) | undefined {
  const parts: Node[] = whereClause.BoolExpr?.boolop === 'AND_EXPR' ? (whereClause.BoolExpr.args ?? []) : [whereClause];
  const evs: Ev[] = [];
  const run = { gen: 0 };
  let cost = 0;
  for (const part of parts) {
    const ctx = newCtx(params, columns, run);
    let e: Ex;
    try {
      e = toBool(ctx, compile(ctx, part), 'WHERE');
    } catch (x) {
      if (x instanceof PredicateError || x instanceof RangeError) continue;
      throw x;
    }
    // Equalities and IN lists are in pointConstraints already (the checker looks keys up by them).
    if (e.konst || e.points || ctx.used.length === 0 || ctx.used.some((c) => !only.has(c))) continue;
    if (
      ctx.occurrences.some((o) => !o.resolved) ||
      [...ctx.referenced].some((n) => ctx.paramTypes[n] === undefined || ctx.paramTypes[n] !== paramTypes[n])
    )
      continue;
    evs.push(e.ev);
    cost += measure(part).nodes;
  }
  if (evs.length === 0) return undefined;
  const all: Ev = (row) => {
    for (const ev of evs) if (ev(row) !== true) return false;
    return true;
  };
  return makeTest(all, run, cost, hook);
}

const NUMERIC_COLUMN_TYPES: ReadonlySet<string> = new Set([
  'int2',
  'int4',
  'int8',
  'numeric',
  'float4',
  'float8',
  'smallint',
  'integer',
  'bigint',
  'real',
  'double precision',
]);
const BOUND_OPS: Record<string, 'lo' | 'hi'> = { '>': 'lo', '>=': 'lo', '<': 'hi', '<=': 'hi' };
const FLIPPED: Record<string, string> = { '>': '<', '>=': '<=', '<': '>', '<=': '>=' };

/**
 * Inclusive numeric bounds on columns of numeric type that the top-level AND conjuncts of a WHERE impose
 * (`col >= $1`, `5 < col`, `col BETWEEN $1 AND $2`, constants and parameters, possibly cast): a superset
 * filter for the linear check's candidate rows (src/checker/linear/candidate-rows.ts), never a verdict. A row
 * whose column lies outside [lo, hi] makes that conjunct not TRUE, so the WHERE is not TRUE on it. Bounds are
 * widened a little (a JavaScript number may round a numeric or int8 value), strict comparisons taken as
 * inclusive, and anything not understood is simply left out (no bound), which only makes the filter weaker.
 * The WHERE must have compiled (compilePredicate) already: the parse tree is the cached one.
 */
export function numericBounds(
  where: string | undefined,
  params: readonly unknown[],
  columns: ColumnTypes,
): Map<string, [number, number]> {
  const out = new Map<string, [number, number]>();
  if (where === undefined || !loaded) return out;
  let clause: Node;
  try {
    clause = parseWhere(where).clause;
  } catch (e) {
    if (e instanceof PredicateError) return out;
    throw e;
  }
  const parts: Node[] = clause.BoolExpr?.boolop === 'AND_EXPR' ? (clause.BoolExpr.args ?? []) : [clause];
  const column = (n: Node): string | undefined => {
    const fields: Node[] | undefined = n?.ColumnRef?.fields;
    if (fields?.length !== 1) return undefined;
    const name = fields[0]?.String?.sval;
    return typeof name === 'string' && Object.hasOwn(columns, name) && NUMERIC_COLUMN_TYPES.has(String(columns[name]))
      ? name
      : undefined;
  };
  const value = (n: Node): number | undefined => {
    while (n?.TypeCast) n = n.TypeCast.arg;
    let v: unknown;
    if (n?.ParamRef) v = params[(n.ParamRef.number ?? 0) - 1];
    else if (n?.A_Const) {
      const c = n.A_Const;
      if (c.ival !== undefined) v = c.ival.ival ?? 0;
      else if (c.fval !== undefined) v = c.fval.fval;
      else return undefined;
    } else return undefined;
    if (typeof v === 'string' && v.trim() === '') return undefined;
    const x = typeof v === 'number' ? v : typeof v === 'string' || typeof v === 'bigint' ? Number(v) : NaN;
    return Number.isFinite(x) ? x : undefined;
  };
  const widen = (x: number, dir: -1 | 1) => x + dir * (Math.abs(x) * 1e-9 + 1e-9);
  const bound = (col: string, side: 'lo' | 'hi', x: number) => {
    const b = out.get(col) ?? [-Infinity, Infinity];
    if (side === 'lo') b[0] = Math.max(b[0], widen(x, -1));
    else b[1] = Math.min(b[1], widen(x, 1));
    out.set(col, b);
  };
  for (const part of parts) {
    const a = part?.A_Expr;
    if (!a) continue;
    const op = lastName(a.name ?? []);
    if (a.kind === 'AEXPR_OP' && BOUND_OPS[op]) {
      const lc = column(a.lexpr),
        rc = column(a.rexpr);
      if (lc !== undefined && rc === undefined) {
        const x = value(a.rexpr);
        if (x !== undefined) bound(lc, BOUND_OPS[op], x);
      } else if (rc !== undefined && lc === undefined) {
        const x = value(a.lexpr);
        if (x !== undefined) bound(rc, BOUND_OPS[FLIPPED[op]], x);
      }
    } else if ((a.kind === 'AEXPR_BETWEEN' || a.kind === 'AEXPR_BETWEEN_SYM') && column(a.lexpr) !== undefined) {
      const items: Node[] = a.rexpr?.List?.items ?? [];
      const x = items.length === 2 ? value(items[0]) : undefined;
      const y = items.length === 2 ? value(items[1]) : undefined;
      if (x === undefined || y === undefined) continue;
      const col = column(a.lexpr)!;
      bound(col, 'lo', a.kind === 'AEXPR_BETWEEN_SYM' ? Math.min(x, y) : x);
      bound(col, 'hi', a.kind === 'AEXPR_BETWEEN_SYM' ? Math.max(x, y) : y);
    }
  }
  return out;
}
