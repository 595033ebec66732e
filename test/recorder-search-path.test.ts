// A name written without its schema means what the session's search_path makes it mean (docs/recording.md, "Table
// names are matched"): under a search_path that puts another schema's table of a recorded table's name first (a
// schema per tenant), or with a temporary table of that name, the statement is that relation's, passed through
// unrecorded, as written; the recorded table is recorded again when the path leads back to it, and always when
// named with its schema. Before: the other relation was rewritten as the recorded table and refused by the server
// (42703), or, when it had the hidden column too (a copy made LIKE the recorded table), its writes were recorded as
// the recorded table's. Through the pg wrapper and through isocheck proxy.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { startEmbedded, type EmbeddedServer } from '../src/db/embedded.js';
import { Recorder } from '../src/recorder/index.js';
import type { RunningProxy } from '../src/proxy/proxy.js';
import { readHistory } from '../src/history/reader.js';
import { checkHistory } from '../src/checker/check.js';
import { loadPredicateParser } from '../src/sql/predicate.js';
import { proxiedServer } from './helpers/proxied-server.js';
import { serialize } from 'pg-protocol';
import { bothSides, decode } from './helpers/wire.js';

const dir = mkdtempSync(join(tmpdir(), 'isocheck-search-path-'));

const SETUP = [
  'CREATE TABLE acct (id int4 PRIMARY KEY, bal int4 NOT NULL)',
  'INSERT INTO acct VALUES (1, 100), (2, 200)',
  'CREATE SCHEMA tenant',
  'CREATE TABLE tenant.acct (id int4 PRIMARY KEY, bal int4 NOT NULL)',
  'INSERT INTO tenant.acct VALUES (1, 7), (2, 8)',
];

interface Client {
  query(
    text: string | { name: string; text: string; values: unknown[] },
    values?: unknown[],
  ): Promise<{ rows: unknown[] }>;
}

/** The statements, and what each gave (rows, or the error's SQLSTATE). */
async function workload(c: Client): Promise<unknown[]> {
  const out: unknown[] = [];
  const q = async (text: string | { name: string; text: string; values: unknown[] }, values?: unknown[]) => {
    try {
      out.push((await c.query(text, values)).rows);
    } catch (e) {
      out.push(`error ${(e as { code?: string }).code}`);
    }
  };
  await q('SET search_path = tenant, public');
  await q('BEGIN');
  await q('SELECT id, bal FROM acct WHERE id = $1', [1]);
  await q('UPDATE acct SET bal = bal + 1 WHERE id = $1 RETURNING bal', [1]);
  await q('INSERT INTO acct VALUES ($1, $2)', [3, 9]);
  // named with its schema: the recorded table, under any search_path
  await q('UPDATE public.acct SET bal = bal + 10 WHERE id = $1 RETURNING bal', [2]);
  await q('COMMIT');
  await q('SET search_path = public');
  await q('UPDATE acct SET bal = bal + 100 WHERE id = $1 RETURNING bal', [1]);
  // a temporary copy of the recorded table (its hidden column too) hides it
  await q('CREATE TEMP TABLE acct (LIKE public.acct)');
  await q('INSERT INTO acct (id, bal) VALUES ($1, $2)', [1, 555]);
  await q('UPDATE acct SET bal = bal + 1 WHERE id = $1 RETURNING bal', [1]);
  await q('DROP TABLE acct');
  await q('SELECT id, bal FROM acct ORDER BY id');
  await q('SELECT id, bal FROM tenant.acct ORDER BY id');
  // set_config sets the path too
  await q(`SELECT set_config('search_path', 'tenant, public', false) AS p`);
  // a statement the recorder refuses on a recorded table, right after the path changed: the tenant's, passed
  await q('WITH x AS (UPDATE acct SET bal = bal + 1 WHERE id = $1 RETURNING bal) SELECT bal FROM x', [2]);
  // a statement prepared under the application's name, run before and after the path changes
  const q1 = { name: 'q1', text: 'SELECT bal FROM acct WHERE id = $1', values: [1] };
  await q(q1);
  await q('SET search_path = public');
  await q(q1);
  return out;
}

const EXPECTED = [
  [],
  [],
  [{ id: 1, bal: 7 }],
  [{ bal: 8 }],
  [],
  [{ bal: 210 }],
  [],
  [],
  [{ bal: 200 }],
  [],
  [],
  [{ bal: 556 }],
  [],
  [
    { id: 1, bal: 200 },
    { id: 2, bal: 210 },
  ],
  [
    { id: 1, bal: 8 },
    { id: 2, bal: 8 },
    { id: 3, bal: 9 },
  ],
  [{ p: 'tenant, public' }],
  [{ bal: 9 }],
  [{ bal: 8 }],
  [],
  [{ bal: 200 }],
];

/** The recorded writes: table, key and the value written, in order. */
async function writes(file: string): Promise<unknown[]> {
  const h = await readHistory(file);
  expect(checkHistory(h).verdict).toBe('consistent');
  return h.txns.flatMap((t) =>
    t.events.flatMap((e) =>
      e.op === 'select' ? [] : e.rows.map((r) => ('row' in r ? [e.table, r.row.id, r.row.bal] : [e.table, r.key])),
    ),
  );
}

