// End to end with the SQL the ORMs generate (issue 17): joins, subqueries, CTEs, UNION, DISTINCT ON, aggregates
// over joins, UPDATE ... FROM, a subquery in SET, DELETE ... WHERE IN (SELECT), INSERT ... SELECT, built with
// kysely, knex, drizzle, TypeORM and Sequelize (test/helpers/orm-sql.ts) and run through the Recorder on an
// embedded PostgreSQL 18:
//   1. one at a time, each statement also run unrecorded on the same data first: the application gets exactly
//      what the unrecorded statement returns (rows, columns, rowCount, command);
//   2. four sessions at once at REPEATABLE READ and SERIALIZABLE: the history is consistent at the levels run;
//   3. a write skew through a join at REPEATABLE READ: consistent as run (SI), inconsistent checked as SER.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { startEmbedded, type EmbeddedServer } from '../src/db/embedded.js';
import { Recorder } from '../src/recorder/index.js';
import { readHistory } from '../src/history/reader.js';
import type { History } from '../src/history/history.js';
import type { SelectEvent } from '../src/history/format.js';
import { checkHistory } from '../src/checker/check.js';
import { parseIsoOverride } from '../src/checker/levels.js';
import { loadPredicateParser } from '../src/sql/predicate.js';
import * as O from './helpers/orm-sql.js';

const TABLES = ['accounts', 'orders', 'lines'];
let server: EmbeddedServer;
let setup: pg.Client;
const dir = mkdtempSync(join(tmpdir(), 'isocheck-orm-'));

async function client(): Promise<pg.Client> {
  const c = new pg.Client({ connectionString: server.url });
  c.on('error', () => undefined);
  await c.connect();
  return c;
}

async function reset(): Promise<void> {
  await setup.query(`TRUNCATE accounts, orders, lines`);
  await setup.query(`INSERT INTO accounts SELECT g, 'a' || g, 100 FROM generate_series(1, 4) g`);
  await setup.query(
    `INSERT INTO orders SELECT g, (g - 1) % 4 + 1, CASE WHEN g % 2 = 0 THEN 'paid' ELSE 'open' END FROM ` +
      `generate_series(1, 6) g`,
  );
  await setup.query(`INSERT INTO lines SELECT g, (g - 1) % 6 + 1, 'p' || g, g % 4 + 1 FROM generate_series(1, 12) g`);
}

beforeAll(async () => {
  server = await startEmbedded();
  setup = await client();
  for (const ddl of O.SHOP_DDL) await setup.query(ddl);
  await loadPredicateParser();
}, 60_000);

afterAll(async () => {
  await setup?.end().catch(() => undefined);
  await server?.stop();
});

/**
 * The result as the application sees it; rows sorted when the statement does not order them. The unrecorded run
 * is on the instrumented tables, so its `*` also shows the hidden columns, which the application would not have
 * without the recorder: they are left out of both.
 */
function shape(r: pg.QueryResult, ordered: boolean): unknown {
  const hidden = (name: string) => name.startsWith('_isocheck_');
  const rows = r.rows.map((x) => JSON.stringify(Object.fromEntries(Object.entries(x).filter(([k]) => !hidden(k)))));
  return {
    command: r.command,
    rowCount: r.rowCount,
    fields: r.fields.filter((f) => !hidden(f.name)).map((f) => [f.name, f.dataTypeID]),
    rows: ordered ? rows : rows.sort(),
  };
}

