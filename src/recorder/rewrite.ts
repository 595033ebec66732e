/**
 * Statement rewriting for the recorder: SQL text -> libpg-query AST -> classify and modify -> pgsql-deparser SQL.
 * Never string pasting: values the recorder adds (wids) are extra `$n` parameters, so a rewritten statement's
 * text depends only on the application's text and plans are cached per text.
 *
 *   analyze(sql, nValues, tables, options) -> Plan
 *     control      BEGIN / COMMIT / ROLLBACK / SAVEPOINT / SET TRANSACTION ... (the session tracks transactions)
 *     settings     SET / RESET / DISCARD (session settings the recorder reads may have changed)
 *     passthrough  statements that touch no recorded table
 *     select       one recorded table; `rows` mode adds key/columns/wid to the select list, `aggregate` mode adds
 *                  json_agg(ARRAY[col::text, ..., wid]) so the server computes the application's aggregates
 *                  and hands back every row it aggregated, in one statement (one snapshot)
 *     insert/update/delete  set `_isocheck_wid` to a fresh wid ($n) and RETURNING what the event needs
 *   or throws UnsupportedStatementError for shapes it cannot record soundly (joins, subqueries, WITH, set operations, ...),
 *   saying how to split the statement.
 *
 * The added result columns come last (aliased `__isocheck_<i>` so ORDER BY names stay unambiguous); the session
 * strips them so the application gets exactly the columns it asked for. `*` and `t.*` are expanded to the
 * table's own columns (so the hidden columns never reach the application).
 *
 * Every recorded statement is also checked to survive deparsing unchanged (parse(deparse(ast)) == ast): a
 * statement the deparser cannot reproduce (e.g. FETCH ... WITH TIES) is refused rather than changed.
 */
import { loadModule, parseSync } from 'libpg-query';
import { deparseSync } from 'pgsql-deparser';
import { UnsupportedStatementError } from './errors.js';
import { HIDDEN_COLUMNS, PREV_COLUMN, WID_COLUMN, type TableInfo } from './catalog.js';

// The AST is JSON from libpg-query; it is handled as loose data here (the shapes are checked where used).
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type N = any;

/** PostgreSQL's isolation level names, as in `BEGIN ISOLATION LEVEL ...`. */
export type PgIsolation = 'read uncommitted' | 'read committed' | 'repeatable read' | 'serializable';

export type TxnControl =
  | { kind: 'begin'; iso?: PgIsolation }
  | { kind: 'commit'; chain: boolean }
  | { kind: 'rollback'; chain: boolean }
  | { kind: 'savepoint'; name: string }
  | { kind: 'rollback-to'; name: string }
  | { kind: 'release'; name: string }
  | { kind: 'set-transaction'; iso?: PgIsolation };

interface RecordedBase {
  /** The statement to run. */
  sql: string;
  table: TableInfo;
  /** Number of result columns the recorder added at the end of the result. */
  added: number;
  /** The application's statement returns rows (SELECT, or a RETURNING clause). */
  appRows: boolean;
}

export interface SelectPlan extends RecordedBase {
  kind: 'select';
  mode: 'rows' | 'aggregate';
  /** The WHERE over the table's columns (unqualified), as SQL text. */
  where?: string;
  /** Why the result may omit matching rows, decided from the statement's shape. */
  partialReason?: string;
}

export interface InsertPlan extends RecordedBase {
  kind: 'insert';
  /** Parameter number of the wid of inserted rows. */
  widParam: number;
  /** ON CONFLICT DO UPDATE: parameter number of the wid of updated rows. */
  upsertWidParam?: number;
}

export interface UpdatePlan extends RecordedBase {
  kind: 'update';
  where?: string;
  widParam: number;
}

export interface DeletePlan extends RecordedBase {
  kind: 'delete';
  where?: string;
}

export type RecordedPlan = SelectPlan | InsertPlan | UpdatePlan | DeletePlan;

export type Plan =
  | { kind: 'control'; control: TxnControl }
  | { kind: 'settings' }
  | { kind: 'passthrough'; warning?: string }
  | RecordedPlan;

export interface RewriteOptions {
  /** PostgreSQL 18+: read the previous wid with `RETURNING old._isocheck_wid`; else from `_isocheck_prev`. */
  oldReturning: boolean;
}

/** Finds the recorded table a RangeVar names, if any. */
export interface TableLookup {
  lookup(schemaname: string | undefined, relname: string): TableInfo | undefined;
}

