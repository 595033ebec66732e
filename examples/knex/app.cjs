// The bank (../bank.mjs) written with knex (CommonJS).
// Run: DATABASE_URL=postgres://... node examples/knex/app.cjs [--iso repeatable-read]
const pg = require('pg');
const knex = require('knex');

/** The bank's operations with knex, on connections made by `driver` (pg, or isocheck's recording driver). */
function makeApp(driver, url) {
  // knex's pg client takes a pg.Pool as `connectionPool`: one made by the driver given
  const pool = new driver.Pool({ connectionString: url, max: 4 });
  const db = knex({ client: 'pg', connectionPool: pool });
  const sum = (q) =>
    q
      .sum({ total: 'balance' })
      .first()
      .then((r) => Number(r.total));
  return {
    async setup(accounts, balance) {
      await db.raw('DROP TABLE IF EXISTS accounts');
      await db.raw('CREATE TABLE accounts (id int PRIMARY KEY, balance int NOT NULL)');
      await db('accounts').insert(Array.from({ length: accounts }, (_, i) => ({ id: i + 1, balance })));
    },
    transaction: (iso, fn) => db.transaction(fn, { isolationLevel: iso }),
    balance: (tx, id) =>
      tx('accounts')
        .select('balance')
        .where({ id })
        .first()
        .then((r) => r.balance),
    pairTotal: (tx, a, b) => sum(tx('accounts').whereIn('id', [a, b])),
    total: (tx) => sum(tx('accounts')),
    add: (tx, id, delta) => tx('accounts').where({ id }).increment('balance', delta),
    balances: () => db('accounts').select('id', 'balance').orderBy('id'),
    close: () => db.destroy().then(() => pool.end()), // knex does not end a pool it was given
  };
}

module.exports = { makeApp };

if (require.main === module) import('../bank.mjs').then(({ main }) => main(makeApp, pg));
