// isocheck proxy and PostgreSQL's implicit transaction (a Query of several statements; several Executes before one
// Sync): a transaction statement among them does what the server does with it (xact.c, TBLOCK_IMPLICIT_INPROGRESS):
// BEGIN makes the implicit transaction a block, what ran before it included, and its options fail (25001) once a
// query took a snapshot; COMMIT and ROLLBACK end it with a warning; AND CHAIN and the savepoint statements are
// refused and fail it. The bytes are a direct connection's, and the history says what the server did: the
// statements a ROLLBACK undid are in an aborted transaction, not committed ones.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { serialize } from 'pg-protocol';
import type { EmbeddedServer } from '../src/db/embedded.js';
import { startProxy, type RunningProxy } from '../src/proxy/proxy.js';
import { check } from '../src/index.js';
import { proxiedServer } from './helpers/proxied-server.js';
import { bothSides, decode, withoutSource } from './helpers/wire.js';

const dir = mkdtempSync(join(tmpdir(), 'isocheck-proxy-implicit-'));
let server: EmbeddedServer;
let proxy: RunningProxy;

beforeAll(async () => {
  ({ server, proxy } = await proxiedServer(
    [
      'CREATE TABLE accounts (id int4 PRIMARY KEY, owner text NOT NULL, bal int4 NOT NULL)',
      `INSERT INTO accounts VALUES (1, 'ann', 100), (2, 'bob', 50)`,
      // checked at COMMIT: a deferred unique constraint, a deferred trigger that raises a notice
      'CREATE TABLE dfr (a int4 UNIQUE DEFERRABLE INITIALLY DEFERRED)',
      'CREATE TABLE dtr (a int4)',
      `CREATE FUNCTION dtr_note() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE NOTICE 'deferred %', NEW.a; ` +
        'RETURN NULL; END $$',
      'CREATE CONSTRAINT TRIGGER dtr_t AFTER INSERT ON dtr DEFERRABLE INITIALLY DEFERRED FOR EACH ROW ' +
        'EXECUTE FUNCTION dtr_note()',
    ],
    ['accounts'],
    join(dir, 'wire.ndjson'),
  ));
}, 60_000);

afterAll(async () => {
  await proxy?.close();
  await server?.stop();
});

const q = (text: string): Buffer => serialize.query(text);
/** Parse, Bind, Describe and Execute of one unnamed statement (no Sync). */
const extended = (text: string, values: string[] = []): Buffer[] => [
  serialize.parse({ text }),
  serialize.bind({ values }),
  serialize.describe({ type: 'P' }),
  serialize.execute(),
];
const add = (id: number): string => `UPDATE accounts SET bal = bal + 1 WHERE id = ${id}`;
/** Parse and Bind of a named statement and portal, not executed. */
const bound = (name: string, text: string): Buffer[] => [
  serialize.parse({ name, text }),
  serialize.bind({ statement: name, portal: `p${name}` }),
];

