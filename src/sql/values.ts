// PostgreSQL values of the history format for the evaluation of recorded reads' "where"
// clauses (history-format.md "where" semantics): type names, the internal representation used
// by compiled predicates, input/output functions, casts, comparison and canonical forms.
//
// History values: JSON numbers for int2 int4 float4 float8; strings for int8, numeric, text,
// varchar, bpchar, date, timestamp, timestamptz; booleans for bool; null.
// Internal representation (what compiled closures pass around):
//   bool: boolean            int2/int4: number        int8: bigint
//   numeric: Decimal         float4/float8: number (float4 values are Math.fround-ed)
//   text/varchar/bpchar: string (bpchar keeps its padding; comparisons ignore trailing spaces)
//   date: number of days     timestamp/timestamptz: bigint microseconds (see datetime.ts)
//   uuid: lower-case hyphenated string
// Text compares by code point (COLLATE "C"); the session TimeZone is UTC.

import { Decimal } from './decimal.js';
import { SqlEvalError, PredicateError, charge, clip, safeJson, showValue } from './errors.js';
import {
  dateToTimestamp,
  formatDate,
  formatTimestamp,
  parseDate,
  parseTimestamp,
  roundTimestamp,
  timestampToDate,
  checkDateRange,
} from './datetime.js';

export type SqlValue = number | string | boolean | null;

export type BaseType =
  | 'bool'
  | 'int2'
  | 'int4'
  | 'int8'
  | 'numeric'
  | 'float4'
  | 'float8'
  | 'text'
  | 'varchar'
  | 'bpchar'
  | 'date'
  | 'timestamp'
  | 'timestamptz'
  | 'uuid';

/** A value in its internal representation (above; null is SQL NULL). Which member a value is follows from its
 *  BaseType, which the compiler knows and TypeScript does not: a closure made for one type narrows with a cast. */
export type Internal = boolean | number | bigint | Decimal | string | null;

/** A function on values of one BaseType, made for that type (castFn, cmpFn, the compiled operators...): its
 *  parameter is that type's representation, a member of Internal only the BaseType guarantees. The parameters are
 *  checked bivariantly (method syntax), so `(v: bigint) => ...` is one, as a cast at each call would allow. */
export type Unary<R = Internal> = { fn(v: Internal): R }['fn'];
/** A function on two values of BaseTypes it was made for (see Unary). */
export type Binary<R = Internal> = { fn(a: Internal, b: Internal): R }['fn'];

export interface TypeSpec {
  /** normalised type name (a BaseType when supported) */
  base: string;
  supported: boolean;
  /** type modifiers, e.g. [4] for bpchar(4), [10, 2] for numeric(10,2) */
  mods: number[];
  /** the original name, for messages */
  name: string;
}

const ALIASES = new Map<string, BaseType>(
  Object.entries({
    bool: 'bool',
    boolean: 'bool',
    int2: 'int2',
    smallint: 'int2',
    smallserial: 'int2',
    int4: 'int4',
    int: 'int4',
    integer: 'int4',
    serial: 'int4',
    serial4: 'int4',
    int8: 'int8',
    bigint: 'int8',
    bigserial: 'int8',
    serial8: 'int8',
    numeric: 'numeric',
    decimal: 'numeric',
    float4: 'float4',
    real: 'float4',
    float8: 'float8',
    'double precision': 'float8',
    float: 'float8',
    text: 'text',
    varchar: 'varchar',
    'character varying': 'varchar',
    bpchar: 'bpchar',
    char: 'bpchar',
    character: 'bpchar',
    date: 'date',
    timestamp: 'timestamp',
    'timestamp without time zone': 'timestamp',
    timestamptz: 'timestamptz',
    'timestamp with time zone': 'timestamptz',
    uuid: 'uuid',
  }) as [string, BaseType][],
);

/** A dictionary with no inherited keys (for tables indexed by type names). */
function dict<V>(o: Record<string, V>): Record<string, V> {
  return Object.assign(Object.create(null) as Record<string, V>, o);
}

const SPEC_CACHE = new Map<string, TypeSpec>();

/** Parses a PostgreSQL type name such as "int4", "character varying(20)", "numeric(10,2)",
 *  "timestamp(3) with time zone". Unknown names give supported: false. */
