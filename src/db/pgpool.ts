/**
 * pgpool-II in front of a replica topology (issue 19): the load balancer applications put before a primary and its
 * hot standbys. isocheck does not route here: pgpool does (streaming-replication mode, load balancing with weight
 * on the standbys), so what a client gets is what pgpool gives it.
 *
 *   findPgpool() -> the `pgpool` program (Debian package pgpool2), or undefined
 *   startPgpool(topology) -> mkdtemp: pgpool.conf (0600: it holds the password), pool_passwd, empty pcp.conf and
 *     pool_hba.conf -> `pgpool -n` (foreground, its own process group) on a free port -> ready when it accepts a
 *     connection -> { url, port, stop() }
 *
 * Decisions:
 * - load_balance_mode on, backend_weight 0 on the primary and 1 on each standby: read-only work goes to a standby
 *   (pgpool picks one per session); disable_load_balance_on_write = 'transaction' (pgpool's default): reads after a
 *   write in a transaction go to the primary, the next transaction is balanced again.
 * - No health checks, no failover, no streaming-replication delay check (sr_check_period 0: pgpool would otherwise
 *   stop balancing to a standby that lags, and the lag is what is being tested); the primary is found once, at
 *   start, with the postgres user's password.
 * - pgpool and everything it started are signalled as a process group, and stopped with the servers at exit and on
 *   SIGINT/SIGTERM/SIGHUP (embedded.ts onServersCleanup).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawn, spawnSync } from 'node:child_process';
import pg from 'pg';
import { freePort, onServersCleanup } from './embedded.js';
import { TopologyError, type Topology } from './topology.js';

export interface PgpoolServer {
  /** Connection URL through pgpool (user postgres, database postgres). */
  url: string;
  port: number;
  version: string;
  stop(): Promise<void>;
}

/** The pgpool program, or undefined when it is not installed. */
export function findPgpool(): string | undefined {
  for (const p of ['pgpool', '/usr/sbin/pgpool', '/usr/local/sbin/pgpool', '/usr/local/bin/pgpool']) {
    // it prints its version on stderr
    const r = spawnSync(p, ['--version'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 10_000 });
    if (r.status === 0 && /pgpool-II/i.test(`${r.stdout}${r.stderr}`)) return p;
  }
  return undefined;
}

const conf = (v: string | number) =>
  typeof v === 'number' ? String(v) : `'${v.replace(/\\/g, '\\\\').replace(/'/g, "''")}'`;

