/**
 * The query blocks of one statement and what their names refer to, for recording every table a statement reads.
 *
 *   statement -> blocks: the statement itself (root), each SELECT with its own FROM (subqueries in FROM, in
 *   WHERE/SET/VALUES/select list, CTE bodies, arms of UNION/INTERSECT/EXCEPT); each block's FROM items (recorded
 *   tables, other tables, subqueries, functions, CTE names) and its scope parent (where names it does not define
 *   are looked up: the enclosing block for a subquery expression or LATERAL, the enclosing block's parent for a
 *   subquery in FROM or a CTE body).
 *
 * Column references are resolved as PostgreSQL does (innermost scope first). A name PostgreSQL would find in a
 * table whose columns the recorder does not know (a table not recorded, a subquery, a function) might belong to
 * that block or to an outer one, so it counts as reaching out to the outermost block that could own it. A block
 * is **closed** when nothing in it reaches outside it: its rows are then the same wherever it is evaluated in the
 * statement, and the recorder can evaluate it again (same snapshot) to list them. A block that is not closed
 * is traced where its outer references are in scope (see traces.ts).
 *
 * An item is **preserved** when every row of it that satisfies the block's WHERE appears in the block's join
 * result: the only FROM item, or the outer side of LEFT/RIGHT/FULL joins all the way up.
 */
import type {
  ColumnRef,
  DeleteStmt,
  FuncCall,
  InsertStmt,
  JoinExpr,
  Node,
  RangeVar,
  SelectStmt,
  UpdateStmt,
  WithClause,
} from '@pgsql/types';
import { bodyOf } from '../sql/node.js';
import type { TableInfo } from './catalog.js';
import { HIDDEN_COLUMNS } from './catalog.js';
import { colRef, conjuncts, hasNode, rangeVarOf, refuse, resTarget, walk } from './ast.js';
import type { TableLookup } from './catalog.js';

export interface FromItem {
  /** The name that qualifies its columns (alias, else relation or function name); undefined if it has none. */
  name?: string;
  /** A recorded table. */
  table?: TableInfo;
  /** Its RangeVar (tables). */
  rv?: RangeVar;
  /** No alias: `schema.rel.col` also names its columns. */
  schema?: string;
  relname?: string;
  preserved: boolean;
}

/** A block's statement: a SELECT, or the root INSERT, UPDATE or DELETE (`kind` says which). */
export type BlockStmt =
  | { kind: 'select'; node: SelectStmt }
  | { kind: 'insert'; node: InsertStmt }
  | { kind: 'update'; node: UpdateStmt }
  | { kind: 'delete'; node: DeleteStmt };

/** The root statement of a write. */
export type WriteStmt = Exclude<BlockStmt, { kind: 'select' }>;

export type Block = BlockStmt & BlockInfo;

interface BlockInfo {
  parent?: Block;
  items: FromItem[];
  /** Some reference inside may resolve outside this block. */
  escapes: boolean;
  /** A JOIN ... USING / NATURAL / aliased join in FROM (`*` and unqualified names are not what they seem). */
  mergedJoin: boolean;
  /** Recorded tables read anywhere under this block (itself included). */
  readsRecorded: boolean;
  /** A CTE body, a subquery in FROM, a subquery expression, or a UNION arm: how it appears. */
  role: 'root' | 'cte' | 'from' | 'sublink' | 'arm' | 'insert-select';
}

interface Ref {
  fields: string[];
  block: Block;
}

export interface Blocks {
  root: Block;
  all: Block[];
  /** Possible owners of each column reference (innermost first), for checks on what a subquery reads. */
  refs: { fields: string[]; block: Block; owners: Block[] }[];
  /** Blocks found in RETURNING (they see the written rows' new values, as their traces do). */
  inReturning: Set<Block>;
}

export const fieldNames = (cr: ColumnRef): string[] =>
  (cr.fields ?? []).map((f) => (bodyOf(f, 'A_Star') ? '*' : (bodyOf(f, 'String')?.sval ?? '')));

/** A join's two sides (the parser always sets both). */
const sides = (j: JoinExpr): [Node, Node] => [j.larg!, j.rarg!];

