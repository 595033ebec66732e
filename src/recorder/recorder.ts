/**
 * The recorder: one history file, the recorded tables, and the sessions (one per database connection).
 *
 *   new Recorder({ file, meta }) -> instrument(client, tables): header, table and init lines
 *     -> client(pgClient) / pool(pgPool): applications run their statements through these
 *     -> each transaction is written as one `txn` line when it ends -> finish(): the `end` line
 *
 * Lines are written synchronously (HistoryWriter), so a killed process leaves a readable, truncated file with
 * every transaction that had ended. Session numbers follow the order in which connections are first seen;
 * a pooled connection keeps its session across checkouts.
 *
 * interrupt() ends a recording at once (Ctrl-C, a lost server): each transaction still open is written (`unknown`
 * when its COMMIT was sent, else `aborted`), then the `end` line; statements sent after it are refused
 * (RecorderStoppedError) so that no transaction written as aborted can commit afterwards.
 */
import { performance } from 'node:perf_hooks';
import type pg from 'pg';
import { HistoryWriter } from '../history/writer.js';
import { InputError } from '../history/input-errors.js';
import type { TxnLine, TxnStatus } from '../history/format.js';
import { loadPredicateParser } from '../sql/predicate.js';
import { instrument, snapshotInit, type InstrumentResult, type TableInfo } from './catalog.js';
import { serverVersion } from './server-version.js';
import {
  analyze,
  loadRewriter,
  type Plan,
  type Shadowed,
  shadowLookup,
  tableLookup,
  type TableLookup,
} from './rewrite.js';
import { RecordingClient, RecordingPool, Session } from './client.js';
import { NamedSession } from './sessions.js';
import { waitForReplay } from './cluster.js';
import { recordingDriver, type DriverOptions, type PgModule } from './driver.js';
import { WhereColumnsCache, type WhereColumns } from './where-columns.js';

export interface RecorderOptions {
  /** The history file to write (`.ndjson` or `.ndjson.gz`). */
  file: string;
  /** Provenance for the header (workload, seed, ...); the recorder adds database, tables and start time. */
  meta?: Record<string, unknown>;
  /** Warnings (partial reads, triggers, ...), each shape once. Default: printed to stderr. */
  onWarning?: (message: string) => void;
  /**
   * The number of the first session (default 1; sessions are numbered from it in order of first sight). Client
   * processes that record one run against one database need disjoint sessions: wids (`s<session>.<seq>.<n>`) are
   * stored in the rows, and a read names the write it saw by them (isocheck run --client K/N, isocheck merge).
   */
  firstSession?: number;
  /** Use the `_isocheck_prev` column even on PostgreSQL 18+ (the pre-18 path; for tests). */
  prevColumn?: boolean;
  /**
   * Run the rewritten statements as named prepared statements of each connection (parsed and planned once per
   * connection, as the application's own unnamed statements are not), for at most PREPARED_MAX texts. Default
   * true; false behind a pooler that does not keep prepared statements (PgBouncer in transaction mode before
   * 1.21, or without max_prepared_statements).
   */
  preparedStatements?: boolean;
}

/** Recording a cluster (cluster.ts): Recorder.instrument's third argument. */
export interface ClusterOptions {
  /** Declared keys by table, for tables whose key the server cannot show (partitioned with foreign partitions). */
  keys?: Record<string, string[]>;
  /** Connections to the shards' databases: the hidden columns go onto the shard tables too. */
  shards?: pg.ClientBase[];
  /** Connections to replicas: instrument() returns once each has replayed the primary's WAL. */
  replicas?: pg.ClientBase[];
  /** Time limit of that wait (default 60 s). */
  replayTimeoutMs?: number;
}

const PLAN_CACHE_SIZE = 2000;
/** At most this many rewritten texts run as prepared statements (a connection holds one per text it ran): an
 *  application that inlines its values makes a new text per statement, and the rest run unnamed. */
export const PREPARED_MAX = 200;

export { RecorderStoppedError } from './errors.js';

/** What interrupt() wrote for the transactions still open. */
export interface InterruptResult {
  /** Transactions whose COMMIT was sent and not answered. */
  unknown: number;
  /** Transactions not yet committing (the server rolls them back when their connection closes). */
  aborted: number;
}

export class Recorder {
  private readonly writer: HistoryWriter;
  private readonly t0 = performance.now();
  private readonly warned = new Set<string>();
  private readonly sessions = new WeakMap<object, Session>();
  /** Sessions whose connection has not ended (interrupt() closes their open transactions). */
  private readonly liveSessions = new Set<Session>();
  private readonly statusCounts: Record<TxnStatus, number> = { committed: 0, aborted: 0, unknown: 0 };
  private stoppedBy: string | undefined;
  /** Plans by statement text, then by number of values (no key string built per statement). */
  private readonly plans = new Map<string, Plan[]>();
  private planCount = 0;
  /** Prepared statement names by rewritten text: never reassigned (a connection keeps what it parsed). */
  private readonly statementNames = new Map<string, string>();
  /** Distinguishes this recorder's statement names from another's on a connection both used. */
  private readonly statementPrefix = `__isocheck_${Math.random().toString(36).slice(2, 8)}_`;
  private readonly whereCache = new WhereColumnsCache();
  private nextSession = 1;
  private readonly named = new Map<string, NamedSession>();
  private lookup: TableLookup | undefined;
  private oldReturning = false;
  private finished = false;
  private tableList: TableInfo[] = [];
  /** `server_version_num` of the recorded server (after instrument()). */
  serverVersionNum = 0;