describe('a transaction statement in an implicit transaction, through isocheck proxy', () => {
  // each case leaves the table as it found it (rolled back, or failed), so that both sides start from the same rows
  const cases: [string, Buffer[], number][] = [
    [
      'BEGIN after a write takes it into the block, ROLLBACK undoes both',
      [q(`${add(1)}; BEGIN; ${add(2)}; ROLLBACK`)],
      1,
    ],
    ['ROLLBACK ends the implicit transaction with a warning', [q(`${add(1)}; ROLLBACK; SELECT bal FROM accounts`)], 1],
    ['BEGIN ISOLATION LEVEL after a query: 25001, all undone', [q(`${add(1)}; BEGIN ISOLATION LEVEL SERIALIZABLE`)], 1],
    [
      'START TRANSACTION with options before any query',
      [q('SET LOCAL work_mem = 8192; START TRANSACTION READ ONLY; SELECT 1'), q('ROLLBACK')],
      2,
    ],
    ['SAVEPOINT is refused (25P01)', [q(`${add(1)}; SAVEPOINT a; ${add(2)}`)], 1],
    ['COMMIT AND CHAIN is refused (25P01)', [q(`${add(1)}; COMMIT AND CHAIN`)], 1],
    ['COMMIT warns, then a new implicit transaction', [q(`SELECT 1; COMMIT; ${add(1)}; ROLLBACK`)], 1],
    [
      'a pipeline: ROLLBACK after a write undoes it, with the warning',
      [...extended(add(1)), ...extended('ROLLBACK'), serialize.sync()],
      1,
    ],
    [
      'a pipeline: BEGIN after a write opens a block holding it',
      [...extended(add(2)), ...extended('BEGIN'), serialize.sync(), q('ROLLBACK')],
      2,
    ],
    [
      'a pipeline: SAVEPOINT is described (NoData) and refused at its Execute',
      [...extended('SELECT 1 AS one'), ...extended('SAVEPOINT a'), ...extended(add(1)), serialize.sync()],
      1,
    ],
    // found by a review of the first version
    ['BEGIN with a comment and no modes', [q('SELECT 1; BEGIN /* app */; SELECT 2'), q('ROLLBACK')], 2],
    [
      'START TRANSACTION with a comment between its words keeps its modes',
      [q('SET LOCAL work_mem = 8192; START/**/TRANSACTION ISOLATION LEVEL SERIALIZABLE; SHOW transaction_isolation')],
      1,
    ],
    ['BEGIN WORK with a comment between', [q(`SELECT 1; BEGIN/**/WORK ISOLATION LEVEL SERIALIZABLE; ${add(1)}`)], 1],
    [
      'a pipeline: SET TRANSACTION after a Bind of a query (25001, after its warning)',
      [
        ...bound('a', 'SELECT 1'),
        ...extended('SET TRANSACTION ISOLATION LEVEL SERIALIZABLE'),
        serialize.execute({ portal: 'pa' }),
        serialize.sync(),
      ],
      1,
    ],
    [
      'a pipeline: SET TRANSACTION first warns, then holds for what follows',
      [
        ...extended('SET TRANSACTION ISOLATION LEVEL SERIALIZABLE'),
        ...extended('SHOW transaction_isolation'),
        serialize.sync(),
      ],
      1,
    ],
    [
      'a pipeline: SET LOCAL first warns',
      [...extended('SET LOCAL work_mem = 8192'), ...extended('SHOW work_mem'), serialize.sync()],
      1,
    ],
    ['COMMIT that fails at commit: the warning, then the error', [q('INSERT INTO dfr VALUES (1), (1); COMMIT')], 1],
    [
      'a pipeline: COMMIT that fails at commit',
      [...extended('INSERT INTO dfr VALUES (1), (1)'), ...extended('COMMIT'), serialize.sync()],
      1,
    ],
    ['COMMIT whose deferred trigger raises a notice: the warning first', [q('INSERT INTO dtr VALUES (1); COMMIT')], 1],
    ['a pipeline: the same', [...extended('INSERT INTO dtr VALUES (2)'), ...extended('COMMIT'), serialize.sync()], 1],
    [
      'Describe of a statement parsed in a failed transaction',
      [
        q('BEGIN'),
        q('SELECT 1 / 0'),
        serialize.parse({ name: 's1', text: 'SET work_mem = 64' }),
        serialize.describe({ type: 'S', name: 's1' }),
        serialize.sync(),
        q('ROLLBACK'),
      ],
      4,
    ],
    [
      'a block ended by COMMIT in a Query: no snapshot left from before it',
      [
        ...bound('b', 'SELECT 1'),
        ...extended('BEGIN'),
        serialize.sync(),
        q('COMMIT; SET LOCAL work_mem = 8192; BEGIN ISOLATION LEVEL SERIALIZABLE; SHOW transaction_isolation'),
        q('ROLLBACK'),
      ],
      3,
    ],
    [
      'a pipeline: a Bind of CREATE TABLE AS takes a snapshot',
      [
        ...bound('c', 'CREATE TEMP TABLE z AS SELECT 1'),
        ...extended('BEGIN ISOLATION LEVEL SERIALIZABLE'),
        serialize.sync(),
        q('ROLLBACK'),
      ],
      2,
    ],
    // found by the random test (test/proxy-wire-random.test.ts) once it had these statements
    [
      'a pipeline: SET CONSTRAINTS first warns',
      [...extended('SET CONSTRAINTS ALL IMMEDIATE'), ...extended('SELECT 1 AS one'), serialize.sync()],
      1,
    ],
    [
      'a pipeline: LOCK first fails (25P01), outside a block',
      [...extended('LOCK TABLE dfr IN SHARE MODE'), ...extended('SELECT 1 AS one'), serialize.sync()],
      1,
    ],
    [
      'a pipeline: SET LOCAL transaction_isolation first warns as SET LOCAL',
      [
        ...extended("SET LOCAL transaction_isolation = 'serializable'"),
        ...extended('SHOW transaction_isolation'),
        serialize.sync(),
      ],
      1,
    ],
    [
      'a lone Execute: what committing raises comes at the Sync, after a Close',
      [...extended('INSERT INTO dtr VALUES (3)'), serialize.close({ type: 'S', name: '' }), serialize.sync()],
      1,
    ],
    [
      'a lone Execute whose commit fails: CommandComplete, then the error at the Sync',
      [...extended('INSERT INTO dfr VALUES (1), (1)'), serialize.close({ type: 'S', name: '' }), serialize.sync()],
      1,
    ],
    ['a Query commits before its last CommandComplete', [q('SELECT 1; INSERT INTO dtr VALUES (4)')], 1],
    [
      'a Query whose commit fails: the error in place of the last CommandComplete',
      [q('SELECT 1; INSERT INTO dfr VALUES (1), (1)')],
      1,
    ],
    [
      'a write with RETURNING whose commit fails: its rows, then the error',
      [q('INSERT INTO dfr VALUES (1), (1) RETURNING a')],
      1,
    ],
    [
      'ROLLBACK AND CHAIN drops the portals',
      [
        q('BEGIN'),
        ...extended('ROLLBACK AND CHAIN'),
        serialize.sync(),
        serialize.describe({ type: 'P' }),
        serialize.execute(),
        serialize.sync(),
        q('ROLLBACK'),
      ],
      4,
    ],
    [
      'Execute, in a failed transaction, of a portal that ran at its Describe: 25P02',
      [
        q('BEGIN'),
        serialize.parse({ text: 'SELECT 1 AS one' }),
        serialize.bind({ portal: 'p' }),
        serialize.describe({ type: 'P', name: 'p' }),
        serialize.execute({ portal: 'p', rows: 1 }),
        serialize.sync(),
        q('SELECT 1 / 0'),
        serialize.execute({ portal: 'p' }),
        serialize.sync(),
        q('ROLLBACK'),
      ],
      5,
    ],
    // found by a review of that
    [
      'a row limit on a write whose commit fails: PortalSuspended, then the error at the Sync',
      [
        serialize.parse({ text: 'INSERT INTO dfr VALUES (1), (1) RETURNING a' }),
        serialize.bind({}),
        serialize.describe({ type: 'P' }),
        serialize.execute({ rows: 1 }),
        serialize.sync(),
      ],
      1,
    ],
    [
      'a portal run at its Describe, then another failing at its Describe: the first still runs',
      [
        q('BEGIN'),
        serialize.parse({ name: 'ok', text: 'SELECT 1 AS one' }),
        serialize.bind({ statement: 'ok', portal: 'pa' }),
        serialize.parse({ name: 'bad', text: 'SELECT 1 / (g - 1) AS x FROM generate_series(1, 1) AS g' }),
        serialize.bind({ statement: 'bad', portal: 'pb' }),
        serialize.describe({ type: 'P', name: 'pa' }),
        serialize.describe({ type: 'P', name: 'pb' }),
        serialize.execute({ portal: 'pa' }),
        serialize.execute({ portal: 'pb' }),
        serialize.sync(),
        q('ROLLBACK'),
      ],
      3,
    ],
    [
      'a pipeline: SET LOCAL TRANSACTION first warns as SET TRANSACTION',
      [
        ...extended('SET LOCAL TRANSACTION ISOLATION LEVEL SERIALIZABLE'),
        ...extended('SHOW transaction_isolation'),
        serialize.sync(),
      ],
      1,
    ],
    [
      'a pipeline: SET SESSION TRANSACTION first warns',
      [
        ...extended('SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED'),
        ...extended('SELECT 1 AS one'),
        serialize.sync(),
      ],
      1,
    ],
    [
      'a pipeline: SET with a comment before LOCAL first warns',
      [...extended('SET /**/ LOCAL work_mem = 8192'), ...extended('SHOW work_mem'), serialize.sync()],
      1,
    ],
    [
      'a pipeline: VACUUM first runs (outside a block)',
      [...extended('VACUUM dfr'), ...extended('SELECT 1 AS one'), serialize.sync()],
      1,
    ],
  ];
  for (const [name, messages, readies] of cases)
    it(name, async () => {
      const { direct, proxied } = await bothSides(server.url, proxy);
      const before = await bal();
      direct.send(Buffer.concat(messages));
      const d = await direct.until(readies);
      expect(await bal()).toEqual(before);
      proxied.send(Buffer.concat(messages));
      const p = await proxied.until(readies);
      expect(await bal()).toEqual(before);
      if (withoutSource(p) !== withoutSource(d)) expect(decode(p)).toBe(decode(d));
      expect(withoutSource(p)).toBe(withoutSource(d));
      direct.close();
      proxied.close();
    }, 30_000);
});

