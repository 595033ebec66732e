/**
 * `npm run bench -- paper [--quick] [options]`: the experiments of the CAV paper's section 6 (Figures 6 and 7 and
 * the naive-baseline comparison), plus extended axes, on histories recorded from PostgreSQL.
 *
 *   plan (experiments × workloads × configurations × sizes × seeds)
 *   -> record the missing histories (one embedded PostgreSQL, seeded runs, into bench/.histories/)
 *   -> check each history in a fresh child process (paper-worker.ts), one at a time: per-history timeout
 *      and peak memory; the clock starts after readHistory + buildModel (the load time, measured apart)
 *   -> bench/results/<experiment>.csv, <experiment>.svg, run.json, and bench/RESULTS.md (paper-report.ts)
 *
 * Options: PAPER_USAGE below (`npm run bench -- paper --help`).
 */
import { execFileSync, fork, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, totalmem } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { WorkerDone, WorkerJob } from './paper-worker.js';
import { writeReport, type RunInfo } from './paper-report.js';
import { UsageError } from './usage-error.js';
import { snapshotCode } from './code-snapshot.js';

export type { Checker, ExpId, Experiment, Row } from './paper-types.js';
import type { Checker, ExpId, Experiment, Row } from './paper-types.js';

export const COLUMNS: (keyof Row)[] = [
  'experiment',
  'workload',
  'config',
  'check_iso',
  'checker',
  'sessions',
  'txns',
  'seed',
  'file',
  'transactions',
  'committed',
  'events',
  'conflicts',
  'forced',
  'extensions',
  'prefixes',
  'work',
  'verdict',
  'reason',
  'decided_by',
  'time_ms',
  'load_ms',
  'read_ms',
  'model_ms',
  'check_load_ratio',
  'peak_mb',
];

export const WORKLOADS = ['tpcc', 'tpcc-pc', 'twitter'];
export const CONFIGS = ['ser', 'si', 'rc', 'ser+rc', 'si+rc'];

interface Options {
  quick: boolean;
  timeoutMs: number;
  seeds: number;
  extSeeds: number;
  limitSeeds: number;
  exhSeeds: number;
  experiments: ExpId[];
  workloads?: string[];
  configs?: string[];
  sessions?: number[];
  txns?: number[];
  results: string;
  md: string;
  histories: string;
  recordJobs: number;
  reportOnly: boolean;
  recordOnly: boolean;
  sequential: boolean;
}

/** `npm run bench -- paper --help`. */
export const PAPER_USAGE = `usage: npm run bench -- paper [options]

Records (or reuses) seeded PostgreSQL histories, checks each with a timeout, writes CSVs, SVGs and bench/RESULTS.md.

Options:
  --quick               1 seed, short axes, 10 s timeout, results in bench/.quick/ (a sanity run)
  --timeout S           per-history check timeout in seconds (default 60; quick 10)
  --seeds N             seeds per point on the paper's grid (default 5; quick 1)
  --ext-seeds N         seeds per point on the extended axes (default 2; quick 1)
  --limit-seeds N       seeds per point of the limit axes, the sizes where the checker is expected to stop
                        deciding (default 1)
  --exhaustive-seeds N  seeds of experiment 3 also checked by the exhaustive naive baseline (default 1: it
                        times out on nearly every TPC-C history, 60 s each)
  --experiments LIST    among exp1,exp2,exp3,ext-sessions,ext-txns,limit-sessions,limit-txns,limit-large
                        (default all; --quick: all but the limit ones). limit-large: TPC-C at 16 sessions ×
                        2000 transactions and 64 × 500 (SI, RC, SI+RC; recording them takes hours)
  --workloads LIST      restrict the workloads (default: the experiment's)
  --configs LIST        restrict the configurations of exp1, exp2 and the extended axes
  --sessions LIST       override the sessions axis of the sessions experiments (not limit-large's pairs)
  --txns LIST           override the transactions axis of the transactions experiments (not limit-large's)
  --results DIR         CSVs, SVGs, run.json (default bench/results)
  --md FILE             the report (default bench/RESULTS.md)
  --histories DIR       recorded histories, reused when present (default bench/.histories)
  --record-jobs N       recordings run at once (default 2)
  --record-only         record the missing histories of the plan, check nothing
  --sequential          start each check's worker only after the previous check ended (by default the next
                        worker starts, and warms up, while the current check runs: faster, a little noisier)
  --report-only         rebuild the SVGs and RESULTS.md from the CSVs and run.json in --results
`;

