/**
 * The report page's data: what html.ts (in Node) puts into `<script type="application/json" id="isocheck-data">`
 * and what the page script (page/*.ts, in the browser) reads back. One type for both sides, so a field renamed
 * on one side fails to compile on the other. Types only: the browser module imports nothing else at run time.
 */
import type { Assumption, AnomalyType, Edge, EventRef, TxnDescription } from '../checker/anomaly.js';
import type { CheckStats, Verdict } from '../checker/result.js';
import type { HistoryEvent, IsolationLevel, TxnError, TxnStatus } from '../history/format.js';

/** An edge with its label (as drawn) and its reason (as the terminal prints it, explain.ts). */
export type PageEdge = Edge & { label: string[]; reason: string };

/** A drawn edge: its step number (absent for a case's assumption) and the id of its `<g>` in the SVG. */
export type PageStep = PageEdge & { step?: number; svgId: string };

export interface PageGraph {
  title?: string;
  /** Index of the SVG `<template>` in the page; absent when there is no drawing (`error` says why). */
  svg?: number;
  error?: string;
  /** SVG node id -> transaction id (`init` for the initial database). */
  nodes: Record<string, string>;
  steps: PageStep[];
  /** The overview of a case split: SVG node id -> index of the case (and of its graph after this one). */
  cases?: Record<string, number>;
  /** Drawn with small boxes: too many transactions to show their statements. */
  compact?: boolean;
}

export interface PageAnomaly {
  type: AnomalyType;
  name: string;
  literature: string;
  message: string;
  levels: IsolationLevel[];
  txns: string[];
  events: EventRef[];
  edges: PageEdge[];
  cases: { assume: Assumption; edges: PageEdge[] }[] | null;
  transactions: TxnDescription[] | null;
  subHistory: string[] | null;
  conflicts: string[] | null;
  /** A missing row: the versions the row could have had, in words. */
  versions: string[] | null;
  /** The explanation as `isocheck check` prints it. */
  text: string[];
  graphs: PageGraph[];
}

/** A transaction, with short keys (a report can hold a million). `b`/`e`: its bar on the timeline. */
export interface PageTxn {
  id: string;
  /** session, position in it */
  s: number;
  q: number;
  iso: IsolationLevel;
  st: TxnStatus;
  lb: string | null;
  b: number;
  e: number;
  /** line in the file */
  ln: number;
  err: TxnError | string | null;
  ev: HistoryEvent[];
}

export interface PageLabelLevels {
  label: string;
  levels: Partial<Record<IsolationLevel, number>>;
  statuses: Record<TxnStatus, number>;
  total: number;
}

/** One check of the level boundary, for a uniform level or a label raised one level. */
export interface PageLevelCheck {
  level: IsolationLevel;
  verdict: Verdict;
  /** The verdict follows from the check at this level (no check of its own). */
  impliedBy: IsolationLevel | null;
  /** The line the terminal prints after the verdict (report/levels.ts). */
  headline: string;
  /** Consistent: the witness commit order (ids). */
  commitOrder: string[] | null;
  /** Inconsistent: its anomalies (the first drawn), as in the page's own explanations. */
  anomalies: PageAnomaly[];
}

/** `check --levels --report`: the level boundary (checker/level-boundary.ts). */
export interface PageLevels {
  checks: number;
  uniform: PageLevelCheck[];
  strongest: IsolationLevel | null;
  /** The strongest level in words, as `check --levels` prints it (`none (inconsistent even at RC)`, ...). */
  strongestText: string;
  /** The uniform level whose anomalies are the page's explanation ("why not SI"), if any is inconsistent. */
  whyNot: IsolationLevel | null;
  byLabel: {
    spec: string;
    levels: { label: string; level: IsolationLevel }[];
    commitOrder: string[] | null;
    /** Per label below SER: the check one level higher, which is not consistent. */
    blockedBy: (PageLevelCheck & { label: string })[];
  } | null;
}

export interface PageData {
  title: string;
  file: string;
  truncated: boolean;
  verdict: Verdict;
  reason: string | null;
  notes: string[];
  stats: CheckStats;
  iso: string | null;
  generated: string;
  meta: { key: string; value: string }[];
  labels: PageLabelLevels[];
  levelColors: Record<string, string>;
  tables: Record<string, string[]>;
  timeline: { mode: 'recorded' | 'file-order'; sessions: number[] };
  txns: PageTxn[];
  /** Indices into txns of the transactions in the drawn anomalies. */
  highlight: number[];
  /** Indices into txns, in the witness commit order. */
  commitOrder: number[] | null;
  subHistory: string[] | null;
  anomalies: PageAnomaly[];
  moreAnomalies: number;
  /** With `--levels`: the level boundary (the header then shows the strongest level, not one verdict). */
  levels: PageLevels | null;
}
