/**
 * The workload interface: a benchmark application (schema, deterministic data, transaction programs, isolation
 * configurations, application invariants) whose transactions are recorded as client histories and checked.
 *
 * Every statement a transaction sends touches ONE table (no joins, subqueries, WITH, set operations): the
 * recorder rewrites each statement to learn the rows it read and wrote. Joins of the original benchmarks are
 * split into single-table statements as in the paper's BenchBase instrumentation (section 6).
 */

/** What a transaction runs on: a pg Client, a recording client, or anything with pg's query shape. */
export interface Queryable {
  query(text: string, params?: unknown[]): Promise<{ rows: DbRow[]; rowCount: number | null }>;
}

/** A row as pg returns it: column name -> value (numeric and bigint columns as text). */
export type DbRow = Record<string, unknown>;

/** Isolation levels PostgreSQL implements: SER = SERIALIZABLE, SI = REPEATABLE READ, RC = READ COMMITTED. */
export type Level = 'SER' | 'SI' | 'RC';

/** Sizes derived from the scale (and, for some workloads, run state shared by the clients of one process). */
export interface WorkloadContext {
  scale: number;
  /** Writes to several rows take their locks in one global order (key, then table): on shards, a deadlock across
   *  shards is seen by no server and would wait for lock_timeout (issue 19). */
  fixedLockOrder?: boolean;
  [k: string]: unknown;
}

export interface Workload {
  name: string;
  description: string;
  /** Tables the history covers (instrumented by the recorder). */
  tables: string[];
  /** DDL creating the schema (every table has a PRIMARY KEY). */
  schema(): string;
  /** Writes one CSV per table into dir, deterministic from (seed, scale); returns the file per table. */
  generate(dir: string, seed: string, scale: number): Promise<Record<string, string>>;
  /** Loads the CSVs written by generate() (batched multi-row INSERTs with parameters). */
  load(client: Queryable, files: Record<string, string>): Promise<void>;
  /** Transaction types with their weights (the mix). */
  mix: Record<string, number>;
  /** Transaction types that only read: on a topology with replicas they are routed to a standby (issue 19). */
  readOnly?: string[];
  /** Named isolation configurations: ser, si, rc, ser+rc, si+rc: type (or '*') -> level. */
  configs: Record<string, Record<string, Level>>;
  /** Runs the statements of one transaction of `type` on `db` (the runner sends BEGIN/COMMIT and retries on
   *  40001/40P01). Every random choice comes from `rng`. Throws RollbackError where the application rolls back. */
  transaction(type: string, db: Queryable, rng: () => number, ctx: WorkloadContext): Promise<void>;
  /** Application invariants after the run, on a plain (unrecorded) connection; violations in words. */
  invariants(db: Queryable, ctx: WorkloadContext): Promise<string[]>;
  context(scale: number): WorkloadContext;
  /** Every SQL text transaction() may send, by name (for the single-table checks and documentation). */
  statements: Record<string, string>;
}

/** Thrown by a transaction program to roll back on purpose (e.g. TPC-C NewOrder's 1% unused item). */
export class RollbackError extends Error {
  constructor(message = 'application rollback') {
    super(message);
    this.name = 'RollbackError';
  }
}

/** The isolation level a configuration gives a transaction type ('*' is the default). */
export function levelFor(config: Record<string, Level>, type: string): Level {
  const level = config[type] ?? config['*'];
  if (level === undefined) throw new Error(`configuration has no level for ${type} and no '*'`);
  return level;
}

/** Picks a transaction type from the mix with one draw of rng. */
export function pickType(mix: Record<string, number>, rng: () => number): string {
  const entries = Object.entries(mix).filter(([, w]) => w > 0);
  const total = entries.reduce((s, [, w]) => s + w, 0);
  let x = rng() * total;
  for (const [type, w] of entries) {
    if (x < w) return type;
    x -= w;
  }
  return entries[entries.length - 1][0];
}

/** `BEGIN ISOLATION LEVEL ...` for a level. */
export function beginStatement(level: Level): string {
  return (
    `BEGIN ISOLATION ` +
    `LEVEL ${level === 'SER' ? 'SERIALIZABLE' : level === 'SI' ? 'REPEATABLE READ' : 'READ COMMITTED'}`
  );
}

/** Builds the five named configurations from the types run at the stronger level in the mixed ones. */
export function standardConfigs(strongTypes: string[]): Record<string, Record<string, Level>> {
  const mixed = (level: Level): Record<string, Level> => {
    const c: Record<string, Level> = { '*': 'RC' };
    for (const t of strongTypes) c[t] = level;
    return c;
  };
  return {
    ser: { '*': 'SER' },
    si: { '*': 'SI' },
    rc: { '*': 'RC' },
    'ser+rc': mixed('SER'),
    'si+rc': mixed('SI'),
  };
}
