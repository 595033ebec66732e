// isocheck proxy, the rest of the protocol (issue 20): TLS from clients (psql sslmode=require, pg with ssl) and to
// the server (its URL's sslmode=require, the embedded server with ssl=on and a self-signed certificate); COPY FROM
// STDIN / TO STDOUT relayed (psql \copy, psycopg2 copy_expert, CopyFail), a form of it the recorder does not record
// refused on a recorded table or passed with a warning; parameter types declared in Parse reaching the server (raw
// protocol, JDBC); error positions in the client's own text, also from a portal described before its Execute;
// sessions named by application_name.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFile, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { parse, serialize } from 'pg-protocol';
import { type EmbeddedServer, startEmbedded } from '../src/db/embedded.js';
import { check } from '../src/index.js';
import { mapPosition } from '../src/proxy/positions.js';
import { type ProxyOptions, type RunningProxy, startProxy } from '../src/proxy/proxy.js';
import { which } from './helpers/which.js';
import { selfSignedCertificate } from './helpers/self-signed.js';

const dir = mkdtempSync(join(tmpdir(), 'isocheck-proxy-protocol-'));
const openssl = which('openssl');
const psql = which('psql');
const python = ['python3', '/usr/bin/python3'].find(
  (p) => spawnSync(p, ['-c', 'import psycopg2'], { stdio: 'ignore', timeout: 10_000 }).status === 0,
);
const java = which('java');
const jdbcJar = ['/usr/share/java/postgresql.jar'].find((j) => existsSync(j));

let server: EmbeddedServer;
/** The server's URL asking for TLS (sslmode=require), once ssl is on. */
let sslUrl: string | undefined;
let cert: { cert: Buffer; key: Buffer } | undefined;
const proxies: RunningProxy[] = [];

async function proxy(name: string, extra: Partial<ProxyOptions> = {}): Promise<RunningProxy> {
  const p = await startProxy({
    db: server.url,
    port: 0,
    tables: ['accounts'],
    out: join(dir, `${name}.ndjson`),
    onWarning: () => undefined,
    ...extra,
  });
  proxies.push(p);
  return p;
}

const txnsOf = (name: string): { session: number; status: string; events: { op: string }[] }[] =>
  readFileSync(join(dir, `${name}.ndjson`), 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l))
    .filter((l) => l.kind === 'txn');

function run(cmd: string, args: string[], env: Record<string, string> = {}): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(
      cmd,
      args,
      { timeout: 25_000, env: { ...process.env, PGCONNECT_TIMEOUT: '5', ...env } },
      (err, stdout, stderr) => (err ? reject(new Error(`${cmd} failed: ${err.message}\n${stderr}`)) : resolve(stdout)),
    );
  });
}

const runPsql = (url: string, args: string[]): Promise<string> =>
  run(psql!, ['-X', '-q', '-v', 'ON_ERROR_STOP=1', '-d', url, ...args]);

const connect = async (config: pg.ClientConfig): Promise<pg.Client> => {
  const c = new pg.Client({ connectionTimeoutMillis: 5000, query_timeout: 10_000, ...config });
  c.on('error', () => undefined);
  await c.connect();
  return c;
};

/** A raw protocol client (pg-protocol's own parser and serializer): what the proxy sends, message by message. */
async function rawClient(port: number): Promise<{
  send(...b: Buffer[]): void;
  readies(n: number): Promise<Record<string, unknown>[]>;
  close(): Promise<void>;
}> {
  const sock = net.connect(port, '127.0.0.1');
  sock.on('error', () => undefined);
  const closed = new Promise((r) => sock.once('close', r));
  const got: Record<string, unknown>[] = [];
  void parse(sock, (m) => got.push(m as unknown as Record<string, unknown>));
  const readies = async (n: number): Promise<Record<string, unknown>[]> => {
    for (let i = 0; i < 200 && got.filter((m) => m.name === 'readyForQuery').length < n; i++)
      await new Promise((r) => setTimeout(r, 25));
    expect(got.filter((m) => m.name === 'readyForQuery')).toHaveLength(n);
    return got.splice(0);
  };
  sock.write(serialize.startup({ user: 'postgres', database: 'postgres' }));
  await readies(1);
  return {
    send: (...b) => sock.write(Buffer.concat(b)),
    readies,
    close: async () => {
      sock.end(serialize.end());
      await closed;
    },
  };
}

