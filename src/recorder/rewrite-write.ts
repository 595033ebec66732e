/**
 * INSERT, UPDATE, DELETE: the written rows are exact (RETURNING gives each one, with the wid it replaced), and the
 * tables the statement read are traced in RETURNING too (traces.ts): `UPDATE ... FROM` / `DELETE ... USING`
 * tables by the row each written row was joined with; subqueries (in WHERE, SET, VALUES, RETURNING), CTEs and
 * INSERT's SELECT by evaluating them again in RETURNING (same statement, same snapshot).
 *
 * Added RETURNING columns: insert [columns..., wid (, previous wid for ON CONFLICT DO UPDATE)]; update
 * [columns..., previous wid]; delete [key..., wid]; then the reads.
 *
 * READ COMMITTED: a row changed by a concurrent transaction is re-checked on its newest version (EvalPlanQual);
 * subqueries keep the statement's snapshot, and RETURNING sees the same rows of the FROM tables the written row
 * was joined with, so the traces are what the statement used. A correlated subquery in SET or WHERE that reads
 * a column the UPDATE assigns is refused: in RETURNING it would see the new value.
 */
import type { DeleteStmt, InsertStmt, Node, UpdateStmt } from '@pgsql/types';
import { bodyOf } from '../sql/node.js';
import {
  castText,
  clone,
  colRef,
  hasAggregate,
  hasSetReturning,
  param,
  paramNumbers,
  refuse,
  resTarget,
  wrap,
} from './ast.js';
import { HIDDEN_COLUMNS, PREV_COLUMN, WID_COLUMN } from './catalog.js';
import {
  expandStars,
  findBlocks,
  ownConjuncts,
  qualifies,
  relationOf,
  type Block,
  type Blocks,
  type FromItem,
  type WriteStmt,
} from './blocks.js';
import { judgeRead, traceSubqueries } from './reads.js';
import type { DeletePlan, InsertPlan, RewriteOptions, TableLookup, UpdatePlan } from './plan.js';
import { addedTargets } from './rewrite-select.js';
import { TraceList, whereOver } from './traces.js';
import { andOf } from './ast.js';

type Write = WriteStmt['node'];

function returningParts(original: Write): { options: Node[] | undefined; exprs: Node[]; had: boolean } {
  const rc = original.returningClause;
  return { options: rc?.options, exprs: rc?.exprs ?? [], had: (rc?.exprs?.length ?? 0) > 0 };
}

/** The statement's RETURNING: the application's expressions, then what the recorder adds (the traced reads'
 *  columns); the clause's options (its OLD/NEW aliases) kept. */
function setReturning(s: Write, options: Node[] | undefined, appExprs: Node[], traces: TraceList): void {
  s.returningClause = { ...(options ? { options } : {}), exprs: [...appExprs, ...addedTargets(traces.exprs)] };
}

function oldAlias(options: Node[] | undefined): { old: string; new: string } {
  let o = 'old';
  let n = 'new';
  for (const opt of options ?? []) {
    const r = bodyOf(opt, 'ReturningOption');
    // (`RETURNING WITH (OLD AS o)`: the grammar requires the alias)
    if (r?.option === 'RETURNING_OPTION_OLD') o = r.value!;
    if (r?.option === 'RETURNING_OPTION_NEW') n = r.value!;
  }
  return { old: o, new: n };
}

function checkAssignments(sql: string, t: FromItem, list: Node[], what: string): void {
  for (const item of list) {
    const name = bodyOf(item, 'ResTarget')?.name;
    if (name === undefined) continue;
    if (HIDDEN_COLUMNS.has(name)) refuse(sql, `it assigns the recorder's hidden column ${name}`, 'Do not write it.');
    if (t.table!.key.includes(name)) {
      refuse(
        sql,
        `${what} changes key column "${name}" of ${t.table!.name} (the key is the row's identity in the history)`,
        'Delete the row and insert it with the new key instead.',
      );
    }
  }
}

/** The blocks of a write on a recorded table (refused when the written table is not recorded but a read one is). */
function writeBlocks(
  sql: string,
  stmt: WriteStmt,
  lookup: TableLookup,
): { blocks: Blocks; target: FromItem; aliases: { old: string; new: string } } {
  const { kind, node: s } = stmt;
  const relation = relationOf(s);
  if (!lookup.lookup(relation.schemaname, relation.relname!)) {
    refuse(
      sql,
      `it reads a recorded table to ${kind === 'insert' ? 'write' : kind} a table that is not recorded`,
      'Record that table too (instrument it), or SELECT the rows first and pass them as parameters.',
    );
  }
  if (stmt.kind !== 'insert' && bodyOf(stmt.node.whereClause, 'CurrentOfExpr'))
    refuse(sql, 'WHERE CURRENT OF (cursors) is not recorded', `${kind === 'update' ? 'Update' : 'Delete'} by key.`);
  const blocks = findBlocks(sql, stmt, lookup);
  for (const b of blocks.all)
    if (b !== blocks.root && b.kind === 'select' && b.node.targetList)
      b.node.targetList = expandStars(sql, b.node.targetList, b);
  const target = blocks.root.items[0];
  const aliases = oldAlias(s.returningClause?.options);
  if (target.name === aliases.old || target.name === aliases.new)
    refuse(sql, `the table is called "${target.name}", like the RETURNING old/new rows`, 'Give it another alias.');
  return { blocks, target, aliases };
}

