/**
 * `npm run bench -- compare --base DIST [--timeout S] [--reps N] [--iso LEVELS] [--md FILE] FILE...`: our checker at
 * two versions of the code on the same histories, in one run, so that a speedup is a ratio measured under the same
 * load.
 *
 * DIST is the compiled tree (dist/) of another checkout, e.g. of an older commit:
 *
 *     git worktree add /tmp/base <commit> &&
 *       (cd /tmp/base && ln -s "$PWD/node_modules" . && npx tsc -p tsconfig.build.json)
 *     npm run bench -- compare --base /tmp/base/dist bench/slow/*.gz
 *
 * Each check runs in a fresh child process of that version's `bench/paper-worker.js` (the protocol of
 * paper-worker.ts: warm-up on the file itself when it is under 5 MB, load, then the check with its own deadline), base
 * and head alternating, `--reps` times each; the table gives the median check time, the peak RSS and the verdicts (a
 * speedup over a base that stopped at its time limit is a lower bound: ≥). This build's dist/ is copied first
 * (code-snapshot.ts), so that a rebuild during the run cannot change the head's code halfway.
 */
import { fork } from 'node:child_process';
import { existsSync, statSync, writeFileSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { WorkerDone, WorkerJob } from './paper-worker.js';
import { UsageError } from './usage-error.js';
import { snapshotCode } from './code-snapshot.js';

const USAGE = `usage: npm run bench -- compare --base DIST [--timeout S] [--reps N] [--iso LEVELS] [--md FILE] FILE...
  DIST     compiled tree (dist/) of the other version, with bench/paper-worker.js
  --timeout  per check, seconds (default 120)   --reps  checks per file and version (default 1)
  --iso    check every file at these levels (as check --iso, e.g. SER for the paper's experiment 3)
  --md     also write the table to FILE`;

const here = dirname(fileURLToPath(import.meta.url)); // dist/bench

interface Outcome {
  verdict: string;
  checkMs: number;
  loadMs: number;
  peakMb: number;
  conflicts?: number;
  decidedBy?: string;
}

function checkOnce(dist: string, file: string, timeoutMs: number, iso: string | undefined): Promise<Outcome> {
  const worker = join(dist, 'bench', 'paper-worker.js');
  return new Promise((done) => {
    // Small histories are measured warm (the worker checks the file twice first, as the paper benchmark does).
    const warm = statSync(file).size < 5_000_000 ? [file] : [];
    const child = fork(worker, [JSON.stringify({ files: warm, checker: 'ours', iso })], {
      stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
      execArgv: ['--max-old-space-size=8192'],
    });
    child.stderr?.resume();
    let loadMs = 0;
    let timer: NodeJS.Timeout | undefined;
    const finish = (o: Outcome) => {
      if (timer) clearTimeout(timer);
      child.kill('SIGKILL');
      done(o);
    };
    child.on('message', (m: { type: string } & Record<string, unknown>) => {
      if (m.type === 'ready') child.send({ file, checker: 'ours', iso, timeoutMs } satisfies WorkerJob);
      else if (m.type === 'loaded') {
        loadMs = Number(m.readMs) + Number(m.modelMs);
        timer = setTimeout(
          () => finish({ verdict: 'killed', checkMs: timeoutMs, loadMs, peakMb: 0 }),
          timeoutMs + 30_000,
        );
      } else if (m.type === 'done') {
        const d = m as unknown as WorkerDone;
        finish({
          verdict: d.verdict === 'unknown' ? `unknown (${d.reason ?? 'time limit'})` : d.verdict,
          checkMs: d.timeMs,
          loadMs,
          peakMb: d.peakMb,
          conflicts: d.conflicts,
          decidedBy: d.decidedBy,
        });
      } else if (m.type === 'error')
        finish({ verdict: `error: ${String(m.message).split('\n')[0]}`, checkMs: 0, loadMs, peakMb: 0 });
    });
    child.on('exit', (code, signal) =>
      finish({ verdict: `worker exited (${signal ?? code})`, checkMs: 0, loadMs, peakMb: 0 }),
    );
  });
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)];
const ms = (x: number) => (x >= 1000 ? `${(x / 1000).toFixed(2)} s` : `${x.toFixed(0)} ms`);