describe('a name a search_path gives to another relation, through the pg wrapper', () => {
  let server: EmbeddedServer;
  beforeAll(async () => {
    await loadPredicateParser();
    server = await startEmbedded();
  }, 60_000);
  afterAll(async () => {
    await server?.stop();
  });

  it('is passed through unrecorded; the recorded table is recorded under its own name', async () => {
    const setup = new pg.Client({ connectionString: server.url });
    await setup.connect();
    for (const sql of SETUP) await setup.query(sql);
    const file = join(dir, 'wrapper.ndjson');
    const recorder = new Recorder({ file, onWarning: () => undefined });
    await recorder.instrument(setup, ['acct']);
    const raw = new pg.Client({ connectionString: server.url });
    await raw.connect();
    const seen = await workload(recorder.client(raw));
    await raw.end();
    recorder.finish();
    await setup.end();
    expect(seen).toEqual(EXPECTED);
    expect(await writes(file)).toEqual([
      ['acct', 2, 210],
      ['acct', 1, 200],
    ]);
  });
});

describe('a name a search_path gives to another relation, through isocheck proxy', () => {
  let server: EmbeddedServer;
  let proxy: RunningProxy;
  const file = join(dir, 'proxy.ndjson');
  beforeAll(async () => {
    await loadPredicateParser();
    ({ server, proxy } = await proxiedServer(SETUP, ['acct'], file));
  }, 60_000);
  afterAll(async () => {
    await proxy?.close();
    await server?.stop();
  });

  it('describes such a statement as the server does (a Describe of the statement before it runs)', async () => {
    // (the proxy describes a recorded statement's rewritten text; a name the search_path gives to another
    // relation is that relation's: described as written, not refused 42703)
    const batch = Buffer.concat([
      serialize.query('SET search_path = tenant, public'),
      serialize.parse({ name: 's1', text: 'SELECT * FROM acct WHERE id = $1', types: [] }),
      serialize.describe({ type: 'S', name: 's1' }),
      serialize.bind({ statement: 's1', values: ['2'] }),
      serialize.execute({}),
      serialize.sync(),
    ]);
    const { direct, proxied } = await bothSides(server.url, proxy);
    try {
      direct.send(batch);
      const d = decode(await direct.until(2));
      proxied.send(batch);
      const p = decode(await proxied.until(2));
      expect(d).toMatch(/T\[id,bal\]/);
      expect(p).toBe(d);
    } finally {
      direct.close();
      proxied.close();
    }
  });

  it('runs a statement with declared parameter types again after the search path changed (pgx, Npgsql)', async () => {
    // (the proxy prepares such a statement under a name of its own, for its text: it named the rewritten text, and
    // the session then ran the original under that name: XX000, "Prepared statements must be unique")
    const run = Buffer.concat([
      serialize.bind({ statement: 's1', values: ['1'] }),
      serialize.execute({}),
      serialize.sync(),
    ]);
    const batch = Buffer.concat([
      serialize.parse({ name: 's1', text: 'SELECT id, bal FROM acct WHERE id = $1', types: [23] }),
      run,
      serialize.query('SET search_path = tenant, public'),
      run,
      serialize.query('SET search_path = public'),
      run,
    ]);
    const { direct, proxied } = await bothSides(server.url, proxy);
    try {
      direct.send(batch);
      const d = decode(await direct.until(5));
      proxied.send(batch);
      const p = decode(await proxied.until(5));
      expect(d).toMatch(/D\[1,7\]/);
      expect(p).toBe(d);
    } finally {
      direct.close();
      proxied.close();
    }
  });

  it('copies into and out of the relation the search path names (COPY FROM STDIN and TO STDOUT)', async () => {
    // (before: the rows of a COPY FROM went to the recorded table, and were recorded there)
    const batch = Buffer.concat([
      serialize.query('SET search_path = tenant, public'),
      serialize.query('COPY acct (id, bal) FROM STDIN'),
      serialize.copyData(Buffer.from('50\t1\n')),
      serialize.copyDone(),
      serialize.query('COPY acct TO STDOUT'),
      serialize.query('DELETE FROM tenant.acct WHERE id >= 50'),
    ]);
    const { direct, proxied } = await bothSides(server.url, proxy);
    try {
      direct.send(batch);
      const d = decode(await direct.until(4));
      // the direct side's row is deleted: the proxied side copies the same
      proxied.send(batch);
      const p = decode(await proxied.until(4));
      expect(d).toMatch(/C\(COPY 1\)/);
      expect(p).toBe(d);
    } finally {
      direct.close();
      proxied.close();
    }
    const admin = new pg.Client({ connectionString: server.url });
    await admin.connect();
    const n = await admin.query('SELECT count(*)::int AS n FROM public.acct WHERE id >= 50');
    await admin.end();
    expect(n.rows[0].n).toBe(0);
  });

  it('gives what a direct connection gives, and records the recorded table only', async () => {
    const c = new pg.Client({ connectionString: proxy.url });
    await c.connect();
    const seen = await workload(c);
    await c.end();
    await proxy.close();
    expect(seen).toEqual(EXPECTED);
    expect(await writes(file)).toEqual([
      ['acct', 2, 210],
      ['acct', 1, 200],
    ]);
  });
});
