/**
 * The enumeration of witness choices (paper Algorithm 3, line 9; docs/semantics.md §4.4): when completing the
 * relaxed commit order (witness.ts) fails, each open conflict's witness is chosen in turn, depth first,
 * re-saturating after each choice and dropping a choice that closes a cycle; every full choice is a
 * conflict-free extension, on which the consistent-prefix search (prefix.ts) decides.
 *
 *   conflicts (fewest choices first; within one, the writers latest before the reader in the relaxed order)
 *     -> choose a writer -> saturate -> cyclic: next writer | next conflict | all chosen: prefix search
 */
import type { Conflict } from '../conflicts/conflicts.js';
import type { CheckModel } from '../model/model.js';
import type { Relations } from '../model/relations.js';
import type { WritePartners } from '../model/write-partners.js';
import { saturate } from '../saturation/saturate.js';
import type { Budget } from '../budget.js';
import { explorePrefixes, type PrefixStats } from './prefix.js';

/**
 * A commit order of some extension that chooses a witness for every conflict, or undefined when none exists.
 * Sorts `conflicts` (and each one's writers) into the order they are tried. `preferred[i]`: the writer of
 * conflict i that witness completion would have chosen, tried first. Throws BudgetExceeded.
 */
export function searchExtensions(
  model: CheckModel,
  base: Relations,
  conflicts: Conflict[],
  relaxed: number[],
  preferred: number[],
  partners: WritePartners,
  budget: Budget,
  prefixStats: PrefixStats,
  counts: { extensions: number },
): number[] | undefined {
  // Fewest choices first; within a conflict, the writers latest before the reader in the relaxed order first
  // (the likeliest versions a database showed).
  const pos = new Int32Array(model.n);
  for (let i = 0; i < relaxed.length; i++) pos[relaxed[i]] = i + 1;
  conflicts.forEach((c, i) => {
    const t3 = model.reads[c.read].txn;
    const first = preferred[i];
    const rank = (t: number) => (t === first ? -1 : pos[t] < pos[t3] ? pos[t3] - pos[t] : model.n + pos[t]);
    c.zeros.sort((a, b) => rank(a) - rank(b));
  });
  conflicts.sort((a, b) => a.zeros.length - b.zeros.length);

  // `owned`: rel was made for this call, which may change it for its last choice instead of cloning it (a
  // clone per level kept the whole path's clones alive: gigabytes on a few thousand conflicts).
  const extend = (i: number, rel: Relations, owned: boolean): number[] | undefined => {
    if (i === conflicts.length) {
      counts.extensions++;
      return explorePrefixes(rel, partners, budget, prefixStats);
    }
    const c: Conflict = conflicts[i];
    const read = model.reads[c.read];
    const choices = c.zeros.filter((w) => !rel.pco.has(read.txn, w));
    for (let k = 0; k < choices.length; k++) {
      budget.tick();
      const next = owned && k === choices.length - 1 ? rel : rel.clone();
      next.addWitness(read, c.key, choices[k]);
      if (next.pco.cyclic || !saturate(next, partners, undefined, budget)) continue;
      const order = extend(i + 1, next, true);
      if (order) return order;
    }
    return undefined;
  };
  return extend(0, base, false);
}
