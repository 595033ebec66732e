// End to end: transactions on two connections of an embedded PostgreSQL 18 go through RecordingClient; the file
// is read back with readHistory and every event, row and wid is checked, as is what the application received.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { startEmbedded, type EmbeddedServer } from '../src/db/embedded.js';
import { Recorder, type RecordingClient } from '../src/recorder/index.js';
import { readHistory } from '../src/history/reader.js';
import type { History } from '../src/history/history.js';
import { checkHistory } from '../src/checker/check.js';
import { loadPredicateParser } from '../src/sql/predicate.js';

let server: EmbeddedServer;
let setup: pg.Client;
let p1: pg.Client;
let p2: pg.Client;
let c1: RecordingClient;
let c2: RecordingClient;
let recorder: Recorder;
let history: History;
const warnings: string[] = [];
const file = join(mkdtempSync(join(tmpdir(), 'isocheck-rec-')), 'run.ndjson');
const seen: Record<string, unknown> = {};

async function expectError(p: Promise<unknown>, code: string): Promise<Error & { code?: string }> {
  try {
    await p;
  } catch (e) {
    expect((e as { code?: string }).code).toBe(code);
    return e as Error & { code?: string };
  }
  throw new Error(`expected an error ${code}`);
}

beforeAll(async () => {
  server = await startEmbedded();
  setup = new pg.Client({ connectionString: server.url });
  await setup.connect();
  await setup.query(
    `CREATE TABLE accounts (id int4 PRIMARY KEY, name text NOT NULL, bal numeric(10,2) NOT NULL DEFAULT 0)`,
  );
  await setup.query(`INSERT INTO accounts VALUES (1, 'a', 100), (2, 'b', 50.5), (3, 'c', 0)`);
  await setup.query(`CREATE TABLE items (k int8 PRIMARY KEY, flag bool, f float8, d date, ts timestamptz, n int2)`);
  await setup.query(
    `INSERT INTO items VALUES (9007199254740993, true, 0.1, '2024-02-29', '2024-01-01 10:00:00.5+00', 7), (2, ` +
      `NULL, 'NaN', NULL, NULL, NULL)`,
  );
  await setup.query(`SET TimeZone = 'UTC'`);
  recorder = new Recorder({ file, meta: { test: 'e2e' }, onWarning: (m) => warnings.push(m) });
  const inst = await recorder.instrument(setup, ['accounts', 'items']);
  expect(inst.instrumented).toEqual(['accounts', 'items']);
  p1 = new pg.Client({ connectionString: server.url });
  p2 = new pg.Client({ connectionString: server.url });
  await p1.connect();
  await p2.connect();
  c1 = recorder.client(p1);
  c2 = recorder.client(p2);

  // s1.1: point select, application sees exactly its columns
  await c1.query('BEGIN');
  const r1 = await c1.query('SELECT * FROM accounts WHERE id = $1', [1]);
  seen.r1 = { rows: r1.rows, fields: r1.fields.map((f) => f.name), rowCount: r1.rowCount, command: r1.command };
  await c1.query('COMMIT');

  // s1.2: multi-row insert, update of an own row, delete with RETURNING
  c1.label('Open');
  await c1.query('BEGIN ISOLATION LEVEL REPEATABLE READ');
  const ins = await c1.query(`INSERT INTO accounts VALUES (10, 'j', '5.00'), (11, 'k', 6)`);
  seen.ins = { rows: ins.rows, fields: ins.fields, rowCount: ins.rowCount, command: ins.command };
  await c1.query('UPDATE accounts SET bal = bal + 1 WHERE id = $1', [10]);
  const del = await c1.query('DELETE FROM accounts WHERE id = 2 RETURNING name');
  seen.del = { rows: del.rows, fields: del.fields.map((f) => f.name) };
  await c1.query('COMMIT');

  // s2.1: autocommit upsert, one conflicting row (update) and one new row (insert)
  const up = await c2.query(
    `INSERT INTO accounts (id, name, bal) VALUES (1, 'a', '7.00'), (12, 'l', '1.00') ON CONFLICT (id) DO ` +
      `UPDATE SET bal = excluded.bal RETURNING id, bal`,
  );
  seen.up = { rows: up.rows, fields: up.fields.map((f) => f.name) };

  // s2.2: aggregate, shaped like PostgreSQL's own result
  const agg = await c2.query('SELECT count(*) AS n, sum(bal) FROM accounts WHERE bal > $1', ['0']);
  seen.agg = { rows: agg.rows, fields: agg.fields.map((f) => [f.name, f.dataTypeID]), rowCount: agg.rowCount };

  // s2.3: LIMIT -> partial; array row mode
  const lim = await c2.query({ text: 'SELECT name FROM accounts ORDER BY id LIMIT 2', rowMode: 'array' });
  seen.lim = lim.rows;

  // s1.3: an error aborts the transaction with its SQLSTATE; the application gets the original error
  await c1.query('BEGIN');
  await c1.query('SELECT id FROM accounts WHERE id = 3');
  const dup = await expectError(c1.query(`INSERT INTO accounts VALUES (1, 'dup', 0)`), '23505');
  seen.dup = { name: dup.constructor.name, constraint: (dup as { constraint?: string }).constraint };
  await expectError(c1.query('SELECT 1'), '25P02');
  await c1.query('ROLLBACK');

  // s1.4 / s2.4: write skew at SERIALIZABLE -> one of them fails with 40001
  await c1.query('BEGIN ISOLATION LEVEL SERIALIZABLE');
  await c2.query('BEGIN ISOLATION LEVEL SERIALIZABLE');
  await c1.query('SELECT sum(bal) FROM accounts WHERE id IN (10, 11)');
  await c2.query('SELECT sum(bal) FROM accounts WHERE id IN (10, 11)');
  await c1.query('UPDATE accounts SET bal = 0 WHERE id = 10');
  await c2.query('UPDATE accounts SET bal = 0 WHERE id = 11');
  await c1.query('COMMIT');
  await expectError(c2.query('COMMIT'), '40001');

  // s2.5: declared level and savepoints (the rolled-back insert is not an event)
  c2.declareLevel('SER');
  await c2.query('BEGIN');
  await c2.query(`INSERT INTO accounts VALUES (20, 'x', 0)`);
  await c2.query('SAVEPOINT a');
  await c2.query(`INSERT INTO accounts VALUES (21, 'y', 0)`);
  await c2.query('ROLLBACK TO SAVEPOINT a');
  await c2.query(`INSERT INTO accounts VALUES (22, 'z', 0)`);
  await c2.query('COMMIT');

  // s1.5: values of every type, exact; a WHERE the checker cannot evaluate -> partial
  const it1 = await c1.query('SELECT k, flag, f, d, ts, n FROM items WHERE k = $1', ['9007199254740993']);
  seen.items = it1.rows;
  await c1.query(`SELECT k FROM items WHERE ts < now()`);

  recorder.finish();
  history = await readHistory(file);
}, 60_000);

