// The bank (../bank.mjs) written with TypeORM (CommonJS, an EntitySchema: no decorators to compile).
// Run: DATABASE_URL=postgres://... node examples/typeorm/app.cjs [--iso repeatable-read]
const pg = require('pg');
const { DataSource, EntitySchema } = require('typeorm');

const Account = new EntitySchema({
  name: 'Account',
  tableName: 'accounts',
  columns: { id: { type: 'int', primary: true }, balance: { type: 'int' } },
});

const LEVELS = { serializable: 'SERIALIZABLE', 'repeatable read': 'REPEATABLE READ' };

/** The bank's operations with TypeORM, on connections made by `driver` (pg, or isocheck's recording driver). */
async function makeApp(driver, url) {
  const ds = new DataSource({ type: 'postgres', url, driver, entities: [Account], poolSize: 4 });
  await ds.initialize();
  return {
    async setup(accounts, balance) {
      await ds.query('DROP TABLE IF EXISTS accounts');
      await ds.query('CREATE TABLE accounts (id int PRIMARY KEY, balance int NOT NULL)');
      await ds.getRepository(Account).insert(Array.from({ length: accounts }, (_, i) => ({ id: i + 1, balance })));
    },
    transaction: (iso, fn) => ds.transaction(LEVELS[iso], fn),
    balance: (tx, id) => tx.findOneByOrFail(Account, { id }).then((a) => a.balance),
    pairTotal: (tx, a, b) =>
      tx
        .createQueryBuilder(Account, 'a')
        .select('SUM(a.balance)', 'total')
        .where('a.id IN (:...ids)', { ids: [a, b] })
        .getRawOne()
        .then((r) => Number(r.total)),
    total: (tx) => tx.sum(Account, 'balance').then(Number),
    add: (tx, id, delta) => tx.increment(Account, { id }, 'balance', delta),
    balances: () => ds.getRepository(Account).find({ order: { id: 'ASC' } }),
    close: () => ds.destroy(),
  };
}

module.exports = { makeApp };

if (require.main === module) import('../bank.mjs').then(({ main }) => main(makeApp, pg));
