/**
 * SmallBank (BenchBase's smallbank benchmark: SmallBankConstants, SmallBankWorker, procedures Balance,
 * DepositChecking, TransactSavings, Amalgamate, WriteCheck, SendPayment; originally Alomari, Cahill, Fekete and
 * Röhm, "The cost of serializability on platforms that use snapshot isolation", ICDE 2008), over FEW customers
 * so that transactions collide and snapshot isolation shows write skew.
 *
 * Tables: accounts(custid, name), savings(custid, bal, net_external), checking(custid, bal, net_external).
 * Money is numeric(14,2) and every change is done in SQL (`bal = bal + $1`, string parameters) or with exact
 * bigint cents; amounts are BenchBase's (DepositChecking 1.30, TransactSavings 20.20, WriteCheck 5.00,
 * SendPayment 5.00).
 *
 * Transactions (customers uniform among all, two distinct ones where two are needed, as SmallBankWorker):
 * - Balance(name): account by name, savings and checking balance.
 * - DepositChecking(name): account by name, checking += 1.30.
 * - TransactSavings(name): account by name, savings and checking balance; withdraws 20.20 from savings, or
 *   rolls back (RollbackError) when savings would go negative (BenchBase) or when savings + checking would
 *   (added: TransactSavings reads checking too, so it and WriteCheck are the classic write-skew pair: each reads
 *   both balances and writes the other one).
 * - Amalgamate(id0, id1): both accounts, savings and checking of id0; zeroes both, credits their total to
 *   id1's checking (the original SmallBank semantics; BenchBase's current code zeroes checking0 and debits
 *   savings1, which does not conserve money).
 * - WriteCheck(name): account by name, savings and checking; debits 5.00 from checking, or 6.00 (the original's
 *   overdraft penalty of 1.00) when savings + checking < 5.00 (BenchBase debits amount - 1 there).
 * - SendPayment(id0, id1): both accounts, checking of id0; rolls back if it is below 5.00; else moves 5.00
 *   from id0's checking to id1's.
 *
 * With ctx.fixedLockOrder (isocheck run --topology shards), Amalgamate and SendPayment write their rows in one
 * global order (customer id, then savings before checking): across shards no server sees a deadlock.
 *
 * Mix: BenchBase's sample weights Amalgamate 15, Balance 15, DepositChecking 15, SendPayment 25,
 * TransactSavings 15, WriteCheck 15. Configurations: ser, si, rc; ser+rc / si+rc with every transaction that
 * writes (all but Balance) at SER (SI) and Balance at RC.
 *
 * Scale s (integer >= 1): 10 s customers (BenchBase: 1,000,000 at scalefactor 1, i.e. s = 100,000); initial
 * balances uniform in [100.00, 500.00] (BenchBase's 10,000..50,000 divided by 100, so that overdrafts and refused
 * withdrawals happen within short runs). Names are the custid zero-padded to 8 digits.
 *
 * Invariant (checkable from the database alone): every balance row carries `net_external`, the money that came
 * from outside the bank into that row: its opening balance, plus deposits, minus withdrawals, checks and
 * penalties, always changed in the same UPDATE as `bal`. Transfers (SendPayment, Amalgamate) change only `bal`.
 * So sum(bal) = sum(net_external) over savings and checking holds after any run in which transactions behaved
 * atomically and serializably enough to lose no update: it is the conservation of money (a lost update by
 * Amalgamate's `bal = 0` at READ COMMITTED breaks it; PostgreSQL's REPEATABLE READ and SERIALIZABLE abort that
 * update instead). Also: no NULL balance, and every account has exactly one savings and one checking row.
 */
import { join } from 'node:path';
import { mkdir } from 'node:fs/promises';
import { RollbackError, standardConfigs, type Queryable, type Workload, type WorkloadContext } from '../types.js';
import { CsvWriter, loadTables, type TableColumns } from '../lib/csv.js';
import { decimalIn, randInt, rngFor, type Rng } from '../lib/random.js';
import { fromUnits, toUnits } from '../lib/decimal.js';

export interface SmallBankContext extends WorkloadContext {
  customers: number;
}

export const SMALLBANK_TABLES = ['accounts', 'savings', 'checking'] as const;

/** BenchBase's procedure parameters (SmallBankConstants), in cents. */
export const AMOUNTS = {
  depositChecking: 130n,
  transactSavings: 2020n,
  writeCheck: 500n,
  sendPayment: 500n,
  overdraftPenalty: 100n,
};

const COLUMNS: Record<string, TableColumns> = {
  accounts: [
    ['custid', 'int'],
    ['name', 'text'],
  ],
  savings: [
    ['custid', 'int'],
    ['bal', 'numeric'],
    ['net_external', 'numeric'],
  ],
  checking: [
    ['custid', 'int'],
    ['bal', 'numeric'],
    ['net_external', 'numeric'],
  ],
};