beforeAll(async () => {
  server = await startEmbedded();
  const setup = await connect({ connectionString: server.url });
  await setup.query('CREATE TABLE accounts (id int4 PRIMARY KEY, bal int4 NOT NULL, owner text NOT NULL)');
  await setup.query(`INSERT INTO accounts SELECT i, 100, 'o' || i FROM generate_series(1, 6) AS i`);
  await setup.query('CREATE TABLE notes (id int4 PRIMARY KEY, body text)');
  if (openssl) {
    // a self-signed certificate; the server's copy written by the server itself (COPY ... TO PROGRAM, into its data
    // directory: owned by its user, mode 0600, as PostgreSQL wants a key file)
    const pem = selfSignedCertificate(openssl, dir);
    if (pem) {
      cert = { cert: readFileSync(pem.cert), key: readFileSync(pem.key) };
      const lines = (b: Buffer): string[] => b.toString('utf8').trim().split('\n');
      const data = (await setup.query<{ d: string }>(`SELECT current_setting('data_directory') AS d`)).rows[0].d;
      for (const [file, pem] of [
        ['isocheck-test.crt', cert.cert],
        ['isocheck-test.key', cert.key],
      ] as const) {
        const literal = `ARRAY[${lines(pem)
          .map((l) => pg.escapeLiteral(l))
          .join(',')}]`;
        const to = `umask 077 && cat > '${join(data, file)}'`;
        await setup.query(`COPY (SELECT unnest(${literal})) TO PROGRAM ${pg.escapeLiteral(to)}`);
      }
      await setup.query(`ALTER SYSTEM SET ssl_cert_file = 'isocheck-test.crt'`);
      await setup.query(`ALTER SYSTEM SET ssl_key_file = 'isocheck-test.key'`);
      await setup.query('ALTER SYSTEM SET ssl = on');
      await setup.query('SELECT pg_reload_conf()');
      await new Promise((r) => setTimeout(r, 500));
      const u = new URL(server.url);
      u.searchParams.set('sslmode', 'require');
      sslUrl = u.toString();
    }
  }
  await setup.end();
}, 120_000);

afterAll(async () => {
  for (const p of proxies) await p.close().catch(() => undefined);
  await server?.stop();
});