const here = dirname(fileURLToPath(import.meta.url));
/** The package root: this file runs as dist/bench/paper.js. */
const root = resolve(here, '..', '..');

function parseArgs(args: string[]): Options {
  const get = (name: string): string | undefined => {
    const i = args.indexOf(`--${name}`);
    if (i < 0) return undefined;
    const v = args[i + 1];
    if (v === undefined || v.startsWith('--')) throw new UsageError(`--${name} needs a value`);
    return v;
  };
  const list = (name: string) =>
    get(name)
      ?.split(',')
      .map((s) => s.trim())
      .filter(Boolean);
  const nums = (name: string) =>
    list(name)?.map((s) => {
      const n = Number(s);
      if (!Number.isInteger(n) || n < 1) throw new UsageError(`--${name}: "${s}" is not a positive integer`);
      return n;
    });
  const count = (name: string, fallback: number, min = 1): number => {
    const v = get(name);
    if (v === undefined) return fallback;
    const n = Number(v);
    if (!Number.isFinite(n) || n < min) throw new UsageError(`--${name}: "${v}" is not a number >= ${min}`);
    return n;
  };
  const known = new Set([
    'quick',
    'report-only',
    'timeout',
    'seeds',
    'ext-seeds',
    'limit-seeds',
    'experiments',
    'workloads',
    'configs',
    'sessions',
    'txns',
    'results',
    'md',
    'histories',
    'record-jobs',
    'record-only',
    'sequential',
    'exhaustive-seeds',
  ]);
  for (const a of args)
    if (a.startsWith('--') && !known.has(a.slice(2)))
      throw new UsageError(`unknown option ${a} (npm run bench -- paper --help)`);
  const quick = args.includes('--quick');
  const all: ExpId[] = [
    'exp1',
    'exp2',
    'exp3',
    'ext-sessions',
    'ext-txns',
    'limit-sessions',
    'limit-txns',
    'limit-large',
  ];
  const experiments = (list('experiments') ?? (quick ? all.filter((e) => !e.startsWith('limit')) : all)) as ExpId[];
  for (const e of experiments)
    if (!all.includes(e)) throw new UsageError(`--experiments: unknown "${e}" (${all.join(', ')})`);
  return {
    quick,
    timeoutMs: count('timeout', quick ? 10 : 60) * 1000,
    seeds: count('seeds', quick ? 1 : 5),
    extSeeds: count('ext-seeds', quick ? 1 : 2),
    limitSeeds: count('limit-seeds', 1),
    exhSeeds: count('exhaustive-seeds', 1, 0),
    experiments,
    workloads: list('workloads'),
    configs: list('configs'),
    sessions: nums('sessions'),
    txns: nums('txns'),
    results: resolve(get('results') ?? join(root, 'bench', quick ? '.quick' : 'results')),
    md: resolve(get('md') ?? join(root, 'bench', quick ? join('.quick', 'RESULTS.md') : 'RESULTS.md')),
    histories: resolve(get('histories') ?? join(root, 'bench', '.histories')),
    recordJobs: count('record-jobs', 2),
    reportOnly: args.includes('--report-only'),
    recordOnly: args.includes('--record-only'),
    sequential: args.includes('--sequential'),
  };
}

const range = (a: number, b: number) => Array.from({ length: b - a + 1 }, (_, i) => a + i);

