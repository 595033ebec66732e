/**
 * Clusters of throwaway PostgreSQL servers built by isocheck (issue 19): a primary with hot standbys, and a
 * postgres_fdw coordinator with shards. Every server is an embedded one (embedded.ts), so each is stopped and its
 * files removed on stop(), at process exit and on SIGINT/SIGTERM/SIGHUP.
 *
 *   startReplicaTopology({ standbys, applyDelayMs }) -> primary (initdb) -> per standby: a physical slot,
 *     pg_backup_start -> copy of the data directory (as the server's user) -> pg_backup_stop -> backup_label,
 *     standby.signal, primary_conninfo, recovery_min_apply_delay -> postgres on a new port -> wait until the
 *     primary reports it streaming
 *   startShardTopology({ shards }) -> coordinator + shards (initdb, in parallel; lock_timeout and
 *     statement_timeout on the shards) -> per run database: createDatabase() (postgres_fdw servers and user
 *     mappings on the coordinator) -> createSchema() (real tables on each shard, a partitioned table with one
 *     foreign partition per shard on the coordinator)
 *
 * Decisions:
 * - No pg_basebackup (the embedded distribution has initdb, pg_ctl and postgres only): the standby is a copy taken
 *   between pg_backup_start and pg_backup_stop (the documented low-level base backup), without pg_wal's contents;
 *   the standby streams the WAL from the backup's start through a physical replication slot created first.
 * - recovery_min_apply_delay (default 100 ms): on localhost the standby otherwise replays within a millisecond,
 *   and the lag a real replica has would not be seen.
 * - The replication password goes into the standby's postgresql.auto.conf (created exclusively, 0600), never on a
 *   command line that `ps` shows.
 * - Shards: hash partitions of every recorded table by the first column of its primary key, partition i of table
 *   number t on shard (i + t) mod N: tables are not co-located (as Citus's tables unless declared co-located), so
 *   one customer's rows of two tables can be on two shards. Foreign keys are dropped on the shards (a shard cannot
 *   see the rows on another), and identity columns become plain ones there (the coordinator assigns them).
 *   lock_timeout and statement_timeout on the shards: a deadlock across shards is seen by no server's deadlock
 *   detector, and would hang.
 * - Every wait has a timeout (TopologyError saying what did not happen).
 */
import { openSync, writeSync, closeSync, fchownSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';
import pg from 'pg';
import { InputError } from '../history/input-errors.js';
import { startEmbedded, type EmbeddedServer } from './embedded.js';
import { serverEnv, type RunAs } from './pg-binaries.js';
import { waitForReplay } from '../recorder/cluster.js';

export { waitForReplay };

/** A server of a topology: its name in histories (the `node` of the transactions it served) and how to reach it. */
export interface TopologyNode {
  /** `primary`, `standby1`, ..., `coordinator`, `shard1`, ... */
  name: string;
  role: 'primary' | 'standby' | 'coordinator' | 'shard';
  url: string;
  port: number;
  /** `server_version`, e.g. "18.4". */
  version: string;
  /** The embedded server (absent for a server of the user's: connectReplicaTopology). */
  server?: EmbeddedServer;
}

export interface Topology {
  kind: 'replica' | 'shards';
  /** The primary, or the coordinator: where writes (and for shards, every statement) go. */
  primary: TopologyNode;
  /** Hot standbys (replica topology). */
  replicas: TopologyNode[];
  /** Shards (shards topology). */
  shards: TopologyNode[];
  nodes: TopologyNode[];
  /** One line per server, for the CLI. */
  describe(): string[];
  /** Stops every server (idempotent; also done at exit and on signals). */
  stop(): Promise<void>;
}

/** A topology could not be built, or a wait timed out: one line. */
export class TopologyError extends InputError {
  override name = 'TopologyError';
}

export interface ReplicaOptions {
  standbys?: number;
  /** recovery_min_apply_delay of the standbys, in ms (default 100). */
  applyDelayMs?: number;
  /** Time limit of each wait (default 60 s). */
  timeoutMs?: number;
}

export interface ShardOptions {
  shards?: number;
  /** lock_timeout on the shards, in ms (default 2000). */
  lockTimeoutMs?: number;
  /** statement_timeout on the shards, in ms (default 60000). */
  statementTimeoutMs?: number;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Polls `test` until it is true; throws TopologyError(`what`) after `timeoutMs`. */
export async function waitFor(what: string, timeoutMs: number, test: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await test()) return;
    if (Date.now() >= deadline) throw new TopologyError(`timed out after ${timeoutMs / 1000} s waiting until ${what}`);
    await sleep(50);
  }
}

