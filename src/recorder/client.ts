/**
 * Recording wrappers for node-postgres: `RecordingClient` (a pg.Client) and `RecordingPool` (a pg.Pool), with the
 * same `query(text, values)` API, so an application swaps one line. A `Session` (one per database connection)
 * follows the transaction state and records each transaction when it ends.
 *
 *   query -> plan (rewrite.ts) -> control: BEGIN/COMMIT/ROLLBACK/SAVEPOINT... -> open/close the transaction
 *                              -> recorded: run the rewritten statement -> events (events.ts) + the app's result
 *                              -> passthrough / settings: run as is
 *   transaction end -> { id "s<session>.<seq>", iso, status, label, begin, end, events, error? } -> history file
 *
 * Decisions:
 * - Levels: READ UNCOMMITTED / READ COMMITTED -> RC, REPEATABLE READ -> SI, SERIALIZABLE -> SER; the level a
 *   transaction runs at is BEGIN's, else SET TRANSACTION's, else the session's default_transaction_isolation
 *   (read from the server, re-read after SET/RESET/DISCARD). `declareLevel()` records another level than the one
 *   run (for the transaction in progress, or else the next one).
 * - A statement outside BEGIN is its own transaction. A recorded write outside BEGIN is run as
 *   BEGIN; statement; COMMIT so that its rows are known before the commit: a connection lost during that
 *   COMMIT then gives an `unknown` transaction with its events, never a write whose rows nobody knows.
 * - An error aborts the transaction (`error: {code, message}`, the first error) unless the application rolls
 *   back to a savepoint; events after that savepoint are dropped (their writes were undone). The original error
 *   is rethrown to the application unchanged. 40001 and 40P01 are ordinary aborts; a retry is a new transaction.
 * - A connection lost during COMMIT (no SQLSTATE, class 08, or 57P0x) gives `unknown`; lost elsewhere, the server
 *   rolls back: `aborted`.
 * - A WHERE is exact when compilePredicate accepts it and it reads no column whose comparison depends on session
 *   settings the checker does not model (non-C collation, TimeZone other than UTC for date/time columns,
 *   extra_float_digits < 1 for floats); otherwise the read is `partial` (warned once per statement shape).
 * - Statements on one session are serialized (the recorder may send several queries for one application query).
 * - Recorder.interrupt() closes the open transaction of every session at once (endInFlight: `unknown` once COMMIT
 *   is sent, else `aborted`); from then on nothing is sent to the server (RecorderStoppedError), so a transaction
 *   written as aborted cannot commit later, and a late answer does not change what was written.
 */
import type pg from 'pg';
import type { HistoryEvent, IsolationLevel, SelectEvent, TxnError, TxnLine, TxnStatus } from '../history/format.js';
import { InputError } from '../history/input-errors.js';
import { RecorderStoppedError, UnsupportedStatementError } from './errors.js';
import { quoteIdent, RAW_TYPES, type TableInfo } from './catalog.js';
import { type EventContext, eventsFor, RecordedQuery, recordParams, type Judgement, type TextRow } from './events.js';
import { COPY_CLEAR_QUERY, COPY_READ_QUERY } from './rewrite-copy.js';
import { type FetchedResult, type PartRows, PortalQuery } from './portal-query.js';
import { type CursorRead, SessionCursors } from './cursors.js';
import type { CopyOut } from './plan.js';
import type { CursorStep, PgIsolation, Plan, RecordedPlan, Shadowed, TxnControl } from './rewrite.js';
import { isUtcZone } from './time-zone.js';
import { sqlStateConnectionLoss, sqlStateOf } from './sqlstate.js';
import { whereShape } from './statement-shape.js';
import type { WhereColumns } from './where-columns.js';

const LEVELS: Record<string, IsolationLevel> = {
  'read uncommitted': 'RC',
  'read committed': 'RC',
  'repeatable read': 'SI',
  serializable: 'SER',
};

export function levelOf(pgLevel: string | undefined): IsolationLevel {
  return LEVELS[(pgLevel ?? 'read committed').toLowerCase().replace(/_/g, ' ')] ?? 'RC';
}

const TIME_TYPES = new Set(['date', 'timestamp', 'timestamptz']);
const FLOAT_TYPES = new Set(['float4', 'float8']);

interface Settings {
  defaultIso: string;
  dateStyle: string;
  timeZone: string;
  extraFloatDigits: number;
  /** unsafeColumns() per table under these settings. */
  unsafe: Map<TableInfo, Map<string, string>>;
  /** The recorded tables whose names, without a schema, mean another relation under this search_path. */
  shadowed: Shadowed;
}

interface Savepoint {
  name: string;
  events: number;
}

interface OpenTxn {
  id: string;
  seq: number;
  /** The level PostgreSQL runs it at. */
  run: PgIsolation | string;
  declared?: IsolationLevel;
  label?: string;
  begin: number;
  events: HistoryEvent[];
  statements: number;
  failed?: TxnError;
  savepoints: Savepoint[];
  committing: boolean;
  closed: boolean;
  /** A SET/RESET ran inside: it is undone by ROLLBACK (TO SAVEPOINT) and SET LOCAL ends with the transaction. */
  settingsChanged: boolean;
  /** The server that served it (a session spanning connections: sessions.ts). */
  node?: string;
}

/** True when an error means the connection is gone (the outcome of an in-flight COMMIT is then unknown). */
export function isConnectionLoss(err: unknown): boolean {
  return sqlStateConnectionLoss(err) ?? true;
}

function errorInfo(err: unknown): TxnError {
  const e = err as { code?: unknown; message?: unknown } | null;
  const out: TxnError = {};
  const code = sqlStateOf(err);
  if (code !== undefined) out.code = code;
  out.message = typeof e?.message === 'string' ? e.message : String(err);
  return out;
}

