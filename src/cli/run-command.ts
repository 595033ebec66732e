/**
 * `isocheck run WORKLOAD`: run a benchmark workload against PostgreSQL with a per-transaction-type isolation
 * configuration, record the client history, check the application's invariants and (with --check) the history.
 *
 *   --out/--report checked -> open database (embedded or --db) -> fresh database -> schema -> generate CSVs
 *   (seeded) -> load -> Recorder.instrument -> N sessions × T transactions (BEGIN at the configured level, the
 *   workload's statements, COMMIT; 40001/40P01 retried as new attempts) -> end line -> invariants -> check
 *
 * Every random choice comes from seedrandom: data from the seed, each session's client from `seed/session/s`,
 * so one session and one seed always give the same transactions.
 *
 * Stopping early (one cause, the first): a signal (RunOptions.signal, from the CLI's watcher), the database going
 * away (a session's connection lost), or any other error in a session. Then, at once and synchronously:
 * Recorder.interrupt() writes each transaction still open (`unknown` once its COMMIT was sent, else `aborted`) and
 * the `end` line, and every connection is closed (the server rolls back what they hold; nothing more is sent).
 * The sessions unwind and the run throws: RunInterrupted (exit 128+signal), DatabaseLostError (an InputError:
 * one line, exit 2), or the session's own error. Every pg client has an 'error' listener: pg emits 'error' on an
 * idle connection when the server goes away, which would otherwise crash the process.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import seedrandom from 'seedrandom';
import { InputError } from '../history/input-errors.js';
import type { IsolationLevel } from '../history/format.js';
import { openDatabase, type Database } from '../db/connect.js';
import { withDatabase } from '../db/topology.js';
import { Recorder } from '../recorder/index.js';
import { RecorderStoppedError, type InterruptResult } from '../recorder/recorder.js';
import { sqlStateConnectionLoss, sqlStateOf } from '../recorder/sqlstate.js';
import {
  getWorkload,
  workloadNames,
  beginStatement,
  levelFor,
  pickType,
  RollbackError,
  type Level,
  type Workload,
} from '../../workloads/index.js';
import { parse as parseConnectionString } from 'pg-connection-string';
import { abortSignalName, checkOutputFile, InterruptedError, watchSignals } from './interrupt.js';
import { TopologyRun, topologyOf, type TopologyRunOptions } from './run-topology.js';
import { ClientCoordinator, type ClientSpec } from './run-clients.js';

export { checkOutputFile };

/** With `topology`: the run's servers are a cluster isocheck builds (run-topology.ts). */
export interface RunOptions extends TopologyRunOptions {
  workload: string;
  db?: string;
  sessions?: number;
  txns?: number;
  seed?: string;
  /** A named configuration (ser, si, rc, ser+rc, si+rc) or `Type=LEVEL,...,*=LEVEL` with SER, SI, RC. */
  iso?: string;
  /** The levels recorded as declared, when they differ from the ones run (same syntax as iso). */
  declare?: string;
  scale?: number;
  out?: string;
  /** Print progress (a bar on a terminal). */
  progress?: boolean;
  maxRetries?: number;
  /** Messages (default: stderr). */
  log?: (line: string) => void;
  /** Stops the run (the CLI aborts it on SIGINT/SIGTERM/SIGHUP, with the signal's name as the reason). */
  signal?: AbortSignal;
  /** Called synchronously when `signal` aborts, with the line saying what the history holds. */
  onInterrupt?: (line: string) => void;
  /** Keep the run's database on the server afterwards (default: dropped). */
  keepDb?: boolean;
  /** Run as client K of N processes against the database of `db` as it is (run-clients.ts: the protocol). */
  client?: ClientSpec;
  /** How long a client waits for the others (seconds, default 120). */
  clientWait?: number;
}

export interface TypeSummary {
  committed: number;
  aborted: number;
  retried: number;
}

