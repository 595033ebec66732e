/**
 * Histories produced by an operational model of a multi-level database, consistent by construction at each
 * transaction's own level (docs/semantics.md §2), for testing that the checker never reports a false violation.
 *
 * Sessions run concurrently; a scheduler picks a random session at each step and runs one step of its current
 * transaction (begin, one statement, or commit). Writes are buffered and become visible at commit; the commit
 * order is the order of commits.
 *   - SER: the whole transaction runs atomically at one instant, on the latest committed state.
 *   - SI: reads a snapshot taken at its first statement, plus its own writes; at commit it aborts (40001) if a
 *     transaction that committed after its snapshot wrote a key it wrote (first committer wins).
 *   - PC, CC, RA: a snapshot taken at the first statement plus own writes, no conflict check.
 *   - RC: each statement reads the latest committed state plus own writes.
 * Some transactions roll back (application aborts), and some end `unknown` (the commit happened or not).
 */
import type { History } from '../../src/history/history.js';
import {
  ISOLATION_LEVELS,
  type IsolationLevel,
  type Line,
  type TxnLine,
  type TxnStatus,
} from '../../src/history/format.js';
import {
  chance,
  historyFromLines,
  int,
  pick,
  randomPreamble,
  TxnRunner,
  VersionStore,
  type Rng,
  type Version,
} from './random-history.js';

export interface OperationalOptions {
  /** Number of transactions, inclusive range. Default [2, 8]. */
  txns?: [number, number];
  /** Default [1, 4]. */
  sessions?: [number, number];
  /** Statements per transaction. Default [1, 4]. */
  events?: [number, number];
  /** Ids 1..keys initially. Default 3. */
  keys?: number;
  /** Probability of an application rollback. Default 0.1. */
  rollback?: number;
  /** Probability that a transaction's outcome is recorded as unknown. Default 0.06. */
  unknown?: number;
  /**
   * Probability that an `unknown` transaction really committed (default 0.5). The histories stay consistent by
   * construction: a later read may have skipped a row because of a committed unknown transaction's write that
   * nobody returned, and the checker tries which such transactions committed (docs/semantics.md §1.4; up to 8 of
   * them, beyond that the verdict is unknown). The earlier rule dropped them, judging such histories inconsistent.
   */
  unknownCommitted?: number;
  /** Levels to draw from (default: all six). */
  levels?: readonly IsolationLevel[];
  meta?: Record<string, unknown>;
}

interface Active {
  index: number;
  level: IsolationLevel;
  runner: TxnRunner;
  remaining: number;
  /** Snapshot time (commit clock), taken at the first statement. */
  snapshot?: number;
  begin: number;
}

export function operationalHistoryLines(rng: Rng, opts: OperationalOptions = {}): Line[] {
  const tables = ['t', 'u'].slice(0, int(rng, 1, 2));
  const store = new VersionStore(tables, opts.keys ?? 3);
  const lines = randomPreamble(rng, store, { generator: 'operational', ...opts.meta });
  const levels = opts.levels ?? ISOLATION_LEVELS;

  const n = int(rng, ...(opts.txns ?? [2, 8]));
  const nSessions = Math.min(n, int(rng, ...(opts.sessions ?? [1, 4])));
  const queue: number[][] = Array.from({ length: nSessions }, () => []);
  for (let i = 0; i < n; i++) queue[i < nSessions ? i : int(rng, 0, nSessions - 1)].push(i);
  const seqOf = new Map<number, { session: number; seq: number }>();
  for (const [s, q] of queue.entries()) {
    for (const [j, i] of q.entries()) seqOf.set(i, { session: s + 1, seq: j + 1 });
  }

  let clock = 0; // commit clock: number of commits so far
  let steps = 0;
  const active: (Active | undefined)[] = queue.map(() => undefined);
  const txnLines: TxnLine[] = [];
  const latest = (table: string, id: number): Version => store.latest(table, id);

  const finish = (
    s: number,
    a: Active,
    status: TxnStatus,
    commit: boolean,
    error?: { code: string; message: string },
  ) => {
    if (commit) a.runner.commitTo(store, ++clock);
    const { session, seq } = seqOf.get(a.index)!;
    txnLines.push({
      kind: 'txn',
      id: a.runner.id,
      session,
      seq,
      iso: a.level,
      status,
      begin: a.begin,
      end: ++steps,
      ...(error ? { error } : {}),
      events: a.runner.events,
    });
    active[s] = undefined;
  };

  const commitOrAbort = (s: number, a: Active) => {
    if (chance(rng, opts.rollback ?? 0.1))
      return finish(s, a, 'aborted', false, { code: 'P0001', message: 'application rollback' });
    if (a.level === 'SI') {
      for (const k of a.runner.own.keys()) {
        const [table, id] = k.split('/');
        if (latest(table, Number(id)).time > a.snapshot!) {
          return finish(s, a, 'aborted', false, {
            code: '40001',
            message: 'could not serialize access due to concurrent update',
          });
        }
      }
    }
    if (chance(rng, opts.unknown ?? 0.06)) {
      // The commit was sent; whether it happened is not recorded.
      return finish(s, a, 'unknown', chance(rng, opts.unknownCommitted ?? 0.5));
    }
    finish(s, a, 'committed', true);
  };

  for (;;) {
    const ready = queue.map((_q, s) => s).filter((s) => active[s] !== undefined || queue[s].length > 0);
    if (ready.length === 0) break;
    const s = pick(rng, ready);
    let a = active[s];
    steps++;
    if (!a) {
      const index = queue[s].shift()!;
      a = {
        index,
        level: pick(rng, levels),
        runner: new TxnRunner(`t${index + 1}`, rng, store),
        remaining: int(rng, ...(opts.events ?? [1, 4])),
        begin: steps,
      };
      active[s] = a;
      if (a.level === 'SER') {
        // Atomically, on the latest committed state.
        while (a.remaining-- > 0) a.runner.step(latest, 0.05);
        commitOrAbort(s, a);
      }
      continue;
    }
    if (a.remaining > 0) {
      a.remaining--;
      if (a.level === 'RC') {
        a.runner.step(latest, 0.05);
      } else {
        if (a.snapshot === undefined) a.snapshot = clock;
        const snap = a.snapshot;
        a.runner.step((table, id) => store.asOf(table, id, snap), 0.05);
      }
      continue;
    }
    commitOrAbort(s, a);
  }
  return [...lines, ...txnLines, { kind: 'end', transactions: txnLines.length }];
}

export function operationalHistory(rng: Rng, opts: OperationalOptions = {}): History {
  return historyFromLines(operationalHistoryLines(rng, opts));
}
