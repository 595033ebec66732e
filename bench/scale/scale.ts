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
import { fork, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { WorkerDone, WorkerJob } from '../paper-worker.js';
import { splitCsvLine } from '../paper.js';
import { PALETTE, renderPlot, type Series } from '../svg.js';
import { UsageError } from '../usage-error.js';
import { snapshotCode } from '../code-snapshot.js';
import { INJECTED, SCALE_LEVELS, writeScaleHistory, type Injected, type ScaleLevel } from './generate.js';

export const SCALE_USAGE = `usage: npm run bench -- scale [options]

Generates seeded bank-like histories (bench/scale/generate.ts), checks each in its own process with a timeout,
writes bench/results/scale.csv and scale.svg.

Options:
  --sizes LIST      transactions per history (default 5000,10000,20000,40000)
  --levels LIST     among si+rc,si,rc (default all three)
  --timeout S       per-history check timeout in seconds (default 60)
  --heap-mb N       the worker's --max-old-space-size (default 4096: a laptop-sized heap)
  --seed S          generator seed (default 1)
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
  levels: ScaleLevel[];
  timeoutMs: number;
  heapMb: number;
  seed: string;
  inject: Injected[];
  skip: boolean;
  results: string;
  histories: string;
  generateOnly: boolean;
}

function parseArgs(args: string[]): Options {
  const known = new Set(['sizes', 'levels', 'timeout', 'heap-mb', 'seed', 'inject', 'no-skip', 'results', 'histories', 'generate-only', 'svg-only']);
  for (const a of args) if (a.startsWith('--') && !known.has(a.slice(2))) throw new UsageError(`unknown option ${a} (npm run bench -- scale --help)`);
  const get = (name: string): string | undefined => {
    const i = args.indexOf(`--${name}`);
    if (i < 0) return undefined;
    const v = args[i + 1];
    if (v === undefined || v.startsWith('--')) throw new UsageError(`--${name} needs a value`);
    return v;
  };
  const list = (name: string) => get(name)?.split(',').map((s) => s.trim()).filter(Boolean);
  const posInt = (name: string, s: string) => {
    const n = Number(s);
    if (!Number.isInteger(n) || n < 1) throw new UsageError(`--${name}: "${s}" is not a positive integer`);
    return n;
  };
  const levels = (list('levels') ?? [...SCALE_LEVELS]) as ScaleLevel[];
  for (const l of levels) if (!SCALE_LEVELS.includes(l)) throw new UsageError(`--levels: unknown "${l}" (${SCALE_LEVELS.join(', ')})`);
  const inject = (list('inject') ?? []) as Injected[];
  for (const i of inject) if (!INJECTED.includes(i)) throw new UsageError(`--inject: unknown "${i}" (${INJECTED.join(', ')})`);
  return {
    sizes: (list('sizes') ?? ['5000', '10000', '20000', '40000']).map((s) => posInt('sizes', s)).sort((a, b) => a - b),
    levels,
    timeoutMs: posInt('timeout', get('timeout') ?? '60') * 1000,
    heapMb: posInt('heap-mb', get('heap-mb') ?? '4096'),
    seed: get('seed') ?? '1',
    inject,
    skip: !args.includes('--no-skip'),
    results: resolve(get('results') ?? join(root, 'bench', 'results')),
    histories: resolve(get('histories') ?? join(root, 'bench', '.histories', 'scale')),
    generateOnly: args.includes('--generate-only'),
  };
}

export const scaleFileName = (level: ScaleLevel, txns: number, seed: string, inject: Injected[] = []) =>
  `bank-${level.replace('+', '-')}-n${txns}-seed${seed}${inject.length ? `-${inject.join('-')}` : ''}.ndjson`;

export interface ScaleRow {
  transactions: number;
  level: ScaleLevel;
  verdict: 'consistent' | 'inconsistent' | 'unknown' | 'timeout' | 'out-of-memory' | 'error' | 'skipped';
  check_ms: number | '';
  load_ms: number | '';
  peak_rss_mb: number | '';
  committed: number | '';
  events: number | '';
  file_mb: number | '';
  reason: string;
}
const COLUMNS: (keyof ScaleRow)[] = ['transactions', 'level', 'verdict', 'check_ms', 'load_ms', 'peak_rss_mb', 'committed', 'events', 'file_mb', 'reason'];

const round = (x: number, d = 1) => Math.round(x * 10 ** d) / 10 ** d;

/** Peak resident memory (MB) of a live process, from /proc (Linux). */
function procPeakMb(pid: number | undefined): number | undefined {
  if (!pid) return undefined;
  try {
    const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) / 1024 : undefined;
  } catch {
    return undefined;
  }
}

/** The compiled code the workers run: dist/, or the private copy of it taken at the start (code-snapshot.ts). */
let codeDir = join(root, 'dist');

interface Loaded { readMs: number; modelMs: number; transactions: number; committed: number; events: number }

/** Checks one file in a fresh paper-worker process (no warm-up: the check of a large history dwarfs the JIT). */
function checkInChild(file: string, timeoutMs: number, heapMb: number): Promise<{ done?: WorkerDone; loaded?: Loaded; verdict?: ScaleRow['verdict']; reason?: string; peakMb?: number }> {
  const worker = join(codeDir, 'bench', 'paper-worker.js');
  const child: ChildProcess = fork(worker, [], { stdio: ['ignore', 'ignore', 'pipe', 'ipc'], execArgv: [`--max-old-space-size=${heapMb}`] });
  let stderr = '';
  child.stderr?.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-4000)));
  let peak = 0;
  const poll = setInterval(() => (peak = Math.max(peak, procPeakMb(child.pid) ?? 0)), 200);
  return new Promise((resolveOutcome) => {
    let settled = false;
    let timer: NodeJS.Timeout | undefined;
    let loaded: Loaded | undefined;
    const finish = (o: { done?: WorkerDone; verdict?: ScaleRow['verdict']; reason?: string }) => {
      if (settled) return;
      settled = true;
      clearInterval(poll);
      if (timer) clearTimeout(timer);
      child.kill('SIGKILL');
      resolveOutcome({ ...o, loaded, peakMb: Math.max(peak, o.done?.peakMb ?? 0) || undefined });
    };
    child.on('message', (m: { type: string } & Record<string, unknown>) => {
      if (m.type === 'ready') child.send({ file, checker: 'ours', timeoutMs } satisfies WorkerJob);
      else if (m.type === 'loaded') {
        loaded = m as unknown as Loaded;
        // The checker stops itself at the timeout (its budget checks are periodic): a grace of 10 s, then killed.
        timer = setTimeout(() => {
          peak = Math.max(peak, procPeakMb(child.pid) ?? 0);
          finish({ verdict: 'timeout', reason: `killed after ${timeoutMs / 1000 + 10} s` });
        }, timeoutMs + 10_000);
      } else if (m.type === 'done') finish({ done: m as unknown as WorkerDone });
      else if (m.type === 'error') finish({ verdict: 'error', reason: String(m.message).split('\n')[0] });
    });
    child.on('exit', (code, signal) => {
      const oom = /heap out of memory|Allocation failed|invalid array length|Invalid typed array length/i.test(stderr);
      finish({ verdict: oom ? 'out-of-memory' : 'error', reason: oom ? `worker died: ${/(FATAL ERROR[^\n]*|RangeError[^\n]*)/.exec(stderr)?.[1] ?? 'out of memory'}` : `worker exited (${signal ?? code}): ${stderr.trim().split('\n').slice(-1)[0] ?? ''}` });
    });
  });
}

function toCsv(rows: ScaleRow[]): string {
  const field = (v: unknown) => {
    const s = String(v ?? '');
    return /[",\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
  };
  return [COLUMNS.join(','), ...rows.map((r) => COLUMNS.map((c) => field(r[c])).join(','))].join('\n') + '\n';
}

/** Two panels: check time (log scale) and peak RSS vs transactions, one line per level. */
export function scaleSvg(rows: ScaleRow[], timeoutMs: number, note: string): string {
  const decided = (r: ScaleRow) => r.verdict === 'consistent' || r.verdict === 'inconsistent';
  const series = (y: (r: ScaleRow) => number | '', withTimeouts: boolean): Series[] =>
    SCALE_LEVELS.filter((l) => rows.some((r) => r.level === l)).map((level, i) => ({
      name: level,
      color: PALETTE[i],
      // Time: decided runs only. Peak RSS: undecided runs too (their RSS when stopped or when they died).
      points: rows.filter((r) => r.level === level && (decided(r) || !withTimeouts) && y(r) !== '').map((r) => ({ x: r.transactions, y: y(r) as number })),
      timeouts: withTimeouts ? rows.filter((r) => r.level === level && r.verdict !== 'consistent' && r.verdict !== 'inconsistent' && r.verdict !== 'skipped').map((r) => ({ x: r.transactions, count: 1, of: 1 })) : [],
    }));
  const time = renderPlot({ title: 'Check time vs transactions (bank workload, 16 sessions)', xLabel: 'transactions', yLabel: 'check time (load excluded)', panels: [{ title: 'check time', series: series((r) => r.check_ms, true) }], timeoutMs, note: `x: not decided (timeout or out of memory), drawn at the timeout. ${note}` });
  // renderPlot labels its y axis as times: the RSS values go in as "ms" and the labels are turned back into MB.
  const rss = renderPlot({ title: 'Peak RSS vs transactions (read + model + check, one process)', xLabel: 'transactions', yLabel: 'peak RSS', panels: [{ title: 'peak RSS (log scale; undecided sizes: when stopped)', series: series((r) => r.peak_rss_mb, false) }], timeoutMs: 1 })
    .replace(/(\d+(?:\.\d+)?) (s|ms|µs)(?=<)/g, (_, v: string, unit: string) => `${Math.round(Number(v) * (unit === 's' ? 1000 : unit === 'ms' ? 1 : 0.001) * 1000) / 1000} MB`);
  // Stack the two plots in one SVG.
  const dims = (s: string) => {
    const m = /width="(\d+)" height="(\d+)"/.exec(s)!;
    return [Number(m[1]), Number(m[2])];
  };
  const [w1, h1] = dims(time);
  const [w2, h2] = dims(rss);
  const inner = (s: string) => s.replace(/^<svg[^>]*>\n?/, '').replace(/<\/svg>\n?$/, '');
  const w = Math.max(w1, w2);
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${w}" height="${h1 + h2}" viewBox="0 0 ${w} ${h1 + h2}" font-family="Helvetica, Arial, sans-serif" font-size="11">\n<g>${inner(time)}</g>\n<g transform="translate(0 ${h1})">${inner(rss)}</g>\n</svg>\n`;
}

