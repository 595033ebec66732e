// The drop-in driver (recorder.driver()) behaves as pg does where libraries depend on it: Pool.connect(callback)
// (TypeORM), pool.query with a callback, query config objects, rowMode 'array', named prepared statements,
// Client.connect() with and without a callback, events, pool counts, the class names drizzle tests; and what
// goes through it is recorded. Tables are instrumented on the first statement once they exist.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { startEmbedded, type EmbeddedServer } from '../src/db/embedded.js';
import { Recorder, RecorderStoppedError } from '../src/recorder/index.js';
import { readHistory } from '../src/history/reader.js';

let server: EmbeddedServer;
let url: string;
const dir = mkdtempSync(join(tmpdir(), 'isocheck-driver-'));
let n = 0;

beforeAll(async () => {
  server = await startEmbedded();
  const admin = new pg.Client({ connectionString: server.url });
  await admin.connect();
  await admin.query('CREATE DATABASE drv');
  await admin.end();
  const u = new URL(server.url);
  u.pathname = '/drv';
  url = u.toString();
});

afterAll(async () => {
  await server?.stop();
});

/** A fresh table t (id, v) and a recorder whose driver instruments it lazily. */
async function fresh(): Promise<{ recorder: Recorder; driver: typeof pg; file: string; table: string }> {
  const table = `t${++n}`;
  const setup = new pg.Client({ connectionString: url });
  await setup.connect();
  await setup.query(`CREATE TABLE ${table} (id int PRIMARY KEY, v text)`);
  await setup.query(`INSERT INTO ${table} VALUES (1, 'a'), (2, 'b')`);
  await setup.end();
  const file = join(dir, `${table}.ndjson`);
  const recorder = new Recorder({ file, onWarning: () => undefined });
  return { recorder, driver: recorder.driver({ pg, tables: [table] }), file, table };
}

