/**
 * `isocheck run WORKLOAD --topology replica|shards|pgpool` (issue 19): the run's servers are a cluster built on
 * embedded servers (src/db/topology.ts) instead of one server; run-command.ts calls these hooks.
 *
 *   open()                  -> start the cluster; the Database run-command uses is the primary / coordinator
 *   prepareDatabase(name)   -> after CREATE DATABASE on the primary: the standbys have it / the shards have it and
 *                              the coordinator's postgres_fdw servers and user mappings
 *   distribute(setup, name) -> shards: the loaded tables become partitioned tables with foreign partitions
 *   instrumentOptions()     -> Recorder.instrument's cluster options: declared keys, shard and replica connections
 *   sessionClient(s)        -> session s's client: one history session over the primary and a connection to each
 *                              standby, read-only transaction types routed to a standby; or the coordinator
 *   context(ctx)            -> shards: multi-shard writes take their locks in a fixed order (ctx.fixedLockOrder)
 *
 * Decisions:
 * - replica: the workload's read-only transaction types (Workload.readOnly) go to a standby (round robin), the rest
 *   to the primary: the read/write split applications and pgpool-II do. A hot standby refuses SERIALIZABLE: those
 *   transactions run there at REPEATABLE READ and are recorded at the level they ran at (SI).
 * - shards: every statement goes through the coordinator; `node` is `coordinator (shard1, shard2)`: the shards the
 *   transaction used, asked of postgres_fdw (postgres_fdw_get_connections' used_in_xact) just before it ends.
 * - pgpool: pgpool-II (the `pgpool` program, Debian package pgpool2; without it a one-line error) in front of a
 *   primary and hot standbys (pgpool.ts): sessions connect to pgpool, which balances their reads to a standby;
 *   `node` is `pgpool (reads to standby1)`, the standby pgpool chose for the session.
 */
import type pg from 'pg';
import { InputError } from '../history/input-errors.js';
import type { Database } from '../db/connect.js';
import { findPgpool, startPgpool, type PgpoolServer } from '../db/pgpool.js';
import {
  connectReplicaTopology,
  createDatabase,
  distributeTables,
  startReplicaTopology,
  startShardTopology,
  withDatabase,
  type DeclaredKeys,
  type Topology,
} from '../db/topology.js';
import type { ClusterOptions, Recorder } from '../recorder/recorder.js';
import type { RoutingClient } from '../recorder/sessions.js';
import { coordinatorClient, type TopologyClient } from '../recorder/coordinator-client.js';
export type { TopologyClient } from '../recorder/coordinator-client.js';
import { levelFor, type Level, type Workload, type WorkloadContext } from '../../workloads/index.js';

export const TOPOLOGIES = ['replica', 'shards', 'pgpool'] as const;

export interface TopologyRunOptions {
  /** replica, shards or pgpool (default: one server). */
  topology?: string;
  /** replica: number of hot standbys (default 1). */
  standbys?: number;
  /** replica: recovery_min_apply_delay of the standbys in ms (default 100). */
  applyDelay?: number;
  /** shards: number of shards (default 2). */
  shards?: number;
  /** replica on the user's own cluster: hot standbys of the primary given with --db (`--replica URL`, repeatable). */
  replicaUrls?: string[];
  /** The primary, for replicaUrls (or DATABASE_URL). */
  db?: string;
}

/** The options of a run with a topology, as runWorkload passes them on (the rest of RunOptions is the run's). */
export function topologyOf(o: TopologyRunOptions & { replica?: string[] }): TopologyRunOptions {
  const replicaUrls = o.replicaUrls ?? (o.replica?.length ? o.replica : undefined);
  return {
    topology: o.topology ?? (replicaUrls ? 'replica' : undefined),
    standbys: o.standbys,
    applyDelay: o.applyDelay,
    shards: o.shards,
    ...(replicaUrls ? { replicaUrls } : {}),
  };
}

type Connect = (url: string) => pg.Client;

/** 180004 from "18.4", 160002 from "16.2" (server_version_num's form). */
const versionNum = (v: string): number => {
  const [major, minor] = v.split(/[.\s]/).map(Number);
  return major * 10000 + (Number.isFinite(minor) ? minor : 0);
};

export class TopologyRun {
  private topo: Topology | undefined;
  private dbName = '';
  private keys: DeclaredKeys = {};
  private pgpool: PgpoolServer | undefined;