  constructor(readonly options: RecorderOptions) {
    const first = options.firstSession ?? 1;
    if (!Number.isSafeInteger(first) || first < 1)
      throw new InputError(`firstSession must be an integer >= 1, got ${first}`);
    this.nextSession = first;
    this.writer = new HistoryWriter(options.file);
  }

  /** Milliseconds since the recorder was created (the `begin`/`end` times of transactions). @internal */
  now(): number {
    return Math.round((performance.now() - this.t0) * 100) / 100;
  }

  get tables(): readonly TableInfo[] {
    return this.tableList;
  }

  /** The recorded table a name in a statement means (as the rewriter looks names up), if any. */
  table(schemaname: string | undefined, relname: string): TableInfo | undefined {
    return this.lookup?.lookup(schemaname, relname);
  }

  get transactions(): number {
    return this.writer.transactions;
  }

  /** Transactions written so far, by status. */
  get counts(): Readonly<Record<TxnStatus, number>> {
    return this.statusCounts;
  }

  /** True once the `end` line is written (finish() or interrupt()) or the file closed (abandon()). */
  get closed(): boolean {
    return this.finished;
  }

  /** True once instrument() has written the header, tables and initial rows. */
  get instrumented(): boolean {
    return this.lookup !== undefined;
  }

  /** Why interrupt() stopped the recording (undefined while it runs). */
  get stopReason(): string | undefined {
    return this.stoppedBy;
  }

  warn(message: string, shape: string = message): void {
    if (this.warned.has(shape)) return;
    this.warned.add(shape);
    if (this.options.onWarning) this.options.onWarning(message);
    else process.stderr.write(`isocheck: warning: ${message}\n`);
  }

  /**
   * Prepares the tables (hidden wid column), writes the header, `table` lines and the initial rows. Call once,
   * before the workload runs, with a connection that is not inside a transaction.
   */
  async instrument(client: pg.ClientBase, tables: string[], cluster: ClusterOptions = {}): Promise<InstrumentResult> {
    if (this.lookup) throw new InputError('Recorder.instrument() was already called; pass every table in one call');
    if (tables.length === 0) throw new InputError('no tables to record');
    await Promise.all([loadRewriter(), loadPredicateParser()]);
    const { version, versionNum } = await serverVersion(client);
    this.serverVersionNum = versionNum;
    const result = await instrument(client, tables, {
      prevColumn: this.options.prevColumn ? true : undefined,
      keys: cluster.keys,
      shards: cluster.shards,
    });
    this.oldReturning = this.serverVersionNum >= 180000 && !this.options.prevColumn;
    for (const w of result.warnings) this.warn(w);
    const init = await snapshotInit(client, result.tables);
    this.writer.header({
      ...(this.options.meta ?? {}),
      database: `PostgreSQL ${version}`,
      serverVersionNum: this.serverVersionNum,
      recorder: { tool: 'isocheck', previousWid: this.oldReturning ? 'RETURNING old' : '_isocheck_prev column' },
      tables: result.tables.map((t) => ({ name: t.name, key: t.key, keySource: t.keySource })),
      startedAt: new Date().toISOString(),
    });
    for (const t of result.tables) this.writer.table(t.name, t.key, t.columns);
    for (const t of result.tables) this.writer.init(t.name, init.get(t.name) ?? []);
    this.tableList = result.tables;
    // nothing is read from a replica before it has the hidden columns and the cleared wids
    if (cluster.replicas) await waitForReplay(client, cluster.replicas, cluster.replayTimeoutMs);
    // (a name with any set-returning overload, schema aside: the rewriter sees names, not resolved functions)
    const srf = await client.query<{ proname: string }>('SELECT DISTINCT proname FROM pg_proc WHERE proretset');
    this.lookup = tableLookup(result.tables, new Set(srf.rows.map((r) => r.proname)));
    return result;
  }

  /** The plan for one statement text (cached: rewriting depends only on the text, the number of values and the
   *  recorded tables a session's search_path hides: `shadowed`, their names, none by default). @internal */
  plan(text: string, nValues: number, shadowed?: Shadowed): Plan {
    if (!this.lookup) throw new InputError('call Recorder.instrument() before running statements through the recorder');
    const hidden = shadowed !== undefined && shadowed.names.size > 0;
    const key = hidden ? `\u0000${shadowed.key}\u0000${text}` : text;
    let byCount = this.plans.get(key);
    let plan = byCount?.[nValues];
    if (!plan) {
      const lookup = hidden ? shadowLookup(this.lookup, shadowed.names) : this.lookup;
      plan = analyze(text, nValues, lookup, { oldReturning: this.oldReturning });
      if (this.planCount >= PLAN_CACHE_SIZE) {
        this.plans.clear();
        this.planCount = 0;
        byCount = undefined;
      }
      if (!byCount) this.plans.set(key, (byCount = []));
      byCount[nValues] = plan;
      this.planCount++;
    }
    return plan;
  }

