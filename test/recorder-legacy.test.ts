// The pre-18 path (no RETURNING old.*: the previous wid is copied into _isocheck_prev by the UPDATE itself), on
// the Debian PostgreSQL 15 binaries when they can be started, and forced on the embedded PostgreSQL 18.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, rmSync, chmodSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { freePort, startEmbedded } from '../src/db/embedded.js';
import { Recorder } from '../src/recorder/index.js';
import { readHistory } from '../src/history/reader.js';
import type { History } from '../src/history/history.js';
import { checkHistory } from '../src/checker/check.js';
import { loadPredicateParser } from '../src/sql/predicate.js';

const PG15 = '/usr/lib/postgresql/15/bin';

interface Server {
  url: string;
  stop(): Promise<void>;
}

/** Starts PostgreSQL 15 with initdb/pg_ctl in a temp dir (as the postgres user when root); why not, if it cannot. */
async function startPg15(): Promise<Server | string> {
  if (!existsSync(join(PG15, 'pg_ctl'))) return `no PostgreSQL 15 binaries in ${PG15}`;
  const root = userInfo().uid === 0;
  const dir = mkdtempSync(join(tmpdir(), 'isocheck-pg15-'));
  const as = (cmd: string, args: string[]): string => {
    const full = root ? (['runuser', ['-u', 'postgres', '--', cmd, ...args]] as const) : ([cmd, args] as const);
    return execFileSync(full[0], [...full[1]], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
      timeout: 60_000,
    });
  };
  try {
    if (root) {
      const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim());
      const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim());
      chmodSync(dir, 0o755);
      chownSync(dir, uid, gid);
    }
    const port = await freePort();
    as(join(PG15, 'initdb'), [
      '-D',
      join(dir, 'data'),
      '--locale=C',
      '--encoding=UTF8',
      '--auth=trust',
      '-U',
      'postgres',
    ]);
    as(join(PG15, 'pg_ctl'), [
      '-D',
      join(dir, 'data'),
      '-l',
      join(dir, 'log'),
      '-w',
      '-o',
      `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off`,
      'start',
    ]);
    return {
      url: `postgresql://postgres@127.0.0.1:${port}/postgres`,
      async stop() {
        try {
          as(join(PG15, 'pg_ctl'), ['-D', join(dir, 'data'), '-m', 'immediate', '-w', 'stop']);
        } finally {
          rmSync(dir, { recursive: true, force: true });
        }
      },
    };
  } catch (e) {
    rmSync(dir, { recursive: true, force: true });
    return `cannot start PostgreSQL 15 (${(e as Error).message.split('\n')[0]})`;
  }
}

interface Run {
  history: History;
  previousWid: unknown;
  hasPrevColumn: boolean;
  returned: unknown[];
}

async function scenario(url: string, prevColumn: boolean | undefined): Promise<Run> {
  const file = join(mkdtempSync(join(tmpdir(), 'isocheck-legacy-')), 'run.ndjson');
  const setup = new pg.Client({ connectionString: url });
  await setup.connect();
  const a = new pg.Client({ connectionString: url });
  await a.connect();
  try {
    await setup.query(`DROP TABLE IF EXISTS acc`);
    await setup.query(`CREATE TABLE acc (id int4 PRIMARY KEY, v int4 NOT NULL, s varchar(5), c char(3))`);
    await setup.query(`INSERT INTO acc VALUES (1, 10, 'a', 'x'), (2, 20, NULL, NULL)`);
    const recorder = new Recorder({ file, prevColumn, onWarning: () => undefined });
    await recorder.instrument(setup, ['acc']);
    const c = recorder.client(a);
    const returned: unknown[] = [];
    await c.query('BEGIN');
    returned.push((await c.query('UPDATE acc SET v = v + 1 WHERE id = $1 RETURNING v', [1])).rows);
    await c.query('UPDATE acc SET v = v + 1 WHERE id = 1');
    await c.query('DELETE FROM acc WHERE id = 2');
    await c.query(`INSERT INTO acc VALUES (3, 0, 'x', 'ab') ON CONFLICT (id) DO UPDATE SET v = 9`);
    await c.query('COMMIT');
    returned.push(
      (
        await c.query(
          `INSERT INTO acc AS t VALUES (1, 5, 'y', 'z'), (4, 1, NULL, NULL) ON CONFLICT (id) DO UPDATE SET v ` +
            `= excluded.v + t.v RETURNING *`,
        )
      ).rows,
    );
    returned.push((await c.query('SELECT * FROM acc ORDER BY id')).rows);
    recorder.finish();
    const cols = await setup.query(
      `SELECT attname FROM pg_attribute WHERE attrelid = 'acc'::regclass AND attname = '_isocheck_prev'`,
    );
    const history = await readHistory(file);
    return {
      history,
      previousWid: (history.meta.recorder as { previousWid?: unknown }).previousWid,
      hasPrevColumn: cols.rowCount === 1,
      returned,
    };
  } finally {
    await a.end();
    await setup.end();
  }
}