export interface QueryOptions {
  rowMode?: 'array';
  types?: pg.CustomTypesConfig;
  name?: string;
  binary?: boolean;
  /** pg's option: the extended protocol even with no parameters. */
  queryMode?: 'extended';
  /** isocheck's (the proxy's Execute with a row limit): run it as this server portal, fetched in parts of `rows`
   *  rows (portal-query.ts); the result is a FetchedResult. For a SELECT or a statement the recorder passes
   *  through; another statement ignores it and runs whole. Its next parts need a transaction block (a Sync outside
   *  one closes the portal). */
  fetch?: { portal: string; rows: number };
  /** isocheck's (the proxy's): the types the client declared for its parameters in its Parse (0: none). */
  paramTypes?: number[];
  /** isocheck's (the proxy's): runs a recorded `COPY ... TO STDOUT` (rewrite-copy.ts: its text, or for a query the
   *  text made once the server has described it), its rows going to the client; resolves with its command tag
   *  (`COPY n`). Without it such a COPY is refused. */
  copyOut?: (copy: CopyOut, added: number) => Promise<string>;
}

/** A connection a spanning session uses, and the name of its server (the transactions' `node`). */
export interface Via {
  raw: pg.ClientBase;
  node?: string;
}

/** What a session needs of the recorder that owns it (the Recorder class; an interface here, so that this file
 *  does not import recorder.ts, which imports it). */
export interface SessionOwner {
  now(): number;
  readonly stopReason: string | undefined;
  warn(message: string, shape?: string): void;
  plan(text: string, nValues: number, shadowed?: Shadowed): Plan;
  /** The recorded tables. */
  readonly tables: readonly TableInfo[];
  /** The name of the prepared statement a rewritten text runs as on every connection (undefined: unnamed). */
  statementName(sql: string): string | undefined;
  /** The columns a WHERE reads as the checker compiles it with these parameters, or why it cannot (cached). */
  whereColumns(where: string, params: unknown[], table: TableInfo): WhereColumns;
  session(raw: pg.ClientBase): Session;
  sessionEnded(s: Session): void;
  writeTxn(txn: Omit<TxnLine, 'kind'>): void;
}

/** One database connection's recording state. */
export class Session {
  private seq = 0;
  private txn: OpenTxn | undefined;
  private settings: Settings | undefined;
  private tail: Promise<unknown> = Promise.resolve();
  /** Statements started by serialize() and not settled yet. */
  private running = 0;
  /** The application's type parsers when a statement gives none: the client's (cached). */
  private clientTypes: pg.CustomTypesConfig | undefined;
  /** Rewritten statements run as the recorder's prepared statements (off once the application drops them). */
  private prepare = true;
  private pendingLevel: IsolationLevel | undefined;
  private pendingLabel: string | undefined;
  /** Cursors declared over recorded SELECTs (cursors.ts). */
  private readonly cursors = new SessionCursors();

  constructor(
    readonly recorder: SessionOwner,
    /** The connection in use (changes between transactions in a session spanning connections: useConnection). */
    public raw: pg.ClientBase,
    readonly number: number,
  ) {
    this.connections.add(raw);
    raw.on('end', () => this.connectionEnded(raw));
  }

  /**
   * For Recorder.interrupt(): writes the transaction in progress, if any, as `unknown` when its COMMIT was sent,
   * else as `aborted` (its COMMIT will never be sent: the recorder refuses every later statement).
   */
  endInFlight(reason: string): TxnStatus | undefined {
    const txn = this.txn;
    if (!txn || txn.closed) return undefined;
    if (txn.committing) {
      this.close(txn, 'unknown');
      return 'unknown';
    }
    this.close(txn, 'aborted', txn.failed ?? { message: reason });
    return 'aborted';
  }

  /** Every statement goes to the server through here: nothing is sent once the recorder is interrupted. */
  private send(config: pg.QueryConfig | string, values?: unknown[]): Promise<pg.QueryResult> {
    const stopped = this.recorder.stopReason;
    if (stopped !== undefined) return Promise.reject(new RecorderStoppedError(stopped));
    return this.raw.query(config as pg.QueryConfig, values);
  }

  /** Declares the isolation level recorded for the transaction in progress, or else the next one. */
  declareLevel(level: IsolationLevel): void {
    if (this.txn && !this.txn.closed) this.txn.declared = level;
    else this.pendingLevel = level;
  }

  /** Labels the transaction in progress, or else the next one. */
  label(name: string): void {
    if (this.txn && !this.txn.closed) this.txn.label = name;
    else this.pendingLabel = name;
  }

  /** Runs fn after every earlier statement of this session: at once when none is in progress (the common case:
   *  no queue, no extra promise between the application and its statement). */
  serialize<T>(fn: () => Promise<T>): Promise<T> {
    let p: Promise<T>;
    if (this.running > 0) p = this.tail.then(fn, fn);
    else {
      try {
        p = fn();
      } catch (e) {
        p = Promise.reject(e as Error); // as when it ran in the queue: a rejected promise, never a throw
      }
    }
    this.running++;
    const settled = (): void => {
      this.running--;
    };
    this.tail = p.then(settled, settled);
    return p;
  }

  /** The recorded tables this session's search_path hides (Settings.shadowed), if known. */
  get shadowed(): Shadowed | undefined {
    return this.settings?.shadowed;
  }

  /** The same, read now when not known (isocheck proxy, before it describes a statement it has not run). */
  shadows(): Promise<Shadowed> {
    return this.serialize(async () => (this.settings ?? (await this.readSettings())).shadowed);
  }

  query(text: string, values: unknown[] | undefined, options: QueryOptions, via?: () => Via): Promise<pg.QueryResult> {
    if (via) {
      return this.serialize(async () => {
        this.useConnection(via());
        return this.execute(text, values, options);
      });
    }
    return this.serialize(() => this.execute(text, values, options));
  }

  // ---- transactions ---------------------------------------------------------------------------------------