const SCHEMA = `
CREATE TABLE accounts (
  custid int         NOT NULL,
  name   varchar(64) NOT NULL,
  PRIMARY KEY (custid)
);
CREATE INDEX idx_accounts_name ON accounts (name);
CREATE TABLE savings (
  custid       int            NOT NULL,
  bal          numeric(14, 2) NOT NULL,
  net_external numeric(14, 2) NOT NULL,
  PRIMARY KEY (custid)
);
CREATE TABLE checking (
  custid       int            NOT NULL,
  bal          numeric(14, 2) NOT NULL,
  net_external numeric(14, 2) NOT NULL,
  PRIMARY KEY (custid)
);
`;

export const SMALLBANK_SQL = {
  getAccountByName: 'SELECT custid, name FROM accounts WHERE name = $1',
  getAccountById: 'SELECT custid, name FROM accounts WHERE custid = $1',
  getSavings: 'SELECT bal FROM savings WHERE custid = $1',
  getChecking: 'SELECT bal FROM checking WHERE custid = $1',
  depositChecking: 'UPDATE checking SET bal = bal + $1, net_external = net_external + $1 WHERE custid = $2',
  withdrawSavings: 'UPDATE savings SET bal = bal - $1, net_external = net_external - $1 WHERE custid = $2',
  writeCheck: 'UPDATE checking SET bal = bal - $1, net_external = net_external - $1 WHERE custid = $2',
  zeroSavings: 'UPDATE savings SET bal = 0 WHERE custid = $1',
  zeroChecking: 'UPDATE checking SET bal = 0 WHERE custid = $1',
  transferChecking: 'UPDATE checking SET bal = bal + $1 WHERE custid = $2',
} as const;

export function smallbankContext(scale: number): SmallBankContext {
  if (!Number.isInteger(scale) || scale < 1) throw new Error(`smallbank scale must be an integer >= 1, got ${scale}`);
  return { scale, customers: 10 * scale };
}

export function customerName(custid: number): string {
  return String(custid).padStart(8, '0');
}

async function generate(dir: string, seed: string, scale: number): Promise<Record<string, string>> {
  const ctx = smallbankContext(scale);
  const w: Record<string, CsvWriter> = {};
  for (const t of SMALLBANK_TABLES) w[t] = new CsvWriter(COLUMNS[t]);
  const rng = rngFor(seed, 'smallbank/accounts');
  for (let id = 0; id < ctx.customers; id++) {
    w.accounts.row([id, customerName(id)]);
    const s = decimalIn(rng, 10000, 50000, 2);
    const c = decimalIn(rng, 10000, 50000, 2);
    w.savings.row([id, s, s]);
    w.checking.row([id, c, c]);
  }
  await mkdir(dir, { recursive: true });
  const files: Record<string, string> = {};
  for (const t of SMALLBANK_TABLES) {
    files[t] = join(dir, `${t}.csv`);
    await w[t].write(files[t]);
  }
  return files;
}

function asContext(ctx: WorkloadContext): SmallBankContext {
  return typeof ctx.customers === 'number' ? (ctx as SmallBankContext) : smallbankContext(ctx.scale);
}

/** One customer id, or two distinct ones (SmallBankWorker.generateCustIds). */
function custIds(rng: Rng, ctx: SmallBankContext, two: boolean): [number, number] {
  const a = randInt(rng, 0, ctx.customers - 1);
  if (!two) return [a, -1];
  if (ctx.customers < 2) throw new Error('smallbank: two customers are needed');
  let b = randInt(rng, 0, ctx.customers - 2);
  if (b >= a) b++;
  return [a, b];
}

async function accountByName(db: Queryable, name: string): Promise<number> {
  const rows = (await db.query(SMALLBANK_SQL.getAccountByName, [name])).rows;
  if (rows.length === 0) throw new RollbackError(`invalid account '${name}'`);
  return Number(rows[0].custid);
}

async function accountById(db: Queryable, id: number): Promise<void> {
  const rows = (await db.query(SMALLBANK_SQL.getAccountById, [id])).rows;
  if (rows.length === 0) throw new RollbackError(`invalid account ${id}`);
}

async function balance(db: Queryable, sql: string, id: number, what: string): Promise<bigint> {
  const rows = (await db.query(sql, [id])).rows;
  if (rows.length === 0) throw new RollbackError(`no ${what} for customer #${id}`);
  return toUnits(rows[0].bal as string);
}

