/**
 * Random choices for data generation and transaction programs, all drawn from a seedrandom PRNG (`() => number`
 * in [0, 1)). Includes TPC-C's random strings and NURand (TPC-C spec clause 2.1.6 and 4.3.2) and a Zipfian
 * sampler (BenchBase's Twitter loader uses Zipfian distributions).
 */
import seedrandom from 'seedrandom';

export type Rng = () => number;

/** A PRNG deterministic from the seed and a purpose label (so tables do not share one stream). */
export function rngFor(seed: string, label: string): Rng {
  return seedrandom(`${seed}\u0000${label}`);
}

/** Uniform integer in [lo, hi] (inclusive). */
export function randInt(rng: Rng, lo: number, hi: number): number {
  return lo + Math.floor(rng() * (hi - lo + 1));
}

export function chance(rng: Rng, p: number): boolean {
  return rng() < p;
}

export function pick<T>(rng: Rng, items: readonly T[]): T {
  return items[Math.floor(rng() * items.length)];
}

const ALNUM = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789';

/** TPC-C a-string: random alphanumeric string of length in [lo, hi]. */
export function astring(rng: Rng, lo: number, hi: number): string {
  const n = randInt(rng, lo, hi);
  let s = '';
  for (let i = 0; i < n; i++) s += ALNUM[Math.floor(rng() * ALNUM.length)];
  return s;
}

/** TPC-C n-string: random numeric string of length in [lo, hi]. */
export function nstring(rng: Rng, lo: number, hi: number): string {
  const n = randInt(rng, lo, hi);
  let s = '';
  for (let i = 0; i < n; i++) s += String(Math.floor(rng() * 10));
  return s;
}

/** Random decimal string with `scale` decimals in [lo, hi] units of 10^-scale, e.g. decimalIn(rng, 100, 10000, 2). */
export function decimalIn(rng: Rng, loUnits: number, hiUnits: number, scale: number): string {
  const u = randInt(rng, loUnits, hiUnits);
  const digits = String(u).padStart(scale + 1, '0');
  return scale === 0 ? digits : `${digits.slice(0, digits.length - scale)}.${digits.slice(digits.length - scale)}`;
}

/** Fisher-Yates shuffle of [1..n]. */
export function permutation(rng: Rng, n: number): number[] {
  const a = Array.from({ length: n }, (_, i) => i + 1);
  for (let i = n - 1; i > 0; i--) {
    const j = Math.floor(rng() * (i + 1));
    [a[i], a[j]] = [a[j], a[i]];
  }
  return a;
}

/** TPC-C NURand(A, x, y) = (((random(0, A) | random(x, y)) + C) % (y - x + 1)) + x (clause 2.1.6). */
export function nurand(rng: Rng, A: number, C: number, x: number, y: number): number {
  return (((randInt(rng, 0, A) | randInt(rng, x, y)) + C) % (y - x + 1)) + x;
}

/**
 * Zipfian sampler over 1..n with exponent s (P(k) ~ 1/k^s), by inverse CDF over a precomputed table.
 * `order` optionally maps rank k to a value (a "scrambled" Zipfian, as BenchBase's ScrambledZipfianGenerator).
 */
export class Zipf {
  private readonly cdf: Float64Array;
  constructor(
    readonly n: number,
    readonly s: number,
    private readonly order?: readonly number[],
  ) {
    this.cdf = new Float64Array(n);
    let acc = 0;
    for (let k = 1; k <= n; k++) {
      acc += 1 / k ** s;
      this.cdf[k - 1] = acc;
    }
    for (let k = 0; k < n; k++) this.cdf[k] /= acc;
  }
  next(rng: Rng): number {
    const u = rng();
    let lo = 0;
    let hi = this.n - 1;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (this.cdf[mid] <= u) lo = mid + 1;
      else hi = mid;
    }
    return this.order ? this.order[lo] : lo + 1;
  }
}
