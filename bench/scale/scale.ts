/**
 * `npm run bench -- scale [options]`: how the checker's time and memory grow with the number of transactions, on
 * generated bank-like histories (bench/scale/generate.ts; consistent by construction unless --inject).
 *
 *   generate the missing histories (seeded; cached in bench/.histories/scale/, git-ignored)
 *   -> check each in a fresh child process (bench/paper-worker.ts: the clock starts after readHistory + buildModel,
 *      the load time is measured apart; peak RSS from the worker, or from /proc while it runs if it dies)
 *   -> bench/results/scale.csv and bench/results/scale.svg (time and peak RSS vs transactions, one line per level)
 *
 * The sizes run in increasing order per level; after a size that is not decided (timeout, out of memory), the
 * larger sizes of that level are skipped (recorded as `skipped`) unless --no-skip.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync, openSync, closeSync } from 'node:fs';
import { cpus, tmpdir, totalmem } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { splitCsvLine } from '../paper.js';
import { PALETTE, renderPlot, type Series } from '../svg.js';
import { UsageError } from '../usage-error.js';
import { snapshotCode } from '../code-snapshot.js';
import {
  defaultAccounts,
  INJECTED,
  SCALE_LEVELS,
  writeScaleHistory,
  type Injected,
  type ScaleLevel,
} from './generate.js';

/**
 * The levels a history is checked at: the generator's mixes (checked at their recorded levels), and RA and CC,
 * which check the SI histories with `--iso RA` / `--iso CC` (every SI execution is one of CC and of RA: the
 * verdict stays consistent, and the curve shows what those levels cost).
 */
export type CheckLevel = ScaleLevel | 'ra' | 'cc';
export const CHECK_LEVELS: readonly CheckLevel[] = [...SCALE_LEVELS, 'ra', 'cc'];
const generatedAs = (l: CheckLevel): ScaleLevel => (l === 'ra' || l === 'cc' ? 'si' : l);
const isoOf = (l: CheckLevel): string | undefined => (l === 'ra' ? 'RA' : l === 'cc' ? 'CC' : undefined);

export const SCALE_USAGE = `usage: npm run bench -- scale [options]

Generates seeded bank-like histories (bench/scale/generate.ts), checks each in its own process with a timeout,
writes bench/results/scale.csv and scale.svg. Each history is checked as a user would, by "isocheck check
FILE --json --no-shrink --timeout S" in its own process: wall time from spawn to exit, peak RSS from /proc.

Options:
  --sizes LIST      transactions per history (default 5000,10000,20000,40000)
  --levels LIST     among si+rc,si,rc (recorded levels) and ra,cc (the si histories checked with --iso RA,
                    --iso CC); default si+rc,si,rc
  --timeout S       per-history check timeout in seconds (default 60)
  --reps N          check each history N times, in N rounds over all the histories (a slow spell of the machine
                    then falls on every size, and each doubling's ratio is paired by round); the row is the run of
                    median wall time, its peak RSS the highest of the N, every wall time in wall_runs_ms, in round
                    order (default 1)
  --heap-mb N       the worker's --max-old-space-size (default 4096: a laptop-sized heap)
  --seed S          generator seed (default 1)
  --accounts N      initial accounts at every size (default: one per 10 transactions, so that each size has the
                    same shape; --accounts 20000 is the shape of the runs before session 9, hotter as it grows)
  --inject LIST     inject anomalies (lost-update,stale-read,fractured-read); default none
  --no-skip         also run the sizes above one that was not decided
  --results DIR     where scale.csv and scale.svg go (default bench/results)
  --histories DIR   generated histories, reused when present (default bench/.histories/scale)
  --generate-only   generate the histories, check nothing
  --svg-only        rebuild scale.svg from the scale.csv in --results (with --timeout for the timeout line)
`;

const here = dirname(fileURLToPath(import.meta.url));
/** The package root: this file runs as dist/bench/scale/scale.js. */
const root = resolve(here, '..', '..', '..');

