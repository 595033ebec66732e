// isocheck proxy under sysbench (Debian's sysbench 1.0, a C benchmark over libpq with server-side prepared
// statements): oltp_read_write, whose transactions read ranges, sum and sort them, update by key, and delete a row
// and insert it again. At REPEATABLE READ its history checks consistent at SI. At READ COMMITTED the checker may find
// what PostgreSQL does there: an UPDATE or DELETE that misses a row a concurrent transaction deleted and inserted
// again (the row it waited for is gone, the new one is not in its snapshot), an intermediate read by docs/semantics.md
// (§1.5), reported as a missing row; the first test makes it happen on purpose, with two pg clients through the
// proxy. The sysbench tests are skipped, with the reason, when sysbench is not installed.
import { describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { check } from '../src/index.js';
import { readHistory } from '../src/history/reader.js';
import { startProxy } from '../src/proxy/proxy.js';
import { freshDatabase } from './helpers/fresh-database.js';
import { databaseWith } from './helpers/twin-databases.js';
import { program } from './helpers/program.js';
import { testServer } from './helpers/test-server.js';

const sysbench = spawnSync('sysbench', ['--version'], { stdio: 'ignore', timeout: 10_000 }).status === 0;
const dir = mkdtempSync(join(tmpdir(), 'isocheck-sysbench-'));
const db = testServer();

const connected = async (url: string): Promise<pg.Client> => {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  return c;
};

describe('isocheck proxy and a row deleted and inserted again by a concurrent transaction', () => {
  for (const [level, iso] of [
    ['READ COMMITTED', 'RC'],
    ['REPEATABLE READ', 'SI'],
  ] as const) {
    const what = iso === 'RC' ? 'the UPDATE misses it, a missing row' : 'the UPDATE fails, consistent';
    it(`at ${level}: ${what}`, async () => {
      const url = await databaseWith(db.server.url, db.admin, 'reinsert', [
        'CREATE TABLE acct (id int4 PRIMARY KEY, name text, bal int4)',
        "INSERT INTO acct VALUES (1, 'ann', 100), (2, 'bob', 50)",
      ]);
      const file = join(dir, `reinsert-${iso}.ndjson`);
      const proxy = await startProxy({ db: url, port: 0, tables: ['acct'], out: file, onWarning: () => undefined });
      const [a, b] = [await connected(proxy.url), await connected(proxy.url)];
      let updated: number | string;
      try {
        await a.query(`BEGIN ISOLATION LEVEL ${level}`);
        await a.query('DELETE FROM acct WHERE id = 1');
        await a.query("INSERT INTO acct (id, name, bal) VALUES (1, 'ann again', 5)");
        await b.query(`BEGIN ISOLATION LEVEL ${level}`);
        await b.query('SELECT bal FROM acct WHERE id = 2');
        // waits for the row a deleted
        const update = b.query('UPDATE acct SET bal = bal + 1 WHERE id = 1').then(
          (r) => r.rowCount ?? -1,
          (e: { code?: string }) => String(e.code),
        );
        for (let i = 0; i < 100; i++) {
          const w = await db.admin.query(
            "SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND " +
              "query LIKE 'UPDATE acct%'",
          );
          if (w.rows[0].n > 0) break;
          await new Promise((r) => setTimeout(r, 20));
        }
        await a.query('COMMIT');
        updated = await update;
        await b.query(typeof updated === 'number' ? 'COMMIT' : 'ROLLBACK');
      } finally {
        await a.end();
        await b.end();
        await proxy.close();
      }
      const result = await check(file);
      if (iso === 'RC') {
        // PostgreSQL: the row it waited for was deleted; the row inserted again is not in its snapshot
        expect(updated).toBe(0);
        expect(result.verdict).toBe('inconsistent');
        expect(result.anomalies.map((x) => [x.type, x.levels])).toEqual([['missing-row', ['RC']]]);
      } else {
        expect(updated).toBe('40001');
        expect(result.verdict, result.reason).toBe('consistent');
      }
    }, 60_000);
  }
});

const run = async (args: string[], env: NodeJS.ProcessEnv = {}): Promise<string> =>
  (await program('sysbench', args, { timeout: 120_000, env: { ...process.env, ...env } })).stdout;

describe.skipIf(!sysbench)(
  `isocheck proxy under sysbench${sysbench ? '' : ' (skipped: apt-get install sysbench)'}`,
  () => {
    for (const level of ['repeatable read', 'read committed']) {
      it(`records oltp_read_write at ${level}`, async () => {
        const url = new URL(await freshDatabase(db.admin, db.server.url, `sysbench_${level.split(' ')[0]}`));
        const conn = (u: URL): string[] => [
          '--db-driver=pgsql',
          `--pgsql-host=${u.hostname}`,
          `--pgsql-port=${u.port}`,
          `--pgsql-user=${decodeURIComponent(u.username)}`,
          `--pgsql-password=${decodeURIComponent(u.password)}`,
          `--pgsql-db=${u.pathname.slice(1)}`,
        ];
        const shape = ['oltp_read_write', '--tables=1', '--table-size=200'];
        await run([...shape, ...conn(url), 'prepare']);
        const file = join(dir, `sysbench-${level.split(' ')[0]}.ndjson`);
        const proxy = await startProxy({ db: url.toString(), port: 0, tables: ['sbtest1'], out: file });
        let out: string;
        try {
          const through = new URL(proxy.url);
          out = await run([...shape, ...conn(through), '--threads=4', '--time=3', 'run'], {
            PGOPTIONS: `-c default_transaction_isolation=${level.replace(' ', '\\ ')}`,
          });
        } finally {
          await proxy.close();
        }
        const done = Number(/transactions:\s+(\d+)/.exec(out)?.[1]);
        // (how many in its 3 seconds depends on the machine's load: 37-106 at repeatable read on a quiet machine,
        // 9 once under CI's parallel files; this checks that they ran and were recorded, not how fast)
        expect(done).toBeGreaterThan(0);
        const h = await readHistory(file);
        const committed = h.txns.filter((t) => t.status === 'committed');
        expect(committed.length).toBeGreaterThanOrEqual(done);
        // its reads: by key, ranges, sums, ORDER BY, DISTINCT
        const wheres = new Set(committed.flatMap((t) => t.events.flatMap((e) => ('where' in e ? [e.where] : []))));
        expect([...wheres].some((w) => /BETWEEN/i.test(String(w)))).toBe(true);
        const result = await check(file);
        if (level === 'repeatable read') expect(result.verdict, result.reason).toBe('consistent');
        // at READ COMMITTED, consistent, or PostgreSQL's missing rows of the test above only
        else if (result.verdict !== 'consistent') {
          expect(result.verdict, result.reason).toBe('inconsistent');
          expect(result.anomalies.length).toBeGreaterThan(0);
          for (const a of result.anomalies) expect([a.type, a.levels]).toEqual(['missing-row', ['RC']]);
        }
      }, 150_000);
    }
  },
);
