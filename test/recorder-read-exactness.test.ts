// When a read is exact (every row satisfying its WHERE was returned) and when it may have left rows out (partial;
// src/recorder/reads.ts, events.ts limitReached; docs/recording.md). The root's LIMIT n (a number or a parameter, no
// OFFSET) cut nothing when fewer than n rows came back: exact (Django's get() is `LIMIT 21`); as many rows as n,
// partial; a WHERE that fixes the key with '=' lets at most one row through, so any LIMIT n >= 1 cut nothing (Rails'
// find is LIMIT 1). Partial too: SKIP LOCKED (rows other transactions locked), a set-returning function that can
// return no row for a row or a group (the user's own included, known from the catalog), a FOR UPDATE read fetched in
// several parts (rows are locked as they are fetched). An aggregate inside a subquery does not make the query an
// aggregate.
// Each case where an exact read was wrong made the checker report a missing row on a correct run.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { startEmbedded, type EmbeddedServer } from '../src/db/embedded.js';
import { Recorder } from '../src/recorder/recorder.js';
import { readHistory } from '../src/history/reader.js';
import { checkHistory } from '../src/checker/check.js';
import type { SelectEvent } from '../src/history/format.js';
import type { QueryOptions } from '../src/recorder/client.js';
import type { FetchedResult } from '../src/recorder/portal-query.js';

let server: EmbeddedServer;
let setup: pg.Client;
const dir = mkdtempSync(join(tmpdir(), 'isocheck-limits-'));

beforeAll(async () => {
  server = await startEmbedded();
  setup = new pg.Client({ connectionString: server.url });
  await setup.connect();
  await setup.query(`CREATE TABLE jobs (id int4 PRIMARY KEY, state text NOT NULL)`);
  await setup.query(`INSERT INTO jobs SELECT g, 'ready' FROM generate_series(1, 4) g`);
  // a set-returning function of the user's: no row for an even id
  await setup.query(`CREATE FUNCTION odd(n int) RETURNS SETOF int LANGUAGE sql AS $$
    SELECT n WHERE n % 2 = 1 $$`);
  await setup.query(`CREATE TABLE other (k int)`);
}, 60_000);

afterAll(async () => {
  await setup?.end().catch(() => undefined);
  await server?.stop();
});

/** Each statement in a transaction of its own on a recorded connection; the reads recorded, in order. */
async function reads(statements: [string, unknown[]][], meanwhile?: (file: string) => Promise<void>) {
  const file = join(dir, `run${Math.random().toString(36).slice(2)}.ndjson`);
  const recorder = new Recorder({ file, onWarning: () => undefined });
  await recorder.instrument(setup, ['jobs']);
  const c = new pg.Client({ connectionString: server.url });
  c.on('error', () => undefined);
  await c.connect();
  const rc = recorder.client(c);
  const got: unknown[][] = [];
  for (const [sql, values] of statements) got.push((await rc.query(sql, values)).rows.map((r) => r.id));
  await meanwhile?.(file);
  await c.end();
  recorder.finish();
  const h = await readHistory(file);
  const events = h.txns.flatMap((t) => t.events as SelectEvent[]);
  return { got, events: events.map((e) => [e.where, e.partial ?? false, e.rows.map((r) => r.row.id)]), h };
}

