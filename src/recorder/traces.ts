/**
 * Traces: what a rewritten statement adds to its result so that every row of a recorded table it read comes back
 * with its whole row and write id (history-format.md: a `select` event per table reference).
 *
 *   a table in the root SELECT's FROM  -> its columns and wid as result columns (`row` form); with aggregates,
 *                                         json_agg(ARRAY[columns::text..., wid]) per group; with DISTINCT ON,
 *                                         json_agg(...) OVER (PARTITION BY the DISTINCT ON expressions)
 *   a table in a closed subquery B     -> one more result column `(SELECT json_agg(ARRAY[...]) FROM B's FROM
 *   (CTE, subquery in FROM or WHERE,      WHERE B's WHERE)`: B evaluated again, in the same statement, hence the
 *   UNION arm, INSERT's SELECT)           same snapshot: the same rows (LIMIT/OFFSET kept, with B's ORDER BY)
 *   a table in a correlated subquery   -> the same, nested inside the blocks it refers to, up to the closest closed
 *                                         block or the root, where it is evaluated per result row (json_agg of it
 *                                         per group with aggregates): the rows it read for the rows returned
 *   UPDATE ... FROM / DELETE ... USING -> the other tables' columns and wids in RETURNING: the rows each written
 *                                         row was joined with
 *
 * The JSON is arrays of rows (text values, wid last), nested once per enclosing block; a row whose key is NULL is
 * the NULL side of an outer join (keys are NOT NULL) and is skipped. Which traces are exact is decided in
 * rewrite.ts (docs/recording.md).
 */
import type { Node } from '@pgsql/types';
import { bodyOf } from '../sql/node.js';
import type { TableInfo } from './catalog.js';
import { WID_COLUMN } from './catalog.js';
import {
  call,
  castText,
  clone,
  colRef,
  deparse,
  hasAggregate,
  hasWindow,
  jsonAgg,
  refuse,
  resTarget,
  scalarSubquery,
  walk,
} from './ast.js';
import { isClosed, selectOf, type Block, type FromItem } from './blocks.js';

/** One table reference's rows in the result. */
export interface ReadTrace {
  table: TableInfo;
  /** Position of its first column among the added columns. */
  at: number;
  /** `row`: the table's columns then the wid, as result columns; `json`: one column of JSON rows. */
  form: 'row' | 'json';
  /** The WHERE over the table's own columns that its rows satisfy (the conjuncts about it alone). */
  where?: string;
  /** Why the rows may be fewer than all rows satisfying `where` (undefined: exact). */
  partialReason?: string;
  /** The statement's own LIMIT (a number, or the number of the parameter giving it), the one reason it may have cut
   *  rows: the read is partial only if the result has that many rows (fewer: the LIMIT cut nothing). `atMostOne`:
   *  the WHERE fixes the table's key, so a LIMIT of 1 or more cuts nothing, unless one of `keyParams` has a type the
   *  client declared (it may compare in a looser type). */
  limit?: ({ count: number } | { param: number }) & { atMostOne?: boolean; keyParams?: number[] };
  /** The rows are known only if the result has a row (a subquery evaluated again, carried by each result row). */
  needsRow: boolean;
}

/** The expressions a statement adds (named `__isocheck_<i>` in order) and the traces they hold. */
export class TraceList {
  readonly exprs: Node[] = [];
  readonly reads: ReadTrace[] = [];

  /** Columns added before the traces (the written rows' own). */
  constructor(readonly own: Node[] = []) {
    this.exprs.push(...own);
  }

  addRow(item: FromItem, meta: Omit<ReadTrace, 'at' | 'form' | 'table'>): void {
    this.reads.push({ table: item.table!, at: this.exprs.length, form: 'row', ...meta });
    this.exprs.push(...rowColumns(item));
  }

  addJson(table: TableInfo, expr: Node, meta: Omit<ReadTrace, 'at' | 'form' | 'table'>): void {
    this.reads.push({ table, at: this.exprs.length, form: 'json', ...meta });
    this.exprs.push(expr);
  }

  get tables(): TableInfo[] {
    return this.reads.map((r) => r.table);
  }
}

/** Types whose cast to text is not what they output (pg reads a column's output: the row form, a plain result
 *  column): char(n) drops its padding, inet shows its netmask, "char" gives a byte its output escapes (pg_cast).
 *  Their output function, called in SQL, gives their output as text wherever a trace casts to text (the json form,
 *  the arms of a set operation). */
