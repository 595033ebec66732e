/**
 * Runs isolation-tester specs (spec.ts) against PostgreSQL, records each permutation's client history and checks it.
 *
 *   per spec file: a fresh database (CREATE DATABASE on the server, dropped afterwards; without the privilege to
 *   create one, the given database, recording only the tables the setup adds)
 *   per permutation:
 *     spec setup on an unrecorded control connection -> tables it created (catalog, public schema)
 *     -> Recorder.instrument -> every statement of the permutation planned up front (refusals reported before
 *        anything runs) -> one connection per session, wrapped by recorder.client()
 *     -> session setups -> the steps, in order: each is sent without awaiting and followed until it completes
 *        or its backend waits for a lock held by another session (pg_isolation_test_session_is_blocked, polled on
 *        a monitoring connection, as the isolation tester does); a waiting step is left to finish later
 *     -> session teardowns -> session connections closed (an open transaction is rolled back: recorded aborted)
 *     -> spec teardown -> recorder.finish() -> checkHistory (recorded levels, or --iso)
 *
 * Decisions:
 * - Like the isolation tester: before a step whose session still waits on an earlier step, wait for that step;
 *   after each step, check whether waiting steps finished (letting each settle: done or waiting again). A step
 *   error (40001, deadlock, ...) is reported as `step X: ERROR: ...` and the session goes on. A wait that cannot
 *   end (the session's next step is the only thing that could release it) is cancelled after `stallMs`, as the
 *   isolation tester cancels steps after its timeout.
 * - A step holding several statements is sent statement by statement (the recorder records one statement per
 *   query). Outside a transaction block, each then commits on its own instead of in one implicit transaction.
 * - Statements the recorder refuses (InputError: data-modifying WITH, MERGE, COPY, tables without a key, ...) make the
 *   permutation unrecordable: verdict `error` with the spec, the step and the recorder's reason. A refusal found
 *   by planning depends only on the statement and the tables the setup creates, so it is remembered for the
 *   spec's other permutations (they are reported the same way without being run).
 * - Stopping early (ScenarioOptions.signal aborted by SIGINT/SIGTERM, or the server gone): the permutation being
 *   recorded is interrupted at once (Recorder.interrupt(): transactions in flight written `unknown` once their
 *   COMMIT was sent, else `aborted`, then the `end` line), its session connections closed, and its history kept
 *   (not checked); the run throws ScenarioInterrupted, or an InputError saying the database went away. Every pg
 *   client has an 'error' listener (pg emits 'error' on idle connections when the server goes away).
 * - --topology shards|replica (cluster.ts): the specs run on a cluster built on embedded servers; after the setup
 *   the tables are sharded (shards), each session's client is a named history session on the coordinator, or on a
 *   standby for a session that only reads (replica); how sessions map onto servers is said in cluster.ts.
 */
import { accessSync, constants as fsConstants, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join, resolve } from 'node:path';
import pg from 'pg';
import { parseSync } from 'libpg-query';
import { InputError } from '../history/input-errors.js';
import { readHistory } from '../history/reader.js';
import { loadPredicateParser } from '../sql/predicate.js';
import { checkHistory, type CheckResult, type Verdict } from '../checker/check.js';
import { parseIsoOverride, type IsoOverride } from '../checker/levels.js';
import { openDatabase, type Database } from '../db/connect.js';
import { withDatabase } from '../db/topology.js';
import { Recorder, type RecordingClient } from '../recorder/index.js';
import type { InterruptResult } from '../recorder/recorder.js';
import { abortSignalName, InterruptedError } from '../recorder/interrupted.js';
import { makeFolders, WRITE_FAILURES, writeFailure } from '../history/folders.js';
import { loadRewriter } from '../recorder/rewrite.js';
import { parseSpec, permutationsOf, type ScenarioSpec, type Step } from './spec.js';
import {
  checkTopologyOptions,
  startScenarioCluster,
  type ScenarioClient,
  type ScenarioCluster,
  type ScenarioTopologyOptions,
} from './cluster.js';

