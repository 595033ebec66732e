/**
 * Anomalies as data (after Elle): a union keyed by `type`, each with its own typed fields (transactions, rows,
 * versions, edges, case splits as `{before, after}` assumptions). Nothing here is prose: `explain/explain.ts` renders
 * the terminal text and the one-line message (also used by `--json` and the HTML report), `report/graph.ts`
 * draws the edges. docs/json-output.md is the schema of this data as `--json` prints it.
 *
 * Well-formedness anomalies are docs/semantics.md §1.5 (built in model/model.ts); a missing row is §3.3
 * (explain/missing-row.ts); the rest name the shape of a commit-order contradiction (§5): a cycle of forced
 * edges (explain/cycle.ts, linear/linear-check.ts) or a case split (explain/cases.ts), named by the one
 * table-driven classifier, `classifyContradiction` (explain/cycle.ts). Names from the literature are in
 * `ANOMALY_NAMES`; which level forbids which anomaly, with citations, is `FORBIDDEN_BY_LEVEL` (levels.ts).
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

/** The names a commit-order contradiction can get (a cycle or a case split). */
export type ContradictionType =
  | 'lost-update'
  | 'write-skew'
  | 'long-fork'
  | 'fractured-read'
  | 'non-monotonic-read'
  | 'causality-violation'
  | 'read-skew'
  | 'read-your-writes'
  | 'commit-order-cycle';

export type ConsistencyType = ContradictionType | 'missing-row' | 'no-consistent-order';

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

/** Why a transaction is visible to a read under the reader's axiom (docs/semantics.md §2.4; model/relations.ts). */
export type Visibility = 'so' | 'wr-earlier' | 'wr' | 'causal' | 'prefix' | 'conflict' | 'co';

interface EdgeBase {
  /** `from` must commit before `to` (ids; `init` is the initial database). */
  from: string;
  to: string;
}

/** Session order: `from` precedes `to` in session `session` (`from` = init: init precedes every transaction). */
export interface SoEdge extends EdgeBase {
  kind: 'so';
  session?: number;
}

/** Reads-from: `read` (of `to`) returned `table(key)` as written by `from` (version `wid`); `overwrote` when
 *  `to` then wrote the row itself. */
export interface WrEdge extends EdgeBase {
  kind: 'wr';
  read: EventRef;
  table: string;
  key: unknown[];
  wid: string;
  overwrote?: boolean;
}

/** A chosen witness: `read` (of `to`) did not return `table(key)`, taken to have read `from`'s version, which
 *  does not match its WHERE. */
export interface WitnessEdge extends EdgeBase {
  kind: 'witness';
  read: EventRef;
  table: string;
  key: unknown[];
}

/** Anti-dependency (Adya's rw): `from` (at `level`) read `table(key)` as version `wid`, which `to` overwrote;
 *  `from` must commit first, or it would have seen `to`'s version. */
export interface RwEdge extends EdgeBase {
  kind: 'rw';
  read: EventRef;
  table: string;
  key: unknown[];
  wid: string;
  /** The writer of the version read (`init` for the initial version). */
  version: string;
  level: IsolationLevel;
}

/** An instance of the reader's axiom: `reader` (at `level`) read `table(key)` from `to` (version `wid`, or
 *  `unreturned`: the row was not returned and `to`'s version was the chosen witness); `from` also wrote the row
 *  and is visible to the read (`via`), so `from` must commit before `to`. */
export interface AxiomEdge extends EdgeBase {
  kind: 'axiom';
  reader: string;
  level: IsolationLevel;
  via: Visibility;
  read: EventRef;
  table: string;
  key: unknown[];
  wid?: string;
  unreturned?: boolean;
}

/** A case split's assumption: suppose `from` commits before `to`. */
export interface AssumedEdge extends EdgeBase {
  kind: 'assumed';
}

export type Edge = SoEdge | WrEdge | WitnessEdge | RwEdge | AxiomEdge | AssumedEdge;
export type EdgeKind = Edge['kind'];

/** An assumption of a case split: `before` commits before `after`. */
export interface Assumption {
  before: string;
  after: string;
}

/** One case of a case split: under `assume`, the `edges` form a cycle. */
export interface Case {
  assume: Assumption;
  edges: Edge[];
}

