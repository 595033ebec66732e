// isocheck proxy's server portals (docs/recording.md, "An Execute with a row limit fetches from a server portal"):
// a client's portal fetched with a row limit is a portal of the proxy's own on the server, fetched in parts. The
// bytes a client receives are a direct connection's (each case below is sent to both and compared): a part that
// fails (its rows before the error, the client's columns only), a portal closed with the next statement in the
// same batch (pgjdbc closes a ResultSet so) before DDL on its table, a savepoint made between the Bind and the
// first Execute, a portal gone (ROLLBACK TO, CLOSE ALL) named as the client named it, notices among the rows of
// parts fetched with Flush; and the same for the failed-transaction answers found beside them (a Bind over a
// portal's name, a Describe of a portal that ran). The history has the error of a part that fails.
// Found by a review of the change that made the server portals: each case but the notices failed before its fix.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { serialize } from 'pg-protocol';
import type { EmbeddedServer } from '../src/db/embedded.js';
import { startProxy, type RunningProxy } from '../src/proxy/proxy.js';
import { proxiedServer } from './helpers/proxied-server.js';
import { bothSides, decode, proxiedWire, withoutSource } from './helpers/wire.js';

const dir = mkdtempSync(join(tmpdir(), 'isocheck-proxy-portals-'));
let server: EmbeddedServer;
let proxy: RunningProxy;

beforeAll(async () => {
  ({ server, proxy } = await proxiedServer(
    [
      'CREATE TABLE accounts (id int4 PRIMARY KEY, owner text NOT NULL, bal int4 NOT NULL)',
      `INSERT INTO accounts SELECT i, 'o' || i, 100 FROM generate_series(1, 6) AS i`,
      'CREATE TABLE notes (id int4 PRIMARY KEY, body text)',
      `INSERT INTO notes SELECT i, 'n' || i FROM generate_series(1, 6) AS i`,
      `CREATE FUNCTION note(int) RETURNS int LANGUAGE plpgsql AS $$ BEGIN RAISE NOTICE 'note %', $1; RETURN $1; END $$`,
      // a row computed leaves a trace
      'CREATE TABLE hits (g int)',
      'CREATE FUNCTION hit(int) RETURNS int LANGUAGE sql AS $$ INSERT INTO hits VALUES ($1) RETURNING g $$',
    ],
    ['accounts'],
    join(dir, 'run.ndjson'),
  ));
}, 60_000);

afterAll(async () => {
  await proxy?.close();
  await server?.stop();
});

/** A portal `a` of a read of `notes` (not recorded), one row fetched, in a block: bound from `statement` (a named
 *  one outlives a Query), described before its Execute unless `describe` is false. */
const fetchedInBlock = (statement = '', describe = true): Buffer[] => [
  serialize.query('BEGIN'),
  serialize.parse({ name: statement, text: 'SELECT id FROM notes ORDER BY id' }),
  serialize.bind({ portal: 'a', statement }),
  ...(describe ? [serialize.describe({ type: 'P', name: 'a' })] : []),
  serialize.execute({ portal: 'a', rows: 1 }),
  serialize.sync(),
];

