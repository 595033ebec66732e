/**
 * The drop-in driver: a module shaped like `pg` (Client, Pool, types, defaults, escapeIdentifier, DatabaseError, ...)
 * whose clients and pools record through a Recorder, so that a library that builds its own pg clients takes it in
 * one line (Sequelize `dialectModule`, TypeORM `driver`, knex `connectionPool: new driver.Pool(...)`, drizzle
 * `drizzle(new driver.Pool(...))`, kysely `new PostgresDialect({ pool: new driver.Pool(...) })`).
 *
 *   recordingDriver(recorder, { pg, tables })
 *     -> { ...pg, Client: class Client extends pg.Client, Pool: class Pool extends pg.Pool }
 *   Client.query(...) -> the connection's RecordingClient (Session: plan, rewrite, events) -> pg.Client.prototype.query
 *   Pool -> pg's own pool (pg-pool) with `Client` the recording client: connect(callback), query(), events, counts
 *     as pg's
 *
 * Decisions:
 * - The classes extend the application's own pg classes (the module passed in, else `pg` resolved from the
 *   application's main script, else isocheck's own resolution): every method but query() is pg's, so events,
 *   connect() with or without a callback, release(), processID, `instanceof pg.Client`/`pg.Pool` and the
 *   `constructor.name` drizzle looks for ("Pool") behave as in pg.
 * - The Session sees a view of the client whose query() is pg's own (no recursion through the override).
 * - With `tables`, the tables are instrumented once they all exist, outside a transaction, before the first BEGIN
 *   or the first statement that reads or writes rows (SELECT, INSERT, UPDATE, DELETE, WITH, ...) and names one of
 *   them: an application that drops and creates its schema first is recorded from then on (its initial rows are
 *   what the tables hold then), and the catalog queries libraries make at startup do not instrument early. Until
 *   then statements pass through unrecorded, and a connection inside a transaction the recorder did not see begin
 *   stays unrecorded until that transaction ends. Without `tables` the recorder must already be instrumented.
 * - Cursors and streams (pg-cursor, pg-query-stream) pass through for statements that touch no recorded table and
 *   are refused otherwise, as RecordingClient does.
 */
import { createRequire } from 'node:module';
import { resolve } from 'node:path';
import type pg from 'pg';
import type { RecordingClient } from './client.js';

/** What the driver asks of the Recorder it records through (recorder.ts implements it; no import back). */
export interface DriverRecorder {
  readonly instrumented: boolean;
  readonly closed: boolean;
  instrument(client: pg.ClientBase, tables: string[]): Promise<unknown>;
  client(raw: pg.ClientBase): RecordingClient;
  warn(message: string, shape?: string): void;
}

/** The tables to record that do not exist (yet), and, for a name that exists once quoted (a name with capitals:
 *  `Acct` is `acct` to PostgreSQL, `"Acct"` another table), a hint saying how to name it. */
export async function missingTables(
  client: pg.ClientBase,
  tables: string[],
): Promise<{ missing: string[]; hint: string }> {
  const r = await client.query<{ name: string; quoted: boolean }>({
    text:
      "SELECT name, position('\"' in name) = 0 AND position('.' in name) = 0 " +
      'AND to_regclass(quote_ident(name)) IS NOT NULL AS quoted ' +
      'FROM unnest($1::text[]) AS t(name) WHERE to_regclass(name) IS NULL',
    values: [tables],
  });
  const quoted = r.rows.filter((x) => x.quoted).map((x) => `"${x.name}"`);
  const hint =
    quoted.length === 0
      ? ''
      : ` (${quoted.join(', ')} ${quoted.length === 1 ? 'exists' : 'exist'}: a name with capitals is written ` +
        `with its quotes, as in --tables '${quoted.join(',')}')`;
  return { missing: r.rows.map((x) => x.name), hint };
}

/** The `pg` module's shape (what `import pg from 'pg'` gives). */
export type PgModule = typeof pg;

export interface DriverOptions {
  /** The application's `pg` module. Default: `pg` as the application's main script resolves it. */
  pg?: PgModule;
  /**
   * Instrument these tables on the first statement once they all exist (when the recorder is not instrumented
   * yet). Without it, call Recorder.instrument() before the application runs statements.
   */
  tables?: string[];
}

/** Marks a module made here (never wrapped twice). */
const WRAPPED = Symbol.for('isocheck.driver');

/** The pg.Client methods a driver client has, loosely typed (the override takes pg's every call form). */
interface AnyClient {
  query(...args: unknown[]): unknown;
  getTransactionStatus?(): string | null;
  [key: string]: unknown;
}
type AnyClientClass = new (config?: unknown) => AnyClient;

/** Statements before which the tables are instrumented (when they exist): a transaction's start, and those that
 *  read or write rows when they name a recorded table (not the catalog queries libraries make at startup). */
const BEGINS = /^(begin|start)\b/i;
const READS_OR_WRITES = /^(select|insert|update|delete|with|merge|values|table)\b/i;