export function parseTypeName(name: string): TypeSpec {
  if (typeof name !== 'string')
    return { base: String(typeof name), supported: false, mods: [], name: String(typeof name) };
  const cached = SPEC_CACHE.get(name);
  if (cached) return cached;
  if (name.length > 200) return { base: clip(name, 50), supported: false, mods: [], name: clip(name, 50) };
  let n = name.trim().toLowerCase().replace(/\s+/g, ' ');
  if (n.startsWith('pg_catalog.')) n = n.slice('pg_catalog.'.length);
  let mods: number[] = [];
  const mm = /\(([^)]*)\)/.exec(n);
  if (mm) {
    mods = mm[1]!.split(',').map((x) => Number(x.trim()));
    n = (n.slice(0, mm.index) + n.slice(mm.index + mm[0].length)).replace(/\s+/g, ' ').trim();
  }
  let base: string = ALIASES.get(n) ?? n;
  let supported = ALIASES.has(n) && mods.every((x) => Number.isInteger(x));
  if (base === 'float8' && n === 'float' && mods.length === 1) {
    base = mods[0]! <= 24 ? 'float4' : 'float8';
    mods = [];
  }
  if (supported && !checkMods(base as BaseType, mods)) supported = false;
  const spec: TypeSpec = { base, supported, mods, name };
  if (SPEC_CACHE.size >= 4096) SPEC_CACHE.clear();
  SPEC_CACHE.set(name, spec);
  return spec;
}

function checkMods(base: BaseType, mods: number[]): boolean {
  if (mods.length === 0) return true;
  switch (base) {
    case 'varchar':
    case 'bpchar':
      // PostgreSQL: "length for type varchar cannot exceed 10485760"
      return mods.length === 1 && mods[0]! >= 1 && mods[0]! <= 10485760;
    case 'numeric':
      return (
        mods.length <= 2 &&
        mods[0]! >= 1 &&
        mods[0]! <= 1000 &&
        (mods.length === 1 || (mods[1]! >= 0 && mods[1]! <= mods[0]!))
      );
    case 'timestamp':
    case 'timestamptz':
      return mods.length === 1 && mods[0]! >= 0 && mods[0]! <= 6;
    default:
      return false;
  }
}

export function spec(base: BaseType): TypeSpec {
  return parseTypeName(base);
}

export type Category = 'N' | 'S' | 'B' | 'D' | 'U';
export const CATEGORY: Record<BaseType, Category> = dict<Category>({
  bool: 'B',
  int2: 'N',
  int4: 'N',
  int8: 'N',
  numeric: 'N',
  float4: 'N',
  float8: 'N',
  text: 'S',
  varchar: 'S',
  bpchar: 'S',
  date: 'D',
  timestamp: 'D',
  timestamptz: 'D',
  uuid: 'U',
}) as Record<BaseType, Category>;
const PREFERRED = new Set<string>(['float8', 'text', 'timestamptz', 'bool']);

/** SQL-facing type names for messages */
export const DISPLAY: Record<string, string> = dict({
  bool: 'boolean',
  int2: 'smallint',
  int4: 'integer',
  int8: 'bigint',
  numeric: 'numeric',
  float4: 'real',
  float8: 'double precision',
  text: 'text',
  varchar: 'character varying',
  bpchar: 'character',
  date: 'date',
  timestamp: 'timestamp without time zone',
  timestamptz: 'timestamp with time zone',
  uuid: 'uuid',
  unknown: 'unknown',
});

export function isInt(t: string): boolean {
  return t === 'int2' || t === 'int4' || t === 'int8';
}
export function isFloat(t: string): boolean {
  return t === 'float4' || t === 'float8';
}

// ---------------------------------------------------------------------------------------------
// Input functions (text -> internal). Invalid input => SqlEvalError (PostgreSQL raises an error);
// syntax PostgreSQL accepts but this module does not implement => PredicateError.

const INT_RE = new RegExp(
  String.raw`^([+-]?)(?:(\d+(?:_\d+)*)|0[xX]_?([0-9a-fA-F]+(?:_[0-9a-fA-F]+)*)|` + // decimal, hexadecimal
    '0[oO]_?([0-7]+(?:_[0-7]+)*)|0[bB]_?([01]+(?:_[01]+)*))$', // octal, binary
);

