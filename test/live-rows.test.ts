/**
 * The lifetime index of src/checker/linear/live-rows.ts against a scan: the keys whose [birth, death] overlaps a
 * window, for lists of every size around powers of two (the segment tree's padding), with ties and rows never
 * deleted. The linear check's use of it is tested in linear.test.ts (the same verdicts with and without it).
 */
import seedrandom from 'seedrandom';
import { describe, expect, it } from 'vitest';
import { Lifetimes, NEVER } from '../src/checker/linear/live-rows.js';

describe('lifetimes', () => {
  it('reports exactly the keys alive in a window, ascending, on random lists', () => {
    const rng = seedrandom('lifetimes');
    const out = { keys: new Int32Array(1) };
    let reported = 0;
    for (let trial = 0; trial < 400; trial++) {
      const m = trial < 70 ? trial : Math.floor(rng() * 300);
      const span = 1 + Math.floor(rng() * 50);
      const keys = new Int32Array(m),
        births = new Int32Array(m),
        deaths = new Int32Array(m);
      const used = new Set<number>();
      for (let i = 0; i < m; i++) {
        let k: number;
        do k = Math.floor(rng() * 10 * (m + 1));
        while (used.has(k));
        used.add(k);
        keys[i] = k;
        births[i] = Math.floor(rng() * span);
        deaths[i] = rng() < 0.3 ? NEVER : births[i] + Math.floor(rng() * span);
      }
      const index = new Lifetimes(keys, births, deaths);
      for (let q = 0; q < 20; q++) {
        const from = Math.floor(rng() * (span + 2));
        const to = from + Math.floor(rng() * (span + 2));
        const expected = Array.from(keys)
          .filter((_, i) => births[i] < to && deaths[i] >= from)
          .sort((a, b) => a - b);
        const got = Array.from(index.overlapping(from, to, out));
        expect(got, `m=${m} window [${from}, ${to})`).toEqual(expected);
        reported += got.length;
      }
    }
    expect(reported).toBeGreaterThan(10_000);
  });
});
