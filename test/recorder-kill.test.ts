// A recording process killed with SIGKILL mid-run leaves a readable (truncated) history holding every
// transaction that had ended: the child reports each commit after query('COMMIT') returned, and every reported
// transaction must be in the file. Recorder.interrupt() (what Ctrl-C and a lost server use) writes the open
// transactions at once: aborted when not committing (their COMMIT is then refused, so the database never holds
// their writes), unknown when their COMMIT was sent.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import pg from 'pg';
import { startEmbedded, type EmbeddedServer } from '../src/db/embedded.js';
import { readHistory } from '../src/history/reader.js';
import { checkHistory } from '../src/checker/check.js';
import { loadPredicateParser } from '../src/sql/predicate.js';
import { Recorder, RecorderStoppedError } from '../src/recorder/recorder.js';

const root = resolve(import.meta.dirname, '..');

const CHILD = (recorderPath: string) => `
import pg from 'pg';
import { Recorder } from ${JSON.stringify(recorderPath)};
const [url, file] = process.argv.slice(2);
const setup = new pg.Client({ connectionString: url });
await setup.connect();
const recorder = new Recorder({ file, meta: { test: 'kill' }, onWarning: () => {} });
await recorder.instrument(setup, ['t']);
const clients = [];
for (let i = 0; i < 2; i++) {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  clients.push(recorder.client(c));
}
process.stdout.write('ready\\n');
let n = 0;
for (;;) {
  const c = clients[n % 2];
  const id = (n % 5) + 1;
  n++;
  await c.query('BEGIN ISOLATION LEVEL REPEATABLE READ');
  try {
    await c.query('SELECT v FROM t WHERE id = $1', [id]);
    await c.query('UPDATE t SET v = v + 1 WHERE id = $1', [id]);
    if (n % 7 === 0) await c.query('INSERT INTO t VALUES ($1, 0)', [1000 + n]);
    await c.query('COMMIT');
    process.stdout.write('committed s' + c.sessionNumber + '\\n');
  } catch (e) {
    await c.query('ROLLBACK').catch(() => {});
  }
}
`;

let server: EmbeddedServer;
let work: string;

beforeAll(async () => {
  server = await startEmbedded();
  const setup = new pg.Client({ connectionString: server.url });
  await setup.connect();
  await setup.query('CREATE TABLE t (id int4 PRIMARY KEY, v int4 NOT NULL)');
  await setup.query('INSERT INTO t SELECT g, 0 FROM generate_series(1, 5) g');
  await setup.end();
  // the child is bundled next to node_modules so that its package imports resolve
  mkdirSync(join(root, 'node_modules', '.cache'), { recursive: true });
  work = mkdtempSync(join(root, 'node_modules', '.cache', 'isocheck-kill-'));
});

afterAll(async () => {
  await server?.stop();
  if (work) rmSync(work, { recursive: true, force: true });
});