/** The rows of the other tables of UPDATE ... FROM / DELETE ... USING, and every subquery, traced in RETURNING. */
function traceWriteReads(sql: string, blocks: Blocks, own: Node[], kind: string): TraceList {
  const traces = new TraceList(own);
  for (const item of blocks.root.items.slice(1)) {
    if (item.table)
      traces.addRow(item, {
        ...judgeRead(blocks.root, item, [`read through ${kind} (only the rows joined to a written row are returned)`]),
        needsRow: false,
      });
  }
  traceSubqueries(sql, blocks, traces, (e) => e);
  return traces;
}

/** The written table's WHERE (its own conjuncts) and why the written rows may be fewer than it selects. */
function writeWhere(
  root: Block,
  target: FromItem,
  where: Node | undefined,
  joined: string,
): { where?: string; partialReason?: string } {
  const { own, all } = ownConjuncts(root, target, where);
  const reasons: string[] = [];
  if (root.items.length > 1) reasons.push(joined);
  if (!all) reasons.push('a WHERE about more than this table (another table, a subquery)');
  return { where: whereOver(target, andOf(own)), partialReason: reasons.length > 0 ? reasons.join(', ') : undefined };
}

/** A column of the written table in RETURNING: qualified when other tables are in scope. */
const ownCol =
  (root: Block, target: FromItem) =>
  (c: string): Node =>
    root.items.length > 1 ? colRef(target.name!, c) : colRef(c);

export function insertPlan(
  sql: string,
  original: InsertStmt,
  lookup: TableLookup,
  options: RewriteOptions,
  nValues: number,
): InsertPlan {
  const s = clone(original);
  const { blocks, target: t, aliases } = writeBlocks(sql, { kind: 'insert', node: s }, lookup);
  const table = t.table!;
  const { options: retOptions, exprs, had } = returningParts(s);
  const base = Math.max(nValues, paramNumbers(s));
  const widParam = base + 1;
  const wid = castText(param(widParam));
  for (const c of s.cols ?? []) {
    const name = bodyOf(c, 'ResTarget')?.name;
    if (name !== undefined && HIDDEN_COLUMNS.has(name))
      refuse(sql, `it writes the recorder's hidden column ${name}`, 'Do not write it.');
  }
  /** The column list; none written means the table's first n columns. */
  const cols = (n: number): Node[] =>
    (s.cols ??= table.columnOrder.slice(0, n).map((c) => ({ ResTarget: { name: c } })));
  const sel = bodyOf(s.selectStmt, 'SelectStmt');
  if (!s.selectStmt) {
    // DEFAULT VALUES
    s.cols = [{ ResTarget: { name: WID_COLUMN } }];
    s.selectStmt = {
      SelectStmt: { valuesLists: [{ List: { items: [wid] } }], limitOption: 'LIMIT_OPTION_DEFAULT', op: 'SETOP_NONE' },
    };
  } else if (sel?.valuesLists) {
    // (each VALUES row is a List of at least one item)
    const rows = sel.valuesLists.map((l) => bodyOf(l, 'List')!);
    cols(rows[0]?.items?.length ?? 0).push({ ResTarget: { name: WID_COLUMN } });
    for (const row of rows) row.items!.push(clone(wid));
  } else if (sel && (!sel.op || sel.op === 'SETOP_NONE')) {
    // INSERT ... SELECT: the wid is one more (constant) column; DISTINCT, GROUP BY and ORDER BY are unchanged
    if (hasSetReturning(sel.targetList) && (hasAggregate(sel.targetList) || sel.groupClause))
      refuse(sql, 'INSERT ... SELECT with set-returning functions and aggregates', 'Split the statement.');
    // `INSERT ... SELECT FROM u` has no select list: the wid is then its one column
    const list = (sel.targetList ??= []);
    cols(list.length).push({ ResTarget: { name: WID_COLUMN } });
    list.push(resTarget(wid));
  } else {
    refuse(
      sql,
      'INSERT ... SELECT with UNION/INTERSECT/EXCEPT',
      'Insert the result of each query with its own INSERT ... SELECT.',
    );
  }
  let upsertWidParam: number | undefined;
  const oc = s.onConflictClause;
  if (oc && oc.action === 'ONCONFLICT_UPDATE') {
    checkAssignments(sql, t, oc.targetList ?? [], 'ON CONFLICT DO UPDATE');
    upsertWidParam = base + 2;
    const set = oc.targetList!; // (DO UPDATE SET has at least one assignment)
    set.push({ ResTarget: { name: WID_COLUMN, val: castText(param(upsertWidParam)) } });
    if (!options.oldReturning) set.push({ ResTarget: { name: PREV_COLUMN, val: colRef(t.name!, WID_COLUMN) } });
  }
  const appExprs = expandStars(sql, exprs, blocks.root, [aliases.old, aliases.new]);
  const own = [...table.columnOrder.map((c) => colRef(c)), colRef(WID_COLUMN)];
  if (upsertWidParam !== undefined)
    own.push(options.oldReturning ? colRef(aliases.old, WID_COLUMN) : colRef(PREV_COLUMN));
  const traces = traceWriteReads(sql, blocks, own, 'INSERT');
  setReturning(s, retOptions, appExprs, traces);
  return {
    kind: 'insert',
    sql: wrap('InsertStmt', s),
    table,
    tables: [table, ...traces.tables],
    added: traces.exprs.length,
    appRows: had,
    widParam,
    upsertWidParam,
    reads: traces.reads,
  };
}