afterAll(async () => {
  await Promise.all([p1?.end(), p2?.end(), setup?.end()].map((p) => p?.catch(() => undefined)));
  await server?.stop();
});

const txn = (id: string) => {
  const t = history.txns.find((x) => x.id === id);
  if (!t) throw new Error(`no txn ${id}`);
  return t;
};

describe('recorder end to end (PostgreSQL 18)', () => {
  it('writes header, tables and exact initial values', () => {
    expect(history.truncated).toBe(false);
    expect([...history.tables.values()].map((t) => [t.name, t.key, t.columns])).toEqual([
      ['accounts', ['id'], { id: 'int4', name: 'text', bal: 'numeric' }],
      ['items', ['k'], { k: 'int8', flag: 'bool', f: 'float8', d: 'date', ts: 'timestamptz', n: 'int2' }],
    ]);
    expect(history.init.get('accounts')!.map((r) => r.row)).toEqual([
      { id: 1, name: 'a', bal: '100.00' },
      { id: 2, name: 'b', bal: '50.50' },
      { id: 3, name: 'c', bal: '0.00' },
    ]);
    expect(history.init.get('items')!.map((r) => r.row)).toEqual([
      { k: '2', flag: null, f: 'NaN', d: null, ts: null, n: null },
      { k: '9007199254740993', flag: true, f: 0.1, d: '2024-02-29', ts: '2024-01-01 10:00:00.5+00', n: 7 },
    ]);
  });

  it('gives the application exactly what it asked for', () => {
    expect(seen.r1).toEqual({
      rows: [{ id: 1, name: 'a', bal: '100.00' }],
      fields: ['id', 'name', 'bal'],
      rowCount: 1,
      command: 'SELECT',
    });
    expect(seen.ins).toEqual({ rows: [], fields: [], rowCount: 2, command: 'INSERT' });
    expect(seen.del).toEqual({ rows: [{ name: 'b' }], fields: ['name'] });
    expect(seen.up).toEqual({
      rows: [
        { id: 1, bal: '7.00' },
        { id: 12, bal: '1.00' },
      ],
      fields: ['id', 'bal'],
    });
    expect(seen.agg).toEqual({
      rows: [{ n: '4', sum: '20.00' }],
      fields: [
        ['n', 20],
        ['sum', 1700],
      ],
      rowCount: 1,
    });
    expect(seen.lim).toEqual([['a'], ['c']]);
    expect(seen.dup).toEqual({ name: 'DatabaseError', constraint: 'accounts_pkey' });
    const items = seen.items as Record<string, unknown>[];
    expect(items[0].k).toBe('9007199254740993');
    expect(items[0].d).toBeInstanceOf(Date); // the application's own (default) parsers
    expect(items[0].flag).toBe(true);
  });

  it('records the point select', () => {
    const t = txn('s1.1');
    expect(t).toMatchObject({ session: 1, seq: 1, iso: 'RC', status: 'committed' });
    expect(t.events).toEqual([
      {
        op: 'select',
        table: 'accounts',
        where: 'id = $1',
        params: [1],
        rows: [{ wid: 'init', row: { id: 1, name: 'a', bal: '100.00' } }],
      },
    ]);
  });

  it('records inserts, updates of own rows and deletes with their wids', () => {
    const t = txn('s1.2');
    expect(t).toMatchObject({ iso: 'SI', status: 'committed', label: 'Open' });
    expect(t.events).toEqual([
      {
        op: 'insert',
        table: 'accounts',
        wid: 's1.2.1',
        rows: [{ row: { id: 10, name: 'j', bal: '5.00' } }, { row: { id: 11, name: 'k', bal: '6.00' } }],
      },
      {
        op: 'update',
        table: 'accounts',
        where: 'id = $1',
        params: [10],
        wid: 's1.2.2',
        rows: [{ read: 's1.2.1', row: { id: 10, name: 'j', bal: '6.00' } }],
      },
      { op: 'delete', table: 'accounts', where: 'id = 2', wid: 's1.2.3', rows: [{ read: 'init', key: [2] }] },
    ]);
  });

  it('records ON CONFLICT DO UPDATE as an insert and a partial update with its own wid', () => {
    const t = txn('s2.1');
    expect(t).toMatchObject({ iso: 'RC', status: 'committed' });
    expect(t.events).toEqual([
      { op: 'insert', table: 'accounts', wid: 's2.1.1', rows: [{ row: { id: 12, name: 'l', bal: '1.00' } }] },
      {
        op: 'update',
        table: 'accounts',
        partial: true,
        wid: 's2.1.1u',
        rows: [{ read: 'init', row: { id: 1, name: 'a', bal: '7.00' } }],
      },
    ]);
  });

  it('records the rows an aggregate read', () => {
    const e = txn('s2.2').events[0];
    expect(e).toMatchObject({ op: 'select', table: 'accounts', where: 'bal > $1', params: ['0'] });
    expect(e).not.toHaveProperty('partial');
    const rows = (e as unknown as { rows: { wid: string; row: { id: number } }[] }).rows
      .map((r) => [r.row.id, r.wid])
      .sort((a, b) => Number(a[0]) - Number(b[0]));
    expect(rows).toEqual([
      [1, 's2.1.1u'],
      [10, 's1.2.2'],
      [11, 's1.2.1'],
      [12, 's2.1.1'],
    ]);
  });

  it('marks LIMIT reads partial', () => {
    expect(txn('s2.3').events).toEqual([
      {
        op: 'select',
        table: 'accounts',
        partial: true,
        rows: [
          { wid: 's2.1.1u', row: { id: 1, name: 'a', bal: '7.00' } },
          { wid: 'init', row: { id: 3, name: 'c', bal: '0.00' } },
        ],
      },
    ]);
  });

  it('records an error as an aborted transaction with its SQLSTATE', () => {
    const t = txn('s1.3');
    expect(t).toMatchObject({ status: 'aborted', error: { code: '23505' } });
    expect(t.events.map((e) => e.op)).toEqual(['select']);
  });

  it('records a serialization failure as an ordinary abort (40001)', () => {
    expect(txn('s1.4')).toMatchObject({ iso: 'SER', status: 'committed' });
    const t = txn('s2.4');
    expect(t).toMatchObject({ iso: 'SER', status: 'aborted', error: { code: '40001' } });
    expect(t.events.map((e) => e.op)).toEqual(['select', 'update']);
  });

  it('drops events rolled back to a savepoint and records the declared level', () => {
    const t = txn('s2.5');
    expect(t).toMatchObject({ iso: 'SER', status: 'committed' });
    expect(t.events).toEqual([
      { op: 'insert', table: 'accounts', wid: 's2.5.1', rows: [{ row: { id: 20, name: 'x', bal: '0.00' } }] },
      { op: 'insert', table: 'accounts', wid: 's2.5.5', rows: [{ row: { id: 22, name: 'z', bal: '0.00' } }] },
    ]);
  });

  it('marks a WHERE the checker cannot evaluate partial, and warns once', () => {
    const t = txn('s1.6');
    // recorded without its WHERE: the checker compiles every WHERE it is given
    expect(t.events[0]).toMatchObject({ op: 'select', table: 'items', partial: true });
    expect(t.events[0]).not.toHaveProperty('where');
    expect(t.events[0].rows).toHaveLength(1);
    expect(warnings.some((w) => w.includes('ts < now()'))).toBe(true);
    expect(txn('s1.5').events[0]).toEqual({
      op: 'select',
      table: 'items',
      where: 'k = $1',
      params: ['9007199254740993'],
      rows: [
        {
          wid: 'init',
          row: { k: '9007199254740993', flag: true, f: 0.1, d: '2024-02-29', ts: '2024-01-01 10:00:00.5+00', n: 7 },
        },
      ],
    });
  });

  it('gives a history the checker finds consistent', async () => {
    await loadPredicateParser();
    const r = checkHistory(history);
    expect(r.verdict, JSON.stringify(r.anomalies?.slice(0, 2), null, 1)).toBe('consistent');
  });
});

