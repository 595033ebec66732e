// Arithmetic: + - * / % on integers (overflow checked like PostgreSQL), int8 (bigint), numeric (Decimal), floats
// and dates (date +/- integer, date - date), the operator signature each pair of operand types resolves to, and
// unary minus and plus.

import { checkDateRange } from './datetime.js';
import { Decimal } from './decimal.js';
import { SqlEvalError } from './errors.js';
import { coerceTo } from './coerce.js';
import { type Ctx, type Ex, type Node, type T, derive, fail, isNullConst, konstEx, mapEx, typeName } from './expr.js';
import { opError } from './resolve.js';
import { CATEGORY, isFloat, type BaseType, type Binary, type Unary } from './values.js';

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

function arithFn(op: string, sig: ArithSig): Binary {
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

export function compileUnary(node: Node, op: string, e: Ex): Ex {
  if (op !== '-' && op !== '+') fail(node, `unsupported prefix operator ${op}`);
  if (e.t === 'unknown') fail(node, `operator is not unique: ${op} unknown`);
  if (CATEGORY[e.t] !== 'N') fail(node, `operator does not exist: ${op} ${typeName(e.t)}`);
  if (op === '+') return { ...e, col: undefined, node };
  if (isNullConst(e)) return konstEx(e.t, null, node);
  const t = e.t;
  let fn: Unary;
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

export function compileArith(ctx: Ctx, node: Node, op: string, L: Ex, R: Ex): Ex {
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
