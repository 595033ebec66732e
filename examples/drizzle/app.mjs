// The bank (../bank.mjs) written with drizzle-orm.
// Run: DATABASE_URL=postgres://... node examples/drizzle/app.mjs [--iso repeatable-read]
import { resolve } from 'node:path';
import pg from 'pg';
import { drizzle } from 'drizzle-orm/node-postgres';
import { pgTable, integer } from 'drizzle-orm/pg-core';
import { asc, eq, inArray, sql, sum } from 'drizzle-orm';
import { main } from '../bank.mjs';

const accounts = pgTable('accounts', { id: integer('id').primaryKey(), balance: integer('balance').notNull() });

/** The bank's operations with drizzle, on connections made by `driver` (pg, or isocheck's recording driver). */
export function makeApp(driver, url) {
  const pool = new driver.Pool({ connectionString: url, max: 4 });
  const db = drizzle(pool);
  const total = (q) => q.then((r) => Number(r[0].total));
  return {
    async setup(n, balance) {
      await db.execute(sql`DROP TABLE IF EXISTS accounts`);
      await db.execute(sql`CREATE TABLE accounts (id int PRIMARY KEY, balance int NOT NULL)`);
      await db.insert(accounts).values(Array.from({ length: n }, (_, i) => ({ id: i + 1, balance })));
    },
    transaction: (iso, fn) => db.transaction(fn, { isolationLevel: iso }),
    balance: (tx, id) =>
      tx
        .select({ balance: accounts.balance })
        .from(accounts)
        .where(eq(accounts.id, id))
        .then((r) => r[0].balance),
    pairTotal: (tx, a, b) =>
      total(
        tx
          .select({ total: sum(accounts.balance) })
          .from(accounts)
          .where(inArray(accounts.id, [a, b])),
      ),
    total: (tx) => total(tx.select({ total: sum(accounts.balance) }).from(accounts)),
    add: (tx, id, delta) =>
      tx
        .update(accounts)
        .set({ balance: sql`${accounts.balance} + ${delta}` })
        .where(eq(accounts.id, id)),
    balances: () => db.select().from(accounts).orderBy(asc(accounts.id)),
    close: () => pool.end(),
  };
}

if (resolve(process.argv[1] ?? '') === import.meta.filename) await main(makeApp, pg);