async function run(type: string, db: Queryable, rng: Rng, ctx: SmallBankContext): Promise<void> {
  const S = SMALLBANK_SQL;
  switch (type) {
    case 'Balance': {
      const id = await accountByName(db, customerName(custIds(rng, ctx, false)[0]));
      await balance(db, S.getSavings, id, 'savings');
      await balance(db, S.getChecking, id, 'checking');
      return;
    }
    case 'DepositChecking': {
      const id = await accountByName(db, customerName(custIds(rng, ctx, false)[0]));
      await db.query(S.depositChecking, [fromUnits(AMOUNTS.depositChecking), id]);
      return;
    }
    case 'TransactSavings': {
      const id = await accountByName(db, customerName(custIds(rng, ctx, false)[0]));
      const savings = await balance(db, S.getSavings, id, 'savings');
      const checking = await balance(db, S.getChecking, id, 'checking');
      const amount = AMOUNTS.transactSavings;
      if (savings - amount < 0n) throw new RollbackError(`negative savings balance for customer #${id}`);
      if (savings + checking - amount < 0n) throw new RollbackError(`negative total balance for customer #${id}`);
      await db.query(S.withdrawSavings, [fromUnits(amount), id]);
      return;
    }
    case 'Amalgamate': {
      const [a, b] = custIds(rng, ctx, true);
      await accountById(db, a);
      await accountById(db, b);
      const savings = await balance(db, S.getSavings, a, 'savings');
      const checking = await balance(db, S.getChecking, a, 'checking');
      // ctx.fixedLockOrder (shards): rows locked by (custid, table), the order SendPayment uses too
      const credit = () => db.query(S.transferChecking, [fromUnits(savings + checking), b]);
      if (ctx.fixedLockOrder && b < a) await credit();
      await db.query(S.zeroSavings, [a]);
      await db.query(S.zeroChecking, [a]);
      if (!(ctx.fixedLockOrder && b < a)) await credit();
      return;
    }
    case 'WriteCheck': {
      const id = await accountByName(db, customerName(custIds(rng, ctx, false)[0]));
      const savings = await balance(db, S.getSavings, id, 'savings');
      const checking = await balance(db, S.getChecking, id, 'checking');
      const amount = AMOUNTS.writeCheck;
      const debit = savings + checking < amount ? amount + AMOUNTS.overdraftPenalty : amount;
      await db.query(S.writeCheck, [fromUnits(debit), id]);
      return;
    }
    case 'SendPayment': {
      const [a, b] = custIds(rng, ctx, true);
      await accountById(db, a);
      await accountById(db, b);
      const checking = await balance(db, S.getChecking, a, 'checking');
      const amount = AMOUNTS.sendPayment;
      if (checking < amount) throw new RollbackError(`insufficient checking funds for customer #${a}`);
      const [first, second] =
        ctx.fixedLockOrder && b < a
          ? [
              [amount, b],
              [-amount, a],
            ]
          : [
              [-amount, a],
              [amount, b],
            ];
      await db.query(S.transferChecking, [fromUnits(first[0] as bigint), first[1]]);
      await db.query(S.transferChecking, [fromUnits(second[0] as bigint), second[1]]);
      return;
    }
    default:
      throw new Error(`smallbank: unknown transaction type ${type}`);
  }
}

async function invariants(db: Queryable): Promise<string[]> {
  const out: string[] = [];
  const accounts = (await db.query('SELECT custid FROM accounts')).rows.map((r) => Number(r.custid));
  let bal = 0n;
  let ext = 0n;
  for (const table of ['savings', 'checking']) {
    const rows = (await db.query(`SELECT custid, bal::text AS bal, net_external::text AS ext FROM ${table}`)).rows;
    const seen = new Set<number>();
    for (const r of rows) {
      seen.add(Number(r.custid));
      if (r.bal === null || r.ext === null) {
        out.push(`${table} ${r.custid}: NULL balance`);
        continue;
      }
      bal += toUnits(r.bal as string);
      ext += toUnits(r.ext as string);
    }
    const missing = accounts.filter((id) => !seen.has(id));
    if (missing.length > 0) out.push(`${table}: no row for customers ${missing.join(', ')}`);
    const extra = [...seen].filter((id) => !accounts.includes(id));
    if (extra.length > 0) out.push(`${table}: rows for unknown customers ${extra.join(', ')}`);
  }
  if (bal !== ext) {
    out.push(
      `money not conserved: total balance ${fromUnits(bal)} != opening balances + external ` +
        `flows ${fromUnits(ext)} (difference ${fromUnits(bal - ext)})`,
    );
  }
  return out;
}

export const smallbank: Workload = {
  name: 'smallbank',
  description:
    'SmallBank over few customers: WriteCheck/TransactSavings write skew at SI; money conservation invariant',
  tables: [...SMALLBANK_TABLES],
  schema: () => SCHEMA,
  generate,
  load: (client, files) => loadTables(client, files, COLUMNS),
  readOnly: ['Balance'],
  mix: { Amalgamate: 15, Balance: 15, DepositChecking: 15, SendPayment: 25, TransactSavings: 15, WriteCheck: 15 },
  configs: standardConfigs(['Amalgamate', 'DepositChecking', 'SendPayment', 'TransactSavings', 'WriteCheck']),
  transaction: (type, db, rng, ctx) => run(type, db, rng, asContext(ctx)),
  invariants: (db) => invariants(db),
  context: smallbankContext,
  statements: { ...SMALLBANK_SQL },
};
