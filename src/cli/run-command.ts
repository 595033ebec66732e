/**
 * `isocheck run WORKLOAD`: run a benchmark workload against PostgreSQL with a per-transaction-type isolation
 * configuration, record the client history, check the application's invariants and (with --check) the history.
 *
 *   open database (embedded or --db) -> fresh database -> schema -> generate CSVs (seeded) -> load
 *   -> Recorder.instrument -> N sessions × T transactions (BEGIN at the configured level, the workload's
 *      statements, COMMIT; 40001/40P01 retried as new attempts) -> end line -> invariants -> check
 *
 * Every random choice comes from seedrandom: data from the seed, each session's client from `seed/session/s`,
 * so one session and one seed always give the same transactions.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import seedrandom from 'seedrandom';
import { InputError } from '../history/input-errors.js';
import type { IsolationLevel } from '../history/format.js';
import { openDatabase, type Database } from '../db/connect.js';
import { Recorder } from '../recorder/index.js';
import { getWorkload, workloadNames, beginStatement, levelFor, pickType, RollbackError, type Level, type Workload } from '../../workloads/index.js';

export interface RunOptions {
  workload: string;
  db?: string;
  sessions?: number;
  txns?: number;
  seed?: string;
  /** A named configuration (ser, si, rc, ser+rc, si+rc) or `Type=LEVEL,...,*=LEVEL` with SER, SI, RC. */
  iso?: string;
  /** The levels recorded as declared, when they differ from the ones run (same syntax as iso). */
  declare?: string;
  scale?: number;
  out?: string;
  /** Print progress (a bar on a terminal). */
  progress?: boolean;
  maxRetries?: number;
  /** Messages (default: stderr). */
  log?: (line: string) => void;
}

export interface TypeSummary {
  committed: number;
  aborted: number;
  retried: number;
}

export interface RunSummary {
  file: string;
  workload: string;
  config: Record<string, Level>;
  declared?: Record<string, Level>;
  database: string;
  seed: string;
  sessions: number;
  txnsPerSession: number;
  scale: number;
  committed: number;
  /** Aborted by the database (after which the attempt was retried, or given up). */
  abortedByDatabase: number;
  /** Rolled back by the application (e.g. TPC-C's invalid item). */
  rolledBack: number;
  retried: number;
  perType: Record<string, TypeSummary>;
  seconds: number;
  invariantViolations: string[];
}

const PG_LEVELS: Record<string, Level> = { SER: 'SER', SERIALIZABLE: 'SER', SI: 'SI', 'REPEATABLE READ': 'SI', RR: 'SI', RC: 'RC', 'READ COMMITTED': 'RC' };

/** A named configuration of the workload, or `Type=LEVEL,...,*=LEVEL`. */
export function parseConfig(workload: Workload, spec: string): Record<string, Level> {
  if (workload.configs[spec]) return workload.configs[spec];
  if (!spec.includes('=')) {
    const level = PG_LEVELS[spec.toUpperCase()];
    if (level) return { '*': level };
    throw new InputError(`--iso ${spec}: not a configuration of ${workload.name} (${Object.keys(workload.configs).join(', ')}) nor a level (SER, SI, RC)`);
  }
  const config: Record<string, Level> = {};
  for (const part of spec.split(',')) {
    const [type, levelText] = part.split('=').map((s) => s.trim());
    const level = PG_LEVELS[(levelText ?? '').toUpperCase()];
    if (!level) throw new InputError(`--iso ${spec}: "${levelText}" is not SER, SI or RC`);
    if (type !== '*' && !(type in workload.mix)) throw new InputError(`--iso ${spec}: ${workload.name} has no transaction type "${type}" (types: ${Object.keys(workload.mix).join(', ')})`);
    config[type] = level;
  }
  if (!config['*']) for (const t of Object.keys(workload.mix)) if (!config[t]) throw new InputError(`--iso ${spec}: no level for ${t}; add *=LEVEL`);
  return config;
}

