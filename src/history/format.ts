/**
 * The history file format, version 1 (documented in docs/history-format.md).
 *
 * One history is newline-delimited JSON: a `history` header, `table` lines, `init` lines, one `txn` line per
 * finished transaction, and an `end` line when the recorder finished cleanly. These types are the lines exactly
 * as they appear in a file; `reader.ts` validates them and `writer.ts` produces them.
 */

export type SqlValue = number | string | boolean | null;
export type Row = Record<string, SqlValue>;
export type ColumnTypes = Record<string, string>;

export const ISOLATION_LEVELS = ['RC', 'RA', 'CC', 'PC', 'SI', 'SER'] as const;
export type IsolationLevel = (typeof ISOLATION_LEVELS)[number];

export const TXN_STATUSES = ['committed', 'aborted', 'unknown'] as const;
export type TxnStatus = (typeof TXN_STATUSES)[number];

export const HISTORY_FORMAT = 'isocheck-history';
export const HISTORY_VERSION = 1;
/** The wid reserved for the rows of the initial database. */
export const INIT_WID = 'init';

export interface HistoryLine {
  kind: 'history';
  format: typeof HISTORY_FORMAT;
  version: typeof HISTORY_VERSION;
  meta: Record<string, unknown>;
}

export interface TableLine {
  kind: 'table';
  name: string;
  key: string[];
  columns: ColumnTypes;
}

export interface InitLine {
  kind: 'init';
  table: string;
  rows: Row[];
}

export interface SelectEvent {
  op: 'select';
  table: string;
  where?: string;
  params?: unknown[];
  partial?: boolean;
  rows: { wid: string; row: Row }[];
}

export interface InsertEvent {
  op: 'insert';
  table: string;
  wid: string;
  rows: { row: Row }[];
}

export interface UpdateEvent {
  op: 'update';
  table: string;
  where?: string;
  params?: unknown[];
  partial?: boolean;
  wid: string;
  rows: { read: string; row: Row }[];
}

export interface DeleteEvent {
  op: 'delete';
  table: string;
  where?: string;
  params?: unknown[];
  partial?: boolean;
  wid: string;
  rows: { read: string; key: SqlValue[] }[];
}

export type HistoryEvent = SelectEvent | InsertEvent | UpdateEvent | DeleteEvent;

export interface TxnError {
  code?: string;
  message?: string;
}

export interface TxnLine {
  kind: 'txn';
  id: string;
  session: number;
  seq: number;
  iso: IsolationLevel;
  status: TxnStatus;
  label?: string;
  begin?: number;
  end?: number;
  error?: TxnError | string;
  events: HistoryEvent[];
}

export interface EndLine {
  kind: 'end';
  transactions: number;
}

export type Line = HistoryLine | TableLine | InitLine | TxnLine | EndLine;
