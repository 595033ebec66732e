/**
 * A named session's client on a postgres_fdw coordinator (docs: README, topologies): it records each transaction
 * with the shards it used as its node, `coordinator (shard1, shard2)`. Used by `run --topology shards` and
 * `scenario --topology shards`.
 */
import type pg from 'pg';
import type { RecordingClient } from './client.js';
import type { NamedSession } from './sessions.js';

const END = /^\s*(?:COMMIT|ROLLBACK|END|ABORT)\b/i;

/** A session's client on a topology: what the runner calls. */
export interface TopologyClient {
  query(text: string, values?: unknown[]): Promise<pg.QueryResult>;
  label(name: string): unknown;
  declareLevel(level: Parameters<RecordingClient['declareLevel']>[0]): unknown;
}

/**
 * A named session's client on a postgres_fdw coordinator (`raw`): each transaction's node is `coordinator (shard1,
 * shard2)`, the shards it used (postgres_fdw_get_connections' used_in_xact, asked just before it ends).
 */
export function coordinatorClient(named: NamedSession, raw: pg.ClientBase, name = 'coordinator'): TopologyClient {
  const session = named.sessionOn(raw);
  const client = named.client(raw, name);
  return {
    query: async (text, values) => {
      // before the transaction ends: the shards it used (postgres_fdw's connections used in this transaction)
      if (END.test(text) && session.inTransaction) {
        try {
          const used = await raw.query<{ s: string }>(
            `SELECT server_name AS s FROM postgres_fdw_get_connections() WHERE used_in_xact ORDER BY 1`,
          );
          session.nodeOfTransaction(`${name}${used.rows.length ? ` (${used.rows.map((r) => r.s).join(', ')})` : ''}`);
        } catch {
          // a failed transaction answers nothing but ROLLBACK
        }
      }
      return client.query(text, values);
    },
    label: (type: string) => client.label(type),
    declareLevel: (level) => client.declareLevel(level),
  };
}