describe.skipIf(!openssl)(
  `isocheck proxy and TLS${openssl ? '' : ' (skipped: no openssl to make a certificate)'}`,
  () => {
    it('accepts TLS from pg (ssl) and psql (sslmode=require), and to a server whose URL asks for it', async () => {
      expect(cert, 'openssl made no certificate').toBeDefined();
      expect(sslUrl, 'the server did not turn ssl on').toBeDefined();
      const p = await proxy('tls', { db: sslUrl!, tls: cert });
      expect(p.tls).toBe(true);
      const c = await connect({ connectionString: p.url, ssl: { rejectUnauthorized: false } });
      expect((c as unknown as { connection: { stream: { encrypted?: boolean } } }).connection.stream.encrypted).toBe(
        true,
      );
      // the proxy's own server connection is encrypted too (pg_stat_ssl of the server process serving it)
      const ssl = await c.query('SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()');
      expect(ssl.rows).toEqual([{ ssl: true }]);
      await c.query('BEGIN ISOLATION LEVEL REPEATABLE READ');
      expect((await c.query('SELECT bal FROM accounts WHERE id = $1', [1])).rows).toEqual([{ bal: 100 }]);
      await c.query('UPDATE accounts SET bal = bal + $1 WHERE id = $2', [1, 1]);
      await c.query('COMMIT');
      await c.end();
      if (psql) {
        const u = new URL(p.url);
        u.searchParams.set('sslmode', 'require');
        const out = await runPsql(u.toString(), [
          '-c',
          '\\conninfo',
          '-c',
          'UPDATE accounts SET bal = bal - 1 WHERE id = 1',
        ]);
        expect(out).toMatch(/SSL connection \(protocol: TLS/);
      }
      await p.close();
      const txns = txnsOf('tls');
      expect(txns.filter((t) => t.status === 'committed')).toHaveLength(psql ? 2 : 1);
      expect((await check(join(dir, 'tls.ndjson'))).verdict).toBe('consistent');
      // the server's sslmode as libpq reads it: verify-full refuses a self-signed certificate, verify-ca takes it when
      // sslrootcert names it
      const withMode = (mode: Record<string, string>): string => {
        const u = new URL(sslUrl!);
        for (const [k, v] of Object.entries(mode)) u.searchParams.set(k, v);
        return u.toString();
      };
      await expect(proxy('verify-full', { db: withMode({ sslmode: 'verify-full' }) })).rejects.toThrow(/self.signed/);
      const ca = await proxy('verify-ca', {
        db: withMode({ sslmode: 'verify-ca', sslrootcert: join(dir, 'proxy.crt') }),
      });
      const e = await connect({ connectionString: ca.url });
      expect((await e.query('SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()')).rows).toEqual([{ ssl: true }]);
      await e.end();
      // without a certificate the proxy says no: sslmode=require gives up, pg without ssl connects in clear
      const plain = await proxy('plain');
      expect(plain.tls).toBe(false);
      await expect(connect({ connectionString: plain.url, ssl: { rejectUnauthorized: false } })).rejects.toThrow(
        /does not support SSL/,
      );
      const d = await connect({ connectionString: plain.url });
      expect((await d.query('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
      await d.end();
    }, 60_000);
  },
);

describe('isocheck proxy and COPY', () => {
  it.skipIf(!psql)(
    `relays psql's \\copy from and to a file${psql ? '' : ' (skipped: no psql)'}`,
    async () => {
      const p = await proxy('copy-psql');
      const csv = join(dir, 'notes.csv');
      writeFileSync(csv, Array.from({ length: 500 }, (_, i) => `${i + 1},"note ${i + 1}, with a comma"`).join('\n'));
      await runPsql(p.url, ['-c', `\\copy notes (id, body) from '${csv}' csv`]);
      const through = join(dir, 'through.csv');
      const direct = join(dir, 'direct.csv');
      await runPsql(p.url, ['-c', `\\copy (SELECT * FROM notes ORDER BY id) to '${through}' csv`]);
      await runPsql(server.url, ['-c', `\\copy (SELECT * FROM notes ORDER BY id) to '${direct}' csv`]);
      expect(readFileSync(through, 'utf8')).toBe(readFileSync(direct, 'utf8'));
      expect(readFileSync(through, 'utf8').split('\n')).toHaveLength(501);
      // bad data: the server's error mid-COPY reaches psql, and the connection goes on
      const bad = join(dir, 'bad.csv');
      writeFileSync(bad, '9001,fine\nnot-a-number,oops\n');
      const out = await run(psql!, [
        '-X',
        '-q',
        '-d',
        p.url,
        '-c',
        `\\copy notes from '${bad}' csv`,
        '-c',
        'SELECT 7 AS n',
      ]);
      expect(out).toMatch(/\b7\b/);
      await expect(runPsql(p.url, ['-c', `\\copy notes from '${bad}' csv`])).rejects.toThrow(
        /invalid input syntax for type integer/,
      );
      // a COPY of a recorded table the recorder does not record (FOR UPDATE): refused (0A000), the rows untouched
      // (COPY TO of recorded tables is recorded: test/proxy-copy-recorded.test.ts)
      const locking = `\\copy (SELECT id FROM accounts FOR UPDATE) to '${join(dir, 'a.csv')}' csv`;
      await expect(runPsql(p.url, ['-c', locking])).rejects.toThrow(/isocheck.*COPY of a SELECT \.\.\. FOR UPDATE/);
      await p.close();
      // --on-unsupported pass: relayed, with a warning
      const warnings: string[] = [];
      const passing = await proxy('copy-pass', { onUnsupported: 'pass', onWarning: (w) => warnings.push(w) });
      await runPsql(passing.url, ['-c', locking]);
      expect(readFileSync(join(dir, 'a.csv'), 'utf8').trim().split('\n')).toHaveLength(6);
      expect(warnings.join('\n')).toMatch(
        /passed through unrecorded \(--on-unsupported pass\): COPY +\( SELECT id FROM accounts FOR UPDATE \) TO STDOUT/,
      );
    },
    60_000,
  );

  it.skipIf(!python)(
    `relays psycopg2's copy_expert, and its CopyFail${python ? '' : ' (skipped: no psycopg2)'}`,
    async () => {
      const p = await proxy('copy-psycopg2');
      const script = `
import io, sys, json, psycopg2
c = psycopg2.connect(sys.argv[1])
cur = c.cursor()
cur.copy_expert("COPY notes (id, body) FROM STDIN WITH (FORMAT csv)", io.StringIO("2001,a\\n2002,b\\n2003,\\n"))
c.commit()
out = io.StringIO()
cur.copy_expert("COPY (SELECT id, body FROM notes WHERE id > 2000 ORDER BY id) TO STDOUT WITH (FORMAT csv)", out)
class Broken(io.StringIO):
    def read(self, *a):
        raise IOError("the file broke")
failed = None
try:
    cur.copy_expert("COPY notes FROM STDIN", Broken())
except Exception as e:
    failed = str(e)
c.rollback()
cur.execute("SELECT count(*) FROM notes WHERE id > 2000")
print(json.dumps({"out": out.getvalue(), "failed": failed, "count": cur.fetchone()[0]}))
`;
      writeFileSync(join(dir, 'copy.py'), script);
      const r = JSON.parse(await run(python!, [join(dir, 'copy.py'), p.url]));
      expect(r.out).toBe('2001,a\n2002,b\n2003,\n');
      expect(r.failed).toMatch(/the file broke/);
      expect(r.count).toBe(3);
    },
    30_000,
  );

  it('takes COPY data sent before its CopyInResponse (as pgx sends it), ignores it after a failed COPY', async () => {
    const p = await proxy('copy-pipelined');
    const c = await rawClient(p.port);
    c.send(
      serialize.query('COPY notes (id, body) FROM STDIN'),
      serialize.copyData(Buffer.from('3001\tpipelined\n3002\t\\N\n')),
      serialize.copyDone(),
      // a COPY that fails at once: its data is ignored, as PostgreSQL ignores it
      serialize.query('COPY nosuch FROM STDIN'),
      serialize.copyData(Buffer.from('1\n')),
      serialize.copyDone(),
      serialize.query('SELECT id, body FROM notes WHERE id > 3000 ORDER BY id'),
    );
    const got = await c.readies(3);
    expect(got.map((m) => m.name)).toEqual([
      'copyInResponse',
      'commandComplete',
      'readyForQuery',
      'error',
      'readyForQuery',
      'rowDescription',
      'dataRow',
      'dataRow',
      'commandComplete',
      'readyForQuery',
    ]);
    expect(got[1]).toMatchObject({ text: 'COPY 2' });
    expect(got[3]).toMatchObject({ code: '42P01' });
    expect(got.filter((m) => m.name === 'dataRow').map((m) => m.fields)).toEqual([
      ['3001', 'pipelined'],
      ['3002', null],
    ]);
    await c.close();
  });

  it('refuses COPY through the extended protocol with a clear error', async () => {
    const p = await proxy('copy-extended');
    const c = await rawClient(p.port);
    c.send(
      serialize.parse({ text: 'COPY notes TO STDOUT' }),
      serialize.bind({}),
      serialize.execute(),
      serialize.sync(),
      serialize.query('SELECT 1'),
    );
    const got = await c.readies(2);
    expect(got.map((m) => m.name)).toEqual([
      'parseComplete',
      'bindComplete',
      'error',
      'readyForQuery',
      'rowDescription',
      'dataRow',
      'commandComplete',
      'readyForQuery',
    ]);
    expect(got[2]).toMatchObject({ code: '0A000', message: expect.stringMatching(/simple query protocol only/) });
    await c.close();
  });
});

describe('isocheck proxy and declared parameter types', () => {
  it('passes the types a Parse declares to the server, for recorded and other statements', async () => {
    const p = await proxy('types');
    {
      const c = await rawClient(p.port);
      c.send(
        serialize.parse({ text: 'SELECT id, $1 AS x FROM accounts WHERE id = $2', types: [23, 23] }),
        serialize.bind({ values: ['7', '2'] }),
        serialize.describe({ type: 'P' }),
        serialize.execute(),
        // unknown + unknown is ambiguous to the server unless the types are declared
        serialize.parse({ text: 'SELECT id FROM accounts WHERE bal > $1 + $2 AND id = 3', types: [20, 20] }),
        serialize.bind({ values: ['10', '20'] }),
        serialize.describe({ type: 'P' }),
        serialize.execute(),
        serialize.parse({ text: 'SELECT $1 + $2 AS s', types: [20, 20] }),
        serialize.bind({ values: ['40', '2'] }),
        serialize.describe({ type: 'P' }),
        serialize.execute(),
        serialize.sync(),
      );
      const got = await c.readies(1);
      expect(got.filter((m) => m.name === 'error')).toEqual([]);
      const descs = got.filter((m) => m.name === 'rowDescription') as unknown as {
        fields: { name: string; dataTypeID: number }[];
      }[];
      expect(descs.map((d) => d.fields.map((f) => [f.name, f.dataTypeID]))).toEqual([
        [
          ['id', 23],
          ['x', 23],
        ],
        [['id', 23]],
        [['s', 20]],
      ]);
      const rows = got.filter((m) => m.name === 'dataRow').map((m) => (m.fields as string[]).map(String));
      expect(rows).toEqual([['2', '7'], ['3'], ['42']]);
      // the same text with other types is another statement on the server
      c.send(
        serialize.parse({ text: 'SELECT id, $1 AS x FROM accounts WHERE id = $2', types: [20, 23] }),
        serialize.bind({ values: ['5000000000', '2'] }),
        serialize.describe({ type: 'P' }),
        serialize.execute(),
        serialize.sync(),
      );
      const again = await c.readies(1);
      const d = again.find((m) => m.name === 'rowDescription') as unknown as { fields: { dataTypeID: number }[] };
      expect(d.fields.map((f) => f.dataTypeID)).toEqual([23, 20]);
      expect(again.find((m) => m.name === 'dataRow')?.fields).toEqual(['2', '5000000000']);
      // DISCARD ALL drops the server's prepared statements: the proxy prepares its typed ones again
      c.send(serialize.query('DISCARD ALL'));
      await c.readies(1);
      c.send(
        serialize.parse({ text: 'SELECT id, $1 AS x FROM accounts WHERE id = $2', types: [20, 23] }),
        serialize.bind({ values: ['6', '2'] }),
        serialize.execute(),
        serialize.sync(),
      );
      const discarded = await c.readies(1);
      expect(discarded.filter((m) => m.name === 'error')).toEqual([]);
      expect(discarded.find((m) => m.name === 'dataRow')?.fields).toEqual(['2', '6']);
      await c.close();
    }
    await p.close();
    // the first three Executes before one Sync are one (implicit) transaction
    expect(txnsOf('types').filter((t) => t.status === 'committed')).toHaveLength(3);
  });

  it.skipIf(!java || !jdbcJar)(
    `gives JDBC the types it declared (setInt, setLong), over TLS${java && jdbcJar ? '' : ' (skipped: no JDBC)'}`,
    async () => {
      // over TLS when openssl made a certificate (pgjdbc's sslmode=require: encrypted, not verified)
      const p = await proxy('types-jdbc', cert ? { tls: cert } : {});
      const src = join(dir, 'Types.java');
      writeFileSync(
        src,
        `import java.sql.*;
public class Types {
  public static void main(String[] args) throws Exception {
    try (Connection c = DriverManager.getConnection(args[0])) {
      StringBuilder out = new StringBuilder();
      try (PreparedStatement s = c.prepareStatement("SELECT id, ? AS x, ? + ? AS y FROM accounts WHERE id = ?")) {
        s.setInt(1, 7);
        s.setLong(2, 40L);
        s.setLong(3, 2L);
        s.setInt(4, 3);
        try (ResultSet r = s.executeQuery()) {
          r.next();
          out.append(r.getObject(2).getClass().getSimpleName()).append(' ').append(r.getObject(2)).append(' ');
          out.append(r.getObject(3).getClass().getSimpleName()).append(' ').append(r.getObject(3));
        }
      }
      System.out.println(out);
    }
  }
}
`,
      );
      const url =
        `jdbc:postgresql://${p.host}:${p.port}/postgres?user=postgres&connectTimeout=5&socketTimeout=20` +
        (cert ? '&sslmode=require' : '');
      const out = await run(java!, ['-cp', jdbcJar!, src, url]);
      expect(out.trim()).toBe('Integer 7 Long 42');
      await p.close();
      expect(txnsOf('types-jdbc').filter((t) => t.status === 'committed')).toHaveLength(1);
    },
    60_000,
  );
});

describe('isocheck proxy and error positions', () => {
  it('maps positions in the rewritten text back to the client text', () => {
    const original = 'select *\n  from accounts where nosuch = 1';
    const rewritten = 'SELECT id, bal, owner, accounts._isocheck_wid AS __isocheck_0 FROM accounts WHERE nosuch = 1';
    expect(mapPosition(original, rewritten, rewritten.indexOf('nosuch') + 1)).toBe(original.indexOf('nosuch') + 1);
    // a token the recorder added has no place in the client's text
    expect(mapPosition(original, rewritten, rewritten.indexOf('_isocheck_wid') + 1)).toBeUndefined();
    // characters, not bytes
    const o = `select 'héé' , nosuch from accounts`;
    const r = `SELECT 'héé', nosuch, accounts._isocheck_wid FROM accounts`;
    expect(mapPosition(o, r, r.indexOf('nosuch') + 1)).toBe(o.indexOf('nosuch') + 1);
  });

  it('gives the position in the client text (extended and simple protocols) as a direct connection does', async () => {
    const p = await proxy('positions');
    const through = await connect({ connectionString: p.url });
    const direct = await connect({ connectionString: server.url });
    const cases: [string, unknown[] | undefined][] = [
      ['SELECT * FROM accounts WHERE nosuch = $1', [1]],
      ['select id,\n  bal from accounts where id = $1 and bal > nosuch', [1]],
      ['UPDATE accounts SET bal = bal + 1 WHERE id = $1 AND nosuch', [1]],
      ['SELECT 1 AS one; SELECT bal FROM accounts WHERE idx = 1', undefined],
      ['SELECT * FROM accounts a JOIN notes n ON n.idd = a.id', undefined],
    ];
    for (const [text, values] of cases) {
      const error = async (c: pg.Client): Promise<unknown> =>
        c.query(text, values).then(
          () => 'no error',
          (e: pg.DatabaseError) => [e.code, e.message, e.position],
        );
      const a = await error(through);
      const b = await error(direct);
      expect(a, text).toEqual(b);
      expect(Number((a as string[])[2])).toBeLessThanOrEqual(text.length);
    }
    await through.end();
    await direct.end();
  });

  it('describes a portal before its Execute: run once, or not at all without one; client positions', async () => {
    const p = await proxy('early-describe');
    const c = await rawClient(p.port);
    c.send(
      serialize.parse({ text: 'SELECT id, bal FROM accounts WHERE id <= $1 ORDER BY id' }),
      serialize.bind({ values: ['2'] }),
      serialize.describe({ type: 'P' }),
      serialize.execute({ rows: 1 }),
      serialize.execute({ rows: 1 }),
      serialize.execute({ rows: 1 }),
      serialize.sync(),
    );
    const ok = await c.readies(1);
    expect(ok.map((m) => m.name)).toEqual([
      'parseComplete',
      'bindComplete',
      'rowDescription',
      'dataRow',
      'portalSuspended',
      'dataRow',
      // the second Execute reached its limit: PostgreSQL suspends the portal, and the third gets "SELECT 0"
      'portalSuspended',
      'commandComplete',
      'readyForQuery',
    ]);
    const text = 'SELECT id, bal FROM accounts WHERE bal / $1 > nosuch';
    c.send(
      serialize.parse({ text }),
      serialize.bind({ values: ['0'] }),
      serialize.describe({ type: 'P' }),
      serialize.execute(),
      serialize.sync(),
    );
    const bad = await c.readies(1);
    // an unknown column fails at the Parse: its error comes in place of ParseComplete, as from the server
    expect(bad.map((m) => m.name)).toEqual(['error', 'readyForQuery']);
    expect(bad[0]).toMatchObject({ code: '42703', position: String(text.indexOf('nosuch') + 1) });
    // described with no Execute in sight (then closed): the server describes it, nothing runs
    const update = 'UPDATE accounts SET bal = bal + 1000 WHERE id = $1 RETURNING bal';
    c.send(
      serialize.parse({ text: update }),
      serialize.bind({ values: ['4'], binary: true }),
      serialize.describe({ type: 'P' }),
      serialize.flush(),
    );
    await new Promise((r) => setTimeout(r, 300));
    c.send(serialize.close({ type: 'P', name: '' }), serialize.sync());
    const unexecuted = await c.readies(1);
    expect(unexecuted.map((m) => m.name)).toEqual([
      'parseComplete',
      'bindComplete',
      'rowDescription',
      'closeComplete',
      'readyForQuery',
    ]);
    expect((unexecuted[2].fields as { name: string; format: string }[]).map((f) => [f.name, f.format])).toEqual([
      ['bal', 'binary'],
    ]);
    // described, then executed in a later message: one run
    c.send(serialize.bind({ values: ['4'] }), serialize.describe({ type: 'P' }), serialize.flush());
    await new Promise((r) => setTimeout(r, 200));
    c.send(serialize.execute(), serialize.sync());
    const later = await c.readies(1);
    expect(later.map((m) => m.name)).toEqual([
      'bindComplete',
      'rowDescription',
      'dataRow',
      'commandComplete',
      'readyForQuery',
    ]);
    expect(later[2].fields).toEqual(['1100']);
    await c.close();
    await p.close();
    // the read ran once (one transaction of one read), the update once
    const txns = txnsOf('early-describe');
    expect(txns.filter((t) => t.status === 'committed').map((t) => t.events.map((e) => e.op))).toEqual([
      ['select'],
      ['update'],
    ]);
  });

  it('fetches a SELECT with a row limit as a server portal: partial while rows are left, whole when done', async () => {
    const p = await proxy('fetched');
    const c = await rawClient(p.port);
    const select = (portal: string, rows: number): Buffer[] => [
      serialize.parse({ text: 'SELECT id, bal FROM accounts WHERE id <= $1 ORDER BY id' }),
      serialize.bind({ portal, values: ['3'] }),
      serialize.describe({ type: 'P', name: portal }),
      serialize.execute({ portal, rows }),
    ];
    // a block: two parts of one row, another statement between them, then COMMIT with a row left
    c.send(serialize.query('BEGIN'), ...select('a', 1), serialize.sync());
    await c.readies(2);
    c.send(
      serialize.parse({ text: 'UPDATE accounts SET bal = bal + 1 WHERE id = $1' }),
      serialize.bind({ values: ['6'] }),
      serialize.execute(),
      serialize.execute({ portal: 'a', rows: 1 }),
      serialize.sync(),
    );
    const second = await c.readies(1);
    expect(second.filter((m) => m.name === 'dataRow').map((m) => m.fields)).toEqual([['2', '100']]);
    expect(second.map((m) => m.name)).toContain('portalSuspended');
    // the server's portal is open while the client's is, and closed with it (at the next statement)
    const cursors = "SELECT count(*) FROM pg_cursors WHERE name LIKE '\\_\\_isocheck%'";
    c.send(serialize.query(cursors));
    expect((await c.readies(1)).find((m) => m.name === 'dataRow')?.fields).toEqual(['1']);
    c.send(serialize.close({ type: 'P', name: 'a' }), serialize.sync(), serialize.query(cursors));
    expect((await c.readies(2)).find((m) => m.name === 'dataRow')?.fields).toEqual(['0']);
    c.send(serialize.query('COMMIT'));
    await c.readies(1);
    // outside a block: parts of two rows until the portal's end (the implicit transaction lasts to the Sync)
    c.send(
      ...select('b', 2),
      serialize.execute({ portal: 'b', rows: 2 }),
      serialize.execute({ portal: 'b', rows: 2 }),
      serialize.sync(),
    );
    const whole = await c.readies(1);
    expect(whole.map((m) => m.name)).toEqual([
      'parseComplete',
      'bindComplete',
      'rowDescription',
      'dataRow',
      'dataRow',
      'portalSuspended',
      'dataRow',
      'commandComplete',
      'commandComplete',
      'readyForQuery',
    ]);
    // a part that fails: its rows before the error, then the error (the rows after it never computed)
    c.send(
      // (no ORDER BY: a sort would compute every row before the first; a scan computes them as they are fetched)
      serialize.parse({ text: 'SELECT 10 / (3 - id) AS q FROM accounts WHERE id <= $1' }),
      serialize.bind({ portal: 'c', values: ['5'] }),
      serialize.execute({ portal: 'c', rows: 1 }),
      serialize.execute({ portal: 'c', rows: 3 }),
      serialize.sync(),
    );
    const failed = await c.readies(1);
    expect(failed.map((m) => m.name)).toEqual([
      'parseComplete',
      'bindComplete',
      'dataRow',
      'portalSuspended',
      'dataRow',
      'error',
      'readyForQuery',
    ]);
    expect(failed[5]).toMatchObject({ code: '22012' });
    await c.close();
    await p.close();
    const reads = txnsOf('fetched')
      .filter((t) => t.status === 'committed')
      .map((t) =>
        t.events.map((e) => {
          const { op, partial, rows } = e as { op: string; partial?: boolean; rows: unknown[] };
          return [op, partial === true, rows.length];
        }),
      );
    // the block's read: the two rows fetched, partial; the update after it; the implicit transaction's: whole
    expect(reads).toEqual([
      [
        ['select', true, 2],
        ['update', false, 1],
      ],
      [['select', false, 3]],
    ]);
    expect((await check(join(dir, 'fetched.ndjson'))).verdict).toBe('consistent');
  });
});

describe('isocheck proxy and named sessions', () => {
  it('makes the connections of one application_name isocheck:NAME one history session', async () => {
    const p = await proxy('named');
    const named = { connectionString: p.url, application_name: 'isocheck:alice' };
    for (const delta of [1, 2]) {
      const c = await connect(named);
      await c.query('BEGIN');
      await c.query('UPDATE accounts SET bal = bal + $1 WHERE id = $2', [delta, 5]);
      await c.query('COMMIT');
      await c.end();
    }
    // one logical client: its transactions do not overlap (another connection's statement is refused meanwhile)
    const [x, y] = await Promise.all([connect(named), connect(named)]);
    await x.query('BEGIN');
    await x.query('SELECT bal FROM accounts WHERE id = $1', [5]);
    await expect(y.query('SELECT bal FROM accounts WHERE id = $1', [5])).rejects.toThrow(/transaction open/);
    await x.query('COMMIT');
    expect((await y.query('SELECT bal FROM accounts WHERE id = $1', [5])).rows).toEqual([{ bal: 103 }]);
    await x.end();
    await y.end();
    const other = await connect({ connectionString: p.url, application_name: 'isocheck:bob' });
    const plain = await connect({ connectionString: p.url, application_name: 'psql' });
    await other.query('UPDATE accounts SET bal = bal + 1 WHERE id = 6');
    await plain.query('UPDATE accounts SET bal = bal + 1 WHERE id = 6');
    // the server sees the application_name the client gave
    expect((await plain.query('SHOW application_name')).rows).toEqual([{ application_name: 'psql' }]);
    await other.end();
    await plain.end();
    if (psql)
      await runPsql(`${p.url}?application_name=isocheck%3Aalice`, ['-c', 'SELECT bal FROM accounts WHERE id = 5']);
    await p.close();
    const txns = txnsOf('named');
    const sessions = txns.map((t) => t.session);
    expect(txns).toHaveLength(psql ? 7 : 6);
    // alice's transactions (two updates, two reads, psql's read) are one session; bob's and the unnamed one their own
    for (const i of [1, 2, 3, ...(psql ? [6] : [])]) expect(sessions[i]).toBe(sessions[0]);
    expect(new Set(sessions).size).toBe(3);
    expect((await check(join(dir, 'named.ndjson'))).verdict).toBe('consistent');
  });
});