export interface RunSummary {
  file: string;
  workload: string;
  config: Record<string, Level>;
  declared?: Record<string, Level>;
  /** Types that ran at another level than asked, and where (a hot standby refuses SERIALIZABLE: run-topology.ts). */
  ranAt?: Record<string, string>;
  database: string;
  seed: string;
  sessions: number;
  txnsPerSession: number;
  scale: number;
  committed: number;
  /** Aborted by the database (after which the attempt was retried, or given up). */
  abortedByDatabase: number;
  /** Rolled back by the application (e.g. TPC-C's invalid item). */
  rolledBack: number;
  retried: number;
  perType: Record<string, TypeSummary>;
  seconds: number;
  invariantViolations: string[];
  /** Why the invariants were not checked (a client other than 1 of --client; client 1 when another never finished). */
  invariantsSkipped?: string;
}

const PG_LEVELS: Record<string, Level> = {
  SER: 'SER',
  SERIALIZABLE: 'SER',
  SI: 'SI',
  'REPEATABLE READ': 'SI',
  RR: 'SI',
  RC: 'RC',
  'READ COMMITTED': 'RC',
};

/** A named configuration of the workload, or `Type=LEVEL,...,*=LEVEL`. */
export function parseConfig(workload: Workload, spec: string): Record<string, Level> {
  if (workload.configs[spec]) return workload.configs[spec];
  if (!spec.includes('=')) {
    const level = PG_LEVELS[spec.toUpperCase()];
    if (level) return { '*': level };
    throw new InputError(
      `--iso ${spec}: not a configuration of ${workload.name} (${Object.keys(workload.configs).join(', ')}) ` +
        `nor a level (SER, SI, RC)`,
    );
  }
  const config: Record<string, Level> = {};
  for (const part of spec.split(',')) {
    const [type, levelText] = part.split('=').map((s) => s.trim());
    const level = PG_LEVELS[(levelText ?? '').toUpperCase()];
    if (!level) throw new InputError(`--iso ${spec}: "${levelText}" is not SER, SI or RC`);
    if (type !== '*' && !(type in workload.mix))
      throw new InputError(
        `--iso ${spec}: ${workload.name} has no transaction type "${type}" ` +
          `(types: ${Object.keys(workload.mix).join(', ')})`,
      );
    config[type] = level;
  }
  if (!config['*'])
    for (const t of Object.keys(workload.mix))
      if (!config[t]) throw new InputError(`--iso ${spec}: no level for ${t}; add *=LEVEL`);
  return config;
}

class Progress {
  private last = 0;
  /** A bar drawn on a terminal without its newline yet. */
  private open = false;
  constructor(
    private readonly total: number,
    private enabled: boolean,
  ) {}
  /** Ends the bar's line (before other messages, when the run stops early). */
  stop(): void {
    if (this.open) process.stderr.write('\n');
    this.open = false;
    this.enabled = false;
  }
  update(done: number, note: string): void {
    if (!this.enabled) return;
    const now = Date.now();
    if (done < this.total && now - this.last < 100) return;
    this.last = now;
    const width = 30;
    const filled = Math.round((done / this.total) * width);
    const line = `  [${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${done}/${this.total} transactions ${note}`;
    if (process.stderr.isTTY) {
      process.stderr.write(`\r${line}${done >= this.total ? '\n' : ''}`);
      this.open = done < this.total;
    } else if (done >= this.total || done % Math.max(1, Math.floor(this.total / 10)) === 0)
      process.stderr.write(`${line}\n`);
  }
}

/** Serialization failure, deadlock, and lock_timeout (on shards, the end of a wait no deadlock detector sees). */
const RETRYABLE = new Set(['40001', '40P01', '55P03']);

let runCounter = 0;

/** The run was stopped by a signal; the message says what the history holds. */
export class RunInterrupted extends InterruptedError {
  override name = 'RunInterrupted';
}

/** The database went away (server stopped or killed, connections terminated): one line, exit 2. */
export class DatabaseLostError extends InputError {
  override name = 'DatabaseLostError';
}

