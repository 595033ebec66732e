/**
 * Shrinking an inconsistent history to a small inconsistent sub-history (semantics.md §5), for explanations
 * when the contradiction is not one forced cycle.
 *
 * Greedy: try dropping each transaction (last first) that no remaining transaction read from, keep the drop
 * when the rest is still inconsistent. The verdict of the whole history never depends on this: it only picks
 * what to show. Bounded by a deadline; returns the smallest sub-history reached.
 */
import type { History } from '../history/history.js';
import type { CheckOptions, CheckResult } from './check.js';

export interface Shrunk {
  txns: string[];
  result: CheckResult;
}

export function shrink(history: History, _options: CheckOptions, check: (h: History) => CheckResult, deadline: number): Shrunk | undefined {
  const writerOf = new Map<string, number>();
  history.txns.forEach((t, i) => {
    for (const e of t.events) if (e.op !== 'select') writerOf.set(e.wid, i);
  });
  const readsFrom: Set<number>[] = history.txns.map((t, i) => {
    const s = new Set<number>();
    for (const e of t.events) {
      const wids = e.op === 'select' ? e.rows.map((r) => r.wid) : e.op === 'insert' ? [] : e.rows.map((r) => r.read);
      for (const w of wids) {
        const x = writerOf.get(w);
        if (x !== undefined && x !== i) s.add(x);
      }
    }
    return s;
  });
  const kept = new Set(history.txns.map((_, i) => i));
  let last: CheckResult | undefined;
  const sub = () => ({ ...history, txns: history.txns.filter((_, i) => kept.has(i)) });
  for (let i = history.txns.length - 1; i >= 0; i--) {
    if (Date.now() > deadline) break;
    let needed = false;
    for (const j of kept) if (j !== i && readsFrom[j].has(i)) needed = true;
    if (needed) continue;
    kept.delete(i);
    const result = check(sub());
    if (result.verdict === 'inconsistent') last = result;
    else kept.add(i);
  }
  if (!last) return undefined;
  return { txns: history.txns.filter((_, i) => kept.has(i)).map((t) => t.id), result: last };
}