export interface ScenarioOptions extends ScenarioTopologyOptions {
  /** Server URL (default: DATABASE_URL, else an embedded server). */
  db?: string;
  /** Check at other levels than recorded (`SER`, or `Label=LEVEL,...,*=LEVEL`). */
  iso?: string;
  /** Checker time limit per history, in seconds. */
  timeout?: number;
  /** Directory for the histories (default: a new temp directory). */
  out?: string;
  /** Run only this permutation (1-based) of each spec. */
  permutation?: number;
  /**
   * How long the runner waits for a step whose session's next step is due before cancelling it (ms; default 10 s,
   * or twice the server's deadlock_timeout plus a second if longer, so that deadlocks are resolved by the server).
   */
  stallMs?: number;
  /** Progress and notices (default: stderr). */
  log?: (line: string) => void;
  /** Print progress for specs with many permutations (default true). */
  progress?: boolean;
  /** Called with each permutation's result as soon as it is known. */
  onResult?: (r: PermutationResult) => void;
  /** Stops the run (the CLI aborts it on SIGINT/SIGTERM/SIGHUP, with the signal's name as the reason). */
  signal?: AbortSignal;
  /** Called synchronously when `signal` aborts, with the line saying what was recorded. */
  onInterrupt?: (line: string) => void;
}

/** The run was stopped by a signal; the message says what was recorded and where. */
export class ScenarioInterrupted extends InterruptedError {
  override name = 'ScenarioInterrupted';
}

/** The permutation being recorded, for stopping it from outside (a signal). */
interface Current {
  spec: string;
  permutation: number;
  file: string;
  recorder: Recorder;
  sessions: Map<string, SessionRt>;
  inFlight?: InterruptResult;
}

/** What a run shares across specs: results so far, the permutation being recorded, why it stopped. */
interface RunState {
  done: number;
  outDir: string;
  current?: Current;
  /** The permutation that was stopped part way (its history kept, with its end line). */
  stopped?: Current;
  signal?: NodeJS.Signals;
}

/** A signal came, or the permutation being recorded was stopped: nothing more is run. */
const halted = (state: RunState): boolean => state.signal !== undefined || state.stopped !== undefined;

const plural = (n: number, what: string) => `${n} ${what}${n === 1 ? '' : 's'}`;

/** Interrupts the permutation being recorded: in-flight transactions written, end line, connections closed. */
function stopCurrent(state: RunState, reason: string): void {
  const cur = state.current;
  if (!cur || cur.recorder.stopReason !== undefined) return;
  // before instrument() wrote the header, interrupt() only closes the file (nothing recorded: it is removed)
  if (cur.recorder.instrumented) state.stopped = cur;
  cur.inFlight = cur.recorder.interrupt(reason);
  for (const s of cur.sessions.values()) {
    s.closed = true;
    s.raw.end().catch(() => undefined);
  }
}

function interruptedLine(state: RunState): string {
  const head = `interrupted (${state.signal ?? 'SIGINT'}): ${plural(state.done, 'permutation')} done`;
  const cur = state.stopped;
  if (!cur?.recorder.instrumented) return `${head}; histories in ${state.outDir}`;
  const f = cur.inFlight ?? { unknown: 0, aborted: 0 };
  const held = [
    f.unknown > 0 ? `${f.unknown} in flight written as unknown` : '',
    f.aborted > 0 ? `${f.aborted}${f.unknown > 0 ? ' as' : ' in flight written as'} aborted` : '',
  ]
    .filter(Boolean)
    .join(', ');
  return (
    `${head}; ${cur.spec} permutation ${cur.permutation} stopped ` +
    `with ${plural(cur.recorder.transactions, 'transaction')} recorded ` +
    `in ${cur.file}${held ? ` (${held})` : ''}; histories in ${state.outDir}`
  );
}

function lostLine(state: RunState, e: unknown): string {
  const why = String((e as { message?: unknown })?.message ?? e).split('\n')[0];
  const cur = state.stopped;
  if (!cur?.recorder.instrumented)
    return (
      `the database went away after ${plural(state.done, 'permutation')} (${why}); histories recorded so far ` +
      `are in ${state.outDir}`
    );
  const unknown = cur.recorder.counts.unknown;
  return (
    `the database went away during ${cur.spec} permutation ${cur.permutation} ` +
    `after ${plural(cur.recorder.transactions, 'transaction')} (${why}); its history is ` +
    `in ${cur.file}${unknown > 0 ? ` (${unknown} unknown: COMMIT sent, no answer)` : ''}; histories ` +
    `in ${state.outDir}`
  );
}

export interface StepError {
  step: string;
  code?: string;
  message: string;
}

export interface PermutationResult {
  /** The spec's file name (without directories). */
  spec: string;
  /** The spec file as given. */
  specFile: string;
  /** 1-based, in the order of permutationsOf(spec). */
  permutation: number;
  steps: string[];
  /** The history file (absent when nothing was recorded). */
  file?: string;
  verdict: Verdict | 'error';
  /** Why the permutation could not be recorded or checked (verdict `error`). */
  error?: string;
  /** The step whose statement the recorder refused. */
  refusedStep?: string;
  result?: CheckResult;
  /** Step errors (serialization failures, deadlocks, ...), as the isolation tester prints them. */
  errors: StepError[];
  /** The isolation tester's view of the run: steps, results, waits, errors. */
  transcript: string[];
  /** Recorder warnings (partial reads, ...). */
  warnings: string[];
}

