/**
 * The paper benchmark's vocabulary (bench/paper.ts runs it, bench/paper-report.ts writes its report): which
 * checker, which experiment, and one CSV row per checked history.
 */
export type Checker = 'ours' | 'naive' | 'naive-exhaustive';
export type ExpId =
  | 'exp1'
  | 'exp2'
  | 'exp3'
  | 'ext-sessions'
  | 'ext-txns'
  | 'limit-sessions'
  | 'limit-txns'
  | 'limit-large';

export interface Experiment {
  id: ExpId;
  title: string;
  axis: 'sessions' | 'txns';
  workloads: string[];
  configs: string[];
  sessions: number[];
  txns: number[];
  seeds: number;
  checkIso?: string;
  checkers: Checker[];
  /** Fewer seeds for some checkers (the first N seeds of the point). */
  checkerSeeds?: Partial<Record<Checker, number>>;
  /** Sizes of the axis run only for some workloads and configurations (the costliest points to record). */
  only?: { sizes: number[]; workloads: string[]; configs: string[] };
  /**
   * sessions[i] goes with txns[i] (the points are these pairs, not every sessions × txns): shapes of one total,
   * e.g. 16 × 2000 and 64 × 500. The axis is sessions; --sessions and --txns do not apply.
   */
  paired?: boolean;
}

/** One CSV line: one check of one history. */
export interface Row {
  experiment: ExpId;
  workload: string;
  config: string;
  check_iso: string;
  checker: Checker;
  sessions: number;
  txns: number;
  seed: string;
  file: string;
  transactions: number | '';
  committed: number | '';
  events: number | '';
  conflicts: number | '';
  forced: number | '';
  extensions: number | '';
  prefixes: number | '';
  work: number | '';
  verdict: 'consistent' | 'inconsistent' | 'unknown' | 'timeout' | 'error';
  reason: string;
  /** Which part of our checker decided (stats.decidedBy: the linear check or the search); '' when undecided, for
   * the naive baselines, and in CSVs of builds before the linear check. */
  decided_by: 'linear' | 'search' | '';
  time_ms: number;
  load_ms: number | '';
  read_ms: number | '';
  model_ms: number | '';
  check_load_ratio: number | '';
  peak_mb: number | '';
}