/** A transaction as a person checks it by hand (explain/describe.ts): session, position, level, each statement. */
export interface TxnDescription {
  id: string;
  session: number;
  seq: number;
  label?: string;
  /** The server that served it, when recorded. */
  node?: string;
  iso: string;
  status: string;
  statements: string[];
}

interface AnomalyBase {
  /** Transactions involved, by id. */
  txns: string[];
  /** The levels violated (for contradictions: the levels of the readers whose axioms were used). */
  levels?: IsolationLevel[];
  events?: EventRef[];
  /** The transactions described statement by statement (added after the check, explain/describe.ts). */
  transactions?: TxnDescription[];
  /** Found in a shrunk sub-history of this many transactions (check.ts). */
  inSubHistory?: number;
}

/** What is wrong with a read, for a well-formedness anomaly (one renderer sentence each, explain/explain.ts). */
export type ReadProblem =
  | 'returned-twice'
  | 'own-version-overwritten'
  | 'own-row-deleted'
  | 'no-initial-row'
  | 'unknown-wid'
  | 'own-later-write'
  | 'writer-did-not-write-row'
  | 'writer-aborted'
  | 'writer-overwrote'
  | 'writer-deleted-row'
  | 'values-differ'
  | 'where-not-satisfied'
  | 'own-row-not-returned';

/** A column whose returned value differs from the version's. */
export interface ColumnDifference {
  column: string;
  returned: unknown;
  /** The version does not have the column at all. */
  notWritten?: boolean;
}

export interface ReadAnomaly extends AnomalyBase {
  type: Exclude<WellFormednessType, 'circular-information-flow'>;
  problem: ReadProblem;
  /** The reading transaction, and the read (also `events[0]`). */
  reader: string;
  read: EventRef;
  table: string;
  key: unknown[];
  /** The version read. */
  wid?: string;
  /** The transaction that wrote `wid`, when another one. */
  writer?: string;
  /** own-version-overwritten: the reader's own version; writer-overwrote: the writer's last version. */
  laterWid?: string;
  /** values-differ: what differs, and whether the version was the reader's own (internal) write. */
  differences?: ColumnDifference[];
  own?: boolean;
  /** The version's row (values-differ, where-not-satisfied, own-row-not-returned). */
  row?: unknown;
}

/** G1c: a cycle of so and wr edges alone. */
export interface CircularFlowAnomaly extends AnomalyBase {
  type: 'circular-information-flow';
  edges: Edge[];
}

export interface MissingRowAnomaly extends AnomalyBase {
  type: 'missing-row';
  reader: string;
  level: IsolationLevel;
  read: EventRef;
  table: string;
  key: unknown[];
  /** Every version the read could have seen (each matches its WHERE): writer and value. */
  versions: { writer: string; row: unknown }[];
}

/** A cycle of forced edges (docs/semantics.md §5), named by its shape. */
export interface CycleAnomaly extends AnomalyBase {
  type: ContradictionType;
  by: 'cycle';
  edges: Edge[];
  /** The readers whose axioms forced the cycle's axiom and rw edges. */
  readers: string[];
}

/** A case split: `pair` cannot be ordered either way; `cases` are the two orders (and, before them, orders
 *  derived on the way that the two use), each with the cycle it forces. */
export interface CaseSplitAnomaly extends AnomalyBase {
  type: ContradictionType;
  by: 'cases';
  pair: [string, string];
  cases: Case[];
  readers: string[];
  /** Lost updates found by the linear check: the row both overwrote and the version both read. */
  table?: string;
  key?: unknown[];
  wid?: string;
  /** Found from a stuck search (no-consistent-order): the two transactions each blocked the other. */
  fromStuck?: boolean;
}

/** Why a transaction could not commit next where the search got stuck (search/prefix.ts). */
export type Blocked =
  | { txn: string; why: 'forced-order'; after: string }
  | {
      txn: string;
      why: 'visible-writer';
      reader: string;
      level: IsolationLevel;
      table: string;
      key: unknown[];
      version: string;
    }
  | {
      txn: string;
      why: 'stale-snapshot';
      reader: string;
      table: string;
      key: unknown[];
      version: string;
      later: string;
    }
  | { txn: string; why: 'explored' };

/** An unreturned row whose hiding version had to be chosen (check.ts). */
export interface OpenConflict {
  read: EventRef;
  reader: string;
  table: string;
  key: unknown[];
  /** Writers whose version matches the WHERE, and those whose version would hide the row. */
  matching: string[];
  hiding: string[];
}

