// The drop-in driver with real applications: the bank examples (examples/*/app.*) written with kysely, drizzle,
// knex, TypeORM and Sequelize run against an embedded PostgreSQL through recorder.driver(), each given the driver
// in its own one line (PostgresDialect pool, drizzle(pool), knex connectionPool, TypeORM driver, Sequelize
// dialectModule). Histories are consistent at the level run, a REPEATABLE READ run checked as SER shows the write
// skew, and the application's results are those of an unrecorded run with the same seed.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { startEmbedded, type EmbeddedServer } from '../src/db/embedded.js';
import { freshDatabase as freshDb } from './helpers/fresh-database.js';
import { Recorder } from '../src/recorder/index.js';
import { check } from '../src/checker/check-file.js';
import { readHistory } from '../src/history/reader.js';

const root = join(import.meta.dirname, '..');
const require = createRequire(import.meta.url);
/** examples/bank.mjs (plain JavaScript). */
interface Bank {
  runBank(
    app: unknown,
    options: { iso: string; workers: number; txns: number; seed: number },
  ): Promise<{ results: unknown; retries: number }>;
}
interface App {
  close(): Promise<void>;
}
type MakeApp = (driver: unknown, url: string) => App | Promise<App>;

let server: EmbeddedServer;
let admin: pg.Client;
let bank: Bank;
const dir = mkdtempSync(join(tmpdir(), 'isocheck-driver-apps-'));
let runs = 0;

beforeAll(async () => {
  server = await startEmbedded();
  admin = new pg.Client({ connectionString: server.url });
  await admin.connect();
  bank = (await import(join(root, 'examples', 'bank.mjs'))) as Bank;
});

afterAll(async () => {
  await admin?.end().catch(() => undefined);
  await server?.stop();
});

const freshDatabase = (): Promise<string> => freshDb(admin, server.url, 'bank');

async function loadApp(lib: string): Promise<MakeApp> {
  const file = lib === 'kysely' || lib === 'drizzle' ? `app.mjs` : 'app.cjs';
  const path = join(root, 'examples', lib, file);
  const m = (file.endsWith('.cjs') ? require(path) : await import(path)) as { makeApp: MakeApp };
  return m.makeApp;
}

interface Run {
  results: unknown;
  retries: number;
  file?: string;
  warnings: string[];
}

async function runApp(lib: string, iso: string, record: boolean, txns = 12): Promise<Run> {
  const makeApp = await loadApp(lib);
  const url = await freshDatabase();
  const file = join(dir, `${lib}-${iso.replace(' ', '-')}-${++runs}.ndjson`);
  const warnings: string[] = [];
  const recorder = record ? new Recorder({ file, meta: { lib, iso }, onWarning: (m) => warnings.push(m) }) : undefined;
  const driver = recorder ? recorder.driver({ pg, tables: ['accounts'] }) : pg;
  const app = await makeApp(driver, url);
  try {
    const out = await bank.runBank(app, { iso, workers: 4, txns, seed: 7 });
    return { ...out, file: recorder ? file : undefined, warnings };
  } finally {
    await app.close();
    recorder?.finish();
  }
}

const levels = [
  ['serializable', 'SER'],
  ['repeatable read', 'SI'],
] as const;

describe.each(['kysely', 'drizzle', 'knex'])('%s through the drop-in driver', (lib) => {
  for (const [iso, level] of levels) {
    it(
      `${iso}: consistent at ${level}, same results as ` + `unrecorded${level === 'SI' ? ', write skew as SER' : ''}`,
      async () => {
        const [recorded, plain] = [await runApp(lib, iso, true), await runApp(lib, iso, false)];
        expect(recorded.results).toEqual(plain.results);
        const r = recorded.results as { withdrawals: boolean[]; transfers: number; auditTotals: number[] };
        expect(r.withdrawals).toEqual(level === 'SER' ? [true, false] : [true, true]);
        expect(r.auditTotals).toHaveLength(1);
        const h = await readHistory(recorded.file!);
        expect(h.truncated).toBe(false);
        // the seed rows, the two withdrawals, every transfer and audit (and the aborted attempts)
        const committed = h.txns.filter((t) => t.status === 'committed');
        expect(committed.length).toBeGreaterThanOrEqual(1 + 2 + 4 * 12);
        expect(new Set(committed.filter((t) => t.events.length > 0 && t.iso !== 'RC').map((t) => t.iso))).toEqual(
          new Set([level]),
        );
        const own = await check(recorded.file!);
        expect(own.verdict, JSON.stringify(own.anomalies.slice(0, 1))).toBe('consistent');
        if (level === 'SI') {
          const asSer = await check(recorded.file!, { iso: 'SER' });
          expect(asSer.verdict).toBe('inconsistent');
          expect(asSer.anomalies.map((a) => a.type)).toContain('write-skew');
        }
      },
    );
  }
});