const INT_LIMITS: Record<string, [bigint, bigint]> = dict<[bigint, bigint]>({
  int2: [-32768n, 32767n],
  int4: [-2147483648n, 2147483647n],
  int8: [-9223372036854775808n, 9223372036854775807n],
});

/** int2/int4/int8 input (PostgreSQL 16+ syntax: underscores, 0x/0o/0b). Digit strings longer
 *  than any int8 are out of range without being converted. */
export function parseIntText(text: string, t: 'int2' | 'int4' | 'int8'): number | bigint {
  charge(text.length);
  const m = INT_RE.exec(text.trim());
  if (!m) throw new SqlEvalError(`invalid input syntax for type ${DISPLAY[t]}: "${clip(text)}"`);
  const [radix, digits] =
    m[2] !== undefined
      ? ['', m[2]]
      : m[3] !== undefined
        ? ['0x', m[3]]
        : m[4] !== undefined
          ? ['0o', m[4]]
          : ['0b', m[5]!];
  const ds = digits.replace(/_/g, '').replace(/^0+(?=.)/, '');
  // the longest int8 literal has 19 decimal, 16 hex, 22 octal or 64 binary digits
  const maxLen = radix === '' ? 19 : radix === '0x' ? 16 : radix === '0o' ? 22 : 64;
  const outOfRange = () => new SqlEvalError(`value "${clip(text)}" is out of range for type ${DISPLAY[t]}`);
  if (ds.length > maxLen) throw outOfRange();
  let v = BigInt(radix + ds);
  if (m[1] === '-') v = -v;
  const [lo, hi] = INT_LIMITS[t]!;
  if (v < lo || v > hi) throw outOfRange();
  return t === 'int8' ? v : Number(v);
}

