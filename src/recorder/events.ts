/**
 * From the result of a rewritten statement to (a) the history events it records and (b) the result the
 * application expects (exactly its own columns, parsed with its own type parsers, as a pg.Result).
 *
 *   RecordedQuery (pg's Query, given to pg.Client.query as is: no config copied, no intermediate result)
 *     each row as it arrives (text values, added columns last) -> app part  -> pg.Result (app's parsers, row mode)
 *                                                               -> added part (text) -> eventsFor -> toFormatRow
 *                                                                  -> select/insert/update/delete events
 *
 * Row layout of the added part (rewrite-write.ts, traces.ts): the written rows' own columns first (insert:
 * [columns..., wid (, previous wid for ON CONFLICT DO UPDATE)]; update: [columns..., previous wid]; delete: [key...,
 * wid]), then each read's trace at its position (`row`: [columns..., wid]; `json`: nested arrays of [columns as
 * text..., wid]). A NULL wid is the initial version (`init`).
 */
import pg from 'pg';
import type {
  DeleteEvent,
  HistoryEvent,
  InsertEvent,
  Row,
  SelectEvent,
  SqlValue,
  UpdateEvent,
} from '../history/format.js';
import { INIT_WID } from '../history/format.js';
import { toFormatRow, toFormatValue, type TableInfo } from './catalog.js';
import type { RecordedPlan } from './rewrite.js';
import type { ReadTrace } from './traces.js';

/**
 * How a read's WHERE was judged. `exact`: the checker evaluates it as PostgreSQL did. Otherwise the read is
 * recorded `partial` and without its WHERE (the checker compiles every recorded WHERE, and would judge the
 * returned rows against a WHERE it evaluates differently).
 */
export interface Judgement {
  exact: boolean;
  reason?: string;
}

export interface EventContext {
  /** The application's parameters, as recorded (JSON values). */
  params: unknown[];
  /** wid of this statement's writes; for ON CONFLICT DO UPDATE, `upsertWid` is the wid of the updated rows. */
  wid: string;
  upsertWid?: string;
  /** Judges whether the WHERE is exact (compilePredicate and the session's settings). */
  judge(where: string | undefined, params: unknown[], table: TableInfo): Judgement;
  /** The types the client declared for its parameters (the proxy's Parse; 0 or absent: none, as pg sends them). */
  paramTypes?: readonly number[];
}

/** The parameter values as the history records them: what node-postgres sends, as JSON. */
export function recordParams(values: readonly unknown[] | undefined): unknown[] {
  return (values ?? []).map((v) => {
    if (v === null || v === undefined) return null;
    if (typeof v === 'number') return Number.isFinite(v) ? v : String(v);
    if (typeof v === 'string' || typeof v === 'boolean') return v;
    if (typeof v === 'bigint') return v.toString();
    const prepared = (pg as unknown as { utils: { prepareValue(x: unknown): unknown } }).utils.prepareValue(v);
    if (Buffer.isBuffer(prepared)) return `\\x${prepared.toString('hex')}`;
    return prepared === null || prepared === undefined ? null : String(prepared);
  });
}

const widOf = (raw: string | null | undefined): string => (raw === null || raw === undefined ? INIT_WID : raw);

function keyOf(table: TableInfo, row: Row): SqlValue[] {
  return table.key.map((k) => row[k]);
}

/**
 * The rows a trace returned: `row` form, the table's columns and the wid as result columns; `json` form, one JSON
 * column of rows [columns as text..., wid], in arrays nested once per enclosing query block. A row whose key is
 * NULL is the NULL side of an outer join (keys are NOT NULL): no row. A row seen twice (joins, repeated
 * subqueries) is one row: one statement sees one version of it.
 */
function traceRows(table: TableInfo, trace: ReadTrace, added: (string | null)[][]): SelectEvent['rows'] {
  const n = table.columnOrder.length;
  const keyAt = table.key.map((k) => table.columnOrder.indexOf(k));
  const rows: SelectEvent['rows'] = [];
  const seen = new Set<string>();
  // one row in `row` form (a single-row read): nothing to see twice, no key to stringify
  const once = trace.form === 'row' && added.length <= 1;
  const push = (values: (string | null)[]): void => {
    if (keyAt.some((i) => values[i] === null || values[i] === undefined)) return;
    const row = toFormatRow(table, values.slice(0, n));
    if (!once) {
      const k = JSON.stringify(keyOf(table, row));
      if (seen.has(k)) return;
      seen.add(k);
    }
    rows.push({ wid: widOf(values[n]), row });
  };
  const collect = (v: unknown): void => {
    if (!Array.isArray(v)) return;
    if (v.length === n + 1 && v.every((x) => x === null || typeof x === 'string')) push(v as (string | null)[]);
    else for (const x of v) collect(x);
  };
  for (const a of added) {
    if (trace.form === 'row') push(a.slice(trace.at, trace.at + n + 1));
    else if (a[trace.at] !== null) collect(JSON.parse(a[trace.at]!));
  }
  return rows;
}

/** The statement's LIMIT may have cut rows of this read: the result has as many rows as the LIMIT (or its value is
 *  not a count). */
function limitReached(trace: ReadTrace, added: unknown[], ctx: EventContext): boolean {
  if (!trace.limit) return false;
  const n = 'count' in trace.limit ? trace.limit.count : Number(ctx.params[trace.limit.param - 1]);
  const typed = (trace.limit.keyParams ?? []).some((p) => (ctx.paramTypes?.[p - 1] ?? 0) !== 0);
  const atMostOne = trace.limit.atMostOne === true && !typed;
  return !(Number.isSafeInteger(n) && (added.length < n || (atMostOne && n >= 1)));
}

