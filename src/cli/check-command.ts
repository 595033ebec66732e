/**
 * `isocheck check FILE...`: load each history, check it, print a verdict per file (human or --json) and a
 * total. A typed function (checkFiles) that the CLI only wires to arguments and exit codes. `-` reads standard
 * input (plain or gzip), named `<stdin>` in the output; --max-line-mb and --max-input-gb raise the reader's limits;
 * --max-memory bounds reading and checking (past it: unknown, with the reason).
 *
 * Exit status: 0 all consistent, 1 some inconsistent, 2 bad input or usage, 3 some unknown (and none
 * inconsistent or bad). With --levels (the level boundary, checker/level-boundary.ts): 0 when every level is
 * decided, 3 when one is left unknown, 2 on bad input; --report then writes the boundary as the HTML report.
 */
import { stat } from 'node:fs/promises';
import { dirname } from 'node:path';
import { InputError } from '../history/input-errors.js';
import { STDIN_NAME } from '../history/format.js';
import { check, readForCheck } from '../checker/check-file.js';
import type { CheckResult, Verdict } from '../checker/check.js';
import { renderResult } from '../checker/explain/explain.js';
import { resultJson } from '../report/json.js';
import { parseIsoOverride } from '../checker/levels.js';
import { terminalProgress, type Progress } from './progress.js';
import { levelBoundary, type BoundaryOptions, type LevelBoundary } from '../checker/level-boundary.js';
import { boundaryJson, renderBoundary } from './levels-output.js';

export interface CheckCommandOptions {
  iso?: string;
  timeout?: number;
  json?: boolean;
  checkAbortedReads?: boolean;
  shrink?: boolean;
  /** Also write a self-contained HTML report (several files: one per history, see reportFileFor). */
  report?: string;
  /** The longest line a history may have, in MiB (default 64). */
  maxLineMb?: number;
  /** The most a history may hold after decompression, in GiB (default 16). */
  maxInputGb?: number;
  /** The most reading and checking may hold in memory, in bytes (`--max-memory`, parsed by parseMemorySize). */
  maxMemory?: number;
  /** `--levels`: the level boundary (which uniform levels hold, the strongest, a strongest one by label). */
  levels?: boolean;
}

const MiB = 1024 * 1024;

/** Why the report cannot be written there (checked before the history, which may take long), or undefined. */
async function reportTargetProblem(report: string): Promise<string | undefined> {
  try {
    if ((await stat(report)).isDirectory())
      return `--report ${report}: is a directory (give a file name, e.g. ${report.replace(/\/+$/, '')}/report.html)`;
    return undefined;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT')
      return `--report ${report}: cannot write there (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`;
  }
  try {
    if (!(await stat(dirname(report))).isDirectory())
      return `--report ${report}: ${dirname(report)} is not a directory`;
  } catch (e) {
    return (
      `--report ${report}: cannot write there ` +
      `(${dirname(report)}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`
    );
  }
  return undefined;
}

export interface FileResult {
  file: string;
  verdict: Verdict | 'error';
  error?: string;
  result?: CheckResult;
  /** The HTML report written for this file. */
  report?: string;
  /** With --levels: the level boundary instead of one check. */
  boundary?: LevelBoundary;
}

export const EXIT = { consistent: 0, inconsistent: 1, error: 2, unknown: 3 } as const;

export async function checkFile(file: string, options: CheckCommandOptions, fileCount = 1): Promise<FileResult> {
  const name = file === '-' ? STDIN_NAME : file;
  const progress = terminalProgress(`isocheck check ${name}`);
  try {
    return await checkOneFile(file, name, options, fileCount, progress);
  } catch (e) {
    if (e instanceof InputError) return { file: name, verdict: 'error', error: e.message };
    throw e;
  } finally {
    progress.done();
  }
}

