/**
 * Records the corpus of histories/corpus/: every workload × configuration at a small size and two seeds, run on
 * an embedded PostgreSQL, plus what-if checks (runs at READ COMMITTED checked as SER, SmallBank at SI checked as
 * SER). Writes histories/corpus/index.json: how each file was made, the application invariants' outcome and
 * the verdict expected of the checker (consistent at the levels run; for what-if checks, the verdict found
 * when the corpus was made, so the tests catch any change). Run: npm run build && node dist/bench/make-corpus.js
 */
import { writeFileSync, mkdirSync, existsSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { readFileSync } from 'node:fs';
import { openDatabase } from '../src/db/connect.js';
import { runWorkload } from '../src/cli/run-command.js';
import { checkFile } from '../src/cli/check-command.js';

const dir = join('histories', 'corpus');
const workloads = ['tpcc', 'tpcc-pc', 'twitter', 'smallbank'];
const configs = ['ser', 'si', 'rc', 'ser+rc', 'si+rc'];
const seeds = ['1', '2'];

interface Entry {
  file: string;
  workload: string;
  iso: string;
  declare?: string;
  sessions: number;
  txns: number;
  seed: string;
  /** `--iso` of the check, when checked at other levels than recorded. */
  checkIso?: string;
  expected: string;
  why: string;
  invariantViolations: number;
}

const db = await openDatabase({});
const index: Entry[] = [];
try {
  if (existsSync(dir)) rmSync(dir, { recursive: true });
  mkdirSync(dir, { recursive: true });
  const record = async (
    workload: string,
    iso: string,
    seed: string,
    sessions: number,
    txns: number,
    declare?: string,
  ) => {
    const name = `${workload}-${iso}${declare ? `-as-${declare}` : ''}-s${sessions}-t${txns}-seed${seed}.ndjson`;
    const tmp = join(dir, name);
    const summary = await runWorkload(
      { workload, iso, declare, seed, sessions, txns, out: tmp, progress: false, log: () => undefined },
      db,
    );
    writeFileSync(`${tmp}.gz`, gzipSync(readFileSync(tmp)));
    rmSync(tmp);
    return { file: `${name}.gz`, summary };
  };
  for (const workload of workloads) {
    for (const iso of configs) {
      for (const seed of seeds) {
        const { file, summary } = await record(workload, iso, seed, 3, 10);
        const r = await checkFile(join(dir, file), { timeout: 120 });
        if (r.verdict !== 'consistent') console.error(`!! ${file}: ${r.verdict} at the levels run`);
        index.push({
          file,
          workload,
          iso,
          sessions: 3,
          txns: 10,
          seed,
          expected: 'consistent',
          why: 'checked at the levels PostgreSQL gave',
          invariantViolations: summary.invariantViolations.length,
        });
        if (iso === 'rc' || iso === 'si' || iso.endsWith('+rc')) {
          const w = await checkFile(join(dir, file), { timeout: 120, iso: 'SER' });
          index.push({
            file,
            workload,
            iso,
            sessions: 3,
            txns: 10,
            seed,
            checkIso: 'SER',
            expected: w.verdict,
            why: `what-if: run at ${iso}, checked as SER (verdict found when the corpus was made)`,
            invariantViolations: summary.invariantViolations.length,
          });
        }
        console.log(`${file}: ${r.verdict}`);
      }
    }
  }
  for (const seed of ['1', '2', '3']) {
    const { file, summary } = await record('smallbank', 'si', seed, 4, 20, 'ser');
    const r = await checkFile(join(dir, file), { timeout: 120 });
    index.push({
      file,
      workload: 'smallbank',
      iso: 'si',
      declare: 'ser',
      sessions: 4,
      txns: 20,
      seed,
      expected: r.verdict,
      why: 'SmallBank at REPEATABLE READ declared SERIALIZABLE: write skew expected',
      invariantViolations: summary.invariantViolations.length,
    });
    console.log(`${file}: ${r.verdict}`);
  }
  writeFileSync(join(dir, 'index.json'), `${JSON.stringify(index, null, 2)}\n`);
  console.log(`${index.length} corpus entries in ${dir}`);
} finally {
  await db.close();
}