/** Matches a statement that names one of the tables (unqualified name, quoted or not, any case). */
function mentioning(tables: string[]): RegExp {
  const names = tables.map((t) => (t.split('.').pop() ?? t).replace(/"/g, '').replace(/[.*+?^${}()|[\]\\]/g, '\\$&'));
  return new RegExp(`(^|[^\\w$])"?(${names.join('|')})"?(?![\\w$])`, 'i');
}

/** The first word of a statement, comments and parentheses skipped. */
function leadingWords(text: string): string {
  return text.replace(/^(\s|--[^\n]*(\n|$)|\/\*[\s\S]*?\*\/|\()*/, '');
}

/** Whether a module is a pg module (or looks enough like one to be wrapped). */
export function isPgModule(m: unknown): m is PgModule {
  const o = m as Partial<PgModule> | null;
  return (
    !!o &&
    typeof o === 'object' &&
    typeof o.Client === 'function' &&
    typeof o.Pool === 'function' &&
    typeof o.types === 'object'
  );
}

/** `pg` as the application resolves it: from its main script's folder, else from the working directory, else ours. */
export function applicationPg(): PgModule {
  const bases = [
    process.argv[1] ? resolve(process.argv[1]) : undefined,
    resolve('package.json'),
    import.meta.filename,
  ].filter((b): b is string => !!b);
  let lastError: unknown;
  for (const base of bases) {
    try {
      const m = createRequire(base)('pg') as unknown;
      return isPgModule(m) ? m : (m as { default: PgModule }).default;
    } catch (e) {
      lastError = e;
    }
  }
  throw lastError;
}

/** When the tables get instrumented, and whether a connection's statements are recorded yet. */
class Gate {
  private pending: Promise<{ missing: string[]; hint: string } | undefined> | undefined;
  private failed: unknown;
  private readonly named: RegExp | undefined;

  constructor(
    readonly recorder: DriverRecorder,
    readonly tables: string[] | undefined,
  ) {
    this.named = tables && tables.length > 0 ? mentioning(tables) : undefined;
  }

  /** True when every statement is to be recorded (no lazy instrumentation, or done). */
  get open(): boolean {
    return this.tables === undefined || this.recorder.instrumented;
  }

  /**
   * Before a statement of a connection not yet recorded: instruments the tables when this statement reads or
   * writes, the connection is outside a transaction and every table exists. Several connections wait for one try.
   */
  async prepare(raw: pg.ClientBase, text: string, idle: boolean): Promise<void> {
    if (this.open || this.recorder.closed) return;
    if (this.failed !== undefined) throw this.failed;
    const start = leadingWords(text);
    if (!idle || !(BEGINS.test(start) || (READS_OR_WRITES.test(start) && this.named?.test(text)))) return;
    this.pending ??= this.tryInstrument(raw).finally(() => {
      this.pending = undefined;
    });
    const missing = await this.pending;
    // a statement on a table to record runs unrecorded while another is missing: said once, not silently
    if (missing && !BEGINS.test(start))
      this.recorder.warn(
        `${missing.missing.join(', ')} ${missing.missing.length === 1 ? 'does' : 'do'} not exist (yet): statements ` +
          `on the tables to record run unrecorded until every one exists${missing.hint}`,
        'tables-missing',
      );
  }

  /** Instruments the tables if they all exist; else what is missing. */
  private async tryInstrument(raw: pg.ClientBase): Promise<{ missing: string[]; hint: string } | undefined> {
    const tables = this.tables!;
    try {
      const missing = await missingTables(raw, tables);
      if (this.recorder.instrumented) return undefined;
      if (missing.missing.length > 0) return missing;
      await this.recorder.instrument(raw, tables);
      return undefined;
    } catch (e) {
      this.failed = e; // a table that cannot be recorded: every later statement says so
      throw e;
    }
  }
}

/** One gate per recorder, so that drivers over several copies of pg instrument the tables once. */
const gates = new WeakMap<DriverRecorder, Gate>();

function gateOf(recorder: DriverRecorder, tables: string[] | undefined): Gate {
  let gate = gates.get(recorder);
  if (!gate || (gate.tables === undefined && tables !== undefined)) {
    gate = new Gate(recorder, tables);
    gates.set(recorder, gate);
  }
  return gate;
}

/** Whether a module is a recording driver made here. */
export function isRecordingDriver(m: unknown): boolean {
  return !!m && typeof m === 'object' && (m as Record<symbol, unknown>)[WRAPPED] === true;
}

/** The recording client behind each client of a recording driver, once it has one (recordingOf). */
const recordings = new WeakMap<object, RecordingClient>();

/** The recording client (and so the session) behind a client of a recording driver, once it records; undefined
 *  before, or for another client. */
export function recordingOf(client: object): RecordingClient | undefined {
  return recordings.get(client);
}

/** A view of a client for the Session: pg's own query() (not the override) and the same events and state. */
function rawView(client: AnyClient, baseQuery: (...args: unknown[]) => unknown): pg.ClientBase {
  const view = Object.create(client) as Record<string, unknown>;
  view.query = (...args: unknown[]) => baseQuery.apply(client, args);
  // methods that write state must run on the client itself, not on the view (which would get own properties)
  for (const m of [
    'on',
    'once',
    'off',
    'addListener',
    'removeListener',
    'removeAllListeners',
    'emit',
    'connect',
    'end',
    'release',
    'setTypeParser',
  ]) {
    const f = client[m];
    if (typeof f === 'function') view[m] = (...args: unknown[]) => f.apply(client, args);
  }
  return view as unknown as pg.ClientBase;
}

type Callback = (err: Error | null, result?: unknown) => void;

/** pg's query() arguments: (text|config, values?, callback?); the callback may also be config.callback. */
function splitArgs(args: unknown[]): { config: unknown; values: unknown; cb: Callback | undefined; text: string } {
  let [config, values, cb] = args as [unknown, unknown, unknown];
  if (typeof values === 'function') {
    cb = values;
    values = undefined;
  }
  const c = config as { text?: unknown; callback?: unknown } | null;
  if (c && typeof c === 'object' && typeof c.callback === 'function') {
    cb ??= c.callback;
    const { callback: _omit, ...rest } = c as Record<string, unknown>;
    config = rest;
  }
  const text = typeof config === 'string' ? config : typeof c?.text === 'string' ? c.text : '';
  return { config, values, cb: cb as Callback | undefined, text };
}

/**
 * The recording driver for a Recorder: a module with pg's shape whose Client and Pool record. Each pooled or
 * standalone connection is one session of the history.
 */
export function recordingDriver(recorder: DriverRecorder, options: DriverOptions = {}): PgModule {
  const real = options.pg ?? applicationPg();
  if (!isPgModule(real))
    throw new TypeError('recordingDriver: options.pg is not the pg module (no Client, Pool and types)');
  if (isRecordingDriver(real)) throw new TypeError('recordingDriver: this pg module records already');
  const gate = gateOf(
    recorder,
    options.tables?.map((t) => t.trim()).filter((t) => t !== ''),
  );
  const BaseClient = real.Client as unknown as AnyClientClass;
  const baseQuery = BaseClient.prototype.query as (...args: unknown[]) => unknown;

  class Client extends BaseClient {
    #raw: pg.ClientBase | undefined;
    #recording: RecordingClient | undefined;
    /** Every statement of this connection goes through the recorder from now on. */
    #routed = false;
    /** Statements waiting for the gate (kept in order behind #tail). */
    #waiting = 0;
    #tail: Promise<unknown> = Promise.resolve();

    get #view(): pg.ClientBase {
      return (this.#raw ??= rawView(this, baseQuery));
    }

    get #recorded(): RecordingClient {
      if (!this.#recording) recordings.set(this, (this.#recording = recorder.client(this.#view)));
      return this.#recording;
    }

    #idle(): boolean {
      const s = typeof this.getTransactionStatus === 'function' ? this.getTransactionStatus() : null;
      return s === null || s === 'I';
    }

    override query(...args: unknown[]): unknown {
      const first = args[0] as { submit?: unknown } | null;
      const submittable = !!first && typeof first === 'object' && typeof first.submit === 'function';
      if (!this.#routed && this.#waiting === 0 && gate.open && (submittable || this.#idle())) this.#routed = true;
      if (this.#routed) return (this.#recorded.query as (...a: unknown[]) => unknown)(...args);
      if (submittable) return baseQuery.apply(this, args); // not recorded yet: as pg
      // not recorded yet: wait for the gate (it may instrument the tables first), in this connection's order
      const { config, values, cb, text } = splitArgs(args);
      this.#waiting++;
      const run = async (): Promise<unknown> => {
        try {
          if (!this.#routed) {
            await gate.prepare(this.#view, text, this.#idle());
            if (gate.open && this.#idle()) this.#routed = true;
          }
          return this.#routed
            ? await this.#recorded.query(config as string, values as unknown[])
            : await (baseQuery.call(this, config, values) as Promise<unknown>);
        } finally {
          this.#waiting--;
        }
      };
      const p = this.#tail.then(run, run);
      this.#tail = p.catch(() => undefined);
      if (!cb) return p;
      p.then(
        (r) => cb(null, r),
        (e) => cb(e as Error),
      );
      return undefined;
    }
  }

  const BasePool = real.Pool as unknown as new (options?: Record<string, unknown>) => object;
  class Pool extends BasePool {
    constructor(poolOptions?: Record<string, unknown>) {
      super({ ...(poolOptions ?? {}), Client });
    }
  }

  // pg's own module underneath (types, defaults, escapeIdentifier, DatabaseError, ... are the same objects)
  const driver = Object.assign(Object.create(real) as object, real, { Client, Pool, recorder, [WRAPPED]: true });
  // pg.native would be unrecorded connections (TypeORM and Sequelize take it when pg-native is installed)
  Object.defineProperty(driver, 'native', { value: null, enumerable: false });
  return driver as unknown as PgModule;
}
