/** Loads TPC-C CSVs (tpcc and tpcc-pc) and moves HISTORY's identity past the loaded h_id values. */
import { loadTables } from '../lib/csv.js';
import type { Queryable } from '../types.js';
import { tpccColumns } from './schema.js';

export async function loadTpcc(client: Queryable, files: Record<string, string>, pc: boolean): Promise<void> {
  await loadTables(client, files, tpccColumns(pc));
  const max = Number((await client.query('SELECT coalesce(max(h_id), 0) AS m FROM history')).rows[0].m);
  await client.query(`SELECT setval(pg_get_serial_sequence('history', 'h_id'), $1, $2)`, [Math.max(1, max), max > 0]);
}
