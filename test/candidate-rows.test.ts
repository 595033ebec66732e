// The rows a read's WHERE could match (src/checker/linear/candidate-rows.ts) against the definition, on random
// tables: a point constraint on a non-key column (any version of the row holds the value) and numeric bounds on
// the key column (a key's own value), alone and together, where either side is the smaller one.
import { beforeAll, describe, expect, it } from 'vitest';
import seedrandom from 'seedrandom';
import { loadPredicateParser } from '../src/sql/predicate.js';
import { buildModel } from '../src/checker/model/model.js';
import { CandidateRows } from '../src/checker/linear/candidate-rows.js';
import type { Line } from '../src/history/format.js';
import { historyFromLines, int } from './gen/random-history.js';

beforeAll(async () => {
  await loadPredicateParser();
});

interface Case {
  where: string;
  params: number[];
  /** Whether a version of key `id` with group `g` could satisfy it: the candidates' definition. */
  could: (id: number, gs: Set<number>) => boolean;
}

describe('CandidateRows', () => {
  it('finds exactly the keys with a version in the group and an id within the bounds, on 300 random tables', () => {
    let both = 0;
    let rangeSmaller = 0;
    for (let i = 0; i < 300; i++) {
      const rng = seedrandom(`candidates-${i}`);
      const n = int(rng, 5, 60);
      const groups = int(rng, 1, 6);
      const versions = new Map<number, Set<number>>();
      const lines: Line[] = [
        { kind: 'history', format: 'isocheck-history', version: 1, meta: {} },
        { kind: 'table', name: 't', key: ['id'], columns: { id: 'int4', g: 'int4' } },
      ] as Line[];
      const init: { id: number; g: number }[] = [];
      for (let id = 1; id <= n; id++) {
        const g = int(rng, 1, groups);
        init.push({ id, g });
        versions.set(id, new Set([g]));
      }
      lines.push({ kind: 'init', table: 't', rows: init } as Line);
      const writers = int(rng, 0, 8);
      for (let w = 1; w <= writers; w++) {
        const rows: { row: { id: number; g: number } }[] = [];
        for (let id = 1; id <= n; id++) {
          if (rng() < 0.3) {
            const g = int(rng, 1, groups);
            rows.push({ row: { id, g } });
            versions.get(id)!.add(g);
          }
        }
        if (rows.length === 0) continue;
        lines.push({
          kind: 'txn',
          id: `W${w}`,
          session: w,
          seq: 1,
          iso: 'SER',
          status: 'committed',
          events: [{ op: 'insert', table: 't', wid: `W${w}.1`, rows }],
        } as Line);
      }
      const g = int(rng, 1, groups + 1);
      const lo = int(rng, 0, n);
      const hi = lo + int(rng, 0, n);
      const cases: Case[] = [
        { where: 'g = $1', params: [g], could: (_, gs) => gs.has(g) },
        { where: 'id >= $1 AND id <= $2', params: [lo, hi], could: (id) => id >= lo && id <= hi },
        {
          where: 'g = $1 AND id >= $2 AND id <= $3',
          params: [g, lo, hi],
          could: (id, gs) => gs.has(g) && id >= lo && id <= hi,
        },
        {
          where: 'id BETWEEN $2 AND $3 AND g = $1',
          params: [g, lo, hi],
          could: (id, gs) => gs.has(g) && id >= lo && id <= hi,
        },
      ];
      lines.push(...readers('t', cases));
      const model = buildModel(historyFromLines(lines));
      expect(model.anomalies).toEqual([]);
      const rows = new CandidateRows(model);
      for (const read of model.reads) {
        const c = cases[Number(model.txns[read.txn].id.slice(1))];
        const want = [...versions]
          .filter(([id, gs]) => c.could(id, gs))
          .map(([id]) => id)
          .sort((a, b) => a - b);
        const got = [...rows.of(read)].map((key) => Number(model.keys[key].values[0])).sort((a, b) => a - b);
        expect(got, `${i}: ${c.where} ${JSON.stringify(c.params)}`).toEqual(want);
        if (c.where.includes('g =') && c.where.includes('id')) {
          both++;
          const inGroup = [...versions].filter(([, gs]) => gs.has(g)).length;
          if (Math.min(n, hi) - Math.max(1, lo) + 1 < inGroup) rangeSmaller++;
        }
      }
    }
    // both orders of the intersection are exercised
    expect(both).toBe(600);
    expect(rangeSmaller).toBeGreaterThan(100);
    expect(both - rangeSmaller).toBeGreaterThan(100);
  });
});