export function updatePlan(
  sql: string,
  original: UpdateStmt,
  lookup: TableLookup,
  options: RewriteOptions,
  nValues: number,
): UpdatePlan {
  const s = clone(original);
  const { blocks, target: t, aliases } = writeBlocks(sql, { kind: 'update', node: s }, lookup);
  const table = t.table!;
  const root = blocks.root;
  checkAssignments(sql, t, s.targetList ?? [], 'it');
  // A subquery in SET/WHERE traced in RETURNING would see the new values of the columns the UPDATE assigns.
  const assigned = new Set((s.targetList ?? []).map((x) => bodyOf(x, 'ResTarget')?.name));
  for (const r of blocks.refs) {
    if (r.block === root || blocks.inReturning.has(r.block) || !r.owners.includes(root)) continue;
    const c = r.fields[r.fields.length - 1];
    const onTarget = r.fields.length === 1 || qualifies(t, r.fields) > 0;
    if (onTarget && assigned.has(c)) {
      refuse(
        sql,
        `a subquery refers to column "${c}", which the UPDATE assigns (the recorder reads the subquery's rows ` +
          `again after the update)`,
        'Compute the subquery first and pass its result as a parameter.',
      );
    }
  }
  const widParam = Math.max(nValues, paramNumbers(s)) + 1;
  const set = s.targetList!; // (UPDATE's SET has at least one assignment)
  set.push({ ResTarget: { name: WID_COLUMN, val: castText(param(widParam)) } });
  if (!options.oldReturning) set.push({ ResTarget: { name: PREV_COLUMN, val: colRef(t.name!, WID_COLUMN) } });
  const { exprs, options: retOptions, had } = returningParts(s);
  const appExprs = expandStars(sql, exprs, root, [aliases.old, aliases.new]);
  const col = ownCol(root, t);
  const own = [
    ...table.columnOrder.map(col),
    options.oldReturning ? colRef(aliases.old, WID_COLUMN) : col(PREV_COLUMN),
  ];
  const traces = traceWriteReads(sql, blocks, own, 'UPDATE ... FROM');
  setReturning(s, retOptions, appExprs, traces);
  const w = writeWhere(root, t, s.whereClause, 'UPDATE ... FROM (only rows with a match are updated)');
  return {
    kind: 'update',
    sql: wrap('UpdateStmt', s),
    table,
    tables: [table, ...traces.tables],
    added: traces.exprs.length,
    appRows: had,
    ...w,
    widParam,
    reads: traces.reads,
  };
}

export function deletePlan(sql: string, original: DeleteStmt, lookup: TableLookup): DeletePlan {
  const s = clone(original);
  const { blocks, target: t, aliases } = writeBlocks(sql, { kind: 'delete', node: s }, lookup);
  const table = t.table!;
  const root = blocks.root;
  const { exprs, options: retOptions, had } = returningParts(s);
  const appExprs = expandStars(sql, exprs, root, [aliases.old, aliases.new]);
  const col = ownCol(root, t);
  const own = [...table.key.map(col), col(WID_COLUMN)];
  const traces = traceWriteReads(sql, blocks, own, 'DELETE ... USING');
  setReturning(s, retOptions, appExprs, traces);
  const w = writeWhere(root, t, s.whereClause, 'DELETE ... USING (only rows with a match are deleted)');
  return {
    kind: 'delete',
    sql: wrap('DeleteStmt', s),
    table,
    tables: [table, ...traces.tables],
    added: traces.exprs.length,
    appRows: had,
    ...w,
    reads: traces.reads,
  };
}
