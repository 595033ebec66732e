/**
 * Consistency of a mixed-isolation client history (paper Algorithm 3; docs/semantics.md §4).
 *
 *   1. well-formedness (model/model.ts)                        -> inconsistent, named anomaly
 *   2. pco := FIX(saturate)((so ∪ wr)+)                   -> cycle: inconsistent, explained cycle
 *   3. conflicts (r, x) with 1ˣʳ ≠ ∅; 0ˣʳ = ∅           -> inconsistent, missing row
 *   4. for each choice of a writer in 0ˣʳ per conflict (DFS, re-saturating after each choice, pruning cycles)
 *   5.   consistent-prefix search (search/)               -> consistent, with the commit order
 *   6. nothing found                                      -> inconsistent, explained on a shrunk sub-history
 * A deadline, step or memory budget stops any stage; one catch (checkGuarded, stopped.ts) turns the stop into
 * `unknown`, saying which limit, where, and what was explored.
 */
import type { History } from '../history/history.js';
import type { Anomaly, Blocked, OpenConflict } from './anomaly.js';
import { historyStats, zeroStats, type CheckOptions, type CheckResult, type CheckStats } from './result.js';
import { findConflicts, type Conflict } from './conflicts/conflicts.js';
import { ConflictIndex } from './conflicts/conflict-index.js';
import { cycleAnomaly, keyRef, txnId } from './explain/cycle.js';
import { CC, levelName } from './levels.js';
import { buildModel, INIT, withLevels, type CheckModel } from './model/model.js';
import { explorePrefixes, type BlockReason, type StuckPoint } from './search/prefix.js';
import { Relations } from './model/relations.js';
import { linearCheck } from './linear/linear-check.js';
import { WritePartners } from './model/write-partners.js';
import { saturate } from './saturation/saturate.js';
import { shrink } from './explain/shrink.js';
import { missingRowAnomaly } from './explain/missing-row.js';
import { pruneWitnesses } from './conflicts/prune.js';
import { explainByCases, explainStuckPair } from './explain/cases.js';
import { completeWitnesses } from './search/witness.js';
import { searchExtensions } from './search/extensions.js';
import { attachTransactions } from './explain/describe.js';
import { attempt, Budget, BudgetExceeded, withMemoryGuard } from './budget.js';
import { stoppedResult, type Progress } from './stopped.js';

export type { Verdict, CheckOptions, CheckStats, CheckResult } from './result.js';

/**
 * CheckOptions, and for checks of one history at several levels (level-boundary.ts) one model for all: the first
 * check keeps the model it builds in `reuseModel`, the others take it with their levels (model.ts's withLevels).
 * Same history and checkAbortedReads only. (Not in CheckOptions: the report's browser code imports that type.)
 */
export interface CheckRunOptions extends CheckOptions {
  reuseModel?: ModelReuse;
}

/** The model one check built, for the next check of the same history at other levels. */
export interface ModelReuse {
  model?: CheckModel;
  /** The checkAbortedReads it was built with (the model depends on it). */
  checkAbortedReads?: boolean;
  /** The budget of the check running now: the model's compiled WHEREs consult it, whichever check built them. */
  budget?: Budget;
}

export function checkHistory(history: History, options: CheckRunOptions = {}): CheckResult {
  // Past its memory limit a check stops with `unknown` and says why (budget.ts), never a V8 abort.
  const started = Date.now();
  return withMemoryGuard(
    options.maxMemoryBytes,
    () => checkGuarded(history, options),
    (reason) => ({
      verdict: 'unknown',
      reason,
      anomalies: [],
      notes: [],
      stats: historyStats(history, Date.now() - started),
    }),
  );
}

/** The check, with the one place where a stop (BudgetExceeded) becomes the verdict `unknown`. */
function checkGuarded(history: History, options: CheckRunOptions): CheckResult {
  const started = Date.now();
  const budget = new Budget(
    options.timeoutMs !== undefined ? started + options.timeoutMs : Infinity,
    options.maxSteps ?? Infinity,
  );
  const progress: Progress = {
    stage: (by) => `stopped by ${by} while building the model (resolving every read to the write it saw)`,
    stats: historyStats(history, 0),
    notes: [],
  };
  let result: CheckResult;
  try {
    result = checkStages(history, options, budget, progress);
  } catch (e) {
    if (!(e instanceof BudgetExceeded)) throw e;
    result = stoppedResult(e, progress);
  }
  result.stats.timeMs = Date.now() - started;
  if (result.verdict === 'inconsistent') explainInconsistent(history, result, options, started);
  return result;
}

