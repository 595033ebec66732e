/**
 * A check's result as the JSON that `isocheck check --json` prints and CI reads (README, "check"):
 * `{file, verdict, report?, reason?, anomalies, commitOrder?, subHistory?, notes, stats}`.
 */
import type { CheckResult } from '../checker/check.js';

export function resultJson(file: string, result: CheckResult, extra: { report?: string } = {}): Record<string, unknown> {
  return {
    file,
    verdict: result.verdict,
    ...(extra.report ? { report: extra.report } : {}),
    ...(result.reason ? { reason: result.reason } : {}),
    anomalies: result.anomalies,
    ...(result.commitOrder ? { commitOrder: result.commitOrder } : {}),
    ...(result.subHistory ? { subHistory: result.subHistory } : {}),
    notes: result.notes,
    stats: result.stats,
  };
}
