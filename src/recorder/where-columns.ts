/**
 * Which columns a recorded WHERE reads, as the checker compiles it (compilePredicate), or why the checker cannot
 * compile it: what a session needs to judge a read exact or partial (client.ts). Compiling costs tens of
 * microseconds, once per statement, the recorder's largest cost per statement on an ORM's short statements; the
 * answer depends only on the WHERE, the parameter values (constants are folded, values coerced to the column
 * types) and the table's column types, so it is kept for each (table, WHERE, parameters): the same statement with
 * the same values (a point read of a hot key, a parameterless audit) is compiled once; only the parameters the
 * WHERE names are part of the key (an UPDATE's SET values are not). The cache is bounded (emptied
 * when full, like the plan cache), and a table is identified by its TableInfo object (one per instrument()).
 */
import { compilePredicate, PredicateError } from '../sql/predicate.js';
import type { TableInfo } from './catalog.js';

export type WhereColumns = { columns: string[] } | { error: string };

const MAX_ENTRIES = 5000;

export class WhereColumnsCache {
  /** table -> WHERE text -> (number of parameters, the named ones' values) -> answer. The WHERE is a key of its
   *  own: the plan's string each time, whose hash V8 keeps, not hashed again inside a longer key per read. */
  private readonly byTable = new Map<TableInfo, Map<string, Map<string, WhereColumns>>>();
  private size = 0;
  /** The parameter numbers (0-based) each WHERE text names. */
  private readonly named = new Map<string, number[]>();

  get(where: string, params: unknown[], table: TableInfo): WhereColumns {
    let byWhere = this.byTable.get(table);
    if (!byWhere) this.byTable.set(table, (byWhere = new Map()));
    // recorded parameters are JSON values (recordParams): their JSON is their identity
    let named = this.named.get(where);
    if (named === undefined) {
      named = [...new Set([...where.matchAll(/\$(\d+)/g)].map((m) => Number(m[1]) - 1))];
      if (this.named.size >= MAX_ENTRIES) this.named.clear();
      this.named.set(where, named);
    }
    const key =
      named.length === 0
        ? String(params.length)
        : `${params.length}\u0000${JSON.stringify(named.map((i) => params[i]))}`;
    let cache = byWhere.get(where);
    let out = cache?.get(key);
    if (out === undefined) {
      out = compile(where, params, table);
      if (this.size >= MAX_ENTRIES) {
        this.byTable.clear();
        this.byTable.set(table, (byWhere = new Map()));
        cache = undefined;
        this.size = 0;
      }
      if (!cache) byWhere.set(where, (cache = new Map()));
      cache.set(key, out);
      this.size++;
    }
    return out;
  }
}

function compile(where: string, params: unknown[], table: TableInfo): WhereColumns {
  try {
    return { columns: compilePredicate(where, params, table.columns).columns };
  } catch (e) {
    if (!(e instanceof PredicateError)) throw e;
    return { error: e.message };
  }
}
