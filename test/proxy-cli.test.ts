// `isocheck proxy` as a user runs it (the CLI built into a private folder): without --db it starts the embedded
// server and prints the URL for clients; a table created through the proxy is instrumented before its first use;
// SIGTERM finishes the history (a transaction left open is written aborted, then the end line) and exits 0. With
// ISOCHECK_PROXY_TLS_CERT/KEY (a certificate openssl makes, when installed) a client connects with TLS.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { buildPrivateCli } from './helpers/private-cli.js';
import { parseListen, readTls } from '../src/cli/proxy-command.js';
import { which } from './helpers/which.js';
import { selfSignedCertificate } from './helpers/self-signed.js';

const dir = mkdtempSync(join(tmpdir(), 'isocheck-proxy-cli-'));
let bin: string;
let child: ChildProcess | undefined;

beforeAll(() => {
  bin = buildPrivateCli(join(dir, 'cli'));
}, 180_000);

afterAll(() => {
  if (child && child.exitCode === null) child.kill('SIGKILL');
});

describe('isocheck proxy (command line)', () => {
  it('parses --listen', () => {
    expect(parseListen('127.0.0.1:6543')).toEqual({ host: '127.0.0.1', port: 6543 });
    expect(parseListen('[::1]:0')).toEqual({ host: '::1', port: 0 });
    expect(parseListen('7000')).toEqual({ host: '127.0.0.1', port: 7000 });
    expect(() => parseListen('here')).toThrow(/--listen here: expected HOST:PORT/);
  });

  it('reads the TLS certificate and key, and says what is wrong with them', () => {
    expect(readTls(undefined, undefined)).toBeUndefined();
    expect(() => readTls(join(dir, 'c.pem'), undefined)).toThrow(/--tls-cert and --tls-key .* go together/);
    expect(() => readTls(join(dir, 'none.pem'), join(dir, 'none.key'))).toThrow(/--tls-cert .*none\.pem: ENOENT/);
    writeFileSync(join(dir, 'junk.pem'), 'not a certificate\n');
    expect(() => readTls(join(dir, 'junk.pem'), join(dir, 'junk.pem'))).toThrow(/--tls-cert .*junk\.pem \/ --tls-key/);
  });

  it('starts the embedded server, records, and finishes the file on SIGTERM', async () => {
    const out = join(dir, 'run.ndjson');
    // with a certificate (--tls-cert/--tls-key) when openssl can make one: client a connects with TLS
    const pem = selfSignedCertificate(which('openssl'), dir);
    const tls = pem !== undefined;
    // the certificate as options (--tls-cert/--tls-key); ISOCHECK_PROXY_TLS_CERT/KEY are read the same way (readTls)
    const tlsArgs = pem ? ['--tls-cert', pem.cert, '--tls-key', pem.key] : [];
    const c = spawn(
      process.execPath,
      [bin, 'proxy', '--listen', '127.0.0.1:0', '--tables', 'accounts', '--out', out, ...tlsArgs],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    child = c;
    let stderr = '';
    c.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    const url = await new Promise<string>((resolve, reject) => {
      let stdout = '';
      const timer = setTimeout(() => reject(new Error(`no URL printed in 20 s; stderr: ${stderr}`)), 20_000);
      c.stdout!.on('data', (d: Buffer) => {
        stdout += d.toString();
        const line = /^(postgres\S+)\n/m.exec(stdout);
        if (line) {
          clearTimeout(timer);
          resolve(line[1]);
        }
      });
      c.once('exit', () => reject(new Error(`the proxy exited: ${stderr}`)));
    });
    expect(stderr).toMatch(/accounts not found yet/);
    if (tls) expect(stderr).toMatch(/clients may connect with TLS/);
    const a = new pg.Client({
      connectionString: url,
      connectionTimeoutMillis: 5000,
      query_timeout: 10_000,
      ...(tls ? { ssl: { rejectUnauthorized: false } } : {}),
    });
    const b = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5000, query_timeout: 10_000 });
    a.on('error', () => undefined);
    b.on('error', () => undefined);
    await a.connect();
    await b.connect();
    if (tls)
      expect((a as unknown as { connection: { stream: { encrypted?: boolean } } }).connection.stream.encrypted).toBe(
        true,
      );
    await a.query('CREATE TABLE accounts (id int4 PRIMARY KEY, bal int4 NOT NULL)');
    await a.query('INSERT INTO accounts VALUES (1, 100), (2, 100)');
    await a.query('UPDATE accounts SET bal = bal - $1 WHERE id = $2', [10, 1]);
    await b.query('BEGIN');
    expect((await b.query('SELECT bal FROM accounts WHERE id = $1', [1])).rows).toEqual([{ bal: 90 }]);
    const exited = new Promise<number | null>((resolve) => c.once('exit', (code) => resolve(code)));
    c.kill('SIGTERM');
    const timeout = new Promise<'timeout'>((resolve) => setTimeout(() => resolve('timeout'), 20_000));
    expect(await Promise.race([exited, timeout])).toBe(0);
    await a.end().catch(() => undefined);
    await b.end().catch(() => undefined);
    expect(stderr).toMatch(/3 transactions \(2 committed, 1 aborted, 0 unknown\)/);
    const lines = readFileSync(out, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    // instrumented once created, before the INSERT: no initial rows, the INSERT recorded
    expect(lines.filter((l) => l.kind === 'init' && l.rows.length > 0)).toEqual([]);
    expect(lines.filter((l) => l.kind === 'table').map((l) => l.name)).toEqual(['accounts']);
    const txns = lines.filter((l) => l.kind === 'txn');
    expect(txns.map((t) => [t.status, t.events.map((e: { op: string }) => e.op).join(',')])).toEqual([
      ['committed', 'insert'],
      ['committed', 'update'],
      ['aborted', 'select'],
    ]);
    expect(lines.at(-1).kind).toBe('end');
  }, 30_000);
});