const cases: [string, Buffer[]][] = [
  [
    // (a cursor over a recorded table is the DECLARE of the rewritten SELECT: its FETCHes bring the added columns)
    'FETCH from a cursor over a recorded table: described before it runs, then fetched whole and in parts',
    [
      serialize.query('BEGIN'),
      serialize.query('DECLARE cur CURSOR FOR SELECT id, owner FROM accounts WHERE id <= 4 ORDER BY id'),
      serialize.parse({ name: 'f', text: 'FETCH 2 FROM cur' }),
      serialize.describe({ type: 'S', name: 'f' }),
      serialize.sync(),
      serialize.bind({ statement: 'f' }),
      serialize.describe({ type: 'P', name: '' }),
      serialize.execute({}),
      serialize.sync(),
      serialize.bind({ portal: 'p', statement: 'f' }),
      serialize.execute({ portal: 'p', rows: 1 }),
      serialize.execute({ portal: 'p', rows: 1 }),
      serialize.sync(),
      serialize.query('FETCH ALL FROM cur'),
      serialize.query('COMMIT'),
    ],
  ],
  [
    // (found by a review): a DECLARE given a row limit ran as a server portal, and its cursor went unrecorded
    'a DECLARE given a row limit, its cursor fetched after; a FETCH in the extended protocol that fails midway',
    [
      serialize.query('BEGIN'),
      serialize.parse({ text: 'DECLARE cur CURSOR FOR SELECT id, 10 / (3 - id) AS q FROM accounts ORDER BY id' }),
      serialize.bind({}),
      serialize.execute({ rows: 5 }),
      serialize.sync(),
      serialize.query('FETCH 1 FROM cur'),
      serialize.parse({ text: 'FETCH ALL FROM cur' }),
      serialize.bind({}),
      serialize.describe({ type: 'P', name: '' }),
      serialize.execute({}),
      serialize.sync(),
      serialize.query('ROLLBACK'),
    ],
  ],
  [
    'a part that fails: the rows before the error, with the client columns only (a recorded table)',
    [
      serialize.query('BEGIN'),
      serialize.parse({ text: 'SELECT 10 / (3 - id) AS q FROM accounts WHERE id <= $1' }),
      serialize.bind({ portal: 'c', values: ['5'] }),
      serialize.execute({ portal: 'c', rows: 1 }),
      serialize.execute({ portal: 'c', rows: 3 }),
      serialize.sync(),
      serialize.query('ROLLBACK'),
    ],
  ],
  [
    'a portal closed in the batch of the next statement, DDL on its table (55006 while it is open)',
    [
      ...fetchedInBlock(),
      serialize.close({ type: 'P', name: 'a' }),
      serialize.parse({ text: 'TRUNCATE notes' }),
      serialize.bind({}),
      serialize.execute({}),
      serialize.sync(),
      serialize.query('ROLLBACK'),
    ],
  ],
  [
    'the unnamed portal fetched in part and bound over, DDL on its table in the same batch',
    [
      serialize.query('BEGIN'),
      serialize.parse({ text: 'SELECT id FROM notes ORDER BY id' }),
      serialize.bind({}),
      serialize.execute({ rows: 1 }),
      serialize.sync(),
      serialize.parse({ text: 'ALTER TABLE notes ADD COLUMN x int' }),
      serialize.bind({}),
      serialize.execute({}),
      serialize.sync(),
      serialize.query('ROLLBACK'),
    ],
  ],
  [
    'one part outside a block, its Sync right after: the rows after it never computed (no recorded table)',
    [
      serialize.query('TRUNCATE hits'),
      serialize.parse({ text: 'SELECT hit(g) AS h FROM generate_series(1, $1::int4) AS g' }),
      serialize.bind({ values: ['5'] }),
      serialize.execute({ rows: 2 }),
      serialize.sync(),
      serialize.query('SELECT count(*) FROM hits'),
    ],
  ],
  [
    // (the second review): a Describe that runs its portal ahead, which fails there, has not failed the
    // transaction yet for the messages after it
    'a portal run ahead at its Describe and failing: the messages after the Describe are not refused yet',
    [
      ...fetchedInBlock('n1', false),
      serialize.parse({ text: 'SELECT 10 / (3 - id) AS q FROM notes ORDER BY id' }),
      serialize.bind({ portal: 'b' }),
      serialize.describe({ type: 'P', name: 'b' }),
      serialize.describe({ type: 'P', name: 'a' }),
      serialize.bind({ portal: 'a', statement: 'n1' }),
      serialize.execute({ portal: 'b' }),
      serialize.sync(),
      serialize.query('ROLLBACK'),
    ],
  ],
  [
    // (the second review): PostgreSQL counts a Bind's parameters before anything else, whatever the plan
    'a Bind with too few parameters after six Binds, and over a portal name in use',
    [
      serialize.query('BEGIN'),
      serialize.parse({ name: 'w', text: 'SELECT owner FROM accounts WHERE id = $1' }),
      ...[1, 2, 3, 4, 5, 6].flatMap((i) => [
        serialize.bind({ statement: 'w', values: [String(i)] }),
        serialize.execute(),
      ]),
      serialize.sync(),
      serialize.bind({ statement: 'w', values: [] }),
      serialize.describe({ type: 'P' }),
      serialize.execute(),
      serialize.sync(),
      serialize.query('ROLLBACK'),
      serialize.query('BEGIN'),
      serialize.bind({ portal: 'x', statement: 'w', values: ['1'] }),
      serialize.execute({ portal: 'x' }),
      serialize.sync(),
      serialize.bind({ portal: 'x', statement: 'w', values: [] }),
      serialize.sync(),
      serialize.query('ROLLBACK'),
    ],
  ],
  [
    // (the second review): PostgreSQL drops the portals a ROLLBACK TO's subtransactions made
    'a portal bound in a savepoint rolled back (ROLLBACK TO without the word SAVEPOINT): gone',
    [
      serialize.query('BEGIN'),
      serialize.query('SAVEPOINT s'),
      serialize.parse({ name: 'n3', text: 'SELECT id FROM notes ORDER BY id' }),
      serialize.bind({ portal: 'a', statement: 'n3' }),
      serialize.sync(),
      serialize.query('ROLLBACK TO s'),
      serialize.execute({ portal: 'a', rows: 1 }),
      serialize.sync(),
      serialize.query('ROLLBACK'),
    ],
  ],
  [
    // (random seeds 3326, 3989): the portal running the ROLLBACK TO ends as it runs, its Execute answered
    'ROLLBACK TO run as a portal bound after its savepoint, described first',
    [
      serialize.query('BEGIN'),
      serialize.parse({ text: 'SAVEPOINT sp' }),
      serialize.bind({}),
      serialize.execute({}),
      serialize.parse({ text: 'ROLLBACK TO SAVEPOINT sp' }),
      serialize.bind({}),
      serialize.describe({ type: 'P' }),
      serialize.execute({ rows: 2 }),
      serialize.sync(),
      serialize.query('ROLLBACK'),
    ],
  ],
  [
    'a savepoint between the Bind and the first Execute, rolled back: the portal stays',
    [
      serialize.query('BEGIN'),
      serialize.parse({ text: 'SELECT id FROM notes ORDER BY id' }),
      serialize.bind({ portal: 'a' }),
      serialize.sync(),
      serialize.query('SAVEPOINT s'),
      serialize.execute({ portal: 'a', rows: 1 }),
      serialize.sync(),
      serialize.query('ROLLBACK TO SAVEPOINT s'),
      serialize.execute({ portal: 'a', rows: 1 }),
      serialize.sync(),
      serialize.query('ROLLBACK'),
    ],
  ],
  [
    'a portal made in a savepoint rolled back: gone, by the client name',
    [
      serialize.query('BEGIN'),
      serialize.query('SAVEPOINT s'),
      serialize.parse({ text: 'SELECT id FROM notes ORDER BY id' }),
      serialize.bind({ portal: 'a' }),
      serialize.execute({ portal: 'a', rows: 1 }),
      serialize.sync(),
      serialize.query('ROLLBACK TO SAVEPOINT s'),
      serialize.execute({ portal: 'a', rows: 1 }),
      serialize.sync(),
      serialize.query('ROLLBACK'),
    ],
  ],
  [
    'CLOSE ALL, then an Execute of a portal fetched in part: gone, by the client name',
    [
      ...fetchedInBlock(),
      serialize.query('CLOSE ALL'),
      serialize.execute({ portal: 'a', rows: 1 }),
      serialize.sync(),
      serialize.query('ROLLBACK'),
    ],
  ],
  [
    'a Bind over a portal name in a failed transaction: 25P02 before 42P03',
    [
      ...fetchedInBlock('n1', false),
      serialize.query('SELECT 1 / 0'),
      serialize.bind({ portal: 'a', statement: 'n1' }),
      serialize.sync(),
      serialize.query('ROLLBACK'),
    ],
  ],
  [
    'a Describe of a portal that ran, in a failed transaction: 25P02 for one that returns rows',
    [
      ...fetchedInBlock(),
      serialize.parse({ name: 'u', text: 'UPDATE notes SET body = body WHERE id = $1' }),
      serialize.bind({ portal: 'b', statement: 'u', values: ['1'] }),
      serialize.execute({ portal: 'b' }),
      serialize.sync(),
      serialize.query('SELECT 1 / 0'),
      serialize.describe({ type: 'P', name: 'a' }),
      serialize.sync(),
      serialize.describe({ type: 'P', name: 'b' }),
      serialize.sync(),
      serialize.query('ROLLBACK'),
    ],
  ],
];

