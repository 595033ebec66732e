// `isocheck run` and `isocheck scenario` stopped early, as a user sees it (the built CLI as a child process): Ctrl-C
// and SIGTERM give one line saying what the history holds and exit 130 / 143, with every transaction in flight
// written (unknown when its COMMIT was sent, aborted otherwise) and the file finished; a database that goes away
// (connections terminated, the server killed) gives one line and exit 2 with the history kept; a bad --out or
// --report is one line and exit 2 before any server starts. Never a stack trace.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import pg from 'pg';
import { startEmbedded, type EmbeddedServer } from '../src/db/embedded.js';
import { readHistory } from '../src/history/reader.js';
import { WID_COLUMN } from '../src/recorder/catalog.js';
import { buildPrivateCli } from './helpers/private-cli.js';

const root = resolve(import.meta.dirname, '..');
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
const STACK = /\n\s+at |Unhandled|internal error|node:internal/;

let work: string;
let cli: string;
let server: EmbeddedServer;

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), 'isocheck-interrupt-'));
  cli = buildPrivateCli(work);
  server = await startEmbedded();
}, 180_000);

afterAll(async () => {
  await server?.stop();
  if (work) rmSync(work, { recursive: true, force: true });
});

interface Running {
  child: ChildProcess;
  out: { stdout: string; stderr: string };
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string }>;
}

function start(args: string[]): Running {
  const child = spawn(process.execPath, [cli, ...args], { cwd: work, stdio: ['ignore', 'pipe', 'pipe'] });
  const out = { stdout: '', stderr: '' };
  child.stdout!.on('data', (d) => (out.stdout += d));
  child.stderr!.on('data', (d) => (out.stderr += d));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string }>(
    (res) => {
      const timer = setTimeout(() => child.kill('SIGKILL'), 90_000);
      child.on('close', (code, signal) => {
        clearTimeout(timer);
        res({ code, signal, ...out });
      });
    },
  );
  return { child, out, exited };
}

async function until<T>(what: string, ms: number, f: () => Promise<T | undefined> | T | undefined): Promise<T> {
  const t0 = Date.now();
  for (;;) {
    const v = await f();
    if (v !== undefined && v !== false) return v;
    if (Date.now() - t0 > ms) throw new Error(`timed out waiting for ${what}`);
    await sleep(25);
  }
}

const txnLines = (file: string) =>
  existsSync(file) ? (readFileSync(file, 'utf8').match(/"kind":"txn"/g) ?? []).length : 0;
const lastLine = (s: string) => s.trim().split('\n').pop() ?? '';
const runDbOf = (file: string) => JSON.parse(readFileSync(file, 'utf8').split('\n')[0]).meta.runDatabase as string;

async function query<R extends pg.QueryResultRow>(sql: string, params: unknown[] = [], url = server.url): Promise<R[]> {
  const c = new pg.Client({ connectionString: url });
  c.on('error', () => undefined);
  await c.connect();
  try {
    return (await c.query<R>(sql, params)).rows;
  } finally {
    await c.end();
  }
}

/** The postgres postmaster the CLI started (its child). */
function childPostmaster(pid: number): number | undefined {
  const out = spawnSync('ps', ['-o', 'pid=,comm=', '--ppid', String(pid)], { encoding: 'utf8' }).stdout;
  const line = out.split('\n').find((l) => /\bpostgres$/.test(l.trim()));
  return line ? Number(line.trim().split(/\s+/)[0]) : undefined;
}

function checkExit(file: string): number | null {
  return spawnSync(process.execPath, [cli, 'check', '--timeout', '30', file], {
    cwd: work,
    encoding: 'utf8',
    timeout: 90_000,
  }).status;
}

