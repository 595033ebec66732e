// The five query builders applications use with pg (kysely, drizzle-orm, knex, TypeORM, Sequelize), set up over
// one shop schema without a database connection, so that tests record the SQL each library really generates
// (issue 17: "tests with each library's generated SQL, not hand-written SQL").
//
//   accounts(id int4 PK, name text, bal numeric(10,2))
//   orders(id int4 PK, account_id int4, status text)
//   lines(id int4 PK, order_id int4, product text, qty int4)
import { DummyDriver, Kysely, PostgresAdapter, PostgresIntrospector, PostgresQueryCompiler } from 'kysely';
import knexLib, { type Knex } from 'knex';
import { integer, numeric, pgTable, text } from 'drizzle-orm/pg-core';
import { drizzle } from 'drizzle-orm/node-postgres';
import { DataSource, EntitySchema } from 'typeorm';
import { DataTypes, Op, Sequelize, type ModelStatic, type Model } from 'sequelize';
import { asc, desc, eq, sql } from 'drizzle-orm';

/** One statement as a library would send it to pg: text and values. */
export interface OrmStatement {
  sql: string;
  values: unknown[];
}

export const SHOP_DDL = [
  `CREATE TABLE accounts (id int4 PRIMARY KEY, name text NOT NULL, bal numeric(10,2) NOT NULL DEFAULT 0)`,
  `CREATE TABLE orders (id int4 PRIMARY KEY, account_id int4 NOT NULL, status text NOT NULL)`,
  `CREATE TABLE lines (id int4 PRIMARY KEY, order_id int4 NOT NULL, product text NOT NULL, qty int4 NOT NULL)`,
];

// ---- kysely --------------------------------------------------------------------------------------------------

export interface ShopDb {
  accounts: { id: number; name: string; bal: string };
  orders: { id: number; account_id: number; status: string };
  lines: { id: number; order_id: number; product: string; qty: number };
}

export const kysely = new Kysely<ShopDb>({
  dialect: {
    createAdapter: () => new PostgresAdapter(),
    createDriver: () => new DummyDriver(),
    createIntrospector: (db) => new PostgresIntrospector(db),
    createQueryCompiler: () => new PostgresQueryCompiler(),
  },
});

export function fromKysely(q: { compile(): { sql: string; parameters: readonly unknown[] } }): OrmStatement {
  const c = q.compile();
  return { sql: c.sql, values: [...c.parameters] };
}

// ---- knex ----------------------------------------------------------------------------------------------------

export const knex: Knex = knexLib({ client: 'pg' });

export function fromKnex(q: { toSQL(): { toNative(): { sql: string; bindings: readonly unknown[] } } }): OrmStatement {
  const n = q.toSQL().toNative();
  return { sql: n.sql, values: [...n.bindings] };
}

// ---- drizzle -------------------------------------------------------------------------------------------------

export const dAccounts = pgTable('accounts', {
  id: integer('id').primaryKey(),
  name: text('name').notNull(),
  bal: numeric('bal').notNull(),
});
export const dOrders = pgTable('orders', {
  id: integer('id').primaryKey(),
  accountId: integer('account_id').notNull(),
  status: text('status').notNull(),
});
export const dLines = pgTable('lines', {
  id: integer('id').primaryKey(),
  orderId: integer('order_id').notNull(),
  product: text('product').notNull(),
  qty: integer('qty').notNull(),
});
export const drizzleDb = drizzle.mock({ schema: { dAccounts, dOrders, dLines } });

export function fromDrizzle(q: { toSQL(): { sql: string; params: unknown[] } }): OrmStatement {
  const c = q.toSQL();
  return { sql: c.sql, values: [...c.params] };
}

// ---- TypeORM -------------------------------------------------------------------------------------------------

