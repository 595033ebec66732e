/**
 * Sessions as chains of dense transaction ids (model/model.ts numbers transactions by session, then seq), and the
 * causal order hb = (so ∪ wr)+ as vector clocks over those chains (docs/semantics.md §2.3, CC): one entry per
 * session per transaction instead of an n × n bitset, as in AWDIT and Plume.
 */
import { INIT, type CheckModel } from '../model/model.js';
import type { Arena } from './arena.js';
import type { Flat } from './flat.js';

export interface Chains {
  /** Session index (0..k-1) of each transaction; -1 for init. */
  of: Int32Array;
  /** 1-based position of each transaction in its session. */
  index: Int32Array;
  count: number;
}

export function sessionChains(model: CheckModel, arena: Arena): Chains {
  const { n, soPrev } = model;
  const of = arena.int32Filled(n, -1);
  const index = arena.int32(n);
  let count = 0;
  for (let t = 1; t < n; t++) {
    if (soPrev[t] === INIT) {
      of[t] = count++;
      index[t] = 1;
    } else {
      of[t] = of[soPrev[t]];
      index[t] = index[soPrev[t]] + 1;
    }
  }
  return { of, index, count };
}

/** Entries a vector-clock table may hold (4 bytes each) before the linear check declines CC readers. */
export const MAX_CLOCK_ENTRIES = 1 << 27;

/**
 * hb as vector clocks: `clock[t * k + s]` is the position of the last transaction of session s that is t or
 * causally precedes it. Built transaction by transaction in a topological order of so ∪ wr (a commit order
 * candidate is one): `begin(t)` joins the clocks of t's session predecessor, of the transactions it read from and
 * of the given extra writers (witnesses), `join(t, w)` adds a wr edge found later (a witness chosen for t).
 */
export class CausalClocks {
  private readonly clock: Int32Array;
  private readonly k: number;

  constructor(
    private readonly model: CheckModel,
    private readonly flat: Flat,
    private readonly chains: Chains,
    arena: Arena,
  ) {
    this.k = chains.count;
    // up to 512 MB: one array for every repair round of the check, zeroed again for each
    this.clock = arena.reused('causal clocks', model.n * this.k);
  }

  begin(t: number, extra: readonly number[] = []): void {
    const { k, clock } = this;
    const row = t * k;
    const prev = this.model.soPrev[t];
    if (prev !== INIT) clock.copyWithin(row, prev * k, prev * k + k);
    const { readStart, tripleStart, tripleFrom } = this.flat;
    for (let j = tripleStart[readStart[t]]; j < tripleStart[readStart[t + 1]]; j++) this.join(t, tripleFrom[j]);
    for (const w of extra) this.join(t, w);
    clock[row + this.chains.of[t]] = this.chains.index[t];
  }

  join(t: number, w: number): void {
    if (w === INIT) return;
    const { k, clock } = this;
    const row = t * k,
      wRow = w * k;
    for (let s = 0; s < k; s++) if (clock[wRow + s] > clock[row + s]) clock[row + s] = clock[wRow + s];
  }

  /** hb(a, b): a causally precedes b (a ≠ b). */
  precedes(a: number, b: number): boolean {
    if (a === b) return false;
    if (a === INIT) return true;
    if (b === INIT) return false;
    return this.chains.index[a] <= this.clock[b * this.k + this.chains.of[a]];
  }
}