describe('isocheck run, interrupted', () => {
  it(
    'Ctrl-C (SIGINT) on the embedded server: the in-flight transactions and the end line written, one line, ' +
      'exit 130, the server removed',
    async () => {
      const file = join(work, 'sigint.ndjson');
      const r = start(['run', 'smallbank', '--sessions', '3', '--txns', '1000000', '--iso', 'rc', '--out', file]);
      await until('transactions', 60_000, () => txnLines(file) >= 30 || undefined);
      r.child.kill('SIGINT');
      const { code, signal, stderr, stdout } = await r.exited;
      expect({ code, signal }, stderr).toEqual({ code: 130, signal: null });
      expect(stderr).not.toMatch(STACK);
      expect(stdout).toBe('');
      const history = await readHistory(file);
      expect(history.truncated).toBe(false);
      const n = history.txns.length;
      const m = new RegExp(
        String.raw`^isocheck: interrupted \(SIGINT\): (\d+) transactions recorded in (\S+)( \((\d+ in flight ` +
          String.raw`written as (unknown|aborted)(, \d+ as aborted)?)\))?; check it with isocheck check (\S+)$`,
      ).exec(lastLine(stderr));
      expect(m, stderr).not.toBeNull();
      expect([Number(m![1]), m![2], m![7]]).toEqual([n, file, file]);
      // the embedded server and its data are gone
      const dataDir = /data in (\S+)\)/.exec(stderr)?.[1];
      expect(dataDir).toBeDefined();
      expect(existsSync(dataDir!)).toBe(false);
      expect(checkExit(file)).toBe(0);
    },
  );

  it('SIGTERM with --db: one line, exit 143, the run database dropped', async () => {
    const file = join(work, 'sigterm.ndjson');
    const r = start(['run', 'twitter', '--db', server.url, '--sessions', '2', '--txns', '1000000', '--out', file]);
    await until('transactions', 60_000, () => txnLines(file) >= 30 || undefined);
    const runDb = runDbOf(file);
    r.child.kill('SIGTERM');
    const { code, signal, stderr } = await r.exited;
    expect({ code, signal }, stderr).toEqual({ code: 143, signal: null });
    expect(stderr).not.toMatch(STACK);
    expect(lastLine(stderr)).toMatch(
      new RegExp(
        `^isocheck: interrupted \\(SIGTERM\\): \\d+ transactions recorded in ${file}( \\(.*\\))?; check it ` +
          `with isocheck check ${file}$`,
      ),
    );
    expect((await readHistory(file)).truncated).toBe(false);
    expect(await query('SELECT 1 FROM pg_database WHERE datname = $1', [runDb])).toEqual([]);
  });

  it(
    'a COMMIT in flight is written unknown (here COMMITs wait for a synchronous standby that never answers; the ' +
      'other sessions wait for their locks: aborted)',
    async () => {
      const file = join(work, 'syncrep.ndjson');
      const sessions = 3;
      const r = start([
        'run',
        'smallbank',
        '--db',
        server.url,
        '--keep-db',
        '--sessions',
        String(sessions),
        '--txns',
        '1000000',
        '--iso',
        'rc',
        '--out',
        file,
      ]);
      try {
        await until('transactions', 60_000, () => txnLines(file) >= 20 || undefined);
        const runDb = runDbOf(file);
        await query(`ALTER SYSTEM SET synchronous_standby_names = 'nobody'`);
        await query('SELECT pg_reload_conf()');
        // each session ends up waiting in its COMMIT, or for a row lock such a transaction holds: stable from then on
        const waits = async () => {
          const rows = await query<{ syncrep: number; lock: number }>(
            `SELECT count(*) FILTER (WHERE wait_event = 'SyncRep')::int AS syncrep, ` +
              `count(*) FILTER (WHERE wait_event_type = 'Lock')::int AS lock
             FROM pg_stat_activity WHERE datname = $1`,
            [runDb],
          );
          return rows[0];
        };
        const w = await until('every session waiting', 30_000, async () => {
          const a = await waits();
          if (a.syncrep === 0 || a.syncrep + a.lock !== sessions) return undefined;
          await sleep(200);
          const b = await waits();
          return b.syncrep === a.syncrep && b.lock === a.lock ? a : undefined;
        });
        r.child.kill('SIGINT');
        const { code, stderr } = await r.exited;
        expect(code, stderr).toBe(130);
        expect(lastLine(stderr)).toMatch(
          new RegExp(
            `: \\d+ transactions recorded in ${file} \\(${w.syncrep} in flight written as ` +
              `unknown${w.lock > 0 ? `, ${w.lock} as aborted` : ''}\\); check it`,
          ),
        );
        const history = await readHistory(file);
        expect(history.truncated).toBe(false);
        const unknown = history.txns.filter((t) => t.status === 'unknown');
        expect(unknown.length).toBe(w.syncrep);
        for (const t of unknown) {
          // each is its session's last transaction, and holds the writes it made before COMMIT
          expect(t.seq).toBe(Math.max(...history.txns.filter((x) => x.session === t.session).map((x) => x.seq)));
          expect(t.events.some((e) => e.op !== 'select')).toBe(true);
        }
        // PostgreSQL had committed them locally: once the wait is released, their writes are in the database
        await query('ALTER SYSTEM RESET synchronous_standby_names');
        await query('SELECT pg_reload_conf()');
        await until(
          "the run's backends to exit",
          30_000,
          async () =>
            (
              await query<{ n: number }>('SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = $1', [runDb])
            )[0].n === 0 || undefined,
        );
        const u = new URL(server.url);
        u.pathname = `/${runDb}`;
        for (const t of unknown) {
          for (const e of t.events) {
            if (e.op !== 'update') continue;
            const rows = await query<{ w: string }>(
              `SELECT ${WID_COLUMN} AS w FROM ${e.table} WHERE custid = $1`,
              [e.rows[0].row.custid],
              u.toString(),
            );
            expect(rows[0].w).toBe(e.wid);
          }
        }
        expect(checkExit(file)).toBe(0);
        await query(`DROP DATABASE ${runDb} WITH (FORCE)`);
      } finally {
        r.child.kill('SIGKILL');
        await query('ALTER SYSTEM RESET synchronous_standby_names');
        await query('SELECT pg_reload_conf()');
      }
    },
  );

  it(
    'every connection of the run terminated (pg_terminate_backend): the database went away, one line, exit 2, ' +
      'the history finished',
    async () => {
      const file = join(work, 'terminated.ndjson');
      const r = start(['run', 'smallbank', '--db', server.url, '--sessions', '3', '--txns', '1000000', '--out', file]);
      await until('transactions', 60_000, () => txnLines(file) >= 30 || undefined);
      const runDb = runDbOf(file);
      await query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1', [runDb]);
      const { code, stderr, stdout } = await r.exited;
      expect(code, stderr).toBe(2);
      expect(stderr).not.toMatch(STACK);
      expect(stdout).toBe('');
      const history = await readHistory(file);
      expect(history.truncated).toBe(false);
      const unknown = history.txns.filter((t) => t.status === 'unknown').length; // a COMMIT cut off by the termination
      // The server's words when any connection received its FATAL (LossReason prefers them over pg's bare "Connection
      // terminated unexpectedly"); the socket's when none did: a COMMIT written as the backend closed makes the kernel
      // answer with a reset that can drop the FATAL before it is read (seen: "read ECONNRESET").
      const line = lastLine(stderr);
      const why = /\((terminating connection due to administrator command|read ECONNRESET)\)/.exec(line)?.[1];
      expect(why, line).toBeDefined();
      expect(line).toBe(
        `isocheck: the database went away after ${history.txns.length} transactions (${why}); the history is ` +
          `in ${file}${unknown > 0 ? ` (${unknown} unknown: COMMIT sent, no answer)` : ''}; check it with ` +
          `isocheck check ${file}`,
      );
      expect(checkExit(file)).toBe(0);
    },
  );

  it('the embedded server killed (SIGKILL) under the run: one line, exit 2, the history kept', async () => {
    const file = join(work, 'server-killed.ndjson');
    const r = start(['run', 'twitter', '--sessions', '3', '--txns', '1000000', '--out', file]);
    await until('transactions', 60_000, () => txnLines(file) >= 30 || undefined);
    const pm = childPostmaster(r.child.pid!);
    expect(pm).toBeDefined();
    process.kill(-pm!, 'SIGKILL');
    const { code, stderr } = await r.exited;
    expect(code, stderr).toBe(2);
    expect(stderr).not.toMatch(STACK);
    const history = await readHistory(file);
    expect(lastLine(stderr)).toMatch(
      new RegExp(
        `^isocheck: the database went away after ${history.txns.length} transactions \\(.+\\); the history is ` +
          `in ${file}( \\(\\d+ unknown: COMMIT sent, no answer\\))?; check it with isocheck check ${file}$`,
      ),
    );
    expect([0, 3]).toContain(checkExit(file));
    const dataDir = /data in (\S+)\)/.exec(stderr)?.[1];
    expect(existsSync(dataDir!)).toBe(false);
  });
});

