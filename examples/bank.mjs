// The bank workload every example runs, whatever library it is written with: accounts with balances, transfers
// between them, and an audit that reads the total, by 4 concurrent workers at one isolation level.
//
// Each example gives an `app` with these operations, written with its library:
//   setup(accounts, balance)        drop and create table accounts (id int PRIMARY KEY, balance int NOT NULL),
//                                   insert the rows
//   transaction(iso, fn)            run fn(tx) in one transaction at iso ('serializable' or 'repeatable read')
//   balance(tx, id) / pairTotal(tx, a, b) / total(tx)   reads (the total: SELECT sum(balance) FROM accounts)
//   add(tx, id, delta)              UPDATE accounts SET balance = balance + delta WHERE id = ...
//   balances()                      every account's balance, by id (after the run)
//   close()
//
// The run (the same seed gives the same results, recorded or not):
// 1. Accounts 1 and 2 are a couple's accounts with overdraft protection: a withdrawal of 150 from either is allowed
//    while the two together hold at least 150. Two workers withdraw at once, one from each, in a fixed order of steps
//    (both read the total, then the first withdraws and commits, then the second). At SERIALIZABLE the second is
//    aborted (40001) and retried, and then sees there is not enough: one withdrawal. At REPEATABLE READ (and READ
//    COMMITTED) both commit: a write skew, and the couple's total goes negative.
// 2. Each of `workers` workers runs `txns` transactions, each a transfer (read the sender's balance, move 1..20
//    between two of the other accounts) or, one time in four, an audit (the total of every balance). A transaction
//    the database aborts (40001, 40P01) is retried. Transfers keep the total, so every audit sees the same total.
//
// Results: which withdrawals happened, every balance, the number of transfers and audits, the totals the audits
// saw. Retries depend on timing and are reported apart.

export const PAIR_WITHDRAWAL = 150;

/** A small seeded generator (mulberry32): the same seed, the same transactions. */
export function rng(seed) {
  let a =
    typeof seed === 'number'
      ? seed >>> 0
      : [...String(seed)].reduce((h, c) => Math.imul(h ^ c.charCodeAt(0), 2654435761) >>> 0, 1779033703);
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** The SQLSTATE of an error, through the wrappers libraries put around pg's (cause, parent, original, driverError). */
export function sqlState(e) {
  for (let x = e, depth = 0; x && depth < 5; depth++) {
    if (typeof x.code === 'string' && /^[0-9A-Z]{5}$/.test(x.code)) return x.code;
    x = x.cause ?? x.parent ?? x.original ?? x.driverError;
  }
  return undefined;
}

const RETRYABLE = new Set(['40001', '40P01']);

function deferred() {
  let resolve;
  const promise = new Promise((r) => (resolve = r));
  return { promise, resolve };
}

export async function runBank(app, { iso = 'serializable', workers = 4, txns = 20, seed = 1, accounts = 8 } = {}) {
  let retries = 0;
  const retry = async (fn) => {
    for (let attempt = 0; ; attempt++) {
      try {
        return await fn();
      } catch (e) {
        if (!RETRYABLE.has(sqlState(e)) || attempt >= 200) throw e;
        retries++;
        await new Promise((r) => setTimeout(r, Math.floor(Math.random() * 3)));
      }
    }
  };

  await app.setup(accounts, 100);

  // 1. the couple's withdrawals, step by step
  const read1 = deferred(),
    read2 = deferred(),
    committed1 = deferred();
  const withdraw = (own, before, after) =>
    retry(() =>
      app.transaction(iso, async (tx) => {
        const total = await app.pairTotal(tx, 1, 2);
        before();
        await after();
        if (total < PAIR_WITHDRAWAL) return false;
        await app.add(tx, own, -PAIR_WITHDRAWAL);
        return true;
      }),
    );
  const first = withdraw(1, read1.resolve, () => read2.promise).finally(committed1.resolve);
  const second = withdraw(2, read2.resolve, () => Promise.all([read1.promise, committed1.promise]));
  const withdrawals = await Promise.all([first, second]);

  // 2. transfers and audits
  let transfers = 0;
  const auditTotals = new Set();
  let audits = 0;
  const worker = async (w) => {
    const random = rng(`${seed}/worker/${w}`);
    for (let i = 0; i < txns; i++) {
      if (random() < 0.25) {
        const total = await retry(() => app.transaction(iso, (tx) => app.total(tx)));
        auditTotals.add(Number(total));
        audits++;
        continue;
      }
      const from = 3 + Math.floor(random() * (accounts - 2));
      let to = 3 + Math.floor(random() * (accounts - 3));
      if (to >= from) to++;
      const amount = 1 + Math.floor(random() * 20);
      await retry(() =>
        app.transaction(iso, async (tx) => {
          await app.balance(tx, from);
          // in key order, so that two transfers wait for each other rather than deadlock
          for (const [id, delta] of from < to
            ? [
                [from, -amount],
                [to, amount],
              ]
            : [
                [to, amount],
                [from, -amount],
              ])
            await app.add(tx, id, delta);
        }),
      );
      transfers++;
    }
  };
  await Promise.all(Array.from({ length: workers }, (_, w) => worker(w + 1)));
  const balances = (await app.balances()).map((r) => [Number(r.id), Number(r.balance)]);
  return {
    results: { withdrawals, balances, transfers, audits, auditTotals: [...auditTotals].sort((a, b) => a - b) },
    retries,
  };
}

/**
 * The command line of every example: `node app.mjs [--iso serializable|repeatable-read|read-committed] [--workers 4]
 * [--txns 20] [--seed 1]`.
 */
export function options(argv = process.argv.slice(2)) {
  const o = { iso: 'serializable', workers: 4, txns: 20, seed: '1' };
  for (let i = 0; i < argv.length; i += 2) {
    const key = argv[i].replace(/^--/, '');
    if (!(key in o)) throw new Error(`unknown option ${argv[i]} (use --iso, --workers, --txns, --seed)`);
    o[key] = key === 'iso' || key === 'seed' ? argv[i + 1] : Number(argv[i + 1]);
  }
  o.iso = o.iso.replace(/-/g, ' ').toLowerCase();
  if (!['serializable', 'repeatable read', 'read committed'].includes(o.iso))
    throw new Error(`--iso ${o.iso}: serializable, repeatable-read or read-committed`);
  return o;
}

/** The database the examples use: DATABASE_URL (or pg's PG* variables when it is not set). */
export function databaseUrl() {
  return process.env.DATABASE_URL;
}

/**
 * Runs an example from its command line and prints its results as JSON. With BANK_RECORD=FILE it records the run
 * through isocheck's drop-in driver (the one line of glue below); `isocheck record -- node app.mjs` records it
 * with no change at all.
 */
export async function main(makeApp, pg) {
  const o = options();
  const file = process.env.BANK_RECORD;
  const recorder = file
    ? new (await import('isocheck/recorder')).Recorder({ file, meta: { app: 'bank', ...o } })
    : undefined;
  const driver = recorder ? recorder.driver({ pg, tables: ['accounts'] }) : pg; // the one line of glue
  const app = await makeApp(driver, databaseUrl());
  try {
    const { results, retries } = await runBank(app, o);
    console.log(JSON.stringify(results));
    console.error(
      `${o.workers} workers × ${o.txns} transactions at ${o.iso}: ${results.transfers} ` +
        `transfers, ${results.audits} audits, ${retries} retries`,
    );
  } finally {
    await app.close();
    recorder?.finish();
  }
}
