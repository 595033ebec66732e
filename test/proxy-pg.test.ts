// isocheck proxy with node-postgres (extended protocol: Parse/Bind/Describe/Execute/Sync with parameters): the
// application gets what a direct connection gives (rows, fields and their types, command, rowCount, errors with
// their SQLSTATE and fields, notices, binary results), and the history checks consistent at the level run.
// A client gone mid-transaction gives an aborted transaction; close() writes the end line. LISTEN/NOTIFY
// notifications reach an idle listener.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import net from 'node:net';
import pg from 'pg';
import Cursor from 'pg-cursor';
import { parse, serialize } from 'pg-protocol';
import type { EmbeddedServer } from '../src/db/embedded.js';
import { startProxy, type RunningProxy } from '../src/proxy/proxy.js';
import { proxiedServer } from './helpers/proxied-server.js';
import { check } from '../src/index.js';

const dir = mkdtempSync(join(tmpdir(), 'isocheck-proxy-pg-'));
const file = join(dir, 'run.ndjson');
let server: EmbeddedServer;
let proxy: RunningProxy;

const connect = async (url: string): Promise<pg.Client> => {
  const c = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5000, query_timeout: 10_000 });
  c.on('error', () => undefined); // a connection the test drops, or a server stopped after a failure
  await c.connect();
  return c;
};

/** What the application sees of a result or an error. */
async function seen(c: pg.Client, config: pg.QueryConfig): Promise<unknown> {
  try {
    const r = await c.query(config);
    // the recorder's hidden column, which a direct connection shows to SELECT *, is not the application's
    const hidden = (k: string): boolean => k.startsWith('_isocheck_');
    const rows = r.rows.map((row) => Object.fromEntries(Object.entries(row).filter(([k]) => !hidden(k))));
    return {
      rows,
      fields: r.fields.filter((f) => !hidden(f.name)).map((f) => [f.name, f.dataTypeID, f.format]),
      command: r.command,
      rowCount: r.rowCount,
    };
  } catch (e) {
    const x = e as pg.DatabaseError;
    return { error: [x.code, x.message, x.detail, x.constraint, x.table, x.severity] };
  }
}