async function checkOneFile(
  file: string,
  name: string,
  options: CheckCommandOptions,
  fileCount: number,
  progress: Progress,
): Promise<FileResult> {
  if (options.levels && options.iso) throw new InputError('--levels checks every level itself: leave out --iso');
  const iso = options.iso ? parseIsoOverride(options.iso) : undefined;
  const reportAt = options.report
    ? (await import('../report/html.js')).reportFileFor(options.report, name, fileCount)
    : undefined;
  if (reportAt) {
    const problem = await reportTargetProblem(reportAt);
    if (problem) throw new InputError(problem);
  }
  const history = await readForCheck(file, {
    maxLineBytes: options.maxLineMb !== undefined ? Math.round(options.maxLineMb * MiB) : undefined,
    maxInputBytes: options.maxInputGb !== undefined ? Math.round(options.maxInputGb * 1024 * MiB) : undefined,
    maxMemoryBytes: options.maxMemory,
    progress: (stage) => progress.stage(stage),
  });
  // A history too big to hold: unknown, with the reason (no report: there is no history to show).
  if ('verdict' in history) return { file: name, verdict: history.verdict, result: history };
  if (options.levels) {
    const boundary = await levelBoundary(history, checkOptionsOf(options, progress));
    if (reportAt) {
      const { writeLevelsReport } = await import('../report/html.js');
      await writeReportAt(reportAt, () => writeLevelsReport(reportAt, history, boundary));
    }
    // the report is complete unless a level is left unknown (time or memory)
    return {
      file: name,
      verdict: boundary.uniform.some((v) => v.verdict === 'unknown') ? 'unknown' : 'consistent',
      boundary,
      ...(reportAt ? { report: reportAt } : {}),
    };
  }
  const result = await check(history, { iso, ...checkOptionsOf(options, progress) });
  if (reportAt) {
    const { writeReport } = await import('../report/html.js');
    await writeReportAt(reportAt, () => writeReport(reportAt, history, result, { iso: options.iso }));
  }
  return { file: name, verdict: result.verdict, result, ...(reportAt ? { report: reportAt } : {}) };
}

/** The options the command's flags give a check: the same for one check and for each check of --levels. */
function checkOptionsOf(options: CheckCommandOptions, progress: Progress): BoundaryOptions {
  return {
    timeoutMs: options.timeout !== undefined ? options.timeout * 1000 : undefined,
    checkAbortedReads: options.checkAbortedReads,
    shrink: options.shrink,
    maxMemoryBytes: options.maxMemory,
    progress: (stage) => progress.stage(stage),
  };
}

/** Writes the report; a file system error is the user's (one line, exit 2), not a crash. */
async function writeReportAt(report: string, write: () => Promise<void>): Promise<void> {
  try {
    await write();
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (!code) throw e;
    throw new InputError(
      code === 'EISDIR' ? `--report ${report}: is a directory` : `--report ${report}: cannot write it (${code})`,
    );
  }
}

export function jsonOf(r: FileResult): Record<string, unknown> {
  if (r.verdict === 'error') return { file: r.file, verdict: 'error', error: r.error };
  if (r.boundary) return { ...boundaryJson(r.file, r.boundary), ...(r.report ? { report: r.report } : {}) };
  return resultJson(r.file, r.result!, r.report ? { report: r.report } : {});
}

export function exitCodeOf(results: FileResult[]): number {
  if (results.some((r) => r.verdict === 'error')) return EXIT.error;
  // --levels reports a boundary, whatever it is: 0 when every level is decided, 3 when one is left unknown
  if (results.every((r) => r.boundary))
    return results.some((r) => r.verdict === 'unknown') ? EXIT.unknown : EXIT.consistent;
  if (results.some((r) => r.verdict === 'inconsistent')) return EXIT.inconsistent;
  if (results.some((r) => r.verdict === 'unknown')) return EXIT.unknown;
  return EXIT.consistent;
}

export async function runCheckCommand(files: string[], options: CheckCommandOptions): Promise<number> {
  if (files.filter((f) => f === '-').length > 1)
    throw new InputError('- (standard input) is given more than once: it can be read only once');
  const results: FileResult[] = [];
  for (const file of files) {
    const r = await checkFile(file, options, files.length);
    results.push(r);
    const name = r.file;
    if (!options.json) {
      if (r.verdict === 'error') console.log(`${name}: ERROR\n  ${r.error!.split('\n').join('\n  ')}`);
      else if (r.boundary) console.log(renderBoundary(name, r.boundary));
      else if (files.length > 1 && r.verdict === 'consistent')
        console.log(
          `${name}: CONSISTENT (${r.result!.stats.committed} ` +
            `committed, ${(r.result!.stats.timeMs / 1000).toFixed(2)} s)`,
        );
      else console.log(renderResult(name, r.result!));
      if (r.report) console.log(`  report: ${r.report}`);
    }
  }
  if (options.json) {
    const out = results.map(jsonOf);
    console.log(JSON.stringify(files.length === 1 ? out[0] : out, null, 2));
  } else if (files.length > 1) {
    const count = (v: string) => results.filter((r) => r.verdict === v).length;
    console.log(
      `total: ${files.length} files: ${count('consistent')} consistent, ${count('inconsistent')} ` +
        `inconsistent, ${count('unknown')} unknown, ${count('error')} bad input`,
    );
  }
  return exitCodeOf(results);
}