export interface NoConsistentOrderAnomaly extends AnomalyBase {
  type: 'no-consistent-order';
  /** Where the search got furthest: how many committed, the last few, and why none of the next could. */
  stuck?: { committed: number; lastCommitted: string[]; blocked: Blocked[] };
  /** No choice of hiding versions admits an order: the open conflicts. */
  conflicts?: OpenConflict[];
  conflictCount?: number;
  subHistory?: string[];
}

export type Anomaly =
  | ReadAnomaly
  | CircularFlowAnomaly
  | MissingRowAnomaly
  | CycleAnomaly
  | CaseSplitAnomaly
  | NoConsistentOrderAnomaly;

/** Our name, Adya's G-class or the phenomenon of Berenson et al., Elle's name, and what it means. */
export interface AnomalyName {
  name: string;
  /** Adya's G-class (Adya 1999), or the phenomenon of Berenson et al. 1995 (P4, A5A, A5B). */
  adya?: string;
  berenson?: string;
  /** Elle's name (Kingsbury & Alvaro, VLDB 2020). */
  elle?: string;
  /** What it means, in one clause. */
  text?: string;
}

export const ANOMALY_NAMES: Record<AnomalyType, AnomalyName> = {
  'garbage-read': { name: 'garbage read', elle: 'garbage-read' },
  'aborted-read': { name: 'aborted read', adya: 'G1a', elle: 'G1a' },
  'intermediate-read': { name: 'intermediate read', adya: 'G1b', elle: 'G1b' },
  'internal-inconsistency': { name: 'internal inconsistency', elle: 'internal' },
  'predicate-mismatch': { name: 'predicate mismatch' },
  'value-mismatch': { name: 'value mismatch' },
  'circular-information-flow': { name: 'circular information flow', adya: 'G1c', elle: 'G1c' },
  'lost-update': {
    name: 'lost update',
    adya: 'G2-item',
    berenson: 'P4',
    elle: 'lost-update',
    text: 'two transactions read the same version of a row and both overwrote it',
  },
  'write-skew': {
    name: 'write skew',
    adya: 'G2-item',
    berenson: 'A5B',
    elle: 'G2-item',
    text: 'two transactions each read what the other overwrote',
  },
  'long-fork': {
    name: 'long fork',
    adya: 'G2',
    elle: 'G2',
    text: 'two readers saw two independent writes in opposite orders',
  },
  'fractured-read': {
    name: 'fractured read',
    adya: 'G-single',
    elle: 'G-single',
    text: "a transaction saw only part of another transaction's writes",
  },
  'non-monotonic-read': {
    name: 'non-monotonic read',
    adya: 'G-single',
    elle: 'G-single',
    text: 'a read went back to an older version of a row than one its transaction or session had already observed',
  },
  'causality-violation': {
    name: 'causality violation',
    text: 'a transaction missed a write that causally precedes it',
  },
  'read-skew': {
    name: 'read skew',
    adya: 'G-single',
    berenson: 'A5A',
    elle: 'G-single',
    text: 'a transaction missed a write of one that commits before what it saw',
  },
  'missing-row': {
    name: 'missing row',
    text: 'a read did not return a row that every version it could have seen matches',
  },
  'read-your-writes': {
    name: 'read-your-writes violation',
    text: 'a transaction missed a write of an earlier transaction of its own session',
  },
  'commit-order-cycle': { name: 'commit-order cycle', elle: 'G2', text: 'the forced commit order is cyclic' },
  'no-consistent-order': { name: 'no consistent commit order', text: 'no commit order satisfies every axiom' },
};

export function anomalyName(type: AnomalyType): string {
  return ANOMALY_NAMES[type].name;
}

/** The names the literature gives it, e.g. `Adya G2-item; Berenson P4; Elle lost-update` (empty when none). */
export function literatureNames(type: AnomalyType): string {
  const n = ANOMALY_NAMES[type];
  return [n.adya && `Adya ${n.adya}`, n.berenson && `Berenson ${n.berenson}`, n.elle && `Elle ${n.elle}`]
    .filter(Boolean)
    .join('; ');
}

/** Every edge an explanation uses: a cycle's, or those of all the cases of a case split. */
export function anomalyEdges(a: Anomaly): Edge[] {
  if ('cases' in a) return a.cases.flatMap((c) => c.edges);
  return 'edges' in a ? a.edges : [];
}