export function tableLookup(tables: TableInfo[]): TableLookup {
  const byRel = new Map(tables.map((t) => [t.relname, t]));
  return {
    lookup(schemaname, relname) {
      const t = byRel.get(relname);
      if (!t) return undefined;
      return schemaname === undefined || schemaname === t.schema ? t : undefined;
    },
  };
}

let loaded: Promise<void> | undefined;
/** Loads the parser (WASM); must be awaited once before analyze(). */
export function loadRewriter(): Promise<void> {
  return (loaded ??= loadModule());
}

// ---------------------------------------------------------------------------------------------------------------
// AST helpers

const deparse = (node: N): string => deparseSync(node, { pretty: false, semicolons: false } as never) as unknown as string;

function str(s: string): N {
  return { String: { sval: s } };
}

function colRef(...fields: string[]): N {
  return { ColumnRef: { fields: fields.map(str) } };
}

function param(n: number): N {
  return { ParamRef: { number: n } };
}

function castText(e: N): N {
  return { TypeCast: { arg: e, typeName: { names: [str('text')], typemod: -1 } } };
}

function resTarget(val: N, name?: string): N {
  return name === undefined ? { ResTarget: { val } } : { ResTarget: { name, val } };
}

/** Calls visit on every object in the tree (depth first); visit returns false to skip a subtree. */
function walk(node: N, visit: (obj: Record<string, N>, key: string | undefined) => boolean | void, key?: string): void {
  if (Array.isArray(node)) {
    for (const x of node) walk(x, visit, key);
    return;
  }
  if (node === null || typeof node !== 'object') return;
  if (visit(node, key) === false) return;
  for (const [k, v] of Object.entries(node)) if (v !== null && typeof v === 'object') walk(v, visit, k);
}