function checkStages(history: History, options: CheckRunOptions, budget: Budget, progress: Progress): CheckResult {
  const reuse = options.reuseModel;
  let model: CheckModel;
  if (reuse) reuse.budget = budget;
  if (
    reuse?.model &&
    reuse.model.history === history &&
    (reuse.checkAbortedReads ?? false) === (options.checkAbortedReads ?? false)
  ) {
    options.progress?.('taking the model built for the previous level, with these levels');
    model = withLevels(reuse.model, options.iso);
  } else {
    options.progress?.(`building the model of ${history.txns.length.toLocaleString('en-US')} transactions`);
    // a reused model's WHEREs keep this hook: it asks the budget of whichever check runs
    model = modelOf(history, options, reuse ? () => (reuse.budget ?? budget).checkNow() : () => budget.checkNow());
    if (reuse) Object.assign(reuse, { model, checkAbortedReads: options.checkAbortedReads ?? false });
  }
  const result = checkModel(model, budget, options, progress);
  if (result.verdict === 'inconsistent' && model.anomalies.length === 0 && model.droppedUnknown.length > 0) {
    return withUnknownCommitted(history, model.droppedUnknown, result, budget, options, progress);
  }
  return result;
}

/** The model of h at the check's levels, its construction stopped by `deadline` (a budget's checkNow). */
function modelOf(h: History, options: CheckOptions, deadline: () => void): CheckModel {
  return buildModel(h, { iso: options.iso, checkAbortedReads: options.checkAbortedReads, deadline });
}

/**
 * Explanations of an inconsistent verdict: a shrunk sub-history, the transactions involved. Never changes the verdict.
 */
function explainInconsistent(history: History, result: CheckResult, options: CheckOptions, started: number): void {
  if (result.verdict === 'inconsistent' && options.shrink !== false && needsShrinking(result)) {
    // Shrinking gets 5 s (a quarter of --timeout when shorter) from now, and every trial, model and the
    // explanation stop within that and within --timeout (a verdict that took 5 s still leaves shrinking its time;
    // it was counted from the start of the check).
    const end = options.timeoutMs === undefined ? Infinity : started + options.timeoutMs;
    const until = Math.min(Date.now() + Math.min(5000, (options.timeoutMs ?? 20000) / 4), end);
    /** The model of h and a budget of ms, stopped at `limit` at the latest. */
    const within = (ms: number, h: History, limit = until) => {
      const budget = new Budget(Math.min(Date.now() + ms, limit));
      return { model: modelOf(h, options, () => budget.checkNow()), budget };
    };
    const sub = shrink(
      history,
      options,
      (h) =>
        attempt(() => {
          const { model, budget } = within(2000, h);
          return checkModel(model, budget, { ...options, explain: false });
        }),
      until,
      // dropped versions are cut as in a truncated file: the sub-history shows a contradiction of the whole one
      true,
    );
    // A sub-history is worth showing only when it is small enough to read.
    if (sub && sub.txns.length <= MAX_SHOWN_SUBHISTORY) {
      result.subHistory = sub.txns;
      const subHistory = sub.history;
      // the explanation of a small sub-history: up to 5 s more, still within --timeout
      const explainedResult =
        attempt(() => {
          const { model, budget } = within(5000, subHistory, end);
          return checkModel(model, budget, options);
        }) ?? sub.result;
      const explained = explainedResult.anomalies.filter((a) => a.type !== 'no-consistent-order');
      if (explained.length)
        result.anomalies.unshift(...explained.map((a) => ({ ...a, inSubHistory: sub.txns.length })));
      const search = result.anomalies.find((a) => a.type === 'no-consistent-order');
      if (search) search.subHistory = sub.txns;
    }
  }
  if (result.verdict === 'inconsistent' && options.explain !== false) attachTransactions(history, result.anomalies);
}

/**
 * An `unknown` transaction nobody read may still have committed, and its writes may be what hides a row a
 * read did not return: leaving it out does not only remove constraints (the earlier rule, which dropped such
 * transactions, was wrong; the oracle found the case; documented in docs/semantics.md §1.4 and §7). So before
 * calling the history inconsistent, try the subsets of those transactions as committed (up to
 * MAX_UNKNOWN_SUBSET of them; beyond, the verdict is unknown).
 */