export function plan(
  o: Pick<
    Options,
    | 'quick'
    | 'seeds'
    | 'extSeeds'
    | 'limitSeeds'
    | 'exhSeeds'
    | 'experiments'
    | 'workloads'
    | 'configs'
    | 'sessions'
    | 'txns'
  >,
): Experiment[] {
  const q = o.quick;
  const exps: Experiment[] = [
    {
      id: 'exp1',
      title: 'Experiment 1 (Fig. 6): time vs sessions, 10 transactions per session',
      axis: 'sessions',
      workloads: WORKLOADS,
      configs: CONFIGS,
      sessions: q ? [1, 3, 5] : range(1, 5),
      txns: [10],
      seeds: o.seeds,
      checkers: ['ours'],
    },
    {
      id: 'exp2',
      title: 'Experiment 2 (Fig. 7): time vs transactions per session, 3 sessions',
      axis: 'txns',
      workloads: WORKLOADS,
      configs: CONFIGS,
      sessions: [3],
      txns: q ? [1, 10, 20] : [1, 2, 5, 10, 15, 20],
      seeds: o.seeds,
      checkers: ['ours'],
    },
    {
      id: 'exp3',
      title: 'Experiment 3: run at RC, checked as SER, ours vs the naive baselines, 3 sessions',
      axis: 'txns',
      workloads: ['twitter', 'tpcc'],
      configs: ['rc'],
      sessions: [3],
      txns: q ? [1, 5, 10] : range(1, 10),
      seeds: o.seeds,
      checkIso: 'SER',
      checkers: ['ours', 'naive', 'naive-exhaustive'],
      checkerSeeds: { 'naive-exhaustive': o.exhSeeds },
    },
    {
      id: 'ext-sessions',
      title: 'Extended: time vs sessions up to 32, 10 transactions per session',
      axis: 'sessions',
      workloads: WORKLOADS,
      configs: CONFIGS,
      sessions: q ? [16] : [6, 8, 12, 16, 24, 32],
      txns: [10],
      seeds: o.extSeeds,
      checkers: ['ours'],
    },
    {
      id: 'ext-txns',
      title: 'Extended: time vs transactions per session up to 400, 3 sessions',
      axis: 'txns',
      workloads: WORKLOADS,
      configs: CONFIGS,
      sessions: [3],
      txns: q ? [100] : [50, 100, 200, 400],
      seeds: o.extSeeds,
      checkers: ['ours'],
    },
    // Past the extended axes, until the checker stops deciding: the slowest single level (SI), RC, and SI+RC.
    // 256 and 512 sessions for TPC-C SI and RC only (the other workloads decide 128 sessions in under a second).
    {
      id: 'limit-sessions',
      title: 'Limit: time vs sessions up to 512, 10 transactions per session',
      axis: 'sessions',
      workloads: WORKLOADS,
      configs: ['si', 'rc', 'si+rc'],
      sessions: q ? [48] : [48, 64, 96, 128, 256, 512],
      txns: [10],
      seeds: o.limitSeeds,
      checkers: ['ours'],
      only: { sizes: [256, 512], workloads: ['tpcc'], configs: ['si', 'rc'] },
    },
    // 3 × 6400 for TPC-C only (SI, RC, SI+RC): each takes a quarter of an hour to record, and its file is 400 MB.
    {
      id: 'limit-txns',
      title: 'Limit: time vs transactions per session up to 6400, 3 sessions',
      axis: 'txns',
      workloads: WORKLOADS,
      configs: ['si', 'rc', 'si+rc'],
      sessions: [3],
      txns: q ? [800] : [800, 1600, 3200, 6400],
      seeds: o.limitSeeds,
      checkers: ['ours'],
      only: { sizes: [6400], workloads: ['tpcc'], configs: ['si', 'rc', 'si+rc'] },
    },
    // Issue 16 (scale): TPC-C with many sessions and many transactions at once, 32,000 transactions in two
    // shapes (pairs, not a cross product). Not in --quick: each recording takes the better part of an hour.
    {
      id: 'limit-large',
      title: 'Limit: TPC-C, 32,000 transactions as 16 sessions × 2000 and 64 sessions × 500',
      axis: 'sessions',
      paired: true,
      workloads: ['tpcc'],
      configs: ['si', 'rc', 'si+rc'],
      sessions: [16, 64],
      txns: q ? [200, 50] : [2000, 500],
      seeds: o.limitSeeds,
      checkers: ['ours'],
    },
  ];
  return exps
    .filter((e) => o.experiments.includes(e.id))
    .map((e) => ({
      ...e,
      workloads: o.workloads ? e.workloads.filter((w) => o.workloads!.includes(w)) : e.workloads,
      configs: o.configs && e.id !== 'exp3' ? e.configs.filter((c) => o.configs!.includes(c)) : e.configs,
      sessions: o.sessions && e.axis === 'sessions' && !e.paired ? o.sessions : e.sessions,
      txns: o.txns && e.axis === 'txns' && !e.paired ? o.txns : e.txns,
    }))
    .filter((e) => e.workloads.length > 0 && e.configs.length > 0);
}

