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
//
// The compiler is split by concern, each file in src/sql/ saying what it holds: parse.ts (the parser and its
// limits), compile.ts (the dispatcher by node kind), expr.ts (the compiled form and shared helpers), leaves.ts
// (constants, columns), params.ts, coerce.ts (casts and coercion), resolve.ts (operator resolution), compare.ts,
// arith.ts, strings.ts (||, LIKE, COLLATE), arrays.ts (ANY/ALL, IN), array-literal.ts, bool.ts (AND/OR/NOT, NULL
// tests), points.ts (point constraints), numeric-bounds.ts, node.ts (typed access to the parse tree); values.ts,
// decimal.ts, datetime.ts and likepattern.ts hold the values they compute on. This file is the entry point:
// compilePredicate and the test() it returns.

import { toBool } from './coerce.js';
import { compile, newCtx, settle } from './compile.js';
import { SqlEvalError, PredicateError, charge, clip, setWorkHook, showValue } from './errors.js';
import type { ColumnTypes, Ev, Ex, Node, Row } from './expr.js';
import { bodyOf } from './node.js';
import { measure, ParserNotLoadedError, parserLoaded, parseWhere } from './parse.js';

export { PredicateError } from './errors.js';
export type { ColumnTypes, Row } from './expr.js';
export { PREDICATE_LIMITS } from './limits.js';
export { numericBounds } from './numeric-bounds.js';
export { loadPredicateParser, ParserNotLoadedError } from './parse.js';
export { canonicalValue, valuesEqual } from './values.js';
export type { SqlValue } from './values.js';

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
  if (!parserLoaded()) throw new ParserNotLoadedError();
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
  const paramTypes = ctx.paramTypes;
  settle(ctx);
  // made when first asked for: most compiled WHEREs are never asked
  let onColumns: Map<ReadonlySet<string>, ((row: Row) => boolean) | undefined> | undefined;
  const conjunctsOn = (only: ReadonlySet<string>) => {
    onColumns ??= new Map();
    if (!onColumns.has(only)) {
      const prev = setWorkHook(hook);
      try {
        onColumns.set(only, conjunctsTest(whereClause, params ?? [], columns, paramTypes, only, hook));
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
  const and = bodyOf(whereClause, 'BoolExpr');
  const parts = and?.boolop === 'AND_EXPR' ? (and.args ?? []) : [whereClause];
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
