/**
 * SI's Conflict axiom (docs/semantics.md §2.3, Figure 3 of the paper): an SI transaction t3 sees every transaction
 * committed before a transaction t4 that writes a key t3 also writes ("write partners"), if t4 commits before t3.
 *
 * The partners of t3 are found through its written keys (`writersOf`), never materialized: on TPC-C every
 * NewOrder and Payment writes the same district or warehouse row, so lists of partners are quadratic in the
 * history (measured: 46 M entries, seconds to build, for 3 sessions × 3200 transactions). A partner that
 * shares several keys with t3 is visited once per key; the callers only test a condition on it.
 */
import type { CheckModel } from './model.js';

export class WritePartners {
  constructor(private readonly model: CheckModel) {}

  /**
   * Calls `visit` on each write partner t4 of the SI transaction t3, latest dense id first within each key (a
   * session's later transactions first), until it returns true; returns whether one did.
   */
  some(t3: number, visit: (t4: number) => boolean): boolean {
    const { writes, writersOf } = this.model;
    for (const key of writes[t3].keys()) {
      const writers = writersOf[key];
      for (let i = writers.length - 1; i >= 0; i--) {
        const t4 = writers[i];
        if (t4 !== t3 && visit(t4)) return true;
      }
    }
    return false;
  }

  /** Whether t and t3 write a common key. */
  share(t: number, t3: number): boolean {
    const a = this.model.writes[t];
    const b = this.model.writes[t3];
    const [small, large] = a.size <= b.size ? [a, b] : [b, a];
    for (const key of small.keys()) if (large.has(key)) return true;
    return false;
  }
}