interface Point {
  workload: string;
  config: string;
  sessions: number;
  txns: number;
  seed: string;
}

const fileName = (p: Point) => `${p.workload}-${p.config}-s${p.sessions}-t${p.txns}-seed${p.seed}.ndjson`;

/** The (sessions, transactions per session) shapes of an experiment: every pair, or sessions[i] with txns[i]. */
export function shapes(e: Pick<Experiment, 'sessions' | 'txns' | 'paired'>): [number, number][] {
  return e.paired
    ? e.sessions.map((s, i) => [s, e.txns[i]])
    : e.sessions.flatMap((s) => e.txns.map((t) => [s, t] as [number, number]));
}

function points(e: Experiment): Point[] {
  const out: Point[] = [];
  for (const workload of e.workloads)
    for (const config of e.configs)
      for (const [sessions, txns] of shapes(e)) {
        const only = e.only;
        if (
          only?.sizes.includes(e.axis === 'sessions' ? sessions : txns) &&
          !(only.workloads.includes(workload) && only.configs.includes(config))
        )
          continue;
        for (let s = 1; s <= e.seeds; s++) out.push({ workload, config, sessions, txns, seed: String(s) });
      }
  return out;
}

// ---------------------------------------------------------------------------------------------- progress

class Progress {
  private lastPrint = 0;
  private readonly tty = process.stderr.isTTY;
  constructor(private readonly started: number) {}
  line(text: string, force = false): void {
    const now = Date.now();
    if (!force && now - this.lastPrint < (this.tty ? 200 : 5000)) return;
    this.lastPrint = now;
    const el = fmtDuration(now - this.started);
    const msg = `[paper ${el}] ${text}`;
    if (this.tty) process.stderr.write(`\r\x1b[K${msg.slice(0, (process.stderr.columns ?? 120) - 1)}`);
    else process.stderr.write(`${msg}\n`);
  }
  done(): void {
    if (this.tty) process.stderr.write('\n');
  }
}

export function fmtDuration(ms: number): string {
  const s = Math.round(ms / 1000);
  return s >= 60 ? `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s` : `${s}s`;
}

// ---------------------------------------------------------------------------------------------- recording

async function recordAll(
  pts: Point[],
  dir: string,
  jobs: number,
  progress: Progress,
): Promise<{ recorded: number; failed: Map<string, string>; ms: number; pg?: string }> {
  const missing = pts.filter((p) => !existsSync(join(dir, fileName(p))));
  const failed = new Map<string, string>();
  const started = Date.now();
  if (missing.length === 0) return { recorded: 0, failed, ms: 0 };
  mkdirSync(dir, { recursive: true });
  // Imported here: --report-only and a run over recorded histories need no database.
  const { openDatabase } = (await import(
    pathToFileURL(join(codeDir, 'src', 'db', 'connect.js')).href
  )) as typeof import('../src/db/connect.js');
  const { runWorkload } = (await import(
    pathToFileURL(join(codeDir, 'src', 'cli', 'run-command.js')).href
  )) as typeof import('../src/cli/run-command.js');
  // Up to 512 sessions per recording, two recordings at a time: more connections than PostgreSQL's default 100.
  const db = await openDatabase({ embedded: { settings: { max_connections: '1200' } } });
  let done = 0;
  try {
    const queue = missing.slice();
    const worker = async () => {
      for (let p = queue.shift(); p; p = queue.shift()) {
        const name = fileName(p);
        const tmp = join(dir, `${name}.tmp-${process.pid}`);
        try {
          await runWorkload(
            {
              workload: p.workload,
              iso: p.config,
              sessions: p.sessions,
              txns: p.txns,
              seed: p.seed,
              out: tmp,
              progress: false,
              log: () => undefined,
            },
            db,
          );
          renameSync(tmp, join(dir, name));
        } catch (e) {
          rmSync(tmp, { force: true });
          failed.set(name, (e as Error).message);
          process.stderr.write(`\nrecording ${name} failed: ${(e as Error).message}\n`);
        }
        done++;
        const eta = ((Date.now() - started) / done) * (missing.length - done);
        progress.line(`recording ${done}/${missing.length} histories (${name}), ~${fmtDuration(eta)} left`);
      }
    };
    await Promise.all(Array.from({ length: Math.min(jobs, missing.length) }, worker));
  } finally {
    await db.close();
  }
  progress.line(`recorded ${done} histories in ${fmtDuration(Date.now() - started)}`, true);
  return { recorded: done, failed, ms: Date.now() - started, pg: db.description };
}

