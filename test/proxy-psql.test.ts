// isocheck proxy with psql (simple protocol): a small bank at REPEATABLE READ on three concurrent psql processes,
// two of them a write skew. The history checks consistent at SI (as run) and shows the write skew at SER; what psql
// printed through the proxy is what it prints on a direct connection, and with FETCH_COUNT (psql then reads through
// a cursor) too, the cursor's read recorded.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { EmbeddedServer } from '../src/db/embedded.js';
import type { RunningProxy } from '../src/proxy/proxy.js';
import { proxiedServer } from './helpers/proxied-server.js';
import { check } from '../src/index.js';
import { which } from './helpers/which.js';

const psql = which('psql');
const dir = mkdtempSync(join(tmpdir(), 'isocheck-proxy-psql-'));
let server: EmbeddedServer;
let proxy: RunningProxy;

/** Runs psql (never longer than 20 s); its standard output. */
function runPsql(url: string, args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(
      psql!,
      ['-X', '-q', '-v', 'ON_ERROR_STOP=1', '-d', url, ...args],
      { timeout: 20_000, env: { ...process.env, PGCONNECT_TIMEOUT: '5' } },
      (err, stdout, stderr) => {
        if (err) reject(new Error(`psql failed: ${err.message}\n${stderr}`));
        else resolve(stdout);
      },
    );
  });
}

const skew = (id: number): string => `
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT id, bal FROM accounts WHERE id IN (1, 2) ORDER BY id;
SELECT pg_sleep(0.5);
UPDATE accounts SET bal = bal - 150 WHERE id = ${id};
COMMIT;
`;

const transfers = `
BEGIN ISOLATION LEVEL REPEATABLE READ;
UPDATE accounts SET bal = bal - 10 WHERE id = 3;
UPDATE accounts SET bal = bal + 10 WHERE id = 4;
COMMIT;
UPDATE accounts SET bal = bal - 5 WHERE id = 4; UPDATE accounts SET bal = bal + 5 WHERE id = 3;
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT id, bal FROM accounts WHERE id >= 3 ORDER BY id;
SELECT 1/0;
`;

describe.skipIf(!psql)(
  `isocheck proxy with psql${psql ? '' : ' (skipped: psql is not installed: apt-get install postgresql-client)'}`,
  () => {
    beforeAll(async () => {
      ({ server, proxy } = await proxiedServer(
        [
          'CREATE TABLE accounts (id int4 PRIMARY KEY, bal int4 NOT NULL)',
          'INSERT INTO accounts VALUES (1, 100), (2, 100), (3, 100), (4, 100)',
        ],
        ['accounts'],
        join(dir, 'run.ndjson'),
      ));
    }, 60_000);

    afterAll(async () => {
      await proxy?.close();
      await server?.stop();
    });

    it('records a bank run by three psql processes; consistent at SI, write skew at SER', async () => {
      writeFileSync(join(dir, 'skew1.sql'), skew(1));
      writeFileSync(join(dir, 'skew2.sql'), skew(2));
      writeFileSync(join(dir, 'transfers.sql'), transfers);
      const [a, b, t] = await Promise.allSettled([
        runPsql(proxy.url, ['-f', join(dir, 'skew1.sql')]),
        runPsql(proxy.url, ['-f', join(dir, 'skew2.sql')]),
        runPsql(proxy.url, ['-f', join(dir, 'transfers.sql')]),
      ]);
      expect(a.status).toBe('fulfilled');
      expect(b.status).toBe('fulfilled');
      // the last transaction fails (division by zero) and psql stops there, as on a direct connection
      expect(t.status).toBe('rejected');
      expect(String((t as PromiseRejectedResult).reason)).toMatch(/division by zero/);
      // one Query of two statements: PostgreSQL's implicit transaction, recorded as one transaction
      await runPsql(proxy.url, [
        '-c',
        'UPDATE accounts SET bal = bal - 1 WHERE id = 3; UPDATE accounts SET bal = bal + 1 WHERE id = 4',
      ]);
      const query = 'SELECT id, bal FROM accounts ORDER BY id';
      const through = await runPsql(proxy.url, ['-c', query]);
      const direct = await runPsql(server.url, ['-c', query]);
      expect(through).toBe(direct);
      expect(direct).toMatch(/1 \|\s+-50\s*\n\s*2 \|\s+-50/);
      // FETCH_COUNT: psql reads through a cursor (DECLARE _psql_cursor ..., FETCH FORWARD 2, CLOSE), recorded
      const fetched = ['-v', 'FETCH_COUNT=2', '-c', 'SELECT id, bal FROM accounts WHERE id <= 3 ORDER BY id'];
      expect(await runPsql(proxy.url, fetched)).toBe(await runPsql(server.url, fetched));
      await proxy.close();
      const own = await check(join(dir, 'run.ndjson'));
      expect(own.verdict).toBe('consistent');
      expect(own.stats.transactions).toBeGreaterThanOrEqual(6);
      const ser = await check(join(dir, 'run.ndjson'), { iso: 'SER' });
      expect(ser.verdict).toBe('inconsistent');
      const lines = readFileSync(join(dir, 'run.ndjson'), 'utf8')
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l));
      const txns = lines.filter((l) => l.kind === 'txn');
      expect(
        txns.some(
          (x) =>
            x.status === 'committed' &&
            x.events.length === 2 &&
            x.events.every((e: { op: string }) => e.op === 'update') &&
            x.events[0].where === 'id = 3' &&
            x.events[0].rows[0].row.bal === 94,
        ),
      ).toBe(true);
      expect(txns.filter((x) => x.status === 'aborted').map((x) => x.error?.code)).toEqual(['22012']);
      const cursorRead = txns.at(-1).events;
      expect(
        cursorRead.map((e: { where?: string; partial?: boolean; rows: unknown[] }) => [
          e.where,
          e.partial,
          e.rows.length,
        ]),
      ).toEqual([['id <= 3', undefined, 3]]);
      expect(lines.at(-1).kind).toBe('end');
    }, 30_000);
  },
);
