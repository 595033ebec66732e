// The compiled form of a "where" clause (predicate.ts): each parse-tree node becomes an Ex, a typed closure over a
// row, and the compile context (Ctx) tracks columns, parameters and their deduced types. Also the helpers every
// compiler module shares: failing with the clause's text, constants, constant folding (derive, as PostgreSQL's
// planner folds immutable constant subexpressions), operands evaluated once per row (shared), and reading a node's
// kind (nodeKind) and a qualified name (lastName).

import type { Node } from '@pgsql/types';
import { deparseSync } from 'pgsql-deparser';
import { SqlEvalError, PredicateError, clip } from './errors.js';
import { type KindAndBody, bodyOf } from './node.js';
import { DISPLAY, type BaseType, type Internal, type SqlValue, type Unary } from './values.js';

export type Row = Record<string, SqlValue>;
export type ColumnTypes = Record<string, string>;

/** libpg-query's parse tree (its JSON AST, typed by @pgsql/types of the same major version, 18) */
export type { Node };
export type Ev = (row: Row) => Internal;
/** The evaluator of an expression whose type is represented by V (a narrowing its type guarantees, as for Unary). */
export type EvOf<V> = (row: Row) => V | null;
export type T = BaseType | 'unknown';

export interface Ex {
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

export interface ParamOccurrence {
  n: number;
  resolved: boolean;
}

export interface Ctx {
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
  /** compiles a subexpression: the dispatcher of compile.ts, reached through the context so that the operator
   *  modules need not import it (no import cycle) */
  compile: (node: Node | undefined) => Ex;
}

const NO_ROW = Object.freeze({}) as Row;

/** The SQL text of a node for a message (its JSON if the deparser cannot write it), clipped. */
export function describe(node: Node | undefined): string {
  if (node === undefined) return '';
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

export function fail(node: Node | undefined, why: string): never {
  throw new PredicateError(`${why} in "${describe(node)}"`);
}

export function typeName(t: T): string {
  return DISPLAY[t] ?? t;
}

function unreachableEv(): never {
  throw new Error('internal error: evaluating an unresolved unknown-type expression');
}

export function konstEx(t: T, v: Internal, node: Node): Ex {
  return { t, ev: () => v, konst: true, cval: v, node };
}

export function unknownEx(text: string | null, node: Node, param?: number): Ex {
  return { t: 'unknown', ev: unreachableEv, konst: true, cval: undefined, text, param, node };
}

/** Builds a derived node; folds it to a constant if all its inputs are constant (PostgreSQL folds
 *  immutable constant subexpressions while planning, so their errors fail the whole query). */
export function derive(t: T, ev: Ev, kids: Ex[], node: Node): Ex {
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
export function shared(ctx: Ctx, e: Ex): Ex {
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

/** The value of a constant expression of a known type (a compiler error if it has none). */
export function constValue(e: Ex): Internal {
  if (!e.konst || e.cval === undefined) throw new Error('internal error: not a typed constant');
  return e.cval;
}

export function isNullConst(e: Ex): boolean {
  return e.konst && e.t !== 'unknown' && e.cval === null;
}

export function mapEx(t: T, e: Ex, fn: Unary, node: Node): Ex {
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

/** The last name of a qualified name (an operator, a function, a collation): `pg_catalog.=` is `=`. */
export function lastName(list: Node[] | undefined): string {
  const n = list?.[list.length - 1];
  return bodyOf(n, 'String')?.sval ?? '';
}

/** The kind and body of a node; a PredicateError when it is not one wrapper object of one key. */
export function nodeKind(node: Node | undefined): KindAndBody {
  const keys = node === undefined || node === null ? [] : Object.keys(node);
  if (keys.length !== 1)
    throw new PredicateError(`unexpected parse tree node ${String(JSON.stringify(node)).slice(0, 100)}`);
  return [keys[0]!, (node as Record<string, unknown>)[keys[0]!]] as KindAndBody;
}