function clone<T>(x: T): T {
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

function stripNoise(node: N): N {
  if (Array.isArray(node)) return node.map(stripNoise);
  if (node === null || typeof node !== 'object') return node;
  const out: Record<string, N> = {};
  for (const [k, v] of Object.entries(node)) if (!(typeof v === 'number' && isLocationKey(k))) out[k] = stripNoise(v);
  return out;
}

function sameAst(a: N, b: N): boolean {
  return JSON.stringify(stripNoise(a)) === JSON.stringify(stripNoise(b));
}

interface RangeVarRef {
  schemaname?: string;
  relname: string;
}

function rangeVars(node: N): RangeVarRef[] {
  const out: RangeVarRef[] = [];
  walk(node, (o) => {
    if (typeof o.relname === 'string' && ('inh' in o || 'relpersistence' in o)) out.push(o as unknown as RangeVarRef);
  });
  return out;
}

function hasNode(node: N, name: string): boolean {
  let found = false;
  walk(node, (o) => {
    if (found) return false;
    if (name in o) found = true;
  });
  return found;
}

function paramNumbers(node: N): number {
  let max = 0;
  walk(node, (o) => {
    if (o.ParamRef && typeof o.ParamRef.number === 'number') max = Math.max(max, o.ParamRef.number);
  });
  return max;
}

function refuse(sql: string, why: string, how: string): never {
  throw new UnsupportedStatementError(sql, why, how);
}

const AGGREGATES = new Set([
  'count', 'sum', 'avg', 'min', 'max', 'bool_and', 'bool_or', 'every', 'string_agg', 'array_agg', 'json_agg', 'jsonb_agg',
  'json_agg_strict', 'jsonb_agg_strict', 'json_object_agg', 'jsonb_object_agg', 'json_object_agg_strict', 'jsonb_object_agg_strict',
  'json_object_agg_unique', 'jsonb_object_agg_unique', 'json_object_agg_unique_strict', 'jsonb_object_agg_unique_strict',
  'stddev', 'stddev_pop', 'stddev_samp', 'variance', 'var_pop', 'var_samp', 'bit_and', 'bit_or', 'bit_xor', 'covar_pop',
  'covar_samp', 'corr', 'regr_avgx', 'regr_avgy', 'regr_count', 'regr_intercept', 'regr_r2', 'regr_slope', 'regr_sxx',
  'regr_sxy', 'regr_syy', 'percentile_cont', 'percentile_disc', 'mode', 'xmlagg', 'range_agg', 'range_intersect_agg',
  'any_value',
]);

const SET_RETURNING = new Set([
  'generate_series', 'generate_subscripts', 'unnest', 'json_array_elements', 'json_array_elements_text', 'jsonb_array_elements',
  'jsonb_array_elements_text', 'json_each', 'json_each_text', 'jsonb_each', 'jsonb_each_text', 'json_object_keys',
  'jsonb_object_keys', 'json_populate_recordset', 'jsonb_populate_recordset', 'json_to_recordset', 'jsonb_to_recordset',
  'jsonb_path_query', 'regexp_matches', 'regexp_split_to_table', 'string_to_table',
]);

function funcName(fc: N): string {
  const names = (fc.funcname ?? []).map((n: N) => n.String?.sval);
  return String(names[names.length - 1] ?? '').toLowerCase();
}

/** Does the expression contain an aggregate call (outside window functions)? */
function hasAggregate(node: N): boolean {
  let found = false;
  walk(node, (o) => {
    if (found) return false;
    if (o.JsonObjectAgg || o.JsonArrayAgg) {
      found = true;
      return false;
    }
    const fc = o.FuncCall;
    if (fc && !fc.over) {
      if (fc.agg_star || fc.agg_distinct || fc.agg_filter || fc.agg_order || fc.agg_within_group || AGGREGATES.has(funcName(fc))) {
        found = true;
        return false;
      }
    }
  });
  return found;
}

function hasWindow(node: N): boolean {
  let found = false;
  walk(node, (o) => {
    if (o.FuncCall?.over) found = true;
  });
  return found;
}

function hasSetReturning(node: N): boolean {
  let found = false;
  walk(node, (o) => {
    if (o.FuncCall && SET_RETURNING.has(funcName(o.FuncCall))) found = true;
  });
  return found;
}

// ---------------------------------------------------------------------------------------------------------------
// Target table context

interface Target {
  table: TableInfo;
  /** The name that qualifies the table's columns in this statement (alias, else relname). */
  q: string;
  alias?: string;
  rv: N;
}

function isTableQualifier(t: Target, fields: N[]): number {
  // returns how many leading fields name the table: [q, col] -> 1, [schema, rel, col] -> 2 (no alias), 0 otherwise
  const s = fields.map((f: N) => f.String?.sval);
  if (s.length >= 2 && s[0] === t.q) return 1;
  if (!t.alias && s.length >= 3 && s[0] === t.table.schema && s[1] === t.table.relname) return 2;
  return 0;
}

/** Refuses references to the whole row (`t`, `row_to_json(t)`) and to hidden columns. */
function checkColumnRefs(sql: string, t: Target, node: N, extraQualifiers: string[] = []): void {
  walk(node, (o) => {
    const cr = o.ColumnRef;
    if (!cr) return;
    const fields: N[] = cr.fields ?? [];
    const names = fields.map((f: N) => f.String?.sval);
    const last = names[names.length - 1];
    if (typeof last === 'string' && HIDDEN_COLUMNS.has(last)) refuse(sql, `it uses the recorder's hidden column ${last}`, 'Do not read or write it.');
    if (fields.length === 1 && typeof names[0] === 'string' && !(names[0] in t.table.columns) && (names[0] === t.q || extraQualifiers.includes(names[0]))) {
      refuse(sql, `it uses the whole row "${names[0]}" (which would include the recorder's hidden columns)`, `Name the columns instead.`);
    }
  });
}

/** Replaces `*` and `q.*` (or `old.*` / `new.*` in RETURNING) by the table's columns. */
function expandStars(t: Target, list: N[], qualifiers: string[]): N[] {
  const out: N[] = [];
  for (const item of list) {
    const rt = item.ResTarget;
    const fields: N[] | undefined = rt?.val?.ColumnRef?.fields;
    if (rt && !rt.name && fields && fields.length >= 1 && fields[fields.length - 1].A_Star) {
      const quals = fields.slice(0, -1).map((f: N) => f.String?.sval);
      let q: string[] | undefined;
      if (quals.length === 0) q = [];
      else if (quals.length === 1 && (quals[0] === t.q || qualifiers.includes(quals[0]))) q = [quals[0]];
      else if (quals.length === 2 && !t.alias && quals[0] === t.table.schema && quals[1] === t.table.relname) q = [t.q];
      if (q) {
        for (const c of t.table.columnOrder) out.push(resTarget(colRef(...q, c)));
        continue;
      }
    }
    out.push(item);
  }
  return out;
}

/** The WHERE as SQL over the table's own column names (qualifiers dropped). */
function whereText(t: Target, where: N | undefined): string | undefined {
  if (!where) return undefined;
  const w = clone(where);
  walk(w, (o) => {
    const cr = o.ColumnRef;
    if (cr && Array.isArray(cr.fields)) {
      const n = isTableQualifier(t, cr.fields);
      if (n > 0) cr.fields = cr.fields.slice(n);
    }
  });
  return deparse(w);
}

function target(lookup: TableLookup, rv: N): Target | undefined {
  const table = lookup.lookup(rv.schemaname, rv.relname);
  if (!table) return undefined;
  const alias: string | undefined = rv.alias?.aliasname;
  return { table, q: alias ?? table.relname, alias, rv };
}

function addedTargets(exprs: N[]): N[] {
  return exprs.map((e, i) => resTarget(e, `__isocheck_${i}`));
}

function isoOf(options: N[] | undefined): PgIsolation | undefined {
  for (const o of options ?? []) {
    const d = o.DefElem;
    if (d?.defname === 'transaction_isolation') {
      const v = d.arg?.A_Const?.sval?.sval;
      if (typeof v === 'string') return v.toLowerCase() as PgIsolation;
    }
  }
  return undefined;
}

function isoOfSetArgs(args: N[] | undefined): PgIsolation | undefined {
  for (const a of args ?? []) {
    const v = a.A_Const?.sval?.sval;
    if (typeof v === 'string') return v.toLowerCase().replace(/_/g, ' ') as PgIsolation;
  }
  return undefined;
}

// ---------------------------------------------------------------------------------------------------------------
// analyze

/** Classifies one application statement and, for a recorded table, rewrites it. */
export function analyze(sql: string, nValues: number, lookup: TableLookup, options: RewriteOptions): Plan {
  let parsed: N;
  try {
    parsed = parseSync(sql);
  } catch {
    return { kind: 'passthrough' }; // the server reports the syntax error
  }
  const stmts: N[] = (parsed.stmts ?? []).map((s: N) => s.stmt);
  if (stmts.length === 0) return { kind: 'passthrough' };
  const touches = (node: N): boolean => rangeVars(node).some((rv) => lookup.lookup(rv.schemaname, rv.relname) !== undefined);
  if (stmts.length > 1) {
    if (stmts.some((s) => touches(s) || s.TransactionStmt)) {
      refuse(sql, 'it holds several statements', 'Send one statement per query() call, so each can be recorded (and BEGIN/COMMIT seen).');
    }
    return stmts.some((s) => s.VariableSetStmt || s.DiscardStmt) ? { kind: 'settings' } : { kind: 'passthrough' };
  }
  const stmt = stmts[0];
  const kind = Object.keys(stmt)[0];
  const body = stmt[kind];
  switch (kind) {
    case 'TransactionStmt':
      return transaction(sql, body);
    case 'VariableSetStmt': {
      if (body.kind === 'VAR_SET_MULTI' && body.name === 'TRANSACTION') return { kind: 'control', control: { kind: 'set-transaction', iso: isoOf(body.args) } };
      if (body.name === 'transaction_isolation' && (body.kind === 'VAR_SET_VALUE' || body.kind === 'VAR_SET_CURRENT')) {
        return { kind: 'control', control: { kind: 'set-transaction', iso: isoOfSetArgs(body.args) } };
      }
      return { kind: 'settings' };
    }
    case 'DiscardStmt':
      return { kind: 'settings' };
    case 'DoStmt':
    case 'CallStmt':
      return { kind: 'passthrough', warning: `${kind === 'DoStmt' ? 'DO blocks' : 'CALL'} are not looked into: writes they make to recorded tables are not recorded (the history would be wrong)` };
    case 'SelectStmt':
      if (!touches(body)) return { kind: 'passthrough' };
      return finish(sql, stmt, select(sql, body, lookup), nValues);
    case 'InsertStmt':
      if (!touches(body)) return { kind: 'passthrough' };
      return finish(sql, stmt, insert(sql, body, lookup, options, nValues), nValues);
    case 'UpdateStmt':
      if (!touches(body)) return { kind: 'passthrough' };
      return finish(sql, stmt, update(sql, body, lookup, options, nValues), nValues);
    case 'DeleteStmt':
      if (!touches(body)) return { kind: 'passthrough' };
      return finish(sql, stmt, del(sql, body, lookup), nValues);
    case 'ExplainStmt': {
      const analyzeOpt = (body.options ?? []).some((o: N) => o.DefElem?.defname === 'analyze' && o.DefElem?.arg?.String?.sval !== 'false' && o.DefElem?.arg?.Boolean?.boolval !== false);
      if (analyzeOpt && touches(body)) refuse(sql, 'EXPLAIN ANALYZE runs the statement without the recorder seeing its rows', 'Use EXPLAIN without ANALYZE, or run the statement itself.');
      return { kind: 'passthrough' };
    }
    case 'LockStmt':
    case 'VacuumStmt':
    case 'IndexStmt':
    case 'CommentStmt':
    case 'GrantStmt':
    case 'CreateStmt':
    case 'VariableShowStmt':
    case 'ListenStmt':
    case 'NotifyStmt':
    case 'UnlistenStmt':
    case 'ExecuteStmt':
    case 'DeallocateStmt':
    case 'CheckPointStmt':
      return { kind: 'passthrough' };
    default:
      if (touches(body)) {
        refuse(sql, `${kind.replace(/Stmt$/, '')} statements on recorded tables are not recorded`, 'Use SELECT, INSERT, UPDATE and DELETE on recorded tables while recording (schema changes before instrument()).');
      }
      return { kind: 'passthrough' };
  }
}

function transaction(sql: string, body: N): Plan {
  const chain = body.chain === true;
  switch (body.kind) {
    case 'TRANS_STMT_BEGIN':
    case 'TRANS_STMT_START':
      return { kind: 'control', control: { kind: 'begin', iso: isoOf(body.options) } };
    case 'TRANS_STMT_COMMIT':
      return { kind: 'control', control: { kind: 'commit', chain } };
    case 'TRANS_STMT_ROLLBACK':
      return { kind: 'control', control: { kind: 'rollback', chain } };
    case 'TRANS_STMT_SAVEPOINT':
      return { kind: 'control', control: { kind: 'savepoint', name: body.savepoint_name } };
    case 'TRANS_STMT_ROLLBACK_TO':
      return { kind: 'control', control: { kind: 'rollback-to', name: body.savepoint_name } };
    case 'TRANS_STMT_RELEASE':
      return { kind: 'control', control: { kind: 'release', name: body.savepoint_name } };
    default:
      return refuse(sql, 'two-phase commit (PREPARE TRANSACTION / COMMIT PREPARED) is not supported by the recorder', 'Use COMMIT.');
  }
}

/** Final checks shared by recorded plans: parameters, deparser fidelity. */
function finish(sql: string, original: N, plan: RecordedPlan | { kind: 'passthrough' }, nValues: number): Plan {
  if (plan.kind === 'passthrough') return plan;
  if (paramNumbers(original) > nValues) return { kind: 'passthrough' }; // the server rejects the missing parameters
  let reparsed: N;
  try {
    reparsed = parseSync(deparse({ version: 0, stmts: [{ stmt: original }] } as N)).stmts?.[0]?.stmt;
  } catch {
    reparsed = undefined;
  }
  if (!sameAst(original, reparsed)) {
    refuse(sql, 'the SQL deparser cannot reproduce it exactly, so it cannot be rewritten safely', 'Write it more plainly (e.g. LIMIT instead of FETCH ... WITH TIES).');
  }
  try {
    parseSync(plan.sql);
  } catch (e) {
    throw new Error(`isocheck bug: the rewritten statement does not parse (${(e as Error).message}): ${plan.sql}`);
  }
  return plan;
}

function wrap(kind: string, body: N): string {
  return deparse({ version: 0, stmts: [{ stmt: { [kind]: body } }] } as N);
}

// ---------------------------------------------------------------------------------------------------------------
// SELECT

function select(sql: string, original: N, lookup: TableLookup): SelectPlan {
  const s = clone(original);
  if (s.withClause) refuse(sql, 'it uses WITH', 'Write each WITH query as its own statement over one table.');
  if (s.op && s.op !== 'SETOP_NONE') refuse(sql, `it combines queries (${String(s.op).replace('SETOP_', '')})`, 'Run each query as its own SELECT over one table and combine the results in the application.');
  if (s.valuesLists) refuse(sql, 'VALUES with a recorded table', 'Use a plain SELECT.');
  if (s.intoClause) refuse(sql, 'SELECT INTO copies rows without the recorder seeing them', 'SELECT the rows, then INSERT them.');
  const from: N[] = s.fromClause ?? [];
  if (from.length !== 1 || !from[0].RangeVar) {
    refuse(sql, 'it reads several tables (a join, a list of tables or a subquery in FROM)', 'Split it into one SELECT per table (the split statements see one snapshot at REPEATABLE READ and SERIALIZABLE, but each its own at READ COMMITTED).');
  }
  const t = target(lookup, from[0].RangeVar);
  if (!t) refuse(sql, 'it reads a recorded table inside a subquery', 'Run the subquery as its own statement and pass its result as a parameter.');
  if (hasNode(s, 'SubLink')) refuse(sql, 'it contains a subquery (reads the recorder cannot attribute)', 'Run the subquery as its own statement and pass its result as a parameter.');
  checkColumnRefs(sql, t, [s.targetList, s.whereClause, s.sortClause, s.groupClause, s.havingClause, s.windowClause, s.distinctClause]);
  const reasons: string[] = [];
  const limit = s.limitCount && !s.limitCount.A_Const?.isnull;
  if (limit || s.limitOffset) reasons.push('LIMIT/OFFSET/FETCH');
  s.targetList = expandStars(t, s.targetList ?? [], []);
  let aggregate = hasAggregate([s.targetList, s.havingClause, s.sortClause]) || (s.groupClause?.length ?? 0) > 0 || s.havingClause !== undefined;
  const distinct: N[] | undefined = s.distinctClause;
  if (distinct && distinct.length > 0) {
    const plain = distinct.length === 1 && Object.keys(distinct[0]).length === 0;
    if (!plain) refuse(sql, 'it uses DISTINCT ON', 'Select the rows without DISTINCT ON and pick them in the application.');
    if (aggregate) refuse(sql, 'it uses DISTINCT together with aggregates or GROUP BY', 'Drop DISTINCT (or GROUP BY) and deduplicate in the application.');
    if (hasWindow(s.targetList)) refuse(sql, 'it uses DISTINCT with window functions', 'Drop DISTINCT and deduplicate in the application.');
    // SELECT DISTINCT a, b ... == SELECT a, b ... GROUP BY 1, 2: the aggregate form records every row read
    delete s.distinctClause;
    s.groupClause = s.targetList.map((_: N, i: number) => ({ A_Const: { ival: { ival: i + 1 } } }));
    aggregate = true;
  }
  if (s.havingClause) reasons.push('HAVING');
  const cols = t.table.columnOrder;
  if (aggregate) {
    if (s.lockingClause) refuse(sql, 'FOR UPDATE/SHARE with aggregates', 'Lock the rows with a separate SELECT ... FOR UPDATE.');
    const arr = { A_ArrayExpr: { elements: [...cols.map((c) => castText(colRef(t.q, c))), castText(colRef(t.q, WID_COLUMN))] } };
    const agg = { FuncCall: { funcname: [str('json_agg')], args: [arr], funcformat: 'COERCE_EXPLICIT_CALL' } };
    s.targetList.push(...addedTargets([agg]));
    return { kind: 'select', mode: 'aggregate', sql: wrap('SelectStmt', s), table: t.table, added: 1, appRows: true, where: whereText(t, s.whereClause), partialReason: reasons.join(', ') || undefined };
  }
  if (hasSetReturning(s.targetList)) reasons.push('a set-returning function in the select list');
  const extra = [...cols.map((c) => colRef(t.q, c)), colRef(t.q, WID_COLUMN)];
  s.targetList.push(...addedTargets(extra));
  return { kind: 'select', mode: 'rows', sql: wrap('SelectStmt', s), table: t.table, added: extra.length, appRows: true, where: whereText(t, s.whereClause), partialReason: reasons.join(', ') || undefined };
}

// ---------------------------------------------------------------------------------------------------------------
// INSERT

function returningParts(original: N): { options: N[] | undefined; exprs: N[]; had: boolean } {
  const rc = original.returningClause;
  return { options: rc?.options, exprs: rc?.exprs ?? [], had: (rc?.exprs?.length ?? 0) > 0 };
}

function oldAlias(options: N[] | undefined): { old: string; new: string } {
  let o = 'old';
  let n = 'new';
  for (const opt of options ?? []) {
    const r = opt.ReturningOption;
    if (r?.option === 'RETURNING_OPTION_OLD') o = r.value;
    if (r?.option === 'RETURNING_OPTION_NEW') n = r.value;
  }
  return { old: o, new: n };
}

function checkAssignments(sql: string, t: Target, list: N[], what: string): void {
  for (const item of list) {
    const name: string | undefined = item.ResTarget?.name;
    if (name === undefined) continue;
    if (HIDDEN_COLUMNS.has(name)) refuse(sql, `it assigns the recorder's hidden column ${name}`, 'Do not write it.');
    if (t.table.key.includes(name)) {
      refuse(sql, `${what} changes key column "${name}" of ${t.table.name} (the key is the row's identity in the history)`, 'Delete the row and insert it with the new key instead.');
    }
  }
}

function insert(sql: string, original: N, lookup: TableLookup, options: RewriteOptions, nValues: number): InsertPlan {
  const s = clone(original);
  const t = target(lookup, s.relation);
  if (!t) refuse(sql, 'it copies rows of a recorded table into another table', 'SELECT the rows, then INSERT them.');
  if (s.withClause) refuse(sql, 'it uses WITH', 'Write each WITH query as its own statement over one table.');
  if (hasNode(s, 'SubLink')) refuse(sql, 'it contains a subquery (reads the recorder cannot attribute)', 'Run the subquery as its own statement and pass its result as a parameter.');
  const { options: retOptions, exprs, had } = returningParts(s);
  const aliases = oldAlias(retOptions);
  if (t.q === aliases.old || t.q === aliases.new) refuse(sql, `the table is called "${t.q}", like the RETURNING old/new rows`, 'Give it another alias.');
  checkColumnRefs(sql, t, [s.selectStmt, s.onConflictClause, exprs], [aliases.old, aliases.new, 'excluded']);
  const base = Math.max(nValues, paramNumbers(s));
  const widParam = base + 1;
  const wid = castText(param(widParam));
  const cols: N[] | undefined = s.cols;
  for (const c of cols ?? []) if (HIDDEN_COLUMNS.has(c.ResTarget?.name)) refuse(sql, `it writes the recorder's hidden column ${c.ResTarget.name}`, 'Do not write it.');
  const fillCols = (n: number): void => {
    if (!s.cols) s.cols = t.table.columnOrder.slice(0, n).map((c) => ({ ResTarget: { name: c } }));
  };
  const sel = s.selectStmt?.SelectStmt;
  if (!s.selectStmt) {
    // DEFAULT VALUES
    s.cols = [{ ResTarget: { name: WID_COLUMN } }];
    s.selectStmt = { SelectStmt: { valuesLists: [{ List: { items: [wid] } }], limitOption: 'LIMIT_OPTION_DEFAULT', op: 'SETOP_NONE' } };
  } else if (sel?.valuesLists) {
    const lists: N[] = sel.valuesLists;
    fillCols(lists[0]?.List?.items?.length ?? 0);
    s.cols.push({ ResTarget: { name: WID_COLUMN } });
    for (const l of lists) l.List.items.push(clone(wid));
  } else if (
    sel &&
    !sel.fromClause && !sel.whereClause && !sel.groupClause && !sel.havingClause && !sel.withClause && !sel.distinctClause &&
    !sel.limitCount && !sel.limitOffset && !sel.windowClause && (!sel.op || sel.op === 'SETOP_NONE') && !hasAggregate(sel.targetList) && !hasSetReturning(sel.targetList)
  ) {
    fillCols(sel.targetList.length);
    s.cols.push({ ResTarget: { name: WID_COLUMN } });
    sel.targetList.push(resTarget(wid));
  } else {
    refuse(sql, 'INSERT ... SELECT reads rows the recorder cannot attribute', 'SELECT the rows (one table per statement), then INSERT them with VALUES.');
  }
  let upsertWidParam: number | undefined;
  const oc = s.onConflictClause;
  if (oc && oc.action === 'ONCONFLICT_UPDATE') {
    checkAssignments(sql, t, oc.targetList ?? [], 'ON CONFLICT DO UPDATE');
    upsertWidParam = base + 2;
    oc.targetList.push({ ResTarget: { name: WID_COLUMN, val: castText(param(upsertWidParam)) } });
    if (!options.oldReturning) oc.targetList.push({ ResTarget: { name: PREV_COLUMN, val: colRef(t.q, WID_COLUMN) } });
  }
  const appExprs = expandStars(t, exprs, [aliases.old, aliases.new]);
  const added = [...t.table.columnOrder.map((c) => colRef(c)), colRef(WID_COLUMN)];
  if (upsertWidParam !== undefined) added.push(options.oldReturning ? colRef(aliases.old, WID_COLUMN) : colRef(PREV_COLUMN));
  s.returningClause = { ...(retOptions ? { options: retOptions } : {}), exprs: [...appExprs, ...addedTargets(added)] };
  return { kind: 'insert', sql: wrap('InsertStmt', s), table: t.table, added: added.length, appRows: had, widParam, upsertWidParam };
}

// ---------------------------------------------------------------------------------------------------------------
// UPDATE / DELETE

function update(sql: string, original: N, lookup: TableLookup, options: RewriteOptions, nValues: number): UpdatePlan {
  const s = clone(original);
  const t = target(lookup, s.relation);
  if (!t) refuse(sql, 'it reads a recorded table to update another one', 'SELECT the rows first, then UPDATE with parameters.');
  if (s.withClause) refuse(sql, 'it uses WITH', 'Write each WITH query as its own statement over one table.');
  if (s.fromClause && s.fromClause.length > 0) refuse(sql, 'UPDATE ... FROM joins tables', 'SELECT from the other table first, then UPDATE this one with parameters.');
  if (s.whereClause?.CurrentOfExpr) refuse(sql, 'WHERE CURRENT OF (cursors) is not recorded', 'Update by key.');
  if (hasNode(s, 'SubLink')) refuse(sql, 'it contains a subquery (a read of another table the recorder cannot attribute)', 'Run the subquery as its own statement first and pass its result as a parameter (at READ COMMITTED that is a separate snapshot).');
  const { options: retOptions, exprs, had } = returningParts(s);
  const aliases = oldAlias(retOptions);
  if (t.q === aliases.old || t.q === aliases.new) refuse(sql, `the table is called "${t.q}", like the RETURNING old/new rows`, 'Give it another alias.');
  checkColumnRefs(sql, t, [s.targetList, s.whereClause, exprs], [aliases.old, aliases.new]);
  checkAssignments(sql, t, s.targetList ?? [], 'it');
  const widParam = Math.max(nValues, paramNumbers(s)) + 1;
  s.targetList.push({ ResTarget: { name: WID_COLUMN, val: castText(param(widParam)) } });
  if (!options.oldReturning) s.targetList.push({ ResTarget: { name: PREV_COLUMN, val: colRef(t.q, WID_COLUMN) } });
  const appExprs = expandStars(t, exprs, [aliases.old, aliases.new]);
  const added = [...t.table.columnOrder.map((c) => colRef(c)), options.oldReturning ? colRef(aliases.old, WID_COLUMN) : colRef(PREV_COLUMN)];
  s.returningClause = { ...(retOptions ? { options: retOptions } : {}), exprs: [...appExprs, ...addedTargets(added)] };
  return { kind: 'update', sql: wrap('UpdateStmt', s), table: t.table, added: added.length, appRows: had, where: whereText(t, s.whereClause), widParam };
}

function del(sql: string, original: N, lookup: TableLookup): DeletePlan {
  const s = clone(original);
  const t = target(lookup, s.relation);
  if (!t) refuse(sql, 'it reads a recorded table to delete from another one', 'SELECT the rows first, then DELETE with parameters.');
  if (s.withClause) refuse(sql, 'it uses WITH', 'Write each WITH query as its own statement over one table.');
  if (s.usingClause && s.usingClause.length > 0) refuse(sql, 'DELETE ... USING joins tables', 'SELECT from the other table first, then DELETE from this one with parameters.');
  if (s.whereClause?.CurrentOfExpr) refuse(sql, 'WHERE CURRENT OF (cursors) is not recorded', 'Delete by key.');
  if (hasNode(s, 'SubLink')) refuse(sql, 'it contains a subquery (a read the recorder cannot attribute)', 'Run the subquery as its own statement first and pass its result as a parameter.');
  const { options: retOptions, exprs, had } = returningParts(s);
  const aliases = oldAlias(retOptions);
  checkColumnRefs(sql, t, [s.whereClause, exprs], [aliases.old, aliases.new]);
  const appExprs = expandStars(t, exprs, [aliases.old, aliases.new]);
  const added = [...t.table.key.map((c) => colRef(c)), colRef(WID_COLUMN)];
  s.returningClause = { ...(retOptions ? { options: retOptions } : {}), exprs: [...appExprs, ...addedTargets(added)] };
  return { kind: 'delete', sql: wrap('DeleteStmt', s), table: t.table, added: added.length, appRows: had, where: whereText(t, s.whereClause) };
}