function withDatabase(url: string, name: string): string {
  const u = new URL(url);
  u.pathname = `/${name}`;
  return u.toString();
}

class Progress {
  private last = 0;
  constructor(private readonly total: number, private readonly enabled: boolean) {}
  update(done: number, note: string): void {
    if (!this.enabled) return;
    const now = Date.now();
    if (done < this.total && now - this.last < 100) return;
    this.last = now;
    const width = 30;
    const filled = Math.round((done / this.total) * width);
    const line = `  [${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${done}/${this.total} transactions ${note}`;
    if (process.stderr.isTTY) process.stderr.write(`\r${line}${done >= this.total ? '\n' : ''}`);
    else if (done >= this.total || done % Math.max(1, Math.floor(this.total / 10)) === 0) process.stderr.write(`${line}\n`);
  }
}

const RETRYABLE = new Set(['40001', '40P01']);

let runCounter = 0;

export async function runWorkload(options: RunOptions, database?: Database): Promise<RunSummary> {
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  let workload: Workload;
  try {
    workload = getWorkload(options.workload);
  } catch {
    throw new InputError(`unknown workload "${options.workload}" (available: ${workloadNames().join(', ')})`);
  }
  const sessions = options.sessions ?? 3;
  const txns = options.txns ?? 10;
  const seed = options.seed ?? '1';
  const scale = options.scale ?? 1;
  const maxRetries = options.maxRetries ?? 20;
  if (!Number.isInteger(sessions) || sessions < 1) throw new InputError(`--sessions must be a positive integer`);
  if (!Number.isInteger(txns) || txns < 0) throw new InputError(`--txns must be a non-negative integer`);
  const configName = options.iso ?? 'ser';
  const config = parseConfig(workload, configName);
  const declared = options.declare ? parseConfig(workload, options.declare) : undefined;
  const file = options.out ?? join('histories', 'runs', `${workload.name}-${configName.replace(/[^a-z0-9+]+/gi, '_')}${declared ? `-as-${options.declare!.replace(/[^a-z0-9+]+/gi, '_')}` : ''}-s${sessions}-t${txns}-seed${seed}.ndjson`);

  const db = database ?? (await openDatabase({ db: options.db }));
  log(`database: ${db.description}`);
  // Unique per run even when one process records several at once (the benchmark runs two in parallel).
  const dbName = `isocheck_${workload.name.replace(/[^a-z0-9]/g, '_')}_${process.pid}_${Date.now().toString(36)}_${++runCounter}`;
  const admin = new pg.Client({ connectionString: db.url });
  const dataDir = mkdtempSync(join(tmpdir(), 'isocheck-data-'));
  const clients: pg.Client[] = [];
  const started = Date.now();
  let recorder: Recorder | undefined;
  try {
    await admin.connect();
    await admin.query(`CREATE DATABASE ${admin.escapeIdentifier(dbName)}`);
    const url = withDatabase(db.url, dbName);
    const setup = new pg.Client({ connectionString: url });
    await setup.connect();
    const ctx = workload.context(scale);
    try {
      await setup.query(workload.schema());
      const files = await workload.generate(dataDir, seed, scale);
      await workload.load(setup, files);
      recorder = new Recorder({
        file,
        meta: { workload: workload.name, seed, scale, sessions, txnsPerSession: txns, isolation: configName, config, ...(declared ? { declared: options.declare, declaredConfig: declared } : {}), tool: 'isocheck run' },
        onWarning: (m) => log(`warning: ${m}`),
      });
      await recorder.instrument(setup, workload.tables);
    } finally {
      await setup.end().catch(() => undefined);
    }

    const perType: Record<string, TypeSummary> = {};
    for (const t of Object.keys(workload.mix)) perType[t] = { committed: 0, aborted: 0, retried: 0 };
    let committed = 0, abortedByDatabase = 0, rolledBack = 0, retried = 0, done = 0;
    const progress = new Progress(sessions * txns, options.progress ?? true);
    log(`running ${workload.name} (${configName}${declared ? `, declared ${options.declare}` : ''}): ${sessions} sessions × ${txns} transactions, seed ${seed}, scale ${scale}`);

    for (let s = 0; s < sessions; s++) {
      const c = new pg.Client({ connectionString: url });
      await c.connect();
      clients.push(c);
    }
    const runSession = async (s: number): Promise<void> => {
      const rng = seedrandom(`${seed}/session/${s + 1}`);
      const client = recorder!.client(clients[s]);
      for (let i = 0; i < txns; i++) {
        const type = pickType(workload.mix, rng);
        const level = levelFor(config, type);
        for (let attempt = 0; ; attempt++) {
          client.label(type);
          if (declared) client.declareLevel(levelFor(declared, type) as IsolationLevel);
          try {
            await client.query(beginStatement(level));
            await workload.transaction(type, client, rng, ctx);
            await client.query('COMMIT');
            committed++;
            perType[type].committed++;
            break;
          } catch (e) {
            await client.query('ROLLBACK').catch(() => undefined);
            if (e instanceof RollbackError) {
              rolledBack++;
              perType[type].aborted++;
              break;
            }
            const code = (e as { code?: string }).code;
            if (code && RETRYABLE.has(code)) {
              abortedByDatabase++;
              perType[type].aborted++;
              if (attempt < maxRetries) {
                retried++;
                perType[type].retried++;
                continue;
              }
              break;
            }
            throw e;
          }
        }
        done++;
        progress.update(done, `(${committed} committed, ${abortedByDatabase} aborted by the database)`);
      }
    };
    await Promise.all(clients.map((_, s) => runSession(s)));
    recorder.finish();

    const check = new pg.Client({ connectionString: url });
    await check.connect();
    let invariantViolations: string[];
    try {
      invariantViolations = await workload.invariants(check, ctx);
    } finally {
      await check.end().catch(() => undefined);
    }
    return {
      file, workload: workload.name, config, declared, database: db.description, seed, sessions, txnsPerSession: txns, scale,
      committed, abortedByDatabase, rolledBack, retried, perType, seconds: (Date.now() - started) / 1000, invariantViolations,
    };
  } catch (e) {
    recorder?.abandon();
    const code = (e as { code?: string }).code;
    if (code === 'ECONNREFUSED' || code === '57P01' || code === '08006' || /Connection terminated/.test((e as Error).message ?? '')) {
      throw new InputError(`the database went away during the run (${(e as Error).message}); the history recorded so far is in ${file} (truncated)`);
    }
    throw e;
  } finally {
    for (const c of clients) await c.end().catch(() => undefined);
    await admin.query(`DROP DATABASE IF EXISTS ${admin.escapeIdentifier(dbName)} WITH (FORCE)`).catch(() => undefined);
    await admin.end().catch(() => undefined);
    rmSync(dataDir, { recursive: true, force: true });
    if (!database) await db.close();
  }
}

export function renderRunSummary(r: RunSummary): string {
  const lines = [
    `${r.workload}: ${r.committed} committed, ${r.abortedByDatabase} aborted by the database (${r.retried} retried), ${r.rolledBack} rolled back by the application, in ${r.seconds.toFixed(1)} s`,
  ];
  for (const [type, s] of Object.entries(r.perType)) {
    if (s.committed + s.aborted > 0) lines.push(`  ${type.padEnd(24)} ${String(s.committed).padStart(4)} committed ${String(s.aborted).padStart(4)} aborted ${String(s.retried).padStart(4)} retried  (${levelFor(r.config, type)}${r.declared ? `, declared ${levelFor(r.declared, type)}` : ''})`);
  }
  lines.push(r.invariantViolations.length === 0 ? '  application invariants: all hold' : `  application invariants: ${r.invariantViolations.length} VIOLATED`);
  for (const v of r.invariantViolations.slice(0, 10)) lines.push(`    - ${v}`);
  lines.push(`  history: ${r.file}`);
  return lines.join('\n');
}