export interface ScenarioRun {
  results: PermutationResult[];
  outDir: string;
  database: string;
}

const POLL_MS = 2;
const DEFAULT_STALL_MS = 10_000;

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** The spec's name for files: its file name without `.spec`. */
function specName(file: string): string {
  return basename(file).replace(/\.spec$/, '');
}

/** The statements of a step (one query each); the text unchanged when it holds one. */
export function splitStatements(sql: string): string[] {
  let parsed: { stmts?: { stmt_location?: number; stmt_len?: number }[] };
  try {
    parsed = parseSync(sql) as typeof parsed;
  } catch {
    return [sql]; // the server reports the syntax error
  }
  const stmts = parsed.stmts ?? [];
  if (stmts.length <= 1) return [sql];
  const bytes = Buffer.from(sql, 'utf8');
  return stmts
    .map((s) => {
      const start = s.stmt_location ?? 0;
      const end = s.stmt_len ? start + s.stmt_len : bytes.length;
      return bytes.subarray(start, end).toString('utf8').trim();
    })
    .filter((s) => s.length > 0);
}

const oneLine = (sql: string) => sql.replace(/\s+/g, ' ').trim();

function errorOf(e: unknown): { code?: string; message: string } {
  const err = e as { code?: unknown; message?: unknown };
  return {
    ...(typeof err?.code === 'string' ? { code: err.code } : {}),
    message: typeof err?.message === 'string' ? err.message : String(e),
  };
}

function renderRows(r: pg.QueryResult): string[] {
  if (!r.fields || r.fields.length === 0) return [];
  const cell = (v: unknown) =>
    v === null || v === undefined
      ? ''
      : v instanceof Date
        ? v.toISOString()
        : typeof v === 'object'
          ? JSON.stringify(v)
          : String(v);
  const out = [r.fields.map((f) => f.name).join('|')];
  for (const row of r.rows as Record<string, unknown>[]) out.push(r.fields.map((f) => cell(row[f.name])).join('|'));
  out.push(`(${r.rows.length} row${r.rows.length === 1 ? '' : 's'})`);
  return out;
}

interface SessionRt {
  name: string;
  raw: pg.Client;
  client: RecordingClient | ScenarioClient;
  /** Its backend on the primary (0 for a session on a standby: never blocked by the primary's locks). */
  pid: number;
  /** The server ended the connection (FATAL): later steps fail without being sent. */
  closed: boolean;
}

interface StepOutcome {
  lines: string[];
  error?: { code?: string; message: string };
  refused?: string;
}

interface Running {
  step: Step;
  session: SessionRt;
  promise: Promise<StepOutcome>;
  done: boolean;
  outcome?: StepOutcome;
  /** The step failed otherwise than with a server error. */
  fatal?: unknown;
  waiting: boolean;
}

/** Runs the statements of a step on a session (stopping at the first error, as one simple query would). */
async function runStatements(session: SessionRt, sql: string): Promise<StepOutcome> {
  const lines: string[] = [];
  for (const stmt of splitStatements(sql)) {
    if (session.closed) return { lines, error: { message: `session ${session.name}'s connection is closed` } };
    try {
      const r = await session.client.query(stmt);
      lines.push(...renderRows(r));
    } catch (e) {
      if (e instanceof InputError) return { lines, refused: e.message };
      const severity = (e as { severity?: unknown }).severity;
      if (typeof severity !== 'string') throw e; // not the server's error: a bug or a lost connection
      if (severity === 'FATAL' || severity === 'PANIC') session.closed = true;
      return { lines, error: errorOf(e) };
    }
  }
  return { lines };
}

/** What one spec's permutations share: the database, and refusals found so far. */
interface SpecContext {
  spec: ScenarioSpec;
  specFile: string;
  stem: string;
  url: string;
  control: pg.Client;
  monitor: pg.Client;
  outDir: string;
  iso?: IsoOverride;
  options: ScenarioOptions;
  /** The tables the setup creates cannot be recorded: the reason. */
  tablesRefused?: string;
  /** Statements refused by the recorder, by step name (or `setup of session X`). */
  refusedSteps: Map<string, string>;
  /** Tables in the public schema before the spec's setup (normally none: the database is fresh). */
  preexisting: Set<string>;
  /** DEFAULT_STALL_MS, or longer when the server's deadlock_timeout is long (deadlocks must resolve first). */
  defaultStallMs: number;
  state: RunState;
  /** --topology: the cluster (cluster.ts), and the spec's database there. */
  cluster?: ScenarioCluster;
  dbName: string;
}

