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
import type { TableInfo } from './catalog.js';
import { HIDDEN_COLUMNS } from './catalog.js';
import { colRef, conjuncts, hasNode, refuse, resTarget, walk, type N } from './ast.js';
import type { TableLookup } from './catalog.js';

export interface FromItem {
  /** The name that qualifies its columns (alias, else relation or function name); undefined if it has none. */
  name?: string;
  /** A recorded table. */
  table?: TableInfo;
  /** Its RangeVar (tables). */
  rv?: N;
  /** No alias: `schema.rel.col` also names its columns. */
  schema?: string;
  relname?: string;
  preserved: boolean;
}

export interface Block {
  kind: 'select' | 'update' | 'delete' | 'insert';
  /** The SelectStmt (or the root Update/Delete/Insert statement). */
  node: N;
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

const fieldNames = (cr: N): string[] => (cr.fields ?? []).map((f: N) => (f.A_Star ? '*' : (f.String?.sval ?? '')));

/** Finds the blocks of a statement; refuses what cannot be traced (nested WITH reading recorded tables, ...). */
export function findBlocks(
  sql: string,
  kind: 'select' | 'update' | 'delete' | 'insert',
  body: N,
  lookup: TableLookup,
): Blocks {
  const all: Block[] = [];
  const refs: Ref[] = [];
  const cteNames = new Set<string>();
  const inReturning = new Set<Block>();
  const touches = (node: N): boolean => {
    let found = false;
    walk(node, (o) => {
      if (found) return false;
      if (
        typeof o.relname === 'string' &&
        ('inh' in o || 'relpersistence' in o) &&
        !(o.schemaname === undefined && cteNames.has(o.relname)) &&
        lookup.lookup(o.schemaname, o.relname)
      )
        found = true;
    });
    return found;
  };
  const newBlock = (k: Block['kind'], node: N, parent: Block | undefined, role: Block['role']): Block => {
    const b: Block = {
      kind: k,
      node,
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
  const scan = (node: N, b: Block): void => {
    walk(node, (o) => {
      if (o.ColumnRef) {
        refs.push({ fields: fieldNames(o.ColumnRef), block: b });
        return false;
      }
      if (o.SubLink) {
        scan(o.SubLink.testexpr, b);
        select(o.SubLink.subselect?.SelectStmt, b, 'sublink');
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

  const withClause = (w: N | undefined, parent: Block | undefined): void => {
    for (const c of w?.ctes ?? []) {
      const cte = c.CommonTableExpr;
      const q = cte.ctequery;
      if (parent !== undefined && touches(q))
        refuse(sql, 'it has a WITH inside a subquery', 'Move the WITH to the start of the statement.');
      if (q.SelectStmt) {
        if (!touches(q)) continue; // nothing to trace; its name is a CTE either way
        select(q.SelectStmt, parent, 'cte');
      } else if (touches(q)) {
        refuse(
          sql,
          `its WITH query "${cte.ctename}" writes a recorded table (a data-modifying CTE)`,
          'Run the INSERT/UPDATE/DELETE as its own statement, then the query.',
        );
      }
    }
    for (const c of w?.ctes ?? []) cteNames.add(c.CommonTableExpr.ctename);
  };

  const fromItem = (node: N, b: Block): void => {
    if (node.RangeVar) {
      const rv = node.RangeVar;
      const alias: string | undefined = rv.alias?.aliasname;
      const isCte = rv.schemaname === undefined && cteNames.has(rv.relname);
      const table = isCte ? undefined : lookup.lookup(rv.schemaname, rv.relname);
      if (table && (rv.alias?.colnames?.length ?? 0) > 0)
        refuse(
          sql,
          `it renames the columns of ${table.name} (${alias}(...))`,
          'Use the column names (or aliases in the select list).',
        );
      if (table && rv.inh === false) refuse(sql, `it reads ONLY ${table.name}`, 'Drop ONLY.');
      b.items.push({
        name: alias ?? rv.relname,
        table,
        rv,
        schema: alias ? undefined : rv.schemaname,
        relname: alias ? undefined : rv.relname,
        preserved: false,
      });
      if (table) for (let x: Block | undefined = b; x; x = x.parent) x.readsRecorded = true;
    } else if (node.RangeSubselect) {
      const rs = node.RangeSubselect;
      select(rs.subquery?.SelectStmt, rs.lateral ? b : b.parent, 'from', b);
      b.items.push({ name: rs.alias?.aliasname, preserved: false });
    } else if (node.JoinExpr) {
      const j = node.JoinExpr;
      fromItem(j.larg, b);
      fromItem(j.rarg, b);
      if (j.usingClause || j.isNatural || j.alias || j.join_using_alias) b.mergedJoin = true;
      scan(j.quals, b);
    } else if (node.RangeFunction) {
      const rf = node.RangeFunction;
      scan(rf.functions, b);
      const fn = rf.functions?.[0]?.List?.items?.[0]?.FuncCall;
      b.items.push({
        name:
          rf.alias?.aliasname ?? (fn ? String(fn.funcname?.[fn.funcname.length - 1]?.String?.sval ?? '') : undefined),
        preserved: false,
      });
    } else {
      if (touches(node))
        refuse(sql, `it reads a recorded table through ${Object.keys(node)[0]}`, 'Read the table with a plain FROM.');
      scan(node, b);
      b.items.push({ preserved: false });
    }
  };

  /** A plain SELECT's FROM items (with the preserved sides of its outer joins) and its clauses, read into `b`. */
  const selectBody = (s: N, b: Block): void => {
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
  const select = (s: N, parent: Block | undefined, role: Block['role'], under?: Block): void => {
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
    const b = newBlock('select', s, parent, role);
    selectBody(s, b);
    if (b.readsRecorded && under) for (let x: Block | undefined = under; x; x = x.parent) x.readsRecorded = true;
  };

  let root: Block;
  if (kind === 'select') {
    if (body.op && body.op !== 'SETOP_NONE') {
      root = newBlock('select', body, undefined, 'root');
      withClause(body.withClause, undefined);
      select(body.larg, undefined, 'arm');
      select(body.rarg, undefined, 'arm');
      scan([body.sortClause, body.limitCount, body.limitOffset], root);
    } else {
      withClause(body.withClause, undefined);
      const b = newBlock('select', body, undefined, 'root');
      root = b;
      selectBody(body, b);
    }
  } else {
    withClause(body.withClause, undefined);
    root = newBlock(kind, body, undefined, 'root');
    fromItem({ RangeVar: body.relation }, root);
    root.items[0].preserved = true;
    if (kind === 'insert') {
      if (body.selectStmt?.SelectStmt) select(body.selectStmt.SelectStmt, undefined, 'insert-select');
      if (body.onConflictClause && hasNode(body.onConflictClause, 'SubLink'))
        refuse(sql, 'its ON CONFLICT clause has a subquery', 'Compute the value first and pass it as a parameter.');
      scan(body.onConflictClause, root);
    } else {
      for (const f of (kind === 'update' ? body.fromClause : body.usingClause) ?? []) fromItem(f, root);
      scan([body.targetList, body.whereClause], root);
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

function markPreserved(from: N[], b: Block): void {
  if (from.length !== 1) return;
  // items were pushed in FROM order; walk the join tree in the same order to pair nodes with items
  let i = b.items.length - countItems(from[0]);
  const mark = (node: N, preserved: boolean): void => {
    if (node.JoinExpr) {
      const j = node.JoinExpr;
      const t = j.jointype;
      mark(j.larg, preserved && (t === 'JOIN_LEFT' || t === 'JOIN_FULL'));
      mark(j.rarg, preserved && (t === 'JOIN_RIGHT' || t === 'JOIN_FULL'));
    } else {
      b.items[i++].preserved = preserved;
    }
  };
  mark(from[0], true);
}

function countItems(node: N): number {
  return node.JoinExpr ? countItems(node.JoinExpr.larg) + countItems(node.JoinExpr.rarg) : 1;
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
export function ownConjuncts(b: Block, item: FromItem, where: N | undefined): { own: N[]; all: boolean } {
  const own: N[] = [];
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

/** Closed: evaluating it elsewhere in the statement gives the same rows (nothing in it refers outside it). */
export function isClosed(b: Block): boolean {
  return b.parent === undefined || !b.escapes;
}

/**
 * Replaces `*` and `q.*` in a select list (or RETURNING) by each item's columns, so the hidden columns never
 * reach the application: recorded tables by their columns, other items by `name.*`.
 */
export function expandStars(sql: string, list: N[] | undefined, b: Block, extraQualifiers: string[] = []): N[] {
  const out: N[] = [];
  for (const item of list ?? []) {
    const rt = item.ResTarget;
    const fields: N[] | undefined = rt?.val?.ColumnRef?.fields;
    if (!rt || rt.name || !fields || !fields[fields.length - 1].A_Star) {
      out.push(item);
      continue;
    }
    const names = fields.slice(0, -1).map((f: N) => f.String?.sval as string);
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
function starOf(name: string): N {
  return { ColumnRef: { fields: [{ String: { sval: name } }, { A_Star: {} }] } };
}