describe.each(['typeorm', 'sequelize'])('%s through the drop-in driver', (lib) => {
  it('runs recorded at serializable with no shim, and the history is consistent', async () => {
    const recorded = await runApp(lib, 'serializable', true, 6);
    const r = recorded.results as { withdrawals: boolean[]; auditTotals: number[] };
    expect(r.withdrawals).toEqual([true, false]);
    expect(r.auditTotals).toHaveLength(1);
    const own = await check(recorded.file!);
    expect(own.verdict, JSON.stringify(own.anomalies.slice(0, 1))).toBe('consistent');
  });
});

describe('relations through the drop-in driver (their SQL joins and nests subqueries)', () => {
  it(
    'Sequelize include (with LIMIT: a subquery) and TypeORM relations and query-builder joins are recorded, not ' +
      'refused',
    async () => {
      const url = await freshDatabase();
      const setup = new pg.Client({ connectionString: url });
      await setup.connect();
      await setup.query('CREATE TABLE orders (id int PRIMARY KEY, customer text)');
      await setup.query('CREATE TABLE lines (id int PRIMARY KEY, order_id int REFERENCES orders (id), qty int)');
      await setup.query(`INSERT INTO orders VALUES (1, 'a'), (2, 'b')`);
      await setup.query('INSERT INTO lines VALUES (1, 1, 3), (2, 1, 4), (3, 2, 5)');
      await setup.end();
      const file = join(dir, 'relations.ndjson');
      const recorder = new Recorder({ file, onWarning: () => undefined });
      const driver = recorder.driver({ pg, tables: ['orders', 'lines'] });
      const got: Record<string, unknown> = {};

      const { Sequelize, DataTypes } = require('sequelize') as typeof import('sequelize');
      const s = new Sequelize(url, { dialect: 'postgres', dialectModule: driver, logging: false });
      const Order = s.define(
        'Order',
        { id: { type: DataTypes.INTEGER, primaryKey: true }, customer: DataTypes.TEXT },
        { tableName: 'orders', timestamps: false },
      );
      const Line = s.define(
        'Line',
        { id: { type: DataTypes.INTEGER, primaryKey: true }, qty: DataTypes.INTEGER },
        { tableName: 'lines', timestamps: false },
      );
      Order.hasMany(Line, { foreignKey: 'order_id' });
      got.include = await s.transaction(async (transaction) =>
        (await Order.findAll({ include: Line, transaction, order: [['id', 'ASC']] })).map((o) => o.toJSON()),
      );
      got.includeLimit = (await Order.findAll({ include: Line, limit: 1, order: [['id', 'ASC']] })).map(
        (o) => (o.toJSON() as { Lines: unknown[] }).Lines.length,
      );
      await s.close();

      const { DataSource, EntitySchema } = require('typeorm') as typeof import('typeorm');
      const OrderE = new EntitySchema<{ id: number; customer: string; lines: unknown[] }>({
        name: 'Order',
        tableName: 'orders',
        columns: { id: { type: 'int', primary: true }, customer: { type: 'text' } },
        relations: { lines: { type: 'one-to-many', target: 'Line', inverseSide: 'order' } },
      });
      const LineE = new EntitySchema<{ id: number; qty: number; order: unknown }>({
        name: 'Line',
        tableName: 'lines',
        columns: { id: { type: 'int', primary: true }, qty: { type: 'int' } },
        relations: { order: { type: 'many-to-one', target: 'Order', joinColumn: { name: 'order_id' } } },
      });
      const ds = new DataSource({ type: 'postgres', url, driver, entities: [OrderE, LineE] });
      await ds.initialize();
      got.relations = await ds.transaction('SERIALIZABLE', (m) =>
        m.find(OrderE, { relations: { lines: true }, take: 1, order: { id: 'ASC' } }),
      );
      got.join = (
        await ds
          .getRepository(OrderE)
          .createQueryBuilder('o')
          .leftJoinAndSelect('o.lines', 'l')
          .where('l.qty > :q', { q: 3 })
          .orderBy('o.id')
          .getMany()
      ).map((o) => o.id);
      got.update = (
        await ds
          .createQueryBuilder()
          .update(LineE)
          .set({ qty: () => 'qty + 1' })
          .where('id IN (SELECT id FROM lines WHERE qty > 4)')
          .execute()
      ).affected;
      await ds.destroy();
      recorder.finish();

      expect(got).toEqual({
        include: [
          {
            id: 1,
            customer: 'a',
            Lines: [
              { id: 1, qty: 3, order_id: 1 },
              { id: 2, qty: 4, order_id: 1 },
            ],
          },
          { id: 2, customer: 'b', Lines: [{ id: 3, qty: 5, order_id: 2 }] },
        ],
        includeLimit: [2],
        relations: [
          {
            id: 1,
            customer: 'a',
            lines: [
              { id: 1, qty: 3 },
              { id: 2, qty: 4 },
            ],
          },
        ],
        join: [1, 2],
        update: 1,
      });
      const h = await readHistory(file);
      expect(h.txns.filter((t) => t.status === 'committed').length).toBeGreaterThanOrEqual(5);
      expect(new Set(h.txns.flatMap((t) => t.events.map((e) => e.table)))).toEqual(new Set(['orders', 'lines']));
      expect((await check(file)).verdict).toBe('consistent');
    },
  );
});