async function publicTables(client: pg.Client): Promise<string[]> {
  const r = await client.query<{ name: string }>(
    `SELECT quote_ident(c.relname) AS name FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p') AND NOT c.relispartition ORDER BY c.relname`,
  );
  return r.rows.map((x) => x.name);
}

async function runSql(client: pg.Client, sql: string): Promise<void> {
  await client.query(sql);
}

/** One permutation: record, then check. */
async function runPermutation(ctx: SpecContext, index: number, steps: string[]): Promise<PermutationResult> {
  const { spec, options } = ctx;
  const result: PermutationResult = {
    spec: basename(ctx.specFile),
    specFile: ctx.specFile,
    permutation: index,
    steps,
    verdict: 'error',
    errors: [],
    transcript: [],
    warnings: [],
  };
  const stepByName = new Map<string, Step>();
  for (const s of spec.sessions) for (const st of s.steps) stepByName.set(st.name, st);

  // refusals already known for this spec: nothing to run
  if (ctx.tablesRefused) {
    result.error = ctx.tablesRefused;
    return result;
  }
  for (const st of steps) {
    const why = ctx.refusedSteps.get(st);
    if (why) return refusedResult(result, st, why);
  }
  for (const s of spec.sessions) {
    for (const what of [`setup of session ${s.name}`, `teardown of session ${s.name}`]) {
      const why = ctx.refusedSteps.get(what);
      if (why) return refusedResult(result, what, why);
    }
  }

  const file = join(ctx.outDir, `${ctx.stem}-${index}.ndjson`);
  const tr = result.transcript;
  const stallMs = options.stallMs ?? ctx.defaultStallMs;
  let recorder: Recorder | undefined;
  const sessions = new Map<string, SessionRt>();
  let setupDone = false;
  try {
    // spec setup, unrecorded
    for (const sql of spec.setup) {
      try {
        await runSql(ctx.control, sql);
      } catch (e) {
        result.error = `${result.spec}: setup failed: ${errorOf(e).message}`;
        return result;
      }
    }
    setupDone = true;
    const tables = (await publicTables(ctx.control)).filter((t) => !ctx.preexisting.has(t));
    let keys = {};
    if (ctx.cluster && tables.length > 0) {
      try {
        keys = await ctx.cluster.distribute(ctx.control, ctx.dbName, tables);
      } catch (e) {
        if (!(e instanceof InputError)) throw e;
        ctx.tablesRefused = `cannot shard the tables of ${basename(ctx.specFile)} (${tables.join(', ')}): ${e.message}`;
        result.error = ctx.tablesRefused;
        return result;
      }
    }
    recorder = new Recorder({
      file,
      meta: {
        tool: 'isocheck scenario',
        spec: basename(ctx.specFile),
        permutation: index,
        steps,
        ...(ctx.cluster ? { topology: ctx.cluster.meta() } : {}),
      },
      onWarning: (m) => result.warnings.push(m),
    });
    ctx.state.current = { spec: result.spec, permutation: index, file, recorder, sessions };
    if (halted(ctx.state)) throw new Error('interrupted');
    try {
      if (tables.length === 0)
        throw new InputError('the setup creates no table in the public schema: nothing to record');
      await recorder.instrument(
        ctx.control,
        tables,
        ctx.cluster ? await ctx.cluster.instrumentOptions(ctx.dbName, keys) : undefined,
      );
      if (halted(ctx.state)) throw new Error('interrupted');
    } catch (e) {
      if (!(e instanceof InputError)) throw e;
      ctx.tablesRefused = `cannot record the tables of ${basename(ctx.specFile)} (${tables.join(', ')}): ${e.message}`;
      result.error = ctx.tablesRefused;
      return result;
    }

    // plan every statement up front: a refusal is reported before anything runs
    const plan = (what: string, sql: string): string | undefined => {
      for (const stmt of splitStatements(sql)) {
        try {
          recorder!.plan(stmt, 0);
        } catch (e) {
          if (!(e instanceof InputError)) throw e;
          ctx.refusedSteps.set(what, e.message);
          return e.message;
        }
      }
      return undefined;
    };
    for (const s of spec.sessions) {
      for (const sql of s.setup) {
        const why = plan(`setup of session ${s.name}`, sql);
        if (why) return refusedResult(result, `setup of session ${s.name}`, why);
      }
      for (const sql of s.teardown) {
        const why = plan(`teardown of session ${s.name}`, sql);
        if (why) return refusedResult(result, `teardown of session ${s.name}`, why);
      }
    }
    for (const st of steps) {
      const why = plan(st, stepByName.get(st)!.sql);
      if (why) return refusedResult(result, st, why);
    }

    // one connection per session (--topology: and the session's client on the cluster, cluster.ts)
    for (const [i, s] of spec.sessions.entries()) {
      const raw = new pg.Client({ connectionString: ctx.url, application_name: `isocheck ${s.name}` });
      raw.on('error', () => undefined); // reported through the query that fails
      const rt: SessionRt = {
        name: s.name,
        raw,
        client: ctx.cluster ? { query: () => Promise.reject(new Error('not connected')) } : recorder.client(raw),
        pid: 0,
        closed: false,
      };
      sessions.set(s.name, rt);
      if (halted(ctx.state)) throw new Error('interrupted');
      await raw.connect();
      const onCluster = ctx.cluster && (await ctx.cluster.sessionClient(recorder, s, raw, ctx.dbName, i));
      if (onCluster) rt.client = onCluster.client;
      if (!onCluster?.onStandby)
        rt.pid = Number((await raw.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0].pid);
    }
    const pids = [...sessions.values()].map((s) => s.pid).filter((pid) => pid > 0);

    // session setups
    for (const s of spec.sessions) {
      const rt = sessions.get(s.name)!;
      for (const sql of s.setup) {
        const out = await runStatements(rt, sql);
        if (out.refused) return refusedResult(result, `setup of session ${s.name}`, out.refused);
        if (out.error) {
          tr.push(`setup of session ${s.name} failed: ERROR: ${out.error.message}`);
          result.error = `${result.spec}: setup of session ${s.name} failed: ${out.error.message}`;
          return result;
        }
      }
    }

    // the steps
    const active = new Map<string, Running>();
    let refused: { step: string; message: string } | undefined;
    const isBlocked = async (pid: number): Promise<boolean> => {
      if (pid === 0) return false; // on a standby
      const r = await ctx.monitor.query<{ b: boolean }>(
        'SELECT pg_catalog.pg_isolation_test_session_is_blocked($1, $2) AS b',
        [pid, pids],
      );
      return r.rows[0].b;
    };
    const report = (r: Running, completedLater: boolean): void => {
      if (r.fatal !== undefined) throw r.fatal;
      const o = r.outcome!;
      if (completedLater) tr.push(`step ${r.step.name}: <... completed>`);
      tr.push(...o.lines);
      if (o.error) {
        tr.push(`step ${r.step.name}: ERROR: ${o.error.message}`);
        result.errors.push({ step: r.step.name, ...o.error });
      }
      if (o.refused && !refused) refused = { step: r.step.name, message: o.refused };
    };
    const start = (step: Step): Running => {
      const session = sessions.get(step.session)!;
      const r: Running = {
        step,
        session,
        done: false,
        waiting: false,
        promise: undefined as unknown as Promise<StepOutcome>,
      };
      r.promise = runStatements(session, step.sql).then(
        (o) => {
          r.outcome = o;
          r.done = true;
          return o;
        },
        (e: unknown) => {
          // not the server's error (a lost connection, a bug): raised when the step is reported
          r.fatal = e;
          r.outcome = { lines: [] };
          r.done = true;
          return r.outcome;
        },
      );
      return r;
    };
    /** Waits until the step completes or waits for a lock another session holds. */
    const settle = async (r: Running): Promise<'done' | 'waiting'> => {
      for (;;) {
        await Promise.race([r.promise, sleep(POLL_MS)]);
        if (r.done) return 'done';
        const blocked = await isBlocked(r.session.pid);
        if (r.done) return 'done';
        if (blocked) return 'waiting';
      }
    };
    /** Reports waiting steps that finished (each settles first: done, or waiting again). */
    const checkWaiting = async (): Promise<void> => {
      for (const [sname, w] of [...active]) {
        if ((await settle(w)) === 'done') {
          active.delete(sname);
          report(w, true);
        }
      }
    };
    /** Waits for a session's waiting step (cancelling it if the wait cannot end). */
    const waitFor = async (r: Running): Promise<void> => {
      const t0 = Date.now();
      let cancelled = false;
      let terminated = false;
      while (!r.done) {
        await Promise.race([r.promise, sleep(POLL_MS * 5)]);
        for (const [sname, w] of [...active]) {
          if (w !== r && w.done) {
            active.delete(sname);
            report(w, true);
          }
        }
        const waited = Date.now() - t0;
        if (!r.done && !cancelled && waited > stallMs) {
          cancelled = true;
          tr.push(
            `isocheck: canceling step ${r.step.name} after ${(stallMs / 1000).toFixed(1)} s: ` +
              `session ${r.session.name}'s next step cannot run until it ends`,
          );
          await ctx.monitor.query('SELECT pg_cancel_backend($1)', [r.session.pid]);
        } else if (!r.done && !terminated && waited > 2 * stallMs) {
          terminated = true;
          tr.push(`isocheck: terminating session ${r.session.name}: step ${r.step.name} did not end after cancelling`);
          await ctx.monitor.query('SELECT pg_terminate_backend($1)', [r.session.pid]);
        }
      }
      active.delete(r.session.name);
      report(r, true);
    };

    for (const name of steps) {
      if (halted(ctx.state)) throw new Error('interrupted');
      const step = stepByName.get(name)!;
      const prev = active.get(step.session);
      if (prev) await waitFor(prev);
      if (refused) break;
      tr.push(`step ${name}: ${oneLine(step.sql)}`);
      const r = start(step);
      if ((await settle(r)) === 'waiting') {
        r.waiting = true;
        active.set(step.session, r);
        tr[tr.length - 1] += ' <waiting ...>';
      } else report(r, false);
      if (refused) break;
      await checkWaiting();
      if (refused) break;
    }
    if (refused) {
      // stop: release the waiting steps (their results no longer matter)
      for (const w of active.values()) await ctx.monitor.query('SELECT pg_cancel_backend($1)', [w.session.pid]);
    }
    // (not reported while waiting for another)
    for (const w of [...active.values()]) if (active.get(w.session.name) === w) await waitFor(w);
    if (refused) return refusedResult(result, refused.step, refused.message);

    // session teardowns
    for (const s of spec.sessions) {
      const rt = sessions.get(s.name)!;
      for (const sql of s.teardown) {
        const out = await runStatements(rt, sql);
        tr.push(...out.lines);
        if (out.refused) return refusedResult(result, `teardown of session ${s.name}`, out.refused);
        if (out.error) tr.push(`teardown of session ${s.name}: ERROR: ${out.error.message}`);
      }
    }
    // closing the connections rolls back open transactions (recorded as aborted)
    for (const s of sessions.values()) await s.raw.end().catch(() => undefined);
    sessions.clear();
    if (halted(ctx.state)) throw new Error('interrupted');
    recorder.finish();
    result.file = file;
  } catch (e) {
    // a signal, or the server gone: the history recorded so far is kept, with what was in flight
    if (ctx.state.signal || isConnectionProblem(e)) {
      stopCurrent(
        ctx.state,
        ctx.state.signal
          ? `interrupted by ${ctx.state.signal}`
          : `the connection to the database was lost: ${errorOf(e).message}`,
      );
      if (recorder?.instrumented) result.file = file;
    }
    throw e;
  } finally {
    if (ctx.state.current?.recorder === recorder) ctx.state.current = undefined;
    const pids = [...sessions.values()].map((s) => s.pid).filter((pid) => pid > 0);
    for (const s of sessions.values()) await s.raw.end().catch(() => undefined);
    await ctx.cluster?.closePermutation();
    if (halted(ctx.state) && pids.length > 0) {
      // a backend busy in a step (a sleep, a long query) does not notice its connection closed: end it, so that
      // the spec's teardown does not wait on what it holds
      await ctx.monitor
        .query('SELECT pg_catalog.pg_terminate_backend(pid, 5000) FROM unnest($1::int[]) AS pid', [pids])
        .catch(() => undefined);
    }
    if (recorder && !result.file) {
      // nothing checkable was recorded
      recorder.abandon();
      rmSync(file, { force: true });
    }
    for (const sql of spec.teardown) {
      try {
        await runSql(ctx.control, sql);
      } catch (e) {
        if (!setupDone) break; // the setup failed part way: clean up what can be
        tr.push(`teardown: ERROR: ${errorOf(e).message}`);
        result.warnings.push(`the spec's teardown failed: ${errorOf(e).message}`);
      }
    }
  }

  // check
  try {
    const history = await readHistory(file);
    const checked = checkHistory(history, {
      iso: ctx.iso,
      timeoutMs: options.timeout !== undefined ? options.timeout * 1000 : undefined,
    });
    if (history.truncated)
      checked.notes.unshift('the file has no "end" line: the recording was cut short; checked what it holds');
    result.result = checked;
    result.verdict = checked.verdict;
  } catch (e) {
    if (!(e instanceof InputError)) throw e;
    result.error = e.message;
  }
  return result;
}