describe('LIMIT', () => {
  it('is exact when fewer rows than the LIMIT came back, partial when as many', async () => {
    const { events } = await reads([
      ['SELECT id FROM jobs WHERE id = $1 LIMIT 21', [2]],
      ['SELECT id FROM jobs WHERE id > $1 ORDER BY id LIMIT 2', [1]],
      ['SELECT id FROM jobs WHERE id > $1 ORDER BY id LIMIT $2', [2, 5]],
      ['SELECT id FROM jobs WHERE id > $1 ORDER BY id LIMIT $2', [2, '2']],
      ['SELECT id FROM jobs WHERE id > $1 ORDER BY id LIMIT 0', [0]],
      ['SELECT id FROM jobs WHERE id > $1 ORDER BY id LIMIT 3 OFFSET 1', [0]],
      ['SELECT id FROM jobs WHERE id > $1 ORDER BY id FETCH FIRST 9 ROWS ONLY', [3]],
    ]);
    expect(events).toEqual([
      ['id = $1', false, [2]],
      ['id > $1', true, [2, 3]],
      ['id > $1', false, [3, 4]],
      ['id > $1', true, [3, 4]],
      ['id > $1', true, []],
      ['id > $1', true, [2, 3, 4]],
      ['id > $1', false, [4]],
    ]);
  });

  it("is exact when the WHERE fixes the key with '=' and the LIMIT is at least 1 (Rails' find: LIMIT 1)", async () => {
    // (a cast, even to the key's own type, does not count: it may compare in a looser type, below)
    const { events } = await reads([
      ['SELECT id FROM jobs WHERE jobs.id = $1 LIMIT $2', [2, 1]],
      ["SELECT id FROM jobs WHERE $1::int4 = id AND state = 'ready' LIMIT 1 FOR UPDATE", [3]],
      ['SELECT id FROM jobs WHERE id = 4 LIMIT 1', []],
      ['SELECT id FROM jobs WHERE id = $1 LIMIT 0', [1]],
      ['SELECT id FROM jobs WHERE id = $1 OR id = $2 LIMIT 1', [1, 2]],
      ['SELECT id FROM jobs WHERE id >= $1 AND id <= $1 LIMIT 1', [1]],
      ['SELECT id FROM jobs WHERE id = id + 0 LIMIT 1', []],
    ]);
    expect(events).toEqual([
      ['id = $1', false, [2]],
      ["CAST($1 AS int4) = id AND state = 'ready'", true, [3]],
      ['id = 4', false, [4]],
      ['id = $1', true, []],
      ['id = $1 OR id = $2', true, [1]],
      ['id >= $1 AND id <= $1', true, [1]],
      ['id = (id + 0)', true, [1]],
    ]);
  });
});

describe('LIMIT on a read by key, where two keys compare equal (found by review)', () => {
  /** The reads of `statements` on `table` (made by `ddl`), each in a transaction of its own. */
  async function keyReads(ddl: string[], table: string, statements: [string, unknown[], number[]?][]) {
    for (const d of ddl) await setup.query(d);
    const file = join(dir, `keys${Math.random().toString(36).slice(2)}.ndjson`);
    const recorder = new Recorder({ file, onWarning: () => undefined });
    await recorder.instrument(setup, [table]);
    const c = new pg.Client({ connectionString: server.url });
    await c.connect();
    const rc = recorder.client(c);
    const counts: number[] = [];
    for (const [text, values, paramTypes] of statements) {
      const config = { text, values, ...(paramTypes ? { paramTypes } : {}) } as pg.QueryConfig & QueryOptions;
      counts.push((await rc.query(config)).rows.length);
    }
    await c.end();
    recorder.finish();
    const h = await readHistory(file);
    return {
      counts,
      events: h.txns.flatMap((t) => t.events as SelectEvent[]).map((e) => [e.partial ?? false, e.rows.length]),
    };
  }

  it('is partial on a cast to a looser type, a parameter of a declared type, a deferrable key', async () => {
    const { events } = await keyReads(
      [
        'CREATE TABLE k8 (id int8 PRIMARY KEY, v int4)',
        'INSERT INTO k8 VALUES (9007199254740992, 1), (9007199254740993, 2)',
      ],
      'k8',
      [
        // two keys equal as float8: LIMIT 1 cut one
        ["SELECT id, v FROM k8 WHERE id = '9007199254740993'::float8 LIMIT 1", []],
        // a parameter the client declared float8 (the proxy's Parse): the same comparison
        ['SELECT id, v FROM k8 WHERE id = $1 LIMIT 1', ['9007199254740993'], [701]],
        // untyped: the key's own type
        ['SELECT id, v FROM k8 WHERE id = $1 LIMIT 1', ['9007199254740993']],
        ['SELECT id, v FROM k8 WHERE id = 9007199254740993 LIMIT 1', []],
      ],
    );
    expect(events).toEqual([
      [true, 1],
      [true, 1],
      [false, 1],
      [false, 1],
    ]);
    const padded = await keyReads(
      ['CREATE TABLE kv (k varchar PRIMARY KEY, v int4)', "INSERT INTO kv VALUES ('a', 1), ('a ', 2)"],
      'kv',
      [
        ["SELECT k, v FROM kv WHERE k = 'a'::bpchar LIMIT 1", []],
        ["SELECT k, v FROM kv WHERE k = 'a' LIMIT 1", []],
      ],
    );
    expect(padded.events).toEqual([
      [true, 1],
      [false, 1],
    ]);
    const deferred = await keyReads(
      ['CREATE TABLE kd (id int4 PRIMARY KEY DEFERRABLE INITIALLY DEFERRED, v int4)', 'INSERT INTO kd VALUES (1, 1)'],
      'kd',
      [['SELECT id, v FROM kd WHERE id = $1 LIMIT 1', [1]]],
    );
    expect(deferred.events).toEqual([[true, 1]]);
  });
});

