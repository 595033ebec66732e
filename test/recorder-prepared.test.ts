// The recorder runs its rewritten statements as prepared statements of each connection (issue 17, item 5: the
// server parses and plans a rewritten text once per connection): named `__isocheck_<recorder>_<n>`, one per text,
// at most PREPARED_MAX texts; the application's own named statements keep their names; none with
// preparedStatements: false; after DISCARD ALL or DEALLOCATE (which drop them) the session runs its statements
// unnamed. The results and the history are the same either way (recorder-golden.test.ts compares whole runs).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { startEmbedded, type EmbeddedServer } from '../src/db/embedded.js';
import { PREPARED_MAX, Recorder } from '../src/recorder/recorder.js';
import type { RecordingClient } from '../src/recorder/client.js';
import { readHistory } from '../src/history/reader.js';
import { WhereColumnsCache } from '../src/recorder/where-columns.js';
import { loadPredicateParser } from '../src/sql/predicate.js';
import type { TableInfo } from '../src/recorder/catalog.js';

let server: EmbeddedServer;
let setup: pg.Client;
const dir = mkdtempSync(join(tmpdir(), 'isocheck-prepared-'));
let n = 0;

beforeAll(async () => {
  server = await startEmbedded();
  setup = new pg.Client({ connectionString: server.url });
  await setup.connect();
  await setup.query(`CREATE TABLE acc (id int4 PRIMARY KEY, v int4 NOT NULL)`);
  await setup.query(`INSERT INTO acc SELECT g, 0 FROM generate_series(1, 4) g`);
  await loadPredicateParser();
}, 60_000);

afterAll(async () => {
  await setup?.end().catch(() => undefined);
  await server?.stop();
});

async function recording(
  options: { preparedStatements?: boolean } = {},
): Promise<{ recorder: Recorder; rc: RecordingClient; file: string }> {
  const file = join(dir, `run${++n}.ndjson`);
  const recorder = new Recorder({ file, onWarning: () => undefined, ...options });
  await recorder.instrument(setup, ['acc']);
  const c = new pg.Client({ connectionString: server.url });
  await c.connect();
  return { recorder, rc: recorder.client(c), file };
}

/** The connection's prepared statements (protocol-level ones: from_sql false), by name. */
async function prepared(rc: RecordingClient): Promise<Map<string, string>> {
  const r = await rc.raw.query(`SELECT name, statement FROM pg_prepared_statements WHERE NOT from_sql`);
  return new Map(r.rows.map((x: { name: string; statement: string }) => [x.name, x.statement]));
}

describe('prepared statements for rewritten texts', () => {
  it('runs each rewritten text as one prepared statement of the connection, reused', async () => {
    const { recorder, rc, file } = await recording();
    for (let i = 1; i <= 3; i++) {
      await rc.query('BEGIN');
      expect((await rc.query('SELECT v FROM acc WHERE id = $1', [i])).rows).toEqual([{ v: 0 }]);
      await rc.query('UPDATE acc SET v = v + 1 WHERE id = $1', [i]);
      await rc.query('COMMIT');
    }
    const p = await prepared(rc);
    expect(p.size).toBe(2);
    for (const [name, text] of p) {
      expect(name).toMatch(/^__isocheck_[a-z0-9]+_[12]$/);
      expect(text).toContain('_isocheck_wid');
    }
    await (rc.raw as pg.Client).end();
    recorder.finish();
    const h = await readHistory(file);
    expect(h.txns.map((t) => t.events.map((e) => e.op))).toEqual([
      ['select', 'update'],
      ['select', 'update'],
      ['select', 'update'],
    ]);
    await setup.query('UPDATE acc SET v = 0');
  });

  it("keeps the application's own statement names, and prepares nothing with preparedStatements: false", async () => {
    const a = await recording();
    await a.rc.query({ name: 'mine', text: 'SELECT v FROM acc WHERE id = $1', values: [1] });
    await a.rc.query({ name: 'mine', text: 'SELECT v FROM acc WHERE id = $1', values: [2] });
    expect([...(await prepared(a.rc)).keys()]).toEqual(['mine']);
    await (a.rc.raw as pg.Client).end();
    a.recorder.finish();
    const b = await recording({ preparedStatements: false });
    await b.rc.query('SELECT v FROM acc WHERE id = $1', [1]);
    expect((await prepared(b.rc)).size).toBe(0);
    await (b.rc.raw as pg.Client).end();
    b.recorder.finish();
  });

  it('runs unnamed after the application drops the prepared statements (DISCARD ALL, DEALLOCATE)', async () => {
    for (const drop of ['DISCARD ALL', 'DEALLOCATE ALL', 'SELECT 1; DEALLOCATE ALL']) {
      const { recorder, rc } = await recording();
      expect((await rc.query('SELECT v FROM acc WHERE id = $1', [1])).rows).toEqual([{ v: 0 }]);
      await rc.query(drop);
      expect((await rc.query('SELECT v FROM acc WHERE id = $1', [2])).rows).toEqual([{ v: 0 }]);
      expect((await prepared(rc)).size).toBe(0);
      await (rc.raw as pg.Client).end();
      recorder.finish();
    }
  });

  const why = '(an application that inlines its values makes a text per statement)';
  it(`prepares at most ${PREPARED_MAX} texts ${why}`, async () => {
    const { recorder, rc } = await recording();
    for (let i = 0; i < PREPARED_MAX + 5; i++)
      expect((await rc.query(`SELECT v FROM acc WHERE id = ${(i % 4) + 1} AND v >= ${-i}`)).rowCount).toBe(1);
    expect((await prepared(rc)).size).toBe(PREPARED_MAX);
    await (rc.raw as pg.Client).end();
    recorder.finish();
  });
});

describe('the WHERE columns cache', () => {
  it('is keyed by the parameters the WHERE names only', () => {
    const cache = new WhereColumnsCache();
    const table = { columns: { id: 'int4', v: 'int4' } } as unknown as TableInfo;
    const a = cache.get('id = $2', [5, 1], table);
    expect(cache.get('id = $2', [7, 1], table)).toBe(a); // an UPDATE's SET value differs
    expect(cache.get('id = $2', [5, 2], table)).not.toBe(a);
    expect(cache.get('id = $2', [5, 1, 3], table)).not.toBe(a); // another number of values
    expect(a).toEqual({ columns: ['id'] });
  });
});