function refusedResult(result: PermutationResult, step: string, message: string): PermutationResult {
  result.verdict = 'error';
  result.refusedStep = step;
  result.error = `${result.spec}: ${/^(setup|teardown) of session /.test(step) ? step : `step ${step}`}: ${message}`;
  return result;
}

class Progress {
  private last = Date.now();
  constructor(
    private readonly label: string,
    private readonly total: number,
    private readonly log: (line: string) => void,
    private readonly enabled: boolean,
  ) {}
  private shown = false;
  update(done: number): void {
    if (!this.enabled || this.total < 10) return;
    const now = Date.now();
    if (done < this.total ? now - this.last < 1000 : !this.shown) return; // the final count only after others
    this.last = now;
    this.shown = true;
    // whole lines (no \r): in human mode the results stream to stdout on the same terminal
    this.log(`  ${this.label}: ${done}/${this.total} permutations`);
  }
}

const defaultLog = (line: string) => process.stderr.write(`${line}\n`);

/** A spec file read and parsed, with the permutations to run (1-based indices into permutationsOf(spec)). */
export interface LoadedSpec {
  specFile: string;
  spec: ScenarioSpec;
  permutations: string[][];
  selected: number[];
  /** File name stem of its histories (`<stem>-<i>.ndjson`). */
  stem: string;
}