/** Finds the blocks of a statement; refuses what cannot be traced (nested WITH reading recorded tables, ...). */
export function findBlocks(sql: string, stmt: BlockStmt, lookup: TableLookup): Blocks {
  const all: Block[] = [];
  const refs: Ref[] = [];
  const cteNames = new Set<string>();
  const inReturning = new Set<Block>();
  const touches = (node: unknown): boolean => {
    let found = false;
    walk(node, (o) => {
      if (found) return false;
      const rv = rangeVarOf(o);
      if (rv && !(rv.schemaname === undefined && cteNames.has(rv.relname)) && lookup.lookup(rv.schemaname, rv.relname))
        found = true;
    });
    return found;
  };
  const newBlock = (bs: BlockStmt, parent: Block | undefined, role: Block['role']): Block => {
    const b: Block = {
      ...bs,
      parent,
      items: [],
      escapes: false,
      mergedJoin: false,
      readsRecorded: false,
      role,
    };
    all.push(b);
    return b;
  };

  /** Everything in an expression (or clause) of block b: column references and subqueries. */
  const scan = (node: unknown, b: Block): void => {
    walk(node, (o) => {
      if (o.ColumnRef) {
        refs.push({ fields: fieldNames(o.ColumnRef), block: b });
        return false;
      }
      if (o.SubLink) {
        scan(o.SubLink.testexpr, b);
        select(bodyOf(o.SubLink.subselect, 'SelectStmt'), b, 'sublink');
        return false;
      }
      if (o.SelectStmt) {
        select(o.SelectStmt, b, 'sublink');
        return false;
      }
      if (o.InsertStmt || o.UpdateStmt || o.DeleteStmt || o.MergeStmt) {
        if (touches(o))
          refuse(
            sql,
            'it nests a data-modifying statement on a recorded table',
            'Run each INSERT/UPDATE/DELETE as its own statement.',
          );
        return false;
      }
    });
  };

  // (a WITH's items are CommonTableExprs, each with its name and query)
  const ctes = (w: WithClause | undefined) => (w?.ctes ?? []).map((c) => bodyOf(c, 'CommonTableExpr')!);
  const withClause = (w: WithClause | undefined, parent: Block | undefined): void => {
    for (const cte of ctes(w)) {
      const q = cte.ctequery!;
      if (parent !== undefined && touches(q))
        refuse(sql, 'it has a WITH inside a subquery', 'Move the WITH to the start of the statement.');
      const qs = bodyOf(q, 'SelectStmt');
      if (qs) {
        if (!touches(q)) continue; // nothing to trace; its name is a CTE either way
        select(qs, parent, 'cte');
      } else if (touches(q)) {
        refuse(
          sql,
          `its WITH query "${cte.ctename}" writes a recorded table (a data-modifying CTE)`,
          'Run the INSERT/UPDATE/DELETE as its own statement, then the query.',
        );
      }
    }
    for (const cte of ctes(w)) cteNames.add(cte.ctename!);
  };

  /** A table (or CTE name) in FROM, or the table an INSERT/UPDATE/DELETE writes. */
  const tableItem = (rv: RangeVar, b: Block): void => {
    const alias = rv.alias?.aliasname;
    const relname = rv.relname!; // (the grammar requires a table name)
    const isCte = rv.schemaname === undefined && cteNames.has(relname);
    const table = isCte ? undefined : lookup.lookup(rv.schemaname, relname);
    if (table && (rv.alias?.colnames?.length ?? 0) > 0)
      refuse(
        sql,
        `it renames the columns of ${table.name} (${alias}(...))`,
        'Use the column names (or aliases in the select list).',
      );
    if (table && rv.inh === false) refuse(sql, `it reads ONLY ${table.name}`, 'Drop ONLY.');
    b.items.push({
      name: alias ?? relname,
      table,
      rv,
      schema: alias ? undefined : rv.schemaname,
      relname: alias ? undefined : relname,
      preserved: false,
    });
    if (table) for (let x: Block | undefined = b; x; x = x.parent) x.readsRecorded = true;
  };

  const fromItem = (node: Node, b: Block): void => {
    const rv = bodyOf(node, 'RangeVar');
    const rs = bodyOf(node, 'RangeSubselect');
    const j = bodyOf(node, 'JoinExpr');
    const rf = bodyOf(node, 'RangeFunction');
    if (rv) {
      tableItem(rv, b);
    } else if (rs) {
      select(bodyOf(rs.subquery, 'SelectStmt'), rs.lateral ? b : b.parent, 'from', b);
      b.items.push({ name: rs.alias?.aliasname, preserved: false });
    } else if (j) {
      const [l, r] = sides(j);
      fromItem(l, b);
      fromItem(r, b);
      if (j.usingClause || j.isNatural || j.alias || j.join_using_alias) b.mergedJoin = true;
      scan(j.quals, b);
    } else if (rf) {
      scan(rf.functions, b);
      const fn = bodyOf(bodyOf(rf.functions?.[0], 'List')?.items?.[0], 'FuncCall');
      const fnName = (fc: FuncCall): string => bodyOf(fc.funcname?.at(-1), 'String')?.sval ?? '';
      b.items.push({ name: rf.alias?.aliasname ?? (fn ? fnName(fn) : undefined), preserved: false });
    } else {
      if (touches(node))
        refuse(sql, `it reads a recorded table through ${Object.keys(node)[0]}`, 'Read the table with a plain FROM.');
      scan(node, b);
      b.items.push({ preserved: false });
    }
  };

  /** A plain SELECT's FROM items (with the preserved sides of its outer joins) and its clauses, read into `b`. */
  const selectBody = (s: SelectStmt, b: Block): void => {
    for (const f of s.fromClause ?? []) fromItem(f, b);
    markPreserved(s.fromClause ?? [], b);
    scan(
      [
        s.targetList,
        s.whereClause,
        s.groupClause,
        s.havingClause,
        s.sortClause,
        s.windowClause,
        s.distinctClause,
        s.limitCount,
        s.limitOffset,
        s.valuesLists,
        s.lockingClause,
      ],
      b,
    );
  };

  /** `under`: the block whose FROM holds a subquery (set readsRecorded on it too, not only on the scope parent). */
  const select = (s: SelectStmt | undefined, parent: Block | undefined, role: Block['role'], under?: Block): void => {
    if (!s) return;
    withClause(s.withClause, parent);
    if (s.op && s.op !== 'SETOP_NONE') {
      select(s.larg, parent, role === 'root' ? 'arm' : role, under);
      select(s.rarg, parent, role === 'root' ? 'arm' : role, under);
      if (touches([s.sortClause, s.limitCount, s.limitOffset]))
        refuse(
          sql,
          'it reads a recorded table in the ORDER BY or LIMIT of a UNION/INTERSECT/EXCEPT',
          'Compute it first.',
        );
      return;
    }
    const b = newBlock({ kind: 'select', node: s }, parent, role);
    selectBody(s, b);
    if (b.readsRecorded && under) for (let x: Block | undefined = under; x; x = x.parent) x.readsRecorded = true;
  };

  let root: Block;
  if (stmt.kind === 'select') {
    const body = stmt.node;
    if (body.op && body.op !== 'SETOP_NONE') {
      root = newBlock(stmt, undefined, 'root');
      withClause(body.withClause, undefined);
      select(body.larg, undefined, 'arm');
      select(body.rarg, undefined, 'arm');
      scan([body.sortClause, body.limitCount, body.limitOffset], root);
    } else {
      withClause(body.withClause, undefined);
      const b = newBlock(stmt, undefined, 'root');
      root = b;
      selectBody(body, b);
    }
  } else {
    const body = stmt.node;
    withClause(body.withClause, undefined);
    root = newBlock(stmt, undefined, 'root');
    tableItem(relationOf(body), root);
    root.items[0].preserved = true;
    if (stmt.kind === 'insert') {
      const ins = stmt.node;
      const sel = bodyOf(ins.selectStmt, 'SelectStmt');
      if (sel) select(sel, undefined, 'insert-select');
      if (ins.onConflictClause && hasNode(ins.onConflictClause, 'SubLink'))
        refuse(sql, 'its ON CONFLICT clause has a subquery', 'Compute the value first and pass it as a parameter.');
      scan(ins.onConflictClause, root);
    } else {
      const from = stmt.kind === 'update' ? stmt.node.fromClause : stmt.node.usingClause;
      for (const f of from ?? []) fromItem(f, root);
      scan([stmt.kind === 'update' ? stmt.node.targetList : undefined, stmt.node.whereClause], root);
    }
    const before = all.length;
    scan(body.returningClause, root);
    for (const b of all.slice(before)) inReturning.add(b);
  }

  // Resolve every column reference: mark the blocks it may reach out of.
  const out: Blocks['refs'] = [];
  for (const r of refs) {
    const owners = ownersOf(r.fields, r.block);
    out.push({ fields: r.fields, block: r.block, owners });
    const outermost = owners[owners.length - 1];
    for (let b: Block | undefined = r.block; b && b !== outermost; b = b.parent) b.escapes = true;
    checkRef(sql, r.fields, r.block);
  }
  return { root, all, refs: out, inReturning };
}