/** Starts pgpool-II before the primary and standbys of `topo`. */
export async function startPgpool(
  topo: Topology,
  options: { timeoutMs?: number; maxClients?: number } = {},
): Promise<PgpoolServer> {
  const program = findPgpool();
  if (!program) throw new TopologyError('pgpool-II is not installed (Debian: apt-get install pgpool2)');
  const timeoutMs = options.timeoutMs ?? 30_000;
  const dir = mkdtempSync(join(tmpdir(), 'isocheck-pgpool-'));
  const password = decodeURIComponent(new URL(topo.primary.url).password);
  const [port, pcpPort] = [await freePort(), await freePort()];
  const backends = [topo.primary, ...topo.replicas];
  const settings: Record<string, string | number> = {
    backend_clustering_mode: 'streaming_replication',
    listen_addresses: '127.0.0.1',
    port,
    // the socket beside the config, not in /var/run/postgresql (not ours unless root): socket_dir before pgpool
    // 4.4, unix_socket_directories since (each version ignores the other's name)
    socket_dir: dir,
    unix_socket_directories: dir,
    pcp_listen_addresses: '127.0.0.1',
    pcp_port: pcpPort,
    pcp_socket_dir: dir,
    pid_file_name: join(dir, 'pgpool.pid'),
    logdir: dir,
    log_destination: 'stderr',
    num_init_children: options.maxClients ?? 32,
    max_pool: 1,
    enable_pool_hba: 'off',
    pool_passwd: 'pool_passwd',
    load_balance_mode: 'on',
    disable_load_balance_on_write: 'transaction',
    statement_level_load_balance: 'off',
    sr_check_period: 0,
    sr_check_user: 'postgres',
    sr_check_password: password,
    health_check_period: 0,
    failover_on_backend_error: 'off',
    failover_on_backend_shutdown: 'off',
    use_watchdog: 'off',
    memory_cache_enabled: 'off',
  };
  backends.forEach((b, i) => {
    settings[`backend_hostname${i}`] = '127.0.0.1';
    settings[`backend_port${i}`] = b.port;
    settings[`backend_weight${i}`] = i === 0 ? 0 : 1;
    settings[`backend_flag${i}`] = 'DISALLOW_TO_FAILOVER';
    settings[`backend_application_name${i}`] = b.name;
  });
  const write = (name: string, text: string) => writeFileSync(join(dir, name), text, { mode: 0o600, flag: 'wx' });
  write(
    'pgpool.conf',
    `${Object.entries(settings)
      .map(([k, v]) => `${k} = ${typeof v === 'string' && /^(on|off)$/.test(v) ? v : conf(v)}`)
      .join('\n')}\n`,
  );
  write('pool_passwd', `postgres:TEXT${password}\n`);
  write('pcp.conf', '');
  write('pool_hba.conf', '');
  const logs: string[] = [];
  const child = spawn(
    program,
    ['-n', '-f', join(dir, 'pgpool.conf'), '-F', join(dir, 'pcp.conf'), '-a', join(dir, 'pool_hba.conf')],
    {
      cwd: dir,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  for (const s of [child.stdout, child.stderr]) {
    s?.on('data', (d: Buffer) => {
      logs.push(d.toString('utf8'));
      if (logs.length > 200) logs.splice(0, logs.length - 200);
    });
  }
  const kill = (signal: NodeJS.Signals) => {
    if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
    try {
      process.kill(-child.pid, signal);
    } catch {
      // gone
    }
  };
  const unregister = onServersCleanup(() => {
    kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  });
  let stopping: Promise<void> | undefined;
  const stop = (): Promise<void> => {
    stopping ??= (async () => {
      unregister();
      if (child.exitCode === null && child.signalCode === null) {
        const exited = new Promise<void>((res) => child.once('exit', () => res()));
        kill('SIGINT'); // fast shutdown
        const timer = setTimeout(() => kill('SIGKILL'), 5000);
        await exited;
        clearTimeout(timer);
      }
      rmSync(dir, { recursive: true, force: true });
    })();
    return stopping;
  };
  const url = `postgresql://postgres:${encodeURIComponent(password)}@127.0.0.1:${port}/postgres`;
  // ready: pgpool accepts a connection and answers
  const deadline = Date.now() + timeoutMs;
  let version = '';
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) {
      await stop();
      throw new TopologyError(`pgpool exited while starting: ${lastError(logs)}`);
    }
    const c = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2000 });
    c.on('error', () => undefined);
    try {
      await c.connect();
      version = (await c.query<{ v: string }>(`SELECT current_setting('server_version') AS v`)).rows[0].v;
      await c.end().catch(() => undefined);
      break;
    } catch {
      await c.end().catch(() => undefined);
    }
    if (Date.now() >= deadline) {
      await stop();
      throw new TopologyError(`pgpool did not accept connections within ${timeoutMs / 1000} s: ${lastError(logs)}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  child.unref();
  for (const s of [child.stdout, child.stderr]) (s as unknown as { unref?: () => void } | null)?.unref?.();
  return { url, port, version, stop };
}

function lastError(logs: string[]): string {
  const lines = logs
    .join('')
    .split('\n')
    .filter((l) => /FATAL|ERROR/.test(l));
  return (lines[lines.length - 1] ?? logs.join('').split('\n').filter(Boolean).slice(-1)[0] ?? 'no output').trim();
}
