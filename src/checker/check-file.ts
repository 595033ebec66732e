/**
 * `check()`, the library's one call (README, "Using isocheck as a library"): load what the checker needs (the
 * WHERE-clause parser), read the history when given a file name, check it at each transaction's level or at the
 * levels an `iso` override gives. The CLI's `isocheck check` goes through it too.
 */
import { loadPredicateParser } from '../sql/predicate.js';
import { readHistory, validateHistory, type ReadOptions } from '../history/reader.js';
import type { History } from '../history/history.js';
import { checkHistory, type CheckResult, type CheckRunOptions } from './check.js';
import { parseIsoOverride, type IsoOverride } from './levels.js';
import { isAllocationFailure, MemoryExceeded, MemoryGuard } from './budget.js';
import { zeroStats } from './result.js';

export interface CheckFileOptions {
  /** Levels to check at instead of the recorded ones: `"SER"` for every transaction, or
   *  `"Payment=SER,NewOrder=SER,*=RC"` by label (as `--iso`), or an already parsed override. */
  iso?: string | IsoOverride;
  /** Stop the search after this many milliseconds; the verdict is then `unknown`. Default: no limit. */
  timeoutMs?: number;
  /** Also check the well-formedness of what aborted transactions read (default false). */
  checkAbortedReads?: boolean;
  /** Search for a small inconsistent sub-history to explain an inconsistent verdict (default true). */
  shrink?: boolean;
  /** Limits for reading a file (ReadOptions: the longest line, the most bytes after decompression). */
  maxLineBytes?: ReadOptions['maxLineBytes'];
  maxInputBytes?: ReadOptions['maxInputBytes'];
  /** The most reading and checking may hold in memory, in bytes (CheckOptions.maxMemoryBytes; `--max-memory`). */
  maxMemoryBytes?: number;
  /** Progress of a long run: the stage entered (reading reports every 100,000 lines). */
  progress?: (stage: string) => void;
}

/**
 * Checks one history (a file name, `.ndjson` or `.ndjson.gz`, `-` for standard input, or a History already read) and
 * returns the verdict, anomalies with explanations, a witness commit order when consistent, notes and statistics.
 * Throws `HistoryFormatError` (file and line) for a malformed file or History and `InputError` for other bad input.
 * Reading is asynchronous; the check itself runs on the calling thread (CPU-bound: bound it with `timeoutMs`,
 * or call it from a worker thread to keep an event loop free).
 */
export async function check(history: string | History, options: CheckFileOptions = {}): Promise<CheckResult> {
  const iso = typeof options.iso === 'string' ? parseIsoOverride(options.iso) : options.iso;
  await loadPredicateParser();
  const h = typeof history === 'string' ? await readForCheck(history, options) : history;
  if ('verdict' in h) return h;
  // A History built in memory is held to the format as a file is (values in range, whole rows, ...).
  if (typeof history !== 'string') validateHistory(h);
  return checkRead(h, {
    iso,
    timeoutMs: options.timeoutMs,
    checkAbortedReads: options.checkAbortedReads,
    shrink: options.shrink,
    maxMemoryBytes: options.maxMemoryBytes,
    progress: options.progress,
  });
}

/** checkHistory on a history read (or validated): a file with no end line gets a note saying so. */
export function checkRead(h: History, options: CheckRunOptions): CheckResult {
  const result = checkHistory(h, options);
  if (h.truncated)
    result.notes.unshift('the file has no "end" line: the recording was cut short; checked what it holds');
  return result;
}

/**
 * Reads a history for a check within its memory limit (`maxMemoryBytes`, or the default of budget.ts). A history
 * that does not fit in memory is not bad input (a larger limit, or machine, can check it): it gets the verdict
 * `unknown` with the reason, as a check that outgrows its memory does.
 */
export async function readForCheck(
  file: string,
  options: Pick<CheckFileOptions, 'maxLineBytes' | 'maxInputBytes' | 'maxMemoryBytes' | 'progress'>,
): Promise<History | CheckResult> {
  const started = Date.now();
  const guard = new MemoryGuard(options.maxMemoryBytes);
  guard.stage = 'reading the history';
  let line = 0;
  const poll = (n: number) => {
    line = n;
    guard.poll();
    if (n % 100_000 === 0) options.progress?.(`reading: line ${n.toLocaleString('en-US')}`);
  };
  try {
    return await readHistory(file, { maxLineBytes: options.maxLineBytes, maxInputBytes: options.maxInputBytes, poll });
  } catch (e) {
    if (!(e instanceof MemoryExceeded) && !isAllocationFailure(e)) throw e;
    const why = (e as Error).message;
    const reason = e instanceof MemoryExceeded ? why : guard.stop(() => `V8 refused an allocation (${why})`).message;
    return {
      verdict: 'unknown',
      reason,
      anomalies: [],
      notes: [`reading stopped at line ${line.toLocaleString('en-US')} of the history`],
      stats: zeroStats(Date.now() - started),
    };
  }
}
