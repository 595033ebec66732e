/**
 * `isocheck check FILE...`: load each history, check it, print a verdict per file (human or --json) and a
 * total. A typed function (checkFiles) that the CLI only wires to arguments and exit codes.
 *
 * Exit status: 0 all consistent, 1 some inconsistent, 2 bad input or usage, 3 some unknown (and none
 * inconsistent or bad).
 */
import { readHistory } from '../history/reader.js';
import { InputError } from '../history/input-errors.js';
import { check } from '../checker/check-file.js';
import type { CheckResult, Verdict } from '../checker/check.js';
import { renderResult } from '../checker/explain.js';
import { resultJson } from '../report/json.js';
import { parseIsoOverride } from '../checker/levels.js';

export interface CheckCommandOptions {
  iso?: string;
  timeout?: number;
  json?: boolean;
  checkAbortedReads?: boolean;
  shrink?: boolean;
  /** Also write a self-contained HTML report (several files: one per history, see reportFileFor). */
  report?: string;
}

export interface FileResult {
  file: string;
  verdict: Verdict | 'error';
  error?: string;
  result?: CheckResult;
  /** The HTML report written for this file. */
  report?: string;
}

export const EXIT = { consistent: 0, inconsistent: 1, error: 2, unknown: 3 } as const;

export async function checkFile(file: string, options: CheckCommandOptions, fileCount = 1): Promise<FileResult> {
  try {
    const iso = options.iso ? parseIsoOverride(options.iso) : undefined;
    const history = await readHistory(file);
    const result = await check(history, {
      iso,
      timeoutMs: options.timeout !== undefined ? options.timeout * 1000 : undefined,
      checkAbortedReads: options.checkAbortedReads,
      shrink: options.shrink,
    });
    let report: string | undefined;
    if (options.report) {
      const { writeReport, reportFileFor } = await import('../report/html.js');
      report = reportFileFor(options.report, file, fileCount);
      try {
        await writeReport(report, history, result, { iso: options.iso });
      } catch (e) {
        throw new InputError(`--report ${report}: ${(e as Error).message}`);
      }
    }
    return { file, verdict: result.verdict, result, ...(report ? { report } : {}) };
  } catch (e) {
    if (e instanceof InputError) return { file, verdict: 'error', error: e.message };
    throw e;
  }
}

export function jsonOf(r: FileResult): Record<string, unknown> {
  if (r.verdict === 'error') return { file: r.file, verdict: 'error', error: r.error };
  return resultJson(r.file, r.result!, r.report ? { report: r.report } : {});
}

export function exitCodeOf(results: FileResult[]): number {
  if (results.some((r) => r.verdict === 'error')) return EXIT.error;
  if (results.some((r) => r.verdict === 'inconsistent')) return EXIT.inconsistent;
  if (results.some((r) => r.verdict === 'unknown')) return EXIT.unknown;
  return EXIT.consistent;
}

export async function runCheckCommand(files: string[], options: CheckCommandOptions): Promise<number> {
  const results: FileResult[] = [];
  for (const file of files) {
    const r = await checkFile(file, options, files.length);
    results.push(r);
    if (!options.json) {
      if (r.verdict === 'error') console.log(`${file}: ERROR\n  ${r.error!.split('\n').join('\n  ')}`);
      else if (files.length > 1 && r.verdict === 'consistent') console.log(`${file}: CONSISTENT (${r.result!.stats.committed} committed, ${(r.result!.stats.timeMs / 1000).toFixed(2)} s)`);
      else console.log(renderResult(file, r.result!));
      if (r.report) console.log(`  report: ${r.report}`);
    }
  }
  if (options.json) {
    const out = results.map(jsonOf);
    console.log(JSON.stringify(files.length === 1 ? out[0] : out, null, 2));
  } else if (files.length > 1) {
    const count = (v: string) => results.filter((r) => r.verdict === v).length;
    console.log(`total: ${files.length} files: ${count('consistent')} consistent, ${count('inconsistent')} inconsistent, ${count('unknown')} unknown, ${count('error')} bad input`);
  }
  return exitCodeOf(results);
}