describe('isocheck proxy with pg (extended protocol)', () => {
  beforeAll(async () => {
    ({ server, proxy } = await proxiedServer(
      [
        'CREATE TABLE accounts (id int4 PRIMARY KEY, owner text NOT NULL, bal numeric(10,2) NOT NULL, flag bool)',
        `INSERT INTO accounts VALUES (1, 'ann', 100, true), (2, 'bob', 50.5, NULL)`,
      ],
      ['accounts'],
      file,
    ));
  }, 60_000);

  afterAll(async () => {
    await proxy?.close();
    await server?.stop();
  });

  it('gives the application what a direct connection gives, and records', async () => {
    const through = await connect(proxy.url);
    const direct = await connect(server.url);
    const notices: string[] = [];
    through.on('notice', (n) => notices.push(`${n.code} ${n.message}`));
    const steps: pg.QueryConfig[] = [
      { text: 'SELECT * FROM accounts WHERE id = $1', values: [1] },
      { text: 'SELECT id, owner, bal * 2 AS twice FROM accounts WHERE bal > $1 ORDER BY id', values: ['10'] },
      { text: 'INSERT INTO accounts (id, owner, bal) VALUES ($1, $2, $3) RETURNING id, bal', values: [3, 'cy', 7] },
      { text: 'UPDATE accounts SET bal = bal + $1 WHERE id = ANY($2::int[])', values: [1, [1, 2]] },
      { text: 'INSERT INTO accounts (id, owner, bal) VALUES ($1, $2, $3)', values: [1, 'dup', 0] },
      { text: 'SELECT id, bal FROM accounts WHERE owner = $1', values: ['nobody'] },
      { text: 'SELECT id, flag FROM accounts WHERE id <= $1 ORDER BY id', values: [2], binary: true } as pg.QueryConfig,
      { text: 'DELETE FROM accounts WHERE id = $1', values: [3] },
      { text: 'SELECT count(*) AS n, 1/0 AS x FROM accounts WHERE id > $1', values: [0] },
    ];
    for (const step of steps) {
      // the direct connection runs the same statement first, undone, so that both see the same state
      await direct.query('BEGIN');
      const b = await seen(direct, step);
      await direct.query('ROLLBACK');
      const a = await seen(through, step);
      expect(a, step.text).toEqual(b);
    }
    // a transaction at REPEATABLE READ, with a notice passed through (BEGIN inside a transaction)
    await through.query('BEGIN ISOLATION LEVEL REPEATABLE READ');
    await through.query('BEGIN');
    const r = await through.query('SELECT owner FROM accounts WHERE id = $1', [2]);
    expect(r.rows).toEqual([{ owner: 'bob' }]);
    await through.query('UPDATE accounts SET bal = bal - $1 WHERE id = $2', [1, 2]);
    await through.query('COMMIT');
    expect(notices).toEqual(['25001 there is already a transaction in progress']);
    // a client gone mid-transaction: aborted
    const gone = await connect(proxy.url);
    await gone.query('BEGIN');
    await gone.query('UPDATE accounts SET bal = 0 WHERE id = $1', [1]);
    (gone as unknown as { connection: { stream: { destroy(): void } } }).connection.stream.destroy();
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect((await direct.query('SELECT bal FROM accounts WHERE id = 1')).rows).toEqual([{ bal: '101.00' }]);
    await through.end();
    await direct.end();
    await proxy.close();
    const lines = readFileSync(file, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    const txns = lines.filter((l) => l.kind === 'txn');
    expect(new Set(txns.map((t) => t.session)).size).toBe(2);
    const aborted = txns.filter((t) => t.status === 'aborted');
    expect(aborted.map((t) => t.error?.code ?? t.error?.message)).toEqual([
      '23505',
      '22012',
      'connection closed before COMMIT',
    ]);
    const rr = txns.find((t) => t.iso === 'SI');
    expect(rr.status).toBe('committed');
    expect(rr.events.map((e: { op: string }) => e.op)).toEqual(['select', 'update']);
    expect(lines.at(-1).kind).toBe('end');
    expect((await check(file)).verdict).toBe('consistent');
  }, 30_000);
  it('refuses a statement it cannot record (0A000), or runs it unrecorded with a warning (pass)', async () => {
    await proxy.close();
    const cte = 'WITH d AS (DELETE FROM accounts WHERE id = $1 RETURNING id) SELECT * FROM d';
    const refusing = await startProxy({
      db: server.url,
      port: 0,
      tables: ['accounts'],
      out: join(dir, 'refuse.ndjson'),
      onWarning: () => undefined,
    });
    const c = await connect(refusing.url);
    await expect(c.query(cte, [2])).rejects.toMatchObject({
      code: '0A000',
      message: expect.stringMatching(/data-modifying CTE/),
    });
    expect((await c.query('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
    await c.end();
    await refusing.close();
    const warnings: string[] = [];
    const passing = await startProxy({
      db: server.url,
      port: 0,
      tables: ['accounts'],
      out: join(dir, 'pass.ndjson'),
      onUnsupported: 'pass',
      onWarning: (w) => warnings.push(w),
    });
    const d = await connect(passing.url);
    expect((await d.query(cte, [2])).rows).toEqual([{ id: 2 }]);
    await d.end();
    await passing.close();
    expect(warnings.join('\n')).toMatch(/passed through unrecorded \(--on-unsupported pass\).*data-modifying CTE/);
  }, 30_000);
  it('serves 64 concurrent clients, one session each', async () => {
    const many = await startProxy({
      db: server.url,
      port: 0,
      tables: ['accounts'],
      out: join(dir, 'many.ndjson'),
      onWarning: () => undefined,
    });
    const direct = await connect(server.url);
    const before = (await direct.query('SELECT bal FROM accounts WHERE id = 1')).rows[0].bal as string;
    const clients = await Promise.all(Array.from({ length: 64 }, () => connect(many.url)));
    await Promise.all(
      clients.map(async (c) => {
        await c.query('BEGIN');
        await c.query('UPDATE accounts SET bal = bal + $1 WHERE id = $2', [1, 1]);
        await c.query('COMMIT');
        await c.end();
      }),
    );
    await many.close();
    expect(Number((await direct.query('SELECT bal FROM accounts WHERE id = 1')).rows[0].bal)).toBe(Number(before) + 64);
    await direct.end();
    const txns = readFileSync(join(dir, 'many.ndjson'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l))
      .filter((l) => l.kind === 'txn');
    expect(txns.filter((t) => t.status === 'committed')).toHaveLength(64);
    expect(new Set(txns.map((t) => t.session)).size).toBe(64);
    expect((await check(join(dir, 'many.ndjson'))).verdict).toBe('consistent');
  }, 30_000);
  it('reaches the server over its unix socket (--db URL with host=/dir), gives clients its address', async (ctx) => {
    const admin = new pg.Client({ connectionString: server.url });
    await admin.connect();
    const sockets = (await admin.query('SHOW unix_socket_directories')).rows[0].unix_socket_directories as string;
    await admin.end();
    // the embedded server has a socket when its directory's path is short enough (sun_path)
    if (sockets === '') ctx.skip('the embedded server has no unix socket (its directory path is too long)');
    const u = new URL(server.url);
    const socket = encodeURIComponent(sockets.split(',')[0]);
    const db = `postgresql://${u.username}:${u.password}@/postgres?host=${socket}&port=${u.port}`;
    const px = await startProxy({
      db,
      port: 0,
      tables: ['accounts'],
      out: join(dir, 'socket.ndjson'),
      onWarning: () => undefined,
    });
    expect(px.url).toBe(`postgresql://${u.username}@127.0.0.1:${px.port}/postgres`);
    const c = new pg.Client({ connectionString: px.url });
    await c.connect();
    expect((await c.query('SELECT id FROM accounts WHERE id = 1')).rows).toEqual([{ id: 1 }]);
    expect((await c.query('SELECT inet_server_addr() IS NULL AS unix')).rows).toEqual([{ unix: true }]);
    await c.end();
    await px.close();
  }, 30_000);
  it('reads through pg-cursor (Executes with a row limit, then Flush) as a direct connection does', async () => {
    const px = await startProxy({
      db: server.url,
      port: 0,
      tables: ['accounts'],
      out: join(dir, 'cursor.ndjson'),
      onWarning: () => undefined,
    });
    // what a cursor reads, read by read (rows, or the error's SQLSTATE), and the rows in the table after
    const reads = async (url: string): Promise<unknown[]> => {
      const c = await connect(url);
      const out: unknown[] = [];
      const cursor = async (text: string, values: unknown[], sizes: number[]): Promise<void> => {
        const cur = c.query(new Cursor(text, values));
        for (const n of sizes) out.push(await cur.read(n).catch((e: pg.DatabaseError) => e.code));
        await cur.close().catch(() => undefined);
      };
      // read in part, then closed; to its end; a row that fails only when fetched (no sort: computed as fetched)
      await cursor('SELECT id, owner FROM accounts WHERE id >= $1 ORDER BY id', [1], [1]);
      await cursor('SELECT id, owner FROM accounts WHERE id >= $1 ORDER BY id', [1], [1, 5, 5]);
      await cursor('SELECT 10 / (3 - g) AS q FROM generate_series(1, $1::int4) AS g', [5], [2]);
      await cursor('SELECT 10 / (3 - g) AS q FROM generate_series(1, $1::int4) AS g', [5], [2, 2]);
      await c.end();
      return out;
    };
    const direct = await reads(server.url);
    expect(direct).toContainEqual([{ q: 5 }, { q: 10 }]);
    expect(direct).toContain('22012');
    expect(await reads(px.url)).toEqual(direct);
    await px.close();
    // the reads of accounts: the first partial (one row of those it matched), the second whole
    const selects = readFileSync(join(dir, 'cursor.ndjson'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l))
      .filter((l) => l.kind === 'txn' && l.status === 'committed')
      .flatMap((t) => t.events as { op: string; partial?: boolean; rows: unknown[] }[])
      .map((e) => [e.op, e.partial === true, e.rows.length]);
    expect(selects).toEqual([
      ['select', true, 1],
      ['select', false, direct.filter(Array.isArray).slice(1, 3).flat().length],
    ]);
    expect((await check(join(dir, 'cursor.ndjson'))).verdict).toBe('consistent');
  });

  it('runs several Executes sent before one Sync as one implicit transaction, as PostgreSQL does', async () => {
    const px = await startProxy({
      db: server.url,
      port: 0,
      tables: ['accounts'],
      out: join(dir, 'pipeline.ndjson'),
      onWarning: () => undefined,
    });
    const sock = net.connect(px.port, '127.0.0.1');
    sock.on('error', () => undefined);
    const closed = new Promise((r) => sock.once('close', r));
    const got: { name: string; status?: string }[] = [];
    void parse(sock, (m) => got.push(m as { name: string; status?: string }));
    const readies = async (n: number): Promise<void> => {
      for (let i = 0; i < 100 && got.filter((m) => m.name === 'readyForQuery').length < n; i++)
        await new Promise((r) => setTimeout(r, 50));
      expect(got.filter((m) => m.name === 'readyForQuery')).toHaveLength(n);
    };
    sock.write(serialize.startup({ user: 'postgres', database: 'postgres' }));
    await readies(1);
    got.length = 0;
    const update = (delta: string): Buffer[] => [
      serialize.parse({ text: 'UPDATE accounts SET bal = bal + $1 WHERE id = $2' }),
      serialize.bind({ values: [delta, '1'] }),
      serialize.execute(),
    ];
    sock.write(Buffer.concat([...update('5'), ...update('-2'), serialize.sync()]));
    await readies(1);
    expect(got.map((m) => m.name)).toEqual([
      'parseComplete',
      'bindComplete',
      'commandComplete',
      'parseComplete',
      'bindComplete',
      'commandComplete',
      'readyForQuery',
    ]);
    expect(got.at(-1)!.status).toBe('I');
    sock.end(serialize.end());
    await closed;
    await px.close();
    const txns = readFileSync(join(dir, 'pipeline.ndjson'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l))
      .filter((l) => l.kind === 'txn');
    expect(txns).toHaveLength(1);
    expect(txns[0]).toMatchObject({ status: 'committed', events: [{ op: 'update' }, { op: 'update' }] });
  }, 30_000);
  it('asks for a password (MD5) when given one, and refuses a wrong one (28P01)', async () => {
    const px = await startProxy({
      db: server.url,
      port: 0,
      tables: ['accounts'],
      out: join(dir, 'password.ndjson'),
      password: 's3cret',
      onWarning: () => undefined,
    });
    const url = (pw: string): string => {
      const u = new URL(px.url);
      u.password = pw;
      return u.toString();
    };
    const c = await connect(url('s3cret'));
    expect((await c.query('SELECT id FROM accounts WHERE id = $1', [1])).rows).toEqual([{ id: 1 }]);
    await c.end();
    await expect(connect(url('wrong'))).rejects.toMatchObject({ code: '28P01' });
    await px.close();
  }, 30_000);
  it('passes LISTEN/NOTIFY notifications on as they come, naming the notifier as its client knows it', async () => {
    const notified = async (url: string): Promise<[string, string, string][]> => {
      const listener = await connect(url);
      const other = await connect(url);
      const got: [string, string, string][] = [];
      listener.on('notification', (n) => {
        const l = listener as unknown as { processID: number };
        const o = other as unknown as { processID: number };
        const who = n.processId === l.processID ? 'self' : n.processId === o.processID ? 'other' : String(n.processId);
        got.push([n.channel, n.payload ?? '', who]);
      });
      await listener.query('LISTEN ch');
      await listener.query(`NOTIFY ch, 'own'`);
      // delivered to an idle listener: nothing of its own is under way
      await other.query(`NOTIFY ch, 'alone'`);
      await other.query('BEGIN');
      await other.query('UPDATE accounts SET bal = bal WHERE id = 1');
      await other.query(`SELECT pg_notify('ch', 'at commit')`);
      await other.query('COMMIT');
      for (let i = 0; i < 50 && got.length < 3; i++) await new Promise((r) => setTimeout(r, 20));
      await listener.end();
      await other.end();
      return got;
    };
    const direct = await notified(server.url);
    expect(direct).toEqual([
      ['ch', 'own', 'self'],
      ['ch', 'alone', 'other'],
      ['ch', 'at commit', 'other'],
    ]);
    const px = await startProxy({
      db: server.url,
      port: 0,
      tables: ['accounts'],
      out: join(dir, 'notify.ndjson'),
      onWarning: () => undefined,
    });
    try {
      expect(await notified(px.url)).toEqual(direct);
    } finally {
      await px.close();
    }
  });

  it('says how to name a table with capitals; warns when statements run unrecorded while it is missing', async () => {
    // (before: "Acct not found yet", then every statement unrecorded without a word, and an empty history)
    const admin = await connect(server.url);
    await admin.query('CREATE TABLE "Acct" (id int4 PRIMARY KEY, bal int4)');
    await admin.query('INSERT INTO "Acct" VALUES (1, 5)');
    const warnings: string[] = [];
    const px = await startProxy({
      db: server.url,
      port: 0,
      tables: ['Acct'],
      out: join(dir, 'capitals.ndjson'),
      onWarning: (w) => warnings.push(w),
    });
    try {
      expect([px.missing, px.missingHint]).toEqual([
        ['Acct'],
        ` ("Acct" exists: a name with capitals is written with its quotes, as in --tables '"Acct"')`,
      ]);
      const c = await connect(px.url);
      expect((await c.query('SELECT bal FROM "Acct" WHERE id = 1')).rows).toEqual([{ bal: 5 }]);
      await c.query('SELECT bal FROM "Acct" WHERE id = 1');
      await c.end();
      expect(warnings).toEqual([
        'Acct does not exist (yet): statements on the tables to record run unrecorded until every one exists ' +
          `("Acct" exists: a name with capitals is written with its quotes, as in --tables '"Acct"')`,
      ]);
    } finally {
      await px.close();
      await admin.query('DROP TABLE "Acct"');
      await admin.end();
    }
  });

  it('passes a CancelRequest on to the server (57014 for the running statement)', async () => {
    const px = await startProxy({
      db: server.url,
      port: 0,
      tables: ['accounts'],
      out: join(dir, 'cancel.ndjson'),
      onWarning: () => undefined,
    });
    const c = await connect(px.url);
    const keys = c as unknown as { processID: number; secretKey: number };
    const sleeping = c.query('SELECT pg_sleep(20)').then(
      () => 'finished',
      (e: { code?: string }) => e.code,
    );
    await new Promise((r) => setTimeout(r, 300));
    const sock = net.connect(px.port, '127.0.0.1');
    sock.on('error', () => undefined);
    sock.end(serialize.cancel(keys.processID, keys.secretKey));
    expect(await sleeping).toBe('57014');
    await c.end();
    await px.close();
  }, 30_000);
  it("describes a named statement as the server does (the application's columns), closes it", async () => {
    const px = await startProxy({
      db: server.url,
      port: 0,
      tables: ['accounts'],
      out: join(dir, 'describe.ndjson'),
      onWarning: () => undefined,
    });
    const sock = net.connect(px.port, '127.0.0.1');
    sock.on('error', () => undefined);
    const closed = new Promise((r) => sock.once('close', r));
    const got: Record<string, unknown>[] = [];
    void parse(sock, (m) => got.push(m as unknown as Record<string, unknown>));
    const ready = async (): Promise<void> => {
      for (let i = 0; i < 100 && !got.some((m) => m.name === 'readyForQuery'); i++)
        await new Promise((r) => setTimeout(r, 50));
    };
    sock.write(serialize.startup({ user: 'postgres', database: 'postgres' }));
    await ready();
    got.length = 0;
    sock.write(
      Buffer.concat([
        serialize.parse({ name: 's1', text: 'SELECT * FROM accounts WHERE id = $1' }),
        serialize.describe({ type: 'S', name: 's1' }),
        serialize.close({ type: 'S', name: 's1' }),
        serialize.bind({ statement: 's1', values: ['1'] }),
        serialize.execute(),
        serialize.sync(),
      ]),
    );
    await ready();
    expect(got.map((m) => m.name)).toEqual([
      'parseComplete',
      'parameterDescription',
      'rowDescription',
      'closeComplete',
      'error',
      'readyForQuery',
    ]);
    expect(got[1].dataTypeIDs).toEqual([23]);
    expect((got[2].fields as { name: string }[]).map((f) => f.name)).toEqual(['id', 'owner', 'bal', 'flag']);
    expect(got[4]).toMatchObject({ code: '26000', message: 'prepared statement "s1" does not exist' });
    sock.end(serialize.end());
    await closed;
    await px.close();
  }, 30_000);
});
