// Known answers (docs/semantics.md §6 and classic anomalies): every history in histories/known/ gets the verdict
// expected.json gives it; inconsistent ones name the expected anomaly where the case has a name, the levels it
// violates are ones that forbid it (levels.ts), and its structured explanation (type, transactions, edges and
// why, case splits; the data, not the prose) equals the committed test/golden/<history>.json.
// UPDATE_GOLDEN=1 npx vitest run test/known.test.ts rewrites the golden files (review the diff).
import { beforeAll, describe, expect, it } from 'vitest';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { readHistory } from '../src/history/reader.js';
import { loadPredicateParser } from '../src/sql/predicate.js';
import { checkHistory } from '../src/checker/check.js';
import { anomalyMessage } from '../src/checker/explain/explain.js';
import { levelIndex, weakestForbidding } from '../src/checker/levels.js';
import type { Anomaly } from '../src/checker/anomaly.js';
import type { CheckResult } from '../src/checker/result.js';
import { anomalyGraphs } from '../src/report/graph.js';
import { ins, loadLines, registerLines, sel, txn } from './helpers/lines.js';

const dir = join(import.meta.dirname, '..', 'histories', 'known');
const goldenDir = join(import.meta.dirname, 'golden');
const UPDATE = process.env.UPDATE_GOLDEN === '1';

/** What a golden file holds: the verdict and each anomaly's data, without the prose descriptions of the
 *  transactions (describe.ts renders those from the history). */
function golden(r: CheckResult): unknown {
  return { verdict: r.verdict, anomalies: r.anomalies.map(({ transactions: _t, ...data }: Anomaly) => data) };
}
const expected: Record<string, { case: string; level: string; verdict: string; anomaly?: string }> = JSON.parse(
  readFileSync(join(dir, 'expected.json'), 'utf8'),
);

// The anomaly each inconsistent case must be named as (at the levels where it is inconsistent).
const ANOMALY: Record<string, string | Record<string, string>> = {
  'lost-update': 'lost-update',
  'lost-update-three': 'lost-update',
  'write-skew': 'write-skew',
  'write-skew-two-keys': 'write-skew',
  'long-fork': { PC: 'long-fork' },
  'fractured-read': 'fractured-read',
  'fractured-read-reversed': 'fractured-read',
  'causality-violation': { CC: 'causality-violation' },
  'read-your-writes': 'read-your-writes',
  'missing-initial-row': 'missing-row',
  'missed-insert': 'fractured-read',
  'session-read-skew': { CC: 'causality-violation' },
  'g-single-read-skew': { RA: 'fractured-read' },
  'non-monotonic-read': 'non-monotonic-read',
  'session-non-monotonic-read': { CC: 'non-monotonic-read' },
  'write-skew-ser-ser': 'write-skew',
  'lost-update-si-si': 'lost-update',
  'long-fork-pc-pc': 'long-fork',
};

beforeAll(async () => {
  await loadPredicateParser();
});

describe('known answers', () => {
  const files = Object.keys(expected);
  it('has the cases of docs/semantics.md §6 at every level', () => {
    for (const c of [
      'write-skew',
      'lost-update',
      'long-fork',
      'causality-violation',
      'fractured-read',
      'fractured-read-reversed',
      'read-your-writes',
      'serial-chain',
    ]) {
      for (const l of ['RC', 'RA', 'CC', 'PC', 'SI', 'SER']) expect(files).toContain(`${c}.${l}.ndjson`);
    }
    expect(files.length).toBeGreaterThan(90);
  });
  for (const file of files) {
    const exp = expected[file];
    it(`${file} is ${exp.verdict}`, async () => {
      const h = await readHistory(join(dir, file));
      const r = checkHistory(h);
      expect(r.verdict, JSON.stringify(r.anomalies, null, 1)).toBe(exp.verdict);
      if (r.verdict === 'consistent') {
        expect(r.commitOrder!.length).toBe(h.txns.filter((t) => t.status === 'committed').length);
      } else {
        const want = ANOMALY[exp.case];
        const name = typeof want === 'string' ? want : want?.[exp.level];
        if (name) expect(r.anomalies.map((a) => a.type)).toContain(name);
        for (const a of r.anomalies) {
          expect(anomalyMessage(a).length).toBeGreaterThan(10);
          // The levels an anomaly violates are levels that forbid it.
          const weakest = weakestForbidding(a.type);
          if (weakest)
            for (const l of a.levels ?? [])
              expect(levelIndex(l), `${a.type} violates ${l}`).toBeGreaterThanOrEqual(levelIndex(weakest));
        }
      }
      const path = join(goldenDir, file.replace(/\.ndjson$/, '.json'));
      const actual = golden(r);
      if (UPDATE) {
        mkdirSync(goldenDir, { recursive: true });
        writeFileSync(path, `${JSON.stringify(actual, null, 1)}\n`);
      }
      expect(actual, `${path} (UPDATE_GOLDEN=1 rewrites it)`).toEqual(JSON.parse(readFileSync(path, 'utf8')));
    });
  }
});

