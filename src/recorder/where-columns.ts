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
  private readonly byTable = new Map<TableInfo, Map<string, WhereColumns>>();
  private size = 0;
  /** The parameter numbers (0-based) each WHERE text names. */
  private readonly named = new Map<string, number[]>();

  get(where: string, params: unknown[], table: TableInfo): WhereColumns {
    let cache = this.byTable.get(table);
    if (!cache) this.byTable.set(table, (cache = new Map()));
    // recorded parameters are JSON values (recordParams): their JSON is their identity
    let named = this.named.get(where);
    if (named === undefined) {
      named = [...new Set([...where.matchAll(/\$(\d+)/g)].map((m) => Number(m[1]) - 1))];
      if (this.named.size >= MAX_ENTRIES) this.named.clear();
      this.named.set(where, named);
    }
    const namedValues = named.length === 0 ? '' : JSON.stringify(named.map((i) => params[i]));
    const key = `${where}\u0000${params.length}\u0000${namedValues}`;
    let out = cache.get(key);
    if (out === undefined) {
      out = compile(where, params, table);
      if (this.size >= MAX_ENTRIES) {
        this.byTable.clear();
        this.byTable.set(table, (cache = new Map()));
        this.size = 0;
      }
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