export const TAccount = new EntitySchema<{ id: number; name: string; bal: string }>({
  name: 'Account',
  tableName: 'accounts',
  columns: {
    id: { type: 'int', primary: true },
    name: { type: 'text' },
    bal: { type: 'numeric', precision: 10, scale: 2 },
  },
});
export const TOrder = new EntitySchema<{ id: number; accountId: number; status: string; lines?: unknown[] }>({
  name: 'Order',
  tableName: 'orders',
  columns: {
    id: { type: 'int', primary: true },
    accountId: { type: 'int', name: 'account_id' },
    status: { type: 'text' },
  },
  relations: { lines: { type: 'one-to-many', target: 'Line', inverseSide: 'order' } },
});
export const TLine = new EntitySchema<{ id: number; orderId: number; product: string; qty: number; order?: unknown }>({
  name: 'Line',
  tableName: 'lines',
  columns: {
    id: { type: 'int', primary: true },
    orderId: { type: 'int', name: 'order_id' },
    product: { type: 'text' },
    qty: { type: 'int' },
  },
  relations: {
    order: { type: 'many-to-one', target: 'Order', joinColumn: { name: 'order_id' }, inverseSide: 'lines' },
  },
});

/** A TypeORM DataSource whose metadata is built without connecting (query builders only). */
export async function typeormOffline(): Promise<DataSource> {
  const ds = new DataSource({ type: 'postgres', entities: [TAccount, TOrder, TLine] });
  await (ds as unknown as { buildMetadatas(): Promise<void> }).buildMetadatas();
  return ds;
}

export function fromTypeorm(q: { getQueryAndParameters(): [string, unknown[]] }): OrmStatement {
  const [sql, values] = q.getQueryAndParameters();
  return { sql, values: [...values] };
}

// ---- Sequelize -----------------------------------------------------------------------------------------------

export interface SequelizeShop {
  sequelize: Sequelize;
  Account: ModelStatic<Model>;
  Order: ModelStatic<Model>;
  Line: ModelStatic<Model>;
  /** Runs `fn` and returns the statements Sequelize sent instead of sending them (each answered with no rows). */
  capture(fn: () => Promise<unknown>): Promise<OrmStatement[]>;
}

/** Sequelize models of the shop; `capture` collects the statements its model methods generate. */
export function sequelizeOffline(): SequelizeShop {
  const sequelize = new Sequelize('postgres://user:pw@127.0.0.1:1/shop', { logging: false });
  const common = { timestamps: false };
  const Account = sequelize.define(
    'Account',
    { id: { type: DataTypes.INTEGER, primaryKey: true }, name: DataTypes.TEXT, bal: DataTypes.DECIMAL(10, 2) },
    { ...common, tableName: 'accounts' },
  );
  const Order = sequelize.define(
    'Order',
    { id: { type: DataTypes.INTEGER, primaryKey: true }, account_id: DataTypes.INTEGER, status: DataTypes.TEXT },
    { ...common, tableName: 'orders' },
  );
  const Line = sequelize.define(
    'Line',
    {
      id: { type: DataTypes.INTEGER, primaryKey: true },
      order_id: DataTypes.INTEGER,
      product: DataTypes.TEXT,
      qty: DataTypes.INTEGER,
    },
    { ...common, tableName: 'lines' },
  );
  Order.hasMany(Line, { foreignKey: 'order_id', as: 'lines' });
  Line.belongsTo(Order, { foreignKey: 'order_id', as: 'order' });
  Account.hasMany(Order, { foreignKey: 'account_id', as: 'orders' });
  const capture = async (fn: () => Promise<unknown>): Promise<OrmStatement[]> => {
    const out: OrmStatement[] = [];
    const s = sequelize as unknown as { query(sql: unknown, options?: { bind?: unknown[] }): Promise<unknown> };
    const original = s.query;
    s.query = async (sql, options) => {
      const q =
        typeof sql === 'string' ? { query: sql, bind: undefined } : (sql as { query: string; bind?: unknown[] });
      out.push({ sql: q.query, values: [...(q.bind ?? options?.bind ?? [])] });
      return [];
    };
    try {
      await fn();
    } finally {
      s.query = original;
    }
    return out;
  };
  return { sequelize, Account, Order, Line, capture };
}

