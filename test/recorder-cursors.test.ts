// Cursors declared over recorded SELECTs (DECLARE ... CURSOR FOR, FETCH, MOVE, CLOSE: psycopg2's named cursors,
// the server-side cursors of Django and SQLAlchemy; src/recorder/cursors.ts, docs/recording.md "Cursors"). The
// application gets the rows a direct connection gives, without the added columns; the read is recorded at the
// DECLARE with the rows fetched, exact once a FETCH FORWARD found the end with nothing skipped, else partial; a WITH
// HOLD cursor declared in a transaction of its own is read whole there.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { startEmbedded, type EmbeddedServer } from '../src/db/embedded.js';
import { Recorder } from '../src/recorder/recorder.js';
import type { QueryOptions, RecordingClient } from '../src/recorder/client.js';
import { readHistory } from '../src/history/reader.js';
import { checkHistory } from '../src/checker/check.js';
import type { SelectEvent, TxnLine } from '../src/history/format.js';

let server: EmbeddedServer;
let setup: pg.Client;
const dir = mkdtempSync(join(tmpdir(), 'isocheck-cursors-'));
let n = 0;

beforeAll(async () => {
  server = await startEmbedded();
  setup = new pg.Client({ connectionString: server.url });
  await setup.connect();
  await setup.query(`CREATE TABLE acc (id int4 PRIMARY KEY, v int4 NOT NULL)`);
  await setup.query(`INSERT INTO acc SELECT g, 0 FROM generate_series(1, 4) g`);
  // a cursor opened where the recorder sees no DECLARE (a PL/pgSQL function returning a refcursor)
  await setup.query(`CREATE FUNCTION opens(name text) RETURNS refcursor LANGUAGE plpgsql AS $$
    DECLARE r refcursor := name; BEGIN OPEN r FOR SELECT 7 AS a, 8 AS b; RETURN r; END $$`);
  await setup.query(`CREATE FUNCTION closes(name text) RETURNS int LANGUAGE plpgsql AS $$
    DECLARE r refcursor := name; BEGIN CLOSE r; RETURN 1; END $$`);
}, 60_000);

afterAll(async () => {
  await setup?.end().catch(() => undefined);
  await server?.stop();
});

async function recording(): Promise<{
  recorder: Recorder;
  rc: RecordingClient;
  file: string;
  end: () => Promise<void>;
}> {
  const file = join(dir, `run${++n}.ndjson`);
  const recorder = new Recorder({ file, onWarning: () => undefined });
  await recorder.instrument(setup, ['acc']);
  await setup.query('UPDATE acc SET v = 0');
  const c = new pg.Client({ connectionString: server.url });
  c.on('error', () => undefined); // (the server stopping after a failed test)
  await c.connect();
  return {
    recorder,
    rc: recorder.client(c),
    file,
    end: async () => {
      await c.end();
      recorder.finish();
    },
  };
}

async function txns(file: string): Promise<TxnLine[]> {
  return (await readHistory(file)).txns as unknown as TxnLine[];
}

const ids = (e: SelectEvent): unknown[] => e.rows.map((r) => r.row.id);

