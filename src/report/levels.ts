/**
 * The level boundary (checker/level-boundary.ts) in words, one line per verdict: what `check --levels` prints
 * after each level's mark (cli/levels-output.ts) and what the HTML report shows beside it (html.ts), from the
 * same data.
 */
import type { LevelBoundary, LevelVerdict } from '../checker/level-boundary.js';
import { anomalyHeading } from '../checker/explain/explain.js';
import type { CheckResult } from '../checker/result.js';

export const LEVEL_MARK = { consistent: '✓', inconsistent: '✗', unknown: '?' } as const;

/** Why a check came out as it did, in one line: the first anomaly's heading, or the reason it is unknown. */
export function checkHeadline(result: CheckResult): string {
  if (result.verdict === 'unknown') return result.reason ?? 'not decided';
  if (result.verdict === 'inconsistent') {
    const a = result.anomalies[0];
    return a ? anomalyHeading(a) : (result.reason ?? 'no anomaly named');
  }
  return 'a commit order exists';
}

/** A level's verdict after its mark: `consistent (a commit order exists)`, `inconsistent: LOST UPDATE [violates
 *  SI] ...`, `inconsistent (implied by CC)`; `more` is added to a consistent check's parenthesis. */
export function levelVerdictText(v: LevelVerdict, more = ''): string {
  if (v.impliedBy) return `${v.verdict} (implied by ${v.impliedBy})`;
  if (!v.result) return v.verdict;
  if (v.verdict === 'consistent') return `${v.verdict} (${checkHeadline(v.result)}${more})`;
  return `${v.verdict}: ${checkHeadline(v.result)}`;
}

/** The strongest level in words: `SI`, `none (inconsistent even at RC)`, `none known (RC is unknown)`. */
export function strongestText(b: LevelBoundary): string {
  if (b.strongest) return b.strongest;
  const rc = b.uniform[0];
  return rc?.verdict === 'inconsistent'
    ? `none (inconsistent even at ${rc.level})`
    : `none known (${rc?.level ?? 'RC'} is ${rc?.verdict ?? 'unknown'})`;
}