  constructor(
    private readonly options: TopologyRunOptions,
    private readonly workload: Workload,
    private readonly log: (line: string) => void,
  ) {
    const kind = options.topology;
    if (!(TOPOLOGIES as readonly string[]).includes(kind ?? ''))
      throw new InputError(`--topology ${kind}: expected ${TOPOLOGIES.join(', ')}`);
    if (kind === 'pgpool' && !findPgpool()) {
      throw new InputError(
        `--topology pgpool needs pgpool-II, which is not installed (Debian: apt-get install pgpool2); ` +
          `--topology replica routes read-only transactions to a standby as pgpool would`,
      );
    }
    if (options.standbys !== undefined && kind === 'shards')
      throw new InputError('--standbys is for --topology replica or pgpool');
    if (options.applyDelay !== undefined && kind === 'shards')
      throw new InputError('--apply-delay is for --topology replica or pgpool');
    if (options.shards !== undefined && kind !== 'shards') throw new InputError('--shards is for --topology shards');
    if (options.replicaUrls?.length) {
      if (kind !== 'replica')
        throw new InputError("--replica is for --topology replica (the user's own primary and standbys)");
      if (options.standbys !== undefined || options.applyDelay !== undefined)
        throw new InputError('--standbys and --apply-delay build standbys: not with --replica (your own)');
      if (!options.db && !process.env.DATABASE_URL)
        throw new InputError('--replica needs --db URL: the primary the replicas stream from');
    } else if (options.db)
      throw new InputError(
        `--topology ${kind} builds its own servers: leave out --db (or give your own standbys with --replica URL)`,
      );
  }

  /**
   * The types that do not run at the level asked, and where they run instead: on a replica topology the read-only
   * types go to a hot standby, which refuses SERIALIZABLE, so those asked at SER run at REPEATABLE READ (SI). For
   * the run's summary, which otherwise says (SER) of them. Undefined when every type runs as asked.
   */
  ranAt(config: Record<string, Level>): Record<string, string> | undefined {
    if (this.kind !== 'replica') return undefined;
    const out: Record<string, string> = {};
    for (const type of this.workload.readOnly ?? [])
      if (levelFor(config, type) === 'SER') out[type] = 'SI on a standby';
    return Object.keys(out).length > 0 ? out : undefined;
  }

  get kind(): 'replica' | 'shards' | 'pgpool' {
    return this.options.topology as 'replica' | 'shards' | 'pgpool';
  }

  /** Starts the cluster: the run's Database is its primary (coordinator); close() stops every server. */
  async open(): Promise<Database> {
    const own = this.options.replicaUrls?.length ? this.options.replicaUrls : undefined;
    const topo = own
      ? await connectReplicaTopology(this.options.db || process.env.DATABASE_URL!, own)
      : this.kind === 'shards'
        ? await startShardTopology({ shards: this.options.shards ?? 2 })
        : await startReplicaTopology({
            standbys: this.options.standbys ?? 1,
            applyDelayMs: this.options.applyDelay ?? 100,
          });
    this.topo = topo;
    if (this.kind === 'replica' && this.workload.readOnly?.length) {
      this.log(
        `read-only transactions (${this.workload.readOnly.join(', ')}) go to a standby; SERIALIZABLE is ` +
          `refused there, so those run at REPEATABLE READ (recorded as SI)`,
      );
    }
    let pool: PgpoolServer | undefined;
    try {
      if (this.kind === 'pgpool') pool = await startPgpool(topo, { maxClients: 64 });
    } catch (e) {
      await topo.stop();
      throw e;
    }
    this.pgpool = pool;
    const version = topo.primary.version;
    const what =
      this.kind === 'shards'
        ? `a postgres_fdw coordinator and ${topo.shards.length} shards`
        : `${pool ? `pgpool-II on 127.0.0.1:${pool.port} load balancing to ` : ''}a primary ` +
          `and ${topo.replicas.length} hot standby${topo.replicas.length === 1 ? '' : 's'}` +
          `${own ? ' (yours)' : ` (recovery_min_apply_delay ${this.options.applyDelay ?? 100} ms)`}`;
    return {
      // setup, load and the invariants go to the primary; the sessions connect to pgpool (sessionClient)
      url: topo.primary.url,
      description:
        `${what}, ${own ? '' : 'embedded '}PostgreSQL ${version}${own ? '' : ' (throwaway)'}:\n` +
        `  ${topo.describe().join('\n  ')}`,
      serverVersionNum: topo.primary.server?.versionNum ?? versionNum(version),
      embedded: !own,
      close: async () => {
        await pool?.stop();
        await topo.stop();
      },
    };
  }