interface Options {
  sizes: number[];
  levels: CheckLevel[];
  timeoutMs: number;
  reps: number;
  heapMb: number;
  seed: string;
  /** Initial accounts at every size; undefined: the generator's default, proportional to the size. */
  accounts?: number;
  inject: Injected[];
  skip: boolean;
  results: string;
  histories: string;
  generateOnly: boolean;
}

function parseArgs(args: string[]): Options {
  const known = new Set([
    'sizes',
    'levels',
    'timeout',
    'reps',
    'heap-mb',
    'seed',
    'accounts',
    'inject',
    'no-skip',
    'results',
    'histories',
    'generate-only',
    'svg-only',
  ]);
  for (const a of args)
    if (a.startsWith('--') && !known.has(a.slice(2)))
      throw new UsageError(`unknown option ${a} (npm run bench -- scale --help)`);
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
  const posInt = (name: string, s: string) => {
    const n = Number(s);
    if (!Number.isInteger(n) || n < 1) throw new UsageError(`--${name}: "${s}" is not a positive integer`);
    return n;
  };
  const levels = (list('levels') ?? [...SCALE_LEVELS]) as CheckLevel[];
  for (const l of levels)
    if (!CHECK_LEVELS.includes(l)) throw new UsageError(`--levels: unknown "${l}" (${CHECK_LEVELS.join(', ')})`);
  const inject = (list('inject') ?? []) as Injected[];
  for (const i of inject)
    if (!INJECTED.includes(i)) throw new UsageError(`--inject: unknown "${i}" (${INJECTED.join(', ')})`);
  return {
    sizes: (list('sizes') ?? ['5000', '10000', '20000', '40000']).map((s) => posInt('sizes', s)).sort((a, b) => a - b),
    levels,
    timeoutMs: posInt('timeout', get('timeout') ?? '60') * 1000,
    reps: posInt('reps', get('reps') ?? '1'),
    heapMb: posInt('heap-mb', get('heap-mb') ?? '4096'),
    seed: get('seed') ?? '1',
    accounts: get('accounts') === undefined ? undefined : posInt('accounts', get('accounts')!),
    inject,
    skip: !args.includes('--no-skip'),
    results: resolve(get('results') ?? join(root, 'bench', 'results')),
    histories: resolve(get('histories') ?? join(root, 'bench', '.histories', 'scale')),
    generateOnly: args.includes('--generate-only'),
  };
}

/** The cached history's name, with its initial accounts (a file generated with another shape is not reused). */
export const scaleFileName = (
  level: ScaleLevel,
  txns: number,
  seed: string,
  inject: Injected[] = [],
  accounts = defaultAccounts(txns),
) =>
  `bank-${level.replace('+', '-')}-n${txns}-a${accounts}-seed${seed}` +
  `${inject.length ? `-${inject.join('-')}` : ''}.ndjson`;

export interface ScaleRow {
  transactions: number;
  level: CheckLevel;
  inject: string;
  verdict: 'consistent' | 'inconsistent' | 'unknown' | 'timeout' | 'out-of-memory' | 'error' | 'skipped';
  /** Wall time of `isocheck check --json` from start to exit: reading, model, check, output. */
  wall_ms: number | '';
  /** With --reps: every run's wall time, in the order run, separated by ';' (the row is the median run). */
  wall_runs_ms: string;
  /** The checker's own time (stats.timeMs: model and decision); the rest of the wall is reading and output. */
  check_ms: number | '';
  load_ms: number | '';
  decided_by: string;
  anomaly: string;
  peak_rss_mb: number | '';
  committed: number | '';
  events: number | '';
  file_mb: number | '';
  /** Initial accounts of the generated history (the generator's default: one per 10 transactions). */
  accounts: number | '';
  reason: string;
}
const COLUMNS: (keyof ScaleRow)[] = [
  'transactions',
  'level',
  'inject',
  'verdict',
  'wall_ms',
  'wall_runs_ms',
  'check_ms',
  'load_ms',
  'peak_rss_mb',
  'decided_by',
  'anomaly',
  'committed',
  'events',
  'file_mb',
  'accounts',
  'reason',
];

