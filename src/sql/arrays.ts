// x op ANY/ALL (array) and x [NOT] IN (list), with PostgreSQL's ScalarArrayOpExpr semantics (NULL elements, empty
// arrays): the array from a parameter, a literal, ARRAY[...] or a cast of one; IN lists of constants become one
// hashed lookup as PostgreSQL turns them into = ANY, other items separate comparisons.

import { combineBool } from './bool.js';
import { castEx, coerceTo, coerceUnknown, refresh, typeSpecOf } from './coerce.js';
import { makeCmp, compileCompare } from './compare.js';
import { SqlEvalError } from './errors.js';
import {
  type Ctx,
  type Ev,
  type Ex,
  type Node,
  derive,
  fail,
  isNullConst,
  konstEx,
  constValue,
  nodeKind,
  shared,
  unknownEx,
} from './expr.js';
import { bodyOf } from './node.js';
import { flattenJsonArray, parseArrayLiteral } from './array-literal.js';
import { paramText, paramValue } from './params.js';
import { pointsFor } from './points.js';
import { CMP_OPS, compareType, selectCommonType } from './resolve.js';
import { isImplicitCast, keyFn, spec, type BaseType, type TypeSpec } from './values.js';

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
    const vals = elems.map(constValue);
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
    out.points = pointsFor(ctx, Lorig.col, t, elems.map(constValue));
  }
  return out;
}

function unknownElems(ctx: Ctx, texts: (string | null)[], ts: TypeSpec, node: Node): Ex[] {
  return texts.map((s) => coerceUnknown(ctx, unknownEx(s, node), ts));
}

export function compileAnyAll(ctx: Ctx, node: Node, op: string, useOr: boolean, lexpr: Node, rexpr: Node): Ex {
  if (!CMP_OPS.has(op)) fail(node, `unsupported operator ${op} with ANY/ALL`);
  const L = ctx.compile(lexpr);
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
    return fromUnknown(rb.isnull ? null : textsOf(rb.sval?.sval ?? '', rexpr), undefined);
  }
  if (rk === 'A_ArrayExpr') {
    const elems: Ex[] = (rb.elements ?? []).map((e) => ctx.compile(e));
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
    const arg = rb.arg;
    if (arg === undefined) fail(rexpr, 'malformed cast');
    const [ak, ab] = nodeKind(arg);
    if (ak === 'ParamRef' || (ak === 'A_Const' && (ab.sval !== undefined || ab.isnull))) {
      let texts: (string | null)[] | null;
      if (ak === 'ParamRef') {
        const n: number = ab.number ?? 0;
        if (n < 1 || n > ctx.params.length) fail(arg, `there is no parameter $${n} (${ctx.params.length} given)`);
        ctx.referenced.add(n);
        const prev = ctx.paramTypes[n];
        if (prev !== undefined && prev !== `${et}[]`) fail(arg, `inconsistent types deduced for parameter $${n}`);
        ctx.paramTypes[n] = `${et}[]`;
        texts = textsOf(paramValue(ctx, n, arg), arg);
      } else texts = ab.isnull ? null : textsOf(ab.sval?.sval ?? '', arg);
      return fromTyped(et, texts && unknownElems(ctx, texts, ts, rexpr));
    }
    if (ak === 'A_ArrayExpr') {
      const elems: Ex[] = (ab.elements ?? []).map((e) => castEx(ctx, ctx.compile(e), ts, e));
      return fromTyped(et, elems);
    }
    fail(rexpr, 'unsupported array expression');
  }
  fail(rexpr, 'unsupported right operand of ANY/ALL (expected a parameter, an array literal or ARRAY[...])');
}

export function compileIn(ctx: Ctx, node: Node, op: string, lexpr: Node, rexpr: Node): Ex {
  const useOr = op !== '<>';
  const items = bodyOf(rexpr, 'List')?.items;
  if (!Array.isArray(items)) fail(node, 'IN (subquery) is not supported');
  const L = shared(ctx, ctx.compile(lexpr));
  const R = items.map((i) => ctx.compile(i));
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