describe('sent in two parts (a Flush, the rest once it is answered), through isocheck proxy', () => {
  // An Execute whose Sync has not arrived runs in the proxy's block, committed at the Sync with what came between,
  // as the server commits it (before, it ran on its own: a later write was then run and committed where the server
  // rolls it back, or what its commit raised came at once).
  const twoParts: [string, Buffer[], Buffer[]][] = [
    [
      'a lone write whose commit fails, then a write before the same Sync',
      [...extended('INSERT INTO dfr VALUES (1), (1)')],
      [...extended(add(1))],
    ],
    [
      'a write whose deferred trigger raises a notice, then a failing statement',
      [...extended('INSERT INTO dtr VALUES (5)')],
      [...extended('SELECT 1 / 0 AS x')],
    ],
    [
      'deferred notices of three writes, in order',
      [...extended('INSERT INTO dtr VALUES (6)')],
      [...extended('INSERT INTO dtr VALUES (7)'), ...extended('INSERT INTO dtr VALUES (8)')],
    ],
  ];
  for (const [name, first, second] of twoParts)
    it(name, async () => {
      const { direct, proxied } = await bothSides(server.url, proxy);
      const before = await bal();
      const got: Buffer[] = [];
      for (const w of [direct, proxied]) {
        w.send(Buffer.concat([...first, serialize.flush()]));
        const a = await w.take((type) => type === 0x43 || type === 0x45); // CommandComplete, or the error
        w.send(Buffer.concat([...second, serialize.sync()]));
        got.push(Buffer.concat([a, await w.until(1)]));
        expect(await bal()).toEqual(before);
      }
      if (withoutSource(got[1]) !== withoutSource(got[0])) expect(decode(got[1])).toBe(decode(got[0]));
      direct.close();
      proxied.close();
    }, 30_000);
});

