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

// Limits of what a reader accepts (docs/history-format.md, "Limits"). Each is far above what the recorder writes
// and low enough that a hostile file is refused in seconds, before it can exhaust memory or the stack.

const MiB = 1024 * 1024;

/**
 * Longest line, in bytes, by default: 64 MiB. The recorder writes one transaction per line (or 1000 initial
 * rows): kilobytes; the largest line of the corpus is 256 kB, and 64 MiB holds a transaction of about a million
 * row versions. A parsed line takes up to 20 times its size in the JavaScript heap (1.4 GB for 64 MiB of `{}`),
 * so the limit also bounds the memory and time one line can cost. `--max-line-mb` raises it.
 */
export const DEFAULT_MAX_LINE_BYTES = 64 * MiB;
/** The most `--max-line-mb` may give: a line must fit in one JavaScript string (V8: 2^29 - 24 characters). */
export const MAX_LINE_BYTES_LIMIT = 511 * MiB;
/**
 * Most bytes read from one input, after decompression, by default: 16 GiB. Far more than a history the checker
 * can hold (the default JavaScript heap is at most 4 GiB), so it refuses no checkable file, while a gzip
 * "bomb" (a small file that unpacks to terabytes) stops after a bounded amount of work. `--max-input-gb`
 * raises it.
 */
export const DEFAULT_MAX_INPUT_BYTES = 16 * 1024 * MiB;
/** Deepest nesting of JSON arrays and objects in a line (a txn line's rows sit at depth 6). */
export const MAX_LINE_DEPTH = 64;
/** Deepest nesting of a statement's `params` (arrays of arrays for multidimensional arrays; PostgreSQL has 6). */
export const MAX_PARAMS_DEPTH = 32;
/**
 * Objects and arrays in one line, and elements in one array or object: at most one per this many bytes of the
 * line limit (5.6 million at 64 MiB). The smallest row the format allows (`{"wid":"init","row":{"k":1}},`) takes
 * 14 bytes per object, so no line under the byte limit is refused for being legitimately dense, while a line
 * packed with `{}` or `0,` (JSON.parse slows down superlinearly with millions of elements in one array) is.
 */
export const BYTES_PER_CONTAINER = 12;
/** The name `-` reads standard input; messages call it this. */
export const STDIN_NAME = '<stdin>';

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
  /** The server that served it (a session spanning connections: primary, standby1, coordinator, ...). */
  node?: string;
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
