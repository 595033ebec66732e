/**
 * Recording a cluster (issue 19): tables whose key the coordinator cannot see, their hidden columns on the shards,
 * and replicas that must have replayed the instrumented schema before anything is read from them.
 *
 * - Declared keys (`keys: { accounts: ['id'] }`): a partitioned table with foreign partitions (postgres_fdw) cannot
 *   have a primary key, and a foreign table has no index; the application declares the key, and each shard's table
 *   must have a unique index over (a subset of) it, checked here, so that the key is one row's identity.
 * - The hidden columns go onto each shard's table through the shard connections (the coordinator's ALTER TABLE
 *   only changes its own foreign table definitions).
 * - waitForReplay: the primary's WAL position after instrument(), polled on each replica until replayed (a
 *   timeout, never a hang).
 */
import type pg from 'pg';
import { InputError } from '../history/input-errors.js';

type Queryable = Pick<pg.ClientBase, 'query'>;

const quote = (name: string): string => `"${name.replace(/"/g, '""')}"`;

/** Adds the hidden columns to the table `schema.relname` on each shard and checks it has a unique index within
 *  `key` there (the table is named the same on every shard). */
export async function instrumentOnShards(
  shards: Queryable[],
  table: { name: string; schema: string; relname: string; key: string[] },
  columns: string[],
): Promise<void> {
  for (const [i, shard] of shards.entries()) {
    const where = `${table.name} on shard ${i + 1}`;
    const qualified = `${quote(table.schema)}.${quote(table.relname)}`;
    const found = await shard.query(`SELECT to_regclass($1) IS NOT NULL AS ok`, [qualified]);
    if (!found.rows[0].ok)
      throw new InputError(`${where}: no table ${qualified} there (a shard table must have the coordinator's name)`);
    const unique = await shard.query(
      `SELECT ci.relname FROM pg_index i JOIN pg_class ci ON ci.oid = i.indexrelid
        WHERE i.indrelid = to_regclass($1) AND i.indisunique AND i.indisvalid AND i.indpred IS NULL ` +
        `AND i.indexprs IS NULL
          AND (SELECT array_agg(a.attname::text) FROM pg_attribute a ` +
        `WHERE a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey)) <@ $2::text[]`,
      [qualified, table.key],
    );
    if (unique.rows.length === 0)
      throw new InputError(
        `${where}: no unique index within the declared key (${table.key.join(', ')}), so the key is not a ` +
          `row's identity there`,
      );
    await shard.query(
      `ALTER TABLE ${qualified} ${columns.map((c) => `ADD COLUMN IF NOT EXISTS ${quote(c)} text`).join(', ')}`,
    );
  }
}

/** Waits until every replica has replayed the primary's current WAL position. */
export async function waitForReplay(primary: Queryable, replicas: Queryable[], timeoutMs = 60_000): Promise<void> {
  if (replicas.length === 0) return;
  const lsn = String((await primary.query(`SELECT pg_current_wal_lsn()::text AS lsn`)).rows[0].lsn);
  const deadline = Date.now() + timeoutMs;
  await Promise.all(
    replicas.map(async (r, i) => {
      for (;;) {
        const x = await r.query(`SELECT coalesce(pg_last_wal_replay_lsn() >= $1::pg_lsn, false) AS ok`, [lsn]);
        if (x.rows[0].ok === true) return;
        if (Date.now() >= deadline)
          throw new InputError(
            `timed out after ${timeoutMs / 1000} s waiting until replica ${i + 1} has replayed the primary's ` +
              `WAL up to ${lsn}`,
          );
        await new Promise((res) => setTimeout(res, 20));
      }
    }),
  );
}