describe('output paths checked before anything runs', () => {
  const bad = () => {
    const dir = join(work, 'paths');
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'a-file'), '');
    return dir;
  };
  for (const [what, args, message] of [
    [
      '--out a directory',
      (d: string) => ['run', 'smallbank', '--out', d],
      (d: string) => `isocheck: --out ${d}: cannot write there: is a directory; give a file name`,
    ],
    [
      '--out through a file',
      (d: string) => ['run', 'smallbank', '--out', join(d, 'a-file', 'run.ndjson')],
      (d: string) =>
        `isocheck: --out ${join(d, 'a-file', 'run.ndjson')}: cannot write there: a part of the path is a ` +
        `file, not a folder`,
    ],
    [
      '--report a directory',
      (d: string) => ['run', 'smallbank', '--report', d],
      (d: string) => `isocheck: --report ${d}: cannot write there: is a directory; give a file name`,
    ],
    [
      '--report through a file',
      (d: string) => ['run', 'smallbank', '--check', '--report', join(d, 'a-file', 'r.html')],
      (d: string) =>
        `isocheck: --report ${join(d, 'a-file', 'r.html')}: cannot write there: a part of the path is a file, ` +
        `not a folder`,
    ],
    [
      'scenario --out a file',
      (d: string) => [
        'scenario',
        '--out',
        join(d, 'a-file'),
        join(root, 'test', 'scenarios', 'hermitage', 'p4.rc.spec'),
      ],
      (d: string) =>
        `isocheck: --out ${join(d, 'a-file')}: cannot write histories there: it (or a folder on its path) is ` +
        `a file, not a folder`,
    ],
  ] as const) {
    it(`${what}: one line, exit 2, no server started`, () => {
      const d = bad();
      const r = spawnSync(process.execPath, [cli, ...args(d)], { cwd: work, encoding: 'utf8', timeout: 60_000 });
      expect(r.status).toBe(2);
      expect(r.stderr.trim()).toBe(message(d));
      expect(r.stdout).toBe('');
    });
  }
});