const MAX_UNKNOWN_SUBSET = 8;
/** Above this many transactions an inconsistency the linear check proves is reported as it explains it. */
const LINEAR_EXPLAINS_ABOVE = 2000;
const MAX_SHOWN_SUBHISTORY = 25;
function withUnknownCommitted(
  history: History,
  dropped: string[],
  failed: CheckResult,
  budget: Budget,
  options: CheckOptions,
  progress: Progress,
): CheckResult {
  if (dropped.length > MAX_UNKNOWN_SUBSET) {
    return {
      ...failed,
      verdict: 'unknown',
      anomalies: [],
      reason:
        `inconsistent if the ${dropped.length} transactions with unknown outcome that nobody read did not ` +
        `commit; too many to try which of them committed (at most ${MAX_UNKNOWN_SUBSET})`,
    };
  }
  for (let mask = 1; mask < 1 << dropped.length; mask++) {
    const assumed = new Set(dropped.filter((_, i) => mask & (1 << i)));
    const variant = {
      ...history,
      txns: history.txns.map((t) => (assumed.has(t.id) ? { ...t, status: 'committed' as const } : t)),
    };
    // A variant the budget stops may be the consistent one: the history is then undecided too, never
    // inconsistent (the stop reaches checkGuarded, which says which variant was being tried).
    progress.within = `(while trying ${[...assumed].join(', ')}, of unknown outcome, as committed)`;
    progress.stage = (by) => `stopped by ${by} while building the model of a variant`;
    const r = checkModel(
      modelOf(variant, options, () => budget.checkNow()),
      budget,
      { ...options, explain: false },
      progress,
    );
    if (r.verdict === 'consistent') {
      r.notes.push(`consistent if ${[...assumed].join(', ')} (commit outcome unknown, never read) committed`);
      return r;
    }
  }
  progress.within = undefined;
  failed.notes.push(`also inconsistent whichever of ${dropped.join(', ')} (commit outcome unknown) committed`);
  return failed;
}

function needsShrinking(result: CheckResult): boolean {
  return result.anomalies.length > 0 && result.anomalies.every((a) => a.type === 'no-consistent-order');
}

/** The statistics of a model before the search: what the model counted, the search's counts zero. */
function emptyStats(model: CheckModel): CheckStats {
  const s = model.stats;
  return {
    ...zeroStats(),
    transactions: s.transactions,
    committed: s.committed,
    aborted: s.aborted,
    unknown: s.unknown,
    sessions: s.sessions,
    events: s.events,
    reads: s.reads,
    keys: s.keys,
  };
}

