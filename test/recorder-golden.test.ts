// The same deterministic workload recorded by every build gives the same history and the same results: a check
// that changes made for speed (issue 17, item 5: prepared statements, the session's fast path, results split as
// they arrive) record exactly what was recorded before. test/fixtures/recorder-golden.json was written by the
// build before those changes (commit 6419161) with ISOCHECK_UPDATE_GOLDEN=1; the test compares every run with it:
// every history line (events, rows, wids, partial flags, WHEREs, parameters, errors; times left out) and every
// result the application got (command, rowCount, fields, rows).
//
// The workload, one statement at a time on two sessions: the ORM statements of test/helpers/orm-sql.ts (joins,
// subqueries, CTEs, UNION, DISTINCT ON, aggregates, writes that read), each in a transaction and each twice (the
// second time a prepared statement of the recorder's); the bank's statements as kysely and drizzle send them;
// rowMode 'array'; an application's own named statement; autocommit writes; an upsert; a savepoint rolled back
// to; a failed statement; DISCARD ALL and DEALLOCATE ALL (which drop every prepared statement of the connection)
// followed by the same statements.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { startEmbedded, type EmbeddedServer } from '../src/db/embedded.js';
import { Recorder, type RecordingClient } from '../src/recorder/index.js';
import * as O from './helpers/orm-sql.js';

const GOLDEN = join(import.meta.dirname, 'fixtures', 'recorder-golden.json');
const TABLES = ['accounts', 'orders', 'lines'];
let server: EmbeddedServer;

beforeAll(async () => {
  server = await startEmbedded();
}, 60_000);

afterAll(async () => {
  await server?.stop();
});

async function client(): Promise<pg.Client> {
  const c = new pg.Client({ connectionString: server.url });
  await c.connect();
  return c;
}

function shape(r: pg.QueryResult): unknown {
  return {
    command: r.command,
    rowCount: r.rowCount,
    fields: r.fields.map((f) => [f.name, f.dataTypeID]),
    rows: r.rows,
  };
}

/** A history line without what differs from run to run (times). */
function normalize(line: Record<string, unknown>): unknown {
  const { begin: _b, end: _e, ...rest } = line;
  if (rest.kind === 'history') {
    const { startedAt: _s, database: _d, ...meta } = rest.meta as Record<string, unknown>;
    return { ...rest, meta };
  }
  return rest;
}

