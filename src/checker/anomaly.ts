/**
 * Anomalies as data (after Elle): a `type`, the transactions and events involved, and the forced
 * edges with their reasons. Rendering into prose is `explain.ts`; tests check this data.
 *
 * Well-formedness anomalies are docs/semantics.md §1.5; the rest name a missing row or the shape of a
 * commit-order contradiction (docs/semantics.md §5), derived in `cycle.ts`, `cases.ts` and `check.ts`.
 */
import type { IsolationLevel } from '../history/format.js';

export type WellFormednessType =
  | 'garbage-read'
  | 'aborted-read'
  | 'intermediate-read'
  | 'internal-inconsistency'
  | 'predicate-mismatch'
  | 'value-mismatch'
  | 'circular-information-flow';

export type ConsistencyType =
  | 'lost-update'
  | 'write-skew'
  | 'long-fork'
  | 'fractured-read'
  | 'causality-violation'
  | 'g-single'
  | 'missing-row'
  | 'read-your-writes'
  | 'commit-order-cycle'
  | 'no-consistent-order';

export type AnomalyType = WellFormednessType | ConsistencyType;

/** Where in the file an event is: transaction id, 1-based event position, the file line. */
export interface EventRef {
  txn: string;
  event: number;
  line: number;
  op: string;
  table: string;
  where?: string;
  params?: unknown[];
}

export type EdgeKind = 'so' | 'wr' | 'ww' | 'axiom' | 'witness' | 'assumed';

/** One ordering fact used by an explanation: `from` must commit before `to`. */
export interface Edge {
  from: string;
  to: string;
  kind: EdgeKind;
  /** Why, in SQL terms. */
  reason: string;
  /** For wr / axiom edges: the read, its table and key, the wid read. */
  read?: EventRef;
  table?: string;
  key?: unknown[];
  wid?: string;
  /** For axiom edges: the level of the reader whose axiom forced the edge, and the reader. */
  level?: IsolationLevel;
  reader?: string;
}

export interface Anomaly {
  type: AnomalyType;
  /** A one-line statement of what is wrong, in SQL terms. */
  message: string;
  /** Transactions involved, by id. */
  txns: string[];
  /** The levels violated (for consistency anomalies: the levels of the readers whose axioms were used). */
  levels?: IsolationLevel[];
  events?: EventRef[];
  /** The cycle (or chain) of forced edges, when there is one. */
  edges?: Edge[];
  /** Extra facts: the row, wid, key, values. */
  details?: Record<string, unknown>;
}

export const WELL_FORMEDNESS_TYPES: readonly WellFormednessType[] = [
  'garbage-read',
  'aborted-read',
  'intermediate-read',
  'internal-inconsistency',
  'predicate-mismatch',
  'value-mismatch',
  'circular-information-flow',
];

/** One line per named consistency anomaly: what it means, in the words of an explanation. */
export const ANOMALY_TEXT: Partial<Record<ConsistencyType, string>> = {
  'lost-update': 'lost update: two transactions read the same version of a row and both overwrote it',
  'write-skew': 'write skew: two transactions each read what the other overwrote',
  'long-fork': 'long fork: two readers saw two independent writes in opposite orders',
  'fractured-read': "fractured read: a transaction saw only part of another transaction's writes",
  'causality-violation': 'causality violation: a transaction missed a write that causally precedes it',
  'g-single': 'G-single (read skew): a transaction saw a state that no commit order produces',
  'read-your-writes': 'read-your-writes violation: a transaction missed a write of an earlier transaction of its own session',
  'commit-order-cycle': 'the forced commit order is cyclic',
};
