// The compiler's dispatcher: one parse-tree node to its compiled expression, by node kind (and by operator kind for
// A_Expr); each kind is compiled by its module. The compile context it creates carries the dispatcher, so that those
// modules compile their operands without importing this file.

import type { A_Expr } from '@pgsql/types';
import { compileAnyAll, compileIn } from './arrays.js';
import { compileArith, compileUnary } from './arith.js';
import { compileBoolExpr, compileBooleanTest, compileNullTest } from './bool.js';
import { castEx, typeSpecOf } from './coerce.js';
import { compileBetween, compileCompare, compileDistinct } from './compare.js';
import { PredicateError } from './errors.js';
import { type ColumnTypes, type Ctx, type Ex, type Node, fail, lastName, nodeKind } from './expr.js';
import { bodyOf } from './node.js';
import { compileColumn, compileConst } from './leaves.js';
import { compileParam } from './params.js';
import { CMP_OPS } from './resolve.js';
import { compileCollate, compileConcat, compileLike } from './strings.js';

export function compile(ctx: Ctx, node: Node | undefined): Ex {
  if (node === undefined) throw new PredicateError('unexpected parse tree: an expression is missing');
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
    case 'CollateClause':
      return compileCollate(ctx, node, b);
    case 'A_Expr':
      return compileAExpr(ctx, node, b);
    case 'BoolExpr':
      return compileBoolExpr(ctx, node, b);
    case 'NullTest':
      return compileNullTest(ctx, node, b);
    case 'BooleanTest':
      return compileBooleanTest(ctx, node, b);
    case 'FuncCall':
      return fail(node, `function calls are not supported (${lastName(b.funcname)})`);
    case 'SubLink':
      return fail(node, 'subqueries are not supported');
    default:
      return fail(node, `unsupported expression (${kind})`);
  }
}

function compileAExpr(ctx: Ctx, node: Node, b: A_Expr): Ex {
  const op = lastName(b.name);
  const { lexpr, rexpr } = b;
  if (b.kind === 'AEXPR_OP') {
    if (lexpr === undefined) {
      if (rexpr === undefined) fail(node, 'malformed operator expression');
      return compileUnary(node, op, compile(ctx, rexpr));
    }
    if (rexpr === undefined) fail(node, `unsupported postfix operator ${op}`);
    if (CMP_OPS.has(op)) return compileCompare(ctx, node, op, compile(ctx, lexpr), compile(ctx, rexpr));
    if (op === '+' || op === '-' || op === '*' || op === '/' || op === '%') {
      return compileArith(ctx, node, op, compile(ctx, lexpr), compile(ctx, rexpr));
    }
    if (op === '||') return compileConcat(ctx, node, compile(ctx, lexpr), compile(ctx, rexpr));
    return fail(node, `unsupported operator ${op}`);
  }
  // every other kind has both operands (the parser's trees do)
  if (lexpr === undefined || rexpr === undefined) fail(node, 'malformed operator expression');
  switch (b.kind) {
    case 'AEXPR_OP_ANY':
    case 'AEXPR_OP_ALL':
      return compileAnyAll(ctx, node, op, b.kind === 'AEXPR_OP_ANY', lexpr, rexpr);
    case 'AEXPR_DISTINCT':
    case 'AEXPR_NOT_DISTINCT': {
      // like PostgreSQL: "x IS [NOT] DISTINCT FROM NULL" (an undecorated NULL) is "x IS [NOT] NULL"
      const isNullLit = (n: Node) => bodyOf(n, 'A_Const')?.isnull === true;
      if (isNullLit(lexpr) || isNullLit(rexpr)) {
        const arg = isNullLit(rexpr) ? lexpr : rexpr;
        return compile(ctx, {
          NullTest: { arg, nulltesttype: b.kind === 'AEXPR_DISTINCT' ? 'IS_NOT_NULL' : 'IS_NULL' },
        });
      }
      return compileDistinct(ctx, node, b.kind === 'AEXPR_NOT_DISTINCT', compile(ctx, lexpr), compile(ctx, rexpr));
    }
    case 'AEXPR_IN':
      return compileIn(ctx, node, op, lexpr, rexpr);
    case 'AEXPR_LIKE':
    case 'AEXPR_ILIKE':
      return compileLike(ctx, node, op, b.kind === 'AEXPR_ILIKE', lexpr, rexpr);
    case 'AEXPR_BETWEEN':
    case 'AEXPR_NOT_BETWEEN':
    case 'AEXPR_BETWEEN_SYM':
    case 'AEXPR_NOT_BETWEEN_SYM':
      return compileBetween(ctx, node, b.kind, lexpr, rexpr);
    default:
      fail(node, `unsupported expression kind ${b.kind}`);
  }
}

const settledUse = (): never => {
  throw new Error('isocheck internal error: a settled WHERE context compiled again');
};
/** A set or map a settled context holds in place of its own: empty, and any addition is an internal error. */
class SettledSet<T> extends Set<T> {
  override add(): this {
    return settledUse();
  }
}
class SettledMap<K, V> extends Map<K, V> {
  override set(): this {
    return settledUse();
  }
}
const SETTLED_NUMBERS: Set<number> = new SettledSet();
const SETTLED_NAMES: Set<string> = new SettledSet();
const SETTLED_CONVERTERS: Ctx['colCache'] = new SettledMap();
const SETTLED_OCCURRENCES: Ctx['occurrences'] = Object.freeze([]) as unknown as Ctx['occurrences'];

/**
 * Drops what only compiling needs from `ctx` (the parameters referenced and checked, the untyped occurrences, the
 * column set, the converter cache) once its clause is compiled and checked. The compiled closures keep their
 * context alive, and each compiled WHERE lives as long as the reads that have it: one per distinct (WHERE,
 * parameters), 200,000 of them in a 1M-transaction bank history, where these sets and maps were two fifths of
 * each (3.2 KB, docs/scale.md §4). A settled context compiles nothing more.
 */
export function settle(ctx: Ctx): void {
  ctx.referenced = SETTLED_NUMBERS;
  ctx.paramChecked = SETTLED_NUMBERS;
  ctx.usedSet = SETTLED_NAMES;
  ctx.colCache = SETTLED_CONVERTERS;
  ctx.occurrences = SETTLED_OCCURRENCES;
  ctx.compile = settledUse;
}

/** A fresh compile context: one per compiled clause (or conjunct), sharing `run` with its test(). */
export function newCtx(params: unknown[], columns: ColumnTypes, run: { gen: number }): Ctx {
  const ctx: Ctx = {
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
    compile: (node) => compile(ctx, node),
  };
  return ctx;
}