  private open(run: string): OpenTxn {
    this.seq++;
    const txn: OpenTxn = {
      id: `s${this.number}.${this.seq}`,
      seq: this.seq,
      run,
      declared: this.pendingLevel,
      label: this.pendingLabel,
      begin: this.recorder.now(),
      events: [],
      statements: 0,
      savepoints: [],
      committing: false,
      closed: false,
      settingsChanged: false,
      ...(this.node !== undefined ? { node: this.node } : {}),
    };
    this.pendingLevel = undefined;
    this.pendingLabel = undefined;
    this.txn = txn;
    return txn;
  }

  private close(txn: OpenTxn, status: TxnStatus, error?: TxnError): void {
    if (txn.closed) return;
    txn.closed = true;
    if (this.txn === txn) this.txn = undefined;
    this.cursors.transactionEnded(txn, status === 'committed');
    if (txn.settingsChanged) this.settings = undefined;
    this.recorder.writeTxn({
      id: txn.id,
      session: this.number,
      seq: txn.seq,
      iso: txn.declared ?? levelOf(txn.run),
      status,
      ...(txn.label !== undefined ? { label: txn.label } : {}),
      ...(txn.node !== undefined ? { node: txn.node } : {}),
      begin: txn.begin,
      end: this.recorder.now(),
      events: txn.events,
      ...(status === 'aborted' && error ? { error } : {}),
    });
  }

  // ---- sessions spanning connections (sessions.ts) ------------------------------------------------------------

  /** The server a spanning session's transactions run on now (their `node`). */
  node: string | undefined;
  /** Spans connections: it lives on when one of them ends. */
  spanning = false;
  private readonly connections = new WeakSet<object>();
  private readonly settingsOf = new WeakMap<object, Settings>();

  /** True while a transaction is open (a spanning session keeps its connection until it ends). */
  get inTransaction(): boolean {
    return this.txn !== undefined && !this.txn.closed;
  }

  /** Names the server(s) of the transaction in progress, e.g. the shards a coordinator's transaction used. */
  nodeOfTransaction(node: string): void {
    if (this.txn && !this.txn.closed) this.txn.node = node;
  }

  /** Moves the session to another connection (between transactions only: a transaction lives on one server). */
  useConnection(via: Via): void {
    this.node = via.node;
    if (via.raw === this.raw) return;
    if (this.inTransaction)
      throw new InputError(
        `session ${this.number} has a transaction open on ${this.txn!.node ?? 'another connection'}; end it ` +
          `(COMMIT or ROLLBACK) before using another connection`,
      );
    if (!this.connections.has(via.raw)) {
      this.connections.add(via.raw);
      via.raw.on('end', () => this.connectionEnded(via.raw));
    }
    // settings are the connection's (each server has its own defaults): kept per connection between switches
    if (this.settings) this.settingsOf.set(this.raw, this.settings);
    else this.settingsOf.delete(this.raw);
    this.raw = via.raw;
    this.settings = this.settingsOf.get(via.raw);
    this.clientTypes = undefined;
  }

  private connectionEnded(raw: pg.ClientBase): void {
    if (raw !== this.raw) return; // a connection the spanning session no longer uses
    if (!this.spanning) this.recorder.sessionEnded(this);
    const txn = this.txn;
    if (txn && !txn.closed && !txn.committing) {
      // the server rolls back a transaction whose connection is gone
      this.close(txn, 'aborted', txn.failed ?? { message: 'connection closed before COMMIT' });
    }
  }

  private fail(txn: OpenTxn, err: unknown): void {
    txn.failed ??= errorInfo(err);
  }

  private txStatus(): string | undefined {
    const f = (this.raw as unknown as { getTransactionStatus?: () => string | null }).getTransactionStatus;
    return typeof f === 'function' ? (f.call(this.raw) ?? undefined) : undefined;
  }

  // ---- session settings -------------------------------------------------------------------------------------

  private async readSettings(): Promise<Settings> {
    const tables = this.recorder.tables;
    const r = await this.send({
      // (the recorded tables an unqualified name does not mean here: another relation comes first in the search
      // path, as PostgreSQL looks names up, a temporary table included)
      text:
        `SELECT current_setting('default_transaction_isolation'), current_setting('DateStyle'), ` +
        `current_setting('TimeZone'), current_setting('extra_float_digits'), ` +
        // (by schema, not oid: a shard's tables are other relations of the same names)
        `ARRAY(SELECT t.i FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS t(rel, nsp, i) ` +
        `JOIN pg_class c ON c.oid = to_regclass(quote_ident(t.rel)) JOIN pg_namespace n ON n.oid = c.relnamespace ` +
        `WHERE n.nspname <> t.nsp ORDER BY t.i)::text`,
      values: [tables.map((t) => t.relname), tables.map((t) => t.schema)],
      rowMode: 'array',
      types: RAW_TYPES,
    } as pg.QueryArrayConfig);
    const [iso, dateStyle, timeZone, efd, shadowed] = r.rows[0] as string[];
    // (a session spanning connections has a search path per connection: names are matched by name there, as the
    // proxy, describing a statement, cannot tell which connection's settings the session holds)
    const key = this.spanning ? '{}' : shadowed;
    const at = key
      .slice(1, -1)
      .split(',')
      .filter((i) => i !== '');
    const names = at.map((i) => tables[Number(i) - 1].relname);
    this.settings = {
      defaultIso: iso,
      dateStyle,
      timeZone,
      extraFloatDigits: Number(efd),
      unsafe: new Map(),
      shadowed: { key, names: new Set(names) },
    };
    return this.settings;
  }