// ---- the statements the tests record ------------------------------------------------------------------------

export interface Labeled extends OrmStatement {
  label: string;
}

/** Reads as the five libraries write them: joins, subqueries, CTEs, UNION, DISTINCT ON, aggregates over joins. */
export async function ormReads(): Promise<Labeled[]> {
  const ds = await typeormOffline();
  const seq = sequelizeOffline();
  const k = kysely;
  const out: Labeled[] = [];
  const add = (label: string, s: OrmStatement | OrmStatement[]): void => {
    for (const x of Array.isArray(s) ? s : [s]) out.push({ label, ...x });
  };
  add(
    'kysely inner join',
    fromKysely(
      k
        .selectFrom('orders')
        .innerJoin('lines', 'lines.order_id', 'orders.id')
        .select(['orders.id', 'orders.status', 'lines.product', 'lines.qty'])
        .where('orders.id', '=', 1)
        .orderBy('lines.id'),
    ),
  );
  add(
    'kysely IN (SELECT)',
    fromKysely(
      k
        .selectFrom('orders')
        .selectAll()
        .where('id', 'in', (eb) => eb.selectFrom('lines').select('order_id').where('qty', '>', 2))
        .orderBy('id'),
    ),
  );
  add(
    'kysely EXISTS',
    fromKysely(
      k
        .selectFrom('orders')
        .selectAll()
        .where((eb) =>
          eb.exists(
            eb
              .selectFrom('lines')
              .select('lines.id')
              .whereRef('lines.order_id', '=', 'orders.id')
              .where('lines.qty', '>', 3),
          ),
        )
        .orderBy('id'),
    ),
  );
  add(
    'kysely WITH',
    fromKysely(
      k
        .with('big', (db) => db.selectFrom('lines').select(['order_id']).where('qty', '>', 2))
        .selectFrom('orders')
        .innerJoin('big', 'big.order_id', 'orders.id')
        .selectAll('orders')
        .orderBy('orders.id'),
    ),
  );
  add(
    'kysely UNION',
    fromKysely(
      k
        .selectFrom('orders')
        .select('id')
        .where('status', '=', 'open')
        .union(k.selectFrom('lines').select('order_id as id').where('qty', '>', 3))
        .orderBy('id'),
    ),
  );
  add(
    'knex join',
    fromKnex(
      knex('orders')
        .join('lines', 'lines.order_id', 'orders.id')
        .select('orders.*', 'lines.qty')
        .where('orders.account_id', 2)
        .orderBy('lines.id'),
    ),
  );
  add(
    'knex whereExists',
    fromKnex(
      knex('orders')
        .whereExists(function () {
          this.select('*').from('lines').whereRaw('lines.order_id = orders.id and lines.qty = 4');
        })
        .orderBy('id'),
    ),
  );
  add(
    'knex sum over join',
    fromKnex(
      knex('orders')
        .join('lines', 'lines.order_id', 'orders.id')
        .select('orders.account_id')
        .sum('lines.qty as total')
        .groupBy('orders.account_id')
        .orderBy('orders.account_id'),
    ),
  );
  add(
    'drizzle left join',
    fromDrizzle(
      drizzleDb
        .select()
        .from(dOrders)
        .leftJoin(dLines, eq(dLines.orderId, dOrders.id))
        .where(eq(dOrders.id, 2))
        .orderBy(asc(dLines.id)),
    ),
  );
  add(
    'drizzle count group by',
    fromDrizzle(
      drizzleDb
        .select({ id: dOrders.id, n: sql<number>`count(${dLines.id})` })
        .from(dOrders)
        .leftJoin(dLines, eq(dLines.orderId, dOrders.id))
        .groupBy(dOrders.id)
        .orderBy(dOrders.id),
    ),
  );
  add(
    'drizzle DISTINCT ON',
    fromDrizzle(
      drizzleDb
        .selectDistinctOn([dLines.orderId])
        .from(dLines)
        .orderBy(dLines.orderId, desc(dLines.qty), asc(dLines.id)),
    ),
  );
  add(
    'typeorm leftJoinAndSelect',
    fromTypeorm(
      ds
        .getRepository('Order')
        .createQueryBuilder('o')
        .leftJoinAndSelect('o.lines', 'l')
        .where('o.id = :id', { id: 3 })
        .orderBy('l.id'),
    ),
  );
  add(
    'typeorm innerJoinAndSelect',
    fromTypeorm(
      ds
        .getRepository('Order')
        .createQueryBuilder('o')
        .innerJoinAndSelect('o.lines', 'l')
        .where('l.qty > :q', { q: 2 })
        .orderBy('o.id')
        .addOrderBy('l.id'),
    ),
  );
  add(
    'sequelize include',
    await seq.capture(() =>
      seq.Order.findAll({
        where: { id: 4 },
        include: [{ model: seq.Line, as: 'lines' }],
        order: [[{ model: seq.Line, as: 'lines' }, 'id', 'ASC']],
      }),
    ),
  );
  add(
    'sequelize include required + limit',
    await seq.capture(() =>
      seq.Order.findAll({
        include: [{ model: seq.Line, as: 'lines', required: true, where: { qty: { [Op.gt]: 2 } } }],
        limit: 2,
        order: [['id', 'ASC']],
      }),
    ),
  );
  add(
    'sequelize include + limit',
    await seq.capture(() =>
      seq.Order.findAll({
        include: [{ model: seq.Line, as: 'lines' }],
        limit: 3,
        order: [
          ['id', 'ASC'],
          [{ model: seq.Line, as: 'lines' }, 'id', 'ASC'],
        ],
      }),
    ),
  );
  return out;
}