describe('cursors over recorded SELECTs', () => {
  it('fetched to the end in parts (as psycopg2 iterates a named cursor): one exact read at the DECLARE', async () => {
    const { rc, file, end } = await recording();
    await rc.query('BEGIN');
    await rc.query('DECLARE "big" CURSOR WITHOUT HOLD FOR SELECT id, v FROM acc WHERE id <= $1 ORDER BY id', [3]);
    const a = await rc.query('FETCH FORWARD 2 FROM "big"');
    expect(a.fields.map((f) => f.name)).toEqual(['id', 'v']);
    expect(a.rows).toEqual([
      { id: 1, v: 0 },
      { id: 2, v: 0 },
    ]);
    const b = await rc.query({ text: 'FETCH FORWARD 2 FROM "big"', rowMode: 'array' });
    expect([b.rows, b.command, b.rowCount]).toEqual([[[3, 0]], 'FETCH', 1]);
    await rc.query('CLOSE "big"');
    await rc.query('COMMIT');
    await end();
    const [t] = await txns(file);
    expect(t.events).toHaveLength(1);
    const e = t.events[0] as SelectEvent;
    expect([e.op, e.where, e.params, e.partial, ids(e)]).toEqual(['select', 'id <= $1', [3], undefined, [1, 2, 3]]);
  });

  it('records the rows fetched as partial when the cursor is closed before its end', async () => {
    const { rc, file, end } = await recording();
    await rc.query('BEGIN');
    await rc.query('DECLARE c CURSOR FOR SELECT id, v FROM acc ORDER BY id');
    expect((await rc.query('FETCH 1 FROM c')).rows).toEqual([{ id: 1, v: 0 }]);
    await rc.query('CLOSE c');
    await rc.query('COMMIT');
    await end();
    const e = (await txns(file))[0].events[0] as SelectEvent;
    expect([e.partial, ids(e)]).toEqual([true, [1]]);
  });

  it('records a read with rows passed over (MOVE, BACKWARD) as partial, each row once', async () => {
    const { rc, file, end } = await recording();
    await rc.query('BEGIN');
    await rc.query('DECLARE c SCROLL CURSOR FOR SELECT id, v FROM acc ORDER BY id');
    const moved = await rc.query('MOVE FORWARD 1 IN c');
    expect([moved.command, moved.rowCount, moved.fields]).toEqual(['MOVE', 1, []]);
    expect((await rc.query('FETCH ALL FROM c')).rows.map((r) => r.id)).toEqual([2, 3, 4]);
    expect((await rc.query('FETCH BACKWARD 2 FROM c')).rows.map((r) => r.id)).toEqual([4, 3]);
    await rc.query('COMMIT');
    await end();
    const e = (await txns(file))[0].events[0] as SelectEvent;
    expect([e.partial, ids(e)]).toEqual([true, [2, 3, 4]]);
  });

  it("places the read at the DECLARE (the cursor's snapshot), before the transaction's later write", async () => {
    const { rc, file, end } = await recording();
    await rc.query('BEGIN');
    await rc.query('DECLARE c CURSOR FOR SELECT id, v FROM acc WHERE id = 1');
    await rc.query('UPDATE acc SET v = 5 WHERE id = 1');
    // the cursor's snapshot is the DECLARE's: it does not see the write made after it
    expect((await rc.query('FETCH ALL FROM c')).rows).toEqual([{ id: 1, v: 0 }]);
    await rc.query('COMMIT');
    await end();
    const [t] = await txns(file);
    expect(t.events.map((e) => e.op)).toEqual(['select', 'update']);
    expect((t.events[0] as SelectEvent).rows).toEqual([{ wid: 'init', row: { id: 1, v: 0 } }]);
    expect(checkHistory(await readHistory(file)).verdict).toBe('consistent');
  });

  it('strips the added columns of a WITH HOLD cursor fetched after its commit, and records nothing then', async () => {
    const { rc, file, end } = await recording();
    await rc.query('BEGIN');
    await rc.query('DECLARE h CURSOR WITH HOLD FOR SELECT id, v FROM acc ORDER BY id');
    await rc.query('FETCH 1 FROM h');
    await rc.query('COMMIT');
    const rest = await rc.query('FETCH ALL FROM h');
    expect([rest.fields.map((f) => f.name), rest.rows.map((r) => r.id)]).toEqual([
      ['id', 'v'],
      [2, 3, 4],
    ]);
    await rc.query('CLOSE h');
    await end();
    const all = await txns(file);
    expect(all).toHaveLength(1);
    const e = all[0].events[0] as SelectEvent;
    expect([e.partial, ids(e)]).toEqual([true, [1]]);
  });

  it('reads a WITH HOLD cursor declared in autocommit whole, in its snapshot (Django iterator())', async () => {
    const { rc, file, end } = await recording();
    // (Django's: NO SCROLL, in a transaction of its own)
    await rc.query('DECLARE "it" NO SCROLL CURSOR WITH HOLD FOR SELECT id, v FROM acc WHERE id >= $1 ORDER BY id', [2]);
    // a write committed after the DECLARE: the cursor does not see it, and the history says so
    await setup.query('UPDATE acc SET v = 9 WHERE id = 3');
    const got: unknown[] = [];
    for (;;) {
      const part = await rc.query('FETCH FORWARD 2 FROM "it"');
      expect(part.fields.map((f) => f.name)).toEqual(['id', 'v']);
      got.push(...part.rows.map((r) => [r.id, r.v]));
      if (part.rows.length < 2) break;
    }
    await rc.query('CLOSE "it"');
    expect(got).toEqual([
      [2, 0],
      [3, 0],
      [4, 0],
    ]);
    await end();
    const all = await txns(file);
    expect(all).toHaveLength(1);
    const e = all[0].events[0] as SelectEvent;
    expect([e.where, e.partial ?? false, ids(e)]).toEqual(['id >= $1', false, [2, 3, 4]]);
    expect(checkHistory(await readHistory(file)).verdict).toBe('consistent');
    await setup.query('UPDATE acc SET v = 0');
  });

  it('takes a cursor name for another cursor once the recorded one has ended', async () => {
    const { rc, end } = await recording();
    const other = async (name: string): Promise<unknown[]> => {
      await rc.query('SELECT opens($1)', [name]);
      return (await rc.query(`FETCH 1 FROM ${name}`)).rows;
    };
    const declare = (name: string): Promise<unknown> =>
      rc.query(`DECLARE ${name} CURSOR FOR SELECT id, v FROM acc ORDER BY id`);
    await rc.query('BEGIN');
    // ended by CLOSE
    await declare('c');
    await rc.query('CLOSE c');
    expect(await other('c')).toEqual([{ a: 7, b: 8 }]);
    // closed where the recorder does not see it, then declared again, over no recorded table
    await declare('d');
    await rc.query(`SELECT closes('d')`);
    await rc.query('DECLARE d CURSOR FOR SELECT 1 AS x, 2 AS y, 3 AS z, 4 AS w');
    expect((await rc.query('FETCH 1 FROM d')).rows).toEqual([{ x: 1, y: 2, z: 3, w: 4 }]);
    // by a ROLLBACK TO a savepoint before it
    await rc.query('SAVEPOINT s');
    await declare('e');
    await rc.query('ROLLBACK TO SAVEPOINT s');
    expect(await other('e')).toEqual([{ a: 7, b: 8 }]);
    // by the end of its transaction
    await declare('f');
    await rc.query('ROLLBACK');
    await rc.query('BEGIN');
    expect(await other('f')).toEqual([{ a: 7, b: 8 }]);
    await rc.query('COMMIT');
    // by DISCARD ALL (a WITH HOLD cursor outlives its transaction)
    await rc.query('BEGIN');
    await rc.query('DECLARE g CURSOR WITH HOLD FOR SELECT id, v FROM acc ORDER BY id');
    await rc.query('COMMIT');
    await rc.query('DISCARD ALL');
    await rc.query('BEGIN');
    expect(await other('g')).toEqual([{ a: 7, b: 8 }]);
    await rc.query('COMMIT');
    await end();
  });

  // (found by a review of the change)
  it('runs a DECLARE given a row limit (pgjdbc with a fetch size) whole, and records its cursor', async () => {
    const { rc, file, end } = await recording();
    await rc.query('BEGIN');
    // (the proxy's option for an Execute with a row limit)
    const declare: pg.QueryConfig & QueryOptions = {
      text: 'DECLARE c CURSOR FOR SELECT id FROM acc WHERE id <= 2 ORDER BY id',
      fetch: { portal: 'p', rows: 5 },
    };
    await rc.query(declare);
    const r = await rc.query('FETCH ALL FROM c');
    expect([r.fields.map((f) => f.name), r.rows]).toEqual([['id'], [{ id: 1 }, { id: 2 }]]);
    await rc.query('COMMIT');
    await end();
    const e = (await txns(file))[0].events[0] as SelectEvent;
    expect([e.where, e.partial, ids(e)]).toEqual(['id <= 2', undefined, [1, 2]]);
  });

  it('records a FOR UPDATE cursor partial: a row the transaction changed after the DECLARE is left out', async () => {
    const { rc, file, end } = await recording();
    await rc.query('BEGIN');
    await rc.query('DECLARE c CURSOR FOR SELECT id, v FROM acc ORDER BY id FOR UPDATE');
    await rc.query('UPDATE acc SET v = 5 WHERE id = 2');
    expect((await rc.query('FETCH ALL FROM c')).rows.map((r) => r.id)).toEqual([1, 3, 4]);
    await rc.query('COMMIT');
    await end();
    const e = (await txns(file))[0].events[0] as SelectEvent;
    expect([e.partial, ids(e)]).toEqual([true, [1, 3, 4]]);
    expect(checkHistory(await readHistory(file)).verdict).toBe('consistent');
  });

  it('records a cursor fetched to its end with no row as an exact empty read', async () => {
    const { rc, file, end } = await recording();
    await rc.query('BEGIN');
    await rc.query('DECLARE c CURSOR FOR SELECT id FROM acc WHERE id > 10');
    expect((await rc.query('FETCH FORWARD 5 FROM c')).rows).toEqual([]);
    await rc.query('COMMIT');
    await end();
    const e = (await txns(file))[0].events[0] as SelectEvent;
    expect([e.where, e.partial, e.rows]).toEqual(['id > 10', undefined, []]);
  });

  it('keeps its cursors through DISCARD PLANS (only DISCARD ALL closes them)', async () => {
    const { rc, end } = await recording();
    await rc.query('BEGIN');
    await rc.query('DECLARE c CURSOR FOR SELECT id, v FROM acc ORDER BY id');
    await rc.query('DISCARD PLANS');
    const r = await rc.query('FETCH 1 FROM c');
    expect([r.fields.map((f) => f.name), r.rows]).toEqual([['id', 'v'], [{ id: 1, v: 0 }]]);
    await rc.query('COMMIT');
    await end();
  });

  it('refuses a cursor statement among several in one text (each must come alone to be recorded)', async () => {
    const { rc, end } = await recording();
    await rc.query('BEGIN');
    await rc.query('DECLARE c CURSOR FOR SELECT id, v FROM acc ORDER BY id');
    await expect(rc.query('FETCH 1 FROM c; SELECT 1')).rejects.toThrow(/several statements/);
    await expect(rc.query('CLOSE c; SELECT 1')).rejects.toThrow(/several statements/);
    await rc.query('ROLLBACK');
    await end();
  });

  it('refuses a BINARY cursor over a recorded table', async () => {
    const { rc, end } = await recording();
    await rc.query('BEGIN');
    await expect(rc.query('DECLARE b BINARY CURSOR FOR SELECT id FROM acc')).rejects.toThrow(
      /a BINARY cursor gives its rows in binary/,
    );
    await rc.query('ROLLBACK');
    await end();
  });
});