// (no ambiguous repetition: linear on any input)
const FLOAT_RE = /^[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?$/;

function parseFloatText(text: string, t: 'float4' | 'float8'): number {
  charge(text.length);
  const s = text.trim();
  const lower = s.toLowerCase();
  switch (lower) {
    case 'nan':
    case '+nan':
    case '-nan':
      return NaN;
    case 'infinity':
    case '+infinity':
    case 'inf':
    case '+inf':
      return Infinity;
    case '-infinity':
    case '-inf':
      return -Infinity;
  }
  if (!FLOAT_RE.test(s)) {
    if (/^[+-]?0[xX]/.test(s)) throw new PredicateError(`unsupported ${DISPLAY[t]} input syntax "${clip(text)}"`);
    throw new SqlEvalError(`invalid input syntax for type ${DISPLAY[t]}: "${clip(text)}"`);
  }
  const d = Number(s);
  const v = t === 'float4' ? Math.fround(d) : d;
  if (!Number.isFinite(v)) throw new SqlEvalError(`"${clip(text)}" is out of range for type ${DISPLAY[t]}`);
  if (v === 0 && /[1-9]/.test(s.replace(/[eE].*$/, '')))
    throw new SqlEvalError(`"${clip(text)}" is out of range for type ${DISPLAY[t]}`);
  return v;
}

function parseBoolText(text: string): boolean {
  const s = text.trim().toLowerCase();
  if (s.length > 0) {
    if ('true'.startsWith(s) || 'yes'.startsWith(s) || s === 'on' || s === '1') return true;
    if ('false'.startsWith(s) || 'no'.startsWith(s) || s === 'of' || s === 'off' || s === '0') return false;
  }
  throw new SqlEvalError(`invalid input syntax for type boolean: "${clip(text)}"`);
}

function parseUuidText(text: string): string {
  let s = text.trim();
  if (s.startsWith('{') && s.endsWith('}')) s = s.slice(1, -1);
  if (!/^[0-9a-fA-F]{4}(?:-?[0-9a-fA-F]{4}){7}$/.test(s))
    throw new SqlEvalError(`invalid input syntax for type uuid: "${clip(text)}"`);
  const h = s.replace(/-/g, '').toLowerCase();
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

/** Input function of a type (without typmod). */
export function inputFn(t: BaseType): (text: string) => Internal {
  switch (t) {
    case 'bool':
      return parseBoolText;
    case 'int2':
    case 'int4':
    case 'int8':
      return (s) => parseIntText(s, t);
    case 'numeric':
      return (s) => {
        const d = Decimal.parse(s);
        if (d === undefined) throw new SqlEvalError(`invalid input syntax for type numeric: "${clip(s)}"`);
        return d;
      };
    case 'float4':
    case 'float8':
      return (s) => parseFloatText(s, t);
    case 'text':
    case 'varchar':
    case 'bpchar':
      return (s) => s;
    case 'date':
      return parseDate;
    case 'timestamp':
      return (s) => parseTimestamp(s, false);
    case 'timestamptz':
      return (s) => parseTimestamp(s, true);
    case 'uuid':
      return parseUuidText;
  }
}

// ---------------------------------------------------------------------------------------------
// Output functions (internal -> text), PostgreSQL's with DateStyle ISO, extra_float_digits 1,
// TimeZone UTC.

/** Shortest decimal digits d1d2...dn and exponent x (v = 0.d1..dn * 10^(x+1)) that identify a
 *  positive finite float8 (or float4) value, as PostgreSQL's Ryu-based float8out/float4out compute
 *  them: the shortest digit string strictly inside the rounding interval (PostgreSQL does not
 *  accept the interval bounds, unlike JavaScript's Number#toString), closest to the value, ties
 *  to even. Exact BigInt arithmetic. */
function shortestDecimal(v: number, float4: boolean): [string, number] {
  let m2: bigint;
  let e2: number;
  let mmShift: bigint;
  if (float4) {
    const dv = new DataView(new ArrayBuffer(4));
    dv.setFloat32(0, v);
    const bits = dv.getUint32(0);
    const be = (bits >>> 23) & 0xff;
    const mant = bits & 0x7fffff;
    m2 = BigInt(be === 0 ? mant : mant | 0x800000);
    e2 = (be === 0 ? 1 : be) - 127 - 23;
    mmShift = mant !== 0 || be <= 1 ? 1n : 0n;
  } else {
    const dv = new DataView(new ArrayBuffer(8));
    dv.setFloat64(0, v);
    const hi = dv.getUint32(0);
    const lo = dv.getUint32(4);
    const be = (hi >>> 20) & 0x7ff;
    const mant = (BigInt(hi & 0xfffff) << 32n) | BigInt(lo);
    m2 = be === 0 ? mant : mant | (1n << 52n);
    e2 = (be === 0 ? 1 : be) - 1023 - 52;
    mmShift = mant !== 0n || be <= 1 ? 1n : 0n;
  }
  // value, lower and upper bounds in units of 2^(e2-2), then as integers scaled by 10^S
  const E = e2 - 2;
  const S = Math.max(0, -E);
  const conv = (x: bigint) => (E >= 0 ? x << BigInt(E) : x * 5n ** BigInt(S));
  const mv = 4n * m2;
  const V = conv(mv);
  const LO = conv(mv - 1n - mmShift);
  const HI = conv(mv + 2n);
  const e10 = V.toString().length - 1 - S; // v in [10^e10, 10^(e10+1))
  for (let p = 1; ; p++) {
    const k = e10 - p + 1; // exponent of the last digit
    const t = k + S;
    let u = 1n;
    let Vs = V;
    let Ls = LO;
    let Hs = HI;
    if (t >= 0) u = 10n ** BigInt(t);
    else {
      const f = 10n ** BigInt(-t);
      Vs *= f;
      Ls *= f;
      Hs *= f;
    }
    let q = Vs / u;
    const r = Vs - q * u;
    if (2n * r > u || (2n * r === u && (q & 1n) === 1n)) q += 1n;
    if (q * u <= Ls) q += 1n;
    else if (q * u >= Hs) q -= 1n;
    if (q * u > Ls && q * u < Hs) {
      let digits = q.toString();
      const exp = k + digits.length - 1;
      digits = digits.replace(/0+$/, '') || '0';
      return [digits, exp];
    }
  }
}

function formatFloat(v: number, float4: boolean): string {
  if (Number.isNaN(v)) return 'NaN';
  if (v === Infinity) return 'Infinity';
  if (v === -Infinity) return '-Infinity';
  if (v === 0) return Object.is(v, -0) ? '-0' : '0';
  const neg = v < 0;
  const [digits, exp] = shortestDecimal(Math.abs(v), float4);
  let out: string;
  if (exp >= -4 && exp < (float4 ? 6 : 15)) {
    if (exp >= 0) {
      const ip = digits.slice(0, exp + 1).padEnd(exp + 1, '0');
      const fp = digits.slice(exp + 1);
      out = fp ? `${ip}.${fp}` : ip;
    } else out = `0.${'0'.repeat(-exp - 1)}${digits}`;
  } else {
    const a = Math.abs(exp);
    out =
      digits[0]! +
      (digits.length > 1 ? `.${digits.slice(1)}` : '') +
      'e' +
      (exp < 0 ? '-' : '+') +
      (a < 10 ? `0${a}` : String(a));
  }
  return neg ? `-${out}` : out;
}

function outputFn(t: BaseType): Unary<string> {
  switch (t) {
    case 'bool':
      return (v: boolean) => (v ? 'true' : 'false');
    case 'int2':
    case 'int4':
    case 'int8':
      return (v: number | bigint) => String(v);
    case 'numeric':
      return (v: Decimal) => v.toString();
    case 'float4':
      return (v: number) => formatFloat(v, true);
    case 'float8':
      return (v: number) => formatFloat(v, false);
    case 'text':
    case 'varchar':
    case 'bpchar':
    case 'uuid':
      return (v: string) => v;
    case 'date':
      return formatDate;
    case 'timestamp':
      return (v: bigint) => formatTimestamp(v, false);
    case 'timestamptz':
      return (v: bigint) => formatTimestamp(v, true);
  }
}

// ---------------------------------------------------------------------------------------------
// Comparison

function rtrimSpaces(s: string): string {
  let n = s.length;
  while (n > 0 && s.charCodeAt(n - 1) === 32) n--;
  return n === s.length ? s : s.slice(0, n);
}

/** Code point order (= byte order of UTF-8, as under COLLATE "C"). */
function cmpText(a: string, b: string): number {
  if (a === b) return 0;
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x !== y) {
      const xs = x >= 0xd800 && x <= 0xdfff;
      const ys = y >= 0xd800 && y <= 0xdfff;
      // a surrogate (code point >= 0x10000) is above any BMP code point
      if (xs !== ys) return xs ? 1 : -1;
      return x < y ? -1 : 1;
    }
  }
  return a.length < b.length ? -1 : a.length > b.length ? 1 : 0;
}