/** The table an INSERT, UPDATE or DELETE writes (the grammar requires it). */
export function relationOf(s: WriteStmt['node']): RangeVar {
  return s.relation!;
}

function markPreserved(from: Node[], b: Block): void {
  if (from.length !== 1) return;
  // items were pushed in FROM order; walk the join tree in the same order to pair nodes with items
  let i = b.items.length - countItems(from[0]);
  const mark = (node: Node, preserved: boolean): void => {
    const j = bodyOf(node, 'JoinExpr');
    if (j) {
      const t = j.jointype;
      const [l, r] = sides(j);
      mark(l, preserved && (t === 'JOIN_LEFT' || t === 'JOIN_FULL'));
      mark(r, preserved && (t === 'JOIN_RIGHT' || t === 'JOIN_FULL'));
    } else {
      b.items[i++].preserved = preserved;
    }
  };
  mark(from[0], true);
}

function countItems(node: Node): number {
  const j = bodyOf(node, 'JoinExpr');
  if (!j) return 1;
  const [l, r] = sides(j);
  return countItems(l) + countItems(r);
}

/** Does the item own the qualified name `fields[0..n)`? Returns how many leading fields name it (0: no). */
export function qualifies(item: FromItem, fields: string[]): number {
  if (fields.length >= 2 && item.name !== undefined && fields[0] === item.name) return 1;
  if (
    fields.length >= 3 &&
    item.relname !== undefined &&
    fields[1] === item.relname &&
    (item.schema === undefined ? item.table?.schema === fields[0] : item.schema === fields[0])
  )
    return 2;
  return 0;
}

