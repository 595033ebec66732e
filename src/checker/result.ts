/**
 * What a check returns, and the options it takes (docs/semantics.md §4.6 for the verdicts): the types shared by
 * the checker (check.ts), shrinking (explain/shrink.ts) and every renderer, in a file of their own so that none of them
 * imports another for its types; and the statistics a check reports before it has counted anything of its own.
 */
import type { History } from '../history/history.js';
import type { Anomaly } from './anomaly.js';
import type { IsoOverride } from './levels.js';

export type Verdict = 'consistent' | 'inconsistent' | 'unknown';

export interface CheckOptions {
  iso?: IsoOverride;
  checkAbortedReads?: boolean;
  /** Wall-clock limit for the whole check, in milliseconds. */
  timeoutMs?: number;
  /** Limit on search steps (deterministic alternative to the timeout, for tests). */
  maxSteps?: number;
  /** The most the check may hold in memory (JavaScript heap and typed arrays), in bytes; past it the verdict is
   *  `unknown`, with a reason that says so. Default: V8's heap limit less a margin, and 85% of physical memory. */
  maxMemoryBytes?: number;
  /** Shrink inconsistent histories whose contradiction is not a single cycle (default true). */
  shrink?: boolean;
  /** Build explanations for inconsistent verdicts (default true; shrinking turns it off for its trials). */
  explain?: boolean;
  /**
   * Try the linear check first (docs/scale.md; default true). false: saturation and search only (tests compare the
   * two).
   */
  linear?: boolean;
  /** Called when the check enters a stage ("building the model", "linear check: verifying the commit order", ...):
   *  for progress on long runs (the CLI shows it on a terminal). */
  progress?: (stage: string) => void;
}

export interface CheckStats {
  transactions: number;
  committed: number;
  aborted: number;
  unknown: number;
  sessions: number;
  events: number;
  reads: number;
  keys: number;
  conflicts: number;
  /** Conflicts whose witness was forced (a single possible writer). */
  forcedWitnesses: number;
  /** Witness choices dropped because they commit before a writer the read sees (conflicts/prune.ts). */
  prunedChoices: number;
  saturationEdges: number;
  extensions: number;
  prefixes: number;
  timeMs: number;
  /** Which procedure decided: the linear check (a verified commit order or forced edges) or the search. */
  decidedBy?: 'linear' | 'search';
}

export interface CheckResult {
  verdict: Verdict;
  /** Why the verdict is unknown (timeout), or a short summary. */
  reason?: string;
  anomalies: Anomaly[];
  /** For a consistent history: a commit order of the committed transactions (ids) that satisfies every axiom. */
  commitOrder?: string[];
  notes: string[];
  stats: CheckStats;
  /** For an inconsistent history whose explanation needed shrinking: the transactions of the small sub-history. */
  subHistory?: string[];
}

/** Statistics with every count zero (a check stopped before it read the history reports these). */
export function zeroStats(timeMs = 0): CheckStats {
  return {
    transactions: 0,
    committed: 0,
    aborted: 0,
    unknown: 0,
    sessions: 0,
    events: 0,
    reads: 0,
    keys: 0,
    conflicts: 0,
    forcedWitnesses: 0,
    prunedChoices: 0,
    saturationEdges: 0,
    extensions: 0,
    prefixes: 0,
    timeMs,
  };
}

/** The statistics of a history before its model is built: its transactions by status, sessions and events; the
 *  rest zero. */
export function historyStats(history: History, timeMs = 0): CheckStats {
  const txns = history.txns;
  const count = (s: string) => txns.filter((t) => t.status === s).length;
  return {
    ...zeroStats(timeMs),
    transactions: txns.length,
    committed: count('committed'),
    aborted: count('aborted'),
    unknown: count('unknown'),
    sessions: new Set(txns.map((t) => t.session)).size,
    events: txns.reduce((a, t) => a + t.events.length, 0),
  };
}