/** The verdict on one model. Throws BudgetExceeded when stopped, after noting in `progress` where it was. */
function checkModel(model: CheckModel, budget: Budget, options: CheckOptions = {}, progress?: Progress): CheckResult {
  const stats = emptyStats(model);
  const notes = model.notes.slice();
  if (progress) {
    progress.stats = stats;
    progress.notes = notes;
    progress.stage = (by) =>
      `stopped by ${by} before the search (saturating the commit order, finding conflicts or completing witnesses)`;
  }
  const inconsistent = (anomalies: Anomaly[]): CheckResult => ({ verdict: 'inconsistent', anomalies, notes, stats });
  if (model.anomalies.length > 0) return inconsistent(model.anomalies);

  if (options.linear !== false) {
    const linear = linearCheck(
      model,
      () => budget.checkNow(),
      undefined,
      options.progress && ((stage) => options.progress!(`linear check: ${stage}`)),
    );
    if (linear.verdict === 'consistent') {
      stats.decidedBy = 'linear';
      return {
        verdict: 'consistent',
        anomalies: [],
        commitOrder: Array.from(linear.order, (t) => model.txns[t].id).slice(1),
        notes,
        stats,
      };
    }
    // On small histories the search explains an inconsistency in its own terms (named cycles, case splits).
    if (linear.verdict === 'inconsistent' && (model.n > LINEAR_EXPLAINS_ABOVE || options.explain === false)) {
      stats.decidedBy = 'linear';
      return inconsistent(linear.anomalies);
    }
    if (linear.verdict === 'undecided' && model.n > LINEAR_EXPLAINS_ABOVE) {
      notes.push(
        `the linear check did not decide (${linear.reason}); the search decides instead, in time and memory ` +
          `that grow with the square of the number of transactions (docs/scale.md)`,
      );
    }
  }
  stats.decidedBy = 'search';
  options.progress?.('saturating the commit order and searching');

  const partners = new WritePartners(model);
  const base = Relations.base(model);
  const satStats = { rounds: 0, added: 0 };
  if (!saturate(base, partners, satStats, budget)) {
    stats.saturationEdges = satStats.added;
    return inconsistent([cycleAnomaly(base)]);
  }
  stats.saturationEdges = satStats.added;

  // Conflicts whose witness has a single possible writer are forced: add them, saturate again, and
  // recompute (the extension is a client history in its own right, paper Algorithm 3 applied to it).
  let conflicts: Conflict[] = [];
  const index = new ConflictIndex(model);
  const hasCC = model.txns.some((t, i) => i !== INIT && t.level === CC);
  for (let round = 0; ; round++) {
    budget.tick();
    // After the first round only the previous conflicts can still be conflicts (findConflicts, `previous`).
    const found = findConflicts(
      index,
      base.pco,
      (r, k) => base.hasWitness(r, k),
      hasCC,
      round === 0 ? undefined : conflicts,
      budget,
    );
    if (found.missing.length > 0)
      return inconsistent(found.missing.slice(0, 10).map((m) => missingRowAnomaly(model, m.read, m.key, m.ones)));
    conflicts = found.conflicts;
    // Versions that cannot be the one read (they commit before a visible writer) are no choice: fewer
    // choices, more forced witnesses, and a relaxed commit order closer to one the witnesses fit.
    stats.prunedChoices += pruneWitnesses(base, partners, conflicts, budget);
    const forced = conflicts.filter((c) => c.zeros.length === 1);
    if (forced.length === 0) break;
    for (const c of forced) base.addWitness(model.reads[c.read], c.key, c.zeros[0]);
    stats.forcedWitnesses += forced.length;
    if (base.pco.cyclic || !saturate(base, partners, satStats, budget)) {
      stats.saturationEdges = satStats.added;
      return inconsistent([cycleAnomaly(base)]);
    }
  }
  stats.conflicts = conflicts.length;

  const prefixStats = { prefixes: 0, memoHits: 0 };
  if (progress) {
    progress.stage = (by) => {
      stats.prefixes = prefixStats.prefixes;
      return (
        `search stopped by ${by} after ${stats.extensions} extension(s) and ${prefixStats.prefixes} prefix(es) ` +
        `(${conflicts.length} conflict(s))`
      );
    };
  }

  // The relaxation: leave the open conflicts unconstrained. No commit order => inconsistent.
  const stuck: StuckPoint = { placed: [], blocked: [] };
  stats.extensions++;
  const relaxed = explorePrefixes(base, partners, budget, prefixStats, stuck);
  if (!relaxed) {
    stats.prefixes = prefixStats.prefixes;
    if (options.explain !== false) {
      const split = attempt(
        () => explainByCases(base, partners, budget) ?? explainStuckPair(base, partners, stuck, budget),
      );
      if (split) return inconsistent([split]);
    }
    const id = (t: number) => model.txns[t].id;
    return inconsistent([
      {
        type: 'no-consistent-order',
        txns: [...new Set([...stuck.placed.slice(-3), ...stuck.blocked.map((b) => b.txn)])].map(id),
        stuck: {
          committed: stuck.placed.length,
          lastCommitted: stuck.placed.slice(-5).map(id),
          blocked: stuck.blocked.map((b) => blockedData(model, b.txn, b.reason)),
        },
      },
    ]);
  }
  const completion = conflicts.length === 0 ? undefined : completeWitnesses(base, conflicts, relaxed, partners, budget);
  if (conflicts.length === 0 || completion?.rel) {
    stats.prefixes = prefixStats.prefixes;
    return { verdict: 'consistent', anomalies: [], commitOrder: relaxed.map((t) => model.txns[t].id), notes, stats };
  }

  // Enumerate the extensions (paper Algorithm 3, line 9; search/extensions.ts).
  const order = searchExtensions(
    model,
    base,
    conflicts,
    relaxed,
    completion!.preferred,
    partners,
    budget,
    prefixStats,
    stats,
  );
  stats.prefixes = prefixStats.prefixes;
  if (order) {
    return { verdict: 'consistent', anomalies: [], commitOrder: order.map((t) => model.txns[t].id), notes, stats };
  }
  return inconsistent([
    {
      type: 'no-consistent-order',
      txns: [],
      conflictCount: conflicts.length,
      ...(conflicts.length ? { conflicts: conflicts.slice(0, 20).map((c) => conflictData(model, c)) } : {}),
    },
  ]);
}

function conflictData(model: CheckModel, c: Conflict): OpenConflict {
  const read = model.reads[c.read];
  const id = (t: number) => txnId(model, t);
  return {
    read: read.ref,
    reader: id(read.txn),
    ...keyRef(model, c.key),
    matching: c.ones.map(id),
    hiding: c.zeros.map(id),
  };
}

function blockedData(model: CheckModel, txn: number, r: BlockReason): Blocked {
  const id = (t: number) => txnId(model, t);
  switch (r.why) {
    case 'forced-order':
      return { txn: id(txn), why: r.why, after: id(r.after) };
    case 'visible-writer':
      return {
        txn: id(txn),
        why: r.why,
        reader: id(r.reader),
        level: levelName(model.txns[r.reader].level),
        ...keyRef(model, r.key),
        version: id(r.version),
      };
    case 'stale-snapshot':
      return {
        txn: id(txn),
        why: r.why,
        reader: id(r.reader),
        ...keyRef(model, r.key),
        version: id(r.version),
        later: id(r.later),
      };
    case 'explored':
      return { txn: id(txn), why: r.why };
  }
}