// ---------------------------------------------------------------------------------------------- checking

interface Spawned {
  child: ChildProcess;
  ready: Promise<boolean>;
}

/** The compiled code the run uses: dist/, or the private copy of it taken when the run starts (code-snapshot.ts). */
let codeDir = resolve(here, '..');
const workerPath = () => join(codeDir, 'bench', 'paper-worker.js');

function spawnWorker(warmup: string): Spawned {
  const child = fork(workerPath(), [warmup], {
    stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
    execArgv: ['--max-old-space-size=8192'],
  });
  child.stderr?.resume();
  const ready = new Promise<boolean>((res) => {
    child.once('message', (m: { type: string }) => res(m?.type === 'ready'));
    child.once('exit', () => res(false));
  });
  return { child, ready };
}

/** Peak resident memory (MB) of a live process, from /proc (Linux). */
function procPeakMb(pid: number | undefined): number | '' {
  if (!pid) return '';
  try {
    const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) / 1024 : '';
  } catch {
    return '';
  }
}

interface Loaded {
  readMs: number;
  modelMs: number;
  transactions: number;
  committed: number;
  events: number;
}
type Outcome =
  | { kind: 'done'; done: WorkerDone }
  | { kind: 'timeout' | 'error'; message: string; loaded?: Loaded; peakMb: number | '' };

/** Grace after the timeout for our checker, which stops itself at the timeout (budget checks are periodic). */
const GRACE_MS = 10_000;
/** Bound on reading + building the model, before the check's clock starts. */
const LOAD_LIMIT_MS = 10 * 60_000;

async function runJob(w: Spawned, job: WorkerJob): Promise<Outcome> {
  const ok = await w.ready;
  if (!ok) return { kind: 'error', message: 'the worker did not start', peakMb: '' };
  const child = w.child;
  return new Promise<Outcome>((resolveOutcome) => {
    let settled = false;
    let timer: NodeJS.Timeout | undefined;
    let loaded: Loaded | undefined;
    const finish = (o: Outcome) => {
      if (settled) return;
      settled = true;
      if (timer) clearTimeout(timer);
      resolveOutcome(o);
    };
    const kill = (kind: 'timeout' | 'error', message: string) => {
      const peakMb = procPeakMb(child.pid);
      child.kill('SIGKILL');
      finish({ kind, message, peakMb, loaded });
    };
    timer = setTimeout(() => kill('error', `loading took more than ${LOAD_LIMIT_MS / 1000} s`), LOAD_LIMIT_MS);
    child.on('message', (m: { type: string } & Record<string, unknown>) => {
      if (m.type === 'loaded') {
        loaded = m as unknown as Loaded;
        clearTimeout(timer);
        const limit = job.checker === 'ours' ? job.timeoutMs + GRACE_MS : job.timeoutMs;
        timer = setTimeout(() => kill('timeout', `killed after ${limit / 1000} s`), limit);
      } else if (m.type === 'done') finish({ kind: 'done', done: m as unknown as WorkerDone });
      else if (m.type === 'error')
        finish({ kind: 'error', message: String(m.message).split('\n')[0], peakMb: procPeakMb(child.pid), loaded });
    });
    child.on('exit', (code, signal) =>
      finish({
        kind: 'error',
        message: `worker exited (${signal ?? code})${code === 134 || signal === 'SIGABRT' ? ': out of memory?' : ''}`,
        peakMb: '',
        loaded,
      }),
    );
    child.send(job);
  });
}

const round = (x: number, d = 1) => Math.round(x * 10 ** d) / 10 ** d;