/**
 * The blocks a column reference may belong to, innermost first: qualified, the first block with an item of that
 * name; unqualified, the first block with a recorded table having that column, and every block on the way with
 * an item whose columns are unknown.
 */
function ownersOf(fields: string[], from: Block): Block[] {
  const owners: Block[] = [];
  if (fields.length >= 2) {
    for (let b: Block | undefined = from; b; b = b.parent)
      if (b.items.some((it) => qualifies(it, fields) > 0)) return [b];
    return owners; // old/new/excluded, or a composite field: resolved by the server
  }
  const c = fields[0];
  for (let b: Block | undefined = from; b; b = b.parent) {
    if (b.items.some((it) => it.table && c in it.table.columns)) {
      owners.push(b);
      return owners;
    }
    if (b.items.some((it) => !it.table) || b.mergedJoin) owners.push(b);
  }
  return owners;
}

/** Refuses references to the hidden columns and to whole rows of recorded tables (`SELECT t`, `row_to_json(t)`). */
function checkRef(sql: string, fields: string[], from: Block): void {
  const last = fields[fields.length - 1];
  if (HIDDEN_COLUMNS.has(last)) refuse(sql, `it uses the recorder's hidden column ${last}`, 'Do not read or write it.');
  if (fields.length !== 1) return;
  for (let b: Block | undefined = from; b; b = b.parent) {
    if (b.items.some((it) => it.table && last in it.table.columns)) return;
    // (with an item whose columns are unknown, `last` may be its column: refused all the same, to be safe)
    if (b.items.some((it) => it.table && it.name === last))
      refuse(
        sql,
        `it uses the whole row "${last}" (which would include the recorder's hidden columns)`,
        'Name the columns instead.',
      );
    if (b.items.some((it) => !it.table)) return;
  }
}

