// Comparisons: = <> < <= > >= with PostgreSQL's NULL semantics, IS [NOT] DISTINCT FROM, and BETWEEN (expanded into
// comparisons on operands compiled once and evaluated once per row, as PostgreSQL copies them), with the point
// constraints equalities imply.

import { combineBool } from './bool.js';
import { coerceTo, refresh } from './coerce.js';
import {
  type Ctx,
  type Ev,
  type Ex,
  type Node,
  constValue,
  derive,
  fail,
  isNullConst,
  konstEx,
  shared,
} from './expr.js';
import { bodyOf } from './node.js';
import { pointsFor } from './points.js';
import { compareType } from './resolve.js';
import { cmpFn, eqFn, isInt, type BaseType, type Binary } from './values.js';

/** The representations JavaScript's < orders as PostgreSQL does: integers, dates, timestamps, booleans. */
type Ordered = number | bigint | boolean;

export function makeCmp(op: string, t: BaseType): Binary<boolean> {
  const eq = eqFn(t);
  const cmp = cmpFn(t);
  const prim = isInt(t) || t === 'date' || t === 'timestamp' || t === 'timestamptz' || t === 'bool';
  switch (op) {
    case '=':
      return eq ?? ((a, b) => a === b);
    case '<>':
      return eq ? (a, b) => !eq(a, b) : (a, b) => a !== b;
    case '<':
      return prim ? (a: Ordered, b: Ordered) => a < b : (a, b) => cmp(a, b) < 0;
    case '<=':
      return prim ? (a: Ordered, b: Ordered) => a <= b : (a, b) => cmp(a, b) <= 0;
    case '>':
      return prim ? (a: Ordered, b: Ordered) => a > b : (a, b) => cmp(a, b) > 0;
    case '>=':
      return prim ? (a: Ordered, b: Ordered) => a >= b : (a, b) => cmp(a, b) >= 0;
  }
  throw new Error(`internal error: comparison ${op}`);
}

export function compileCompare(ctx: Ctx, node: Node, op: string, L: Ex, R: Ex): Ex {
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
    const c = constValue(r);
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
    const c = constValue(l);
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
    if (L.col !== undefined && r.konst) out.points = pointsFor(ctx, L.col, t, [constValue(r)]);
    else if (R.col !== undefined && l.konst) out.points = pointsFor(ctx, R.col, t, [constValue(l)]);
  }
  return out;
}

export function compileDistinct(ctx: Ctx, node: Node, not: boolean, L: Ex, R: Ex): Ex {
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
    if (L.col !== undefined && r.konst && r.cval !== null) out.points = pointsFor(ctx, L.col, t, [constValue(r)]);
    else if (R.col !== undefined && l.konst && l.cval !== null) out.points = pointsFor(ctx, R.col, t, [constValue(l)]);
  }
  return out;
}

export function compileBetween(ctx: Ctx, node: Node, kind: string, lexpr: Node, rexpr: Node): Ex {
  const items = bodyOf(rexpr, 'List')?.items;
  if (!Array.isArray(items) || items.length !== 2) fail(node, 'malformed BETWEEN');
  // PostgreSQL expands BETWEEN into comparisons on copies of its operands, each typed on its own: the
  // operands are compiled once (and evaluated once per row), and an untyped parameter takes the type
  // its first comparison deduced in the next ones (refresh), as the copies do.
  const x = shared(ctx, ctx.compile(lexpr));
  const lo = shared(ctx, ctx.compile(items[0]));
  const hi = shared(ctx, ctx.compile(items[1]));
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
