/**
 * Benchmark: isocheck proxy's overhead (issue 20). The same seeded SmallBank transactions (same sessions, same
 * draws) run on one embedded PostgreSQL, alternated in rounds: plain pg clients on a direct connection, pg clients
 * through the pg recorder (RecordingClient), plain pg clients through `isocheck proxy` run as a user runs it (the
 * compiled CLI in its own process, stopped with SIGTERM after the round), and through the proxy started in this
 * process (startProxy: the proxy and the 16 clients then share one JS thread; kept for comparison, not the target).
 * Relays that record nothing give the floor any proxy pays on the same machine: `relay`, a Node process piping
 * bytes both ways (net.Socket.pipe, no parsing), `framer`, one that splits and rebuilds every message (the least
 * a proxy rewriting messages in place would do: bench/framer-relay.ts), and `pgbouncer` (C, session pooling, the
 * relay PostgreSQL users deploy), run when Debian's pgbouncer is installed (as nobody when this process is root:
 * it refuses root).
 * Wall and CPU times of each round (this process's; the proxy process's and the server backends', from
 * /proc/PID/stat), the retries (at REPEATABLE READ the wall time depends on how often transactions collide), the
 * medians' ratios to direct.
 * Run: npm run bench -- proxy [TXNS_PER_SESSION] [SESSIONS] [ROUNDS] (default 100 16 5; REPEATABLE READ).
 * ISOCHECK_BENCH_PROXY_NODE_ARGS: options for the proxy process's node (e.g. "--cpu-prof --cpu-prof-dir=DIR").
 * ISOCHECK_BENCH_PROXY_WARMUP: untimed transactions per session before each round (default 150: the proxy
 * process's CPU a timed statement stops falling there; RESULTS.md, 29 November 2026, session 15).
 * Target (issue 20): proxy <= 1.3x direct, and <= the pg wrapper's own overhead.
 */
import pg from 'pg';
import seedrandom from 'seedrandom';
import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { openDatabase } from '../src/db/connect.js';
import { freePort } from '../src/db/embedded.js';
import { waitFor } from '../src/db/topology.js';
import { Recorder } from '../src/recorder/index.js';
import { startProxy } from '../src/proxy/proxy.js';
import { FRAMER_RELAY, LISTEN_AND_PRINT } from './framer-relay.js';
import { getWorkload, beginStatement, levelFor, pickType, RollbackError, type Queryable } from '../workloads/index.js';

type Mode = 'direct' | 'relay' | 'framer' | 'pgbouncer' | 'recorder' | 'proxy' | 'inproc';
const ALL_MODES: Mode[] = ['direct', 'relay', 'framer', 'pgbouncer', 'recorder', 'proxy', 'inproc'];
/** Debian's pgbouncer, if installed. */
const PGBOUNCER = ['/usr/sbin/pgbouncer', '/usr/bin/pgbouncer'].find((p) => existsSync(p));
/** ISOCHECK_BENCH_PROXY_MODES=direct,proxy: only these modes (e.g. while profiling the proxy); default all (pgbouncer
 *  when installed). */
const MODES: Mode[] = (() => {
  const only = (process.env.ISOCHECK_BENCH_PROXY_MODES ?? '').split(',').filter((m) => m !== '');
  const bad = only.filter((m) => !ALL_MODES.includes(m as Mode));
  if (bad.length > 0) throw new Error(`ISOCHECK_BENCH_PROXY_MODES: unknown mode ${bad.join(', ')}`);
  if (only.includes('pgbouncer') && PGBOUNCER === undefined) throw new Error('pgbouncer is not installed');
  const modes = only.length > 0 ? ALL_MODES.filter((m) => only.includes(m)) : ALL_MODES;
  return PGBOUNCER === undefined ? modes.filter((m) => m !== 'pgbouncer') : modes;
})();
/** The modes run in a process of their own (whose CPU time is read from /proc). */
const SPAWNED: readonly Mode[] = ['relay', 'framer', 'pgbouncer', 'proxy'];

