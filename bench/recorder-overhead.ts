/**
 * Benchmark: the recorder's overhead. The same SmallBank transactions (same seed, same sessions) run twice on
 * one embedded PostgreSQL, once with plain pg clients and once through the recorder, and the throughput of
 * both is reported with its ratio. Run: npm run bench -- recorder-smallbank [TXNS_PER_SESSION] [SESSIONS] (the ORM
 * apps: bench -- recorder)
 */
import pg from 'pg';
import seedrandom from 'seedrandom';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openDatabase } from '../src/db/connect.js';
import { Recorder } from '../src/recorder/index.js';
import { getWorkload, beginStatement, levelFor, pickType, RollbackError, type Queryable } from '../workloads/index.js';

export async function runRecorderBench(txns = 300, sessions = 4): Promise<void> {
  const db = await openDatabase({});
  const workload = getWorkload('smallbank');
  const dir = mkdtempSync(join(tmpdir(), 'isocheck-overhead-'));
  try {
    console.log(
      `database: ${db.description}; workload smallbank, ${sessions} sessions x ${txns} transactions, SERIALIZABLE`,
    );
    const results: Record<string, number> = {};
    for (const mode of ['plain', 'recorded', 'plain', 'recorded'] as const) {
      const admin = new pg.Client({ connectionString: db.url });
      await admin.connect();
      const name = `overhead_${mode}_${Date.now()}`;
      await admin.query(`CREATE DATABASE ${name}`);
      const url = db.url.replace(/\/[^/?]*(\?|$)/, `/${name}$1`);
      const setup = new pg.Client({ connectionString: url });
      await setup.connect();
      await setup.query(workload.schema());
      await workload.load(setup, await workload.generate(dir, '1', 1));
      const recorder =
        mode === 'recorded'
          ? new Recorder({ file: join(dir, `${name}.ndjson`), onWarning: () => undefined })
          : undefined;
      if (recorder) await recorder.instrument(setup, workload.tables);
      await setup.end();
      const ctx = workload.context(1);
      const clients: pg.Client[] = [];
      for (let s = 0; s < sessions; s++) {
        const c = new pg.Client({ connectionString: url });
        await c.connect();
        clients.push(c);
      }
      let committed = 0;
      const t0 = performance.now();
      await Promise.all(
        clients.map(async (c, s) => {
          const db: Queryable = recorder ? recorder.client(c) : c;
          const rng = seedrandom(`1/session/${s + 1}`);
          for (let i = 0; i < txns; i++) {
            const type = pickType(workload.mix, rng);
            for (;;) {
              try {
                await db.query(beginStatement(levelFor(workload.configs.ser, type)));
                await workload.transaction(type, db, rng, ctx);
                await db.query('COMMIT');
                committed++;
                break;
              } catch (e) {
                await db.query('ROLLBACK').catch(() => undefined);
                if (e instanceof RollbackError) break;
                if (['40001', '40P01'].includes((e as { code?: string }).code ?? '')) continue;
                throw e;
              }
            }
          }
        }),
      );
      const secs = (performance.now() - t0) / 1000;
      recorder?.finish();
      for (const c of clients) await c.end();
      await admin.query(`DROP DATABASE ${name} WITH (FORCE)`);
      await admin.end();
      results[mode] = committed / secs;
      console.log(
        `${mode.padEnd(9)} ${committed} committed in ${secs.toFixed(2)} s: ${(committed / secs).toFixed(0)} ` +
          `transactions/s`,
      );
    }
    console.log(
      `recording costs ${((1 - results.recorded / results.plain) * 100).toFixed(0)}% of the throughput ` +
        `(recorded/plain = ${(results.recorded / results.plain).toFixed(2)}, last round of each)`,
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
    await db.close();
  }
}