function cmpFloat(a: number, b: number): number {
  if (a < b) return -1;
  if (a > b) return 1;
  if (a === b) return 0;
  const an = Number.isNaN(a);
  const bn = Number.isNaN(b);
  return an ? (bn ? 0 : 1) : -1;
}

function cmpPrim(a: number | bigint | boolean, b: number | bigint | boolean): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

export function cmpFn(t: BaseType): Binary<number> {
  switch (t) {
    case 'float4':
    case 'float8':
      return cmpFloat;
    case 'numeric':
      return Decimal.cmp;
    case 'text':
    case 'varchar':
    case 'uuid':
      return cmpText;
    case 'bpchar':
      return (a: string, b: string) => cmpText(rtrimSpaces(a), rtrimSpaces(b));
    default:
      return cmpPrim;
  }
}

/** Equality for a type; undefined when `===` on the internal values is the equality. */
export function eqFn(t: BaseType): Binary<boolean> | undefined {
  switch (t) {
    case 'float4':
    case 'float8':
      return (a: number, b: number) => a === b || (Number.isNaN(a) && Number.isNaN(b));
    case 'numeric':
      return Decimal.eq;
    case 'bpchar':
      return (a: string, b: string) => a === b || rtrimSpaces(a) === rtrimSpaces(b);
    default:
      return undefined;
  }
}

/** A key such that two non-null values are equal iff their keys are SameValueZero-equal. */
export function keyFn(t: BaseType): Unary<unknown> | undefined {
  switch (t) {
    case 'numeric':
      return (v: Decimal) => v.canonical();
    case 'bpchar':
      return rtrimSpaces;
    default:
      return undefined; // primitives: SameValueZero already equates NaN/NaN and 0/-0
  }
}

