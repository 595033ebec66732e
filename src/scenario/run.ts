/**
 * Runs isolation-tester specs (spec.ts) against PostgreSQL, records each permutation's client history and checks it.
 *
 *   per spec file: a fresh database (CREATE DATABASE on the server; dropped afterwards)
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
 * - Statements the recorder refuses (InputError: subqueries, several tables, tables without a key, ...) make the
 *   permutation unrecordable: verdict `error` with the spec, the step and the recorder's reason. A refusal found
 *   by planning depends only on the statement and the tables the setup creates, so it is remembered for the
 *   spec's other permutations (they are reported the same way without being run).
 */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join, resolve } from 'node:path';
import { readFileSync } from 'node:fs';
import pg from 'pg';
import { parseSync } from 'libpg-query';
import { InputError } from '../history/input-errors.js';
import { readHistory } from '../history/reader.js';
import { loadPredicateParser } from '../history/predicate.js';
import { checkHistory, type CheckResult, type Verdict } from '../checker/check.js';
import { parseIsoOverride, type IsoOverride } from '../checker/levels.js';
import { openDatabase, type Database } from '../db/connect.js';
import { Recorder, loadRewriter, type RecordingClient } from '../recorder/index.js';
import { parseSpec, permutationsOf, type ScenarioSpec, type Step } from './spec.js';

export interface ScenarioOptions {
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
  /** Run only these permutations (1-based) of each spec (for tests that sample). */
  permutations?: (spec: ScenarioSpec, count: number) => number[];
  /** How long a session may wait on its own earlier step before that step is cancelled (ms; default 10 s). */
  stallMs?: number;
  /** Progress and notices (default: stderr). */
  log?: (line: string) => void;
  /** Print progress for specs with many permutations (default true). */
  progress?: boolean;
  /** Called with each permutation's result as soon as it is known. */
  onResult?: (r: PermutationResult) => void;
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

function withDatabase(url: string, name: string): string {
  const u = new URL(url);
  u.pathname = `/${name}`;
  return u.toString();
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
  return { ...(typeof err?.code === 'string' ? { code: err.code } : {}), message: typeof err?.message === 'string' ? err.message : String(e) };
}

function renderRows(r: pg.QueryResult): string[] {
  if (!r.fields || r.fields.length === 0) return [];
  const cell = (v: unknown) => (v === null || v === undefined ? '' : v instanceof Date ? v.toISOString() : typeof v === 'object' ? JSON.stringify(v) : String(v));
  const out = [r.fields.map((f) => f.name).join('|')];
  for (const row of r.rows as Record<string, unknown>[]) out.push(r.fields.map((f) => cell(row[f.name])).join('|'));
  out.push(`(${r.rows.length} row${r.rows.length === 1 ? '' : 's'})`);
  return out;
}

interface SessionRt {
  name: string;
  raw: pg.Client;
  client: RecordingClient;
  pid: number;
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
  waiting: boolean;
}

/** Runs the statements of a step on a session (stopping at the first error, as one simple query would). */
async function runStatements(client: RecordingClient, sql: string): Promise<StepOutcome> {
  const lines: string[] = [];
  for (const stmt of splitStatements(sql)) {
    try {
      const r = await client.query(stmt);
      lines.push(...renderRows(r));
    } catch (e) {
      if (e instanceof InputError) return { lines, refused: e.message };
      if (!(e as { severity?: unknown }).severity && !(e as { code?: unknown }).code) throw e; // not the server's error: a bug or a lost connection
      return { lines, error: errorOf(e) };
    }
  }
  return { lines };
}

/** What one spec's permutations share: the database, and refusals found so far. */
interface SpecContext {
  spec: ScenarioSpec;
  specFile: string;
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
  const name = specName(ctx.specFile);
  const result: PermutationResult = { spec: basename(ctx.specFile), specFile: ctx.specFile, permutation: index, steps, verdict: 'error', errors: [], transcript: [], warnings: [] };
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