describe('ORM statements through the recorder (issue 17)', () => {
  let history: History;
  const compared: string[] = [];
  const recorded: { label: string; events: number }[] = [];

  beforeAll(async () => {
    await reset();
    const file = join(dir, 'orm.ndjson');
    const recorder = new Recorder({ file, onWarning: () => undefined });
    await recorder.instrument(setup, TABLES);
    const raw = await client();
    const rc = recorder.client(await client());
    // 1. each statement unrecorded, then recorded, on the same data
    for (const s of [...(await O.ormReads()), ...O.ormWrites()]) {
      const ordered = /order by/i.test(s.sql);
      await raw.query('BEGIN');
      const plain = shape(await raw.query(s.sql, s.values), ordered);
      await raw.query('ROLLBACK');
      const mine = shape(await rc.query(s.sql, s.values), ordered);
      expect(mine, `${s.label}: ${s.sql}`).toEqual(plain);
      compared.push(s.label);
    }
    // 2. four sessions at once, REPEATABLE READ and SERIALIZABLE
    const ds = await O.typeormOffline();
    const join1 = (id: number) =>
      O.fromTypeorm(
        ds.getRepository('Order').createQueryBuilder('o').leftJoinAndSelect('o.lines', 'l').where('o.id = :id', { id }),
      );
    const inSub = O.fromKysely(
      O.kysely
        .selectFrom('orders')
        .selectAll()
        .where('id', 'in', (eb) => eb.selectFrom('lines').select('order_id').where('qty', '>', 2)),
    );
    const bump = (ids: number[]) =>
      O.fromKysely(
        O.kysely
          .updateTable('lines')
          .set((eb) => ({ qty: eb('qty', '+', 1) }))
          .where('id', 'in', ids),
      );
    const pay = (order: number) =>
      O.fromKysely(
        O.kysely
          .updateTable('accounts')
          .from('orders')
          .set((eb) => ({ bal: eb('accounts.bal', '-', '1') }))
          .whereRef('orders.account_id', '=', 'accounts.id')
          .where('orders.id', '=', order),
      );
    // one level at a time: PostgreSQL's SERIALIZABLE promises nothing against concurrent REPEATABLE READ
    // transactions (SSI tracks conflicts among serializable ones only), and the checker finds the long forks
    // such a mix allows
    for (const level of ['REPEATABLE READ', 'SERIALIZABLE'])
      await Promise.all(
        [1, 2, 3, 4].map(async (w) => {
          const c = recorder.client(await client());
          for (let i = 0; i < 8; i++) {
            const order = ((w + i) % 6) + 1;
            await c.query(`BEGIN ISOLATION LEVEL ${level}`);
            try {
              for (const s of [join1(order), inSub, bump([order, order + 6]), pay(order)])
                await c.query(s.sql, s.values);
              await c.query('COMMIT');
            } catch (e) {
              if (!['40001', '40P01'].includes((e as { code?: string }).code ?? '')) throw e;
              await c.query('ROLLBACK');
            }
          }
          await (c.raw as pg.Client).end();
        }),
      );
    await raw.end();
    await (rc.raw as pg.Client).end();
    recorder.finish();
    history = await readHistory(file);
    for (const t of history.txns) recorded.push({ label: t.id, events: t.events.length });
  }, 120_000);

  it('gives the application exactly what the unrecorded statement returns, for every library', () => {
    expect(compared).toHaveLength(16 + 5);
  });

  it('records the tables read through joins and subqueries, with their rows', () => {
    const selects = history.txns.flatMap((t) => t.events).filter((e): e is SelectEvent => e.op === 'select');
    const tablesRead = new Set(selects.map((e) => e.table));
    expect(tablesRead).toEqual(new Set(['accounts', 'orders', 'lines']));
    // the TypeORM left join of order 3 read order 3 exactly and its lines (3 and 9) partially
    const typeormLeft = history.txns.find((t) =>
      t.events.some(
        (e) => e.op === 'select' && e.table === 'orders' && e.where === 'id = $1' && JSON.stringify(e.params) === '[3]',
      ),
    );
    expect(typeormLeft).toBeDefined();
    const [o, l] = typeormLeft!.events as SelectEvent[];
    expect(o).toMatchObject({ table: 'orders', where: 'id = $1', params: [3] });
    expect(o.partial).toBeUndefined();
    expect(o.rows.map((r) => r.row.id)).toEqual([3]);
    expect(l).toMatchObject({ table: 'lines', partial: true });
    expect(l.rows.map((r) => r.row.id).sort()).toEqual([3, 9]);
    // every row a recorded statement returned holds every column of its table
    for (const e of selects)
      for (const r of e.rows)
        expect(Object.keys(r.row).length).toBe(
          history.tables.get(e.table)!.columns ? Object.keys(history.tables.get(e.table)!.columns).length : 0,
        );
  });

  it('gives a history consistent at the levels run', () => {
    expect(history.txns.length).toBeGreaterThan(compared.length);
    expect(new Set(history.txns.map((t) => t.iso))).toEqual(new Set(['RC', 'SI', 'SER']));
    const r = checkHistory(history);
    expect(r.verdict, JSON.stringify(r.anomalies?.slice(0, 2), null, 1)).toBe('consistent');
  });
});

describe('a write skew through a join (issue 17)', () => {
  it('is consistent as run at REPEATABLE READ and found when checked as SERIALIZABLE', async () => {
    await reset();
    const file = join(dir, 'skew.ndjson');
    const recorder = new Recorder({ file, onWarning: () => undefined });
    await recorder.instrument(setup, TABLES);
    const ds = await O.typeormOffline();
    // each reads order 1 with its lines (1 and 7) through TypeORM's join, then changes one line: both see the other's
    // line unchanged, so no serial order explains both
    const read = O.fromTypeorm(
      ds
        .getRepository('Order')
        .createQueryBuilder('o')
        .leftJoinAndSelect('o.lines', 'l')
        .where('o.id = :id', { id: 1 }),
    );
    const write = (line: number) => O.fromKnex(O.knex('lines').whereIn('id', [line]).update({ qty: 0 }));
    const [a, b] = [recorder.client(await client()), recorder.client(await client())];
    await a.query('BEGIN ISOLATION LEVEL REPEATABLE READ');
    await b.query('BEGIN ISOLATION LEVEL REPEATABLE READ');
    expect((await a.query(read.sql, read.values)).rowCount).toBe(2);
    expect((await b.query(read.sql, read.values)).rowCount).toBe(2);
    await a.query(write(1).sql, write(1).values);
    await b.query(write(7).sql, write(7).values);
    await a.query('COMMIT');
    await b.query('COMMIT');
    await (a.raw as pg.Client).end();
    await (b.raw as pg.Client).end();
    recorder.finish();
    const h = await readHistory(file);
    const lineReads = h.txns.map((t) => (t.events[1] as SelectEvent).rows.map((r) => [r.row.id, r.wid]));
    expect(lineReads).toEqual([
      [
        [1, 'init'],
        [7, 'init'],
      ],
      [
        [1, 'init'],
        [7, 'init'],
      ],
    ]);
    expect(checkHistory(h).verdict).toBe('consistent');
    const ser = checkHistory(h, { iso: parseIsoOverride('SER') });
    expect(ser.verdict).toBe('inconsistent');
    expect(ser.anomalies.map((x) => x.type)).toContain('write-skew');
  });
});