/** Runs fn with a connection to `url` (closed afterwards). */
export async function withClient<T>(url: string, fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const c = new pg.Client({ connectionString: url });
  c.on('error', () => undefined);
  await c.connect();
  try {
    return await fn(c);
  } finally {
    await c.end().catch(() => undefined);
  }
}

/** The URL with another database. Edited as text: a URL naming a unix socket (`postgresql://user:pw@/db?host=/run/
 *  postgresql`) has credentials and no host, which WHATWG's URL refuses. */
export function withDatabase(url: string, name: string): string {
  const m = /^([a-z][a-z0-9+.-]*:\/\/[^/?#]*)(\/[^?#]*)?(.*)$/is.exec(url);
  if (!m) throw new Error(`not a connection URL: ${url}`);
  return `${m[1]}/${encodeURIComponent(name)}${m[3]}`;
}

const node = (name: string, role: TopologyNode['role'], server: EmbeddedServer): TopologyNode => ({
  name,
  role,
  url: server.url,
  port: server.port,
  version: server.version,
  server,
});

function topology(
  kind: Topology['kind'],
  primary: TopologyNode,
  replicas: TopologyNode[],
  shards: TopologyNode[],
): Topology {
  const nodes = [primary, ...replicas, ...shards];
  let stopping: Promise<void> | undefined;
  return {
    kind,
    primary,
    replicas,
    shards,
    nodes,
    describe: () =>
      nodes.map(
        (n) =>
          `${n.name}: ` +
          (n.server
            ? `embedded PostgreSQL ${n.version} on 127.0.0.1:${n.port}`
            : `PostgreSQL ${n.version} at ${where(n.url)}`) +
          (n.role === 'standby' ? ' (hot standby)' : ''),
      ),
    stop() {
      // standbys and shards first: a standby whose primary went away only retries, but there is no point
      stopping ??= Promise.all([...replicas, ...shards].map((n) => n.server?.stop())).then(() =>
        primary.server?.stop(),
      );
      return stopping;
    },
  };
}

const where = (url: string): string => {
  const u = new URL(url);
  return `${u.hostname}:${u.port || '5432'}${u.pathname}`;
};

/**
 * The user's own primary and hot standbys (`--db URL --replica URL ...`): checked (the primary not in recovery,
 * each replica in recovery and streaming from somewhere), never started nor stopped by isocheck.
 */
export async function connectReplicaTopology(primaryUrl: string, replicaUrls: string[]): Promise<Topology> {
  const probe = async (url: string, what: string): Promise<{ version: string; recovery: boolean }> => {
    try {
      return await withClient(url, async (c) => {
        const r = await c.query<{ v: string; r: boolean }>(
          `SELECT current_setting('server_version') AS v, pg_is_in_recovery() AS r`,
        );
        return { version: r.rows[0].v, recovery: r.rows[0].r };
      });
    } catch (e) {
      throw new TopologyError(`cannot connect to ${what} at ${where(url)}: ${(e as Error).message}`);
    }
  };
  const p = await probe(primaryUrl, 'the primary (--db)');
  if (p.recovery)
    throw new TopologyError(
      `the server of --db at ${where(primaryUrl)} is in recovery: --db names the primary, --replica its standbys`,
    );
  const replicas: TopologyNode[] = [];
  for (const [i, url] of replicaUrls.entries()) {
    const r = await probe(url, `replica ${i + 1} (--replica)`);
    if (!r.recovery)
      throw new TopologyError(
        `the server of --replica at ${where(url)} is not a hot standby (pg_is_in_recovery() is false)`,
      );
    replicas.push({
      name: `replica${i + 1}`,
      role: 'standby',
      url,
      port: Number(new URL(url).port || 5432),
      version: r.version,
    });
  }
  return topology(
    'replica',
    {
      name: 'primary',
      role: 'primary',
      url: primaryUrl,
      port: Number(new URL(primaryUrl).port || 5432),
      version: p.version,
    },
    replicas,
    [],
  );
}

/** Stops the servers started so far when building a topology fails. */
async function startAll<T>(started: EmbeddedServer[], fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (e) {
    await Promise.all(started.map((s) => s.stop().catch(() => undefined)));
    throw e;
  }
}

/** Runs a program as the server's user (the data directories are its own), failing with what it said. */
function asServerUser(program: string, args: string[], cwd: string, user: RunAs | undefined): void {
  const r = spawnSync(program, args, {
    cwd,
    stdio: ['ignore', 'ignore', 'pipe'],
    env: serverEnv(user),
    timeout: 120_000,
    ...(user ? { uid: user.uid, gid: user.gid } : {}),
  });
  if (r.status !== 0)
    throw new TopologyError(
      `${program} ${args.join(' ')} failed: ${(r.stderr?.toString() || r.error?.message || `exit ${r.status}`).trim()}`,
    );
}

/** Creates a file exclusively (no link followed), as the server's user's. */
function writeNew(path: string, text: string, user: RunAs | undefined): void {
  rmSync(path, { force: true }); // unlinks; a planted link is removed, not followed
  const fd = openSync(path, 'wx', 0o600);
  try {
    writeSync(fd, text);
    if (user) fchownSync(fd, user.uid, user.gid);
  } finally {
    closeSync(fd);
  }
}

const confValue = (v: string) => `'${v.replace(/\\/g, '\\\\').replace(/'/g, "''")}'`;

/** A hot standby of `primary`: a base backup by pg_backup_start/stop through a physical slot, streaming. */
async function startStandby(primary: EmbeddedServer, name: string, applyDelayMs: number): Promise<EmbeddedServer> {
  const u = new URL(primary.url);
  const password = decodeURIComponent(u.password);
  const slot = `isocheck_${name}`;
  const admin = new pg.Client({ connectionString: primary.url });
  admin.on('error', () => undefined);
  await admin.connect();
  try {
    await admin.query(`SELECT pg_create_physical_replication_slot($1, true)`, [slot]);
    return await startEmbedded({
      dataFrom: {
        password,
        fill: async (dataDir, who) => {
          await admin.query(`SELECT pg_backup_start($1, true)`, [`isocheck ${name}`]);
          let label: string;
          try {
            // the copy: everything but the WAL (streamed through the slot), the lock file and the slots
            asServerUser('cp', ['-a', '--', `${join(primary.dir, 'data')}/.`, dataDir], '/', who);
            asServerUser(
              'sh',
              [
                '-c',
                'rm -f postmaster.pid postmaster.opts && find pg_wal -mindepth 1 ! -type d -delete && rm -rf ' +
                  'pg_replslot/* && rm -f log/* 2>/dev/null; true',
              ],
              dataDir,
              who,
            );
          } finally {
            label = (await admin.query<{ labelfile: string }>(`SELECT labelfile FROM pg_backup_stop(false)`)).rows[0]
              .labelfile;
          }
          writeNew(join(dataDir, 'backup_label'), label, who);
          writeNew(join(dataDir, 'standby.signal'), '', who);
          const conninfo =
            `host=127.0.0.1 port=${primary.port} user=postgres ` + `password=${password} application_name=${name}`;
          writeNew(
            join(dataDir, 'postgresql.auto.conf'),
            [
              '# written by isocheck (topology.ts): a hot standby of the primary',
              `primary_conninfo = ${confValue(conninfo)}`,
              `primary_slot_name = ${confValue(slot)}`,
              `recovery_min_apply_delay = ${confValue(`${applyDelayMs}ms`)}`,
              `hot_standby = on`,
              '',
            ].join('\n'),
            who,
          );
        },
      },
    });
  } finally {
    await admin.end().catch(() => undefined);
  }
}

/** A primary and `standbys` hot standbys streaming from it, each with recovery_min_apply_delay. */
export async function startReplicaTopology(options: ReplicaOptions = {}): Promise<Topology> {
  const n = options.standbys ?? 1;
  const delay = options.applyDelayMs ?? 100;
  const timeoutMs = options.timeoutMs ?? 60_000;
  if (!Number.isInteger(n) || n < 1) throw new InputError('--standbys must be a positive integer');
  if (!Number.isInteger(delay) || delay < 0)
    throw new InputError('--apply-delay must be a non-negative integer (milliseconds)');
  const started: EmbeddedServer[] = [];
  return startAll(started, async () => {
    const primary = await startEmbedded({
      settings: { wal_level: 'replica', max_wal_senders: String(n + 4), max_replication_slots: String(n + 4) },
    });
    started.push(primary);
    const standbys: EmbeddedServer[] = [];
    for (let i = 1; i <= n; i++) {
      const s = await startStandby(primary, `standby${i}`, delay);
      started.push(s);
      standbys.push(s);
    }
    await withClient(primary.url, (c) =>
      waitFor(`the primary reports ${n} standby${n === 1 ? '' : 's'} streaming`, timeoutMs, async () => {
        const r = await c.query<{ n: string }>(
          `SELECT count(*)::text AS n FROM pg_stat_replication WHERE state = 'streaming' AND application_name ` +
            `LIKE 'standby%'`,
        );
        return Number(r.rows[0].n) >= n;
      }),
    );
    return topology(
      'replica',
      node('primary', 'primary', primary),
      standbys.map((s, i) => node(`standby${i + 1}`, 'standby', s)),
      [],
    );
  });
}

/** A coordinator and `shards` shards (lock_timeout, statement_timeout on the shards). */
export async function startShardTopology(options: ShardOptions = {}): Promise<Topology> {
  const n = options.shards ?? 2;
  if (!Number.isInteger(n) || n < 1) throw new InputError('--shards must be a positive integer');
  const lock = options.lockTimeoutMs ?? 2000;
  const statement = options.statementTimeoutMs ?? 60_000;
  const started: EmbeddedServer[] = [];
  return startAll(started, async () => {
    const starting = [
      startEmbedded(),
      ...Array.from({ length: n }, () =>
        startEmbedded({
          settings: {
            lock_timeout: `${lock}ms`,
            statement_timeout: `${statement}ms`,
            idle_in_transaction_session_timeout: `${statement}ms`,
          },
        }),
      ),
    ];
    const results = await Promise.allSettled(starting);
    for (const r of results) if (r.status === 'fulfilled') started.push(r.value);
    const failed = results.find((r) => r.status === 'rejected');
    if (failed) throw (failed as PromiseRejectedResult).reason;
    const [coordinator, ...shards] = started;
    return topology(
      'shards',
      node('coordinator', 'coordinator', coordinator),
      [],
      shards.map((s, i) => node(`shard${i + 1}`, 'shard', s)),
    );
  });
}

const q = (name: string) => `"${name.replace(/"/g, '""')}"`;
const lit = (s: string) => `'${s.replace(/'/g, "''")}'`;

/**
 * Creates database `name` on the cluster: on the primary (unless `onPrimary` is false: the caller made it) and
 * waits until the standbys have it; or on the coordinator and every shard, with postgres_fdw, one foreign server
 * per shard and a user mapping for the coordinator's user.
 */
export async function createDatabase(
  topo: Topology,
  name: string,
  options: { onPrimary?: boolean; timeoutMs?: number } = {},
): Promise<void> {
  if (options.onPrimary !== false) await withClient(topo.primary.url, (c) => c.query(`CREATE DATABASE ${q(name)}`));
  if (topo.kind === 'replica') {
    await withClient(topo.primary.url, async (p) => {
      const clients = await Promise.all(
        topo.replicas.map(async (r) => {
          const c = new pg.Client({ connectionString: r.url });
          c.on('error', () => undefined);
          await c.connect();
          return c;
        }),
      );
      try {
        await waitForReplay(p, clients, options.timeoutMs ?? 60_000);
      } finally {
        await Promise.all(clients.map((c) => c.end().catch(() => undefined)));
      }
    });
    return;
  }
  await Promise.all(topo.shards.map((s) => withClient(s.url, (c) => c.query(`CREATE DATABASE ${q(name)}`))));
  await withClient(withDatabase(topo.primary.url, name), async (c) => {
    await c.query('CREATE EXTENSION IF NOT EXISTS postgres_fdw');
    for (const s of topo.shards) {
      const password = decodeURIComponent(new URL(s.url).password);
      await c.query(
        `CREATE SERVER ${q(s.name)} FOREIGN DATA WRAPPER postgres_fdw OPTIONS (host '127.0.0.1', ` +
          `port ${lit(String(s.port))}, dbname ${lit(name)})`,
      );
      await c.query(
        `CREATE USER MAPPING FOR CURRENT_USER SERVER ${q(s.name)} OPTIONS (user 'postgres', password ${lit(password)})`,
      );
    }
  });
}

/** The declared keys of sharded tables (the coordinator's partitioned tables have no primary key). */
export type DeclaredKeys = Record<string, string[]>;

/**
 * Creates the schema in database `name` and returns the sharded tables' keys (for Recorder.instrument's `keys`):
 * the schema as is on the primary (replica topology); on the coordinator, the schema, then distributeTables().
 */
export async function createSchema(
  topo: Topology,
  name: string,
  schema: string,
  tables: string[],
): Promise<DeclaredKeys> {
  return withClient(withDatabase(topo.primary.url, name), async (c) => {
    await c.query(schema);
    return topo.kind === 'shards' ? distributeTables(topo, name, c, schema, tables) : {};
  });
}

/**
 * Shards `tables` of database `name`, whose schema (and rows, if loaded) are on the coordinator as ordinary
 * tables: the schema on each shard (without foreign keys; identities made plain columns), then each table rebuilt
 * on the coordinator as a table partitioned by hash of its key's first column with one foreign partition per shard,
 * its rows moved there. Returns each table's key.
 */
export async function distributeTables(
  topo: Topology,
  name: string,
  coordinator: pg.ClientBase,
  schema: string,
  tables: string[],
): Promise<DeclaredKeys> {
  await Promise.all(
    topo.shards.map((s) =>
      withClient(withDatabase(s.url, name), async (c) => {
        await c.query(schema);
        const fks = await c.query<{ t: string; con: string }>(
          `SELECT conrelid::regclass::text AS t, conname AS con FROM pg_constraint WHERE contype = 'f' AND ` +
            `connamespace = 'public'::regnamespace`,
        );
        for (const fk of fks.rows) await c.query(`ALTER TABLE ${fk.t} DROP CONSTRAINT ${q(fk.con)}`);
        // the coordinator assigns identities; a shard takes the values it is sent
        const ids = await c.query<{ t: string; col: string }>(
          `SELECT a.attrelid::regclass::text AS t, a.attname AS col ` +
            `FROM pg_attribute a JOIN pg_class r ON r.oid = a.attrelid
            WHERE r.relnamespace = 'public'::regnamespace AND r.relkind = 'r' AND a.attidentity <> '' ` +
            `AND NOT a.attisdropped`,
        );
        for (const id of ids.rows) await c.query(`ALTER TABLE ${id.t} ALTER COLUMN ${q(id.col)} DROP IDENTITY`);
      }),
    ),
  );
  const c = coordinator;
  const keys: DeclaredKeys = {};
  // foreign keys between the recorded tables go (they would hold the old tables)
  const fks = await c.query<{ t: string; con: string }>(
    `SELECT conrelid::regclass::text AS t, conname AS con FROM pg_constraint WHERE contype = 'f' AND ` +
      `connamespace = 'public'::regnamespace`,
  );
  for (const fk of fks.rows) await c.query(`ALTER TABLE ${fk.t} DROP CONSTRAINT ${q(fk.con)}`);
  let t = 0;
  for (const table of tables) {
    const k = await c.query<{ col: string }>(
      `SELECT a.attname AS col FROM pg_index i JOIN LATERAL unnest(i.indkey) WITH ORDINALITY AS u(attnum, ord) ON true
         JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = u.attnum
        WHERE i.indrelid = to_regclass($1) AND i.indisprimary ORDER BY u.ord`,
      [table],
    );
    if (k.rows.length === 0) throw new TopologyError(`table ${table} has no primary key: it cannot be sharded by key`);
    keys[table] = k.rows.map((r) => r.col);
    const local = `${table}__isocheck_local`;
    await c.query(`ALTER TABLE ${q(table)} RENAME TO ${q(local)}`);
    // identity columns get their own; sequences of serial columns keep serving the new table's defaults
    await c.query(
      `CREATE TABLE ${q(table)} (LIKE ${q(local)} INCLUDING DEFAULTS INCLUDING IDENTITY) PARTITION BY HASH ` +
        `(${q(keys[table][0])})`,
    );
    const n = topo.shards.length;
    for (let i = 0; i < n; i++) {
      const shard = topo.shards[(i + t) % n];
      await c.query(
        `CREATE FOREIGN TABLE ${q(`${table}_p${i}`)} PARTITION OF ${q(table)} FOR VALUES WITH (MODULUS ${n}, ` +
          `REMAINDER ${i}) SERVER ${q(shard.name)} OPTIONS (table_name ${lit(table)}, batch_size '100')`,
      );
    }
    await c.query(`INSERT INTO ${q(table)} OVERRIDING SYSTEM VALUE SELECT * FROM ${q(local)}`);
    const owned = await c.query<{ seq: string; col: string; identity: boolean }>(
      `SELECT d.objid::regclass::text AS seq, a.attname AS col, d.deptype = 'i' AS identity FROM pg_depend d
         JOIN pg_attribute a ON a.attrelid = d.refobjid AND a.attnum = d.refobjsubid
        WHERE d.refobjid = to_regclass($1) AND d.classid = 'pg_class'::regclass AND d.deptype IN ('a', 'i')
          AND (SELECT relkind FROM pg_class WHERE oid = d.objid) = 'S'`,
      [local],
    );
    for (const o of owned.rows) {
      if (o.identity) {
        await c.query(
          `SELECT setval(pg_get_serial_sequence(${lit(q(table))}, ${lit(o.col)}), coalesce(max(${q(o.col)}), ` +
            `0) + 1, false) FROM ${q(table)}`,
        );
      } else {
        await c.query(`ALTER TABLE ${q(table)} ALTER COLUMN ${q(o.col)} SET DEFAULT nextval(${lit(o.seq)}::regclass)`);
        await c.query(`ALTER SEQUENCE ${o.seq} OWNED BY ${q(table)}.${q(o.col)}`);
      }
    }
    await c.query(`DROP TABLE ${q(local)}`);
    t++;
  }
  return keys;
}
