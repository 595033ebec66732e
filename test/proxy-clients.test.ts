// isocheck proxy with clients in other languages, from Debian's packages: Python's psycopg2 (python3-psycopg2;
// the simple protocol, parameters interpolated by the client) and Java's JDBC driver (libpostgresql-jdbc-java and
// a JDK; the extended protocol, named statements after prepareThreshold, binary results, a fetch size). Each runs
// a small bank with two concurrent clients at REPEATABLE READ (test/fixtures/proxy/): the clients read what a
// direct connection reads, the history is consistent at SI and shows the write skew at SER. Skipped, with the
// reason, when the client is not installed.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFile, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import pg from 'pg';
import type { EmbeddedServer } from '../src/db/embedded.js';
import { startProxy, type RunningProxy } from '../src/proxy/proxy.js';
import { proxiedServer } from './helpers/proxied-server.js';
import { check } from '../src/index.js';
import { which } from './helpers/which.js';

const fixtures = resolve(import.meta.dirname, 'fixtures', 'proxy');

/** A python3 that imports psycopg2 (pyenv's python3 may not; Debian's /usr/bin/python3 does). */
const python = ['python3', '/usr/bin/python3'].find(
  (p) => spawnSync(p, ['-c', 'import psycopg2'], { stdio: 'ignore', timeout: 10_000 }).status === 0,
);
const jdbcJar = ['/usr/share/java/postgresql.jar'].find((j) => existsSync(j));
const java = which('java');
const pythonSkip = python ? undefined : 'psycopg2 is not installed (apt-get install python3-psycopg2)';
const javaSkip = !java
  ? 'no java (apt-get install default-jdk-headless)'
  : !jdbcJar
    ? 'the JDBC driver is not installed (apt-get install libpostgresql-jdbc-java)'
    : undefined;

function run(cmd: string, args: string[]): Promise<string> {
  return new Promise((done, fail) => {
    execFile(cmd, args, { timeout: 25_000 }, (err, stdout, stderr) =>
      err ? fail(new Error(`${cmd} failed: ${err.message}\n${stderr}`)) : done(stdout),
    );
  });
}

/** An embedded server with the bank's table, and a proxy recording it. */
function bank(name: string): { server: () => EmbeddedServer; proxy: () => RunningProxy; file: string } {
  const file = join(mkdtempSync(join(tmpdir(), `isocheck-proxy-${name}-`)), 'run.ndjson');
  let server: EmbeddedServer;
  let proxy: RunningProxy;
  beforeAll(async () => {
    ({ server, proxy } = await proxiedServer(
      [
        'CREATE TABLE accounts (id int4 PRIMARY KEY, bal int4 NOT NULL, name text NOT NULL)',
        `INSERT INTO accounts SELECT i, 100, 'acct' || i FROM generate_series(1, 6) AS i`,
      ],
      ['accounts'],
      file,
    ));
  }, 60_000);
  afterAll(async () => {
    await proxy?.close();
    await server?.stop();
  });
  return { server: () => server, proxy: () => proxy, file };
}

async function directRows(url: string): Promise<[number, number, string][]> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    return (await c.query({ text: 'SELECT id, bal, name FROM accounts ORDER BY id', rowMode: 'array' })).rows as [
      number,
      number,
      string,
    ][];
  } finally {
    await c.end();
  }
}

async function expectWriteSkew(file: string): Promise<void> {
  const own = await check(file);
  expect(own.verdict, own.reason).toBe('consistent');
  const ser = await check(file, { iso: 'SER' });
  expect(ser.verdict).toBe('inconsistent');
}

describe.skipIf(pythonSkip !== undefined)(
  `isocheck proxy with psycopg2${pythonSkip ? ` (skipped: ${pythonSkip})` : ''}`,
  () => {
    const b = bank('psycopg2');
    it('records a bank run by two psycopg2 clients: consistent at SI, write skew at SER', async () => {
      const url = b.proxy().url;
      const outs = await Promise.all([1, 2].map((a) => run(python!, [join(fixtures, 'bank.py'), url, String(a)])));
      const [r1, r2] = outs.map((o) => JSON.parse(o) as { seen: number[][]; rows: unknown[][] });
      expect(r1.seen).toEqual([
        [1, 100],
        [2, 100],
      ]);
      expect(r2.seen).toEqual([
        [1, 100],
        [2, 100],
      ]);
      const direct = await directRows(b.server().url);
      // two transfers of 1 (3 -> 4) and two of 2 (5 -> 6) committed, one each rolled back
      expect(direct).toEqual([
        [1, -50, 'acct1'],
        [2, -50, 'acct2'],
        [3, 98, 'acct3'],
        [4, 102, 'acct4'],
        [5, 96, 'acct5'],
        [6, 104, 'acct6'],
      ]);
      // the last client's final read, through the proxy, is the table as a direct connection reads it
      expect([r1.rows, r2.rows]).toContainEqual(direct);
      await b.proxy().close();
      await expectWriteSkew(b.file);
    }, 30_000);
  },
);

