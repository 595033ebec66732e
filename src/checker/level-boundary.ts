/**
 * The level boundary of a history (`isocheck check --levels`; README "check", docs/semantics.md §2.4), as Elle's
 * `:not` / `:also-not`: which levels it satisfies when every transaction is judged at one level, the strongest of
 * them, and, when transactions carry labels, a strongest configuration by label (`Payment=SER,NewOrder=SI,*=RC`)
 * that the history satisfies. Every verdict comes with its evidence: a check result (a commit order, or the
 * explained anomaly), or the level whose result implies it.
 *
 * The levels form a chain, SER ⊂ SI ⊂ PC ⊂ CC ⊂ RA ⊂ RC (levels.ts): an execution consistent at a level is
 * consistent at every weaker one (the same commit order works), so a history consistent at L is consistent below
 * L and one inconsistent at L is inconsistent above it. The uniform levels are checked weakest first until one is
 * inconsistent; the stronger ones are then implied. With labels, starting from every label at the strongest
 * uniform level, each label in turn (by name; unlabelled transactions as `*`) is raised one level at a time while
 * the history stays consistent. The result is maximal (no single label can be raised), not always the only
 * maximal configuration: raising one label first may block another.
 *
 * Time: `timeoutMs` bounds all the checks together (each gets what is left), as `--timeout` bounds one check.
 */
import { ISOLATION_LEVELS, type IsolationLevel } from '../history/format.js';
import type { History } from '../history/history.js';
import { checkRead } from './check-file.js';
import type { ModelReuse } from './check.js';
import { validateHistory } from '../history/reader.js';
import { loadPredicateParser } from '../sql/predicate.js';
import type { CheckOptions, CheckResult, Verdict } from './result.js';
import type { IsoOverride } from './levels.js';

export interface LevelVerdict {
  level: IsolationLevel;
  verdict: Verdict;
  /** The check at this level; absent when the verdict is implied by the check at `impliedBy`. */
  result?: CheckResult;
  impliedBy?: IsolationLevel;
}

export interface LabelConfiguration {
  /** Level per label, and for unlabelled transactions (`*`), as `--iso` takes it. */
  levels: Map<string, IsolationLevel>;
  spec: string;
  /** The check of the history at this configuration (consistent). */
  result: CheckResult;
  /** Why each label stops where it is: the check one level higher (inconsistent or unknown), for labels below SER. */
  blockedBy: Map<string, { level: IsolationLevel; result: CheckResult }>;
}

export interface LevelBoundary {
  /** One verdict per level, weakest first. */
  uniform: LevelVerdict[];
  /** The strongest level every transaction can be judged at with a consistent verdict (none: not even RC). */
  strongest?: IsolationLevel;
  /** With labels: a strongest configuration by label (none without labels or without a strongest level). */
  byLabel?: LabelConfiguration;
  /** Number of checks run. */
  checks: number;
}

export type BoundaryOptions = Omit<CheckOptions, 'iso'>;

const ALL = (level: IsolationLevel): IsoOverride => ({ all: level, byLabel: new Map() });

function configurationSpec(levels: Map<string, IsolationLevel>): string {
  return [...levels].map(([label, level]) => `${label}=${level}`).join(',');
}

export async function levelBoundary(history: History, options: BoundaryOptions = {}): Promise<LevelBoundary> {
  const started = Date.now();
  let checks = 0;
  await loadPredicateParser();
  // held to the format as check() holds a History built in memory, once for every level
  validateHistory(history);
  // one model for every level checked (levels are the only part of it that differs)
  const reuseModel: ModelReuse = {};
  const run = async (iso: IsoOverride): Promise<CheckResult> => {
    checks++;
    const timeoutMs =
      options.timeoutMs === undefined ? undefined : Math.max(1, options.timeoutMs - (Date.now() - started));
    return checkRead(history, { ...options, iso, timeoutMs, reuseModel });
  };

  const uniform: LevelVerdict[] = ISOLATION_LEVELS.map((level) => ({ level, verdict: 'unknown' as Verdict }));
  for (let i = 0; i < uniform.length; i++) {
    const result = await run(ALL(uniform[i].level));
    Object.assign(uniform[i], { verdict: result.verdict, result });
    if (result.verdict === 'consistent') {
      // weaker levels the time limit left unknown are consistent too
      for (let j = 0; j < i; j++)
        if (uniform[j].verdict === 'unknown')
          Object.assign(uniform[j], { verdict: 'consistent', impliedBy: uniform[i].level });
    } else if (result.verdict === 'inconsistent') {
      for (let j = i + 1; j < uniform.length; j++)
        uniform[j] = { level: uniform[j].level, verdict: 'inconsistent', impliedBy: uniform[i].level };
      break;
    }
  }
  let strongestAt = -1;
  while (strongestAt + 1 < uniform.length && uniform[strongestAt + 1].verdict === 'consistent') strongestAt++;
  const boundary: LevelBoundary = {
    uniform,
    checks: 0,
    ...(strongestAt >= 0 ? { strongest: uniform[strongestAt].level } : {}),
  };

  const labels = [
    ...new Set(history.txns.filter((t) => t.status !== 'aborted' && t.label !== undefined).map((t) => t.label!)),
  ].sort();
  if (labels.length > 0 && strongestAt >= 0) {
    const unlabelled = history.txns.some((t) => t.status !== 'aborted' && t.label === undefined);
    const levels = new Map<string, IsolationLevel>();
    for (const label of labels) levels.set(label, uniform[strongestAt].level);
    if (unlabelled) levels.set('*', uniform[strongestAt].level);
    let result = uniform[strongestAt].result!;
    const blockedBy = new Map<string, { level: IsolationLevel; result: CheckResult }>();
    const override = (config: Map<string, IsolationLevel>): IsoOverride => {
      const byLabel = new Map([...config].filter(([label]) => label !== '*'));
      return { byLabel, fallback: config.get('*') ?? uniform[strongestAt].level };
    };
    for (const label of levels.keys()) {
      for (let next = ISOLATION_LEVELS.indexOf(levels.get(label)!) + 1; next < ISOLATION_LEVELS.length; next++) {
        const trial = new Map(levels).set(label, ISOLATION_LEVELS[next]);
        const r = await run(override(trial));
        if (r.verdict !== 'consistent') {
          blockedBy.set(label, { level: ISOLATION_LEVELS[next], result: r });
          break;
        }
        levels.set(label, ISOLATION_LEVELS[next]);
        result = r;
      }
    }
    boundary.byLabel = { levels, spec: configurationSpec(levels), result, blockedBy };
  }
  boundary.checks = checks;
  return boundary;
}
