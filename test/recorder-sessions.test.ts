// Sessions and failures: pools, lost connections during COMMIT (unknown), refusals that leave the transaction
// usable, session settings (default isolation, TimeZone, DateStyle), COMMIT AND CHAIN, callbacks.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { startEmbedded, type EmbeddedServer } from '../src/db/embedded.js';
import { openDatabase } from '../src/db/connect.js';
import { Recorder, type RecordingClient } from '../src/recorder/index.js';
import { readHistory } from '../src/history/reader.js';
import type { History, Txn } from '../src/history/history.js';
import type { SelectEvent } from '../src/history/format.js';
import { InputError } from '../src/history/input-errors.js';
import { UnsupportedStatementError } from '../src/recorder/errors.js';
import { checkHistory } from '../src/checker/check.js';
import { loadPredicateParser } from '../src/sql/predicate.js';

let server: EmbeddedServer;
let setup: pg.Client;
let recorder: Recorder;
let history: History;
const file = join(mkdtempSync(join(tmpdir(), 'isocheck-sessions-')), 'run.ndjson');
const raws: pg.Client[] = [];
const warnings: string[] = [];
const seen: Record<string, unknown> = {};

async function connect(): Promise<RecordingClient> {
  const c = new pg.Client({ connectionString: server.url });
  c.on('error', () => undefined); // terminated on purpose below
  await c.connect();
  raws.push(c);
  return recorder.client(c);
}

/** Terminates the backend sleeping in the deferred trigger (a COMMIT in flight). */
async function killSleeper(): Promise<void> {
  for (let i = 0; i < 200; i++) {
    const r = await setup.query(
      `SELECT pg_terminate_backend(pid) AS ok FROM pg_stat_activity WHERE wait_event = 'PgSleep' AND pid <> ` +
        `pg_backend_pid()`,
    );
    if (r.rowCount) return;
    await new Promise((res) => setTimeout(res, 20));
  }
  throw new Error('no COMMIT in flight');
}