describe.skipIf(pythonSkip !== undefined)(
  `isocheck proxy with psycopg2's named cursors${pythonSkip ? ` (skipped: ${pythonSkip})` : ''}`,
  () => {
    const b = bank('cursors');
    it('gives the rows of a direct connection and records each cursor read at its DECLARE', async () => {
      const direct = await run(python!, [join(fixtures, 'cursors.py'), b.server().url]);
      const proxied = await run(python!, [join(fixtures, 'cursors.py'), b.proxy().url]);
      expect(proxied).toBe(direct);
      expect(JSON.parse(proxied)).toMatchObject({
        all: [
          [1, 100],
          [2, 100],
          [3, 100],
          [4, 100],
          [5, 100],
        ],
      });
      await b.proxy().close();
      const reads = readFileSync(b.file, 'utf8')
        .split('\n')
        .filter((l) => l.startsWith('{"kind":"txn"'))
        .map(
          (l) => JSON.parse(l) as { events: { where?: string; partial?: boolean; rows: { row: { id: number } }[] }[] },
        )
        .map((t) => t.events.map((e) => [e.where, e.partial ?? false, e.rows.map((r) => r.row.id)]));
      expect(reads).toEqual([
        [
          ['id <= 5', false, [1, 2, 3, 4, 5]],
          [undefined, true, [6]],
        ],
        // WITH HOLD: the rows fetched before the commit
        [[undefined, true, [1]]],
      ]);
      const own = await check(b.file);
      expect(own.verdict, own.reason).toBe('consistent');
    }, 30_000);
  },
);

describe.skipIf(javaSkip !== undefined)(`isocheck proxy with JDBC${javaSkip ? ` (skipped: ${javaSkip})` : ''}`, () => {
  const b = bank('jdbc');
  it('records a bank run by two JDBC clients: consistent at SI, write skew at SER', async () => {
    const p = b.proxy();
    const url = `jdbc:postgresql://${p.host}:${p.port}/postgres?user=postgres&connectTimeout=5&socketTimeout=20`;
    const outs = await Promise.all(
      [1, 2].map((a) => run(java!, ['-cp', jdbcJar!, join(fixtures, 'Bank.java'), url, String(a)])),
    );
    const direct = await directRows(b.server().url);
    // seven transfers of 1 (3 -> 4) and seven of 2 (5 -> 6) committed, one each rolled back
    expect(direct).toEqual([
      [1, -50, 'acct1'],
      [2, -50, 'acct2'],
      [3, 93, 'acct3'],
      [4, 107, 'acct4'],
      [5, 86, 'acct5'],
      [6, 114, 'acct6'],
    ]);
    for (const o of outs) {
      const [seen, final] = o.trim().split('|');
      expect(seen.trim()).toBe('1=100 2=100');
      expect(final.split(' ')).toHaveLength(6);
    }
    // one client's final read was the table as it ends
    expect(outs.map((o) => o.trim().split('|')[1])).toContain(
      direct.map(([id, bal, name]) => `${id}=${bal}:${name}`).join(' '),
    );
    await p.close();
    // the last read, with a fetch size of 2 (Executes with a row limit on a server portal), fetched to its end:
    // recorded whole, its 6 rows, in each client's last transaction
    const lastReads = new Map<number, { partial?: boolean; rows: unknown[] }>();
    for (const l of readFileSync(b.file, 'utf8').trim().split('\n')) {
      const t = JSON.parse(l) as { kind: string; session: number; status: string; events: { op: string }[] };
      if (t.kind !== 'txn' || t.status !== 'committed' || t.events.length !== 1 || t.events[0].op !== 'select')
        continue;
      lastReads.set(t.session, t.events[0] as unknown as { partial?: boolean; rows: unknown[] });
    }
    expect([...lastReads.values()].map((e) => [e.partial === true, e.rows.length])).toEqual([
      [false, 6],
      [false, 6],
    ]);
    await expectWriteSkew(b.file);
  }, 30_000);

  it('closes a fetch-size read left unfinished before the DDL that follows it, as a direct connection', async () => {
    // (a proxy of its own: the bank's is closed)
    const out = join(mkdtempSync(join(tmpdir(), 'isocheck-proxy-ddl-')), 'run.ndjson');
    const p = await startProxy({ db: b.server().url, port: 0, tables: ['accounts'], out, onWarning: () => undefined });
    const direct = new URL(b.server().url);
    const jdbc = (host: string, port: number, password = ''): string =>
      `jdbc:postgresql://${host}:${port}/postgres?user=postgres&password=${password}&connectTimeout=5&socketTimeout=20`;
    const program = join(fixtures, 'FetchThenDdl.java');
    const url = jdbc(direct.hostname, Number(direct.port), direct.password);
    const expected = await run(java!, ['-cp', jdbcJar!, program, url]);
    expect(expected.trim().split('\n')).toEqual(['first 1', 'altered']);
    expect(await run(java!, ['-cp', jdbcJar!, program, jdbc(p.host, p.port)])).toBe(expected);
    await p.close();
  }, 30_000);
});