  /** Columns of the table whose comparisons the checker would evaluate differently in this session. */
  private unsafeColumns(table: TableInfo, s: Settings): Map<string, string> {
    let out = s.unsafe.get(table);
    if (out) return out;
    s.unsafe.set(table, (out = new Map()));
    for (const c of table.unsafeColumns) out.set(c, 'its collation is not C');
    const utc = isUtcZone(s.timeZone);
    for (const [c, type] of Object.entries(table.columns)) {
      if (!utc && TIME_TYPES.has(type)) out.set(c, `the session TimeZone is ${s.timeZone}, not UTC`);
      if (s.extraFloatDigits < 1 && FLOAT_TYPES.has(type))
        out.set(c, `extra_float_digits is ${s.extraFloatDigits} (floats are rounded)`);
    }
    return out;
  }

  private judge(settings: Settings, where: string | undefined, params: unknown[], table: TableInfo): Judgement {
    if (where === undefined) return { exact: true };
    const compiled = this.recorder.whereColumns(where, params, table);
    if ('error' in compiled) {
      this.recorder.warn(
        `reads of ${table.name} with WHERE ${where} are recorded as partial: ${compiled.error}`,
        `where:${table.name}:${whereShape(where)}`,
      );
      return { exact: false, reason: compiled.error };
    }
    const used = compiled.columns;
    const unsafe = this.unsafeColumns(table, settings);
    for (const c of used) {
      const why = unsafe.get(c);
      if (why) {
        this.recorder.warn(
          `reads of ${table.name} with WHERE ${where} are recorded as partial: column ${c}: ${why}`,
          `where:${table.name}:${whereShape(where)}:${c}`,
        );
        return { exact: false, reason: why };
      }
    }
    return { exact: true };
  }

  private checkDateStyle(settings: Settings, table: TableInfo): void {
    if (
      !settings.dateStyle.toUpperCase().startsWith('ISO') &&
      Object.values(table.columns).some((t) => TIME_TYPES.has(t))
    ) {
      throw new InputError(
        `session DateStyle is "${settings.dateStyle}": dates and timestamps of ${table.name} would be ` +
          `recorded in a format the checker cannot read; keep DateStyle ISO (the default) while recording`,
      );
    }
  }

  // ---- statements -------------------------------------------------------------------------------------------

  private forward(text: string, values: unknown[] | undefined, options: QueryOptions): Promise<pg.QueryResult> {
    // as the application called pg (text and values): pg copies a config object, not a text
    if (
      options.name === undefined &&
      options.rowMode === undefined &&
      options.types === undefined &&
      options.binary === undefined &&
      options.queryMode === undefined
    )
      return this.send(text, values);
    return this.send({ ...options, text, values } as pg.QueryConfig);
  }

  /** One statement of the application (not async itself: the promise of the path taken is the application's). */
  private execute(text: string, values: unknown[] | undefined, options: QueryOptions): Promise<pg.QueryResult> {
    const n = values?.length ?? 0;
    let plan: Plan;
    try {
      plan = this.recorder.plan(text, n, this.settings?.shadowed);
    } catch (e) {
      // refused before this session's search path was known (after a SET or DDL): a name it gives to another
      // relation is not the recorded table's, and the statement may pass
      const pathKnown = this.settings !== undefined || this.spanning;
      if (pathKnown || this.txStatus() === 'E' || !(e instanceof UnsupportedStatementError)) throw e;
      const again = (s: Settings): Promise<pg.QueryResult> =>
        this.dispatch(this.recorder.plan(text, n, s.shadowed), text, values, options);
      return this.readSettings().then(again);
    }
    return this.dispatch(plan, text, values, options);
  }

  /** The application's statement name for this plan: none when pg holds this statement's other form under it (its
   *  text rewritten or not, as the session's search path changed: Settings.shadowed), which pg would refuse. */
  private nameFor(plan: Plan, text: string, values: unknown[] | undefined, options: QueryOptions): QueryOptions {
    const name = options.name;
    if (name === undefined) return options;
    const con = (this.raw as unknown as { connection?: Record<string, Record<string, string> | undefined> }).connection;
    const bound = con?.parsedStatements?.[name] ?? con?.submittedNamedStatements?.[name];
    const sent = 'sql' in plan ? plan.sql : text;
    if (bound === undefined || bound === sent) return options;
    const plain = this.recorder.plan(text, values?.length ?? 0);
    const forms = [text, 'sql' in plain ? plain.sql : text];
    return forms.includes(bound) ? { ...options, name: undefined } : options;
  }

  private dispatch(
    plan: Plan,
    text: string,
    values: unknown[] | undefined,
    given: QueryOptions,
  ): Promise<pg.QueryResult> {
    const options = this.nameFor(plan, text, values, given);
    switch (plan.kind) {
      case 'control':
        return this.control(plan.control, text, values, options);
      case 'settings':
      case 'passthrough':
        return this.passthrough(plan, text, values, options);
      default:
        return this.recorded(plan, text, values, options);
    }
  }

  private async passthrough(
    plan: Plan & { kind: 'settings' | 'passthrough' },
    text: string,
    values: unknown[] | undefined,
    options: QueryOptions,
  ): Promise<pg.QueryResult> {
    if (plan.kind === 'passthrough' && plan.warning) this.recorder.warn(plan.warning);
    // DISCARD ALL / DEALLOCATE: pg would still take the recorder's prepared statements for parsed
    if (plan.dropsPrepared) this.prepare = false;
    const txn = this.txn;
    if (txn) txn.statements++;
    const step = plan.cursor;
    const cursor = step?.op === 'fetch' ? this.cursors.get(step.name) : undefined;
    try {
      if (cursor && step?.op === 'fetch') return await this.fetchCursor(cursor, step, text, values, options);
      if (options.fetch)
        return await this.fetchParts(txn, { sql: text, appRows: true, added: 0 }, values ?? [], options.name, options);
      const r = await this.forward(text, values, options);
      if (step?.op === 'close' || step?.op === 'declare') this.cursors.closed(step.name);
      return r;
    } catch (e) {
      if (txn && !txn.closed) this.fail(txn, e);
      throw e;
    } finally {
      // (a relation made, dropped or moved, or set_config, may hide a recorded table's name, or no longer:
      // Settings.shadowed)
      if (plan.kind === 'settings' || plan.relations) {
        this.settings = undefined;
        if (txn) txn.settingsChanged = true;
      }
    }
  }

