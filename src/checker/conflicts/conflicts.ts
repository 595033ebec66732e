/**
 * Conflicts of a client history (paper §5, Equation 4; docs/semantics.md §3.3 and §4.3).
 *
 * For a non-partial read r of t3 and a key x of its table that r neither returned nor read locally:
 *   1ˣʳ = {t : (t3, t) ∉ pco, t writes x (init writes every key), WHERE(r)(value(t, x)) = true}
 *   0ˣʳ = the same with false († is false).
 * (r, x) is a conflict when 1ˣʳ ≠ ∅; a conflict with 0ˣʳ = ∅ is a missing row: no witness exists.
 *
 * Keys nobody but init wrote are looked up through the WHERE's point constraints on the primary key when it
 * has them (no scan of the table per read); otherwise the table's initial rows are scanned once per read.
 */
import { INIT, type ReadEvent } from '../model/model.js';
import type { Order } from '../model/order.js';
import { memoryStage } from '../budget.js';
import type { ConflictIndex } from './conflict-index.js';

export interface Conflict {
  read: number;
  key: number;
  /** Writers whose value satisfies the WHERE (the 1 set). */
  ones: number[];
  /** Writers whose value does not (the 0 set): the witness choices. */
  zeros: number[];
}

export interface MissingRow {
  read: number;
  key: number;
  /** Writers whose version satisfies the WHERE and that the read should have seen. */
  ones: number[];
}

export interface ConflictResult {
  conflicts: Conflict[];
  missing: MissingRow[];
}

/**
 * Computes the conflicts and missing rows of every non-partial read, against the partial commit order `pco`.
 *
 * `widen`: also treat unreturned rows whose every version hides them as conflicts (they need a witness too).
 * The paper's Theorem 5 (non-conflicts need no witness) holds for SER, SI, PC, RA and RC but not CC: a
 * witness edge into a reader puts its writer in the causal past of the reader's successors, which a CC
 * transaction must then see. So when some transaction is CC, every unreturned row with a non-init writer
 * gets a witness (found by the brute-force oracle; see test/fixtures/disagreements/regression-CC-*). This is a
 * documented departure from the paper: docs/semantics.md §3.3 and §7.
 *
 * `previous`: the conflicts of an earlier call on the same model whose pco was a subset of this one (and whose
 * decided pairs a subset of these). Only those pairs are looked at again: the 1 and 0 sets only lose writers
 * as pco grows (a writer pco-after the reader leaves both) and decided pairs stay decided, so a pair that was
 * neither a conflict nor a missing row then is neither now. Rounds of forced witnesses cost O(conflicts)
 * instead of O(reads × keys).
 */
export function findConflicts(
  index: ConflictIndex,
  pco: Order,
  decided?: (read: number, key: number) => boolean,
  widen = false,
  previous?: Conflict[],
  budget?: { checkNow(): void },
): ConflictResult {
  memoryStage('finding conflicts');
  const model = index.model;
  const conflicts: Conflict[] = [];
  const missing: MissingRow[] = [];
  const classify = (read: ReadEvent, key: number): void => {
    const t3 = read.txn;
    const ones: number[] = [];
    const zeros: number[] = [];
    const writers = model.writersOf[key];
    const flags = index.matchFlags(read, key);
    for (let i = -1; i < writers.length; i++) {
      const t = i < 0 ? INIT : writers[i];
      if (t === t3 || pco.has(t3, t)) continue;
      if (index.versionMatches(read, key, flags, i)) ones.push(t);
      else zeros.push(t);
    }
    if (ones.length === 0 && !(widen && zeros.length > 0)) return;
    if (zeros.length === 0) missing.push({ read: read.id, key, ones });
    else conflicts.push({ read: read.id, key, ones, zeros });
  };
  if (previous) {
    let i = 0;
    for (const c of previous) {
      if ((++i & 4095) === 0) budget?.checkNow();
      if (!decided?.(c.read, c.key)) classify(model.reads[c.read], c.key);
    }
    return { conflicts, missing };
  }
  for (const read of model.reads) {
    if ((read.id & 255) === 255) budget?.checkNow();
    if (read.partial) continue;
    // Key columns never change for a key, so a WHERE that pins a key column to values this key does not have
    // is false on every version of it: no conflict (unless every unreturned row needs a witness).
    const skip = (key: number) => read.returned.has(key) || read.local.has(key) || decided?.(read.id, key);
    for (const key of index.matchingInitKeys(read)) {
      if (!skip(key)) missing.push({ read: read.id, key, ones: [INIT] });
    }
    for (const key of widen ? model.tables[read.table].writtenKeys : index.candidateKeys(read)) {
      if (!skip(key)) classify(read, key);
    }
  }
  return { conflicts, missing };
}