describe('recorder.driver()', () => {
  it(
    "has pg's shape: the same types, defaults, escaping and " +
      "errors; classes named Client and Pool that extend pg's",
    async () => {
      const { driver, recorder } = await fresh();
      expect(driver.types).toBe(pg.types);
      expect(driver.defaults).toBe(pg.defaults);
      expect(driver.escapeIdentifier('a"b')).toBe('"a""b"');
      expect(driver.escapeLiteral("it's")).toBe("'it''s'");
      expect(driver.DatabaseError).toBe(pg.DatabaseError);
      expect(driver.Client.name).toBe('Client');
      expect(driver.Pool.name).toBe('Pool');
      const pool = new driver.Pool({ connectionString: url });
      expect(pool).toBeInstanceOf(pg.Pool);
      expect(Object.getPrototypeOf(pool).constructor.name.includes('Pool')).toBe(true); // drizzle's test
      expect(new driver.Client({ connectionString: url })).toBeInstanceOf(pg.Client);
      expect((driver as unknown as { native: unknown }).native).toBeNull();
      expect(() => recorder.driver({ pg: driver })).toThrow(/records already/);
      await pool.end();
      recorder.finish();
    },
  );

  it(
    'Pool: connect(callback), query with a callback, config objects, rowMode, named statements, events and ' + 'counts',
    async () => {
      const { driver, recorder, file, table } = await fresh();
      const pool = new driver.Pool({ connectionString: url, max: 2 });
      const events: string[] = [];
      for (const e of ['connect', 'acquire', 'release']) pool.on(e as 'connect', () => events.push(e));
      pool.on('error', () => undefined);
      // TypeORM's form: connect(callback) with (err, client, release)
      const viaCallback = await new Promise<unknown[]>((resolve, reject) => {
        pool.connect((err, client, release) => {
          if (err || !client) return reject(err);
          client.query(`SELECT v FROM ${table} WHERE id = $1`, [1], (e, r) => {
            release();
            if (e) reject(e);
            else resolve(r.rows);
          });
        });
      });
      expect(viaCallback).toEqual([{ v: 'a' }]);
      expect(pool.totalCount).toBe(1);
      expect(pool.idleCount).toBe(1);
      expect(pool.waitingCount).toBe(0);
      // pool.query with a callback
      const viaPoolCallback = await new Promise((resolve, reject) =>
        pool.query(`SELECT id FROM ${table} ORDER BY id`, (e, r) => (e ? reject(e) : resolve(r.rows))),
      );
      expect(viaPoolCallback).toEqual([{ id: 1 }, { id: 2 }]);
      // a config object with rowMode 'array', and a named prepared statement used twice
      const arr = await pool.query({ text: `SELECT id, v FROM ${table} WHERE id = $1`, values: [2], rowMode: 'array' });
      expect(arr.rows).toEqual([[2, 'b']]);
      expect(arr.fields.map((f) => f.name)).toEqual(['id', 'v']);
      const c = await pool.connect();
      for (const id of [1, 2]) {
        const r = await c.query({
          name: 'by-id',
          text: `UPDATE ${table} SET v = v || 'x' WHERE id = $1 RETURNING v`,
          values: [id],
        });
        expect(r.rowCount).toBe(1);
        expect(r.command).toBe('UPDATE');
      }
      // errors are pg's own
      const err = await c.query(`INSERT INTO ${table} VALUES (1, 'dup')`).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(pg.DatabaseError);
      expect((err as { code: string }).code).toBe('23505');
      c.release();
      expect(events).toContain('connect');
      expect(events).toContain('acquire');
      expect(events).toContain('release');
      await pool.end();
      recorder.finish();
      const h = await readHistory(file);
      const committed = h.txns.filter((t) => t.status === 'committed');
      expect(committed.flatMap((t) => t.events.map((e) => e.op))).toEqual([
        'select',
        'select',
        'select',
        'update',
        'update',
      ]);
      expect((h.txns.find((t) => t.status === 'aborted')?.error as { code?: string } | undefined)?.code).toBe('23505');
      expect(h.init.get(table)!.map((r) => r.row)).toEqual([
        { id: 1, v: 'a' },
        { id: 2, v: 'b' },
      ]);
    },
  );

  it(
    'Client: connect() with and without a callback, transactions, end event; every statement after interrupt() ' +
      'refused',
    async () => {
      const { driver, recorder, file, table } = await fresh();
      const a = new driver.Client({ connectionString: url });
      await new Promise<void>((resolve, reject) => a.connect((e: Error | undefined) => (e ? reject(e) : resolve())));
      const b = new driver.Client({ connectionString: url });
      await b.connect();
      let ended = false;
      b.on('end', () => (ended = true));
      await a.query('BEGIN ISOLATION LEVEL REPEATABLE READ');
      await a.query(`UPDATE ${table} SET v = 'y' WHERE id = 1`);
      await a.query('COMMIT');
      await b.query('BEGIN');
      await b.query(`SELECT * FROM ${table} WHERE id = 1`);
      const stopped = recorder.interrupt('test');
      expect(stopped).toEqual({ unknown: 0, aborted: 1 });
      await expect(b.query('COMMIT')).rejects.toBeInstanceOf(RecorderStoppedError);
      await a.end();
      await b.end();
      expect(ended).toBe(true);
      const h = await readHistory(file);
      expect(h.txns.map((t) => [t.id, t.iso, t.status])).toEqual([
        ['s1.1', 'SI', 'committed'],
        ['s2.1', 'RC', 'aborted'],
      ]);
    },
  );

  it(
    'passes statements through until the tables exist, then records (a transaction begun before stays ' + 'unrecorded)',
    async () => {
      const file = join(dir, 'late.ndjson');
      const recorder = new Recorder({ file, onWarning: () => undefined });
      const driver = recorder.driver({ pg, tables: ['late'] });
      const c1 = new driver.Client({ connectionString: url });
      const c2 = new driver.Client({ connectionString: url });
      await c1.connect();
      await c2.connect();
      await c1.query('DROP TABLE IF EXISTS late');
      // a transaction begun before the tables exist stays unrecorded until it ends
      await c1.query('BEGIN');
      await c1.query('CREATE TABLE late (id int PRIMARY KEY, v int)');
      await c1.query('INSERT INTO late VALUES (1, 1)');
      await c1.query('COMMIT');
      expect(recorder.instrumented).toBe(false);
      await c2.query('BEGIN'); // the tables exist: instrumented first, then recorded
      expect(recorder.instrumented).toBe(true);
      await c2.query('INSERT INTO late VALUES (2, 2)');
      await c2.query('COMMIT');
      expect((await c1.query('SELECT v FROM late ORDER BY id')).rows).toEqual([{ v: 1 }, { v: 2 }]);
      await c1.end();
      await c2.end();
      recorder.finish();
      const h = await readHistory(file);
      expect(h.init.get('late')!.map((r) => r.row)).toEqual([{ id: 1, v: 1 }]);
      expect(h.txns.map((t) => [t.session, t.events.map((e) => e.op)])).toEqual([
        [1, ['insert']],
        [2, ['select']],
      ]);
    },
  );

  it("refuses a table that cannot be recorded with the recorder's error, on every statement", async () => {
    const setup = new pg.Client({ connectionString: url });
    await setup.connect();
    await setup.query('CREATE TABLE nokey (v int)');
    await setup.end();
    const recorder = new Recorder({ file: join(dir, 'nokey.ndjson'), onWarning: () => undefined });
    const pool = new (recorder.driver({ pg, tables: ['nokey'] }).Pool)({ connectionString: url });
    await expect(pool.query('SELECT * FROM nokey')).rejects.toThrow(/primary key|unique/);
    await expect(pool.query('SELECT 1')).rejects.toThrow(/primary key|unique/);
    await pool.end();
    recorder.abandon();
  });
});