/** The events one successful statement records: its reads (a `select` per table reference), then its writes
 *  (empty inserts are left out). */
export function eventsFor(plan: RecordedPlan, added: (string | null)[][], ctx: EventContext): HistoryEvent[] {
  const table = plan.table;
  const n = table.columnOrder.length;
  const withWhere = (
    t: TableInfo,
    where: string | undefined,
    shapePartial = false,
  ): { where?: string; params?: unknown[]; partial?: boolean } => {
    const judged = ctx.judge(where, ctx.params, t);
    const out: { where?: string; params?: unknown[]; partial?: boolean } = {};
    if (where !== undefined && judged.exact) {
      out.where = where;
      if (ctx.params.length > 0) out.params = ctx.params;
    }
    if (shapePartial || !judged.exact) out.partial = true;
    return out;
  };
  const events: HistoryEvent[] = [];
  for (const trace of plan.reads) {
    // a subquery evaluated again is carried by the result rows: without one, nothing is known of it
    if (trace.needsRow && added.length === 0) continue;
    const e: SelectEvent = {
      op: 'select',
      table: trace.table.name,
      ...withWhere(trace.table, trace.where, trace.partialReason !== undefined || limitReached(trace, added, ctx)),
      rows: traceRows(trace.table, trace, added),
    };
    events.push(e);
  }
  switch (plan.kind) {
    case 'select':
      return events;
    case 'insert': {
      const inserted: InsertEvent['rows'] = [];
      const updated: UpdateEvent['rows'] = [];
      for (const a of added) {
        const row = toFormatRow(table, a.slice(0, n));
        if (plan.upsertWidParam !== undefined && a[n] === ctx.upsertWid) updated.push({ read: widOf(a[n + 1]), row });
        else inserted.push({ row });
      }
      if (inserted.length > 0) events.push({ op: 'insert', table: table.name, wid: ctx.wid, rows: inserted });
      // The rows ON CONFLICT DO UPDATE changed: which keys conflicted is not a predicate over the table, so the
      // update is partial (it read only the rows it returned).
      if (updated.length > 0)
        events.push({ op: 'update', table: table.name, partial: true, wid: ctx.upsertWid!, rows: updated });
      return events;
    }
    case 'update': {
      const rows: UpdateEvent['rows'] = added.map((a) => ({
        read: widOf(a[n]),
        row: toFormatRow(table, a.slice(0, n)),
      }));
      events.push({
        op: 'update',
        table: table.name,
        ...withWhere(table, plan.where, plan.partialReason !== undefined),
        wid: ctx.wid,
        rows,
      });
      return events;
    }
    case 'delete': {
      const k = table.key.length;
      const rows: DeleteEvent['rows'] = added.map((a) => ({
        read: widOf(a[k]),
        key: table.key.map((c, i) => toFormatValue(a[i], table.columns[c])),
      }));
      events.push({
        op: 'delete',
        table: table.name,
        ...withWhere(table, plan.where, plan.partialReason !== undefined),
        wid: ctx.wid,
        rows,
      });
      return events;
    }
  }
}

export type TextRow = (string | null)[];
interface PgResult extends pg.QueryResult {
  addFields(fields: pg.FieldDef[]): void;
  parseRow(row: TextRow): unknown;
  addRow(row: unknown): void;
  addCommandComplete(msg: unknown): void;
}
const Result = pg.Result as unknown as new (rowMode: string | undefined, types: pg.CustomTypesConfig) => PgResult;
interface PgQuery {
  name?: string;
  callback?: (err: Error | null) => void;
  rows?: number;
  _canceledDueToError: unknown;
}
const Query = (pg as unknown as { Query: new (text: string, values?: unknown[]) => PgQuery }).Query;

/**
 * A rewritten statement as pg runs it (a pg Query, submitted as is): each row is split as it arrives into the
 * application's columns, parsed with its parsers into `app` (the pg.Result it receives, as pg would have built it
 * for its own statement), and the columns the recorder added, kept as the server's text in `added`.
 */
export class RecordedQuery extends Query {
  /** The added columns of each result row (text, NULL as null). */
  readonly added: TextRow[] = [];
  /** The application's result. */
  readonly app: PgResult;
  private keep = 0;

  constructor(
    /** The rewritten text, whether the application gets rows, and how many columns were added after its own. */
    private readonly plan: Pick<RecordedPlan, 'sql' | 'appRows' | 'added'>,
    values: unknown[],
    name: string | undefined,
    rowMode: 'array' | undefined,
    types: pg.CustomTypesConfig,
  ) {
    super(plan.sql, values);
    if (name !== undefined) this.name = name;
    this.app = new Result(rowMode, types);
  }

  handleRowDescription(msg: { fields: pg.FieldDef[] }): void {
    if (!this.plan.appRows) return;
    this.keep = msg.fields.length - this.plan.added;
    this.app.addFields(msg.fields.slice(0, this.keep));
  }

  handleDataRow(msg: { fields: TextRow }): void {
    if (this._canceledDueToError) return;
    const f = msg.fields;
    if (!this.plan.appRows) {
      this.added.push(f);
      return;
    }
    try {
      this.app.addRow(this.app.parseRow(f.slice(0, this.keep)));
    } catch (err) {
      this._canceledDueToError = err; // pg's own handling: the error is given when the statement ends
      return;
    }
    this.added.push(f.slice(this.keep));
  }

  handleCommandComplete(msg: unknown, connection: { sync(): void }): void {
    this.app.addCommandComplete(msg);
    if (this.rows) connection.sync();
  }
}