describe('recorder and user-chosen names', () => {
  it('records columns named like Object.prototype properties (__proto__, constructor, toString)', async () => {
    await loadPredicateParser();
    const admin = new pg.Client({ connectionString: server.url });
    await admin.connect();
    try {
      await admin.query(`CREATE TABLE odd ("__proto__" int4 PRIMARY KEY, "constructor" text, "toString" int4)`);
      await admin.query(`INSERT INTO odd VALUES (1, 'a', 10)`);
      const f = join(mkdtempSync(join(tmpdir(), 'isocheck-rec-odd-')), 'odd.ndjson');
      const rec = new Recorder({ file: f, onWarning: () => undefined });
      await rec.instrument(admin, ['odd']);
      const raw = new pg.Client({ connectionString: server.url });
      await raw.connect();
      const c = rec.client(raw);
      await c.query('BEGIN');
      await c.query(`SELECT "constructor" FROM odd WHERE "__proto__" = $1`, [1]);
      await c.query(`UPDATE odd SET "toString" = "toString" + 1 WHERE "__proto__" = $1`, [1]);
      await c.query(`INSERT INTO odd VALUES (2, 'b', 20)`);
      await c.query('COMMIT');
      await raw.end();
      rec.finish();
      const h = await readHistory(f);
      const schema = h.tables.get('odd')!;
      expect(Object.keys(schema.columns).sort()).toEqual(['__proto__', 'constructor', 'toString']);
      expect(schema.key).toEqual(['__proto__']);
      expect(Object.keys(h.init.get('odd')![0].row).sort()).toEqual(['__proto__', 'constructor', 'toString']);
      const [t] = h.txns;
      expect(t.events.map((e) => e.op)).toEqual(['select', 'update', 'insert']);
      expect(Object.hasOwn((t.events[1] as { rows: { row: object }[] }).rows[0].row, '__proto__')).toBe(true);
      expect(checkHistory(h).verdict).toBe('consistent');
    } finally {
      await admin.end();
    }
  });
});