/**
 * Writes that read other tables: UPDATE ... FROM, a subquery in SET, DELETE ... IN (SELECT), INSERT ... SELECT, DELETE
 * ... USING.
 */
export function ormWrites(): Labeled[] {
  const k = kysely;
  return [
    {
      label: 'kysely UPDATE ... FROM',
      ...fromKysely(
        k
          .updateTable('accounts')
          .from('orders')
          .set((eb) => ({ bal: eb('accounts.bal', '+', '1') }))
          .whereRef('orders.account_id', '=', 'accounts.id')
          .where('orders.id', '=', 1),
      ),
    },
    {
      label: 'knex UPDATE SET (SELECT)',
      ...fromKnex(
        knex('accounts')
          .update({ name: knex('orders').count('*').where('account_id', knex.raw('accounts.id')) })
          .where('id', 2),
      ),
    },
    {
      label: 'knex DELETE IN (SELECT)',
      ...fromKnex(
        knex('lines').whereIn('order_id', knex('orders').select('id').where('status', 'paid')).where('qty', 1).del(),
      ),
    },
    {
      label: 'kysely INSERT ... SELECT',
      ...fromKysely(
        k
          .insertInto('orders')
          .columns(['id', 'account_id', 'status'])
          .expression((eb) =>
            eb
              .selectFrom('accounts')
              .select((e) => [e('id', '+', 100).as('id'), e.ref('id').as('a'), e.val('new').as('s')])
              .where('bal', '>', '100'),
          ),
      ),
    },
    {
      label: 'kysely DELETE ... USING',
      ...fromKysely(
        k
          .deleteFrom('lines')
          .using('orders')
          .whereRef('orders.id', '=', 'lines.order_id')
          .where('orders.status', '=', 'open')
          .where('lines.qty', '=', 2),
      ),
    },
  ];
}
