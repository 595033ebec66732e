// What a LIMIT and SKIP LOCKED make of a read (src/recorder/reads.ts, events.ts limitReached; docs/recording.md):
// the root's LIMIT n (a number or a parameter, no OFFSET) cut nothing when fewer than n rows came back, so the read
// is exact (Django's get() is `LIMIT 21`); as many rows as n, partial. SKIP LOCKED leaves out the rows other
// transactions locked: partial (an exact read made the checker report a row missing that was only locked).
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

let server: EmbeddedServer;
let setup: pg.Client;
const dir = mkdtempSync(join(tmpdir(), 'isocheck-limits-'));

beforeAll(async () => {
  server = await startEmbedded();
  setup = new pg.Client({ connectionString: server.url });
  await setup.connect();
  await setup.query(`CREATE TABLE jobs (id int4 PRIMARY KEY, state text NOT NULL)`);
  await setup.query(`INSERT INTO jobs SELECT g, 'ready' FROM generate_series(1, 4) g`);
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