  /** A WITH HOLD cursor just declared (SCROLL) in a transaction of its own: all its rows fill in its read, then it is
   *  moved back to its start, where the application's FETCHes begin. */
  private async readHeld(name: string): Promise<void> {
    const cursor = this.cursors.get(name);
    if (!cursor) return;
    const id = quoteIdent(name);
    const step = { op: 'fetch', name, move: false, forward: Number.POSITIVE_INFINITY } as const;
    await this.fetchCursor(cursor, step, `FETCH ALL FROM ${id}`, [], { rowMode: 'array', types: RAW_TYPES });
    await this.send({ text: `MOVE ABSOLUTE 0 IN ${id}` });
  }

  /** A FETCH or MOVE from a cursor declared over a recorded SELECT: its rows without the added columns, which
   *  fill in the cursor's read (cursors.ts). */
  private async fetchCursor(
    cursor: CursorRead,
    step: CursorStep & { op: 'fetch' },
    text: string,
    values: unknown[] | undefined,
    options: QueryOptions,
  ): Promise<pg.QueryResult> {
    if (options.binary)
      throw binaryRefused(text, 'its results are asked for in binary (a cursor over a recorded table)');
    const plan = { sql: text, appRows: !step.move, added: cursor.plan.added };
    if (options.fetch) {
      // (the proxy's row-limited Execute of a FETCH: how far the cursor went is not known from the parts)
      return this.fetchParts(this.txn, plan, values ?? [], options.name, options, (rows) =>
        this.cursors.fetched(cursor, step, rows, false),
      );
    }
    const q = new RecordedQuery(plan, values ?? [], options.name, options.rowMode, options.types ?? this.appTypes());
    // (the extended protocol when the application asked for it: its errors come as they would)
    if (options.queryMode) (q as unknown as { queryMode?: string }).queryMode = options.queryMode;
    await this.submit(q);
    this.cursors.fetched(cursor, step, q.added);
    return q.app;
  }

  private async control(
    c: TxnControl,
    text: string,
    values: unknown[] | undefined,
    options: QueryOptions,
  ): Promise<pg.QueryResult> {
    const txn = this.txn;
    switch (c.kind) {
      case 'begin': {
        if (txn) return this.forward(text, values, options); // PostgreSQL warns and does nothing
        const settings = this.settings ?? (await this.readSettings());
        const begin = this.recorder.now();
        const r = await this.forward(text, values, options);
        const t = this.open(c.iso ?? settings.defaultIso);
        t.begin = begin;
        return r;
      }
      case 'set-transaction': {
        if (!txn) return this.forward(text, values, options); // no effect outside a transaction block
        try {
          const r = await this.forward(text, values, options);
          if (c.iso) txn.run = c.iso;
          return r;
        } catch (e) {
          this.fail(txn, e);
          throw e;
        }
      }
      case 'commit':
      case 'rollback': {
        if (!txn) return this.forward(text, values, options); // "no transaction in progress"
        txn.committing = c.kind === 'commit';
        let result: pg.QueryResult;
        try {
          result = await this.forward(text, values, options);
        } catch (e) {
          if (c.kind === 'commit' && isConnectionLoss(e)) this.close(txn, 'unknown');
          else this.close(txn, 'aborted', txn.failed ?? errorInfo(e));
          this.afterEnd(c.chain, txn);
          throw e;
        }
        if (c.kind === 'commit' && result.command !== 'ROLLBACK') this.close(txn, 'committed');
        else this.close(txn, 'aborted', txn.failed);
        this.afterEnd(c.chain, txn);
        return result;
      }
      case 'savepoint':
      case 'rollback-to':
      case 'release': {
        if (!txn) return this.forward(text, values, options); // an error outside a transaction block
        txn.statements++;
        let r: pg.QueryResult;
        try {
          r = await this.forward(text, values, options);
        } catch (e) {
          this.fail(txn, e);
          throw e;
        }
        const at = txn.savepoints.map((s) => s.name).lastIndexOf(c.name);
        if (c.kind === 'savepoint') txn.savepoints.push({ name: c.name, events: txn.events.length });
        else if (at >= 0 && c.kind === 'rollback-to') {
          // the writes after the savepoint are undone: drop the events (dropping reads only loses information)
          txn.events.length = txn.savepoints[at].events;
          this.cursors.rolledBack(txn, txn.savepoints[at].events);
          txn.savepoints.length = at + 1;
          txn.failed = undefined;
          if (txn.settingsChanged) this.settings = undefined;
        } else if (at >= 0) txn.savepoints.length = at;
        return r;
      }
    }
  }

  /** After COMMIT/ROLLBACK [AND CHAIN]: a chained transaction starts at the same level. */
  private afterEnd(chain: boolean, previous: OpenTxn): void {
    const status = this.txStatus();
    if (chain && (status === undefined || status === 'T' || status === 'E')) {
      const t = this.open(previous.run);
      if (status === 'E') t.failed = { message: 'chained transaction started in a failed state' };
    }
  }