/**
 * Reads and parses a spec file and selects its permutations (InputError for unreadable files or a bad --permutation).
 */
export function loadSpec(specFile: string, options: ScenarioOptions = {}): LoadedSpec {
  let text: string;
  try {
    text = readFileSync(specFile, 'utf8');
  } catch (e) {
    throw new InputError(`cannot read ${specFile}: ${(e as Error).message}`);
  }
  const spec = parseSpec(text, specFile);
  const all = permutationsOf(spec);
  let selected = all.map((_, i) => i + 1);
  if (options.permutation !== undefined) {
    if (!Number.isInteger(options.permutation) || options.permutation < 1 || options.permutation > all.length) {
      throw new InputError(
        `--permutation ${options.permutation}: ${basename(specFile)} has ${all.length} ` +
          `permutation${all.length === 1 ? '' : 's'} (1..${all.length})`,
      );
    }
    selected = [options.permutation];
  }
  return { specFile, spec, permutations: all, selected, stem: specName(specFile) };
}

/** Runs the selected permutations of one spec in a fresh database on the server at `serverUrl`. */
export async function runSpecFile(
  loaded: LoadedSpec,
  serverUrl: string,
  outDir: string,
  options: ScenarioOptions = {},
  state: RunState = { done: 0, outDir },
  cluster?: ScenarioCluster,
): Promise<PermutationResult[]> {
  const log = options.log ?? defaultLog;
  const { spec, specFile } = loaded;
  const iso = options.iso ? parseIsoOverride(options.iso) : undefined;
  await Promise.all([loadRewriter(), loadPredicateParser()]);

  const admin = new pg.Client({ connectionString: serverUrl });
  admin.on('error', () => undefined);
  await admin.connect();
  const dbName =
    `isocheck_scenario_${process.pid}_${Date.now().toString(36)}_` + `${Math.floor(Math.random() * 1e6).toString(36)}`;
  let url = serverUrl;
  let created = false;
  const results: PermutationResult[] = [];
  let control: pg.Client | undefined;
  let monitor: pg.Client | undefined;
  try {
    try {
      await admin.query(`CREATE DATABASE ${admin.escapeIdentifier(dbName)}`);
      created = true;
      url = withDatabase(serverUrl, dbName);
      await cluster?.prepareDatabase(dbName);
    } catch (e) {
      if ((e as { code?: string }).code !== '42501') throw e;
      log(
        `isocheck: cannot create a database (${(e as Error).message}); running ${basename(specFile)} in the ` +
          `given database`,
      );
    }
    control = new pg.Client({ connectionString: url, application_name: 'isocheck control' });
    monitor = new pg.Client({ connectionString: url, application_name: 'isocheck monitor' });
    control.on('error', () => undefined);
    monitor.on('error', () => undefined);
    await control.connect();
    await monitor.connect();
    const deadlockMs = Number(
      (
        await control.query<{ ms: string }>(
          `SELECT (EXTRACT(epoch FROM current_setting('deadlock_timeout')::interval) * 1000)::text AS ms`,
        )
      ).rows[0].ms,
    );
    const ctx: SpecContext = {
      spec,
      specFile,
      stem: loaded.stem,
      url,
      control,
      monitor,
      outDir,
      iso,
      options,
      refusedSteps: new Map(),
      preexisting: new Set(await publicTables(control)),
      defaultStallMs: Math.max(DEFAULT_STALL_MS, 2 * deadlockMs + 1000),
      state,
      cluster,
      dbName,
    };
    const progress = new Progress(basename(specFile), loaded.selected.length, log, options.progress ?? true);
    let done = 0;
    for (const i of loaded.selected) {
      if (state.signal) throw new Error('interrupted');
      const r = await runPermutation(ctx, i, loaded.permutations[i - 1]);
      if (state.signal) throw new Error('interrupted'); // a signal during the check: the history is whole
      results.push(r);
      state.done++;
      options.onResult?.(r);
      progress.update(++done);
    }
  } finally {
    await control?.end().catch(() => undefined);
    await monitor?.end().catch(() => undefined);
    if (created)
      await admin
        .query(`DROP DATABASE IF EXISTS ${admin.escapeIdentifier(dbName)} WITH (FORCE)`)
        .catch(() => undefined);
    if (created) await cluster?.dropDatabase(dbName);
    await admin.end().catch(() => undefined);
  }
  return results;
}

