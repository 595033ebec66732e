// The linear check's arena (src/checker/linear/arena.ts): every array it hands out is zeroed, aligned, and shares
// no byte with another, whatever the chunk size; chunks grow so that their number stays logarithmic.
import { describe, expect, it } from 'vitest';
import seedrandom from 'seedrandom';
import { Arena, align8 } from '../src/checker/linear/arena.js';

type Carved = Int32Array | Uint8Array | Float64Array;

function carve(arena: Arena, rng: () => number, count: number): Carved[] {
  const arrays: Carved[] = [];
  for (let i = 0; i < count; i++) {
    const length = Math.floor(rng() * (rng() < 0.1 ? 5000 : 40));
    const kind = Math.floor(rng() * 5);
    if (kind === 0) arrays.push(arena.int32(length));
    else if (kind === 1) arrays.push(arena.uint8(length));
    else if (kind === 2) arrays.push(arena.float64(length));
    else if (kind === 3) arrays.push(arena.int32Filled(length, -1));
    else if (arrays.length > 0) {
      const last = arrays[arrays.length - 1];
      if (!(last instanceof Float64Array)) arrays[arrays.length - 1] = arena.doubled(last);
    }
  }
  return arrays;
}

describe('Arena', () => {
  for (const chunk of [1, 8, 100, 1 << 12, 1 << 20]) {
    it(`hands out zeroed, disjoint arrays (first chunk ${chunk} bytes)`, () => {
      const rng = seedrandom(`arena-${chunk}`);
      const arena = new Arena(chunk);
      const arrays = carve(arena, rng, 2000);
      // as handed out: zero (or -1, or a doubled list: its copy, then zero)
      let dirty = 0;
      for (const a of arrays) for (const v of a) if (v !== 0 && v !== -1) dirty++;
      expect(dirty).toBe(0);
      // written with a value per array, each still holds its own after all the writes
      arrays.forEach((a, i) => {
        a.fill((i % 250) + 1);
      });
      const overwritten = arrays.filter((a, i) => a.some((v) => v !== (i % 250) + 1)).length;
      expect(overwritten).toBe(0);
      const bytes = arrays.reduce((s, a) => s + a.byteLength, 0);
      expect(arena.size).toBeGreaterThanOrEqual(bytes);
    });
  }

  it('aligns every Float64Array and doubles its chunks', () => {
    const arena = new Arena(64);
    const sizes: number[] = [];
    for (let i = 0; i < 200; i++) {
      arena.uint8(3);
      const f = arena.float64(5);
      expect(f.byteOffset % 8).toBe(0);
      if (sizes[sizes.length - 1] !== arena.size) sizes.push(arena.size);
    }
    // 200 × (3 + 5 × 8 + padding) bytes in chunks that double: about log2(9,600 / 64) + 1 of them
    expect(sizes.length).toBeLessThanOrEqual(10);
  });

  it('copies a doubled list and leaves its new half zero', () => {
    const arena = new Arena(16);
    const a = arena.int32(3);
    a.set([7, 8, 9]);
    const b = arena.doubled(a);
    expect(Array.from(b)).toEqual([7, 8, 9, 0, 0, 0]);
    b[0] = 1;
    expect(a[0]).toBe(7);
  });

  it('aligns offsets past 2 GiB without wrapping (review finding: (n + 7) & ~7 is 32-bit)', () => {
    expect(align8(2 ** 31 - 3)).toBe(2 ** 31);
    expect(align8(2 ** 32 + 1)).toBe(2 ** 32 + 8);
    expect(align8(2 ** 33)).toBe(2 ** 33);
    expect(align8(0)).toBe(0);
  });

  it('keeps chunks under its maximum, but gives an array larger than that a chunk of its own', () => {
    const arena = new Arena(1000, 64);
    let before = 0;
    for (let i = 0; i < 100; i++) {
      const a = i % 10 === 9 ? arena.uint8(200) : arena.int32(3);
      const grew = arena.size - before;
      if (grew > 0) expect(grew).toBe(Math.max(a.byteLength, 64));
      before = arena.size;
    }
  });

  it('hands out one zeroed array per slot while its length stays, a new one when it changes', () => {
    const arena = new Arena(64);
    const a = arena.reused('clocks', 10);
    a.fill(7);
    const size = arena.size;
    const b = arena.reused('clocks', 10);
    expect(b).toBe(a);
    expect(Array.from(b)).toEqual(Array(10).fill(0));
    expect(arena.size).toBe(size);
    expect(arena.reused('other', 10)).not.toBe(a);
    const c = arena.reused('clocks', 12);
    expect(c).not.toBe(a);
    expect(c.length).toBe(12);
    const stamps = arena.reused('stamps', 4, -1);
    stamps.set([1, 2, 3, 4]);
    expect(Array.from(arena.reused('stamps', 4, -1))).toEqual([-1, -1, -1, -1]);
    const prefix = arena.int32Copy(Int32Array.from([5, 6, 7]).subarray(0, 2));
    expect(Array.from(prefix)).toEqual([5, 6]);
  });
});
