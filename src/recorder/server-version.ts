/**
 * The server's version, as text ("18.4") and as `server_version_num` (180004): the recorder decides from it how
 * to read the version a statement replaced (RETURNING old.* from 18 on), and the embedded server and `--db`
 * report it. One query, shared by all three.
 */
import type pg from 'pg';

export interface ServerVersion {
  version: string;
  versionNum: number;
}

export async function serverVersion(client: pg.ClientBase): Promise<ServerVersion> {
  const r = await client.query<{ v: string; n: string }>(
    `SELECT current_setting('server_version') AS v, current_setting('server_version_num') AS n`,
  );
  return { version: r.rows[0].v, versionNum: Number(r.rows[0].n) };
}
