// `isocheck run`: one session and one seed give the same transactions (identical history lines but for times),
// and a run at the levels it asked for is consistent; a run whose signal aborts stops with its history finished.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openDatabase, type Database } from '../src/db/connect.js';
import { runWorkload, RunInterrupted } from '../src/cli/run-command.js';
import { readHistory } from '../src/history/reader.js';
import { checkFile } from '../src/cli/check-command.js';

let db: Database;
const dir = mkdtempSync(join(tmpdir(), 'isocheck-run-'));
beforeAll(async () => {
  db = await openDatabase({});
}, 120_000);
afterAll(async () => {
  await db?.close();
});

/** The txn lines without client-side times, and the init rows: what the seed decides. */
function decided(file: string): unknown[] {
  return readFileSync(file, 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l))
    .filter((l) => l.kind === 'txn' || l.kind === 'init')
    .map((l) => (l.kind === 'txn' ? { ...l, begin: undefined, end: undefined } : l));
}

describe('isocheck run', () => {
  for (const workload of ['smallbank', 'tpcc', 'twitter']) {
    it(`${workload}: the same seed with one session gives the same history`, async () => {
      const files = [];
      for (const k of [1, 2]) {
        const r = await runWorkload(
          {
            workload,
            iso: 'ser',
            sessions: 1,
            txns: 15,
            seed: '42',
            out: join(dir, `${workload}-${k}.ndjson`),
            progress: false,
            log: () => undefined,
          },
          db,
        );
        expect(r.invariantViolations).toEqual([]);
        files.push(r.file);
      }
      const [a, b] = files.map(decided);
      expect(a.length).toBeGreaterThan(10);
      // Timestamps written by the workload itself (TPC-C's entry dates) differ between runs: compare without them.
      const strip = (x: unknown) => JSON.stringify(x).replace(/"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(\.\d+)?"/g, '"<time>"');
      expect(strip(b)).toBe(strip(a));
      const check = await checkFile(files[0], { timeout: 60 });
      expect(check.verdict).toBe('consistent');
    });
  }
  it('a different seed gives different transactions', async () => {
    const a = await runWorkload(
      {
        workload: 'smallbank',
        sessions: 1,
        txns: 10,
        seed: '1',
        out: join(dir, 'sb-a.ndjson'),
        progress: false,
        log: () => undefined,
      },
      db,
    );
    const b = await runWorkload(
      {
        workload: 'smallbank',
        sessions: 1,
        txns: 10,
        seed: '2',
        out: join(dir, 'sb-b.ndjson'),
        progress: false,
        log: () => undefined,
      },
      db,
    );
    expect(JSON.stringify(decided(b.file))).not.toBe(JSON.stringify(decided(a.file)));
  });
  it('refuses an unknown workload or configuration clearly', async () => {
    await expect(runWorkload({ workload: 'nope', progress: false, log: () => undefined }, db)).rejects.toThrow(
      /unknown workload "nope" \(available: tpcc, tpcc-pc, twitter, smallbank\)/,
    );
    await expect(
      runWorkload({ workload: 'tpcc', iso: 'Bogus=SER', progress: false, log: () => undefined }, db),
    ).rejects.toThrow(/tpcc has no transaction type "Bogus"/);
  });
  it(
    'stops when its signal aborts: the transactions in ' + 'flight and the end line written, RunInterrupted saying so',
    async () => {
      const stop = new AbortController();
      const out = join(dir, 'aborted.ndjson');
      let said: string | undefined;
      const run = runWorkload(
        {
          workload: 'smallbank',
          sessions: 3,
          txns: 1_000_000,
          seed: '3',
          out,
          progress: false,
          log: () => undefined,
          signal: stop.signal,
          onInterrupt: (l) => (said = l),
        },
        db,
      );
      const txnLines = () => (existsSync(out) ? (readFileSync(out, 'utf8').match(/"kind":"txn"/g) ?? []).length : 0);
      for (let i = 0; i < 3000 && txnLines() < 20; i++) await new Promise((r) => setTimeout(r, 10));
      stop.abort('SIGTERM');
      const e = await run.then(
        () => undefined,
        (x: unknown) => x,
      );
      expect(e).toBeInstanceOf(RunInterrupted);
      expect((e as RunInterrupted).exitCode).toBe(143);
      const h = await readHistory(out);
      expect(h.truncated).toBe(false);
      expect((e as Error).message).toBe(said);
      expect(said).toMatch(new RegExp(`^interrupted \\(SIGTERM\\): ${h.txns.length} transactions recorded in ${out}`));
    },
  );
  it('refuses an --out it cannot write before touching the database', async () => {
    await expect(
      runWorkload({ workload: 'smallbank', out: dir, progress: false, log: () => undefined }, db),
    ).rejects.toThrow(`--out ${dir}: cannot write there: is a directory; give a file name`);
  });
});
