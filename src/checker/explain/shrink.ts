/**
 * Shrinking an inconsistent history to a small inconsistent sub-history (docs/semantics.md §5), for explanations
 * when the contradiction is not one forced cycle.
 *
 *   drop every aborted transaction -> drop chunks of transactions (halving the chunk size, latest first),
 *   keeping a drop when the rest is still inconsistent (delta debugging)
 *
 * A chunk can be dropped only if no remaining transaction read from it (a read of a dropped write would be a
 * garbage read, an inconsistency of its own). The verdict of the whole history never depends on this: it only
 * picks what to show. Bounded by a deadline; returns the smallest sub-history reached.
 */
import type { History } from '../../history/history.js';
import type { CheckOptions, CheckResult } from '../result.js';

export interface Shrunk {
  txns: string[];
  result: CheckResult;
}

export function shrink(
  history: History,
  _options: CheckOptions,
  check: (h: History) => CheckResult | undefined,
  deadline: number,
): Shrunk | undefined {
  const n = history.txns.length;
  const writerOf = new Map<string, number>();
  history.txns.forEach((t, i) => {
    for (const e of t.events) if (e.op !== 'select') writerOf.set(e.wid, i);
  });
  const readsFrom: number[][] = history.txns.map((t, i) => {
    const s = new Set<number>();
    for (const e of t.events) {
      const wids = e.op === 'select' ? e.rows.map((r) => r.wid) : e.op === 'insert' ? [] : e.rows.map((r) => r.read);
      for (const w of wids) {
        const x = writerOf.get(w);
        if (x !== undefined && x !== i) s.add(x);
      }
    }
    return [...s];
  });
  const kept = new Uint8Array(n).fill(1);
  let last: CheckResult | undefined;
  const sub = () => ({ ...history, txns: history.txns.filter((_, i) => kept[i]) });
  /** Drops `set` if nothing kept reads from it and the rest stays inconsistent. */
  const tryDrop = (set: number[]): boolean => {
    if (set.length === 0 || Date.now() > deadline) return false;
    for (const i of set) kept[i] = 0;
    let needed = false;
    for (let j = 0; j < n && !needed; j++) if (kept[j]) for (const w of readsFrom[j]) if (!kept[w]) needed = true;
    if (!needed) {
      const result = check(sub());
      if (result?.verdict === 'inconsistent') {
        last = result;
        return true;
      }
    }
    for (const i of set) kept[i] = 1;
    return false;
  };
  tryDrop(history.txns.map((t, i) => (t.status === 'aborted' ? i : -1)).filter((i) => i >= 0));
  // Latest first (by end time, else file order): anomalies tend to be local, and later readers go first.
  const order = history.txns.map((_, i) => i).sort((a, b) => (history.txns[b].end ?? b) - (history.txns[a].end ?? a));
  for (
    let chunk = Math.ceil(n / 2);
    chunk >= 1 && Date.now() <= deadline;
    chunk = chunk === 1 ? 0 : Math.ceil(chunk / 2)
  ) {
    const live = order.filter((i) => kept[i]);
    for (let s = 0; s < live.length && Date.now() <= deadline; s += chunk)
      tryDrop(live.slice(s, s + chunk).filter((i) => kept[i]));
  }
  if (!last) return undefined;
  return { txns: history.txns.filter((_, i) => kept[i]).map((t) => t.id), result: last };
}