function rowOf(e: Experiment, p: Point, file: string, checker: Checker, o: Outcome, timeoutMs: number): Row {
  const base = {
    experiment: e.id,
    workload: p.workload,
    config: p.config,
    check_iso: e.checkIso ?? '',
    checker,
    sessions: p.sessions,
    txns: p.txns,
    seed: p.seed,
    file,
  };
  const empty = {
    transactions: '',
    committed: '',
    events: '',
    conflicts: '',
    forced: '',
    extensions: '',
    prefixes: '',
    work: '',
  } as const;
  if (o.kind !== 'done') {
    const l = o.loaded;
    return {
      ...base,
      ...empty,
      ...(l ? { transactions: l.transactions, committed: l.committed, events: l.events } : {}),
      verdict: o.kind,
      reason: o.message,
      decided_by: '',
      time_ms: o.kind === 'timeout' ? timeoutMs : 0,
      load_ms: l ? round(l.readMs + l.modelMs, 2) : '',
      read_ms: l ? round(l.readMs, 2) : '',
      model_ms: l ? round(l.modelMs, 2) : '',
      check_load_ratio: '',
      peak_mb: o.peakMb === '' ? '' : round(o.peakMb),
    };
  }
  const d = o.done;
  const stoppedByClock = d.verdict === 'unknown' && /time limit/.test(d.reason ?? '');
  const load = d.readMs + d.modelMs;
  return {
    ...base,
    transactions: d.transactions,
    committed: d.committed,
    events: d.events,
    conflicts: d.conflicts ?? '',
    forced: d.forcedWitnesses ?? '',
    extensions: d.extensions ?? '',
    prefixes: d.prefixes ?? '',
    work: d.work ?? '',
    verdict: stoppedByClock ? 'timeout' : d.verdict,
    reason: d.reason ?? '',
    decided_by: d.verdict === 'unknown' ? '' : (d.decidedBy ?? ''),
    time_ms: round(d.timeMs, 2),
    load_ms: round(load, 2),
    read_ms: round(d.readMs, 2),
    model_ms: round(d.modelMs, 2),
    check_load_ratio: load > 0 ? round(d.timeMs / load, 3) : '',
    peak_mb: round(d.peakMb),
  };
}

// ---------------------------------------------------------------------------------------------- CSV

function csvField(v: unknown): string {
  const s = String(v ?? '');
  return /[",\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

export function toCsv(rows: Row[]): string {
  return `${[COLUMNS.join(','), ...rows.map((r) => COLUMNS.map((c) => csvField(r[c])).join(','))].join('\n')}\n`;
}

/** Parses the CSVs this file writes (quoted fields may hold commas and doubled quotes, never newlines). */
export function fromCsv(text: string): Row[] {
  const lines = text.split('\n').filter((l) => l.length > 0);
  const header = splitCsvLine(lines[0]);
  const numeric = new Set<string>([
    'sessions',
    'txns',
    'transactions',
    'committed',
    'events',
    'conflicts',
    'forced',
    'extensions',
    'prefixes',
    'work',
    'time_ms',
    'load_ms',
    'read_ms',
    'model_ms',
    'check_load_ratio',
    'peak_mb',
  ]);
  return lines.slice(1).map((l) => {
    const f = splitCsvLine(l);
    const r: Record<string, unknown> = {};
    for (const [i, h] of header.entries()) {
      r[h] = numeric.has(h) && f[i] !== '' && f[i] !== undefined ? Number(f[i]) : (f[i] ?? '');
    }
    return r as unknown as Row;
  });
}

export function splitCsvLine(line: string): string[] {
  const out: string[] = [];
  let i = 0;
  for (;;) {
    if (line[i] === '"') {
      let s = '';
      i++;
      for (;;) {
        const j = line.indexOf('"', i);
        if (j < 0) throw new Error(`unterminated quoted field in CSV line: ${line}`);
        s += line.slice(i, j);
        if (line[j + 1] === '"') {
          s += '"';
          i = j + 2;
        } else {
          i = j + 1;
          break;
        }
      }
      out.push(s);
    } else {
      const j = line.indexOf(',', i);
      out.push(line.slice(i, j < 0 ? line.length : j));
      i = j < 0 ? line.length : j;
    }
    if (i >= line.length) break;
    if (line[i] !== ',') throw new Error(`malformed CSV line: ${line}`);
    i++;
    if (i === line.length) {
      out.push('');
      break;
    }
  }
  return out;
}

// ---------------------------------------------------------------------------------------------- main

/** The commit checked out, and whether src/ or workloads/ differ from it (read-only git commands). */
function gitState(): string {
  try {
    const head = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: root, encoding: 'utf8' }).trim();
    const dirty = execFileSync('git', ['status', '--porcelain', '--', 'src', 'workloads'], {
      cwd: root,
      encoding: 'utf8',
    }).trim();
    return dirty ? `${head} (src/ or workloads/ modified: ${dirty.split('\n').length} file(s))` : head;
  } catch {
    return 'unknown (no git)';
  }
}