describe('CandidateRows on a composite key', () => {
  it('bounds on either key column (ties on the other), IN lists, two bounded columns, empty ranges', () => {
    let exercised = 0;
    for (let i = 0; i < 200; i++) {
      const rng = seedrandom(`candidates-composite-${i}`);
      const as = int(rng, 1, 6);
      const bs = int(rng, 1, 8);
      const groups = int(rng, 1, 4);
      const versions = new Map<string, { a: number; b: number; gs: Set<number> }>();
      const init: { a: number; b: number; g: number }[] = [];
      for (let a = 1; a <= as; a++)
        for (let b = 1; b <= bs; b++) {
          const g = int(rng, 1, groups);
          init.push({ a, b, g });
          versions.set(`${a}/${b}`, { a, b, gs: new Set([g]) });
        }
      const lines: Line[] = [
        { kind: 'history', format: 'isocheck-history', version: 1, meta: {} },
        { kind: 'table', name: 'u', key: ['a', 'b'], columns: { a: 'int4', b: 'int4', g: 'int4' } },
        { kind: 'init', table: 'u', rows: init },
      ] as Line[];
      const rows = [...versions.values()]
        .filter(() => rng() < 0.4)
        .map((v) => {
          const g = int(rng, 1, groups);
          v.gs.add(g);
          return { row: { a: v.a, b: v.b, g } };
        });
      if (rows.length > 0)
        lines.push({
          kind: 'txn',
          id: 'W1',
          session: 1,
          seq: 1,
          iso: 'SER',
          status: 'committed',
          events: [{ op: 'insert', table: 'u', wid: 'W1.1', rows }],
        } as Line);
      // bounds drawn independently: lo > hi (an empty range) happens
      const [g1, g2] = [int(rng, 1, groups), int(rng, 1, groups)];
      const [alo, ahi, blo, bhi] = [int(rng, 0, as + 1), int(rng, 0, as + 1), int(rng, 0, bs + 1), int(rng, 0, bs + 1)];
      const cases: Case2[] = [
        {
          where: 'g = $1 AND b >= $2 AND b <= $3',
          params: [g1, blo, bhi],
          could: (v) => v.gs.has(g1) && in_(v.b, blo, bhi),
        },
        {
          where: 'g IN ($1, $2) AND a BETWEEN $3 AND $4',
          params: [g1, g2, alo, ahi],
          could: (v) => (v.gs.has(g1) || v.gs.has(g2)) && in_(v.a, alo, ahi),
        },
        {
          where: 'a >= $1 AND a <= $2 AND b >= $3 AND b <= $4',
          params: [alo, ahi, blo, bhi],
          could: (v) => in_(v.a, alo, ahi) && in_(v.b, blo, bhi),
        },
        // two point constraints: the smaller one's keys (a superset: the caller evaluates the WHERE)
        { where: 'g = $1 AND a = $2', params: [g1, alo], could: (v) => v.gs.has(g1) && v.a === alo, superset: true },
      ];
      lines.push(...readers('u', cases));
      const model = buildModel(historyFromLines(lines));
      expect(model.anomalies).toEqual([]);
      const candidates = new CandidateRows(model);
      for (const read of model.reads) {
        const c = cases[Number(model.txns[read.txn].id.slice(1))];
        const want = [...versions.entries()]
          .filter(([, v]) => c.could(v))
          .map(([k]) => k)
          .sort();
        const got = [...candidates.of(read)].map((key) => model.keys[key].values.join('/')).sort();
        if (c.superset) expect(got, `${i}: ${c.where}`).toEqual(expect.arrayContaining(want));
        else expect(got, `${i}: ${c.where} ${JSON.stringify(c.params)}`).toEqual(want);
        exercised++;
      }
    }
    expect(exercised).toBe(800);
  });
});

/** One committed RC transaction per case, Ri, with its WHERE as a partial read of the table (no row returned). */
function readers(table: string, cases: { where: string; params: number[] }[]): Line[] {
  return cases.map(
    (c, ci) =>
      ({
        kind: 'txn',
        id: `R${ci}`,
        session: 100 + ci,
        seq: 1,
        iso: 'RC',
        status: 'committed',
        events: [{ op: 'select', table, where: c.where, params: c.params, partial: true, rows: [] }],
      }) as Line,
  );
}

interface Case2 {
  where: string;
  params: number[];
  could: (v: { a: number; b: number; gs: Set<number> }) => boolean;
  superset?: boolean;
}

const in_ = (x: number, lo: number, hi: number) => x >= lo && x <= hi;