/** The item of block b a column reference names definitely (undefined when not sure). */
export function itemOf(fields: string[], b: Block): FromItem | undefined {
  if (fields.length >= 2) {
    const found = b.items.filter((it) => qualifies(it, fields) > 0);
    return found.length === 1 ? found[0] : undefined;
  }
  if (b.mergedJoin || b.items.some((it) => !it.table)) return undefined;
  const found = b.items.filter((it) => it.table && fields[0] in it.table.columns);
  return found.length === 1 ? found[0] : undefined;
}

/** The conjuncts of the block's WHERE that read only `item` (no subquery, every column its own). */
export function ownConjuncts(b: Block, item: FromItem, where: Node | undefined): { own: Node[]; all: boolean } {
  const own: Node[] = [];
  let all = true;
  for (const c of conjuncts(where)) {
    let ok = !hasNode(c, 'SubLink');
    if (ok) {
      walk(c, (o) => {
        if (!ok) return false;
        if (o.ColumnRef) {
          const fields = fieldNames(o.ColumnRef);
          if (
            fields[fields.length - 1] === '*' ||
            itemOf(fields, b) !== item ||
            !(fields[fields.length - 1] in item.table!.columns)
          )
            ok = false;
          return false;
        }
      });
    }
    if (ok) own.push(c);
    else all = false;
  }
  return { own, all };
}

/** The SELECT of a block (every block is one but the root of an INSERT, UPDATE or DELETE). */
export function selectOf(b: Block): SelectStmt {
  if (b.kind !== 'select') throw new Error(`isocheck bug: a ${b.kind} statement taken for a SELECT block`);
  return b.node;
}

/** Closed: evaluating it elsewhere in the statement gives the same rows (nothing in it refers outside it). */
export function isClosed(b: Block): boolean {
  return b.parent === undefined || !b.escapes;
}

/**
 * Replaces `*` and `q.*` in a select list (or RETURNING) by each item's columns, so the hidden columns never
 * reach the application: recorded tables by their columns, other items by `name.*`.
 */
export function expandStars(sql: string, list: Node[] | undefined, b: Block, extraQualifiers: string[] = []): Node[] {
  const out: Node[] = [];
  for (const item of list ?? []) {
    const rt = bodyOf(item, 'ResTarget');
    const fields = bodyOf(rt?.val, 'ColumnRef')?.fields;
    if (!rt || rt.name || !fields || !bodyOf(fields[fields.length - 1], 'A_Star')) {
      out.push(item);
      continue;
    }
    // the names before `*` (a ColumnRef's fields are Strings, but for a last A_Star)
    const names = fields.slice(0, -1).map((f) => bodyOf(f, 'String')?.sval as string);
    if (names.length === 0) {
      if (!b.items.some((it) => it.table)) {
        out.push(item);
        continue;
      }
      if (b.mergedJoin)
        refuse(sql, 'it selects * over a JOIN ... USING / NATURAL JOIN with a recorded table', 'Name the columns.');
      for (const it of b.items) {
        if (it.table)
          for (const c of it.table.columnOrder)
            out.push(resTarget(b.items.length === 1 ? colRef(c) : colRef(it.name!, c)));
        else if (it.name !== undefined) out.push(resTarget(starOf(it.name)));
        else refuse(sql, 'it selects * over a FROM item without a name', 'Name the columns.');
      }
      continue;
    }
    if (names.length === 1 && extraQualifiers.includes(names[0])) {
      const target = b.items[0];
      if (target.table) {
        for (const c of target.table.columnOrder) out.push(resTarget(colRef(names[0], c)));
        continue;
      }
    }
    const it = b.items.find((x) => qualifies(x, [...names, 'x']) === names.length);
    if (it?.table) {
      for (const c of it.table.columnOrder) out.push(resTarget(colRef(...names, c)));
      continue;
    }
    out.push(item);
  }
  return out;
}

/** `name.*` */
function starOf(name: string): Node {
  return { ColumnRef: { fields: [{ String: { sval: name } }, { A_Star: {} }] } };
}
