// Known answers (docs/semantics.md §6 and classic anomalies): every history in histories/known/ gets the verdict
// expected.json gives it; every consistent verdict's commit order is re-validated by the brute-force oracle;
// inconsistent ones name the expected anomaly where the case has a name.
import { beforeAll, describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { readHistory } from '../src/history/reader.js';
import { loadPredicateParser } from '../src/history/predicate.js';
import { checkHistory } from '../src/checker/check.js';
import { anomalyMessage } from '../src/checker/explain.js';

const dir = join(import.meta.dirname, '..', 'histories', 'known');
const expected: Record<string, { case: string; level: string; verdict: string; anomaly?: string }> = JSON.parse(readFileSync(join(dir, 'expected.json'), 'utf8'));

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
    for (const c of ['write-skew', 'lost-update', 'long-fork', 'causality-violation', 'fractured-read', 'fractured-read-reversed', 'read-your-writes', 'serial-chain']) {
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
        expect(anomalyMessage(r.anomalies[0]).length).toBeGreaterThan(10);
      }
    });
  }
});

describe('search budget', () => {
  it('reports unknown, with what was explored, when the budget runs out', async () => {
    const h = await readHistory(join(dir, 'long-fork.PC.ndjson'));
    const r = checkHistory(h, { maxSteps: 2 });
    expect(r.verdict).toBe('unknown');
    expect(r.reason).toMatch(/stopped by the time limit after \d+ extension\(s\) and \d+ prefix\(es\)/);
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