/** The compiled CLI next to this file (dist/bench/ -> dist/src/cli/main.js). */
const CLI = fileURLToPath(new URL('../src/cli/main.js', import.meta.url));

/** User and system CPU seconds of a live process, from /proc/PID/stat (Linux; NaN elsewhere). */
function processCpu(pid: number): { user: number; sys: number } {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // fields 14 and 15 (utime, stime), counted from the state (field 3) after the command's parenthesis, in clock
    // ticks: 100 a second on Linux (getconf CLK_TCK)
    return { user: Number(f[11]) / 100, sys: Number(f[12]) / 100 };
  } catch {
    return { user: Number.NaN, sys: Number.NaN };
  }
}

interface Spawned {
  child: ChildProcess;
  url: string;
  stderr: () => string;
}

/** `isocheck proxy --db URL` as its own process; resolves with the URL it prints for clients. */
function spawnProxy(db: string, tables: string[], out: string): Promise<Spawned> {
  const nodeArgs = (process.env.ISOCHECK_BENCH_PROXY_NODE_ARGS ?? '').split(' ').filter((a) => a !== '');
  return urlPrinted(
    spawn(
      process.execPath,
      [...nodeArgs, CLI, 'proxy', '--db', db, '--listen', '127.0.0.1:0', '--tables', tables.join(','), '--out', out],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    ),
  );
}

/** A Node process that pipes bytes between each client and the server, parsing nothing: the least a Node proxy
 *  costs. Prints the URL to give clients, as isocheck proxy does; exits 0 on SIGTERM. */
const RELAY = `
const net = require('node:net');
const [db] = process.argv.slice(1);
const u = new URL(db);
const server = net.createServer((c) => {
  const s = net.connect(Number(u.port || 5432), u.hostname);
  c.setNoDelay(true);
  s.setNoDelay(true);
  c.pipe(s).on('error', () => c.destroy());
  s.pipe(c).on('error', () => s.destroy());
  c.on('error', () => s.destroy());
  s.on('error', () => c.destroy());
});
${LISTEN_AND_PRINT}`;

function spawnRelay(db: string, script: string): Promise<Spawned> {
  return urlPrinted(spawn(process.execPath, ['-e', script, db], { stdio: ['ignore', 'pipe', 'pipe'] }));
}

/** pgbouncer in session mode in front of `db` (clients log in as anyone: auth_type any, the server login is the
 *  URL's); resolves once it accepts connections. As root it runs as nobody, from a directory nobody can read. */