/** True when an error means the connection to the server is gone (not a statement's own error). */
export function isConnectionLost(err: unknown): boolean {
  if (err instanceof RecorderStoppedError || err instanceof InputError) return false;
  const e = err as { code?: unknown; message?: unknown } | null;
  const code = e?.code;
  // before the SQLSTATEs: EPIPE has five letters too
  if (
    typeof code === 'string' &&
    /^(ECONNREFUSED|ECONNRESET|ECONNABORTED|EPIPE|ETIMEDOUT|EHOSTUNREACH|ENETUNREACH|ENOTCONN)$/.test(code)
  )
    return true;
  const bySqlState = sqlStateConnectionLoss(err);
  if (bySqlState !== undefined) return bySqlState;
  return (
    typeof e?.message === 'string' &&
    /Connection terminated|connection error|not queryable|Client was closed|timeout expired/i.test(e.message)
  );
}

/**
 * Why the connections went away, for the one-line report: the error that stopped the run when the server gave it,
 * else the first error from the server that any connection or session saw (57P01 "terminating connection due to
 * administrator command"), else the first error of all. Every error is offered because the order is a race: pg hands
 * the server's FATAL to the query in flight, then reports the socket's end as a bare "Connection terminated
 * unexpectedly" 'error' event, which can reach us first.
 */