describe('recorder and values whose cast to text is not their output', () => {
  it('records char(n) with its padding, inet without /32, however the read is traced (row, json, UNION)', async () => {
    const admin = new pg.Client({ connectionString: server.url });
    await admin.connect();
    try {
      await admin.query(`CREATE TABLE padded (id int4 PRIMARY KEY, c char(4), ip inet)`);
      await admin.query(`CREATE TABLE other (id int4 PRIMARY KEY)`);
      await admin.query(`INSERT INTO other VALUES (1)`);
      const f = join(mkdtempSync(join(tmpdir(), 'isocheck-rec-padded-')), 'padded.ndjson');
      const rec = new Recorder({ file: f, onWarning: () => undefined });
      await rec.instrument(admin, ['padded', 'other']);
      const raw = new pg.Client({ connectionString: server.url });
      await raw.connect();
      const c = rec.client(raw);
      await c.query(`INSERT INTO padded VALUES (1, 'ab', '10.0.0.1/32'), (2, NULL, NULL)`);
      // (COPY ... TO STDOUT is recorded through the proxy, which takes its rows; pg's query() has none to give)
      await expect(c.query('COPY padded TO STDOUT')).rejects.toThrow(/recorded only through isocheck proxy/);
      await c.query('BEGIN ISOLATION LEVEL REPEATABLE READ');
      await c.query(`SELECT c, ip FROM padded WHERE id = 1`); // row form
      await c.query(`SELECT (SELECT max(c) FROM padded) AS m FROM other`); // json form (a closed subquery)
      await c.query(`SELECT count(*) FROM padded`); // json form (an aggregate)
      await c.query(`SELECT id FROM padded UNION ALL SELECT id FROM other`); // cast to text in a set operation
      await c.query('COMMIT');
      await raw.end();
      rec.finish();
      const h = await readHistory(f);
      const [write, read] = h.txns;
      expect((write.events[0] as { rows: { row: object }[] }).rows.map((r) => r.row)).toEqual([
        { id: 1, c: 'ab  ', ip: '10.0.0.1' },
        { id: 2, c: null, ip: null },
      ]);
      const seen = read.events.filter((e) => e.table === 'padded') as { rows: { row: Record<string, unknown> }[] }[];
      expect(seen).toHaveLength(4);
      for (const e of seen) {
        for (const r of e.rows)
          expect([r.row.c, r.row.ip]).toEqual(r.row.id === 1 ? ['ab  ', '10.0.0.1'] : [null, null]);
      }
      expect(seen.slice(2).map((e) => e.rows.length)).toEqual([2, 2]);
      expect(checkHistory(h).verdict).toBe('consistent');
    } finally {
      await admin.end();
    }
  });
});