async function spawnPgbouncer(db: string, under: string): Promise<Spawned> {
  const u = new URL(db);
  // nobody may pass through the bench's directory and read this one
  chmodSync(under, 0o711);
  const dir = mkdtempSync(join(under, 'pgbouncer-'));
  chmodSync(dir, 0o755);
  const port = await freePort();
  const database = decodeURIComponent(u.pathname.slice(1));
  const ini = join(dir, 'pgbouncer.ini');
  writeFileSync(
    ini,
    [
      '[databases]',
      `${database} = host=${u.hostname} port=${u.port || 5432} dbname=${database} ` +
        `user=${decodeURIComponent(u.username)} password=${decodeURIComponent(u.password)}`,
      '[pgbouncer]',
      'listen_addr = 127.0.0.1',
      `listen_port = ${port}`,
      'unix_socket_dir =',
      'auth_type = any',
      'pool_mode = session',
      'max_client_conn = 200',
      'default_pool_size = 100',
      'ignore_startup_parameters = extra_float_digits',
      '',
    ].join('\n'),
  );
  chmodSync(ini, 0o644);
  const root = process.getuid?.() === 0;
  const child = spawn(PGBOUNCER!, [ini], {
    stdio: ['ignore', 'pipe', 'pipe'],
    ...(root ? { uid: 65534, gid: 65534 } : {}),
  });
  let stderr = '';
  child.stdout!.on('data', (d: Buffer) => (stderr += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  // (it cannot report the port it was given: a free one, then polled until it accepts a connection)
  await waitFor('pgbouncer accepts connections', 30_000, async () => {
    if (child.exitCode !== null) throw new Error(`pgbouncer exited (${child.exitCode})`);
    return new Promise<boolean>((resolve) => {
      const s = net.connect(port, '127.0.0.1');
      s.once('connect', () => {
        s.destroy();
        resolve(true);
      });
      s.once('error', () => resolve(false));
    });
  }).catch((e: unknown) => {
    throw new Error(`${(e as Error).message}: ${stderr}`);
  });
  u.hostname = '127.0.0.1';
  u.port = String(port);
  return { child, url: u.toString(), stderr: () => stderr };
}

/** Resolves with the first line of the child's output that is a postgres URL. */
async function urlPrinted(child: ChildProcess): Promise<Spawned> {
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  const url = await new Promise<string>((resolve, reject) => {
    let stdout = '';
    const timer = setTimeout(() => reject(new Error(`the proxy printed no URL in 30 s: ${stderr}`)), 30_000);
    child.stdout!.on('data', (d: Buffer) => {
      stdout += d.toString();
      const line = /^(postgres\S+)\n/m.exec(stdout);
      if (line) {
        clearTimeout(timer);
        resolve(line[1]);
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`the proxy exited (${code}) before printing its URL: ${stderr}`));
    });
  });
  return { child, url, stderr: () => stderr };
}

/** SIGTERM, then the exit (the history finished); an exit other than 0 is an error. pgbouncer gets SIGINT, its
 *  safe shutdown (its SIGTERM is an immediate one, exit 1). */
async function stopProxy(p: Spawned, signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
  const exited = new Promise<number | null>((resolve) => p.child.once('exit', (code) => resolve(code)));
  p.child.kill(signal);
  const code = await exited;
  if (code !== 0) throw new Error(`the proxy exited with ${code}: ${p.stderr()}`);
}

/** A Queryable that counts its statements. */
function counted(q: Queryable, count: () => void): Queryable {
  return {
    query(text, params) {
      count();
      return q.query(text, params);
    },
  };
}

const median = (xs: number[]): number =>
  xs.length === 0 ? Number.NaN : [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

export async function runProxyBench(
  txns = 100,
  sessions = 16,
  rounds = 5,
  log: (line: string) => void = console.log,
  warmUp = Number(process.env.ISOCHECK_BENCH_PROXY_WARMUP ?? 150),
): Promise<Record<Mode, number[]>> {
  const db = await openDatabase({});
  const workload = getWorkload('smallbank');
  const dir = mkdtempSync(join(tmpdir(), 'isocheck-proxy-bench-'));
  const byMode = (): Record<Mode, number[]> =>
    Object.fromEntries(ALL_MODES.map((m) => [m, []])) as unknown as Record<Mode, number[]>;
  const times = byMode();
  /** CPU time of this process (the clients, the recorder, the in-process proxy; not the server's). */
  const cpu = byMode();
  /** CPU time of the relay's or proxy's process during the workload (the spawned modes). */
  const childCpu = byMode();
  /** CPU time of the server's backends (of the round's database) during the workload. */
  const server = byMode();
  /** The proxy process of the round under way (killed if the round fails). */
  let running: ChildProcess | undefined;
  try {
    log(
      `database: ${db.description}; smallbank, ${sessions} sessions x ${txns} transactions, REPEATABLE ` +
        `READ, ${rounds} rounds`,
    );
    const data = await workload.generate(dir, '1', 1);
    for (let round = 0; round < rounds; round++) {
      for (const mode of MODES) {
        const admin = new pg.Client({ connectionString: db.url });
        await admin.connect();
        const name = `proxy_bench_${mode}_${round}_${Date.now()}`;
        await admin.query(`CREATE DATABASE ${name}`);
        // Deadlocks are resolved after deadlock_timeout (1 s by default): at 16 sessions on SmallBank's few
        // accounts, those waits made a round's wall time anything from 0.9 to 6.9 s whatever the mode. 20 ms, the
        // same for every mode, leaves the time to the statements' round trips.
        await admin.query(`ALTER DATABASE ${name} SET deadlock_timeout = '20ms'`);
        const url = db.url.replace(/\/[^/?]*(\?|$)/, `/${name}$1`);
        const setup = new pg.Client({ connectionString: url });
        await setup.connect();
        await setup.query(workload.schema());
        await workload.load(setup, data);
        const recorder =
          mode === 'recorder'
            ? new Recorder({ file: join(dir, `${name}.ndjson`), onWarning: () => undefined })
            : undefined;
        if (recorder) await recorder.instrument(setup, workload.tables);
        await setup.end();
        const child =
          mode === 'proxy'
            ? await spawnProxy(url, workload.tables, join(dir, `${name}.ndjson`))
            : mode === 'relay' || mode === 'framer'
              ? await spawnRelay(url, mode === 'framer' ? FRAMER_RELAY : RELAY)
              : mode === 'pgbouncer'
                ? await spawnPgbouncer(url, dir)
                : undefined;
        running = child?.child;
        const proxy =
          mode === 'inproc'
            ? await startProxy({
                db: url,
                port: 0,
                tables: workload.tables,
                out: join(dir, `${name}.ndjson`),
                onWarning: () => undefined,
              })
            : undefined;
        const ctx = workload.context(1);
        const clients: pg.Client[] = [];
        for (let s = 0; s < sessions; s++) {
          const c = new pg.Client({ connectionString: child?.url ?? proxy?.url ?? url });
          // an error between statements (the server stopping after a failed round) is not the round's failure
          c.on('error', () => undefined);
          await c.connect();
          clients.push(c);
        }
        // warm-up, untimed: every transaction rolled back (the data the timed part starts from is the loaded one),
        // so that the timed part measures each mode's steady state, not the proxy process's JIT warm-up (25 a
        // session left the proxy compiling during the timed part: 87-101 us of its CPU a statement, against 70-74
        // after 150 and 69-75 after 400)
        const warm0 = child ? processCpu(child.child.pid!) : { user: 0, sys: 0 };
        const w0 = performance.now();
        let warmStatements = 0;
        await Promise.all(
          clients.map(async (c, s) => {
            const q: Queryable = counted(recorder ? recorder.client(c) : c, () => warmStatements++);
            const rng = seedrandom(`1/warm-up/${s + 1}`);
            for (let i = 0; i < warmUp; i++) {
              const type = pickType(workload.mix, rng);
              try {
                await q.query(beginStatement(levelFor(workload.configs.si, type)));
                await workload.transaction(type, q, rng, ctx);
              } catch (e) {
                if (!(e instanceof RollbackError) && !['40001', '40P01'].includes((e as { code?: string }).code ?? ''))
                  throw e;
              }
              await q.query('ROLLBACK');
            }
          }),
        );
        const warmSecs = (performance.now() - w0) / 1000;
        const warm1 = child ? processCpu(child.child.pid!) : { user: Number.NaN, sys: Number.NaN };
        const warmCpu = warm1.user + warm1.sys - warm0.user - warm0.sys;
        let committed = 0;
        let retries = 0;
        let statements = 0;
        // the server's backends of this database (the proxy's, or the clients'), and their CPU in the timed part
        const backends = (
          await admin.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE datname = $1', [name])
        ).rows.map((r) => r.pid);
        const serverCpu = (): number => backends.map(processCpu).reduce((sum, c) => sum + c.user + c.sys, 0);
        const server0 = serverCpu();
        const cpu0 = process.cpuUsage();
        const proxyCpu0 = child ? processCpu(child.child.pid!) : { user: 0, sys: 0 };
        const t0 = performance.now();
        await Promise.all(
          clients.map(async (c, s) => {
            const q: Queryable = counted(recorder ? recorder.client(c) : c, () => statements++);
            const rng = seedrandom(`1/session/${s + 1}`);
            for (let i = 0; i < txns; i++) {
              const type = pickType(workload.mix, rng);
              for (;;) {
                try {
                  await q.query(beginStatement(levelFor(workload.configs.si, type)));
                  await workload.transaction(type, q, rng, ctx);
                  await q.query('COMMIT');
                  committed++;
                  break;
                } catch (e) {
                  await q.query('ROLLBACK').catch(() => undefined);
                  if (e instanceof RollbackError) break;
                  if (['40001', '40P01'].includes((e as { code?: string }).code ?? '')) {
                    retries++;
                    continue;
                  }
                  throw e;
                }
              }
            }
          }),
        );
        const secs = (performance.now() - t0) / 1000;
        const used = process.cpuUsage(cpu0);
        const cpuSecs = (used.user + used.system) / 1e6;
        const proxyCpu1 = child ? processCpu(child.child.pid!) : { user: Number.NaN, sys: Number.NaN };
        const proxyUser = proxyCpu1.user - proxyCpu0.user;
        const proxySys = proxyCpu1.sys - proxyCpu0.sys;
        const proxySecs = proxyUser + proxySys;
        const serverSecs = serverCpu() - server0;
        for (const c of clients) await c.end();
        recorder?.finish();
        await proxy?.close();
        if (child) await stopProxy(child, mode === 'pgbouncer' ? 'SIGINT' : 'SIGTERM');
        await admin.query(`DROP DATABASE ${name} WITH (FORCE)`);
        await admin.end();
        times[mode].push(secs);
        cpu[mode].push(cpuSecs);
        server[mode].push(serverSecs);
        if (child) childCpu[mode].push(proxySecs);
        log(
          `round ${round + 1} ${mode.padEnd(8)} ${committed} committed (${retries} retried after 40001/40P01) ` +
            `in ${secs.toFixed(2)} s, this process's CPU ${cpuSecs.toFixed(2)} s` +
            `, the server's ${serverSecs.toFixed(2)} s, ${statements} statements` +
            (child
              ? `, the ${mode} process's ${proxySecs.toFixed(2)} s (user ${proxyUser.toFixed(2)}, system ` +
                `${proxySys.toFixed(2)}; ${((proxySecs / statements) * 1e6).toFixed(0)} us a statement; in the ` +
                `warm-up of ${warmStatements} statements before, ${warmSecs.toFixed(2)} s, ` +
                `${((warmCpu / Math.max(warmStatements, 1)) * 1e6).toFixed(0)} us a statement)`
              : ''),
        );
      }
    }
    const d = median(times.direct);
    const ran = MODES.filter((m) => times[m].length > 0);
    log(
      `CPU medians: this process (the clients${MODES.includes('inproc') ? '; the in-process proxy too' : ''}): ` +
        ran.map((m) => `${m} ${median(cpu[m]).toFixed(2)} s`).join(', ') +
        `; the relay's or proxy's own process: ` +
        ran
          .filter((m) => SPAWNED.includes(m))
          .map((m) => `${m} ${median(childCpu[m]).toFixed(2)} s`)
          .join(', ') +
        `; the server's backends: ${ran.map((m) => `${m} ${median(server[m]).toFixed(2)} s`).join(', ')}`,
    );
    log(
      `medians: ` +
        ran.map((m) => `${m} ${median(times[m]).toFixed(2)} s (x${(median(times[m]) / d).toFixed(2)})`).join(', ') +
        `; target: proxy <= x1.3 and <= the recorder's`,
    );
    return times;
  } finally {
    if (running && running.exitCode === null && running.signalCode === null) running.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
    await db.close();
  }
}