async function bal(): Promise<unknown[]> {
  const c = new pg.Client({ connectionString: server.url });
  await c.connect();
  try {
    return (await c.query('SELECT id, bal FROM accounts ORDER BY id')).rows;
  } finally {
    await c.end();
  }
}

describe('the history of an implicit transaction with transaction statements', () => {
  it('records what the server did: writes a ROLLBACK undid aborted, a block begun by BEGIN at its level', async () => {
    const out = join(dir, 'history.ndjson');
    const px = await startProxy({ db: server.url, port: 0, tables: ['accounts'], out, onWarning: () => undefined });
    const c = new pg.Client({ connectionString: px.url });
    await c.connect();
    const before = await bal();
    // a write, then BEGIN: one block, rolled back whole
    await c.query(`${add(1)}; BEGIN; ${add(2)}; ROLLBACK`);
    expect(await bal()).toEqual(before);
    // committed by the COMMIT among them (with a warning), then a write rolled back on its own
    await c.query(`${add(1)}; COMMIT; ${add(2)}; ROLLBACK`);
    // BEGIN with a level before any query: the block runs at it
    await c.query(`SET LOCAL work_mem = 8192; BEGIN ISOLATION LEVEL SERIALIZABLE; ${add(2)}; COMMIT`);
    await expect(c.query(`${add(1)}; BEGIN ISOLATION LEVEL REPEATABLE READ`)).rejects.toMatchObject({ code: '25001' });
    await c.end();
    await px.close();
    const txns = readFileSync(out, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l))
      .filter((l) => l.kind === 'txn')
      .map((t) => ({
        status: t.status,
        iso: t.iso,
        updates: t.events.filter((e: { op: string }) => e.op === 'update'),
      }))
      .map((t) => ({ status: t.status, iso: t.iso, ids: t.updates.map((e: { params: unknown[] }) => e.params) }));
    expect(txns.filter((t) => t.ids.length > 0).map((t) => [t.status, t.ids.length])).toEqual([
      ['aborted', 2],
      ['committed', 1],
      ['aborted', 1],
      ['committed', 1],
      ['aborted', 1],
    ]);
    expect(txns.filter((t) => t.ids.length > 0)[3].iso).toBe('SER');
    expect((await check(out)).verdict).toBe('consistent');
    // the database: ids 1 and 2 each got one committed increment
    expect(await bal()).toEqual([
      { id: 1, bal: (before[0] as { bal: number }).bal + 1 },
      { id: 2, bal: (before[1] as { bal: number }).bal + 1 },
    ]);
  }, 60_000);
});
