/**
 * A strict partial order on dense transaction ids, kept transitively closed: the paper's `pco`.
 *
 * One bitset row per transaction (its successors), as a Uint32Array of n * words. Adding an edge re-closes at
 * once (docs/semantics.md §4.2: the paper's artifact did not), so `has` is always the transitive relation and a
 * cycle shows as a transaction preceding itself.
 *
 * The rows are n × ⌈n/32⌉ words (200 MB at 40,000 transactions): they are allocated through the memory guard
 * (budget.ts), which stops the check instead of letting the allocation fail.
 */
import { allocateWords, copyWords } from '../budget.js';

/** What an n × n bitset is, for the reason of a memory stop. */
const orderOf = (n: number) => () => `the n×n order of ${n.toLocaleString('en-US')} transactions`;

export class Order {
  readonly words: number;
  readonly bits: Uint32Array;
  /** Set when an added edge closed a cycle; the order is then no longer meaningful. */
  cyclic = false;
  /** The first edge that closed a cycle. */
  cycleEdge?: [number, number];

  constructor(
    readonly n: number,
    bits?: Uint32Array,
  ) {
    this.words = (n + 31) >>> 5;
    this.bits = bits ?? allocateWords(n * this.words, orderOf(n));
  }

  clone(): Order {
    const o = new Order(
      this.n,
      copyWords(this.bits, () => `a copy of ${orderOf(this.n)()}`),
    );
    o.cyclic = this.cyclic;
    o.cycleEdge = this.cycleEdge;
    return o;
  }

  has(a: number, b: number): boolean {
    return (this.bits[a * this.words + (b >>> 5)] & (1 << (b & 31))) !== 0;
  }

  /** Adds a -> b and everything it implies. Returns false if the edge was already there. */
  add(a: number, b: number): boolean {
    if (this.has(a, b)) return false;
    const { bits, words, n } = this;
    if (a === b || this.has(b, a)) {
      this.cyclic = true;
      this.cycleEdge ??= [a, b];
    }
    const bRow = b * words;
    const aWord = a >>> 5;
    const aBit = 1 << (a & 31);
    const bWord = b >>> 5;
    const bBit = 1 << (b & 31);
    for (let u = 0; u < n; u++) {
      const row = u * words;
      if (u !== a && (bits[row + aWord] & aBit) === 0) continue;
      for (let w = 0; w < words; w++) bits[row + w] |= bits[bRow + w];
      bits[row + bWord] |= bBit;
    }
    return true;
  }

  /** Whether (row of a) ∩ mask ≠ ∅, i.e. a precedes some member of the set `mask`. */
  precedesAny(a: number, mask: Uint32Array): boolean {
    const { bits, words } = this;
    const row = a * words;
    for (let w = 0; w < words; w++) if ((bits[row + w] & mask[w]) !== 0) return true;
    return false;
  }

  /** The transposed relation: row t holds the predecessors of t. */
  predecessors(): Uint32Array {
    const { n, words, bits } = this;
    const pred = allocateWords(n * words, () => `the transpose of ${orderOf(n)()}`);
    for (let a = 0; a < n; a++) {
      const row = a * words;
      for (let w = 0; w < words; w++) {
        let x = bits[row + w];
        while (x !== 0) {
          const low = x & -x;
          const b = (w << 5) + (31 - Math.clz32(low));
          pred[b * words + (a >>> 5)] |= 1 << (a & 31);
          x ^= low;
        }
      }
    }
    return pred;
  }

  /**
   * Builds the transitive closure of the given edges (succ lists) in one pass over a topological order.
   * Returns the order, or one with `cyclic` set if the edges have a cycle.
   */
  static closureOf(n: number, succ: number[][]): Order {
    const order = new Order(n);
    const indeg = new Int32Array(n);
    for (const list of succ) for (const v of list) indeg[v]++;
    const topo: number[] = [];
    for (let u = 0; u < n; u++) if (indeg[u] === 0) topo.push(u);
    for (let i = 0; i < topo.length; i++) for (const v of succ[topo[i]]) if (--indeg[v] === 0) topo.push(v);
    if (topo.length < n) {
      order.cyclic = true;
      return order;
    }
    const { bits, words } = order;
    for (let i = n - 1; i >= 0; i--) {
      const u = topo[i];
      const row = u * words;
      for (const v of succ[u]) {
        const vRow = v * words;
        for (let w = 0; w < words; w++) bits[row + w] |= bits[vRow + w];
        bits[row + (v >>> 5)] |= 1 << (v & 31);
      }
    }
    return order;
  }
}

/** A bitset over n transactions. */
export function newSet(n: number): Uint32Array {
  return new Uint32Array((n + 31) >>> 5);
}

export function setHas(set: Uint32Array, i: number): boolean {
  return (set[i >>> 5] & (1 << (i & 31))) !== 0;
}

export function setAdd(set: Uint32Array, i: number): void {
  set[i >>> 5] |= 1 << (i & 31);
}
