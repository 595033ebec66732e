/**
 * SELECT: the application's query with every recorded table it reads traced (traces.ts), in one of three modes
 * chosen by the root query block:
 *
 *   rows       each result row also carries the row (columns and wid) of each root FROM table it came from
 *   aggregate  aggregates / GROUP BY / HAVING / DISTINCT (turned into GROUP BY): json_agg of each root table's rows
 *              per group, so the server computes the application's aggregates and hands back every row aggregated
 *   distinct-on  DISTINCT ON: json_agg(...) OVER (PARTITION BY the DISTINCT ON expressions) per root table, computed
 *              before DISTINCT ON keeps one row per partition: the rows of the whole partition
 *
 * UNION / INTERSECT / EXCEPT: each arm is a closed block; its tables' rows come as constant columns (as text, so
 * that UNION's duplicate removal is unchanged) added to every arm.
 */
import type { Node, SelectStmt } from '@pgsql/types';
import { bodyOf } from '../sql/node.js';
import { castText, clone, hasAggregate, hasWindow, jsonAgg, refuse, resTarget, wrap } from './ast.js';
import { expandStars, findBlocks } from './blocks.js';
import { judgeRead, rootReasons, traceSubqueries } from './reads.js';
import type { SelectPlan, TableLookup } from './plan.js';
import { rowArray, TraceList } from './traces.js';

export function addedTargets(exprs: Node[]): Node[] {
  return exprs.map((e, i) => resTarget(e, `__isocheck_${i}`));
}

/** Is this result column one addedTargets named? (A FETCH from a recorded cursor returns them last.) */
export const isAddedColumn = (name: string): boolean => /^__isocheck_\d+$/.test(name);

export function selectPlan(
  sql: string,
  original: SelectStmt,
  lookup: TableLookup,
): SelectPlan | { kind: 'passthrough' } {
  const s = clone(original);
  if (s.intoClause)
    refuse(sql, 'SELECT INTO copies rows without the recorder seeing them', 'SELECT the rows, then INSERT them.');
  if (s.valuesLists) refuse(sql, 'VALUES with a recorded table', 'Use a plain SELECT.');
  const blocks = findBlocks(sql, { kind: 'select', node: s }, lookup);
  for (const b of blocks.all)
    if (b.kind === 'select' && b.node.targetList) b.node.targetList = expandStars(sql, b.node.targetList, b);
  const traces = new TraceList();
  const root = blocks.root;
  if (s.op && s.op !== 'SETOP_NONE') {
    traceSubqueries(sql, blocks, traces, (e) => e);
    const added = traces.exprs.map(castText);
    // (a set operation has both arms)
    const arms = (n: SelectStmt): SelectStmt[] =>
      n.op && n.op !== 'SETOP_NONE' ? [...arms(n.larg!), ...arms(n.rarg!)] : [n];
    for (const arm of arms(s)) {
      if (arm.valuesLists)
        refuse(sql, 'a VALUES arm in a set operation with a recorded table', 'Write the values as a SELECT.');
      // an arm `SELECT FROM t` has no select list: the trace columns are then its only ones
      (arm.targetList ??= []).push(...addedTargets(clone(added)));
    }
    return done(s, traces);
  }
  let aggregate =
    hasAggregate([s.targetList, s.havingClause, s.sortClause]) ||
    (s.groupClause?.length ?? 0) > 0 ||
    s.havingClause !== undefined;
  let partition: Node[] | undefined;
  const distinct = s.distinctClause;
  if (distinct && distinct.length > 0) {
    const plain = distinct.length === 1 && Object.keys(distinct[0]).length === 0;
    if (plain) {
      if (aggregate)
        refuse(
          sql,
          'it uses DISTINCT together with aggregates or GROUP BY',
          'Drop DISTINCT (or GROUP BY) and deduplicate in the application.',
        );
      if (hasWindow(s.targetList))
        refuse(sql, 'it uses DISTINCT with window functions', 'Drop DISTINCT and deduplicate in the application.');
      // SELECT DISTINCT a, b ... == SELECT a, b ... GROUP BY 1, 2: the aggregate form records every row read
      // (the grammar requires DISTINCT's select list)
      delete s.distinctClause;
      s.groupClause = s.targetList!.map((_, i) => ({ A_Const: { ival: { ival: i + 1 } } }));
      aggregate = true;
    } else {
      if (aggregate)
        refuse(
          sql,
          'it uses DISTINCT ON together with aggregates or GROUP BY',
          'Drop DISTINCT ON and pick the rows in the application.',
        );
      const outputNames = new Set<string | undefined>(
        s.targetList!.map((t) => bodyOf(t, 'ResTarget')?.name).filter((x) => x !== undefined),
      );
      for (const d of distinct) {
        const f = bodyOf(d, 'ColumnRef')?.fields;
        if (bodyOf(d, 'A_Const') || (f?.length === 1 && outputNames.has(bodyOf(f[0], 'String')?.sval))) {
          refuse(
            sql,
            'its DISTINCT ON names an output column (by position or alias)',
            'Write the expression itself in DISTINCT ON.',
          );
        }
      }
      partition = distinct;
    }
  }
  if (aggregate && s.lockingClause)
    refuse(sql, 'FOR UPDATE/SHARE with aggregates', 'Lock the rows with a separate SELECT ... FOR UPDATE.');
  const acc = aggregate
    ? (e: Node) => jsonAgg(e)
    : partition
      ? (e: Node) => jsonAgg(e, clone(partition))
      : (e: Node) => e;
  for (const item of root.items) {
    if (!item.table) continue;
    const judged = { ...judgeRead(root, item, rootReasons(s, aggregate, lookup), true), needsRow: false };
    if (aggregate || partition) traces.addJson(item.table, acc(rowArray(item)), judged);
    else traces.addRow(item, judged);
  }
  traceSubqueries(sql, blocks, traces, acc);
  // `SELECT FROM t` has no select list: the trace columns are then its only ones (the client sees none of them)
  (s.targetList ??= []).push(...addedTargets(traces.exprs));
  return done(s, traces);
}

function done(s: SelectStmt, traces: TraceList): SelectPlan | { kind: 'passthrough' } {
  if (traces.reads.length === 0) return { kind: 'passthrough' }; // only CTEs named like recorded tables
  const tables = [...new Set(traces.tables)];
  return {
    kind: 'select',
    sql: wrap('SelectStmt', s),
    table: tables[0],
    tables,
    added: traces.exprs.length,
    appRows: true,
    reads: traces.reads,
    ...((s.lockingClause?.length ?? 0) > 0 ? { locks: true as const } : {}),
  };
}