export class LossReason {
  #first: unknown;
  #server: unknown;
  offer(err: unknown): void {
    if (this.#first === undefined) this.#first = err;
    if (this.#server === undefined && sqlStateOf(err) !== undefined) this.#server = err;
  }
  why(cause: unknown): unknown {
    return sqlStateOf(cause) !== undefined ? cause : (this.#server ?? this.#first ?? cause);
  }
}

/** The first line of an error's message, for one-line reports. */
function reasonOf(err: unknown): string {
  const m = (err as { message?: unknown } | null)?.message;
  return (typeof m === 'string' && m.trim() ? m : String(err)).split('\n')[0].trim();
}

/** `1 transaction` / `2 transactions`. */
const txns = (n: number) => `${n} transaction${n === 1 ? '' : 's'}`;

function withTimeout<T>(p: Promise<T>, ms: number): Promise<T | undefined> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([p, new Promise<undefined>((res) => (timer = setTimeout(() => res(undefined), ms)))]).finally(
    () => clearTimeout(timer),
  );
}

type StopCause =
  | { kind: 'signal'; signal: NodeJS.Signals }
  | { kind: 'lost'; error: unknown }
  | { kind: 'error'; error: unknown };

export async function runWorkload(options: RunOptions, database?: Database): Promise<RunSummary> {
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  let workload: Workload;
  try {
    workload = getWorkload(options.workload);
  } catch {
    throw new InputError(`unknown workload "${options.workload}" (available: ${workloadNames().join(', ')})`);
  }
  const sessions = options.sessions ?? (options.topology ? 8 : 3);
  // a topology's anomalies need more concurrent transactions than a default run has
  const txnsPerSession = options.txns ?? (options.topology ? 100 : 10);
  const seed = options.seed ?? '1';
  const scale = options.scale ?? 1;
  const maxRetries = options.maxRetries ?? 20;
  const client = options.client;
  if (client && !options.db && !process.env.DATABASE_URL && !database)
    throw new InputError(
      `--client ${client.k}/${client.n} needs --db URL: the database the client processes share (client 1 sets it up)`,
    );
  /** Client K's sessions are (K-1)·S+1 .. K·S: wids never collide across the clients' files (run-clients.ts). */
  const firstSession = client ? (client.k - 1) * sessions + 1 : 1;
  const coordinator =
    client &&
    new ClientCoordinator({
      client,
      run:
        `${options.workload} ` +
        `--iso ${options.iso ?? 'ser'}${options.declare ? ` --declare ${options.declare}` : ''} --scale ${scale} ` +
        `--seed ${seed} --sessions ${sessions}`,
      waitSeconds: options.clientWait,
      stopped: () => stopCause !== undefined,
      log,
    });
  if (!Number.isInteger(sessions) || sessions < 1) throw new InputError(`--sessions must be a positive integer`);
  if (!Number.isInteger(txnsPerSession) || txnsPerSession < 0)
    throw new InputError(`--txns must be a non-negative integer`);
  const configName = options.iso ?? 'ser';
  const config = parseConfig(workload, configName);
  const declared = options.declare ? parseConfig(workload, options.declare) : undefined;
  if (options.topology && database)
    throw new InputError(`--topology ${options.topology}: the run makes its own database connection`);
  const cluster = options.topology ? new TopologyRun(options, workload, log) : undefined;
  const file =
    options.out ??
    join(
      'histories',
      'runs',
      `${workload.name}-${configName.replace(/[^a-z0-9+]+/gi, '_')}` +
        `${declared ? `-as-${options.declare!.replace(/[^a-z0-9+]+/gi, '_')}` : ''}` +
        `-s${sessions}-t${txnsPerSession}-seed${seed}${client ? `-client${client.k}of${client.n}` : ''}.ndjson`,
    );
  checkOutputFile(file, '--out');

  // ---- stopping early ---------------------------------------------------------------------------------------
  let recorder: Recorder | undefined;
  let runFinished = false;
  let stopCause: StopCause | undefined;
  let inFlight: InterruptResult = { unknown: 0, aborted: 0 };
  /** Every connection but `admin` (kept to drop the database): closed when the run stops. */
  const connections: pg.Client[] = [];
  let progress: Progress | undefined;
  /** Why the connections went away: every error a session or connection sees is offered (LossReason). */
  const lossReason = new LossReason();
  const interruptedLine = (signal: NodeJS.Signals): string => {
    if (!recorder?.instrumented) return `interrupted (${signal}) before the run started; nothing was recorded`;
    const n = recorder.transactions;
    const held = [
      inFlight.unknown > 0 ? `${inFlight.unknown} in flight written as unknown` : '',
      inFlight.aborted > 0
        ? `${inFlight.aborted}${inFlight.unknown > 0 ? ' as' : ' in flight written as'} aborted`
        : '',
    ]
      .filter(Boolean)
      .join(', ');
    return (
      `interrupted (${signal})${runFinished ? ' after the run' : ''}: ${txns(n)} recorded ` +
      `in ${file}${held ? ` (${held})` : ''}; check it with isocheck check ${file}`
    );
  };
  const lostLine = (error: unknown): string => {
    const why = reasonOf(lossReason.why(error));
    if (!recorder?.instrumented) return `the database went away before the run started (${why}); nothing was recorded`;
    const n = recorder.transactions;
    if (runFinished) return `the database went away after the run (${why}); the history of ${txns(n)} is in ${file}`;
    const unknown = recorder.counts.unknown;
    return (
      `the database went away after ${txns(n)} (${why}); the history is ` +
      `in ${file}${unknown > 0 ? ` (${unknown} unknown: COMMIT sent, no answer)` : ''}; check it with isocheck ` +
      `check ${file}`
    );
  };
  const stop = (cause: StopCause): void => {
    if (cause.kind === 'lost') lossReason.offer(cause.error);
    if (stopCause) return;
    stopCause = cause;
    progress?.stop();
    if (recorder) {
      const reason =
        cause.kind === 'signal'
          ? `interrupted by ${cause.signal}`
          : cause.kind === 'lost'
            ? `the connection to the database was lost: ${reasonOf(cause.error)}`
            : `the run stopped: ${reasonOf(cause.error)}`;
      inFlight = recorder.interrupt(reason);
    }
    // the server rolls back what the connections hold; statements waiting for a lock are released
    for (const c of connections) c.end().catch(() => undefined);
  };
  const onAbort = (): void => {
    const signal = abortSignalName(options.signal);
    stop({ kind: 'signal', signal });
    options.onInterrupt?.(interruptedLine(signal));
  };
  if (options.signal?.aborted)
    throw new RunInterrupted(abortSignalName(options.signal), interruptedLine(abortSignalName(options.signal)));
  options.signal?.addEventListener('abort', onAbort, { once: true });
  /** A connection of the run, with an 'error' listener (the query that fails reports the problem). */
  const connection = (url: string): pg.Client => {
    const c = new pg.Client({ connectionString: url });
    c.on('error', (e) => lossReason.offer(e));
    connections.push(c);
    if (stopCause) c.end().catch(() => undefined);
    return c;
  };

  let db: Database | undefined;
  let admin: pg.Client | undefined;
  // Unique per run even when one process records several at once (the benchmark runs two in parallel).
  const dbName =
    `isocheck_${workload.name.replace(/[^a-z0-9]/g, '_')}_${process.pid}_` +
    `${Date.now().toString(36)}_${++runCounter}`;
  const dataDir = mkdtempSync(join(tmpdir(), 'isocheck-data-'));
  let created = false;
  const started = Date.now();
  try {
    db = database ?? (cluster ? await cluster.open() : await openDatabase({ db: options.db }));
    if (stopCause) throw new Error('stopped');
    log(`database: ${db.description}`);
    admin = new pg.Client({ connectionString: db.url });
    admin.on('error', () => undefined);
    await admin.connect();
    if (!client) await admin.query(`CREATE DATABASE ${admin.escapeIdentifier(dbName)}`);
    created = !client;
    const url = client ? db.url : withDatabase(db.url, dbName);
    await cluster?.prepareDatabase(dbName);
    const setup = connection(url);
    await setup.connect();
    const ctx = workload.context(scale);
    cluster?.context(ctx);
    try {
      if (coordinator && !coordinator.first)
        await coordinator.awaitSetup(setup); // client 1 sets up the database
      else {
        await (coordinator ? coordinator.createSchema(setup, workload.schema()) : setup.query(workload.schema()));
        const files = await workload.generate(dataDir, seed, scale);
        await workload.load(setup, files);
      }
      rmSync(dataDir, { recursive: true, force: true }); // loaded: not left behind if the process is killed later
      await cluster?.distribute(setup);
      if (stopCause) throw new Error('stopped');
      recorder = new Recorder({
        file,
        meta: {
          workload: workload.name,
          seed,
          scale,
          sessions,
          txnsPerSession,
          isolation: configName,
          config,
          ...(declared ? { declared: options.declare, declaredConfig: declared } : {}),
          runDatabase: client ? (parseConnectionString(url).database ?? '') : dbName,
          ...(client ? { client: `${client.k}/${client.n}`, firstSession } : {}),
          ...(cluster ? { topology: cluster.meta() } : {}),
          tool: 'isocheck run',
        },
        onWarning: (m) => log(`warning: ${m}`),
        firstSession,
      });
      await recorder.instrument(
        setup,
        workload.tables,
        cluster ? await cluster.instrumentOptions(connection) : undefined,
      );
      await coordinator?.ready(setup); // no client writes before every client has read the initial rows
    } finally {
      await setup.end().catch(() => undefined);
    }
    if (options.keepDb) log(`run database: ${dbName} (kept afterwards)`);

    const perType: Record<string, TypeSummary> = {};
    for (const t of Object.keys(workload.mix)) perType[t] = { committed: 0, aborted: 0, retried: 0 };
    let committed = 0,
      abortedByDatabase = 0,
      rolledBack = 0,
      retried = 0,
      done = 0;
    const bar = new Progress(sessions * txnsPerSession, options.progress ?? true);
    progress = bar;
    log(
      `running ${workload.name} ` +
        `(${configName}${declared ? `, declared ${options.declare}` : ''}): ${sessions} sessions ` +
        `× ${txnsPerSession} transactions, seed ${seed}, scale ${scale}`,
    );

    const clients: pg.Client[] = [];
    for (let s = 0; s < sessions; s++) {
      const c = connection(url);
      await c.connect();
      clients.push(c);
    }
    if (stopCause) throw new Error('stopped');
    const runSession = async (s: number): Promise<void> => {
      const rng = seedrandom(`${seed}/session/${firstSession + s}`);
      const client = cluster
        ? await cluster.sessionClient(recorder!, s, clients[s], connection)
        : recorder!.client(clients[s]);
      for (let i = 0; i < txnsPerSession; i++) {
        const type = pickType(workload.mix, rng);
        const level = levelFor(config, type);
        for (let attempt = 0; ; attempt++) {
          if (stopCause) return; // no new transaction
          client.label(type);
          if (declared) client.declareLevel(levelFor(declared, type) as IsolationLevel);
          try {
            await client.query(beginStatement(level));
            await workload.transaction(type, client, rng, ctx);
            await client.query('COMMIT');
            committed++;
            perType[type].committed++;
            break;
          } catch (e) {
            if (isConnectionLost(e)) lossReason.offer(e);
            if (stopCause) return; // stopped meanwhile: the recorder wrote this transaction already
            await client.query('ROLLBACK').catch(() => undefined);
            if (e instanceof RollbackError) {
              rolledBack++;
              perType[type].aborted++;
              break;
            }
            const code = (e as { code?: string }).code;
            if (code && RETRYABLE.has(code)) {
              abortedByDatabase++;
              perType[type].aborted++;
              if (attempt < maxRetries) {
                retried++;
                perType[type].retried++;
                continue;
              }
              break;
            }
            throw e;
          }
        }
        done++;
        bar.update(done, `(${committed} committed, ${abortedByDatabase} aborted by the database)`);
      }
    };
    // the first session to fail stops the others (their transactions in flight are written as they stand)
    await Promise.all(
      clients.map((_, s) =>
        runSession(s).catch((e: unknown) =>
          stop(isConnectionLost(e) ? { kind: 'lost', error: e } : { kind: 'error', error: e }),
        ),
      ),
    );
    if (stopCause) throw new Error('stopped');
    recorder.finish();
    runFinished = true;

    const check = connection(url);
    await check.connect();
    let invariantViolations: string[] = [];
    let invariantsSkipped: string | undefined;
    try {
      if (coordinator && !(await coordinator.done(check)))
        invariantsSkipped = 'not checked: some client did not finish in time';
      else if (coordinator && !coordinator.first) invariantsSkipped = 'checked by client 1 once every client is done';
      else invariantViolations = await workload.invariants(check, ctx);
    } finally {
      await check.end().catch(() => undefined);
    }
    if (stopCause) throw new Error('stopped');
    const ranAt = cluster?.ranAt(config);
    return {
      file,
      workload: workload.name,
      config,
      declared,
      database: db.description,
      seed,
      sessions,
      txnsPerSession,
      scale,
      committed,
      abortedByDatabase,
      rolledBack,
      retried,
      perType,
      ...(ranAt ? { ranAt } : {}),
      seconds: (Date.now() - started) / 1000,
      invariantViolations,
      ...(invariantsSkipped ? { invariantsSkipped } : {}),
    };
  } catch (e) {
    // the first cause wins: a signal, a lost server, or this error
    stop(isConnectionLost(e) ? { kind: 'lost', error: e } : { kind: 'error', error: e });
    const cause = stopCause!;
    if (cause.kind === 'signal') throw new RunInterrupted(cause.signal, interruptedLine(cause.signal));
    if (cause.kind === 'lost') throw new DatabaseLostError(lostLine(cause.error));
    throw cause.error;
  } finally {
    options.signal?.removeEventListener('abort', onAbort);
    progress?.stop();
    for (const c of connections)
      await withTimeout(
        c.end().catch(() => undefined),
        5000,
      );
    if (recorder && !recorder.instrumented) rmSync(file, { force: true }); // an empty file: nothing was recorded
    if (admin && created && !options.keepDb) {
      await withTimeout(
        admin.query(`DROP DATABASE IF EXISTS ${admin.escapeIdentifier(dbName)} WITH (FORCE)`).catch(() => undefined),
        10_000,
      );
    }
    if (admin)
      await withTimeout(
        admin.end().catch(() => undefined),
        5000,
      );
    rmSync(dataDir, { recursive: true, force: true });
    if (db && !database) await db.close();
  }
}

export function renderRunSummary(r: RunSummary): string {
  const lines = [
    `${r.workload}: ${r.committed} committed, ${r.abortedByDatabase} aborted by the database (${r.retried} ` +
      `retried), ${r.rolledBack} rolled back by the application, in ${r.seconds.toFixed(1)} s`,
  ];
  for (const [type, s] of Object.entries(r.perType)) {
    if (s.committed + s.aborted > 0)
      lines.push(
        `  ${type.padEnd(24)} ${String(s.committed).padStart(4)} committed ${String(s.aborted).padStart(4)} ` +
          `aborted ${String(s.retried).padStart(4)} retried  ` +
          `(${levelFor(r.config, type)}${r.ranAt?.[type] ? `, ran at ${r.ranAt[type]}` : ''}` +
          `${r.declared ? `, declared ${levelFor(r.declared, type)}` : ''})`,
      );
  }
  lines.push(
    r.invariantsSkipped
      ? `  application invariants: ${r.invariantsSkipped}`
      : r.invariantViolations.length === 0
        ? '  application invariants: all hold'
        : `  application invariants: ${r.invariantViolations.length} VIOLATED`,
  );
  for (const v of r.invariantViolations.slice(0, 10)) lines.push(`    - ${v}`);
  lines.push(`  history: ${r.file}`);
  return lines.join('\n');
}

/** The options of `isocheck run` as the command line gives them: the run's own (RunOptions), and what to do after. */
export interface RunCommandOptions
  extends Pick<
    RunOptions,
    'db' | 'sessions' | 'txns' | 'seed' | 'iso' | 'declare' | 'scale' | 'out' | 'keepDb' | 'client' | 'clientWait'
  > {
  /** Check the history once recorded. */
  check?: boolean;
  /** Also write the HTML report of the check to this file. */
  report?: string;
  /** The check's time limit, in seconds. */
  timeout?: number;
  /** Print JSON instead of text. */
  json?: boolean;
}

/**
 * `isocheck run`: the run, then (with --check or --report) the check; prints the summary and returns the exit
 * status (0, 1 invariants violated or inconsistent, 3 unknown, 2 bad input; 128+signal when interrupted, after
 * one line saying what the history holds).
 */
export async function runCommand(workload: string, opts: RunCommandOptions & TopologyRunOptions): Promise<number> {
  if (opts.client && (opts.check || opts.report)) {
    // one client's file reads the others' writes: alone, those reads name writes it does not hold (garbage reads)
    throw new InputError(
      `--client with ${opts.check ? '--check' : '--report'}: one client's history reads writes recorded in ` +
        `the others'; merge the N files (isocheck merge), then check the merged history`,
    );
  }
  if (opts.report) checkOutputFile(opts.report, '--report');
  const watch = watchSignals();
  try {
    let summary: RunSummary;
    try {
      summary = await runWorkload({
        workload,
        db: opts.db,
        sessions: opts.sessions,
        txns: opts.txns,
        seed: opts.seed,
        iso: opts.iso,
        declare: opts.declare,
        scale: opts.scale,
        out: opts.out,
        keepDb: opts.keepDb,
        client: opts.client,
        clientWait: opts.clientWait,
        progress: !opts.json,
        signal: watch.signal,
        ...topologyOf(opts),
        onInterrupt: (line) => {
          watch.lastWords = () => line;
        },
      });
    } catch (e) {
      if (e instanceof InterruptedError) {
        process.stderr.write(`isocheck: ${e.message}\n`);
        return e.exitCode;
      }
      throw e;
    }
    const afterRun = (): number | undefined => {
      if (!watch.received) return undefined;
      process.stderr.write(
        `isocheck: interrupted (${watch.received}) after the run: the history is in ${summary.file}; check it ` +
          `with isocheck check ${summary.file}\n`,
      );
      return new InterruptedError(watch.received, '').exitCode;
    };
    let code = summary.invariantViolations.length > 0 ? 1 : 0;
    let check: Record<string, unknown> | undefined;
    if (opts.check || opts.report) {
      const { checkFile, jsonOf, exitCodeOf } = await import('./check-command.js');
      const { renderResult } = await import('../checker/explain/explain.js');
      const r = await checkFile(summary.file, { timeout: opts.timeout, report: opts.report });
      const stopped = afterRun();
      if (stopped !== undefined) return stopped;
      check = jsonOf(r);
      if (!opts.json)
        console.log(r.result ? renderResult(summary.file, r.result) : `${summary.file}: ERROR ${r.error}`);
      if (!opts.json && r.report) console.log(`report: ${r.report}`);
      code = Math.max(code, exitCodeOf([r]));
    }
    const stopped = afterRun();
    if (stopped !== undefined) return stopped;
    if (opts.json) console.log(JSON.stringify({ ...summary, ...(check ? { check } : {}) }, null, 2));
    else console.log(renderRunSummary(summary));
    return code;
  } finally {
    watch.dispose();
  }
}
