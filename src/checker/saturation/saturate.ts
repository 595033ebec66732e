/**
 * Saturation (paper Algorithm 1 iterated to its least fixpoint, docs/semantics.md §4.2).
 *
 * For every read r of t3, key x read from t1, and writer t2 ∉ {t1, t3} of x: if vis_iso(t3)(t2, r) holds with
 * pco standing for co, then t2 must commit before t1: add (t2, t1) and re-close pco at once. Repeat until
 * nothing changes. A cycle means no commit order exists for this (extension of the) history.
 *
 *   Relations (pco = (so ∪ wr)+) -> saturate -> pco fixpoint | cyclic (with the forced edges recorded)
 */
import { PrefixVisibility, type Relations } from '../model/relations.js';
import { PC, SI } from '../levels.js';
import type { WritePartners } from '../model/write-partners.js';
import { setHas } from '../model/order.js';
import { memoryStage } from '../budget.js';

export interface SaturateStats {
  rounds: number;
  added: number;
}

/** Saturates `rel.pco` in place. Returns false when pco became cyclic. */
export function saturate(
  rel: Relations,
  partners: WritePartners,
  stats?: SaturateStats,
  budget?: { checkNow(): void },
): boolean {
  const { model, pco } = rel;
  if (pco.cyclic) return false;
  memoryStage('saturating the commit order');
  const { reads, txns, writersOf } = model;
  const prefixVisible = new PrefixVisibility(rel, partners);
  let changed = true;
  while (changed) {
    changed = false;
    if (stats) stats.rounds++;
    prefixVisible.startPass();
    let n = 0;
    for (const triple of rel.triples) {
      if (budget && (++n & 255) === 0) budget.checkNow();
      const read = reads[triple.read];
      const t3 = read.txn;
      const t1 = triple.from;
      const level = txns[t3].level;
      const fast = level === PC || level === SI ? prefixVisible.of(t3) : undefined;
      for (const t2 of writersOf[triple.key]) {
        if (t2 === t1 || t2 === t3 || pco.has(t2, t1)) continue;
        if (fast ? !(setHas(fast, t2) || rel.soBefore(t2, t3)) : !rel.visible(t2, read, level, partners)) continue;
        const via = rel.visibilityReason(t2, read, level);
        pco.add(t2, t1);
        rel.forced.push({ from: t2, to: t1, triple, via, level });
        if (stats) stats.added++;
        changed = true;
        if (pco.cyclic) return false;
      }
    }
  }
  return true;
}