describe('isocheck scenario, interrupted', () => {
  // s1 updates t and then sleeps inside its transaction: interrupted there, it is in flight, not committing
  const SPEC = `setup { CREATE TABLE t (id int PRIMARY KEY, v int); INSERT INTO t VALUES (1, 0); }
teardown { DROP TABLE t; }
session s1
step b1 { BEGIN; }
step u1 { UPDATE t SET v = v + 1 WHERE id = 1; }
step w1 { SELECT pg_sleep(60); }
step c1 { COMMIT; }
session s2
step r2 { SELECT v FROM t WHERE id = 1; }
permutation r2 b1 u1 w1 c1
`;
  let spec: string;
  beforeAll(() => {
    const dir = join(work, 'specs');
    mkdirSync(dir, { recursive: true });
    spec = join(dir, 'sleepy.spec');
    writeFileSync(spec, SPEC);
  });

  for (const [sig, exit] of [
    ['SIGINT', 130],
    ['SIGTERM', 143],
  ] as const) {
    it(`${sig}: the transaction in flight written aborted with its update, one line, exit ${exit}`, async () => {
      const out = join(work, `scenario-${sig}`);
      const r = start(['scenario', '--db', server.url, '--out', out, spec]);
      const sleeping = async () =>
        (
          await query<{ n: number }>(
            `SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = 'isocheck s1' AND query ` +
              `LIKE 'SELECT pg_sleep%' AND state = 'active'`,
          )
        )[0].n;
      await until('the sleeping step', 60_000, async () => (await sleeping()) === 1 || undefined);
      r.child.kill(sig);
      const { code, signal, stderr } = await r.exited;
      expect({ code, signal }, stderr).toEqual({ code: exit, signal: null });
      expect(stderr).not.toMatch(STACK);
      const file = join(out, 'sleepy-1.ndjson');
      expect(lastLine(stderr)).toBe(
        `isocheck: interrupted (${sig}): 0 permutations done; sleepy.spec permutation 1 stopped with 2 ` +
          `transactions recorded in ${file} (1 in flight written as aborted); histories in ${out}`,
      );
      const history = await readHistory(file);
      expect(history.truncated).toBe(false);
      const s1 = history.txns.find((t) => t.session === 1)!;
      expect(s1.status).toBe('aborted');
      expect(s1.events.map((e) => e.op)).toEqual(['update']);
      expect(history.txns.find((t) => t.session === 2)!.status).toBe('committed');
      expect(checkExit(file)).toBe(0);
      // the sleeping backend was ended, not left to hold its locks
      expect(await sleeping()).toBe(0);
    });
  }

  it("the embedded server killed under it: one line, exit 2, the permutation's history kept", async () => {
    const out = join(work, 'scenario-killed');
    const r = start(['scenario', '--out', out, spec]);
    const file = join(out, 'sleepy-1.ndjson');
    await until('the first transaction', 60_000, () => txnLines(file) >= 1 || undefined);
    await sleep(300);
    const pm = childPostmaster(r.child.pid!);
    expect(pm).toBeDefined();
    process.kill(-pm!, 'SIGKILL');
    const { code, stderr } = await r.exited;
    expect(code, stderr).toBe(2);
    expect(stderr).not.toMatch(STACK);
    expect(lastLine(stderr)).toMatch(
      new RegExp(
        `^isocheck: the database went away during sleepy.spec permutation 1 after \\d+ transactions? ` +
          `\\(.+\\); its history is in ${file}; histories in ${out}$`,
      ),
    );
    expect((await readHistory(file)).truncated).toBe(false);
    expect(checkExit(file)).toBe(0);
  });
});
