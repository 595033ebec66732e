/**
 * Two databases made alike on one server, for running the same client code directly and through isocheck proxy
 * (the proxy's real-client tests): `direct` on one, the proxy recording the other; `reads()` the select events
 * recorded once the proxy is closed ([where, partial, number of rows] per transaction). twinServer() registers the
 * test file's hooks (an embedded server and an admin connection, started unless `enabled` is false).
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import type { EmbeddedServer } from '../../src/db/embedded.js';
import { startProxy, type RunningProxy } from '../../src/proxy/proxy.js';
import { freshDatabase } from './fresh-database.js';
import { testServer } from './test-server.js';

export type Read = [string | undefined, boolean, number];

export interface Twins {
  direct: string;
  proxy: RunningProxy;
  file: string;
  /** Closes the proxy (the history then has its end line) and gives the reads it recorded. */
  reads(): Promise<Read[][]>;
  /** What `run` gives on the direct database, then through the proxy; the proxy is closed after. */
  both(run: (url: string) => Promise<string>): Promise<{ direct: string; proxied: string }>;
}

/** The tables the real-client applications use: accounts, and items with a serial key; both recorded. */
const SCHEMA = [
  'CREATE TABLE acct (id int4 PRIMARY KEY, name text, bal int4)',
  `INSERT INTO acct SELECT g, 'n' || g, 100 FROM generate_series(1, 10) g`,
  'CREATE TABLE item (id serial PRIMARY KEY, label text NOT NULL, qty int4 DEFAULT 0)',
];
const TABLES = ['acct', 'item'];

/** A new database on the server made with `schema`'s statements: its URL. */
export async function databaseWith(
  serverUrl: string,
  admin: pg.Client,
  prefix: string,
  schema: string[],
): Promise<string> {
  const url = await freshDatabase(admin, serverUrl, prefix);
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  for (const sql of schema) await c.query(sql);
  await c.end();
  return url;
}

async function twinDatabases(server: EmbeddedServer, admin: pg.Client, name: string, dir: string): Promise<Twins> {
  const made = (prefix: string): Promise<string> => databaseWith(server.url, admin, prefix, SCHEMA);
  const direct = await made(`${name}_direct`);
  const file = join(dir, `${name}.ndjson`);
  const proxy = await startProxy({
    db: await made(`${name}_proxied`),
    port: 0,
    tables: TABLES,
    out: file,
    onWarning: () => undefined,
  });
  return {
    direct,
    proxy,
    file,
    async both(run) {
      try {
        return { direct: await run(direct), proxied: await run(proxy.url) };
      } finally {
        await proxy.close();
      }
    },
    async reads() {
      await proxy.close();
      return readFileSync(file, 'utf8')
        .split('\n')
        .filter((l) => l.startsWith('{"kind":"txn"'))
        .map((l) => JSON.parse(l) as { events: { op: string; where?: string; partial?: boolean; rows?: unknown[] }[] })
        .map((t) =>
          t.events.filter((e) => e.op === 'select').map((e): Read => [e.where, e.partial ?? false, e.rows!.length]),
        );
    },
  };
}

/** The file's server: `twins(name)` makes two databases with SCHEMA on it and a proxy recording one. */
export function twinServer(enabled = true): { twins(name: string): Promise<Twins> } {
  const db = testServer(enabled);
  const dir = mkdtempSync(join(tmpdir(), 'isocheck-twins-'));
  return { twins: (name) => twinDatabases(db.server, db.admin, name, dir) };
}