const OUTPUT_FUNCTIONS: Record<string, string> = {
  bpchar: 'bpcharout',
  inet: 'inet_out',
  cidr: 'cidr_out',
  char: 'charout',
};

/** `q.col, ..., q._isocheck_wid` (a column of a type in OUTPUT_FUNCTIONS as `textin(its_out(q.col))`) */
export function rowColumns(item: FromItem): Node[] {
  const table = item.table!;
  const column = (c: string): Node => {
    const out = OUTPUT_FUNCTIONS[table.columns[c]];
    const ref = colRef(item.name!, c);
    return out === undefined ? ref : call('textin', call(out, ref));
  };
  return [...table.columnOrder.map(column), colRef(item.name!, WID_COLUMN)];
}

/** `ARRAY[q.col::text, ..., q._isocheck_wid::text]` */
export function rowArray(item: FromItem): Node {
  return { A_ArrayExpr: { elements: rowColumns(item).map(castText) } };
}

/** The blocks to evaluate again for a table read in block b: b up to its closest closed ancestor (included). */
export function chainOf(b: Block): Block[] {
  const chain: Block[] = [];
  for (let x: Block | undefined = b; x; x = x.parent) {
    chain.push(x);
    if (isClosed(x)) break;
  }
  return chain;
}

/**
 * Block b evaluated again around `inner` (an expression over b's FROM items): `(SELECT json_agg(inner) FROM
 * b.from WHERE b.where)`; with LIMIT/OFFSET, over b's own select list, ORDER BY and LIMIT in a subquery, so that
 * it takes the rows b took (the same ones unless the order has ties).
 */
export function lift(sql: string, b: Block, inner: Node): Node {
  const s = selectOf(b); // (lifted blocks are subqueries: SELECTs)
  if (s.valuesLists) refuse(sql, 'a subquery refers to a VALUES list', 'Pass the values as parameters.');
  const limited = (s.limitCount && !bodyOf(s.limitCount, 'A_Const')?.isnull) || s.limitOffset;
  const base = {
    fromClause: clone(s.fromClause),
    whereClause: clone(s.whereClause),
    limitOption: 'LIMIT_OPTION_DEFAULT' as const,
    op: 'SETOP_NONE' as const,
  };
  if (!limited) return scalarSubquery({ targetList: [resTarget(jsonAgg(inner))], ...base });
  const grouped =
    (s.groupClause?.length ?? 0) > 0 ||
    s.havingClause ||
    (s.distinctClause?.length ?? 0) > 0 ||
    hasAggregate(s.targetList) ||
    hasWindow(s.targetList);
  if (grouped)
    refuse(
      sql,
      'a subquery combines LIMIT/OFFSET with GROUP BY, DISTINCT, aggregates or window functions',
      'Run the subquery as its own statement and pass its result as a parameter.',
    );
  const sub = {
    ...base,
    targetList: [...clone(s.targetList ?? []), resTarget(inner, '__isocheck_t')],
    sortClause: clone(s.sortClause),
    limitCount: clone(s.limitCount),
    limitOffset: clone(s.limitOffset),
    limitOption: s.limitOption,
  };
  return scalarSubquery({
    targetList: [resTarget(jsonAgg(colRef('__isocheck_s', '__isocheck_t')))],
    fromClause: [{ RangeSubselect: { subquery: { SelectStmt: sub }, alias: { aliasname: '__isocheck_s' } } }],
    limitOption: 'LIMIT_OPTION_DEFAULT',
    op: 'SETOP_NONE',
  });
}

/** The WHERE text over the item's own column names (its qualifiers dropped). */
export function whereOver(item: FromItem, own: Node | undefined): string | undefined {
  if (!own) return undefined;
  const w = clone(own);
  walk(w, (o) => {
    const cr = o.ColumnRef;
    if (cr && Array.isArray(cr.fields) && cr.fields.length >= 2) {
      const names = cr.fields.map((f) => bodyOf(f, 'String')?.sval);
      if (names[0] === item.name) cr.fields = cr.fields.slice(1);
      else if (names.length >= 3 && names[1] === item.relname) cr.fields = cr.fields.slice(2);
    }
  });
  return deparse(w);
}