beforeAll(async () => {
  server = await startEmbedded();
  setup = new pg.Client({ connectionString: server.url });
  await setup.connect();
  await setup.query(`CREATE TABLE acc (id int4 PRIMARY KEY, v int4 NOT NULL, ts timestamptz)`);
  await setup.query(`INSERT INTO acc SELECT g, 0, '2024-01-01 00:00:00+00' FROM generate_series(1, 4) g`);
  await setup.query(
    `CREATE FUNCTION slow() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN IF NEW.v = 99 THEN PERFORM ` +
      `pg_sleep(30); END IF; RETURN NULL; END $$`,
  );
  await setup.query(
    `CREATE CONSTRAINT TRIGGER slow_commit AFTER INSERT ON acc DEFERRABLE INITIALLY DEFERRED FOR EACH ROW ` +
      `EXECUTE FUNCTION slow()`,
  );
  recorder = new Recorder({ file, onWarning: (m) => warnings.push(m) });
  await recorder.instrument(setup, ['acc']);

  // a pool: each pooled connection is one session; autocommit statements and checked-out transactions
  const pool = recorder.pool(new pg.Pool({ connectionString: server.url, max: 2 }));
  await Promise.all([1, 2, 3, 4].map((id) => pool.query('UPDATE acc SET v = v + 1 WHERE id = $1', [id])));
  const pc = await pool.connect();
  await pc.query('BEGIN');
  seen.pooled = (await pc.query('SELECT v FROM acc WHERE id = $1', [1])).rows;
  await pc.query('COMMIT');
  pc.release();
  seen.poolSessions = pool.totalCount;
  await pool.end();

  // s3: explicit transaction whose COMMIT loses its connection -> unknown, with its events
  const a = await connect();
  await a.query('BEGIN');
  await a.query('UPDATE acc SET v = 10 WHERE id = 1');
  await a.query('INSERT INTO acc VALUES (50, 99)');
  const lost = a.query('COMMIT').catch((e) => e);
  await killSleeper();
  seen.lostCommit = await lost;

  // s4: autocommit write -> BEGIN; INSERT; COMMIT: the lost COMMIT gives unknown with the inserted row
  const b = await connect();
  const lost2 = b.query('INSERT INTO acc VALUES (51, 99)').catch((e) => e);
  await killSleeper();
  seen.lostAuto = await lost2;

  // s5: a refused statement throws before running and leaves the transaction usable; callbacks; chains
  const c = await connect();
  await c.query('BEGIN');
  try {
    await c.query('WITH d AS (DELETE FROM acc WHERE id = 99 RETURNING id) SELECT * FROM d');
  } catch (e) {
    seen.refused = e;
  }
  try {
    // pg's types omit binary
    await c.query({ text: 'SELECT v FROM acc WHERE id = $1', values: [1], binary: true } as pg.QueryConfig);
  } catch (e) {
    seen.binary = e;
  }
  await new Promise<void>((res, rej) =>
    c.query('UPDATE acc SET v = 7 WHERE id = $1', [2], (err) => (err ? rej(err) : res())),
  );
  await c.query('COMMIT AND CHAIN');
  await c.query('SELECT v FROM acc WHERE id = 2');
  await c.query('COMMIT');
  // settings: default level, TimeZone, DateStyle
  await c.query(`SET default_transaction_isolation = 'repeatable read'`);
  await c.query('SELECT v FROM acc WHERE id = 3');
  await c.query(`SET SESSION CHARACTERISTICS AS TRANSACTION ISOLATION LEVEL SERIALIZABLE`);
  await c.query('SELECT v FROM acc WHERE id = 3');
  await c.query(`RESET default_transaction_isolation`);
  await c.query(`SET TimeZone = 'UTC'`);
  await c.query(`SELECT id FROM acc WHERE ts < '2025-01-01'`);
  await c.query(`SET TimeZone = 'Europe/Paris'`);
  await c.query(`SELECT id FROM acc WHERE ts < '2025-01-01'`);
  await c.query(`SET DateStyle = 'SQL, DMY'`);
  try {
    await c.query('SELECT id FROM acc WHERE id = 1');
  } catch (e) {
    seen.dateStyle = e;
  }
  await c.query(`SET DateStyle = 'ISO'`);
  // Sequelize's TimeZone, and the server's rewriting of a numeric zone: both UTC, so the WHERE stays exact
  await c.query(`SET TimeZone = '+00:00'`);
  await c.query(`SELECT id FROM acc WHERE ts < '2025-01-02'`);
  await c.query(`SET TIME ZONE 0`);
  seen.numericZone = (await (c.raw as pg.Client).query('SHOW TimeZone')).rows[0].TimeZone;
  await c.query(`SELECT id FROM acc WHERE ts < '2025-01-03'`);
  // literals inlined (as Sequelize sends them): one warning for the shape, not one per text
  await c.query(`SET TimeZone = 'Europe/Paris'`);
  for (const day of ['2025-02-01', '2025-03-01', '2025-04-01']) await c.query(`SELECT id FROM acc WHERE ts < '${day}'`);
  await c.query(`RESET TimeZone`);

  // s6: the application closes its connection inside a transaction -> aborted
  const d = await connect();
  await d.query('BEGIN');
  await d.query('UPDATE acc SET v = 8 WHERE id = 4');
  await (d.raw as pg.Client).end();
  await new Promise((res) => setTimeout(res, 50));

  recorder.finish();
  history = await readHistory(file);
}, 60_000);

afterAll(async () => {
  await Promise.all(raws.map((r) => r.end().catch(() => undefined)));
  await setup?.end();
  await server?.stop();
});

const bySession = (s: number): Txn[] => history.txns.filter((t) => t.session === s).sort((x, y) => x.seq - y.seq);