  const file = join(ctx.outDir, `${name}-${index}.ndjson`);
  const tr = result.transcript;
  const stallMs = options.stallMs ?? DEFAULT_STALL_MS;
  let recorder: Recorder | undefined;
  const sessions = new Map<string, SessionRt>();
  let setupDone = false;
  try {
    // spec setup, unrecorded
    for (const sql of spec.setup) {
      try {
        await runSql(ctx.control, sql);
      } catch (e) {
        result.error = `setup failed: ${errorOf(e).message}`;
        return result;
      }
    }
    setupDone = true;
    const tables = (await publicTables(ctx.control)).filter((t) => !ctx.preexisting.has(t));
    recorder = new Recorder({
      file,
      meta: { tool: 'isocheck scenario', spec: basename(ctx.specFile), permutation: index, steps },
      onWarning: (m) => result.warnings.push(m),
    });
    try {
      if (tables.length === 0) throw new InputError('the setup creates no table in the public schema: nothing to record');
      await recorder.instrument(ctx.control, tables);
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

    // one connection per session
    for (const s of spec.sessions) {
      const raw = new pg.Client({ connectionString: ctx.url, application_name: `isocheck ${s.name}` });
      raw.on('error', () => undefined); // reported through the query that fails
      await raw.connect();
      const pid = Number((await raw.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0].pid);
      sessions.set(s.name, { name: s.name, raw, client: recorder.client(raw), pid });
    }
    const pids = [...sessions.values()].map((s) => s.pid);

    // session setups
    for (const s of spec.sessions) {
      const rt = sessions.get(s.name)!;
      for (const sql of s.setup) {
        const out = await runStatements(rt.client, sql);
        if (out.refused) return refusedResult(result, `setup of session ${s.name}`, out.refused);
        if (out.error) {
          tr.push(`setup of session ${s.name} failed: ERROR: ${out.error.message}`);
          result.error = `setup of session ${s.name} failed: ${out.error.message}`;
          return result;
        }
      }
    }

    // the steps
    const active = new Map<string, Running>();
    let refused: { step: string; message: string } | undefined;
    const isBlocked = async (pid: number): Promise<boolean> => {
      const r = await ctx.monitor.query<{ b: boolean }>('SELECT pg_catalog.pg_isolation_test_session_is_blocked($1, $2) AS b', [pid, pids]);
      return r.rows[0].b;
    };
    const report = (r: Running, completedLater: boolean): void => {
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
      const r: Running = { step, session, done: false, waiting: false, promise: undefined as unknown as Promise<StepOutcome> };
      r.promise = runStatements(session.client, step.sql).then((o) => {
        r.outcome = o;
        r.done = true;
        return o;
      });
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
          tr.push(`isolationtester: canceling step ${r.step.name} after ${Math.round(stallMs / 1000)} seconds`);
          await ctx.monitor.query('SELECT pg_cancel_backend($1)', [r.session.pid]);
        } else if (!r.done && !terminated && waited > 2 * stallMs) {
          terminated = true;
          tr.push(`isolationtester: terminating session ${r.session.name}: step ${r.step.name} did not end after cancelling`);
          await ctx.monitor.query('SELECT pg_terminate_backend($1)', [r.session.pid]);
        }
      }
      active.delete(r.session.name);
      report(r, true);
    };

