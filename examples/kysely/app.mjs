// The bank (../bank.mjs) written with kysely.
// Run: DATABASE_URL=postgres://... node examples/kysely/app.mjs [--iso repeatable-read]
import { resolve } from 'node:path';
import pg from 'pg';
import { Kysely, PostgresDialect, sql } from 'kysely';
import { main } from '../bank.mjs';

/** The bank's operations with kysely, on connections made by `driver` (pg, or isocheck's recording driver). */
export function makeApp(driver, url) {
  const db = new Kysely({ dialect: new PostgresDialect({ pool: new driver.Pool({ connectionString: url, max: 4 }) }) });
  const sum = (q) =>
    q
      .select((eb) => eb.fn.sum('balance').as('total'))
      .executeTakeFirstOrThrow()
      .then((r) => Number(r.total));
  return {
    async setup(accounts, balance) {
      await sql`DROP TABLE IF EXISTS accounts`.execute(db);
      await sql`CREATE TABLE accounts (id int PRIMARY KEY, balance int NOT NULL)`.execute(db);
      await db
        .insertInto('accounts')
        .values(Array.from({ length: accounts }, (_, i) => ({ id: i + 1, balance })))
        .execute();
    },
    transaction: (iso, fn) => db.transaction().setIsolationLevel(iso).execute(fn),
    balance: (tx, id) =>
      tx
        .selectFrom('accounts')
        .select('balance')
        .where('id', '=', id)
        .executeTakeFirstOrThrow()
        .then((r) => r.balance),
    pairTotal: (tx, a, b) => sum(tx.selectFrom('accounts').where('id', 'in', [a, b])),
    total: (tx) => sum(tx.selectFrom('accounts')),
    add: (tx, id, delta) =>
      tx
        .updateTable('accounts')
        .set((eb) => ({ balance: eb('balance', '+', delta) }))
        .where('id', '=', id)
        .execute(),
    balances: () => db.selectFrom('accounts').select(['id', 'balance']).orderBy('id').execute(),
    close: () => db.destroy(),
  };
}

if (resolve(process.argv[1] ?? '') === import.meta.filename) await main(makeApp, pg);
