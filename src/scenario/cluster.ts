/**
 * `isocheck scenario --topology replica|shards` (issue 19): isolation-tester specs run on a cluster isocheck builds
 * on embedded servers (src/db/topology.ts) instead of one server. run.ts calls these hooks:
 *
 *   startScenarioCluster()    -> the servers; the run's Database is the primary / coordinator (close() stops all)
 *   prepareDatabase(name)     -> after CREATE DATABASE on the primary: the standbys have replayed it / the shards
 *                                have it, and the coordinator its postgres_fdw servers and user mappings
 *   distribute(control, ...)  -> shards, after the spec's setup: its tables become partitioned tables with one
 *                                foreign partition per shard (hash of the key's first column), their rows moved
 *   instrumentOptions(...)    -> Recorder.instrument's cluster options: declared keys and shard connections, or
 *                                the standbys (recording starts once they have replayed the setup)
 *   sessionClient(...)        -> a spec session's client, named after the session in the history
 *   dropDatabase(name)        -> shards: the database dropped on each shard too
 *
 * How a spec's sessions map onto the servers:
 * - shards: every session connects to the coordinator (as applications of a postgres_fdw cluster do); each
 *   transaction's node is `coordinator (shard1, shard2)`, the shards it used.
 * - replica: a session whose statements (session setup, steps, teardown) only read (SELECT without FOR
 *   UPDATE/SHARE, transaction control, SET/SHOW) runs on a standby, as a read/write split sends read-only clients;
 *   every other session runs on the primary. A hot standby refuses SERIALIZABLE: a read-only session's
 *   `BEGIN ... SERIALIZABLE` is sent as REPEATABLE READ there and recorded at the level it ran at (SI).
 *
 * Limits: a step waiting for a lock held on a shard is not seen as waiting (the coordinator's backend waits on
 * postgres_fdw, not on a lock): the shards' lock_timeout (2 s) ends it with an error. A standby session is never
 * blocked by the primary's locks (it is not cancelled by the runner either). Tables are sharded by their primary
 * key (a table without one is refused, as run --topology refuses it).
 */
import pg from 'pg';
import { parseSync } from 'libpg-query';
import { InputError } from '../history/input-errors.js';
import type { Database } from '../db/connect.js';
import {
  createDatabase,
  distributeTables,
  startReplicaTopology,
  startShardTopology,
  withClient,
  withDatabase,
  type DeclaredKeys,
  type Topology,
} from '../db/topology.js';
import { coordinatorClient } from '../recorder/coordinator-client.js';
import type { ClusterOptions, Recorder } from '../recorder/recorder.js';
import type { SessionSpec } from './spec.js';

export const SCENARIO_TOPOLOGIES = ['replica', 'shards'] as const;

export interface ScenarioTopologyOptions {
  /** replica or shards (default: one server). */
  topology?: string;
  /** replica: hot standbys (default 1). */
  standbys?: number;
  /** replica: recovery_min_apply_delay in ms (default 100). */
  applyDelay?: number;
  /** shards: shards (default 2). */
  shards?: number;
}

/** What a session's steps need of its client. */
export interface ScenarioClient {
  query(text: string): Promise<pg.QueryResult>;
}

/** Refuses bad topology options before any server starts. */
export function checkTopologyOptions(o: ScenarioTopologyOptions, db?: string): void {
  if (o.topology === undefined) {
    if (o.standbys !== undefined || o.applyDelay !== undefined || o.shards !== undefined)
      throw new InputError('--standbys, --apply-delay and --shards need --topology');
    return;
  }
  if (!(SCENARIO_TOPOLOGIES as readonly string[]).includes(o.topology))
    throw new InputError(`--topology ${o.topology}: expected ${SCENARIO_TOPOLOGIES.join(' or ')}`);
  if (db) throw new InputError(`--topology ${o.topology} builds its own servers: leave out --db`);
  if (o.topology === 'shards' && (o.standbys !== undefined || o.applyDelay !== undefined))
    throw new InputError('--standbys and --apply-delay are for --topology replica');
  if (o.topology === 'replica' && o.shards !== undefined) throw new InputError('--shards is for --topology shards');
}

/** SELECT (without FOR UPDATE/SHARE or INTO), transaction control, SET, SHOW: what a hot standby runs. */
function onlyReads(sql: string): boolean {
  let parsed: { stmts?: { stmt?: Record<string, { lockingClause?: unknown; intoClause?: unknown }> }[] };
  try {
    parsed = parseSync(sql) as typeof parsed;
  } catch {
    return false;
  }
  return (parsed.stmts ?? []).every((s) => {
    const [kind, node] = Object.entries(s.stmt ?? {})[0] ?? [];
    if (kind === 'SelectStmt') return !node?.lockingClause && !node?.intoClause;
    return kind === 'TransactionStmt' || kind === 'VariableSetStmt' || kind === 'VariableShowStmt';
  });
}

/** Whether every statement of the session only reads (its steps, setup and teardown). */
export function readOnlySession(s: SessionSpec): boolean {
  return [...s.setup, ...s.steps.map((st) => st.sql), ...s.teardown].every(onlyReads);
}

export class ScenarioCluster {
  /** Connections opened for the permutation being recorded (closed by closePermutation()). */
  private open: pg.Client[] = [];

  constructor(readonly topo: Topology) {}

  get kind(): 'replica' | 'shards' {
    return this.topo.kind;
  }

  /** For the history's header (as run --topology writes it): the kind of cluster and its servers. */
  meta(): Record<string, unknown> {
    return { kind: this.kind, nodes: this.topo.nodes.map((n) => ({ name: n.name, role: n.role, port: n.port })) };
  }

