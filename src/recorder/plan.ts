/**
 * What the rewriter (rewrite.ts and the files it delegates to) decides about one statement, as types only: a
 * transaction control, a settings change, a passthrough, or a recorded statement with the text to run, the columns
 * added and the reads traced. Its own file so that the rewriter's parts share these types without importing
 * rewrite.ts, which imports them (no import cycle).
 */
import type { TableInfo } from './catalog.js';
import type { ReadTrace } from './traces.js';

/** PostgreSQL's isolation level names, as in `BEGIN ISOLATION LEVEL ...`. */
export type PgIsolation = 'read uncommitted' | 'read committed' | 'repeatable read' | 'serializable';

export type TxnControl =
  /** `modes`: its transaction modes as SET TRANSACTION takes them ('' when none); `start`: START TRANSACTION. */
  | { kind: 'begin'; iso?: PgIsolation; modes: string; start: boolean }
  | { kind: 'commit'; chain: boolean }
  | { kind: 'rollback'; chain: boolean }
  | { kind: 'savepoint'; name: string }
  | { kind: 'rollback-to'; name: string }
  | { kind: 'release'; name: string }
  | { kind: 'set-transaction'; iso?: PgIsolation };

export interface RecordedBase {
  /** The statement to run. */
  sql: string;
  /** The table written, or the first table read. */
  table: TableInfo;
  /** Every recorded table the statement reads or writes. */
  tables: TableInfo[];
  /** Number of result columns the recorder added at the end of the result. */
  added: number;
  /** The application's statement returns rows (SELECT, or a RETURNING clause). */
  appRows: boolean;
  /** The reads of recorded tables (a `select` event each), after the written rows' own added columns. */
  reads: ReadTrace[];
}

/** A recorded `COPY ... TO STDOUT`: `at`, the client's text from the table's name to the end of its column list, or
 *  the parenthesized query, [start, end) in characters; `select`, the rewritten SELECT; `text`, the COPY to run
 *  (copyOutText), once its columns are known: a table's at once, a query's when the server has described it. */
export interface CopyOut {
  at: [number, number];
  select: string;
  text?: string;
  /** A table's COPY: the table (COPY leaves out the rows of its inheritance children, the SELECT would not: a table
   *  that has some is refused, by whoever runs it, as the recorder reads a table with its children). */
  table?: TableInfo;
}

export interface SelectPlan extends RecordedBase {
  kind: 'select';
  /** `COPY table|(query) TO STDOUT` (rewrite-copy.ts): rows sent to the client by the server (QueryOptions.copyOut),
   *  its added columns left in a setting, read after it. */
  copy?: CopyOut;
  /** FOR UPDATE/SHARE: rows are locked (and at READ COMMITTED re-checked) as they are fetched, so a read fetched in
   *  several parts, or through a cursor, can leave out a row the transaction changed in between. */
  locks?: true;
  /** `DECLARE name CURSOR FOR` this SELECT (`sql` is the DECLARE of the rewritten query, which returns no rows): its
   *  rows come with the FETCHes from the cursor (CursorStep), read at the DECLARE. */
  declare?: {
    name: string;
    hold: boolean;
    /** WITH HOLD: the rewritten DECLARE as SCROLL, for one declared in a transaction of its own (client.ts). */
    heldSql?: string;
  };
}

/** A statement about a cursor (FETCH, MOVE, CLOSE): recorded when the cursor is one the session declared over a
 *  recorded SELECT (its added columns come with every FETCH), else passed through. */
export type CursorStep =
  /** `forward`: the number of rows a FETCH FORWARD takes next (Infinity: ALL), undefined for a step that does not
   *  go on from the rows read so far (BACKWARD, ABSOLUTE, RELATIVE, a count of 0 or below, MOVE). */
  | { op: 'fetch'; name: string; move: boolean; forward?: number }
  /** CLOSE name, or CLOSE ALL (no name). */
  | { op: 'close'; name?: string }
  /** A DECLARE the recorder passes through (of no recorded table): the name is no longer a recorded cursor's. */
  | { op: 'declare'; name: string };

export interface InsertPlan extends RecordedBase {
  kind: 'insert';
  /** Parameter number of the wid of inserted rows. */
  widParam: number;
  /** ON CONFLICT DO UPDATE: parameter number of the wid of updated rows. */
  upsertWidParam?: number;
}

export interface UpdatePlan extends RecordedBase {
  kind: 'update';
  /** The WHERE over the written table's columns (its conjuncts about that table alone). */
  where?: string;
  /** Why the rows written may be fewer than those satisfying `where` (UPDATE ... FROM, a subquery in WHERE). */
  partialReason?: string;
  widParam: number;
}

export interface DeletePlan extends RecordedBase {
  kind: 'delete';
  where?: string;
  partialReason?: string;
}

export type RecordedPlan = SelectPlan | InsertPlan | UpdatePlan | DeletePlan;

export type Plan =
  | { kind: 'control'; control: TxnControl }
  | {
      kind: 'settings';
      dropsPrepared?: true;
      cursor?: CursorStep;
      /** SET client_encoding / SET NAMES: the encoding asked for (the proxy serves UTF-8 only). */
      clientEncoding?: string;
    }
  | {
      kind: 'passthrough';
      warning?: string;
      dropsPrepared?: true;
      cursor?: CursorStep;
      /** It may make, drop, rename or move relations, or set the search path (set_config): a name without its
       *  schema may mean another relation after it (the session's Settings.shadowed is read again). */
      relations?: true;
    }
  | RecordedPlan;

export interface RewriteOptions {
  /** PostgreSQL 18+: read the previous wid with `RETURNING old._isocheck_wid`; else from `_isocheck_prev`. */
  oldReturning: boolean;
}

export type { TableLookup } from './catalog.js';
