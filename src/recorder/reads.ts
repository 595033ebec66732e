/**
 * Which rows of each recorded table a statement read, and whether the recorder can say they are all the rows of
 * that table satisfying a WHERE (exact) or only some of them (partial). docs/recording.md has the rules and why:
 *
 *   exact   the table is the only FROM item of its block, or the preserved side of outer joins, every WHERE
 *           conjunct of the block is about it alone (no subquery, no other table's column), no LIMIT/OFFSET;
 *           and the block is the root or a closed subquery (evaluated again in the same snapshot). The root's
 *           LIMIT n (a number or a parameter; no OFFSET) leaves a read exact when fewer than n rows came back: it cut
 *           nothing (`limit`, judged per execution in events.ts; Django's get() is `LIMIT 21`), or, when the WHERE
 *           fixes every key column with `=` in the key's own type (at most one row matches: keyPins), when n is at
 *           least 1 (Rails' find is `LIMIT 1`)
 *   partial everything else: inner joins (rows without a match are not returned), WHERE conditions over several
 *           tables, correlated subqueries (only rows for the result rows are known), UPDATE ... FROM and DELETE
 *           ... USING tables, FOR UPDATE in a join (READ COMMITTED re-checks rows), HAVING, LIMIT, SRFs, SKIP LOCKED
 *           (rows other transactions locked are not returned)
 *
 * A partial read keeps as WHERE the conjuncts about its table alone: every row it returns satisfies them.
 */
import type { Node, SelectStmt } from '@pgsql/types';
import { bodyOf } from '../sql/node.js';
import { andOf, hasSetReturning } from './ast.js';
import { fieldNames, ownConjuncts, type Block, type Blocks, type FromItem } from './blocks.js';
import { chainOf, lift, rowArray, whereOver, type ReadTrace, type TraceList } from './traces.js';
import type { TableLookup } from './plan.js';

export const isLimited = (s: SelectStmt): boolean =>
  Boolean((s.limitCount && !bodyOf(s.limitCount, 'A_Const')?.isnull) || s.limitOffset);

/** The LIMIT of a root block that may leave its reads exact (see above): a number or a parameter, no OFFSET. */
function rootLimit(s: SelectStmt): ReadTrace['limit'] {
  if (s.limitOffset || !s.limitCount) return undefined;
  const param = bodyOf(s.limitCount, 'ParamRef')?.number;
  if (param !== undefined) return { param };
  const c = bodyOf(s.limitCount, 'A_Const');
  const count = c?.ival?.ival ?? (c?.ival ? 0 : undefined);
  return count !== undefined ? { count } : undefined;
}

/** The parameter numbers a conjunct list relies on to fix each of `item`'s key columns with `column = value`, the value
 * a constant (not NULL) or a parameter, uncast; undefined when they do not. At most one row then satisfies them: the
 * comparison is in the key's own type (an untyped constant or parameter takes the column's type; a number keeps
 * its exact one), and the server keeps the key unique at every statement (keyUnique: not DEFERRABLE, not merely
 * declared). A cast could compare in a looser type (an int8 key `= $1::float8`: two keys equal as floats), so it
 * does not count; nor does a parameter the client declared a type for (events.ts, limitReached).
 */
function keyPins(own: Node[], item: FromItem): number[] | undefined {
  const table = item.table;
  if (!table?.keyUnique || table.key.length === 0) return undefined;
  const fixed = new Set<string>();
  const params: number[] = [];
  for (const c of own) {
    const e = bodyOf(c, 'A_Expr');
    if (e?.kind !== 'AEXPR_OP' || e.name?.length !== 1 || bodyOf(e.name[0], 'String')?.sval !== '=') continue;
    for (const [col, value] of [
      [e.lexpr, e.rexpr],
      [e.rexpr, e.lexpr],
    ]) {
      const ref = bodyOf(col, 'ColumnRef');
      const constant = bodyOf(value, 'A_Const');
      const param = bodyOf(value, 'ParamRef');
      if (!ref || (!param && (!constant || constant.isnull))) continue;
      fixed.add(fieldNames(ref).at(-1)!);
      if (param?.number !== undefined) params.push(param.number);
    }
  }
  return table.key.every((k) => fixed.has(k)) ? params : undefined;
}