  /** After CREATE DATABASE `name` on the primary (coordinator). */
  async prepareDatabase(name: string): Promise<void> {
    await createDatabase(this.topo, name, { onPrimary: false });
  }

  /** After DROP DATABASE on the primary (coordinator): the shards' copies go too (the standbys replay the drop). */
  async dropDatabase(name: string): Promise<void> {
    if (this.kind !== 'shards') return;
    await Promise.all(
      this.topo.shards.map((s) =>
        withClient(s.url, (c) => c.query(`DROP DATABASE IF EXISTS "${name.replace(/"/g, '""')}" WITH (FORCE)`)).catch(
          () => undefined,
        ),
      ),
    );
  }

  /**
   * shards: the tables the spec's setup made on the coordinator (ordinary tables, with their rows) sharded; the
   * shards' tables of an earlier permutation are dropped first. Returns the declared keys.
   */
  async distribute(control: pg.ClientBase, dbName: string, tables: string[]): Promise<DeclaredKeys> {
    if (this.kind !== 'shards') return {};
    const ddl: string[] = [];
    for (const t of tables) {
      const r = await control.query<{ cols: string; pk: string | null }>(
        `SELECT (SELECT string_agg(quote_ident(a.attname) || ' ' || format_type(a.atttypid, a.atttypmod) || ` +
          `CASE WHEN a.attnotnull THEN ' NOT NULL' ELSE '' END, ', ' ORDER BY a.attnum)
                   FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped) AS cols,
                (SELECT pg_get_constraintdef(k.oid) FROM pg_constraint k ` +
          `WHERE k.conrelid = c.oid AND k.contype = 'p') AS pk
           FROM pg_class c WHERE c.oid = to_regclass($1)`,
        [t],
      );
      const row = r.rows[0];
      if (!row?.pk) throw new InputError(`table ${t} has no primary key: it cannot be sharded by key`);
      ddl.push(`DROP TABLE IF EXISTS ${t} CASCADE; CREATE TABLE ${t} (${row.cols}, ${row.pk});`);
    }
    return distributeTables(this.topo, dbName, control, ddl.join('\n'), tables);
  }

  private async connect(url: string): Promise<pg.Client> {
    const c = new pg.Client({ connectionString: url, application_name: 'isocheck scenario' });
    c.on('error', () => undefined);
    this.open.push(c);
    await c.connect();
    return c;
  }

  /** Recorder.instrument's cluster options for database `dbName`. */
  async instrumentOptions(dbName: string, keys: DeclaredKeys): Promise<ClusterOptions> {
    if (this.kind === 'shards')
      return {
        keys,
        shards: await Promise.all(this.topo.shards.map((s) => this.connect(withDatabase(s.url, dbName)))),
      };
    return { replicas: await Promise.all(this.topo.replicas.map((r) => this.connect(withDatabase(r.url, dbName)))) };
  }

  /**
   * The client of spec session `s` (a history session named after it) over `raw`, its connection to the primary
   * (coordinator); `readOnly`: a replica session whose statements only read, sent to a standby (round robin).
   */
  async sessionClient(
    recorder: Recorder,
    s: SessionSpec,
    raw: pg.ClientBase,
    dbName: string,
    index: number,
  ): Promise<{ client: ScenarioClient; onStandby?: string }> {
    const named = recorder.namedSession(s.name);
    if (this.kind === 'shards') return { client: coordinatorClient(named, raw) };
    if (!readOnlySession(s) || this.topo.replicas.length === 0) return { client: named.client(raw, 'primary') };
    const standby = this.topo.replicas[index % this.topo.replicas.length];
    const conn = await this.connect(withDatabase(standby.url, dbName));
    const router = named.router({
      primary: { client: raw, name: 'primary' },
      replicas: [{ client: conn, name: standby.name }],
      hotStandbyLevel: 'REPEATABLE READ',
    });
    // every transaction (and statement outside one) of the session goes to the standby
    return { client: { query: (text) => router.readOnly().query(text) }, onStandby: standby.name };
  }

  /** Closes the connections opened for the permutation. */
  async closePermutation(): Promise<void> {
    const open = this.open;
    this.open = [];
    await Promise.all(open.map((c) => c.end().catch(() => undefined)));
  }
}

/** Starts the cluster; the Database is its primary (coordinator), whose close() stops every server. */
export async function startScenarioCluster(
  o: ScenarioTopologyOptions,
): Promise<{ cluster: ScenarioCluster; database: Database }> {
  const topo =
    o.topology === 'shards'
      ? await startShardTopology({ shards: o.shards ?? 2 })
      : await startReplicaTopology({ standbys: o.standbys ?? 1, applyDelayMs: o.applyDelay ?? 100 });
  const what =
    topo.kind === 'shards'
      ? `a postgres_fdw coordinator and ${topo.shards.length} shards`
      : `a primary and ${topo.replicas.length} hot standby${topo.replicas.length === 1 ? '' : 's'} ` +
        `(recovery_min_apply_delay ${o.applyDelay ?? 100} ms)`;
  return {
    cluster: new ScenarioCluster(topo),
    database: {
      url: topo.primary.url,
      description:
        `${what}, embedded PostgreSQL ${topo.primary.version} ` + `(throwaway):\n  ${topo.describe().join('\n  ')}`,
      serverVersionNum: topo.primary.server!.versionNum,
      embedded: true,
      close: () => topo.stop(),
    },
  };
}