/** Canonical string of a non-null internal value. */
export function canonicalFn(t: BaseType): Unary<string> {
  switch (t) {
    case 'numeric':
      return (v: Decimal) => v.canonical();
    case 'bpchar':
      return rtrimSpaces;
    case 'float4':
    case 'float8':
      // any injective text works here: JavaScript's shortest round-trip form of the double
      return (v: number) => (v === 0 ? '0' : String(v));
    default:
      return outputFn(t);
  }
}

// ---------------------------------------------------------------------------------------------
// Casts

const IMPLICIT: Record<string, string[]> = dict({
  int2: ['int4', 'int8', 'numeric', 'float4', 'float8'],
  int4: ['int8', 'numeric', 'float4', 'float8'],
  int8: ['numeric', 'float4', 'float8'],
  numeric: ['float4', 'float8'],
  float4: ['float8'],
  text: ['varchar', 'bpchar'],
  varchar: ['text', 'bpchar'],
  bpchar: ['text', 'varchar'],
  date: ['timestamp', 'timestamptz'],
  timestamp: ['timestamptz'],
});

export function isImplicitCast(from: string, to: string): boolean {
  return from === to || (IMPLICIT[from]?.includes(to) ?? false);
}

export function isPreferred(t: string): boolean {
  return PREFERRED.has(t);
}

function intRange(t: 'int2' | 'int4', v: number): number {
  if (t === 'int2' ? v < -32768 || v > 32767 : v < -2147483648 || v > 2147483647) {
    throw new SqlEvalError(`${DISPLAY[t]} out of range`);
  }
  return v;
}

function bigRange(t: 'int2' | 'int4' | 'int8', v: bigint): number | bigint {
  const [lo, hi] = INT_LIMITS[t]!;
  if (v < lo || v > hi) throw new SqlEvalError(`${DISPLAY[t]} out of range`);
  return t === 'int8' ? v : Number(v);
}

function floatToFloat4(v: number): number {
  const r = Math.fround(v);
  if (!Number.isFinite(r) && Number.isFinite(v)) throw new SqlEvalError('value out of range: overflow');
  if (r === 0 && v !== 0) throw new SqlEvalError('value out of range: underflow');
  return r;
}

function rintHalfEven(x: number): number {
  const r = Math.round(x);
  return r - x === 0.5 && r % 2 !== 0 ? r - 1 : r;
}

/** The conversion function of a cast from `from` to `to` (no typmod), or undefined if
 *  PostgreSQL has no such cast (explicit: explicit casts allowed, else implicit only). */
