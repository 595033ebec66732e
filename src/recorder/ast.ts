/**
 * Helpers over libpg-query's parse tree and the deparser: building nodes, walking, what a subtree contains, and the
 * round-trip comparison (`sameAst`) that ignores positions in the text. They are typed with @pgsql/types (the
 * tree's types, version 18 like libpg-query and pgsql-deparser).
 */
import type { FuncCall, Node, ParseResult, RangeVar, SelectStmt } from '@pgsql/types';
import { deparseSync } from 'pgsql-deparser';
import { bodyOf, type NodeBody, type NodeKind } from '../sql/node.js';
import { UnsupportedStatementError } from './errors.js';

/**
 * An object `walk` visits: a node (its wrapper, {"ColumnRef": {...}}), a node's body, or another object of the
 * tree. In libpg-query's JSON a key named like a node kind holds a body of that kind, so `o.ColumnRef` is a
 * ColumnRef or undefined; any other key (a body's field) is unknown until checked.
 */
export type Visited = { [K in NodeKind]?: NodeBody<K> } & Record<string, unknown>;

export const deparse = (node: Node | ParseResult): string =>
  deparseSync(node, { pretty: false, semicolons: false } as never) as unknown as string;

export function str(s: string): Node {
  return { String: { sval: s } };
}

export function colRef(...fields: string[]): Node {
  return { ColumnRef: { fields: fields.map(str) } };
}

export function param(n: number): Node {
  return { ParamRef: { number: n } };
}

export function castText(e: Node): Node {
  return { TypeCast: { arg: e, typeName: { names: [str('text')], typemod: -1 } } };
}

export function resTarget(val: Node, name?: string): Node {
  return name === undefined ? { ResTarget: { val } } : { ResTarget: { name, val } };
}

/** Calls visit on every object in the tree (depth first); visit returns false to skip a subtree. */
export function walk(
  node: unknown,
  visit: (obj: Visited, key: string | undefined) => boolean | undefined,
  key?: string,
): void {
  if (Array.isArray(node)) {
    for (const x of node) walk(x, visit, key);
    return;
  }
  if (node === null || typeof node !== 'object') return;
  if (visit(node as Visited, key) === false) return; // an object of the parse tree (Visited says what it holds)
  // (for...in, not Object.entries: no array made per object; the tree's objects are plain, their keys own)
  for (const k in node) {
    const v = (node as Record<string, unknown>)[k];
    if (v !== null && typeof v === 'object') walk(v, visit, k);
  }
}

/** A deep copy of a tree of plain objects and arrays (the parse tree, nodes built for it): structuredClone's result
 *  on such a tree, several times faster (planning a statement clones its tree). */
export function clone<T>(x: T): T {
  if (x === null || typeof x !== 'object') return x;
  if (Array.isArray(x)) {
    const out = new Array(x.length);
    for (let i = 0; i < x.length; i++) out[i] = clone(x[i]);
    return out as T;
  }
  const out: Record<string, unknown> = {};
  for (const k in x) out[k] = clone((x as Record<string, unknown>)[k]);
  return out as T;
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

export function stripNoise(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(stripNoise);
  if (node === null || typeof node !== 'object') return node;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(node)) if (!(typeof v === 'number' && isLocationKey(k))) out[k] = stripNoise(v);
  return out;
}

/** The same tree, positions in the text aside: what comparing the JSON of both, stripped of their positions
 *  (stripNoise), says, without making either (keys in the same order, undefined fields as absent). */
export function sameAst(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (a === null || b === null || typeof a !== 'object' || typeof b !== 'object') return false;
  if (Array.isArray(a) || Array.isArray(b)) {
    if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!sameAst(a[i] ?? null, b[i] ?? null)) return false;
    return true;
  }
  const ka = kept(a as Record<string, unknown>);
  const kb = kept(b as Record<string, unknown>);
  if (ka.length !== kb.length) return false;
  for (let i = 0; i < ka.length; i++) {
    if (ka[i] !== kb[i]) return false;
    if (!sameAst((a as Record<string, unknown>)[ka[i]], (b as Record<string, unknown>)[kb[i]])) return false;
  }
  return true;
}