  /**
   * Runs a rewritten statement (its wids as the added parameters; a prepared statement of the recorder's unless the
   * application names it), records its events in the transaction and gives the application's result.
   */
  private async run(
    plan: RecordedPlan,
    values: unknown[] | undefined,
    txn: OpenTxn,
    options: QueryOptions,
    settings: Settings,
    params: unknown[],
    /** Run in a transaction of its own (autocommit). */
    alone = false,
  ): Promise<pg.QueryResult> {
    txn.statements++;
    const wid = `${txn.id}.${txn.statements}`;
    const upsertWid = plan.kind === 'insert' && plan.upsertWidParam !== undefined ? `${wid}u` : undefined;
    let all = values ?? [];
    if ('widParam' in plan) {
      all = [...all];
      all[plan.widParam - 1] = wid;
      if (upsertWid !== undefined && plan.kind === 'insert') all[plan.upsertWidParam! - 1] = upsertWid;
    }
    const name = options.name ?? (this.prepare ? this.recorder.statementName(plan.sql) : undefined);
    const judge: EventContext['judge'] = (w, p, t) => this.judge(settings, w, p, t);
    // (upsertWid: an INSERT's only)
    const ctx: EventContext = { params, wid, judge, paramTypes: options.paramTypes };
    if (upsertWid !== undefined) ctx.upsertWid = upsertWid;
    if (options.fetch && plan.kind === 'select' && !plan.declare) {
      // fetched in parts: one read, its rows those fetched so far, partial while the portal is suspended (at the
      // place of its first part: the portal's snapshot is that of its start)
      // (FOR UPDATE fetched in several parts: a row locked after a part may be one the transaction changed since)
      const added: TextRow[] = [];
      let events: HistoryEvent[] | undefined;
      let parts = 0;
      return this.fetchParts(txn, plan, all, name, options, (rows, suspended) => {
        added.push(...rows);
        parts++;
        const next = eventsFor(plan, added, ctx);
        if (suspended || (plan.locks && parts > 1)) for (const e of next) (e as SelectEvent).partial = true;
        if (events === undefined) txn.events.push(...next);
        else {
          // (gone when a ROLLBACK TO undid the part: the portal is gone then too)
          const at = txn.events.indexOf(events[0]);
          if (at >= 0) txn.events.splice(at, events.length, ...next);
        }
        events = next;
      });
    }
    if (plan.kind === 'select' && plan.copy) {
      const { added, result } = await this.copyOut(() => options.copyOut!(plan.copy!, plan.added));
      txn.events.push(...eventsFor(plan, added, ctx));
      return result;
    }
    // a WITH HOLD cursor in a transaction of its own (Django's iterator(), psycopg2's withhold cursors in autocommit):
    // its rows would all be fetched after that transaction's line is written; declared to scroll, it is read whole
    // now (PostgreSQL has materialized it at the commit, in the DECLARE's snapshot) and rewound for the application
    const held = alone && plan.kind === 'select' ? plan.declare?.heldSql : undefined;
    const run = held === undefined ? plan : { ...plan, sql: held };
    const q = new RecordedQuery(
      run,
      all,
      held === undefined ? name : undefined,
      options.rowMode,
      options.types ?? this.appTypes(),
    );
    await this.submit(q);
    if (plan.kind === 'select' && plan.declare) {
      this.cursors.declared({ ...plan, declare: plan.declare }, txn, ctx);
      if (held !== undefined) await this.readHeld(plan.declare.name);
      return q.app;
    }
    txn.events.push(...eventsFor(plan, q.added, ctx));
    return q.app;
  }

  /** A recorded `COPY ... TO STDOUT` (rewrite-copy.ts): run by the caller, its rows going to its client, then the
   *  added columns of its read taken from the setting the COPY left them in (none to read after no row). */
  private async copyOut(run: () => Promise<string>): Promise<{ added: TextRow[]; result: pg.QueryResult }> {
    const stopped = this.recorder.stopReason;
    if (stopped !== undefined) throw new RecorderStoppedError(stopped);
    const tag = await run();
    const rowCount = Number(tag.slice(tag.lastIndexOf(' ') + 1));
    let added: TextRow[] = [];
    if (rowCount > 0) {
      const r = await this.send({ text: COPY_READ_QUERY, rowMode: 'array' } as pg.QueryConfig);
      added = r.rows.map((row) => JSON.parse(String((row as unknown[])[0])) as (string | null)[]);
      await this.send(COPY_CLEAR_QUERY);
    }
    return { added, result: { command: 'COPY', rowCount, oid: 0, rows: [], fields: [] } };
  }

  /** A statement run as a server portal, its first part now, each next part at the result's `more` (options.fetch:
   *  portal-query.ts); `parts` sees the rows of each. */
  private async fetchParts(
    /** The transaction it runs in (none: a statement passed through outside a block, fetched in one part). */
    txn: OpenTxn | undefined,
    plan: Pick<RecordedPlan, 'sql' | 'appRows' | 'added'>,
    values: unknown[],
    name: string | undefined,
    options: QueryOptions,
    parts?: PartRows,
  ): Promise<FetchedResult> {
    const { portal, rows } = options.fetch!;
    const types = options.types ?? this.appTypes();
    const run = async (q: PortalQuery): Promise<FetchedResult> => {
      try {
        await this.submit(q);
      } catch (e) {
        // (a later part's error fails the transaction as the first part's does)
        if (txn && !txn.closed) this.fail(txn, e);
        throw e;
      }
      parts?.(q.added, q.suspended);
      const fields = q.fields ?? [];
      return Object.assign(q.app, {
        suspended: q.suspended,
        more: (n: number) => run(new PortalQuery(plan, [], name, options.rowMode, types, portal, n, fields)),
      });
    };
    return run(new PortalQuery(plan, values, name, options.rowMode, types, portal, rows));
  }

  /** Sends a rewritten statement (as send() does): settles when pg has its whole result. */
  private submit(q: RecordedQuery): Promise<void> {
    const stopped = this.recorder.stopReason;
    if (stopped !== undefined) return Promise.reject(new RecorderStoppedError(stopped));
    return new Promise((resolve, reject) => {
      q.callback = (err) => (err ? reject(err) : resolve());
      (this.raw.query as (q: unknown) => unknown)(q);
    });
  }

