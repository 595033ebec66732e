// isocheck proxy under pgbench (PostgreSQL's own benchmark, Debian's postgresql package): its TPC-B-like
// transactions through the proxy in each query mode pgbench has (simple: values inlined in each Query; extended;
// prepared), at READ COMMITTED and at SERIALIZABLE with pgbench retrying serialization failures (--max-tries). Every
// transaction pgbench runs is recorded, retried ones as aborted, and the history checks consistent at the level it
// ran at. Skipped, with the reason, when pgbench is not installed.
import { describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startProxy } from '../src/proxy/proxy.js';
import { check } from '../src/index.js';
import { readHistory } from '../src/history/reader.js';
import { freshDatabase } from './helpers/fresh-database.js';
import { program } from './helpers/program.js';
import { testServer } from './helpers/test-server.js';

const ready = spawnSync('pgbench', ['--version'], { stdio: 'ignore', timeout: 10_000 }).status === 0;
const TABLES = ['pgbench_accounts', 'pgbench_branches', 'pgbench_tellers']; // (pgbench_history has no key)
const dir = mkdtempSync(join(tmpdir(), 'isocheck-pgbench-'));
const db = testServer(ready);

const pgbench = async (args: string[], env: NodeJS.ProcessEnv = {}): Promise<string> =>
  (await program('pgbench', args, { timeout: 120_000, env: { ...process.env, ...env } })).stdout;

describe.skipIf(!ready)(`isocheck proxy under pgbench${ready ? '' : ' (skipped: pgbench is not installed)'}`, () => {
  const cases: [string, string, string | undefined][] = [
    ['simple', 'read committed', undefined],
    ['extended', 'repeatable read', '--max-tries=1000'],
    ['prepared', 'serializable', '--max-tries=1000'],
  ];
  for (const [mode, level, retries] of cases) {
    it(`records its transactions in ${mode} mode at ${level}, consistent`, async () => {
      const url = await freshDatabase(db.admin, db.server.url, `pgbench_${mode}`);
      await pgbench(['-i', '-s', '1', '-q', url]);
      const file = join(dir, `${mode}.ndjson`);
      const proxy = await startProxy({ db: url, port: 0, tables: TABLES, out: file, onWarning: () => undefined });
      let out: string;
      try {
        const args = ['-n', '-c', '4', '-j', '2', '-t', '30', '-M', mode, ...(retries ? [retries] : []), proxy.url];
        out = await pgbench(args, { PGOPTIONS: `-c default_transaction_isolation=${level.replace(' ', '\\ ')}` });
      } finally {
        await proxy.close();
      }
      expect(out).toContain('number of transactions actually processed: 120/120');
      expect(out).toMatch(/number of failed transactions: 0 /);
      const h = await readHistory(file);
      // (and pgbench's own count(*) of pgbench_branches at its start, for the scale)
      expect(h.txns.filter((t) => t.status === 'committed').length).toBe(121);
      const own = await check(file);
      expect(own.verdict, own.reason).toBe('consistent');
    }, 150_000);
  }
});
