// The bank (../bank.mjs) written with Sequelize (CommonJS).
// Run: DATABASE_URL=postgres://... node examples/sequelize/app.cjs [--iso repeatable-read]
const pg = require('pg');
const { Sequelize, DataTypes, Transaction } = require('sequelize');

const LEVELS = {
  serializable: Transaction.ISOLATION_LEVELS.SERIALIZABLE,
  'repeatable read': Transaction.ISOLATION_LEVELS.REPEATABLE_READ,
};

/** The bank's operations with Sequelize, on connections made by `driver` (pg, or isocheck's recording driver). */
function makeApp(driver, url) {
  const sequelize = new Sequelize(url, {
    dialect: 'postgres',
    dialectModule: driver,
    logging: false,
    pool: { max: 4 },
  });
  const Account = sequelize.define(
    'Account',
    { id: { type: DataTypes.INTEGER, primaryKey: true }, balance: { type: DataTypes.INTEGER, allowNull: false } },
    { tableName: 'accounts', timestamps: false },
  );
  return {
    async setup(accounts, balance) {
      await sequelize.query('DROP TABLE IF EXISTS accounts');
      await sequelize.query('CREATE TABLE accounts (id int PRIMARY KEY, balance int NOT NULL)');
      await Account.bulkCreate(Array.from({ length: accounts }, (_, i) => ({ id: i + 1, balance })));
    },
    transaction: (iso, fn) => sequelize.transaction({ isolationLevel: LEVELS[iso] }, fn),
    balance: (transaction, id) => Account.findByPk(id, { transaction }).then((a) => a.balance),
    pairTotal: (transaction, a, b) => Account.sum('balance', { where: { id: [a, b] }, transaction }),
    total: (transaction) => Account.sum('balance', { transaction }),
    add: (transaction, id, delta) => Account.increment('balance', { by: delta, where: { id }, transaction }),
    balances: () => Account.findAll({ order: [['id', 'ASC']], raw: true }),
    close: () => sequelize.close(),
  };
}

module.exports = { makeApp };

if (require.main === module) import('../bank.mjs').then(({ main }) => main(makeApp, pg));
