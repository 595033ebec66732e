/**
 * The one place a stop becomes the verdict `unknown` (docs/semantics.md §4.6): every stage of a check throws
 * `BudgetExceeded` (budget.ts) when its deadline, its step limit or its memory runs out, and check.ts catches it
 * once, around the whole check. What the check was doing and what it had explored by then is kept in a
 * `Progress` the stages update, so the reason says which limit stopped it, where, and after how much work.
 */
import { type BudgetExceeded, MemoryExceeded } from './budget.js';
import type { CheckResult, CheckStats } from './result.js';

export interface Progress {
  /** The stage running, as the rest of a sentence that begins with what stopped it ("stopped by the time limit"). */
  stage: (stoppedBy: string) => string;
  /** Set while trying transactions of unknown outcome as committed: said after the stage. */
  within?: string;
  stats: CheckStats;
  notes: string[];
}

/** How a reason names the limit that stopped the check. */
function limitName(e: BudgetExceeded): string {
  return e.stopCause === 'steps'
    ? 'the step limit (maxSteps)'
    : e.stopCause === 'memory'
      ? 'the memory limit'
      : 'the time limit';
}

export function stoppedResult(e: BudgetExceeded, progress: Progress): CheckResult {
  // A memory stop's message is its whole reason (which limit, what was in use, at which stage).
  const reason =
    e instanceof MemoryExceeded
      ? e.message
      : progress.stage(limitName(e)) + (progress.within ? ` ${progress.within}` : '');
  return { verdict: 'unknown', reason, anomalies: [], notes: progress.notes.slice(), stats: progress.stats };
}