/** Runs spec files (each in its own fresh database) on one server: `database`, else --db / DATABASE_URL / embedded. */
export async function runScenarios(
  files: string[],
  options: ScenarioOptions = {},
  database?: Database,
): Promise<ScenarioRun> {
  const log = options.log ?? defaultLog;
  // bad input fails before a server starts
  if (files.length === 0) throw new InputError('no spec files');
  if (options.iso) parseIsoOverride(options.iso);
  checkTopologyOptions(options, options.db);
  const loaded = files.map((f) => loadSpec(f, options));
  const stems = new Map<string, number>();
  for (const l of loaded) {
    const n = (stems.get(l.stem) ?? 0) + 1;
    stems.set(l.stem, n);
    if (n > 1) l.stem = `${l.stem}~${n}`; // two specs of the same name in different directories
  }
  const outDir = resolve(options.out ?? mkdtempSync(join(tmpdir(), 'isocheck-scenario-')));
  checkOutDir(outDir);
  const state: RunState = { done: 0, outDir };
  const onAbort = (): void => {
    state.signal = abortSignalName(options.signal);
    stopCurrent(state, `interrupted by ${state.signal}`);
    options.onInterrupt?.(interruptedLine(state));
  };
  if (options.signal?.aborted) onAbort();
  else options.signal?.addEventListener('abort', onAbort, { once: true });
  let db: Database | undefined;
  let cluster: ScenarioCluster | undefined;
  try {
    if (state.signal) throw new Error('interrupted');
    if (options.topology && !database) ({ cluster, database: db } = await startScenarioCluster(options));
    db ??= database ?? (await openDatabase({ db: options.db }));
    log(`database: ${db.description}`);
    log(`histories: ${outDir}`);
    const results: PermutationResult[] = [];
    for (const l of loaded)
      results.push(...(await runSpecFile(l, db.url, outDir, { ...options, log }, state, cluster)));
    return { results, outDir, database: db.description };
  } catch (e) {
    if (state.signal) throw new ScenarioInterrupted(state.signal, interruptedLine(state));
    if (isConnectionProblem(e)) throw new InputError(lostLine(state, e));
    throw e;
  } finally {
    options.signal?.removeEventListener('abort', onAbort);
    if (db && !database) await db.close();
  }
}

