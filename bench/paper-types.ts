/**
 * The paper benchmark's vocabulary (bench/paper.ts runs it, bench/paper-report.ts writes its report): which
 * checker, which experiment, and one CSV row per checked history.
 */
export type Checker = 'ours' | 'naive' | 'naive-exhaustive';
export type ExpId = 'exp1' | 'exp2' | 'exp3' | 'ext-sessions' | 'ext-txns' | 'limit-sessions' | 'limit-txns';

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
  time_ms: number;
  load_ms: number | '';
  read_ms: number | '';
  model_ms: number | '';
  check_load_ratio: number | '';
  peak_mb: number | '';
}