/** WHERE and exactness of a read of `item` in block `b` (`extra`: reasons the caller knows; `root`: b is the
 *  statement's root SELECT, whose LIMIT is judged per execution). */
export function judgeRead(
  b: Block,
  item: FromItem,
  extra: (string | undefined)[] = [],
  root = false,
): Pick<ReadTrace, 'where' | 'partialReason' | 'limit'> {
  const where = b.kind === 'insert' ? undefined : b.node.whereClause; // (an INSERT has no WHERE)
  const { own, all } = ownConjuncts(b, item, where);
  const reasons = extra.filter((x): x is string => x !== undefined);
  if (!all) reasons.push('a WHERE about more than this table (another table, a subquery)');
  if (b.items.length > 1 && !item.preserved) reasons.push('a join (rows without a match are not returned)');
  const rooted = root && b.kind === 'select' ? rootLimit(b.node) : undefined;
  const pins = rooted && b.items.length === 1 ? keyPins(own, item) : undefined;
  const limit = rooted && pins ? { ...rooted, atMostOne: true, keyParams: pins } : rooted;
  if (b.kind === 'select' && isLimited(b.node) && !limit) reasons.push('LIMIT/OFFSET/FETCH');
  if (b.kind === 'select' && b.node.lockingClause && b.items.length > 1)
    reasons.push('FOR UPDATE/SHARE in a join (READ COMMITTED re-checks the locked rows)');
  if (
    b.kind === 'select' &&
    b.node.lockingClause?.some((l) => bodyOf(l, 'LockingClause')?.waitPolicy === 'LockWaitSkip')
  )
    reasons.push('SKIP LOCKED (rows other transactions locked are not returned)');
  return {
    where: whereOver(item, andOf(own)),
    partialReason: reasons.length > 0 ? reasons.join(', ') : undefined,
    ...(limit ? { limit } : {}),
  };
}

/** Reasons a root SELECT's own tables are partial beyond the block rules. A set-returning function in the select
 *  list (run after grouping in an aggregate), ORDER BY, GROUP BY or DISTINCT ON can return no row for a row or a
 *  group, which then goes unseen. */
export function rootReasons(s: SelectStmt, aggregate: boolean, lookup?: TableLookup): (string | undefined)[] {
  const srf = (n: unknown): boolean => hasSetReturning(n, lookup?.setReturning?.bind(lookup));
  return [
    aggregate && s.havingClause ? 'HAVING' : undefined,
    srf(s.targetList) ? 'a set-returning function in the select list' : undefined,
    srf([s.sortClause, s.groupClause, s.distinctClause])
      ? 'a set-returning function in ORDER BY, GROUP BY or DISTINCT ON'
      : undefined,
  ];
}

/**
 * Traces every recorded table read below the root: each in its closest closed block, evaluated again, or if
 * that is the root, per root row through `acc` (as is for rows and RETURNING, json_agg per group, ...).
 */
export function traceSubqueries(sql: string, blocks: Blocks, traces: TraceList, acc: (e: Node) => Node): void {
  for (const b of blocks.all) {
    if (b === blocks.root) continue;
    for (const item of b.items) {
      if (!item.table) continue;
      const chain = chainOf(b);
      const atRoot = chain[chain.length - 1] === blocks.root;
      let expr = rowArray(item);
      for (const x of atRoot ? chain.slice(0, -1) : chain) expr = lift(sql, x, expr);
      const correlated =
        chain.length > 1 ? 'a correlated subquery (only the rows read for the rows returned are recorded)' : undefined;
      traces.addJson(item.table, atRoot ? acc(expr) : expr, { ...judgeRead(b, item, [correlated]), needsRow: true });
    }
  }
}