  /** The name of the prepared statement a rewritten text runs as (undefined: unnamed). @internal */
  statementName(sql: string): string | undefined {
    if (this.options.preparedStatements === false) return undefined;
    let name = this.statementNames.get(sql);
    if (name === undefined && this.statementNames.size < PREPARED_MAX)
      this.statementNames.set(sql, (name = `${this.statementPrefix}${this.statementNames.size + 1}`));
    return name;
  }

  /** The columns a WHERE reads as the checker compiles it, or why it cannot (cached; where-columns.ts). @internal */
  whereColumns(where: string, params: unknown[], table: TableInfo): WhereColumns {
    return this.whereCache.get(where, params, table);
  }

  /** The session of a connection (created on first sight). @internal */
  session(raw: pg.ClientBase): Session {
    let s = this.sessions.get(raw);
    if (!s) {
      s = new Session(this, raw, this.nextSession++);
      this.sessions.set(raw, s);
      this.liveSessions.add(s);
    }
    return s;
  }

  /**
   * The session named `id` (the same object for the same id): one history session served by any number of
   * connections, as one logical client (sessions.ts): `.client(raw, node)`, `.router({ primary, replicas })`.
   */
  namedSession(id: string): NamedSession {
    let s = this.named.get(id);
    if (!s) this.named.set(id, (s = new NamedSession(this, id)));
    return s;
  }

  /** A new session spanning connections, first on `raw` (for NamedSession). @internal */
  spanningSession(raw: pg.ClientBase): Session {
    const s = new Session(this, raw, this.nextSession++);
    s.spanning = true;
    this.liveSessions.add(s);
    return s;
  }

  /** A session's connection ended (called by the session). @internal */
  sessionEnded(s: Session): void {
    this.liveSessions.delete(s);
  }

  /** Wraps a connected pg.Client: the same query() API, recorded. */
  client(raw: pg.ClientBase): RecordingClient {
    return new RecordingClient(this.session(raw));
  }

  /** Wraps a pg.Pool: connect() gives recording clients (one session per pooled connection). */
  pool(raw: pg.Pool): RecordingPool {
    return new RecordingPool(this, raw);
  }

  /**
   * A module shaped like `pg` whose clients and pools record here (driver.ts): hand it to a library that builds
   * its own pg clients (Sequelize `dialectModule`, TypeORM `driver`, `new driver.Pool(...)` for knex, drizzle,
   * kysely). With `tables`, they are instrumented on the first statement once they exist.
   */
  driver(options: DriverOptions = {}): PgModule {
    return recordingDriver(this, options);
  }

  /** Writes one finished transaction (called by the sessions). @internal */
  writeTxn(txn: Omit<TxnLine, 'kind'>): void {
    if (this.finished) {
      // after interrupt() every open transaction was written already: what ends later is that one's late answer
      if (this.stoppedBy === undefined)
        this.warn(`transaction ${txn.id} ended after Recorder.finish(); it is not in the history`, 'after-finish');
      return;
    }
    this.writer.txn(txn);
    this.statusCounts[txn.status]++;
  }

  /**
   * Ends the recording now (synchronously: call it from a signal handler): every transaction still open on a
   * session is written, `unknown` when its COMMIT was sent (its outcome never arrives), else `aborted` with the
   * reason; then the `end` line. Every statement sent afterwards through this recorder's clients is refused with a
   * RecorderStoppedError, so a transaction written as aborted never commits (close or end the connections: the
   * server rolls back what they hold). Idempotent; after finish() or abandon() it only refuses later statements.
   */
  interrupt(reason = 'the recording was interrupted'): InterruptResult {
    const out: InterruptResult = { unknown: 0, aborted: 0 };
    if (this.stoppedBy !== undefined) return out;
    this.stoppedBy = reason;
    if (this.finished) return out;
    if (!this.lookup) {
      // instrument() has not written the header yet: an `end` line alone would not be a history
      this.abandon();
      return out;
    }
    for (const s of this.liveSessions) {
      const status = s.endInFlight(reason);
      if (status === 'unknown') out.unknown++;
      else if (status === 'aborted') out.aborted++;
    }
    this.finish();
    return out;
  }

  /** Writes the `end` line and closes the file. Transactions still open are not recorded. */
  finish(): void {
    if (this.finished) return;
    this.finished = true;
    this.writer.end();
  }

  /** Closes the file without the `end` line (the history reads as truncated). */
  abandon(): void {
    if (this.finished) return;
    this.finished = true;
    this.writer.close();
  }
}
