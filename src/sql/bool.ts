// Boolean logic with SQL's three values (TRUE, FALSE, NULL): AND / OR (left to right with short-circuit, like
// PostgreSQL's executor, constant arguments simplified like its planner), NOT, IS [NOT] NULL and
// IS [NOT] TRUE / FALSE / UNKNOWN.

import type { BooleanTest, BoolExpr, NullTest } from '@pgsql/types';
import { toBool } from './coerce.js';
import { type Ctx, type Ev, type Ex, type Node, derive, fail, konstEx } from './expr.js';
import { mergeAnd, mergeOr } from './points.js';

/** AND / OR with three-valued logic (constant arguments simplified like PostgreSQL does). */
export function combineBool(node: Node, kind: 'AND' | 'OR', args: Ex[]): Ex {
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

export function compileBoolExpr(ctx: Ctx, node: Node, b: BoolExpr): Ex {
  const args: Ex[] = (b.args ?? []).map((a: Node) => ctx.compile(a));
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

/** `x IS [NOT] NULL`. */
export function compileNullTest(ctx: Ctx, node: Node, b: NullTest): Ex {
  if (b.argisrow) fail(node, 'row-wise IS NULL is not supported');
  const e = ctx.compile(b.arg);
  const isNull = b.nulltesttype === 'IS_NULL';
  if (e.t === 'unknown') return konstEx('bool', (e.text === null) === isNull, node);
  const f = e.ev;
  return derive('bool', isNull ? (row) => f(row) === null : (row) => f(row) !== null, [e], node);
}

/** `x IS [NOT] TRUE / FALSE / UNKNOWN`. */
export function compileBooleanTest(ctx: Ctx, node: Node, b: BooleanTest): Ex {
  const e = toBool(ctx, ctx.compile(b.arg), String(b.booltesttype).replace(/_/g, ' '));
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