async function record(): Promise<{ results: unknown[]; lines: unknown[] }> {
  const setup = await client();
  for (const t of [...TABLES].reverse()) await setup.query(`DROP TABLE IF EXISTS ${t}`);
  for (const ddl of O.SHOP_DDL) await setup.query(ddl);
  await setup.query(`INSERT INTO accounts SELECT g, 'a' || g, 100 FROM generate_series(1, 4) g`);
  await setup.query(
    `INSERT INTO orders SELECT g, (g - 1) % 4 + 1, CASE WHEN g % 2 = 0 THEN 'paid' ELSE 'open' END FROM ` +
      `generate_series(1, 6) g`,
  );
  await setup.query(`INSERT INTO lines SELECT g, (g - 1) % 6 + 1, 'p' || g, g % 4 + 1 FROM generate_series(1, 12) g`);
  const file = join(mkdtempSync(join(tmpdir(), 'isocheck-golden-')), 'run.ndjson');
  const recorder = new Recorder({ file, onWarning: () => undefined });
  await recorder.instrument(setup, TABLES);
  const results: unknown[] = [];
  const a: RecordingClient = recorder.client(await client());
  const b: RecordingClient = recorder.client(await client());
  const run = async (c: RecordingClient, q: string | pg.QueryConfig, values?: unknown[]): Promise<void> => {
    try {
      results.push(shape(await c.query(q as string, values)));
    } catch (e) {
      results.push({ error: (e as { code?: string }).code ?? (e as Error).message });
    }
  };
  const statements = [...(await O.ormReads()), ...O.ormWrites()];
  for (const round of [1, 2]) {
    for (const s of statements) {
      await run(a, 'BEGIN');
      await run(a, s.sql, s.values);
      await run(a, 'COMMIT');
    }
    // the bank's statements (kysely, drizzle), a transfer and an audit
    for (const id of [1, 2, 3]) {
      await run(b, 'start transaction isolation level read committed');
      await run(b, 'select "bal" from "accounts" where "id" = $1', [id]);
      await run(b, 'update "accounts" set "bal" = "bal" + $1 where "id" = $2', [-round, id]);
      await run(b, 'update "accounts" set "bal" = "accounts"."bal" + $1 where "accounts"."id" = $2', [round, id + 1]);
      await run(b, 'commit');
      await run(b, 'begin isolation level repeatable read');
      await run(b, 'select sum("bal") as "total" from "accounts"');
      await run(b, 'select sum("accounts"."bal") from "accounts" where "accounts"."id" in ($1, $2)', [1, 2]);
      await run(b, 'commit');
    }
    // rowMode 'array', an application's named statement, custom type parsers
    await run(b, {
      text: 'SELECT id, bal FROM accounts WHERE id <= $1 ORDER BY id',
      values: [3],
      rowMode: 'array',
    } as pg.QueryConfig);
    await run(b, {
      name: 'app_lines',
      text: 'SELECT id, qty FROM lines WHERE order_id = $1 ORDER BY id',
      values: [round],
    });
    await run(b, {
      name: 'app_lines',
      text: 'SELECT id, qty FROM lines WHERE order_id = $1 ORDER BY id',
      values: [round + 2],
    });
    await run(b, {
      text: 'SELECT id, bal FROM accounts WHERE id = $1',
      values: [2],
      types: { getTypeParser: () => (v: string) => `<${v}>` },
    } as pg.QueryConfig);
    // autocommit writes, an upsert, a failed statement, a savepoint rolled back to
    await run(b, 'INSERT INTO orders (id, account_id, status) VALUES ($1, $2, $3)', [200 + round, 1, 'open']);
    await run(
      b,
      'INSERT INTO orders (id, account_id, status) VALUES ($1, $2, $3) ON CONFLICT (id) DO UPDATE SET status ' +
        '= excluded.status RETURNING id, status',
      [200 + round, 2, 'paid'],
    );
    await run(b, 'UPDATE orders SET status = $1 WHERE id = $2', ['done', 200 + round]);
    await run(b, 'INSERT INTO orders (id, account_id, status) VALUES ($1, $2, $3)', [200 + round, 1, 'dup']);
    await run(b, 'BEGIN');
    await run(b, 'UPDATE lines SET qty = qty + 1 WHERE order_id = $1', [round]);
    await run(b, 'SAVEPOINT s');
    await run(b, 'DELETE FROM lines WHERE order_id = $1 RETURNING id', [round]);
    await run(b, 'ROLLBACK TO SAVEPOINT s');
    await run(b, 'SELECT count(*) AS n FROM lines WHERE order_id = $1', [round]);
    await run(b, 'COMMIT');
    await run(b, 'DELETE FROM orders WHERE id = $1', [200 + round]);
    await run(b, 'BEGIN');
    await run(b, 'SELECT nope FROM accounts');
    await run(b, 'ROLLBACK');
    // prepared statements dropped by the application: the same statements still run
    await run(a, round === 1 ? 'DISCARD ALL' : 'DEALLOCATE ALL');
    await run(a, statements[0].sql, statements[0].values);
    await run(b, round === 1 ? 'DEALLOCATE ALL' : 'DISCARD ALL');
    await run(b, 'select "bal" from "accounts" where "id" = $1', [1]);
  }
  await (a.raw as pg.Client).end();
  await (b.raw as pg.Client).end();
  recorder.finish();
  await setup.end();
  const lines = readFileSync(file, 'utf8')
    .trim()
    .split('\n')
    .map((l) => normalize(JSON.parse(l) as Record<string, unknown>));
  return { results, lines };
}

describe('the same workload recorded by every build (issue 17, item 5)', () => {
  it('gives the same history and the same results as the build before the speed-ups', async () => {
    const got = await record();
    const text = JSON.stringify(got, null, 1);
    if (process.env.ISOCHECK_UPDATE_GOLDEN === '1') writeFileSync(GOLDEN, `${text}\n`);
    const want = JSON.parse(readFileSync(GOLDEN, 'utf8')) as typeof got;
    expect(got.lines.length).toBeGreaterThan(80);
    for (let i = 0; i < Math.max(got.lines.length, want.lines.length); i++)
      expect(got.lines[i], `history line ${i}`).toEqual(want.lines[i]);
    for (let i = 0; i < Math.max(got.results.length, want.results.length); i++)
      expect(got.results[i], `result ${i}`).toEqual(want.results[i]);
  });
});