export function castFn(from: BaseType, to: BaseType, explicit: boolean): Unary | undefined {
  if (from === to) return (v) => v;
  if (!explicit && !isImplicitCast(from, to)) return undefined;
  const fc = CATEGORY[from];
  const tc = CATEGORY[to];
  // anything -> string types: output function (bpchar -> text/varchar trims trailing spaces)
  if (tc === 'S') {
    if (from === 'bpchar') return rtrimSpaces;
    return outputFn(from);
  }
  // string types -> anything: input function
  if (fc === 'S') return inputFn(to);
  switch (from) {
    case 'int2':
    case 'int4':
      switch (to) {
        case 'int2':
        case 'int4':
          return (v: number) => intRange(to, v);
        case 'int8':
          return (v: number) => BigInt(v);
        case 'numeric':
          return Decimal.fromInt;
        case 'float4':
          return Math.fround;
        case 'float8':
          return (v: number) => v;
        case 'bool':
          return from === 'int4' ? (v: number) => v !== 0 : undefined;
      }
      return undefined;
    case 'int8':
      switch (to) {
        case 'int2':
        case 'int4':
          return (v: bigint) => bigRange(to, v);
        case 'numeric':
          return Decimal.fromBigInt;
        case 'float4':
          return (v: bigint) => Math.fround(Number(v));
        case 'float8':
          return (v: bigint) => Number(v);
      }
      return undefined;
    case 'numeric':
      switch (to) {
        case 'int2':
        case 'int4':
        case 'int8':
          return (v: Decimal) => {
            if (v.isNaN) throw new SqlEvalError(`cannot convert NaN to ${DISPLAY[to]}`);
            if (!v.isFinite) throw new SqlEvalError(`cannot convert infinity to ${DISPLAY[to]}`);
            return bigRange(to, v.roundToBigInt());
          };
        case 'float8':
        case 'float4':
          return (v: Decimal) => {
            // numeric_float8/4 go through the float input function, which rejects out-of-range values
            const d = v.toNumber();
            if (v.isFinite && (!Number.isFinite(d) || (d === 0 && v.m !== 0n))) {
              throw new SqlEvalError(`"${v.toString()}" is out of range for type ${DISPLAY[to]}`);
            }
            return to === 'float4' ? floatToFloat4(d) : d;
          };
      }
      return undefined;
    case 'float4':
    case 'float8':
      switch (to) {
        case 'int2':
        case 'int4':
        case 'int8':
          return (v: number) => {
            if (!Number.isFinite(v)) throw new SqlEvalError(`${DISPLAY[to]} out of range`);
            const r = rintHalfEven(v);
            if (to === 'int8') {
              if (r < -(2 ** 63) || r >= 2 ** 63) throw new SqlEvalError('bigint out of range');
              return BigInt(r);
            }
            return intRange(to, r);
          };
        case 'numeric':
          return (v: number) => Decimal.fromFloat(v, from === 'float4' ? 6 : 15);
        case 'float8':
          return (v: number) => v;
        case 'float4':
          return floatToFloat4;
      }
      return undefined;
    case 'bool':
      return to === 'int4' ? (v: boolean) => (v ? 1 : 0) : undefined;
    case 'date':
      if (to === 'timestamp' || to === 'timestamptz') return dateToTimestamp;
      return undefined;
    case 'timestamp':
    case 'timestamptz':
      if (to === 'date') return (v: bigint) => checkDateRange(timestampToDate(v));
      if (to === 'timestamp' || to === 'timestamptz') return (v: bigint) => v;
      return undefined;
  }
  return undefined;
}

function truncChars(s: string, n: number): string {
  if (s.length <= n) return s;
  const cps = Array.from(s);
  return cps.length <= n ? s : cps.slice(0, n).join('');
}

function padChars(s: string, n: number): string {
  charge(n);
  if (s.length >= n) {
    const len = Array.from(s).length;
    return len >= n ? s : s + ' '.repeat(n - len);
  }
  return s + ' '.repeat(n - Array.from(s).length);
}

/** Length/precision coercion for an explicit cast to a type with modifiers. */
export function typmodFn(ts: TypeSpec): Unary | undefined {
  if (ts.mods.length === 0) return undefined;
  const [a, b] = ts.mods as [number, number | undefined];
  switch (ts.base) {
    case 'varchar':
      return (v: string) => truncChars(v, a);
    case 'bpchar':
      return (v: string) => padChars(truncChars(v, a), a);
    case 'numeric':
      return (v: Decimal) => v.applyTypmod(a, b ?? 0);
    case 'timestamp':
    case 'timestamptz':
      return (v: bigint) => roundTimestamp(v, a);
  }
  return undefined;
}

// ---------------------------------------------------------------------------------------------
// History values (SqlValue) -> internal

function badValue(v: unknown, ts: TypeSpec, col: string | undefined, why?: string): never {
  throw new PredicateError(
    `${col === undefined ? 'value' : `column "${clip(col)}": value`} ${showValue(v)} is not a ` +
      `valid ${clip(ts.name)}${why ? ` (${why})` : ''}`,
  );
}

/** A JSON scalar (what history values are); anything else is malformed. */
function isScalar(v: unknown): v is Exclude<SqlValue, null> {
  const t = typeof v;
  return t === 'string' || t === 'number' || t === 'boolean';
}

/** Converter of a (non-null) history value of a column type to the internal representation.
 *  Malformed values throw PredicateError. */
