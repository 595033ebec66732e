/**
 * Helpers over libpg-query's parse tree (JSON, handled as loose data: the shapes are checked where used) and the
 * deparser: building nodes, walking, what a subtree contains, and the round-trip comparison (`sameAst`) that
 * ignores positions in the text.
 */
import { deparseSync } from 'pgsql-deparser';
import { UnsupportedStatementError } from './errors.js';

// libpg-query's parse tree as loose data (above); typing it with @pgsql/types is a rewrite of the recorder (issue 18)
// biome-ignore lint/suspicious/noExplicitAny: see above
export type N = any;

export const deparse = (node: N): string =>
  deparseSync(node, { pretty: false, semicolons: false } as never) as unknown as string;

export function str(s: string): N {
  return { String: { sval: s } };
}

export function colRef(...fields: string[]): N {
  return { ColumnRef: { fields: fields.map(str) } };
}

export function param(n: number): N {
  return { ParamRef: { number: n } };
}

export function castText(e: N): N {
  return { TypeCast: { arg: e, typeName: { names: [str('text')], typemod: -1 } } };
}

export function resTarget(val: N, name?: string): N {
  return name === undefined ? { ResTarget: { val } } : { ResTarget: { name, val } };
}

/** Calls visit on every object in the tree (depth first); visit returns false to skip a subtree. */
export function walk(
  node: N,
  visit: (obj: Record<string, N>, key: string | undefined) => boolean | undefined,
  key?: string,
): void {
  if (Array.isArray(node)) {
    for (const x of node) walk(x, visit, key);
    return;
  }
  if (node === null || typeof node !== 'object') return;
  if (visit(node, key) === false) return;
  for (const [k, v] of Object.entries(node)) if (v !== null && typeof v === 'object') walk(v, visit, k);
}

export function clone<T>(x: T): T {
  return structuredClone(x);
}

/**
 * Is this key of a parse-tree node a position in the SQL text? libpg-query 18's node types (@pgsql/types) have
 * `location`, `name_location`, `list_start`/`list_end` (A_ArrayExpr, ...), `rexpr_list_start`/`rexpr_list_end`
 * (A_Expr, the IN list) and the statement's `stmt_location`/`stmt_len`; the rule covers each `*location` and
 * `*_start`/`*_end` field (test/recorder-rewrite.test.ts checks it against the type file); a field of that name
 * that is not a number (CREATE TABLESPACE's `location`, a path) is kept. Positions change when the deparser
 * spaces the text differently, so the round-trip check ignores them.
 */
export function isLocationKey(k: string): boolean {
  return k === 'location' || k.endsWith('_location') || k.endsWith('_start') || k.endsWith('_end') || k === 'stmt_len';
}

export function stripNoise(node: N): N {
  if (Array.isArray(node)) return node.map(stripNoise);
  if (node === null || typeof node !== 'object') return node;
  const out: Record<string, N> = {};
  for (const [k, v] of Object.entries(node)) if (!(typeof v === 'number' && isLocationKey(k))) out[k] = stripNoise(v);
  return out;
}

export function sameAst(a: N, b: N): boolean {
  return JSON.stringify(stripNoise(a)) === JSON.stringify(stripNoise(b));
}

interface RangeVarRef {
  schemaname?: string;
  relname: string;
}

export function rangeVars(node: N): RangeVarRef[] {
  const out: RangeVarRef[] = [];
  walk(node, (o) => {
    if (typeof o.relname === 'string' && ('inh' in o || 'relpersistence' in o)) out.push(o as unknown as RangeVarRef);
  });
  return out;
}

export function hasNode(node: N, name: string): boolean {
  let found = false;
  walk(node, (o) => {
    if (found) return false;
    if (name in o) found = true;
  });
  return found;
}

export function paramNumbers(node: N): number {
  let max = 0;
  walk(node, (o) => {
    if (o.ParamRef && typeof o.ParamRef.number === 'number') max = Math.max(max, o.ParamRef.number);
  });
  return max;
}

export function refuse(sql: string, why: string, how: string): never {
  throw new UnsupportedStatementError(sql, why, how);
}

