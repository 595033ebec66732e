// Shrinking (src/checker/explain/shrink.ts): an inconsistent history the search finds no named contradiction in is
// explained on a small sub-history, which must still be inconsistent, for a commit-order reason (never a garbage
// read or a missing row the shrinking made), and small enough to read.
import { beforeAll, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { readHistory } from '../src/history/reader.js';
import { loadPredicateParser } from '../src/sql/predicate.js';
import { checkHistory, type CheckOptions, type CheckResult } from '../src/checker/check.js';
import { namedTxns, shrink } from '../src/checker/explain/shrink.js';
import { parseIsoOverride } from '../src/checker/levels.js';
import type { History } from '../src/history/history.js';
import { ins, loadLines, registerLines, sel, txn, upd } from './helpers/lines.js';

beforeAll(async () => {
  await loadPredicateParser();
});

/** The check shrinking runs on each candidate (as check.ts does: no explanation, no shrinking of its own; a longer
 *  time limit than its 2 s, so that a loaded machine does not change what is found). */
function counted(options: CheckOptions) {
  const calls = { n: 0 };
  const check = (h: History): CheckResult => {
    calls.n++;
    return checkHistory(h, { ...options, explain: false, shrink: false, timeoutMs: 20_000 });
  };
  return { calls, check };
}

const ORDER_TYPES = new Set(['write-skew', 'lost-update', 'long-fork', 'commit-order-cycle', 'no-consistent-order']);

describe('a cycle of three anti-dependencies (G2-item) among 90 other transactions', () => {
  // T1 reads x and writes y, T2 reads y and writes z, T3 reads z and writes x (all SER): each must commit before
  // the next, around a cycle of three anti-dependencies. The search's stuck frontier is that cycle, not a pair
  // each blocking the other, and 93 transactions are too many for the case analysis of every pair: the whole
  // history is "no consistent commit order", explained on a shrunk sub-history.
  const lines = registerLines(
    [
      { id: 1, v: 0 },
      { id: 2, v: 0 },
      { id: 3, v: 0 },
    ],
    [
      ...Array.from({ length: 45 }, (_, i) => txn(`E${i + 1}`, 4, i + 1, [ins(`E${i + 1}.1`, 100 + i, 0)])),
      txn('T1', 1, 1, [sel(1, [{ wid: 'init', v: 0 }]), upd('T1.2', 2, 'init', 1)]),
      txn('T2', 2, 1, [sel(2, [{ wid: 'init', v: 0 }]), upd('T2.2', 3, 'init', 1)]),
      txn('T3', 3, 1, [sel(3, [{ wid: 'init', v: 0 }]), upd('T3.2', 1, 'init', 1)]),
      ...Array.from({ length: 45 }, (_, i) => txn(`L${i + 1}`, 5, i + 1, [ins(`L${i + 1}.1`, 200 + i, 0)])),
    ],
  );

  it('is explained on the three, each of which the explanation names', async () => {
    const h = await loadLines(lines);
    const r = checkHistory(h);
    expect(r.verdict).toBe('inconsistent');
    expect(r.subHistory?.sort()).toEqual(['T1', 'T2', 'T3']);
    const a = r.anomalies[0];
    expect(a.inSubHistory).toBe(3);
    // Not a write skew: of the two transactions the case split orders, neither read what the other overwrote.
    expect(a.type).toBe('commit-order-cycle');
    // Supposing T1 before T3, T2 is visible to T3 because T2 commits before T1: the case that derives that order
    // (T1 before T2 forces a cycle) comes first.
    if (!('cases' in a)) throw new Error('a case split');
    expect(a.cases.map((c) => [c.assume.before, c.assume.after])).toEqual([
      ['T1', 'T2'],
      ['T1', 'T3'],
      ['T3', 'T1'],
    ]);
    expect(namedTxns(a).sort()).toEqual(['T1', 'T2', 'T3']);
  });

  it('goes first to what the failed check names: a handful of checks, not a pass over every chunk', async () => {
    const h = await loadLines(lines);
    const { calls, check } = counted({});
    const s = shrink(h, {}, check, Date.now() + 30_000);
    expect(s?.txns.sort()).toEqual(['T1', 'T2', 'T3']);
    // the whole history, the three and what they read from, T1 and T2 without T3, ... (the old halving: 17)
    expect(calls.n).toBeLessThanOrEqual(5);
    expect(checkHistory(s!.history).verdict).toBe('inconsistent');
  });
});

describe('a TPC-C run at REPEATABLE READ checked as SER (histories/shrink/)', () => {
  const file = join(import.meta.dirname, '..', 'histories', 'shrink', 'tpcc-si-as-ser-seed5.ndjson.gz');
  const iso = parseIsoOverride('SER');
  let h: History;
  beforeAll(async () => {
    h = await readHistory(file);
  });

  // The stuck frontier: two transactions, each blocked by a reader that is the other or follows it in its session.
  it('is explained on the whole history by a case split from the stuck frontier', () => {
    const r = checkHistory(h, { iso });
    expect(r.verdict).toBe('inconsistent');
    expect(h.txns.length).toBe(240);
    expect(r.subHistory).toBeUndefined();
    const a = r.anomalies[0];
    if (!('by' in a) || a.by !== 'cases') throw new Error(`a case split, not ${a.type}`);
    expect(a.fromStuck).toBe(true);
    expect(a.pair).toEqual(['s1.40', 's4.39']);
    // s4.39 read warehouse(1) before s1.40 overwrote it; s1.41, after s1.40 in session 1, read district(1, 3) before
    // s4.39 overwrote it. Not a write skew of the pair (s1.40 did not read what s4.39 wrote): a commit-order cycle.
    expect(a.type).toBe('commit-order-cycle');
    expect(a.cases.map((c) => c.edges.flatMap((e) => (e.kind === 'axiom' ? [e.reader] : [])))).toEqual([
      ['s4.39'],
      ['s1.41'],
    ]);
  });

  it('keeping what kept transactions read from, the sub-history is inconsistent and reads nothing it lacks', () => {
    const { check } = counted({ iso });
    const s = shrink(h, { iso }, check, Date.now() + 30_000)!;
    expect(s.txns.length).toBeLessThan(h.txns.length / 2);
    const sub = { ...h, txns: h.txns.filter((t) => s.txns.includes(t.id)) };
    expect(s.history.truncated).toBe(h.truncated);
    const r = checkHistory(sub, { iso, shrink: false });
    expect(r.verdict).toBe('inconsistent');
    for (const a of r.anomalies) expect(ORDER_TYPES.has(a.type), a.type).toBe(true);
  });

  it('cutting the reads of dropped versions, it shrinks to at most 6 transactions, still inconsistent', () => {
    const { check } = counted({ iso });
    const s = shrink(h, { iso }, check, Date.now() + 30_000, true)!;
    expect(s.txns.length).toBeLessThanOrEqual(6);
    expect(s.history.txns.map((t) => t.id)).toEqual(s.txns);
    const r = checkHistory(s.history, { iso, shrink: false });
    expect(r.verdict).toBe('inconsistent');
    for (const a of r.anomalies) {
      expect(ORDER_TYPES.has(a.type), a.type).toBe(true);
      for (const id of namedTxns(a)) expect(s.txns).toContain(id);
    }
  });
});

describe('the kysely bank example at REPEATABLE READ checked as SER (histories/shrink/, issue 18)', () => {
  const file = join(import.meta.dirname, '..', 'histories', 'shrink', 'kysely-bank-rr-seed7.ndjson.gz');
  const iso = parseIsoOverride('SER');
  let h: History;
  beforeAll(async () => {
    h = await readHistory(file);
  });

  it('is a write skew of the two withdrawals, named from where the search got stuck', () => {
    const r = checkHistory(h, { iso });
    expect(r.verdict).toBe('inconsistent');
    expect(h.txns.length).toBe(985);
    const a = r.anomalies[0];
    if (a.type !== 'write-skew' || !('cases' in a)) throw new Error(`a write skew by cases, not ${a.type}`);
    expect(a.pair).toEqual(['s1.2', 's2.1']);
    expect(a.fromStuck).toBe(true);
  });

  it('shrinks to the withdrawals and the rows they read, in a handful of checks, still a write skew', () => {
    const { calls, check } = counted({ iso });
    const s = shrink(h, { iso }, check, Date.now() + 30_000)!;
    expect(s.txns.sort()).toEqual(['s1.1', 's1.2', 's2.1']);
    expect(calls.n).toBeLessThanOrEqual(5);
    const r = checkHistory(s.history, { iso, shrink: false });
    expect(r.anomalies.map((a) => a.type)).toEqual(['write-skew']);
  });
});