describe('SKIP LOCKED', () => {
  it('is partial: the rows another transaction locked are left out, and the history is consistent', async () => {
    const other = new pg.Client({ connectionString: server.url });
    await other.connect();
    await other.query('BEGIN');
    await other.query('SELECT id FROM jobs WHERE id = 1 FOR UPDATE');
    try {
      const { got, events, h } = await reads([
        ["SELECT id FROM jobs WHERE state = 'ready' ORDER BY id FOR UPDATE SKIP LOCKED", []],
      ]);
      expect(got).toEqual([[2, 3, 4]]);
      expect(events).toEqual([["state = 'ready'", true, [2, 3, 4]]]);
      expect(checkHistory(h).verdict).toBe('consistent');
    } finally {
      await other.query('ROLLBACK');
      await other.end();
    }
  });
});

describe('set-returning functions', () => {
  it("make a read partial in the select list (the user's own too), with aggregates, in ORDER BY", async () => {
    const { got, events, h } = await reads([
      ['SELECT id, odd(id) FROM jobs WHERE id > $1 ORDER BY id', [0]],
      ['SELECT count(*), generate_series(1, 0) FROM jobs WHERE id > $1', [0]],
      ['SELECT id FROM jobs WHERE id > $1 ORDER BY generate_series(1, id % 2)', [0]],
      ['SELECT id, lower(state) FROM jobs WHERE id > $1 ORDER BY id', [2]],
    ]);
    expect(got).toEqual([[1, 3], [], [1, 3], [3, 4]]);
    expect(events.map(([where, partial]) => [where, partial])).toEqual([
      ['id > $1', true],
      ['id > $1', true],
      ['id > $1', true],
      ['id > $1', false],
    ]);
    expect(checkHistory(h).verdict).toBe('consistent');
  });
});

describe('an aggregate in a subquery', () => {
  it("is the subquery's: the query keeps its rows (it was run as an aggregate: one row)", async () => {
    const { got, events } = await reads([
      ['SELECT id, (SELECT count(*) FROM other) AS c FROM jobs WHERE id > $1', [2]],
    ]);
    expect(got).toEqual([[3, 4]]);
    expect(events).toEqual([['id > $1', false, [3, 4]]]);
  });
});

describe('FOR UPDATE fetched in parts', () => {
  it('is partial: a row the transaction changed between the parts is not returned', async () => {
    const file = join(dir, 'parts.ndjson');
    const recorder = new Recorder({ file, onWarning: () => undefined });
    await recorder.instrument(setup, ['jobs']);
    const c = new pg.Client({ connectionString: server.url });
    await c.connect();
    const rc = recorder.client(c);
    await rc.query('BEGIN');
    // (the proxy's option for an Execute with a row limit)
    const first = (await rc.query({
      text: 'SELECT id FROM jobs WHERE id > $1 ORDER BY id FOR UPDATE',
      values: [0],
      fetch: { portal: 'p', rows: 2 },
    } as pg.QueryConfig & QueryOptions)) as unknown as FetchedResult;
    await rc.query(`UPDATE jobs SET state = 'taken' WHERE id = 3`);
    const rest = await first.more(0);
    expect([...first.rows, ...rest.rows].map((r) => r.id)).toEqual([1, 2, 4]);
    await rc.query('COMMIT');
    await c.end();
    recorder.finish();
    const h = await readHistory(file);
    const e = h.txns[0].events[0] as SelectEvent;
    expect([e.partial, e.rows.map((r) => r.row.id)]).toEqual([true, [1, 2, 4]]);
    expect(checkHistory(h).verdict).toBe('consistent');
  });
});