    for (const name of steps) {
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
    for (const w of [...active.values()]) await waitFor(w);
    if (refused) return refusedResult(result, refused.step, refused.message);

    // session teardowns
    for (const s of spec.sessions) {
      const rt = sessions.get(s.name)!;
      for (const sql of s.teardown) {
        const out = await runStatements(rt.client, sql);
        tr.push(...out.lines);
        if (out.refused) return refusedResult(result, `teardown of session ${s.name}`, out.refused);
        if (out.error) tr.push(`teardown of session ${s.name}: ERROR: ${out.error.message}`);
      }
    }
    // closing the connections rolls back open transactions (recorded as aborted)
    for (const s of sessions.values()) await s.raw.end().catch(() => undefined);
    sessions.clear();
    recorder.finish();
    result.file = file;
  } finally {
    for (const s of sessions.values()) await s.raw.end().catch(() => undefined);
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
    const checked = checkHistory(history, { iso: ctx.iso, timeoutMs: options.timeout !== undefined ? options.timeout * 1000 : undefined });
    if (history.truncated) checked.notes.unshift('the file has no "end" line: the recording was cut short; checked what it holds');
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
  private last = 0;
  constructor(
    private readonly label: string,
    private readonly total: number,
    private readonly log: (line: string) => void,
    private readonly enabled: boolean,
  ) {}
  update(done: number): void {
    if (!this.enabled || this.total < 10) return;
    const now = Date.now();
    if (done < this.total && now - this.last < 1000) return;
    this.last = now;
    if (process.stderr.isTTY && this.log === defaultLog) process.stderr.write(`\r  ${this.label}: ${done}/${this.total} permutations${done >= this.total ? '\n' : ''}`);
    else this.log(`  ${this.label}: ${done}/${this.total} permutations`);
  }
}

const defaultLog = (line: string) => process.stderr.write(`${line}\n`);

/** Runs every (selected) permutation of one spec file on the server at `serverUrl`. */
export async function runSpecFile(specFile: string, serverUrl: string, outDir: string, options: ScenarioOptions = {}): Promise<PermutationResult[]> {
  const log = options.log ?? defaultLog;
  let text: string;
  try {
    text = readFileSync(specFile, 'utf8');
  } catch (e) {
    throw new InputError(`cannot read ${specFile}: ${(e as Error).message}`);
  }
  const spec = parseSpec(text, specFile);
  const all = permutationsOf(spec);
  let indices = all.map((_, i) => i + 1);
  if (options.permutation !== undefined) {
    if (!Number.isInteger(options.permutation) || options.permutation < 1 || options.permutation > all.length) {
      throw new InputError(`--permutation ${options.permutation}: ${basename(specFile)} has ${all.length} permutation${all.length === 1 ? '' : 's'} (1..${all.length})`);
    }
    indices = [options.permutation];
  } else if (options.permutations) indices = options.permutations(spec, all.length);
  const iso = options.iso ? parseIsoOverride(options.iso) : undefined;
  await Promise.all([loadRewriter(), loadPredicateParser()]);

  const admin = new pg.Client({ connectionString: serverUrl });
  admin.on('error', () => undefined);
  await admin.connect();
  const dbName = `isocheck_scenario_${process.pid}_${Date.now().toString(36)}_${Math.floor(Math.random() * 1e6).toString(36)}`;
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
    } catch (e) {
      if ((e as { code?: string }).code !== '42501') throw e;
      log(`isocheck: cannot create a database (${(e as Error).message}); running ${basename(specFile)} in the given database`);
    }
    control = new pg.Client({ connectionString: url, application_name: 'isocheck control' });
    monitor = new pg.Client({ connectionString: url, application_name: 'isocheck monitor' });
    control.on('error', () => undefined);
    monitor.on('error', () => undefined);
    await control.connect();
    await monitor.connect();
    const ctx: SpecContext = {
      spec, specFile, url, control, monitor, outDir, iso, options,
      refusedSteps: new Map(),
      preexisting: new Set(await publicTables(control)),
    };
    const progress = new Progress(basename(specFile), indices.length, log, options.progress ?? true);
    let done = 0;
    for (const i of indices) {
      const r = await runPermutation(ctx, i, all[i - 1]);
      results.push(r);
      options.onResult?.(r);
      progress.update(++done);
    }
  } finally {
    await control?.end().catch(() => undefined);
    await monitor?.end().catch(() => undefined);
    if (created) await admin.query(`DROP DATABASE IF EXISTS ${admin.escapeIdentifier(dbName)} WITH (FORCE)`).catch(() => undefined);
    await admin.end().catch(() => undefined);
  }
  return results;
}

/** Runs spec files (each in its own fresh database) on one server: `database`, else --db / DATABASE_URL / embedded. */
export async function runScenarios(files: string[], options: ScenarioOptions = {}, database?: Database): Promise<ScenarioRun> {
  const log = options.log ?? defaultLog;
  if (options.iso) parseIsoOverride(options.iso); // bad --iso: fail before starting a server
  const outDir = resolve(options.out ?? mkdtempSync(join(tmpdir(), 'isocheck-scenario-')));
  mkdirSync(outDir, { recursive: true });
  const db = database ?? (await openDatabase({ db: options.db }));
  try {
    log(`database: ${db.description}`);
    log(`histories: ${outDir}`);
    const results: PermutationResult[] = [];
    for (const f of files) results.push(...(await runSpecFile(f, db.url, outDir, { ...options, log })));
    return { results, outDir, database: db.description };
  } finally {
    if (!database) await db.close();
  }
}
