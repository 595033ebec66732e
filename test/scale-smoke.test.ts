/**
 * Smoke test of the scale benchmark's generator (bench/scale/generate.ts): its histories are consistent by
 * construction per the checker at each level mix, every injected anomaly makes them inconsistent, and on tiny
 * histories the brute-force oracle (naiveCheck) agrees. Small sizes only: the benchmark itself is
 * `npm run bench -- scale`, never part of the test suite.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { check } from '../src/checker/check-file.js';
import { naiveCheck } from '../src/oracle/naive.js';
import { loadPredicateParser } from '../src/sql/predicate.js';
import { historyFromLines } from './gen/random-history.js';
import { INJECTED, SCALE_LEVELS, scaleHistoryLines, type ScaleOptions } from '../bench/scale/generate.js';

const build = (o: ScaleOptions) => historyFromLines(scaleHistoryLines(o));

beforeAll(async () => {
  await loadPredicateParser();
});

describe('scale generator', () => {
  it('is deterministic per seed', () => {
    const a = JSON.stringify(scaleHistoryLines({ txns: 50, level: 'si+rc', seed: 7 }));
    expect(JSON.stringify(scaleHistoryLines({ txns: 50, level: 'si+rc', seed: 7 }))).toBe(a);
    expect(JSON.stringify(scaleHistoryLines({ txns: 50, level: 'si+rc', seed: 8 }))).not.toBe(a);
  });

  for (const level of SCALE_LEVELS) {
    it(`${level}: ~300 transactions are consistent, each injected anomaly is not`, async () => {
      // Few accounts: conflicts, lock waits and SI aborts happen at this size.
      const base: ScaleOptions = { txns: 300, level, seed: 1, accounts: 40, groupSize: 8 };
      const lines = scaleHistoryLines(base);
      const txns = lines.filter((l) => l.kind === 'txn');
      expect(txns.length).toBe(300);
      expect(txns.some((t) => t.kind === 'txn' && t.status === 'aborted')).toBe(true);
      const ok = await check(historyFromLines(lines), { shrink: false, timeoutMs: 20_000 });
      expect(ok.verdict, ok.anomalies.map((a) => a.type).join(', ')).toBe('consistent');
      for (const inject of INJECTED) {
        // A lost update between two SI transactions among RC ones is decided only by the search, which at 80
        // transactions already runs out of time (1.2 million prefixes in 10 s; bench/results/scale-profile.md):
        // checked at 20 transactions there.
        const small = level === 'rc' && inject === 'lost-update';
        const r = await check(build({ ...base, ...(small ? { txns: 20, accounts: 10 } : {}), inject: [inject] }), {
          shrink: false,
          timeoutMs: 20_000,
        });
        expect(r.verdict, `${level} with ${inject}`).toBe('inconsistent');
      }
    });
  }

  it('agrees with the brute-force oracle at ~12 transactions', async () => {
    for (const level of SCALE_LEVELS) {
      for (let seed = 1; seed <= 2; seed++) {
        for (const inject of [undefined, ...INJECTED]) {
          const h = build({
            txns: 12,
            level,
            seed,
            accounts: 6,
            groupSize: 3,
            sessions: 4,
            inject: inject ? [inject] : [],
          });
          const ours = await check(h, { shrink: false, timeoutMs: 10_000 });
          const naive = naiveCheck(h, { maxWork: 20_000 });
          const expected = inject ? 'inconsistent' : 'consistent';
          expect(ours.verdict, `${level} seed ${seed} ${inject ?? 'clean'}: ours`).toBe(expected);
          if (naive.verdict !== 'unknown')
            expect(naive.verdict, `${level} seed ${seed} ${inject ?? 'clean'}: naive (${naive.reason ?? ''})`).toBe(
              expected,
            );
        }
      }
    }
  });
});

describe('a cycle of forced edges in a large component', () => {
  it('is found, closed and named with thousands of transactions stuck behind it (60,000; 5,359)', async () => {
    // The fractured read injected halfway leaves thousands of transactions in the strongly connected component
    // of the forced cycle: the linear check's search for a cycle closed by one forced edge goes closest in
    // recorded time first, within a budget (commit-order.ts), and must still return a real cycle.
    const h = build({ txns: 60_000, level: 'si+rc', seed: 3, inject: ['fractured-read'] });
    const r = await check(h, { shrink: false, timeoutMs: 60_000 });
    expect(r.verdict).toBe('inconsistent');
    expect(r.stats.decidedBy).toBe('linear');
    const a = r.anomalies[0] as { type: string; edges?: { from: string; to: string }[] };
    expect(a.type).toBe('fractured-read');
    const edges = a.edges ?? [];
    expect(edges.length).toBeGreaterThan(1);
    for (let i = 0; i < edges.length; i++) expect(edges[(i + 1) % edges.length].from).toBe(edges[i].to);
  });
});
