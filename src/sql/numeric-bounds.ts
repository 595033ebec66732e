// Numeric bounds on columns implied by a WHERE's top-level conjuncts (col >= $1, col BETWEEN 1 AND 5, ...): a
// superset filter for the linear check's candidate rows, read from the cached parse tree, never a verdict.

import { PredicateError } from './errors.js';
import { type ColumnTypes, type Node, lastName } from './expr.js';
import { bodyOf } from './node.js';
import { parserLoaded, parseWhere } from './parse.js';

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
  if (where === undefined || !parserLoaded()) return out;
  let clause: Node;
  try {
    clause = parseWhere(where).clause;
  } catch (e) {
    if (e instanceof PredicateError) return out;
    throw e;
  }
  const and = bodyOf(clause, 'BoolExpr');
  const parts = and?.boolop === 'AND_EXPR' ? (and.args ?? []) : [clause];
  const column = (n: Node | undefined): string | undefined => {
    const fields = bodyOf(n, 'ColumnRef')?.fields;
    if (fields?.length !== 1) return undefined;
    const name = bodyOf(fields[0], 'String')?.sval;
    return typeof name === 'string' && Object.hasOwn(columns, name) && NUMERIC_COLUMN_TYPES.has(String(columns[name]))
      ? name
      : undefined;
  };
  const value = (node: Node | undefined): number | undefined => {
    let n = node;
    for (let cast = bodyOf(n, 'TypeCast'); cast; cast = bodyOf(n, 'TypeCast')) n = cast.arg;
    let v: unknown;
    const p = bodyOf(n, 'ParamRef');
    const c = bodyOf(n, 'A_Const');
    if (p) v = params[(p.number ?? 0) - 1];
    else if (c) {
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
    const a = bodyOf(part, 'A_Expr');
    if (!a) continue;
    const op = lastName(a.name);
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
      const items = bodyOf(a.rexpr, 'List')?.items ?? [];
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
