/**
 * Child process of `npm run bench -- paper`: checks ONE history and exits, so that the peak memory
 * (process.resourceUsage().maxRSS) and the timeout are per history. Protocol (IPC, process.send):
 *
 *   parent -> {file, checker: 'ours'|'naive', iso?, timeoutMs}
 *   child  -> {type: 'ready'}                       (predicate parser loaded, warmed up; waits for a job)
 *   child  -> {type: 'loaded', readMs, modelMs, …}  (readHistory + buildModel done: the parent starts the clock)
 *   child  -> {type: 'done', ...}                   (verdict, stats, time, peak RSS) then exits
 *
 * "ours" is checkHistory (paper Algorithm 3) with explanations and shrinking off: the time is the decision only.
 * "naive" is naiveCheck (src/oracle/naive.ts) with no work bound: it has no clock, the parent kills it; it
 * enumerates, per transaction placed, the sets of transactions it reads from, smallest first. "naive-exhaustive"
 * is naiveCheck's literal mode: every combination of one writer per unreturned key (closest to the paper's baseline).
 */
import { performance } from 'node:perf_hooks';
import { readHistory } from '../src/history/reader.js';
import { loadPredicateParser } from '../src/sql/predicate.js';
import { buildModel } from '../src/checker/model/model.js';
import { checkHistory } from '../src/checker/check.js';
import { naiveCheck } from '../src/oracle/naive.js';
import { parseIsoOverride } from '../src/checker/levels.js';

export interface WorkerJob {
  file: string;
  checker: 'ours' | 'naive' | 'naive-exhaustive';
  /** `--iso` override of the check (e.g. SER), or none: the recorded levels. */
  iso?: string;
  timeoutMs: number;
}

export interface WorkerDone {
  type: 'done';
  verdict: 'consistent' | 'inconsistent' | 'unknown';
  reason?: string;
  timeMs: number;
  readMs: number;
  modelMs: number;
  transactions: number;
  committed: number;
  sessions: number;
  events: number;
  conflicts?: number;
  forcedWitnesses?: number;
  extensions?: number;
  prefixes?: number;
  work?: number;
  /** Our checker: which part decided (absent in builds before the linear check, and when undecided). */
  decidedBy?: 'linear' | 'search';
  peakMb: number;
}

const send = (m: unknown): Promise<void> => new Promise((resolve) => process.send!(m, undefined, {}, () => resolve()));

async function run(job: WorkerJob): Promise<void> {
  const iso = job.iso ? parseIsoOverride(job.iso) : undefined;
  const t0 = performance.now();
  const history = await readHistory(job.file);
  const t1 = performance.now();
  let model: ReturnType<typeof buildModel> | undefined = buildModel(history, { iso });
  const t2 = performance.now();
  const ms = model.stats;
  model = undefined;
  await send({
    type: 'loaded',
    readMs: t1 - t0,
    modelMs: t2 - t1,
    transactions: ms.transactions,
    committed: ms.committed,
    events: ms.events,
  });
  const base = {
    type: 'done' as const,
    readMs: t1 - t0,
    modelMs: t2 - t1,
    transactions: ms.transactions,
    committed: ms.committed,
    sessions: ms.sessions,
    events: ms.events,
  };
  let done: WorkerDone;
  if (job.checker === 'ours') {
    const s = performance.now();
    const r = checkHistory(history, { iso, timeoutMs: job.timeoutMs, explain: false, shrink: false });
    const timeMs = performance.now() - s;
    const st = r.stats;
    done = {
      ...base,
      verdict: r.verdict,
      reason: r.reason ?? r.anomalies[0]?.type,
      timeMs,
      conflicts: st.conflicts,
      forcedWitnesses: st.forcedWitnesses,
      extensions: st.extensions,
      prefixes: st.prefixes,
      decidedBy: r.verdict === 'unknown' ? undefined : st.decidedBy,
      peakMb: 0,
    };
  } else {
    const s = performance.now();
    const r = naiveCheck(history, {
      iso,
      maxWork: Number.POSITIVE_INFINITY,
      exhaustive: job.checker === 'naive-exhaustive',
    });
    const timeMs = performance.now() - s;
    done = { ...base, verdict: r.verdict, reason: r.reason, timeMs, work: r.work, peakMb: 0 };
  }
  done.peakMb = process.resourceUsage().maxRSS / 1024;
  await send(done);
}

/**
 * Warm-up before taking a job (argv[2]: JSON {files, checker, iso}): read, model and check a small history of the
 * job's workload twice with the job's checker, so that the job is measured with the code compiled (JIT) rather
 * than in a cold process. The parent starts the next worker while the current one checks.
 */
async function warmUp(spec: { files: string[]; checker: WorkerJob['checker']; iso?: string }): Promise<void> {
  const iso = spec.iso ? parseIsoOverride(spec.iso) : undefined;
  for (let round = 0; round < 2; round++) {
    for (const file of spec.files) {
      try {
        const h = await readHistory(file);
        buildModel(h, { iso });
        if (spec.checker === 'ours') checkHistory(h, { iso, timeoutMs: 1000, explain: false, shrink: false });
        else naiveCheck(h, { iso, maxWork: 300, exhaustive: spec.checker === 'naive-exhaustive' });
      } catch {
        // a warm-up problem shows again, and is reported, on the real job
      }
    }
  }
}

await loadPredicateParser();
if (process.argv[2]) await warmUp(JSON.parse(process.argv[2]));
process.on('message', (job: WorkerJob) => {
  run(job).then(
    () => process.exit(0),
    async (e: unknown) => {
      await send({ type: 'error', message: (e as Error)?.stack ?? String(e) });
      process.exit(1);
    },
  );
});
await send({ type: 'ready' });