export function fromSqlFn(ts: TypeSpec, col?: string): (v: Exclude<SqlValue, null>) => Internal {
  const t = ts.base as BaseType;
  const viaText = (parse: (s: string) => Internal) => (v: Exclude<SqlValue, null>) => {
    if (typeof v !== 'string' && typeof v !== 'number') badValue(v, ts, col);
    try {
      return parse(String(v));
    } catch (e) {
      if (e instanceof SqlEvalError || e instanceof PredicateError) badValue(v, ts, col, e.message);
      throw e;
    }
  };
  switch (t) {
    case 'bool': {
      const p = viaText(parseBoolText);
      return (v) => (typeof v === 'boolean' ? v : p(v));
    }
    case 'int2':
    case 'int4': {
      const p = viaText((s) => parseIntText(s, t));
      const lo = t === 'int2' ? -32768 : -2147483648;
      const hi = t === 'int2' ? 32767 : 2147483647;
      return (v) => (typeof v === 'number' && Number.isInteger(v) && v >= lo && v <= hi ? v + 0 : p(v));
    }
    case 'int8': {
      const p = viaText((s) => parseIntText(s, 'int8'));
      const simple = /^-?[0-9]{1,18}$/;
      return (v) => {
        if (typeof v === 'string' && simple.test(v)) return BigInt(v);
        return typeof v === 'number' && Number.isSafeInteger(v) ? BigInt(v) : p(v);
      };
    }
    case 'numeric':
      return viaText(inputFn('numeric'));
    case 'float4': {
      const p = viaText((s) => parseFloatText(s, 'float4'));
      return (v) => (typeof v === 'number' ? Math.fround(v) : p(v));
    }
    case 'float8': {
      const p = viaText((s) => parseFloatText(s, 'float8'));
      return (v) => (typeof v === 'number' ? v : p(v));
    }
    case 'text':
    case 'varchar':
      return (v) => (typeof v === 'string' ? v : isScalar(v) ? String(v) : badValue(v, ts, col));
    case 'bpchar': {
      const n = ts.mods[0];
      if (n === undefined) return (v) => (typeof v === 'string' ? v : isScalar(v) ? String(v) : badValue(v, ts, col));
      return (v) => padChars(typeof v === 'string' ? v : isScalar(v) ? String(v) : badValue(v, ts, col), n);
    }
    case 'date':
      return viaText(parseDate);
    case 'timestamp':
      return viaText((s) => parseTimestamp(s, false));
    case 'timestamptz':
      return viaText((s) => parseTimestamp(s, true));
    case 'uuid':
      return viaText(parseUuidText);
  }
  return (v) => badValue(v, ts, col, 'unsupported type');
}

// ---------------------------------------------------------------------------------------------
// canonicalValue / valuesEqual

const NULL_MARKER = '\u0000NULL';
const MALFORMED_MARKER = '\u0000MALFORMED:';

/** Canonical string for a value of a column type: two values are equal in PostgreSQL iff their
 *  canonical strings are equal (numeric "1.50" ~ "1.5", int8 "007" ~ "7", bpchar trailing spaces
 *  ignored, timestamptz by instant, float -0 ~ 0, NaN ~ NaN). null gives a marker no value can
 *  produce. Values of types this module does not know are compared by their JSON text; a value
 *  that is malformed for its (known) type gets a marker-prefixed JSON text, equal only to itself. */
export function canonicalValue(v: SqlValue, type: string): string {
  if (v === null || v === undefined) return NULL_MARKER;
  const ts = typeof type === 'string' ? parseTypeName(type) : undefined;
  if (!ts?.supported) return typeof v === 'string' ? v : (safeJson(v) ?? String(v));
  const t = ts.base as BaseType;
  if ((t === 'text' || t === 'varchar') && typeof v === 'string') return v;
  let internal: Internal;
  try {
    internal = fromSqlFn(ts)(v);
  } catch (e) {
    if (e instanceof PredicateError) return MALFORMED_MARKER + (safeJson(v) ?? String(v));
    throw e;
  }
  return canonicalFn(t)(internal);
}

/** PostgreSQL equality for the column type, except that null equals null. */
export function valuesEqual(a: SqlValue, b: SqlValue, type: string): boolean {
  if (a === b) return true;
  if (a === null || b === null || a === undefined || b === undefined) return false;
  return canonicalValue(a, type) === canonicalValue(b, type);
}