export const AGGREGATES = new Set([
  'count',
  'sum',
  'avg',
  'min',
  'max',
  'bool_and',
  'bool_or',
  'every',
  'string_agg',
  'array_agg',
  'json_agg',
  'jsonb_agg',
  'json_agg_strict',
  'jsonb_agg_strict',
  'json_object_agg',
  'jsonb_object_agg',
  'json_object_agg_strict',
  'jsonb_object_agg_strict',
  'json_object_agg_unique',
  'jsonb_object_agg_unique',
  'json_object_agg_unique_strict',
  'jsonb_object_agg_unique_strict',
  'stddev',
  'stddev_pop',
  'stddev_samp',
  'variance',
  'var_pop',
  'var_samp',
  'bit_and',
  'bit_or',
  'bit_xor',
  'covar_pop',
  'covar_samp',
  'corr',
  'regr_avgx',
  'regr_avgy',
  'regr_count',
  'regr_intercept',
  'regr_r2',
  'regr_slope',
  'regr_sxx',
  'regr_sxy',
  'regr_syy',
  'percentile_cont',
  'percentile_disc',
  'mode',
  'xmlagg',
  'range_agg',
  'range_intersect_agg',
  'any_value',
]);

export const SET_RETURNING = new Set([
  'generate_series',
  'generate_subscripts',
  'unnest',
  'json_array_elements',
  'json_array_elements_text',
  'jsonb_array_elements',
  'jsonb_array_elements_text',
  'json_each',
  'json_each_text',
  'jsonb_each',
  'jsonb_each_text',
  'json_object_keys',
  'jsonb_object_keys',
  'json_populate_recordset',
  'jsonb_populate_recordset',
  'json_to_recordset',
  'jsonb_to_recordset',
  'jsonb_path_query',
  'regexp_matches',
  'regexp_split_to_table',
  'string_to_table',
]);

export function funcName(fc: N): string {
  const names = (fc.funcname ?? []).map((n: N) => n.String?.sval);
  return String(names[names.length - 1] ?? '').toLowerCase();
}

/** Does the expression contain an aggregate call (outside window functions)? */
export function hasAggregate(node: N): boolean {
  let found = false;
  walk(node, (o) => {
    if (found) return false;
    if (o.JsonObjectAgg || o.JsonArrayAgg) {
      found = true;
      return false;
    }
    const fc = o.FuncCall;
    if (fc && !fc.over) {
      if (
        fc.agg_star ||
        fc.agg_distinct ||
        fc.agg_filter ||
        fc.agg_order ||
        fc.agg_within_group ||
        AGGREGATES.has(funcName(fc))
      ) {
        found = true;
        return false;
      }
    }
  });
  return found;
}

export function hasWindow(node: N): boolean {
  let found = false;
  walk(node, (o) => {
    if (o.FuncCall?.over) found = true;
  });
  return found;
}

export function hasSetReturning(node: N): boolean {
  let found = false;
  walk(node, (o) => {
    if (o.FuncCall && SET_RETURNING.has(funcName(o.FuncCall))) found = true;
  });
  return found;
}

/** The statement for one node, as the deparser writes it. */
export function wrap(kind: string, body: N): string {
  return deparse({ version: 0, stmts: [{ stmt: { [kind]: body } }] } as N);
}

/** `json_agg(arg)`, or `json_agg(arg) OVER (PARTITION BY ...)`. */
export function jsonAgg(arg: N, partitionBy?: N[]): N {
  const fc: N = { funcname: [str('json_agg')], args: [arg], funcformat: 'COERCE_EXPLICIT_CALL' };
  if (partitionBy) fc.over = { partitionClause: partitionBy, frameOptions: 1058 };
  return { FuncCall: fc };
}

/** A scalar subquery `(SELECT ...)`. */
export function scalarSubquery(select: N): N {
  return { SubLink: { subLinkType: 'EXPR_SUBLINK', subselect: { SelectStmt: select } } };
}

/** The conjuncts of a WHERE (its AND operands, flattened). */
export function conjuncts(where: N | undefined): N[] {
  if (!where) return [];
  const b = where.BoolExpr;
  if (b && b.boolop === 'AND_EXPR') return (b.args as N[]).flatMap(conjuncts);
  return [where];
}

/** The AND of expressions (undefined for none). */
export function andOf(exprs: N[]): N | undefined {
  if (exprs.length === 0) return undefined;
  if (exprs.length === 1) return exprs[0];
  return { BoolExpr: { boolop: 'AND_EXPR', args: exprs } };
}
