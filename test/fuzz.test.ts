// Fuzzing (docs/reliability.md): seeded mutants of the committed histories, checked with a time limit and judged
// against an independent reading of the documents (bench/fuzz/spec-check.ts) and, when small, the brute-force
// oracle. No crash, no run past the limit, no verdict on a file the format forbids, never `consistent` with an
// ill-formed read, never a verdict the oracle contradicts. A sample also goes through the real CLI: exit codes
// 0-3 only, never a stack trace. Longer runs: `npm run fuzz -- --n 100000`.
import { beforeAll, describe, expect, it } from 'vitest';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import seedrandom from 'seedrandom';
import { readFileSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';
import { defaultSources, runCampaign } from '../bench/fuzz/campaign.js';
import { mutate } from '../bench/fuzz/mutate.js';
import { specCheck } from '../bench/fuzz/spec-check.js';

const root = join(import.meta.dirname, '..');
const N = Number(process.env.FUZZ_N ?? 3000);
const SEED = process.env.FUZZ_SEED ?? 'isocheck-fuzz-ci-1';

describe('the independent reading of the documents', () => {
  it('accepts every committed history and calls none ill-formed', () => {
    for (const f of defaultSources()) {
      const buf = readFileSync(f);
      const v = specCheck((f.endsWith('.gz') ? gunzipSync(buf) : buf).toString('utf8'));
      expect(v.format, f).toEqual([]);
      expect(v.illFormed, f).toEqual([]);
    }
  });
  it('rejects what the documents forbid, and finds ill-formed reads', () => {
    const head =
      '{"kind":"history","format":"isocheck-history","version":1,"meta":{}}\n' +
      '{"kind":"table","name":"t","key":["id"],"columns":{"id":"int4","v":"int4"}}\n';
    const txn = (id: string, session: number, events: unknown[], status = 'committed') =>
      JSON.stringify({ kind: 'txn', id, session, seq: 1, iso: 'SER', status, events });
    expect(specCheck(`${head}{"kind":"init","table":"t","rows":[{"id":1,"toString":2}]}\n`).format.join()).toMatch(
      /toString not declared/,
    );
    expect(specCheck(`${head}{"kind":"init","table":"t","rows":[{"id":2147483648}]}\n`).format.join()).toMatch(
      /not a int4/,
    );
    expect(specCheck(`${head + txn('a', 2 ** 53, [])}\n`).format.join()).toMatch(/session/);
    expect(
      specCheck(`${head + txn('a', 1, [{ op: 'select', table: 't', where: '  ', rows: [] }])}\n`).format.join(),
    ).toMatch(/where/);
    const garbage =
      head +
      txn('a', 1, [{ op: 'select', table: 't', rows: [{ wid: 'zz', row: { id: 1, v: 1 } }] }]) +
      '\n{"kind":"end","transactions":1}\n';
    expect(specCheck(garbage).illFormed.join()).toMatch(/garbage read of zz/);
    const aborted =
      head +
      txn('w', 1, [{ op: 'insert', table: 't', wid: 'w1', rows: [{ row: { id: 1, v: 1 } }] }], 'aborted') +
      '\n' +
      txn('r', 2, [{ op: 'select', table: 't', rows: [{ wid: 'w1', row: { id: 1, v: 1 } }] }]) +
      '\n{"kind":"end","transactions":2}\n';
    expect(specCheck(aborted).illFormed.join()).toMatch(/aborted read of w1/);
  });
});

describe('fuzzing', () => {
  it(`${N} mutants of the committed histories: no crash, no hang, no verdict on a malformed file, no wrong ` +
    `verdict`, async () => {
    const { stats, failures } = await runCampaign({
      n: N,
      seed: SEED,
      timeoutMs: 2000,
      graceMs: 3000,
      oracleMaxTxns: 8,
    });
    console.log(`fuzz (${SEED}): ${JSON.stringify(stats)}`);
    const shown = failures
      .slice(0, 8)
      .map(
        (f) =>
          `${f.kind} | ${f.source.split('/').pop()} | ${f.mutation} ` +
          `| ${f.detail.split('\n').slice(0, 2).join(' / ').slice(0, 300)}`,
      );
    expect(shown).toEqual([]);
    expect(stats.tried).toBe(N);
    // the campaign reaches every outcome (a fuzzer that only makes garbage tests nothing)
    expect(stats.errors).toBeGreaterThan(N / 10);
    expect(stats.consistent + stats.inconsistent).toBeGreaterThan(N / 20);
    expect(stats.oracleCompared).toBeGreaterThan(N / 50);
  }, 600_000);
});

describe('fuzzing through the command line', () => {
  let dir: string;
  beforeAll(() => {
    execFileSync(
      process.execPath,
      [join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.build.json'],
      { cwd: root, stdio: 'pipe' },
    );
    dir = mkdtempSync(join(tmpdir(), 'isocheck-fuzz-cli-'));
    return () => rmSync(dir, { recursive: true, force: true });
  }, 120_000);

  it('exits 0, 1, 2 or 3 on every mutant, with one FILE:LINE line per problem and never a stack trace', () => {
    const rng = seedrandom(`${SEED}-cli`);
    const sources = defaultSources().filter((f) => f.endsWith('.ndjson'));
    const files: string[] = [];
    for (let i = 0; i < 40; i++) {
      const src = sources[Math.floor(rng() * sources.length)];
      const f = join(dir, `m${i}.ndjson`);
      writeFileSync(f, mutate(readFileSync(src, 'utf8'), rng).text);
      files.push(f);
    }
    const r = spawnSync(process.execPath, [join(root, 'bin', 'isocheck.js'), 'check', '--timeout', '5', ...files], {
      encoding: 'utf8',
      timeout: 240_000,
    });
    const out = r.stdout + r.stderr;
    expect(out).not.toMatch(/\n\s+at |internal error/);
    expect([0, 1, 2, 3]).toContain(r.status);
    // each file gets a verdict line or an ERROR block whose lines name the file and a line
    for (const f of files) expect(out).toContain(f);
    for (const block of out.split(/\n(?=\S)/).filter((b) => / ERROR\n/.test(b))) {
      for (const l of block.split('\n').slice(1)) expect(l).toMatch(/^ {2}(\S+:\d+: |\.\.\.|.*more problems)/);
    }
  }, 300_000);
});