  /** For the history's header: the kind of cluster and its servers (the `node` names of the transactions). */
  meta(): Record<string, unknown> {
    const topo = this.topo!;
    return {
      kind: this.kind,
      nodes: topo.nodes.map((n) => ({ name: n.name, role: n.role, port: n.port })),
      ...(this.kind !== 'shards' && !this.options.replicaUrls?.length
        ? { applyDelayMs: this.options.applyDelay ?? 100 }
        : {}),
      ...(this.pgpool ? { pgpool: { port: this.pgpool.port } } : {}),
    };
  }

  /** After CREATE DATABASE `name` on the primary (coordinator). */
  async prepareDatabase(name: string): Promise<void> {
    this.dbName = name;
    await createDatabase(this.topo!, name, { onPrimary: false });
  }

  /** After the schema and rows are on the coordinator: shards the workload's tables. */
  async distribute(setup: pg.ClientBase): Promise<void> {
    if (this.kind !== 'shards') return;
    this.keys = await distributeTables(this.topo!, this.dbName, setup, this.workload.schema(), this.workload.tables);
    this.log(
      `sharded: ${this.workload.tables.map((t) => `${t} by hash of ${this.keys[t][0]}`).join(', ')} ` +
        `over ${this.topo!.shards.map((s) => s.name).join(', ')} (partitions of different tables not co-located)`,
    );
  }

  /** Recorder.instrument's cluster options, on connections made with `connect` (closed with the run's). */
  async instrumentOptions(connect: Connect): Promise<ClusterOptions> {
    const open = async (url: string) => {
      const c = connect(withDatabase(url, this.dbName));
      await c.connect();
      return c;
    };
    if (this.kind !== 'shards') return { replicas: await Promise.all(this.topo!.replicas.map((r) => open(r.url))) };
    return { keys: this.keys, shards: await Promise.all(this.topo!.shards.map((s) => open(s.url))) };
  }

  /** Run state for the workload: multi-shard writes lock in a fixed order. */
  context(ctx: WorkloadContext): void {
    if (this.kind === 'shards') ctx.fixedLockOrder = true;
  }

  /** Session s's client: named `client<s+1>`, on the primary `raw` and (replica) a connection to each standby. */
  async sessionClient(recorder: Recorder, s: number, raw: pg.ClientBase, connect: Connect): Promise<TopologyClient> {
    const named = recorder.namedSession(`client${s + 1}`);
    const primaryName = this.kind === 'shards' ? 'coordinator' : 'primary';
    named.sessionOn(raw); // numbered now, in session order
    if (this.kind === 'pgpool') {
      // pgpool picks the standby this session's balanced reads go to: it says which (SHOW pool_nodes)
      const conn = connect(withDatabase(this.pgpool!.url, this.dbName));
      await conn.connect();
      const nodes = (await conn.query<{ node_id: string; load_balance_node: string }>('SHOW pool_nodes')).rows;
      const balanced = nodes.find((n) => n.load_balance_node === 'true');
      const names = [this.topo!.primary, ...this.topo!.replicas].map((n) => n.name);
      return named.client(
        conn,
        `pgpool${balanced ? ` (reads to ${names[Number(balanced.node_id)] ?? `node ${balanced.node_id}`})` : ''}`,
      );
    }
    if (this.kind === 'shards') return coordinatorClient(named, raw, primaryName);
    const replicas = await Promise.all(
      this.topo!.replicas.map(async (r) => {
        const c = connect(withDatabase(r.url, this.dbName));
        await c.connect();
        return { client: c as pg.ClientBase, name: r.name };
      }),
    );
    const router: RoutingClient = named.router({
      primary: { client: raw, name: primaryName },
      replicas,
      hotStandbyLevel: 'REPEATABLE READ',
    });
    const readOnly = new Set(this.workload.readOnly ?? []);
    return {
      query: (text, values) => router.query(text, values),
      label: (type: string) => {
        router.label(type);
        if (readOnly.has(type)) router.readOnly();
      },
      declareLevel: (level) => router.declareLevel(level),
    };
  }
}