function checkRun(run: Run): void {
  expect(run.previousWid).toBe('_isocheck_prev column');
  expect(run.hasPrevColumn).toBe(true);
  const [t1, t2, t3] = run.history.txns;
  expect(t1.events).toEqual([
    {
      op: 'update',
      table: 'acc',
      where: 'id = $1',
      params: [1],
      wid: 's1.1.1',
      rows: [{ read: 'init', row: { id: 1, v: 11, s: 'a', c: 'x  ' } }],
    },
    {
      op: 'update',
      table: 'acc',
      where: 'id = 1',
      wid: 's1.1.2',
      rows: [{ read: 's1.1.1', row: { id: 1, v: 12, s: 'a', c: 'x  ' } }],
    },
    { op: 'delete', table: 'acc', where: 'id = 2', wid: 's1.1.3', rows: [{ read: 'init', key: [2] }] },
    { op: 'insert', table: 'acc', wid: 's1.1.4', rows: [{ row: { id: 3, v: 0, s: 'x', c: 'ab ' } }] },
  ]);
  expect(t2.events).toEqual([
    { op: 'insert', table: 'acc', wid: 's1.2.1', rows: [{ row: { id: 4, v: 1, s: null, c: null } }] },
    {
      op: 'update',
      table: 'acc',
      partial: true,
      wid: 's1.2.1u',
      rows: [{ read: 's1.1.2', row: { id: 1, v: 17, s: 'a', c: 'x  ' } }],
    },
  ]);
  expect(t3.events[0].rows.map((r) => (r as { wid: string }).wid)).toEqual(['s1.2.1u', 's1.1.4', 's1.2.1']);
  expect(run.returned).toEqual([
    [{ v: 11 }],
    [
      { id: 1, v: 17, s: 'a', c: 'x  ' },
      { id: 4, v: 1, s: null, c: null },
    ],
    [
      { id: 1, v: 17, s: 'a', c: 'x  ' },
      { id: 3, v: 0, s: 'x', c: 'ab ' },
      { id: 4, v: 1, s: null, c: null },
    ],
  ]);
  const r = checkHistory(run.history);
  expect(r.verdict, JSON.stringify(r.anomalies?.slice(0, 2))).toBe('consistent');
}

beforeAll(async () => {
  await loadPredicateParser();
});

describe('pre-18 path forced on PostgreSQL 18', () => {
  let server: Awaited<ReturnType<typeof startEmbedded>>;
  beforeAll(async () => {
    server = await startEmbedded();
  });
  afterAll(async () => {
    await server?.stop();
  });
  it('records updates, deletes and upserts with _isocheck_prev', async () => {
    checkRun(await scenario(server.url, true));
  });
});

describe('PostgreSQL 15 (Debian binaries)', () => {
  let server: Server | string;
  beforeAll(async () => {
    server = await startPg15();
    if (typeof server === 'string') console.warn(`skipping the PostgreSQL 15 test: ${server}`);
  });
  afterAll(async () => {
    if (server && typeof server !== 'string') await server.stop();
  });
  it('records updates, deletes and upserts with _isocheck_prev', async (ctx) => {
    if (typeof server === 'string') return ctx.skip(server);
    checkRun(await scenario(server.url, undefined));
  });
});