describe('isocheck proxy: server portals fetched in parts, on the wire', () => {
  for (const [name, messages] of cases)
    it(name, async () => {
      const { direct, proxied } = await bothSides(server.url, proxy);
      const readies = messages.filter((m) => m[0] === 0x53 || m[0] === 0x51).length; // Sync, Query
      const batch = Buffer.concat(messages);
      direct.send(batch);
      const d = await direct.until(readies);
      proxied.send(batch);
      const p = await proxied.until(readies);
      direct.close();
      proxied.close();
      expect(decode(p)).toBe(decode(d));
      expect(withoutSource(p)).toBe(withoutSource(d));
    });

  it('notices among the rows of parts fetched with Flush, outside a block (as pg-cursor fetches)', async () => {
    const { direct, proxied } = await bothSides(server.url, proxy);
    const got: string[] = [];
    for (const w of [direct, proxied]) {
      const suspended = (t: number): boolean => t === 0x73;
      w.send(
        Buffer.concat([
          serialize.parse({ text: 'SELECT note(id) AS n, id FROM accounts WHERE id <= $1' }),
          serialize.bind({ portal: 'k', values: ['4'] }),
          serialize.describe({ type: 'P', name: 'k' }),
          serialize.execute({ portal: 'k', rows: 2 }),
          serialize.flush(),
        ]),
      );
      const parts = [withoutSource(await w.take(suspended))];
      w.send(Buffer.concat([serialize.execute({ portal: 'k', rows: 1 }), serialize.flush()]));
      parts.push(withoutSource(await w.take(suspended)));
      w.send(Buffer.concat([serialize.execute({ portal: 'k', rows: 0 }), serialize.sync()]));
      parts.push(withoutSource(await w.until(1)));
      got.push(parts.join('|'));
    }
    direct.close();
    proxied.close();
    expect(got[1]).toBe(got[0]);
  });

  it('records the error of a part that fails, and no transaction for a read of no recorded table', async () => {
    const out = join(dir, 'failed-part.ndjson');
    const p = await startProxy({ db: server.url, port: 0, tables: ['accounts'], out, onWarning: () => undefined });
    const w = await proxiedWire(server.url, p);
    w.send(
      Buffer.concat([
        serialize.query('BEGIN'),
        serialize.parse({ text: 'SELECT 10 / (3 - id) AS q FROM accounts WHERE id <= $1' }),
        serialize.bind({ portal: 'c', values: ['5'] }),
        serialize.execute({ portal: 'c', rows: 1 }),
        serialize.execute({ portal: 'c', rows: 3 }),
        serialize.sync(),
        serialize.query('ROLLBACK'),
        // a part of a read of notes outside a block, its Sync right after: no block of the proxy's (whose BEGIN and
        // COMMIT would be an empty transaction in the history)
        serialize.parse({ text: 'SELECT id FROM notes' }),
        serialize.bind({ portal: 'd' }),
        serialize.execute({ portal: 'd', rows: 2 }),
        serialize.sync(),
      ]),
    );
    await w.until(4);
    w.close();
    await p.close();
    const txns = readFileSync(out, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l))
      .filter((l) => l.kind === 'txn');
    expect(txns.map((t) => [t.status, t.error?.code])).toEqual([['aborted', '22012']]);
  });
});