describe('a stuck search names what it found', () => {
  // A write skew (both SER) among 90 more transactions: too many for the case analysis of every pair (cases.ts),
  // so the search's stuck frontier, where T1 and T2 each wait for the other, names it.
  const lines = registerLines(
    [
      { id: 1, v: 0 },
      { id: 2, v: 0 },
    ],
    [
      txn('T1', 1, 1, [sel(1, [{ wid: 'init', v: 0 }]), sel(2, [{ wid: 'init', v: 0 }]), ins('T1.3', 1, 1)]),
      txn('T2', 2, 1, [sel(1, [{ wid: 'init', v: 0 }]), sel(2, [{ wid: 'init', v: 0 }]), ins('T2.3', 2, 1)]),
      ...Array.from({ length: 90 }, (_, i) => txn(`F${i + 1}`, 3, i + 1, [ins(`F${i + 1}.1`, 100 + i, 0)])),
    ],
  );

  it('as a write skew, explained by a case split on the two transactions, drawn as two cases', async () => {
    const h = await loadLines(lines);
    const r = checkHistory(h);
    expect(r.verdict).toBe('inconsistent');
    const a = r.anomalies[0];
    expect(a.type).toBe('write-skew');
    if (a.type !== 'write-skew' || !('cases' in a)) throw new Error('a case split');
    expect(a.fromStuck).toBe(true);
    expect(a.pair).toEqual(['T1', 'T2']);
    expect(a.cases.map((c) => c.assume)).toEqual([
      { before: 'T1', after: 'T2' },
      { before: 'T2', after: 'T1' },
    ]);
    expect(
      a.cases.map((c) => c.edges.filter((e) => e.kind === 'axiom').map((e) => e.kind === 'axiom' && e.reader)),
    ).toEqual([['T2'], ['T1']]);
    expect(anomalyMessage(a)).toMatch(/^write skew: .*T1 and T2 cannot be ordered either way \(the search .* stuck/);
    const graphs = anomalyGraphs(h, a, 'a0');
    expect(graphs.map((g) => g.title)).toEqual([
      'Case 1: suppose T1 commits before T2',
      'Case 2: suppose T2 commits before T1',
    ]);
  });
});

describe('search budget', () => {
  it('reports unknown, with what was explored, when the budget runs out', async () => {
    const h = await readHistory(join(dir, 'long-fork.PC.ndjson'));
    const r = checkHistory(h, { maxSteps: 2 });
    expect(r.verdict).toBe('unknown');
    // a step limit is not the time limit: the reason names the one that stopped the check
    expect(r.reason).toMatch(/stopped by the step limit \(maxSteps\) after \d+ extension\(s\) and \d+ prefix\(es\)/);
  });

  it('stops at its deadline while building the model of a long history, with an unknown verdict', async () => {
    const h = await readHistory(join(dir, '..', 'corpus', 'smallbank-si-as-ser-s4-t20-seed1.ndjson.gz'));
    expect(h.txns.filter((t) => t.status === 'committed').length).toBeGreaterThan(64);
    const r = checkHistory(h, { timeoutMs: -1 });
    expect(r.verdict).toBe('unknown');
    expect(r.reason).toMatch(/stopped by the time limit while building the model/);
    expect(r.stats.transactions).toBe(h.txns.length);
  });
});