export async function runScaleBench(args: string[]): Promise<void> {
  if (args.includes('--help') || args.includes('-h')) {
    console.log(SCALE_USAGE);
    return;
  }
  const o = parseArgs(args);
  const machine = `${cpus().length} × ${cpus()[0]?.model ?? '?'}, ${round(totalmem() / 2 ** 30)} GB, Node ${process.version}, worker heap ${o.heapMb} MB`;
  if (args.includes('--svg-only')) {
    const [header, ...lines] = readFileSync(join(o.results, 'scale.csv'), 'utf8').split('\n').filter(Boolean);
    const cols = splitCsvLine(header);
    const numeric = new Set(['transactions', 'check_ms', 'load_ms', 'peak_rss_mb', 'committed', 'events', 'file_mb']);
    const rows = lines.map((l) => {
      const f = splitCsvLine(l);
      return Object.fromEntries(cols.map((c, i) => [c, numeric.has(c) && f[i] !== '' ? Number(f[i]) : f[i]])) as unknown as ScaleRow;
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

async function checkAll(o: Options, rows: ScaleRow[]): Promise<void> {
  for (const level of o.levels) {
    let stopped = false;
    for (const txns of o.sizes) {
      const file = join(o.histories, scaleFileName(level, txns, o.seed, o.inject));
      if (!existsSync(file)) {
        const t = Date.now();
        const st = writeScaleHistory(file, { txns, level, seed: o.seed, inject: o.inject });
        console.error(`generated ${file}: ${st.transactions + st.injected} transactions (${st.committed} committed), ${((Date.now() - t) / 1000).toFixed(1)} s`);
      }
      if (o.generateOnly) continue;
      const fileMb = round(Number(readFileSync(file).byteLength) / 2 ** 20);
      if (stopped) {
        rows.push({ transactions: txns, level, verdict: 'skipped', check_ms: '', load_ms: '', peak_rss_mb: '', committed: '', events: '', file_mb: fileMb, reason: 'a smaller size of this level was not decided' });
        continue;
      }
      console.error(`checking ${level} n=${txns} (${fileMb} MB) ...`);
      const r = await checkInChild(file, o.timeoutMs, o.heapMb);
      const d = r.done;
      const l = r.loaded;
      let verdict: ScaleRow['verdict'] = d ? d.verdict : r.verdict!;
      if (d?.verdict === 'unknown' && /time limit/.test(d.reason ?? '')) verdict = 'timeout';
      const row: ScaleRow = {
        transactions: d?.transactions ?? l?.transactions ?? txns,
        level,
        verdict,
        check_ms: d ? round(d.timeMs) : verdict === 'timeout' ? o.timeoutMs : '',
        load_ms: d ? round(d.readMs + d.modelMs) : l ? round(l.readMs + l.modelMs) : '',
        peak_rss_mb: r.peakMb ? round(r.peakMb) : '',
        committed: d?.committed ?? l?.committed ?? '',
        events: d?.events ?? l?.events ?? '',
        file_mb: fileMb,
        reason: (d ? d.reason : r.reason) ?? '',
      };
      rows.push(row);
      console.error(`  ${row.verdict} check ${row.check_ms} ms, load ${row.load_ms} ms, peak RSS ${row.peak_rss_mb} MB ${row.reason}`);
      if (verdict !== 'consistent' && verdict !== 'inconsistent' && o.skip) stopped = true;
    }
  }
}