/** The keys JSON.stringify(stripNoise(o)) writes, in order. */
function kept(o: Record<string, unknown>): string[] {
  const out: string[] = [];
  for (const k in o) {
    const v = o[k];
    if (v === undefined || typeof v === 'function' || (typeof v === 'number' && isLocationKey(k))) continue;
    out.push(k);
  }
  return out;
}

/** A RangeVar's body with its table name (relname is set wherever the parser makes one). */
export type NamedRangeVar = RangeVar & { relname: string };

/** `o` as a RangeVar's body, if it is one: an object with a string relname and an inh or relpersistence. */
export function rangeVarOf(o: object): NamedRangeVar | undefined {
  const named = 'relname' in o && typeof o.relname === 'string';
  return named && ('inh' in o || 'relpersistence' in o) ? (o as NamedRangeVar) : undefined;
}

/** The RangeVars in a tree (every table it names, CTE names included). */
export function rangeVars(node: unknown): NamedRangeVar[] {
  const out: NamedRangeVar[] = [];
  walk(node, (o) => {
    const rv = rangeVarOf(o);
    if (rv) out.push(rv);
  });
  return out;
}

export function hasNode(node: unknown, name: string): boolean {
  let found = false;
  walk(node, (o) => {
    if (found) return false;
    if (name in o) found = true;
  });
  return found;
}

export function paramNumbers(node: unknown): number {
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

export function funcName(fc: FuncCall): string {
  const names = (fc.funcname ?? []).map((n) => bodyOf(n, 'String')?.sval);
  return String(names[names.length - 1] ?? '').toLowerCase();
}

/** Does the expression contain an aggregate call (outside window functions) of this query block? (One inside a
 *  subquery is the subquery's: it does not make the block grouped.) */
export function hasAggregate(node: unknown): boolean {
  let found = false;
  walk(node, (o) => {
    if (found || o.SubLink) return false;
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

export function hasWindow(node: unknown): boolean {
  let found = false;
  walk(node, (o) => {
    if (o.FuncCall?.over) found = true;
  });
  return found;
}

/** A set-returning function call: one of PostgreSQL's that the recorder knows, or one `isSetReturning` names (the
 *  server's catalog: a function with a set-returning overload, the user's own included). */
export function hasSetReturning(node: unknown, isSetReturning?: (name: string) => boolean): boolean {
  let found = false;
  walk(node, (o) => {
    if (!o.FuncCall) return;
    const name = funcName(o.FuncCall);
    if (SET_RETURNING.has(name) || isSetReturning?.(name)) found = true;
  });
  return found;
}

/** The statement for one node, as the deparser writes it (`kind` names the statement type of `body`). */
export function wrap(kind: string, body: unknown): string {
  return deparse({ version: 0, stmts: [{ stmt: { [kind]: body } as Node }] });
}

/** `name(args...)` */
export function call(name: string, ...args: Node[]): Node {
  return { FuncCall: { funcname: [str(name)], args, funcformat: 'COERCE_EXPLICIT_CALL' } };
}

/** `json_agg(arg)`, or `json_agg(arg) OVER (PARTITION BY ...)`. */
export function jsonAgg(arg: Node, partitionBy?: Node[]): Node {
  const node = call('json_agg', arg) as { FuncCall: FuncCall };
  if (partitionBy) node.FuncCall.over = { partitionClause: partitionBy, frameOptions: 1058 };
  return node;
}

/** A scalar subquery `(SELECT ...)`. */
export function scalarSubquery(select: SelectStmt): Node {
  return { SubLink: { subLinkType: 'EXPR_SUBLINK', subselect: { SelectStmt: select } } };
}

/** The conjuncts of a WHERE (its AND operands, flattened). */
export function conjuncts(where: Node | undefined): Node[] {
  if (!where) return [];
  const b = bodyOf(where, 'BoolExpr');
  if (b && b.boolop === 'AND_EXPR') return (b.args ?? []).flatMap((a) => conjuncts(a));
  return [where];
}

/** The AND of expressions (undefined for none). */
export function andOf(exprs: Node[]): Node | undefined {
  if (exprs.length === 0) return undefined;
  if (exprs.length === 1) return exprs[0];
  return { BoolExpr: { boolop: 'AND_EXPR', args: exprs } };
}