export async function runPaperBench(args: string[]): Promise<void> {
  if (args.includes('--help') || args.includes('-h')) {
    console.log(PAPER_USAGE);
    return;
  }
  const o = parseArgs(args);
  const exps = plan(o);
  mkdirSync(o.results, { recursive: true });
  if (o.reportOnly) {
    const info = JSON.parse(readFileSync(join(o.results, 'run.json'), 'utf8')) as RunInfo;
    const rows = new Map<ExpId, Row[]>();
    for (const e of info.experiments)
      if (existsSync(join(o.results, `${e.id}.csv`)))
        rows.set(e.id, fromCsv(readFileSync(join(o.results, `${e.id}.csv`), 'utf8')));
    writeReport(info, rows, o.results, o.md);
    console.log(`rebuilt ${o.md} and the SVGs in ${o.results}`);
    return;
  }
  const started = Date.now();
  const loadStart = loadavg();
  const commit = gitState();
  const snapshot = snapshotCode(root, resolve(here, '..'), 'paper');
  codeDir = snapshot.dir;
  try {
    await runAll(o, exps, args, started, loadStart, commit);
  } finally {
    snapshot.release();
  }
}

async function runAll(
  o: Options,
  exps: Experiment[],
  args: string[],
  started: number,
  loadStart: number[],
  commit: string,
): Promise<void> {
  const progress = new Progress(started);

  // 1. Recordings.
  const all = new Map<string, Point>();
  for (const e of exps) for (const p of points(e)) all.set(fileName(p), p);
  progress.line(
    `${all.size} histories in the plan (${exps.map((e) => e.id).join(', ')}); checking which are recorded`,
    true,
  );
  const rec = await recordAll([...all.values()], o.histories, o.recordJobs, progress);
  if (o.recordOnly) {
    progress.done();
    console.log(
      `${rec.recorded} histories recorded, ${rec.failed.size} ` +
        `failed, ${all.size - rec.recorded - rec.failed.size} already there (${o.histories})`,
    );
    return;
  }

  // 2. Checks, one at a time, each in a fresh process (the next one is started ahead, parser loaded).
  const checkStart = Date.now();
  const loadChecks = loadavg();
  interface Job {
    e: Experiment;
    p: Point;
    file: string;
    checker: Checker;
  }
  const jobs: Job[] = [];
  for (const e of exps)
    for (const p of points(e))
      for (const checker of e.checkers)
        if (Number(p.seed) <= (e.checkerSeeds?.[checker] ?? Infinity)) jobs.push({ e, p, file: fileName(p), checker });
  const cache = new Map<string, Outcome>();
  const keyOf = (j: Job) => `${j.file}|${j.checker}|${j.e.checkIso ?? ''}`;
  // Warm-up history for the workers: per workload, the planned history nearest 3 sessions × 5 transactions.
  const warmupOf = new Map<string, string>();
  for (const w of new Set([...all.values()].map((p) => p.workload))) {
    const cands = [...all.values()].filter((p) => p.workload === w && existsSync(join(o.histories, fileName(p))));
    cands.sort(
      (a, b) =>
        Math.abs(a.sessions * a.txns - 15) - Math.abs(b.sessions * b.txns - 15) || Number(a.seed) - Number(b.seed),
    );
    if (cands[0]) warmupOf.set(w, join(o.histories, fileName(cands[0])));
  }
  const warmSpec = (j: Job) =>
    JSON.stringify({
      files: warmupOf.has(j.p.workload) ? [warmupOf.get(j.p.workload)] : [],
      checker: j.checker,
      iso: j.e.checkIso,
    });
  // The distinct checks, in plan order; each runs once, its outcome shared by the experiments that hold it.
  const toRun: Job[] = [];
  const seen = new Set<string>();
  for (const j of jobs) {
    const key = keyOf(j);
    if (seen.has(key)) continue;
    seen.add(key);
    if (rec.failed.has(j.file) || !existsSync(join(o.histories, j.file)))
      cache.set(key, {
        kind: 'error',
        message: `not recorded: ${rec.failed.get(j.file) ?? 'missing file'}`,
        peakMb: '',
      });
    else toRun.push(j);
  }
  let next = toRun.length ? spawnWorker(warmSpec(toRun[0])) : undefined;
  const spawnNext = (i: number) => (i + 1 < toRun.length ? spawnWorker(warmSpec(toRun[i + 1])) : undefined);
  let ran = 0,
    undecided = 0;
  try {
    for (let i = 0; i < toRun.length; i++) {
      const j = toRun[i];
      const w = next!;
      next = o.sequential ? undefined : spawnNext(i);
      const eta = ran > 0 ? fmtDuration(((Date.now() - checkStart) / ran) * (toRun.length - ran)) : '?';
      const asIso = j.e.checkIso ? ` as ${j.e.checkIso}` : '';
      progress.line(
        `checking ${ran + 1}/${toRun.length} ${j.e.id} ${j.checker}${asIso} ${j.file}; ${undecided} ` +
          `undecided so far; ~${eta} left`,
      );
      const outcome = await runJob(w, {
        file: join(o.histories, j.file),
        checker: j.checker,
        iso: j.e.checkIso,
        timeoutMs: o.timeoutMs,
      });
      w.child.kill('SIGKILL');
      if (o.sequential) next = spawnNext(i);
      ran++;
      if (outcome.kind !== 'done' || outcome.done.verdict === 'unknown') {
        undecided++;
        const why = outcome.kind === 'done' ? `unknown: ${outcome.done.reason}` : `${outcome.kind}: ${outcome.message}`;
        progress.line(`${j.file} (${j.checker}${asIso}): ${why}`, true);
      }
      cache.set(keyOf(j), outcome);
    }
  } finally {
    next?.child.kill('SIGKILL');
  }
  const rows = new Map<ExpId, Row[]>(exps.map((e) => [e.id, []]));
  for (const j of jobs) rows.get(j.e.id)!.push(rowOf(j.e, j.p, j.file, j.checker, cache.get(keyOf(j))!, o.timeoutMs));
  progress.line(`checked ${ran} histories in ${fmtDuration(Date.now() - checkStart)}; ${undecided} undecided`, true);
  progress.done();

  for (const e of exps) writeFileSync(join(o.results, `${e.id}.csv`), toCsv(rows.get(e.id)!));
  const info: RunInfo = {
    date: new Date(started).toISOString(),
    quick: o.quick,
    args,
    timeoutMs: o.timeoutMs,
    seeds: o.seeds,
    extSeeds: o.extSeeds,
    limitSeeds: o.limitSeeds,
    exhSeeds: o.exhSeeds,
    experiments: exps,
    machine: {
      cpus: cpus().length,
      cpuModel: cpus()[0]?.model ?? '?',
      memGb: round(totalmem() / 2 ** 30),
      node: process.version,
      platform: `${process.platform} ${process.arch}`,
    },
    database: rec.pg ?? 'embedded PostgreSQL (histories recorded by an earlier run of this benchmark, reused)',
    loadavg: {
      start: loadStart.map((x) => round(x, 2)),
      checksStart: loadChecks.map((x) => round(x, 2)),
      end: loadavg().map((x) => round(x, 2)),
    },
    wallMs: { total: Date.now() - started, recording: rec.ms, checking: Date.now() - checkStart },
    recorded: rec.recorded,
    historiesInPlan: all.size,
    checksRun: ran,
    sequential: o.sequential,
    commit,
  };
  writeFileSync(join(o.results, 'run.json'), `${JSON.stringify(info, null, 2)}\n`);
  writeReport(info, rows, o.results, o.md);
  console.log(
    `results: ${o.results} (${exps.map((e) => `${e.id}.csv/.svg`).join(', ')}), ` +
      `report: ${o.md}; ${fmtDuration(info.wallMs.total)} (recording ${fmtDuration(rec.ms)}, ` +
      `checking ${fmtDuration(info.wallMs.checking)})`,
  );
}