const round = (x: number, d = 1) => Math.round(x * 10 ** d) / 10 ** d;

/** The pids of a live process's children ([] when it is gone, or the kernel has no such file). */
function childrenOf(pid: number | undefined): string[] {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean);
  } catch {
    return [];
  }
}

/** Peak resident memory (MB) of a live process and of its children (the check runs in one when the CLI respawns
 *  itself with a larger young generation, src/cli/respawn.ts): the largest of them, from /proc (Linux). */
function procPeakMb(pid: number | undefined): number | undefined {
  if (!pid) return undefined;
  const hwm = (p: string) => {
    try {
      const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${p}/status`, 'utf8'));
      return m ? Number(m[1]) / 1024 : undefined;
    } catch {
      return undefined;
    }
  };
  const all = [hwm(String(pid)), ...childrenOf(pid).map(hwm)].filter((x): x is number => x !== undefined);
  return all.length > 0 ? Math.max(...all) : undefined;
}

/** The compiled code the runs use: dist/, or the private copy of it taken at the start (code-snapshot.ts). */
let codeDir = join(root, 'dist');

interface CliRun {
  wallMs: number;
  peakMb?: number;
  exit: number | null;
  signal: NodeJS.Signals | null;
  json?: {
    verdict: 'consistent' | 'inconsistent' | 'unknown';
    reason?: string;
    anomalies: { type: string }[];
    stats: { timeMs: number; transactions: number; committed: number; events: number; decidedBy?: string };
  };
  stderr: string;
}

/**
 * Checks one file as a user does: `isocheck check FILE --json --no-shrink --timeout S` in a fresh process (heap
 * limited to --heap-mb), timed from spawn to exit, peak RSS polled from /proc (the largest of the process and its
 * children). Killed 30 s past the timeout.
 */
function checkWithCli(file: string, timeoutMs: number, heapMb: number, iso: string | undefined): Promise<CliRun> {
  // the CLI's entry point, as bin/isocheck.js runs it: a large history is checked in a child (src/cli/respawn.ts)
  const cli = join(codeDir, 'src', 'cli', 'entry.js');
  const dir = mkdtempSync(join(tmpdir(), 'isocheck-scale-'));
  const out = join(dir, 'out.json');
  const fd = openSync(out, 'w');
  const args = [
    `--max-old-space-size=${heapMb}`,
    cli,
    'check',
    file,
    '--json',
    '--no-shrink',
    '--timeout',
    String(timeoutMs / 1000),
    ...(iso ? ['--iso', iso] : []),
  ];
  const started = performance.now();
  const child = spawn(process.execPath, args, { stdio: ['ignore', fd, 'pipe'] });
  closeSync(fd);
  let stderr = '';
  child.stderr?.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-4000)));
  let peak = 0;
  const poll = setInterval(() => (peak = Math.max(peak, procPeakMb(child.pid) ?? 0)), 100);
  const killer = setTimeout(() => {
    // the check's own child first, when the CLI respawned itself (SIGKILL is not forwarded)
    for (const kid of childrenOf(child.pid)) {
      try {
        process.kill(Number(kid), 'SIGKILL');
      } catch {
        // it ended meanwhile
      }
    }
    child.kill('SIGKILL');
  }, timeoutMs + 30_000);
  return new Promise((resolveRun) => {
    child.on('exit', (exit, signal) => {
      const wallMs = performance.now() - started;
      clearInterval(poll);
      clearTimeout(killer);
      let json: CliRun['json'];
      try {
        const parsed = JSON.parse(readFileSync(out, 'utf8'));
        json = Array.isArray(parsed) ? parsed[0] : parsed;
      } catch {
        json = undefined;
      }
      rmSync(dir, { recursive: true, force: true });
      resolveRun({ wallMs, peakMb: peak || undefined, exit, signal, json, stderr });
    });
  });
}

function toCsv(rows: ScaleRow[]): string {
  const field = (v: unknown) => {
    const s = String(v ?? '');
    return /[",\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
  };
  return `${[COLUMNS.join(','), ...rows.map((r) => COLUMNS.map((c) => field(r[c])).join(','))].join('\n')}\n`;
}

/** Two panels: check time (log scale) and peak RSS vs transactions, one line per level. */
export function scaleSvg(rows: ScaleRow[], timeoutMs: number, note: string): string {
  const decided = (r: ScaleRow) => r.verdict === 'consistent' || r.verdict === 'inconsistent';
  const series = (y: (r: ScaleRow) => number | '', withTimeouts: boolean): Series[] =>
    CHECK_LEVELS.filter((l) => rows.some((r) => r.level === l)).map((level, i) => ({
      name: level,
      color: PALETTE[i],
      // Time: decided runs only. Peak RSS: undecided runs too (their RSS when stopped or when they died).
      points: rows
        .filter((r) => r.level === level && (decided(r) || !withTimeouts) && y(r) !== '')
        .map((r) => ({ x: r.transactions, y: y(r) as number })),
      timeouts: withTimeouts
        ? rows
            .filter(
              (r) =>
                r.level === level &&
                r.verdict !== 'consistent' &&
                r.verdict !== 'inconsistent' &&
                r.verdict !== 'skipped',
            )
            .map((r) => ({ x: r.transactions, count: 1, of: 1 }))
        : [],
    }));
  const time = renderPlot({
    title: 'Wall time vs transactions (bank workload, 16 sessions)',
    xLabel: 'transactions',
    yLabel: 'wall time (load included)',
    panels: [{ title: 'wall time of isocheck check (read, model, check)', series: series((r) => r.wall_ms, true) }],
    timeoutMs,
    note: `x: not decided (timeout or out of memory), drawn at the timeout. ${note}`,
  });
  // renderPlot labels its y axis as times: the RSS values go in as "ms" and the labels are turned back into MB.
  const rss = renderPlot({
    title: 'Peak RSS vs transactions (read + model + check, one process)',
    xLabel: 'transactions',
    yLabel: 'peak RSS',
    panels: [
      { title: 'peak RSS (log scale; undecided sizes: when stopped)', series: series((r) => r.peak_rss_mb, false) },
    ],
    timeoutMs: 1,
  }).replace(
    /(\d+(?:\.\d+)?) (s|ms|µs)(?=<)/g,
    (_, v: string, unit: string) =>
      `${Math.round(Number(v) * (unit === 's' ? 1000 : unit === 'ms' ? 1 : 0.001) * 1000) / 1000} MB`,
  );
  // Stack the two plots in one SVG.
  const dims = (s: string) => {
    const m = /width="(\d+)" height="(\d+)"/.exec(s)!;
    return [Number(m[1]), Number(m[2])];
  };
  const [w1, h1] = dims(time);
  const [w2, h2] = dims(rss);
  const inner = (s: string) => s.replace(/^<svg[^>]*>\n?/, '').replace(/<\/svg>\n?$/, '');
  const w = Math.max(w1, w2);
  return (
    `<svg xmlns="http://www.w3.org/2000/svg" width="${w}" height="${h1 + h2}" viewBox="0 0 ${w} ${h1 + h2}" ` +
    `font-family="Helvetica, Arial, sans-serif" font-size="11">\n<g>${inner(time)}</g>\n<g ` +
    `transform="translate(0 ${h1})">${inner(rss)}</g>\n</svg>\n`
  );
}

export async function runScaleBench(args: string[]): Promise<void> {
  if (args.includes('--help') || args.includes('-h')) {
    console.log(SCALE_USAGE);
    return;
  }
  const o = parseArgs(args);
  const machine =
    `${cpus().length} × ${cpus()[0]?.model ?? '?'}, ${round(totalmem() / 2 ** 30)} GB, Node ` +
    `${process.version}, worker heap ${o.heapMb} MB`;
  if (args.includes('--svg-only')) {
    const [header, ...lines] = readFileSync(join(o.results, 'scale.csv'), 'utf8').split('\n').filter(Boolean);
    const cols = splitCsvLine(header);
    const numeric = new Set([
      'transactions',
      'wall_ms',
      'check_ms',
      'load_ms',
      'peak_rss_mb',
      'committed',
      'events',
      'file_mb',
      'accounts',
    ]);
    const rows = lines.map((l) => {
      const f = splitCsvLine(l);
      return Object.fromEntries(
        cols.map((c, i) => [c, numeric.has(c) && f[i] !== '' ? Number(f[i]) : f[i]]),
      ) as unknown as ScaleRow;
    });
    writeFileSync(join(o.results, 'scale.svg'), scaleSvg(rows, o.timeoutMs, machine));
    console.log(`rebuilt ${join(o.results, 'scale.svg')}`);
    return;
  }
  mkdirSync(o.histories, { recursive: true });
  mkdirSync(o.results, { recursive: true });
  const rows: ScaleRow[] = [];
  const snapshot = o.generateOnly ? undefined : snapshotCode(root, join(root, 'dist'), 'scale');
  if (snapshot) codeDir = snapshot.dir;
  try {
    await checkAll(o, rows);
  } finally {
    snapshot?.release();
  }
  if (o.generateOnly) return;
  writeFileSync(join(o.results, 'scale.csv'), toCsv(rows));
  writeFileSync(join(o.results, 'scale.svg'), scaleSvg(rows, o.timeoutMs, machine));
  console.log(`results: ${join(o.results, 'scale.csv')}, ${join(o.results, 'scale.svg')} (${machine})`);
}

/** A run's verdict, and why when it is not a decision. */
function verdictOf(r: CliRun, o: Options): { verdict: ScaleRow['verdict']; reason: string } {
  const d = r.json;
  if (d)
    return {
      verdict: d.verdict === 'unknown' && /time limit/.test(d.reason ?? '') ? 'timeout' : d.verdict,
      reason: d.reason ?? '',
    };
  if (/heap out of memory|Allocation failed|invalid array length|Invalid typed array length/i.test(r.stderr))
    return {
      verdict: 'out-of-memory',
      reason: `process died: ${/(FATAL ERROR[^\n]*|RangeError[^\n]*)/.exec(r.stderr)?.[1] ?? 'out of memory'}`,
    };
  if (r.signal === 'SIGKILL') return { verdict: 'timeout', reason: `killed ${o.timeoutMs / 1000 + 30} s after start` };
  return { verdict: 'error', reason: `exit ${r.exit ?? r.signal}: ${r.stderr.trim().split('\n').slice(-1)[0] ?? ''}` };
}

/** The element of median `value` (the lower middle one for an even count). */
const medianBy = <T>(xs: readonly T[], value: (x: T) => number): T =>
  [...xs].sort((a, b) => value(a) - value(b))[(xs.length - 1) >> 1];
const median = (xs: readonly number[]): number => medianBy(xs, (x) => x);

/**
 * Checks every history, `--reps` rounds over all of them (each round checks each history once, smallest first), so
 * that a slow spell of the machine (runs of the same command here differ by up to 20%) falls on every size rather
 * than on one; the cost of a doubling is then the median of its ratios paired by round.
 */
async function checkAll(o: Options, rows: ScaleRow[]): Promise<void> {
  const plan: { level: CheckLevel; txns: number; file: string; fileMb: number }[] = [];
  for (const level of o.levels) {
    for (const txns of o.sizes) {
      const file = join(o.histories, scaleFileName(generatedAs(level), txns, o.seed, o.inject, o.accounts));
      if (!existsSync(file)) {
        const t = Date.now();
        const st = writeScaleHistory(file, {
          txns,
          level: generatedAs(level),
          seed: o.seed,
          inject: o.inject,
          accounts: o.accounts,
        });
        console.error(
          `generated ${file}: ${st.transactions + st.injected} transactions (${st.committed} committed), ` +
            `${((Date.now() - t) / 1000).toFixed(1)} s`,
        );
      }
      plan.push({ level, txns, file, fileMb: round(Number(readFileSync(file).byteLength) / 2 ** 20) });
    }
  }
  if (o.generateOnly) return;
  const inject = o.inject.join('+');
  const runs: CliRun[][] = plan.map(() => []);
  const stopped = new Set<CheckLevel>();
  for (let rep = 0; rep < o.reps; rep++) {
    for (let i = 0; i < plan.length; i++) {
      const { level, txns, file, fileMb } = plan[i];
      if (stopped.has(level) && runs[i].length === 0) continue;
      console.error(
        `checking ${level}${inject ? ` with ${inject}` : ''} n=${txns} (${fileMb} MB)` +
          `${o.reps > 1 ? `, round ${rep + 1} of ${o.reps}` : ''} ...`,
      );
      const r = await checkWithCli(file, o.timeoutMs, o.heapMb, isoOf(level));
      runs[i].push(r);
      const { verdict, reason } = verdictOf(r, o);
      console.error(
        `  ${verdict}${r.json?.anomalies[0] ? ` (${r.json.anomalies[0].type})` : ''} wall ${round(r.wallMs)} ms ` +
          `(check ${r.json ? round(r.json.stats.timeMs) : '-'} ms), peak RSS ${r.peakMb ? round(r.peakMb) : '-'} MB, ` +
          `by ${r.json?.stats.decidedBy || '-'} ${reason}`,
      );
      if (rep === 0 && verdict !== 'consistent' && verdict !== 'inconsistent' && o.skip) stopped.add(level);
    }
  }
  for (let i = 0; i < plan.length; i++) {
    const { level, txns, fileMb } = plan[i];
    const accounts = o.accounts ?? defaultAccounts(txns);
    if (runs[i].length === 0) {
      rows.push({
        transactions: txns,
        level,
        inject,
        verdict: 'skipped',
        wall_ms: '',
        wall_runs_ms: '',
        check_ms: '',
        load_ms: '',
        peak_rss_mb: '',
        decided_by: '',
        anomaly: '',
        committed: '',
        events: '',
        file_mb: fileMb,
        accounts,
        reason: 'a smaller size of this level was not decided',
      });
      continue;
    }
    // the run of median wall time, with the highest peak of all
    const r = medianBy(runs[i], (x) => x.wallMs);
    const peakMb = Math.max(...runs[i].map((x) => x.peakMb ?? 0)) || undefined;
    const d = r.json;
    const { verdict, reason } = verdictOf(r, o);
    rows.push({
      transactions: d?.stats.transactions ?? txns,
      level,
      inject,
      verdict,
      wall_ms: round(r.wallMs),
      wall_runs_ms: runs[i].length > 1 ? runs[i].map((x) => round(x.wallMs)).join(';') : '',
      check_ms: d ? round(d.stats.timeMs) : '',
      load_ms: d ? round(r.wallMs - d.stats.timeMs) : '',
      peak_rss_mb: peakMb ? round(peakMb) : '',
      decided_by: d?.stats.decidedBy ?? '',
      anomaly: d?.anomalies[0]?.type ?? '',
      committed: d?.stats.committed ?? '',
      events: d?.stats.events ?? '',
      file_mb: fileMb,
      accounts,
      reason,
    });
  }
  // each doubling (a size and the next of the same level): the median of its wall-time ratios paired by round
  for (let i = 1; i < plan.length; i++) {
    const [a, b] = [plan[i - 1], plan[i]];
    if (a.level !== b.level || b.txns !== 2 * a.txns || runs[i].length === 0) continue;
    const ratios = runs[i].map((r, k) => r.wallMs / runs[i - 1][k].wallMs);
    const peaks = runs[i].map((r, k) => (r.peakMb ?? 0) / (runs[i - 1][k].peakMb ?? 1));
    console.error(
      `${a.level} ${a.txns} -> ${b.txns}: wall x${median(ratios).toFixed(2)} (paired by round: ` +
        `${ratios.map((x) => x.toFixed(2)).join(', ')}), peak RSS x${median(peaks).toFixed(2)}`,
    );
  }
}