describe('a recording process killed mid-run', () => {
  it('leaves a truncated file with every finished transaction', async (ctx) => {
    let build: typeof import('rolldown').build;
    try {
      ({ build } = await import('rolldown'));
    } catch (e) {
      return ctx.skip(`cannot bundle the child script (rolldown unavailable: ${(e as Error).message})`);
    }
    const src = join(work, 'child.ts');
    writeFileSync(src, CHILD(join(root, 'src', 'recorder', 'index.ts')));
    await build({
      input: src,
      platform: 'node',
      external: (id) => !id.startsWith('.') && !id.startsWith('/'),
      resolve: { extensionAlias: { '.js': ['.ts', '.js'] } },
      output: { file: join(work, 'child.mjs'), format: 'esm' },
      logLevel: 'silent',
    });
    const file = join(mkdtempSync(join(work, 'run-')), 'run.ndjson'); // removed with work
    const child = spawn(process.execPath, [join(work, 'child.mjs'), server.url, file], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stderr.on('data', (d) => (err += d));
    const committed = await new Promise<number>((res, rej) => {
      const timer = setTimeout(() => rej(new Error(`child too slow; stderr: ${err}`)), 40_000);
      child.stdout.on('data', (d) => {
        out += d;
        const n = (out.match(/^committed/gm) ?? []).length;
        if (n >= 60) {
          clearTimeout(timer);
          child.kill('SIGKILL');
          res(n);
        }
      });
      child.on('exit', (code, signal) => {
        if (signal !== 'SIGKILL') rej(new Error(`child exited early (${code}): ${err}`));
      });
    });
    await new Promise((r) => child.once('close', r));
    // count again: output that arrived before the kill
    const reported = (out.match(/^committed s(\d+)/gm) ?? []).map((l) => Number(l.slice('committed s'.length)));
    expect(reported.length).toBeGreaterThanOrEqual(committed);
    const history = await readHistory(file);
    expect(history.truncated).toBe(true);
    for (const s of [1, 2]) {
      const inFile = history.txns.filter((t) => t.session === s && t.status === 'committed').length;
      expect(inFile).toBeGreaterThanOrEqual(reported.filter((x) => x === s).length);
    }
    await loadPredicateParser();
    const verdict = checkHistory(history);
    expect(verdict.verdict, JSON.stringify(verdict.anomalies?.slice(0, 2))).toBe('consistent');
  }, 60_000);
});

/** Waits until a commit waits for a synchronous standby (the setting is in force everywhere): a probe commit on
 *  its own connection, retried until it waits in SyncRep; its wait is then cancelled. */
async function syncRepInForce(url: string, admin: pg.Client): Promise<void> {
  for (let attempt = 0; attempt < 100; attempt++) {
    const probe = new pg.Client({ connectionString: url });
    await probe.connect();
    probe.on('notice', () => undefined);
    const pid = (await probe.query('SELECT pg_backend_pid() AS pid')).rows[0].pid;
    const done = probe.query('INSERT INTO sync_probe VALUES (1)').then(
      () => true,
      () => true,
    );
    let waited = false;
    for (let i = 0; i < 40 && !waited; i++) {
      waited =
        (await admin.query(`SELECT 1 FROM pg_stat_activity WHERE pid = $1 AND wait_event = 'SyncRep'`, [pid]))
          .rowCount === 1;
      if (!waited) {
        const finished = await Promise.race([done, new Promise<false>((r) => setTimeout(() => r(false), 25))]);
        if (finished) break; // committed without waiting: not yet in force
      }
    }
    if (waited) await admin.query('SELECT pg_cancel_backend($1)', [pid]);
    await done;
    await probe.end();
    if (waited) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error('synchronous_standby_names never came into force');
}

describe('Recorder.interrupt()', () => {
  const quiet = () => undefined;
  /** A recorder on a table of its own (t2), and one recorded connection. */
  async function recording(name: string) {
    const setup = new pg.Client({ connectionString: server.url });
    await setup.connect();
    await setup.query('CREATE TABLE IF NOT EXISTS t2 (id int4 PRIMARY KEY, v int4 NOT NULL)');
    const file = join(mkdtempSync(join(work, 'interrupt-')), `${name}.ndjson`); // removed with work
    const recorder = new Recorder({ file, onWarning: quiet });
    await recorder.instrument(setup, ['t2']);
    await setup.end();
    const raw = new pg.Client({ connectionString: server.url });
    raw.on('error', quiet);
    await raw.connect();
    return { file, recorder, raw, client: recorder.client(raw) };
  }
  async function widOf(id: number): Promise<string | null | undefined> {
    const c = new pg.Client({ connectionString: server.url });
    await c.connect();
    try {
      return (await c.query('SELECT _isocheck_wid AS w FROM t2 WHERE id = $1', [id])).rows[0]?.w;
    } finally {
      await c.end();
    }
  }

  it(
    'writes a transaction not yet committing as aborted, then the end line; its COMMIT is refused and the ' +
      'database never holds its write',
    async () => {
      const { file, recorder, raw, client } = await recording('aborted');
      await client.query('BEGIN');
      await client.query('INSERT INTO t2 VALUES (1, 1)');
      await client.query('COMMIT');
      await client.query('BEGIN');
      await client.query('INSERT INTO t2 VALUES (2, 2)');
      expect(recorder.interrupt('test')).toEqual({ unknown: 0, aborted: 1 });
      await expect(client.query('COMMIT')).rejects.toBeInstanceOf(RecorderStoppedError);
      await raw.end();
      const h = await readHistory(file);
      expect(h.truncated).toBe(false);
      expect(h.txns.map((t) => [t.id, t.status])).toEqual([
        ['s1.1', 'committed'],
        ['s1.2', 'aborted'],
      ]);
      expect(h.txns[1].events.map((e) => e.op)).toEqual(['insert']);
      expect(await widOf(1)).toBe('s1.1.1');
      expect(await widOf(2)).toBeUndefined();
    },
  );

  it(
    'writes a transaction whose COMMIT was sent as unknown (a COMMIT waiting for a synchronous standby that ' +
      'never answers)',
    async () => {
      const { file, recorder, raw, client } = await recording('unknown');
      const admin = new pg.Client({ connectionString: server.url });
      await admin.connect();
      try {
        await admin.query('CREATE TABLE IF NOT EXISTS sync_probe (x int)'); // a temp table's commit would not wait
        await admin.query(`ALTER SYSTEM SET synchronous_standby_names = 'nobody'`);
        await admin.query('SELECT pg_reload_conf()');
        // Backends wait for a standby only once the checkpointer too has read the new setting (it publishes that a
        // standby is named), which on a busy machine can lag: a probe commit on another connection shows when it
        // has (it waits in SyncRep; cancelling the wait leaves it committed locally).
        await syncRepInForce(server.url, admin);
        await client.query('BEGIN');
        await client.query('INSERT INTO t2 VALUES (3, 3)');
        // the session's backend reads the new setting between statements: wait until it has (SHOW on the raw client)
        for (
          let i = 0;
          i < 400 && (await raw.query('SHOW synchronous_standby_names')).rows[0].synchronous_standby_names !== 'nobody';
          i++
        )
          await new Promise((r) => setTimeout(r, 25));
        const pid = (await raw.query('SELECT pg_backend_pid() AS pid')).rows[0].pid;
        const commit = client.query('COMMIT');
        for (let i = 0; i < 400; i++) {
          if (
            (await admin.query(`SELECT 1 FROM pg_stat_activity WHERE pid = $1 AND wait_event = 'SyncRep'`, [pid]))
              .rowCount === 1
          )
            break;
          await new Promise((r) => setTimeout(r, 25));
        }
        expect(recorder.interrupt('test')).toEqual({ unknown: 1, aborted: 0 });
        await admin.query('ALTER SYSTEM RESET synchronous_standby_names');
        await admin.query('SELECT pg_reload_conf()');
        await commit; // the answer arrives late: the file keeps what it wrote
        await raw.end();
        const h = await readHistory(file);
        expect(h.truncated).toBe(false);
        expect(h.txns.map((t) => [t.id, t.status])).toEqual([['s1.1', 'unknown']]);
        expect(await widOf(3)).toBe('s1.1.1');
      } finally {
        await admin.query('ALTER SYSTEM RESET synchronous_standby_names').catch(quiet);
        await admin.query('SELECT pg_reload_conf()').catch(quiet);
        await admin.end();
      }
    },
  );
});
