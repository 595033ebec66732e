// Workloads (workloads/): every workload's data generation is deterministic, its CSVs load, its transactions run
// (sequentially at SERIALIZABLE, ~30 of each type, and 3 concurrent clients x 10 transactions at mixed levels) on
// an embedded PostgreSQL, its invariants hold afterwards, and every statement its transactions send is one of its
// declared statements, over ONE table (no join, subquery or WITH: the recorder needs single-table statements).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import seedrandom from 'seedrandom';
import { startEmbedded, type EmbeddedServer } from '../src/db/embedded.js';
import {
  RollbackError,
  beginStatement,
  getWorkload,
  levelFor,
  pickType,
  workloadNames,
  workloads,
  type Level,
  type Queryable,
  type Workload,
  type WorkloadContext,
} from '../workloads/index.js';
import { fromUnits, sumDecimals, toUnits } from '../workloads/lib/decimal.js';
import { CsvWriter, readCsv } from '../workloads/lib/csv.js';
import { tpccContext } from '../workloads/tpcc/index.js';

const SEED = 'isocheck-workloads-1';
const PER_TYPE = 30;
const CLIENTS = 3;
const PER_CLIENT = 10;

let server: EmbeddedServer | undefined;
let admin: pg.Client;

const url = (db: string): string => {
  const u = new URL(server!.url);
  u.pathname = `/${db}`;
  return u.toString();
};

async function connect(db: string): Promise<pg.Client> {
  const c = new pg.Client({ connectionString: url(db) });
  await c.connect();
  return c;
}

beforeAll(async () => {
  server = await startEmbedded();
  admin = await connect('postgres');
});

afterAll(async () => {
  await admin?.end().catch(() => undefined);
  await server?.stop().catch(() => undefined);
});

// ---------------------------------------------------------------------------------------------------------------
// Statement checks

/** Forbidden shapes for the recorder (case-insensitive, whitespace normalised). */
function forbidden(sql: string): string[] {
  const s = ` ${sql.toLowerCase().replace(/\s+/g, ' ')} `;
  return [' join ', '(select', ' with '].filter((p) => s.includes(p));
}

/** Tables a statement names after FROM / INTO / UPDATE / JOIN / a comma in a FROM list. */
function tablesOf(sql: string): string[] {
  const s = sql.toLowerCase().replace(/\s+/g, ' ');
  const names = [...s.matchAll(/\b(?:from|into|update|join)\s+([a-z_][a-z0-9_]*)/g)].map((m) => m[1]);
  const lists = [...s.matchAll(/\bfrom\s+([a-z_][a-z0-9_]*(?:\s*,\s*[a-z_][a-z0-9_]*)+)/g)].flatMap((m) =>
    m[1].split(',').map((t) => t.trim()),
  );
  return [...new Set([...names, ...lists])];
}