describe('sessions', () => {
  it('records a pool with one session per pooled connection', () => {
    expect(seen.poolSessions).toBeLessThanOrEqual(2);
    const pooled = history.txns.filter((t) => t.session <= 2);
    expect(pooled).toHaveLength(5);
    expect(pooled.every((t) => t.status === 'committed')).toBe(true);
    expect(seen.pooled).toEqual([{ v: 1 }]);
  });

  it('gives unknown to a transaction whose COMMIT lost the connection, keeping its events', () => {
    expect((seen.lostCommit as { code?: string }).code).toBe('57P01');
    const [t] = bySession(3);
    expect(t).toMatchObject({ status: 'unknown', iso: 'RC' });
    expect(t.events.map((e) => [e.op, (e as { wid?: string }).wid])).toEqual([
      ['update', 's3.1.1'],
      ['insert', 's3.1.2'],
    ]);
    expect(t).not.toHaveProperty('error');
  });

  it('runs an autocommit write as BEGIN; statement; COMMIT, so a lost COMMIT is unknown with the rows', () => {
    const [t] = bySession(4);
    expect(t).toMatchObject({
      status: 'unknown',
      events: [{ op: 'insert', table: 'acc', wid: 's4.1.1', rows: [{ row: { id: 51, v: 99, ts: null } }] }],
    });
  });

  it('refuses before running, leaving the transaction usable', () => {
    expect(seen.refused).toBeInstanceOf(UnsupportedStatementError);
    expect(seen.refused).toMatchObject({
      sql: 'WITH d AS (DELETE FROM acc WHERE id = 99 RETURNING id) SELECT * FROM d',
    });
    expect((seen.refused as UnsupportedStatementError).reason).toMatch(/data-modifying CTE/);
    expect((seen.refused as UnsupportedStatementError).hint.length).toBeGreaterThan(0);
    expect(seen.binary).toBeInstanceOf(UnsupportedStatementError);
    expect((seen.binary as UnsupportedStatementError).reason).toMatch(/binary/);
    const [t1, t2] = bySession(5);
    expect(t1).toMatchObject({ status: 'committed', events: [{ op: 'update', where: 'id = $1', params: [2] }] });
    expect(t2).toMatchObject({ status: 'committed', iso: 'RC', events: [{ op: 'select' }] }); // COMMIT AND CHAIN
  });

  it('follows the session default isolation level', () => {
    const [, , t3, t4, t5] = bySession(5);
    expect(t3.iso).toBe('SI');
    expect(t4.iso).toBe('SER');
    expect(t5.iso).toBe('RC');
  });

  it('records WHERE on timestamptz exactly only when the session TimeZone is UTC', () => {
    const [, , , , t5, t6] = bySession(5);
    expect(t5.events[0]).toMatchObject({ where: "ts < '2025-01-01'" });
    expect(t5.events[0]).not.toHaveProperty('partial');
    expect(t6.events[0]).toMatchObject({ partial: true });
    expect(t6.events[0]).not.toHaveProperty('where');
    expect(warnings.some((w) => /TimeZone is Europe\/Paris/.test(w))).toBe(true);
  });

  it('takes every spelling of UTC as UTC, and warns once per WHERE shape', () => {
    expect(seen.numericZone).toBe('<+00>-00');
    const reads = history.txns
      .flatMap((t) => t.events)
      .filter((e) => e.op === 'select' && e.table === 'acc') as SelectEvent[];
    for (const day of ['2025-01-02', '2025-01-03']) {
      const e = reads.find((r) => r.op === 'select' && r.where === `ts < '${day}'`);
      expect(e, day).toBeDefined();
      expect(e).not.toHaveProperty('partial');
    }
    expect(reads.filter((r) => r.partial).length).toBe(4);
    expect(warnings.filter((w) => /TimeZone is Europe\/Paris/.test(w))).toHaveLength(1);
  });

  it('refuses to record dates in a non-ISO DateStyle', () => {
    expect(seen.dateStyle).toBeInstanceOf(InputError);
    expect((seen.dateStyle as Error).message).toMatch(/DateStyle/);
  });

  it('records a transaction whose connection was closed before COMMIT as aborted', () => {
    const [t] = bySession(6);
    expect(t).toMatchObject({ status: 'aborted', events: [{ op: 'update' }] });
  });

  it('yields a history the checker accepts', async () => {
    await loadPredicateParser();
    const r = checkHistory(history);
    expect(r.verdict, JSON.stringify(r.anomalies?.slice(0, 2))).toBe('consistent');
  });
});

describe('openDatabase', () => {
  it('uses a given URL and says so (without the password)', async () => {
    const db = await openDatabase({ db: server.url });
    expect(db.embedded).toBe(false);
    expect(db.serverVersionNum).toBeGreaterThanOrEqual(180000);
    expect(db.description).toMatch(/^PostgreSQL 18\.\d+ at 127\.0\.0\.1:\d+\/postgres \(--db\)$/);
    await db.close();
  });

  it('explains a server it cannot reach', async () => {
    await expect(openDatabase({ db: 'postgresql://nobody:x@127.0.0.1:1/none' })).rejects.toThrow(
      /cannot connect to postgresql:\/\/nobody:\*\*\*@127\.0\.0\.1:1\/none \(--db\)/,
    );
  });
});
