/**
 * Benchmark: isocheck proxy's overhead (issue 20). The same seeded SmallBank transactions (same sessions, same
 * draws) run on one embedded PostgreSQL, alternated in rounds: plain pg clients on a direct connection, pg clients
 * through the pg recorder (RecordingClient), plain pg clients through `isocheck proxy` run as a user runs it (the
 * compiled CLI in its own process, stopped with SIGTERM after the round), and through the proxy started in this
 * process (startProxy: the proxy and the 16 clients then share one JS thread; kept for comparison, not the target).
 * Wall and CPU times of each round (this process's; and the proxy process's, from /proc/PID/stat), the retries (at
 * REPEATABLE READ the wall time depends on how often transactions collide), the medians' ratios to direct.
 * Run: npm run bench -- proxy [TXNS_PER_SESSION] [SESSIONS] [ROUNDS] (default 100 16 5; REPEATABLE READ).
 * ISOCHECK_BENCH_PROXY_NODE_ARGS: options for the proxy process's node (e.g. "--cpu-prof --cpu-prof-dir=DIR").
 * Target (issue 20): proxy <= 1.3x direct, and <= the pg wrapper's own overhead.
 */
import pg from 'pg';
import seedrandom from 'seedrandom';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { openDatabase } from '../src/db/connect.js';
import { Recorder } from '../src/recorder/index.js';
import { startProxy } from '../src/proxy/proxy.js';
import { getWorkload, beginStatement, levelFor, pickType, RollbackError, type Queryable } from '../workloads/index.js';

type Mode = 'direct' | 'recorder' | 'proxy' | 'inproc';
const ALL_MODES: Mode[] = ['direct', 'recorder', 'proxy', 'inproc'];
/** ISOCHECK_BENCH_PROXY_MODES=direct,proxy: only these modes (e.g. while profiling the proxy); default all. */
const MODES: Mode[] = (() => {
  const only = (process.env.ISOCHECK_BENCH_PROXY_MODES ?? '').split(',').filter((m) => m !== '');
  const bad = only.filter((m) => !ALL_MODES.includes(m as Mode));
  if (bad.length > 0) throw new Error(`ISOCHECK_BENCH_PROXY_MODES: unknown mode ${bad.join(', ')}`);
  return only.length > 0 ? ALL_MODES.filter((m) => only.includes(m)) : ALL_MODES;
})();

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

/** `isocheck proxy --db URL` as its own process; resolves with the URL it prints for clients. */
async function spawnProxy(
  db: string,
  tables: string[],
  out: string,
): Promise<{ child: ChildProcess; url: string; stderr: () => string }> {
  const nodeArgs = (process.env.ISOCHECK_BENCH_PROXY_NODE_ARGS ?? '').split(' ').filter((a) => a !== '');
  const child = spawn(
    process.execPath,
    [...nodeArgs, CLI, 'proxy', '--db', db, '--listen', '127.0.0.1:0', '--tables', tables.join(','), '--out', out],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
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

/** SIGTERM, then the exit (the history finished); an exit other than 0 is an error. */
async function stopProxy(p: { child: ChildProcess; stderr: () => string }): Promise<void> {
  const exited = new Promise<number | null>((resolve) => p.child.once('exit', (code) => resolve(code)));
  p.child.kill('SIGTERM');
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
  warmUp = Number(process.env.ISOCHECK_BENCH_PROXY_WARMUP ?? 25),
): Promise<Record<Mode, number[]>> {
  const db = await openDatabase({});
  const workload = getWorkload('smallbank');
  const dir = mkdtempSync(join(tmpdir(), 'isocheck-proxy-bench-'));
  const times: Record<Mode, number[]> = { direct: [], recorder: [], proxy: [], inproc: [] };
  /** CPU time of this process (the clients, the recorder, the in-process proxy; not the server's). */
  const cpu: Record<Mode, number[]> = { direct: [], recorder: [], proxy: [], inproc: [] };
  /** CPU time of the proxy process during the workload (proxy mode). */
  const proxyCpu: number[] = [];
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
          mode === 'proxy' ? await spawnProxy(url, workload.tables, join(dir, `${name}.ndjson`)) : undefined;
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
          await c.connect();
          clients.push(c);
        }
        // warm-up, untimed: every transaction rolled back (the data the timed part starts from is the loaded one),
        // so that the timed part measures each mode's steady state, not the proxy process's JIT warm-up
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
        for (const c of clients) await c.end();
        recorder?.finish();
        await proxy?.close();
        if (child) await stopProxy(child);
        await admin.query(`DROP DATABASE ${name} WITH (FORCE)`);
        await admin.end();
        times[mode].push(secs);
        cpu[mode].push(cpuSecs);
        if (child) proxyCpu.push(proxySecs);
        log(
          `round ${round + 1} ${mode.padEnd(8)} ${committed} committed (${retries} retried after 40001/40P01) ` +
            `in ${secs.toFixed(2)} s, this process's CPU ${cpuSecs.toFixed(2)} s` +
            `, ${statements} statements` +
            (child
              ? `, the proxy process's ${proxySecs.toFixed(2)} s (user ${proxyUser.toFixed(2)}, system ` +
                `${proxySys.toFixed(2)}; ${((proxySecs / statements) * 1e6).toFixed(0)} us a statement; in the ` +
                `warm-up of ${warmStatements} statements before, ${warmSecs.toFixed(2)} s, ` +
                `${((warmCpu / Math.max(warmStatements, 1)) * 1e6).toFixed(0)} us a statement)`
              : ''),
        );
      }
    }
    const d = median(times.direct);
    const c = median(cpu.direct);
    const ratio = (m: Mode): string => `${median(times[m]).toFixed(2)} s (x${(median(times[m]) / d).toFixed(2)})`;
    log(
      `CPU medians: this process (the clients): direct ${c.toFixed(2)} s, recorder ` +
        `${median(cpu.recorder).toFixed(2)} s, proxy ${median(cpu.proxy).toFixed(2)} s, in-process proxy ` +
        `${median(cpu.inproc).toFixed(2)} s (its ` +
        `clients' and the proxy's work); the proxy process ${median(proxyCpu).toFixed(2)} s`,
    );
    log(
      `medians: direct ${d.toFixed(2)} s, recorder ${ratio('recorder')}, proxy ${ratio('proxy')}, in-process ` +
        `proxy ${ratio('inproc')}; target: proxy <= x1.3 and <= the recorder's`,
    );
    return times;
  } finally {
    if (running && running.exitCode === null && running.signalCode === null) running.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
    await db.close();
  }
}