  /** The client's type parsers (what pg uses when a statement gives none). */
  private appTypes(): pg.CustomTypesConfig {
    const raw = this.raw;
    return (this.clientTypes ??= {
      getTypeParser: ((oid: number, format?: string) =>
        raw.getTypeParser(oid, format as 'text')) as pg.CustomTypesConfig['getTypeParser'],
    });
  }

  private async recorded(
    plan: RecordedPlan,
    text: string,
    values: unknown[] | undefined,
    options: QueryOptions,
  ): Promise<pg.QueryResult> {
    if (options.binary) throw binaryRefused(text, 'its results are asked for in binary');
    if (plan.kind === 'select' && plan.copy && !options.copyOut)
      throw new UnsupportedStatementError(
        text,
        'COPY ... TO STDOUT is recorded only through isocheck proxy (pg has no COPY out in query())',
        'SELECT the rows instead.',
      );
    const params = recordParams(values);
    let txn = this.txn;
    // the server's own view when the driver reports it (a client-side error does not fail the transaction)
    const status = this.txStatus();
    if (!txn && (status === 'T' || status === 'E')) {
      throw new InputError(
        `a transaction is open on session ${this.number} that the recorder did not see begin (BEGIN sent ` +
          `through the raw client?); send every statement through the recording client`,
      );
    }
    if (txn && (status === 'E' || (status === undefined && txn.failed))) {
      // PostgreSQL rejects it (25P02); run it as the application wrote it
      txn.statements++;
      return this.forward(text, values, options);
    }
    const settings = this.settings ?? (await this.readSettings());
    // planned before this session's search path was known: a name it hides is not the recorded table
    if (plan.tables.some((t) => settings.shadowed.names.has(t.relname))) {
      const again = this.recorder.plan(text, values?.length ?? 0, settings.shadowed);
      if (again !== plan) return this.dispatch(again, text, values, options);
    }
    for (const t of plan.tables) this.checkDateStyle(settings, t);
    if (txn) {
      try {
        return await this.run(plan, values, txn, options, settings, params);
      } catch (e) {
        if (!txn.closed) this.fail(txn, e);
        throw e;
      }
    }
    // autocommit: a transaction of its own
    txn = this.open(settings.defaultIso);
    if (plan.kind === 'select') {
      try {
        const out = await this.run(plan, values, txn, options, settings, params, true);
        this.close(txn, 'committed');
        return out;
      } catch (e) {
        this.close(txn, 'aborted', errorInfo(e));
        throw e;
      }
    }
    // a write: BEGIN; statement; COMMIT, so that the rows are known before the outcome
    try {
      await this.send('BEGIN');
    } catch (e) {
      this.close(txn, 'aborted', errorInfo(e));
      throw e;
    }
    let out: pg.QueryResult;
    try {
      out = await this.run(plan, values, txn, options, settings, params);
    } catch (e) {
      this.close(txn, 'aborted', errorInfo(e));
      if (!isConnectionLoss(e)) await this.send('ROLLBACK').catch(() => undefined);
      throw e;
    }
    txn.committing = true;
    try {
      await this.send('COMMIT');
    } catch (e) {
      if (isConnectionLoss(e)) this.close(txn, 'unknown');
      else this.close(txn, 'aborted', errorInfo(e));
      throw e;
    }
    this.close(txn, 'committed');
    return out;
  }
}

type Callback = (err: Error | null, result?: pg.QueryResult) => void;

function normalize(
  textOrConfig: unknown,
  valuesOrCallback?: unknown,
  callback?: unknown,
): { text: string; values?: unknown[]; options: QueryOptions; cb?: Callback } {
  let cb: Callback | undefined;
  let values: unknown[] | undefined;
  if (typeof valuesOrCallback === 'function') cb = valuesOrCallback as Callback;
  else {
    values = valuesOrCallback as unknown[] | undefined;
    if (typeof callback === 'function') cb = callback as Callback;
  }
  if (typeof textOrConfig === 'string') return { text: textOrConfig, values, options: {}, cb };
  const c = (textOrConfig ?? {}) as pg.QueryConfig & { rowMode?: 'array'; binary?: boolean; callback?: Callback };
  if (typeof c.text !== 'string') throw new TypeError('query() needs SQL text or a config with text');
  // (assignments, not conditional spreads: this runs for every statement, and the spreads cost microseconds)
  const options: QueryOptions = {};
  if (c.rowMode) options.rowMode = c.rowMode;
  if (c.types) options.types = c.types;
  if (c.name) options.name = c.name;
  if (c.binary) options.binary = c.binary;
  if ((c as { queryMode?: string }).queryMode === 'extended') options.queryMode = 'extended';
  const fetch = (c as QueryOptions).fetch;
  if (fetch) options.fetch = fetch;
  const paramTypes = (c as QueryOptions).paramTypes;
  if (paramTypes) options.paramTypes = paramTypes;
  const copyOut = (c as QueryOptions).copyOut;
  if (copyOut) options.copyOut = copyOut;
  return { text: c.text, values: (values ?? c.values) as unknown[] | undefined, options, cb: cb ?? c.callback };
}

/** A statement whose results the application asks for in binary: the recorder reads its added columns as text. */
const binaryRefused = (text: string, reason: string): UnsupportedStatementError =>
  new UnsupportedStatementError(text, reason, 'Drop the binary option while recording.');

function deliver(p: Promise<pg.QueryResult>, cb: Callback | undefined): Promise<pg.QueryResult> | undefined {
  if (!cb) return p;
  p.then(
    (r) => cb(null, r),
    (e) => cb(e as Error),
  );
  return undefined;
}

/** A pg client whose statements are recorded. Same query() API as pg.Client. */
export class RecordingClient {
  constructor(
    readonly session: Session,
    private readonly releaseFn?: (err?: Error | boolean) => void,
    /** For a session spanning connections: the connection (and server) each statement uses (sessions.ts). */
    private readonly via?: () => Via,
  ) {}