/** A Queryable that remembers every statement text it sends. */
class Capturing implements Queryable {
  constructor(
    private readonly inner: Queryable,
    readonly seen: Set<string>,
  ) {}
  query(text: string, params?: unknown[]): ReturnType<Queryable['query']> {
    this.seen.add(text);
    return this.inner.query(text, params);
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Running transactions

interface Tally {
  committed: Record<string, number>;
  rolledBack: Record<string, number>;
  retries: number;
}

const newTally = (): Tally => ({ committed: {}, rolledBack: {}, retries: 0 });
const RETRYABLE = new Set(['40001', '40P01']);

/** BEGIN at `level`, the transaction, COMMIT; ROLLBACK on RollbackError; retries on 40001/40P01. */
async function runTxn(
  client: pg.Client,
  w: Workload,
  type: string,
  level: Level,
  rng: () => number,
  ctx: WorkloadContext,
  seen: Set<string>,
  tally: Tally,
): Promise<void> {
  const db = new Capturing(client, seen);
  for (let attempt = 0; ; attempt++) {
    await client.query(beginStatement(level));
    try {
      await w.transaction(type, db, rng, ctx);
      await client.query('COMMIT');
      tally.committed[type] = (tally.committed[type] ?? 0) + 1;
      return;
    } catch (e) {
      await client.query('ROLLBACK').catch(() => undefined);
      if (e instanceof RollbackError) {
        tally.rolledBack[type] = (tally.rolledBack[type] ?? 0) + 1;
        return;
      }
      const code = (e as { code?: string }).code;
      if (code !== undefined && RETRYABLE.has(code) && attempt < 100) {
        tally.retries++;
        continue;
      }
      throw e;
    }
  }
}

async function freshDatabase(name: string): Promise<pg.Client> {
  await admin.query(`DROP DATABASE IF EXISTS "${name}"`);
  await admin.query(`CREATE DATABASE "${name}"`);
  return connect(name);
}

// ---------------------------------------------------------------------------------------------------------------

describe('workload registry and API', () => {
  it('has the four workloads, each with the five configurations covering every type', () => {
    expect(workloadNames().sort()).toEqual(['smallbank', 'tpcc', 'tpcc-pc', 'twitter']);
    for (const w of Object.values(workloads)) {
      expect(getWorkload(w.name)).toBe(w);
      expect(Object.keys(w.configs).sort()).toEqual(['rc', 'ser', 'ser+rc', 'si', 'si+rc']);
      for (const config of Object.values(w.configs))
        for (const type of Object.keys(w.mix)) expect(['SER', 'SI', 'RC']).toContain(levelFor(config, type));
      expect(w.tables.length).toBeGreaterThan(0);
      expect(w.context(1).scale).toBe(1);
      expect(Object.values(w.mix).every((x) => x > 0)).toBe(true);
    }
    expect(() => getWorkload('nope')).toThrow(/unknown workload/);
  });

  it("uses the paper's mixes and mixed configurations", () => {
    expect(workloads.tpcc.mix).toEqual({ NewOrder: 45, Payment: 43, OrderStatus: 4, Delivery: 4, StockLevel: 4 });
    expect(workloads.tpcc.configs['ser+rc']).toEqual({ '*': 'RC', NewOrder: 'SER', Payment: 'SER' });
    expect(workloads['tpcc-pc'].configs['si+rc']).toEqual({ '*': 'RC', NewOrder: 'SI', Payment: 'SI' });
    expect(workloads.twitter.mix).toMatchObject({
      GetTweet: 1,
      GetTweetsFromFollowing: 1,
      GetFollowers: 7,
      GetUserTweets: 80,
      InsertTweet: 11,
    });
    expect(workloads.twitter.configs['si+rc']).toEqual({ '*': 'RC', InsertTweet: 'SI', Follow: 'SI' });
    expect(levelFor(workloads.smallbank.configs['ser+rc'], 'Balance')).toBe('RC');
    expect(levelFor(workloads.smallbank.configs['ser+rc'], 'WriteCheck')).toBe('SER');
  });

  it('every declared statement is single-table: no join, subquery or WITH', () => {
    const problems: string[] = [];
    for (const w of Object.values(workloads)) {
      for (const [name, sql] of Object.entries(w.statements)) {
        const bad = forbidden(sql);
        if (bad.length > 0) problems.push(`${w.name}.${name}: contains ${bad.join(', ')}`);
        const tables = tablesOf(sql);
        if (tables.length !== 1)
          problems.push(`${w.name}.${name}: names ${tables.length} tables (${tables.join(', ')})`);
        else if (!w.tables.includes(tables[0]))
          problems.push(`${w.name}.${name}: table ${tables[0]} is not one of the workload's tables`);
      }
    }
    expect(problems).toEqual([]);
    // the checks themselves catch what they should
    expect(forbidden('SELECT * FROM a JOIN b ON a.x = b.x')).toEqual([' join ']);
    expect(forbidden('select x from t where y in (SELECT y from u)')).toEqual(['(select']);
    expect(forbidden('WITH x AS (select 1) select * from x')).toEqual(['(select', ' with ']);
    expect(tablesOf('SELECT * FROM a, b WHERE a.x = b.x').sort()).toEqual(['a', 'b']);
  });

  it('scale maps to sizes (tpcc)', () => {
    const s1 = tpccContext(1);
    expect([
      s1.warehouses,
      s1.districts,
      s1.customersPerDistrict,
      s1.items,
      s1.ordersPerDistrict,
      s1.undeliveredPerDistrict,
    ]).toEqual([1, 3, 50, 500, 50, 15]);
    const full = tpccContext(200);
    expect([
      full.warehouses,
      full.districts,
      full.customersPerDistrict,
      full.items,
      full.undeliveredPerDistrict,
    ]).toEqual([1, 10, 3000, 100000, 900]);
    expect(full.nurand).toMatchObject({ cLast: { A: 255 }, cId: { A: 1023 }, olIId: { A: 8191 } });
    expect(tpccContext(400).warehouses).toBe(2);
    expect(() => tpccContext(0)).toThrow();
  });
});

describe('workload helpers', () => {
  it('exact decimals', () => {
    expect(toUnits('12.34')).toBe(1234n);
    expect(toUnits('-0.5')).toBe(-50n);
    expect(toUnits('7')).toBe(700n);
    expect(fromUnits(-5n)).toBe('-0.05');
    expect(fromUnits(123456n)).toBe('1234.56');
    expect(sumDecimals(['0.10', '0.20', '0.30'])).toBe('0.60');
    expect(() => toUnits('1.234')).toThrow();
  });

  it('CSV round trip: quoting, empty string vs NULL, types', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'isocheck-csv-'));
    try {
      const cols = [
        ['a', 'int'],
        ['b', 'text'],
        ['c', 'numeric'],
        ['d', 'bool'],
      ] as const;
      const w = new CsvWriter(cols);
      w.row([1, 'plain', '1.50', true]);
      w.row([2, 'a "quoted", \nmultiline', '-0.01', false]);
      w.row([3, '', null, null]);
      w.row([4, null, '10', true]);
      w.row([5, ' padded ', '0', false]);
      await w.write(join(dir, 't.csv'));
      expect(await readCsv(join(dir, 't.csv'), cols)).toEqual([
        [1, 'plain', '1.50', true],
        [2, 'a "quoted", \nmultiline', '-0.01', false],
        [3, '', null, null],
        [4, null, '10', true],
        [5, ' padded ', '0', false],
      ]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

for (const name of Object.keys(workloads)) {
  describe(`workload ${name}`, () => {
    const w = workloads[name];
    const dir = mkdtempSync(join(tmpdir(), `isocheck-wl-${name}-`));
    let files: Record<string, string> = {};
    let client: pg.Client;
    const seen = new Set<string>();
    const ctx = w.context(1);

    afterAll(async () => {
      await client?.end().catch(() => undefined);
      rmSync(dir, { recursive: true, force: true });
    });

    it('generates the same CSV bytes from the same (seed, scale), other bytes from another seed', async () => {
      files = await w.generate(join(dir, 'a'), SEED, 1);
      const again = await w.generate(join(dir, 'b'), SEED, 1);
      const other = await w.generate(join(dir, 'c'), `${SEED}-other`, 1);
      expect(Object.keys(files).sort()).toEqual([...w.tables].sort());
      let differs = false;
      for (const t of w.tables) {
        expect(readFileSync(again[t]).equals(readFileSync(files[t])), `${t}.csv differs between two runs`).toBe(true);
        if (!readFileSync(other[t]).equals(readFileSync(files[t]))) differs = true;
      }
      expect(differs).toBe(true);
    });

    it('creates the schema (every table keyed) and loads the CSVs', async () => {
      client = await freshDatabase(`wl_${name.replace(/-/g, '_')}`);
      await client.query(w.schema());
      const keyed = (
        await client.query(
          `SELECT c.relname FROM pg_class c JOIN pg_index i ON i.indrelid = c.oid AND i.indisprimary WHERE ` +
            `c.relname = ANY($1)`,
          [w.tables],
        )
      ).rows.map((r) => r.relname as string);
      expect(keyed.sort()).toEqual([...w.tables].sort());
      await w.load(client, files);
      for (const t of w.tables) {
        const n = Number((await client.query(`SELECT count(*) AS n FROM ${t}`)).rows[0].n);
        const lines =
          readFileSync(files[t], 'utf8')
            .split('\n')
            .filter((l) => l !== '').length - 1;
        // CSV lines = rows unless a text field spans lines (not generated by any workload)
        expect(n, `rows of ${t}`).toBe(lines);
      }
      expect(await w.invariants(client, ctx)).toEqual([]);
    });

    it(`runs ${PER_TYPE} transactions of each type sequentially at SERIALIZABLE; invariants hold`, async () => {
      const rng = seedrandom(`${SEED}/sequential/${name}`);
      const tally = newTally();
      const types = Object.keys(w.mix);
      for (let i = 0; i < PER_TYPE; i++) {
        for (const type of types) await runTxn(client, w, type, 'SER', rng, ctx, seen, tally);
      }
      for (const type of types) {
        expect((tally.committed[type] ?? 0) + (tally.rolledBack[type] ?? 0), type).toBe(PER_TYPE);
        expect(tally.committed[type] ?? 0, `${type} commits`).toBeGreaterThan(0);
      }
      expect(tally.retries).toBe(0);
      expect(await w.invariants(client, ctx)).toEqual([]);
    });

    it(`runs ${CLIENTS} concurrent clients x ${PER_CLIENT} transactions at mixed levels; invariants hold`, async () => {
      // smallbank: the write-skew pair at READ COMMITTED, the rest SERIALIZABLE; others: their ser+rc configuration
      const config: Record<string, Level> =
        name === 'smallbank' ? { WriteCheck: 'RC', TransactSavings: 'RC', '*': 'SER' } : w.configs['ser+rc'];
      const tally = newTally();
      const clients = await Promise.all(
        Array.from({ length: CLIENTS }, () => connect(`wl_${name.replace(/-/g, '_')}`)),
      );
      try {
        await Promise.all(
          clients.map(async (c, i) => {
            const rng = seedrandom(`${SEED}/concurrent/${name}/${i}`);
            for (let k = 0; k < PER_CLIENT; k++) {
              const type = pickType(w.mix, rng);
              await runTxn(c, w, type, levelFor(config, type), rng, ctx, seen, tally);
            }
          }),
        );
      } finally {
        await Promise.all(clients.map((c) => c.end().catch(() => undefined)));
      }
      const done =
        Object.values(tally.committed).reduce((a, b) => a + b, 0) +
        Object.values(tally.rolledBack).reduce((a, b) => a + b, 0);
      expect(done).toBe(CLIENTS * PER_CLIENT);
      expect(await w.invariants(client, ctx)).toEqual([]);
    });

    it('sent only declared single-table statements', () => {
      const declared = new Set(Object.values(w.statements));
      const undeclared = [...seen].filter((s) => !declared.has(s));
      expect(undeclared).toEqual([]);
      expect([...seen].flatMap((s) => forbidden(s).map((p) => `${p} in ${s}`))).toEqual([]);
      expect(seen.size).toBeGreaterThan(Object.keys(w.mix).length);
    });
  });
}

describe('workload specifics', () => {
  it('twitter: inserted tweets are read back by id and by user (write-read dependencies exist)', async () => {
    const client = await connect('wl_twitter');
    try {
      const added = Number((await client.query('SELECT count(*) AS n FROM added_tweets')).rows[0].n);
      expect(added).toBeGreaterThan(0);
      // the users that tweeted recently are the ones reads pick most: user 1 (Zipf rank 1) has recent tweets
      const recentByHot = Number(
        (await client.query('SELECT count(*) AS n FROM added_tweets WHERE uid <= 5')).rows[0].n,
      );
      expect(recentByHot).toBeGreaterThan(0);
    } finally {
      await client.end();
    }
  });

  it('tpcc: Delivery removed new orders and NewOrder added orders', async () => {
    const client = await connect('wl_tpcc');
    try {
      const ctx = tpccContext(1);
      const orders = Number((await client.query('SELECT count(*) AS n FROM oorder')).rows[0].n);
      expect(orders).toBeGreaterThan(ctx.ordersPerDistrict * ctx.districts);
      const delivered = Number(
        (await client.query('SELECT count(*) AS n FROM oorder WHERE o_carrier_id IS NOT NULL')).rows[0].n,
      );
      expect(delivered).toBeGreaterThan((ctx.ordersPerDistrict - ctx.undeliveredPerDistrict) * ctx.districts);
    } finally {
      await client.end();
    }
  });

  it('tpcc-pc: keeps every NEW_ORDER row, flags delivered ones', async () => {
    const client = await connect('wl_tpcc_pc');
    try {
      const r = (await client.query('SELECT count(*) AS n, count(*) FILTER (WHERE no_delivered) AS d FROM new_order'))
        .rows[0];
      const orders = Number((await client.query('SELECT count(*) AS n FROM oorder')).rows[0].n);
      expect(Number(r.n)).toBe(orders);
      expect(Number(r.d)).toBeGreaterThan(0);
    } finally {
      await client.end();
    }
  });

  it(
    'smallbank: WriteCheck and TransactSavings on one ' + 'customer make a write skew at SI; SERIALIZABLE aborts one',
    async () => {
      const w = workloads.smallbank;
      const ctx = w.context(1);
      const results: Record<string, string[]> = {};
      for (const level of ['SI', 'SER'] as const) {
        const setup = await connect('wl_smallbank');
        // customer 0: savings 20.20, checking 0.00 (net_external moved along, so the invariant still holds)
        await setup.query(
          'UPDATE savings SET net_external = net_external + (20.20 - bal), bal = 20.20 WHERE custid = 0',
        );
        await setup.query('UPDATE checking SET net_external = net_external + (0 - bal), bal = 0 WHERE custid = 0');
        const clients = [await connect('wl_smallbank'), await connect('wl_smallbank')];
        // both transactions read both balances before either writes: a barrier before each one's first UPDATE
        let arrived = 0;
        let open!: () => void;
        const gate = new Promise<void>((resolve) => (open = resolve));
        const gated = (inner: Queryable): Queryable => {
          let passed = false;
          return {
            async query(text, params) {
              if (!passed && text.startsWith('UPDATE')) {
                passed = true;
                if (++arrived === 2) open();
                await gate;
              }
              return inner.query(text, params);
            },
          };
        };
        const run = async (c: pg.Client, type: string): Promise<string> => {
          await c.query(beginStatement(level));
          try {
            await w.transaction(type, gated(c), () => 0, ctx); // rng 0 => customer 0
            await c.query('COMMIT');
            return 'commit';
          } catch (e) {
            await c.query('ROLLBACK').catch(() => undefined);
            return (e as { code?: string }).code ?? String(e);
          }
        };
        results[level] = await Promise.all([run(clients[0], 'WriteCheck'), run(clients[1], 'TransactSavings')]);
        const s = (await setup.query('SELECT bal::text AS b FROM savings WHERE custid = 0')).rows[0].b;
        const c = (await setup.query('SELECT bal::text AS b FROM checking WHERE custid = 0')).rows[0].b;
        if (level === 'SI') {
          // no serial order gives this: WriteCheck first => TransactSavings refuses; TransactSavings first => penalty
          expect([s, c]).toEqual(['0.00', '-5.00']);
        }
        expect(await w.invariants(setup, ctx)).toEqual([]);
        for (const x of [setup, ...clients]) await x.end();
      }
      expect(results.SI).toEqual(['commit', 'commit']);
      expect([...results.SER].sort()).toEqual(['40001', 'commit']);
    },
  );

  it('invariants report violations (tpcc conditions 1, 2, 3, 5, 8; twitter mirror and self-follow)', async () => {
    const t = await connect('wl_tpcc');
    try {
      await t.query('BEGIN');
      await t.query('UPDATE warehouse SET w_ytd = w_ytd + 1 WHERE w_id = 1');
      // two NEW_ORDER rows past D_NEXT_O_ID with a gap (conditions 2 and 3), an initially delivered order losing
      // its carrier (condition 5)
      const next = Number(
        (await t.query('SELECT d_next_o_id FROM district WHERE d_w_id = 1 AND d_id = 1')).rows[0].d_next_o_id,
      );
      await t.query('INSERT INTO new_order (no_w_id, no_d_id, no_o_id) VALUES (1, 1, $1), (1, 1, $2)', [
        next + 5,
        next + 7,
      ]);
      await t.query('UPDATE oorder SET o_carrier_id = NULL WHERE o_w_id = 1 AND o_d_id = 1 AND o_id = 1');
      const problems = (await workloads.tpcc.invariants(t, tpccContext(1))).join('\n');
      await t.query('ROLLBACK');
      expect(problems).toMatch(/condition 1: warehouse 1/);
      expect(problems).toMatch(/condition 8: warehouse 1/);
      expect(problems).toMatch(/condition 2: district 1\/1/);
      expect(problems).toMatch(/condition 3: district 1\/1/);
      expect(problems).toMatch(/condition 5: order 1\/1\/1:/);
      expect(problems).toMatch(/NEW_ORDER row 1\/1\/\d+ has no ORDER row/);
    } finally {
      await t.end();
    }
    const tw = await connect('wl_twitter');
    try {
      await tw.query('BEGIN');
      await tw.query('INSERT INTO follows (f1, f2) VALUES (3, 3)');
      const problems = (await workloads.twitter.invariants(tw, workloads.twitter.context(1))).join('\n');
      await tw.query('ROLLBACK');
      expect(problems).toMatch(/follows without the mirrored followers row: 3->3/);
      expect(problems).toMatch(/following themselves: 3->3/);
    } finally {
      await tw.end();
    }
  });

  it('smallbank: invariant detects money that appears from nowhere', async () => {
    const client = await connect('wl_smallbank');
    try {
      await client.query('BEGIN');
      await client.query('UPDATE checking SET bal = bal + 0.01 WHERE custid = 0');
      const problems = await workloads.smallbank.invariants(client, workloads.smallbank.context(1));
      await client.query('ROLLBACK');
      expect(problems.join('\n')).toMatch(/money not conserved.*difference 0\.01/);
    } finally {
      await client.end();
    }
  });
});
