/**
 * `isocheck check --levels`: the level boundary (checker/level-boundary.ts) on a terminal and as JSON.
 *
 *   run.ndjson: LEVELS (every transaction judged at one level)
 *     RC   ✓ consistent
 *     ...
 *     SI   ✗ inconsistent: LOST UPDATE ...          (the explanation follows, as `check` prints it)
 *     SER  ✗ inconsistent (implied by SI)
 *   strongest: PC
 *   by label: NewOrder=SER,Payment=SI,*=PC  (no label can be raised: ...)
 */
import type { LevelBoundary, LevelVerdict } from '../checker/level-boundary.js';
import { renderResult } from '../checker/explain/explain.js';
import { resultJson } from '../report/json.js';
import { LEVEL_MARK, levelVerdictText, strongestText } from '../report/levels.js';

function verdictLine(v: LevelVerdict): string {
  return `  ${v.level.padEnd(4)} ${LEVEL_MARK[v.verdict]} ${levelVerdictText(v, '; --json gives it')}`;
}

export function renderBoundary(name: string, b: LevelBoundary): string {
  const out = [
    `${name}: LEVELS (every transaction judged at one level; ${b.checks} check${b.checks === 1 ? '' : 's'})`,
  ];
  for (const v of b.uniform) out.push(verdictLine(v));
  out.push(`strongest: ${strongestText(b)}`);
  if (b.byLabel && b.strongest !== 'SER') {
    const blocked = [...b.byLabel.blockedBy].map(
      ([label, { level, result }]) => `${label} at ${level}: ${result.verdict}`,
    );
    out.push(`by label: ${b.byLabel.spec}${blocked.length ? `  (one level higher: ${blocked.join('; ')})` : ''}`);
  }
  const first = b.uniform.find((v) => v.verdict === 'inconsistent' && v.result);
  if (first) out.push('', `Why not ${first.level}:`, renderResult(name, first.result!));
  return out.join('\n');
}

export function boundaryJson(file: string, b: LevelBoundary): Record<string, unknown> {
  return {
    file,
    levels: b.uniform.map((v) => ({
      level: v.level,
      verdict: v.verdict,
      ...(v.impliedBy ? { impliedBy: v.impliedBy } : {}),
      ...(v.result ? { result: resultJson(file, v.result) } : {}),
    })),
    strongest: b.strongest ?? null,
    ...(b.byLabel
      ? {
          byLabel: {
            spec: b.byLabel.spec,
            levels: Object.fromEntries(b.byLabel.levels),
            commitOrder: b.byLabel.result.commitOrder,
            blockedBy: Object.fromEntries(
              [...b.byLabel.blockedBy].map(([label, { level, result }]) => [
                label,
                { level, result: resultJson(file, result) },
              ]),
            ),
          },
        }
      : {}),
    checks: b.checks,
  };
}