  /** The wrapped node-postgres client. */
  get raw(): pg.ClientBase {
    return this.via?.().raw ?? this.session.raw;
  }

  /** The history's session number of this connection. */
  get sessionNumber(): number {
    return this.session.number;
  }

  // biome-ignore lint/suspicious/noExplicitAny: the default pg's own query() has, so this stays a drop-in pg client
  query<R extends pg.QueryResultRow = any>(text: string, values?: unknown[]): Promise<pg.QueryResult<R>>;
  // biome-ignore lint/suspicious/noExplicitAny: the default pg's own query() has, so this stays a drop-in pg client
  query<R extends pg.QueryResultRow = any>(
    config: pg.QueryConfig & { rowMode?: 'array' },
    values?: unknown[],
  ): Promise<pg.QueryResult<R>>;
  query(text: string | pg.QueryConfig, values: unknown[] | undefined, callback: Callback): void;
  query(text: string | pg.QueryConfig, callback: Callback): void;
  query(textOrConfig: unknown, valuesOrCallback?: unknown, callback?: unknown): Promise<pg.QueryResult> | undefined {
    const sub = textOrConfig as { submit?: unknown; text?: unknown };
    if (sub && typeof sub === 'object' && typeof sub.submit === 'function') {
      // cursors and streams (pg-cursor, pg-query-stream): only for statements that touch no recorded table
      const plan = this.session.recorder.plan(String(sub.text ?? ''), 0, this.session.shadowed);
      if (plan.kind !== 'passthrough' && plan.kind !== 'settings') {
        throw new UnsupportedStatementError(
          String(sub.text ?? ''),
          'it is sent through a cursor or stream',
          'Use query() while recording.',
        );
      }
      return (this.raw.query as (q: unknown) => unknown)(textOrConfig) as never;
    }
    let n: ReturnType<typeof normalize>;
    try {
      n = normalize(textOrConfig, valuesOrCallback, callback);
    } catch (e) {
      return deliver(
        Promise.reject(e),
        typeof valuesOrCallback === 'function' ? (valuesOrCallback as Callback) : (callback as Callback | undefined),
      );
    }
    return deliver(this.session.query(n.text, n.values, n.options, this.via), n.cb);
  }

  /** Records the next (or current) transaction at this level instead of the one it runs at. */
  declareLevel(level: IsolationLevel): this {
    this.session.declareLevel(level);
    return this;
  }

  /** Labels the next (or current) transaction (its type, e.g. "Payment"). */
  label(name: string): this {
    this.session.label(name);
    return this;
  }

  /** Returns a pooled connection to its pool (see pg's PoolClient.release). */
  release(err?: Error | boolean): void {
    if (!this.releaseFn) throw new Error('release() is for clients checked out of a RecordingPool');
    this.releaseFn(err);
  }

  /** Closes the connection (pg.Client.end). */
  end(): Promise<void> {
    return (this.session.raw as pg.Client).end();
  }

  escapeIdentifier(s: string): string {
    return this.session.raw.escapeIdentifier(s);
  }

  escapeLiteral(s: string): string {
    return this.session.raw.escapeLiteral(s);
  }
}

/** A pg.Pool whose connections are recorded; each pooled connection is one session. */
export class RecordingPool {
  constructor(
    private readonly recorder: SessionOwner,
    readonly raw: pg.Pool,
  ) {}

  /** Checks out a connection (release() it when done, as with pg); with a callback, as pg's connect(callback). */
  connect(): Promise<RecordingClient>;
  connect(
    callback: (err: Error | undefined, client?: RecordingClient, done?: (err?: Error | boolean) => void) => void,
  ): void;
  connect(
    callback?: (err: Error | undefined, client?: RecordingClient, done?: (err?: Error | boolean) => void) => void,
  ): Promise<RecordingClient> | undefined {
    const p = this.raw.connect().then((c) => new RecordingClient(this.recorder.session(c), (err) => c.release(err)));
    if (!callback) return p;
    p.then(
      (c) => callback(undefined, c, (err) => c.release(err)),
      (e) => callback(e as Error),
    );
    return undefined;
  }

  /** One statement on some pooled connection (its own transaction unless the connection is inside one). */
  // biome-ignore lint/suspicious/noExplicitAny: the default pg's own query() has, so this stays a drop-in pg client
  query<R extends pg.QueryResultRow = any>(
    text: string | pg.QueryConfig,
    values?: unknown[],
  ): Promise<pg.QueryResult<R>>;
  query(text: string | pg.QueryConfig, values: unknown[] | undefined, callback: Callback): void;
  query(text: string | pg.QueryConfig, callback: Callback): void;
  query(
    text: string | pg.QueryConfig,
    valuesOrCallback?: unknown,
    callback?: Callback,
  ): Promise<pg.QueryResult> | undefined {
    const cb = typeof valuesOrCallback === 'function' ? (valuesOrCallback as Callback) : callback;
    const values = typeof valuesOrCallback === 'function' ? undefined : (valuesOrCallback as unknown[] | undefined);
    const p = this.connect().then(async (c) => {
      try {
        const r = await c.query(text as string, values);
        c.release();
        return r;
      } catch (e) {
        c.release(isConnectionLoss(e) ? (e as Error) : undefined);
        throw e;
      }
    });
    return deliver(p, cb);
  }

  end(): Promise<void> {
    return this.raw.end();
  }

  // biome-ignore lint/suspicious/noExplicitAny: any event of pg.Pool, whose listeners take different arguments
  on(event: string, listener: (...args: any[]) => void): this {
    // biome-ignore lint/suspicious/noExplicitAny: as above
    (this.raw.on as (e: string, l: (...args: any[]) => void) => unknown)(event, listener);
    return this;
  }

  get totalCount(): number {
    return this.raw.totalCount;
  }

  get idleCount(): number {
    return this.raw.idleCount;
  }

  get waitingCount(): number {
    return this.raw.waitingCount;
  }
}
