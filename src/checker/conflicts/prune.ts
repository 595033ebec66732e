/**
 * Witness choices that cannot be part of any consistent extension (paper §5, Algorithm 3's enumeration, pruned;
 * docs/semantics.md §4.4).
 *
 * Choosing w as the witness of a conflict (r, x) adds wr_x(w, r), and the reader's axiom then requires every
 * other writer t2 of x visible to r to commit before w. Visibility only grows as the commit order and wr grow,
 * so a writer t2 visible to r under the saturated pco now is visible in every extension of it: if w must commit
 * before t2 (pco(w, t2), or w is init, which precedes everything), choosing w closes a cycle that saturation
 * would find after the choice. Such choices are dropped before the enumeration; a conflict left with one choice
 * is forced.
 *
 *   conflicts (after saturation) -> zeros minus impossible writers -> more forced witnesses
 */
import type { Conflict } from './conflicts.js';
import { PC, SI } from '../levels.js';
import { INIT } from '../model/model.js';
import { newSet, setHas } from '../model/order.js';
import { PrefixVisibility, type Relations } from '../model/relations.js';
import type { WritePartners } from '../model/write-partners.js';
import { memoryStage } from '../budget.js';

/**
 * Removes from each conflict's zeros the writers that cannot be its witness under `rel` (saturated, acyclic),
 * unless none would be left. Returns how many choices it removed.
 */
export function pruneWitnesses(
  rel: Relations,
  partners: WritePartners,
  conflicts: Conflict[],
  budget?: { checkNow(): void },
): number {
  memoryStage('pruning witness choices');
  const { model, pco } = rel;
  const { words } = pco;
  const prefixVisible = new PrefixVisibility(rel, partners);
  prefixVisible.startPass();
  let pred: Uint32Array | undefined;
  // The writers each hiding version must precede: every pco-predecessor of a visible writer of the key.
  const before = newSet(model.n);
  let removed = 0;
  for (let ci = 0; ci < conflicts.length; ci++) {
    if ((ci & 1023) === 1023) budget?.checkNow();
    const c = conflicts[ci];
    const read = model.reads[c.read];
    const t3 = read.txn;
    const level = model.txns[t3].level;
    const fast = level === PC || level === SI ? prefixVisible.of(t3) : undefined;
    let anyVisible = false;
    before.fill(0);
    const writers = model.writersOf[c.key];
    // Latest ids first: within a session, a later writer's predecessors include the earlier ones'.
    for (let i = writers.length - 1; i >= 0; i--) {
      const t2 = writers[i];
      if (t2 === t3 || setHas(before, t2)) continue;
      if (!(fast ? setHas(fast, t2) || rel.soBefore(t2, t3) : rel.visible(t2, read, level, partners))) continue;
      anyVisible = true;
      pred ??= pco.predecessors();
      const row = t2 * words;
      for (let w = 0; w < words; w++) before[w] |= pred[row + w];
    }
    if (!anyVisible) continue;
    // init precedes every writer; a writer in `before` precedes a visible one (never itself: pco is acyclic).
    const kept = c.zeros.filter((w) => w !== INIT && !setHas(before, w));
    // With no choice left the history is inconsistent: the choices are left as they were, so that the forced
    // witness or the enumeration finds the contradiction as a cycle, explained as one (a fractured read...).
    if (kept.length === c.zeros.length || kept.length === 0) continue;
    removed += c.zeros.length - kept.length;
    c.zeros = kept;
  }
  return removed;
}