export async function runCompare(args: string[]): Promise<void> {
  if (args.includes('--help') || args.length === 0) {
    console.log(USAGE);
    return;
  }
  const opt = (name: string) => {
    const i = args.indexOf(`--${name}`);
    if (i < 0) return undefined;
    const v = args[i + 1];
    if (v === undefined || v.startsWith('--')) throw new UsageError(`--${name} needs a value`);
    args.splice(i, 2);
    return v;
  };
  const base = opt('base');
  const timeoutMs = Number(opt('timeout') ?? 120) * 1000;
  const reps = Number(opt('reps') ?? 1);
  const md = opt('md');
  const iso = opt('iso');
  if (!base) throw new UsageError('--base DIST is required (npm run bench -- compare --help)');
  const baseDist = resolve(base);
  if (!existsSync(join(baseDist, 'bench', 'paper-worker.js')))
    throw new UsageError(`${baseDist}/bench/paper-worker.js not found: DIST must be a compiled tree (dist/)`);
  if (!Number.isFinite(timeoutMs) || timeoutMs <= 0 || !Number.isInteger(reps) || reps < 1)
    throw new UsageError('--timeout and --reps must be positive');
  const files = args.filter((a) => !a.startsWith('--'));
  for (const a of args) if (a.startsWith('--')) throw new UsageError(`unknown option ${a}`);
  for (const f of files) if (!existsSync(f)) throw new UsageError(`${f}: no such file`);
  const snapshot = snapshotCode(resolve(here, '..', '..'), resolve(here, '..'), 'compare');
  let table: string;
  try {
    table = await compareFiles(baseDist, snapshot.dir, files, timeoutMs, reps, iso);
  } finally {
    snapshot.release();
  }
  console.log(table);
  if (md) writeFileSync(md, `${table}\n`);
}

/** Base and head alternating on each file, `reps` times; the markdown table. */
async function compareFiles(
  baseDist: string,
  headDist: string,
  files: string[],
  timeoutMs: number,
  reps: number,
  iso: string | undefined,
): Promise<string> {
  const rows: string[][] = [];
  const ratios: number[] = [];
  let disagree = 0;
  for (const file of files) {
    const runs: Record<'base' | 'head', Outcome[]> = { base: [], head: [] };
    for (let r = 0; r < reps; r++) {
      for (const which of ['base', 'head'] as const) {
        const o = await checkOnce(which === 'base' ? baseDist : headDist, resolve(file), timeoutMs, iso);
        runs[which].push(o);
        process.stderr.write(
          `${basename(file)} ${which}: ${o.verdict}${o.decidedBy ? ` (${o.decidedBy})` : ''} ${ms(o.checkMs)} ` +
            `(load ${ms(o.loadMs)}, ${o.peakMb.toFixed(0)} MB)\n`,
        );
      }
    }
    const b = median(runs.base.map((o) => o.checkMs));
    const h = median(runs.head.map((o) => o.checkMs));
    const verdicts = (os: Outcome[]) =>
      [...new Set(os.map((o) => o.verdict + (o.decidedBy ? `, ${o.decidedBy}` : '')))].join('/');
    // Decided verdicts that differ (between the versions or between repetitions) are a correctness problem; an
    // undecided side (time limit, killed, error) is no disagreement, but no agreement either.
    const all = [...runs.base, ...runs.head];
    const decidedVerdicts = new Set<string>(
      all.map((o) => o.verdict).filter((v) => v === 'consistent' || v === 'inconsistent'),
    );
    const agree =
      decidedVerdicts.size > 1
        ? '**NO**'
        : all.every((o) => decidedVerdicts.has(o.verdict))
          ? 'yes'
          : 'n/a (undecided)';
    if (decidedVerdicts.size > 1) disagree++;
    if (agree === 'yes') ratios.push(b / h);
    const baseStopped = runs.base.some((o) => o.verdict.startsWith('unknown') || o.verdict === 'killed');
    rows.push([
      `\`${basename(file)}\``,
      String(runs.head[0].conflicts ?? ''),
      ms(median(runs.head.map((o) => o.loadMs))),
      `${ms(b)} (${verdicts(runs.base)})`,
      `${ms(h)} (${verdicts(runs.head)})`,
      `${baseStopped ? '≥ ' : ''}${(b / h).toFixed(2)}×`,
      agree,
      `${median(runs.base.map((o) => o.peakMb)).toFixed(0)} → ${median(runs.head.map((o) => o.peakMb)).toFixed(0)}`,
    ]);
  }
  const header = [
    'history',
    'open conflicts (head)',
    'load',
    'base check',
    'head check',
    'speedup',
    'same verdict',
    'peak RSS MB',
  ];
  const geo = ratios.length ? Math.exp(ratios.reduce((a, r) => a + Math.log(r), 0) / ratios.length) : NaN;
  const summary =
    `${files.length} files; speedup over the ${ratios.length} decided alike by both: geometric ` +
    `mean ${geo.toFixed(2)}×, median ${ratios.length ? median(ratios).toFixed(2) : '–'}×, ` +
    `min ${ratios.length ? Math.min(...ratios).toFixed(2) : '–'}×, ` +
    `max ${ratios.length ? Math.max(...ratios).toFixed(2) : '–'}×; decided verdicts that differ: ${disagree}.`;
  return [
    `| ${header.join(' | ')} |`,
    `| ${header.map((_, i) => (i === 0 ? ':--' : '--:')).join(' | ')} |`,
    ...rows.map((r) => `| ${r.join(' | ')} |`),
    '',
    summary,
  ].join('\n');
}