const NOT_A_FOLDER = 'it (or a folder on its path) is a file, not a folder';
/** Why the histories' folder cannot be written, by errno code (checkOutDir). */
const OUT_DIR_FAILURES = { ...WRITE_FAILURES, EEXIST: NOT_A_FOLDER, ENOTDIR: NOT_A_FOLDER };

/** The histories' folder: created if missing; a file there, or a folder that cannot be written, is one line. */
function checkOutDir(dir: string): void {
  try {
    makeFolders(dir);
    if (!statSync(dir).isDirectory()) throw Object.assign(new Error('not a directory'), { code: 'ENOTDIR' });
    accessSync(dir, fsConstants.W_OK);
  } catch (e) {
    throw new InputError(`--out ${dir}: cannot write histories there: ${writeFailure(e, OUT_DIR_FAILURES)}`);
  }
}

function isConnectionProblem(e: unknown): boolean {
  const code = (e as { code?: unknown })?.code;
  const message = (e as { message?: unknown })?.message;
  return (
    code === 'ECONNREFUSED' ||
    code === 'ECONNRESET' ||
    code === 'EPIPE' ||
    (typeof code === 'string' && (code.startsWith('08') || code.startsWith('57P'))) ||
    (typeof message === 'string' &&
      /Connection terminated|Client has encountered a connection error|not queryable/.test(message))
  );
}
