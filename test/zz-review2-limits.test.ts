import { afterAll, beforeAll, describe, it } from 'vitest';
import { mkdtempSync, writeFileSync } from 'node:fs';
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
const dir = mkdtempSync(join(tmpdir(), 'isocheck-rev2-'));
const out: string[] = [];
const log = (...a: unknown[]) => out.push(a.map((x) => (typeof x === 'string' ? x : JSON.stringify(x))).join(' '));

beforeAll(async () => {
  server = await startEmbedded();
  setup = new pg.Client({ connectionString: server.url });
  await setup.connect();
  await setup.query(`CREATE TABLE jobs (id int4 PRIMARY KEY, state text NOT NULL, n int4 NOT NULL)`);
  await setup.query(`INSERT INTO jobs SELECT g, 'ready', g % 2 FROM generate_series(1, 4) g`);
  await setup.query(`CREATE TABLE other (id int4 PRIMARY KEY, j int4)`);
  await setup.query(`INSERT INTO other VALUES (1, 1)`);
  await setup.query(`CREATE FUNCTION myset(k int) RETURNS SETOF int LANGUAGE sql AS 'SELECT generate_series(1, k)'`);
}, 60_000);

afterAll(async () => {
  writeFileSync('/tmp/review2/out.txt', out.join('\n') + '\n');
  await setup?.end().catch(() => undefined);
  await server?.stop();
});

async function reset() {
  await setup.query(`DELETE FROM jobs`);
  await setup.query(`INSERT INTO jobs SELECT g, 'ready', g % 2 FROM generate_series(1, 4) g`);
}

async function session() {
  const file = join(dir, `run${Math.random().toString(36).slice(2)}.ndjson`);
  const recorder = new Recorder({ file, onWarning: () => undefined });
  await recorder.instrument(setup, ['jobs', 'other']);
  const clients: pg.Client[] = [];
  const mk = async () => {
    const c = new pg.Client({ connectionString: server.url });
    c.on('error', () => undefined);
    await c.connect();
    clients.push(c);
    return recorder.client(c);
  };
  const end = async () => {
    for (const c of clients) await c.end();
    recorder.finish();
    return readHistory(file);
  };
  return { mk, end };
}

function show(h: Awaited<ReturnType<typeof readHistory>>) {
  for (const t of h.txns) for (const e of t.events as SelectEvent[]) {
    const ev = e as unknown as Record<string, unknown>;
    log('   ', e.op, e.table, 'where=', e.where ?? null, 'partial=', e.partial ?? false,
      'rows=', (e.rows ?? []).map((r: any) => r.row?.id ?? r.key));
    void ev;
  }
}

const singles: [string, unknown[]][] = [
  ['SELECT count(*) FROM jobs WHERE id > 0 LIMIT 2', []],
  ['SELECT n, count(*) FROM jobs WHERE id > 0 GROUP BY n LIMIT 3', []],
  ['SELECT DISTINCT n FROM jobs WHERE id > 0 LIMIT 3', []],
  ['SELECT DISTINCT ON (n) id, n FROM jobs WHERE id > 0 ORDER BY n, id LIMIT 3', []],
  ['SELECT id, row_number() OVER () FROM jobs WHERE id > 0 LIMIT 9', []],
  ['SELECT n, count(*) FROM jobs GROUP BY n HAVING count(*) > 5 LIMIT 3', []],
  ['SELECT id FROM jobs WHERE id < 3 UNION SELECT id FROM jobs WHERE id > 3 LIMIT 9', []],
  ['SELECT id FROM (SELECT id FROM jobs WHERE id > 0 LIMIT 2) s LIMIT 9', []],
  ['WITH c AS (SELECT id FROM jobs WHERE id > 0 LIMIT 2) SELECT id FROM c LIMIT 9', []],
  ['SELECT j.id FROM jobs j JOIN other o ON o.id = j.id LIMIT 9', []],
  ['SELECT j.id FROM jobs j LEFT JOIN other o ON o.id = j.id LIMIT 9', []],
  ['SELECT id FROM jobs WHERE id > 0 FETCH FIRST ROW ONLY', []],
  ['SELECT id FROM jobs WHERE id > 0 FETCH FIRST $1 ROWS ONLY', [9]],
  ['SELECT id FROM jobs WHERE id > 0 ORDER BY n FETCH FIRST 1 ROWS WITH TIES', []],
  ['SELECT id FROM jobs WHERE id > 0 LIMIT ALL', []],
  ['SELECT id FROM jobs WHERE id > 0 LIMIT NULL', []],
  ['SELECT id FROM jobs WHERE id > 0 LIMIT $1', [null]],
  ['SELECT id FROM jobs WHERE id > 0 LIMIT $1', ['9007199254740993']],
  ['SELECT id FROM jobs WHERE id > 0 LIMIT $1', [' 9 ']],
  ['SELECT id FROM jobs WHERE id > 0 LIMIT $1', ['0x10']],
  ['SELECT id FROM jobs WHERE id > $1 LIMIT $1', [0]],
  ['SELECT id FROM jobs WHERE id > 0 LIMIT 2147483648', []],
  ['SELECT id, generate_series(1, 2) FROM jobs WHERE id > 0 LIMIT 99', []],
  ['SELECT count(*), generate_series(1, 0) FROM jobs WHERE id > 0', []],
  ['SELECT n, count(*), generate_series(1, 0) FROM jobs WHERE id > 0 GROUP BY n LIMIT 9', []],
  ['SELECT id FROM jobs WHERE id > 0 ORDER BY generate_series(1, n)', []],
  ['SELECT id FROM jobs WHERE id > 0 ORDER BY generate_series(1, n) LIMIT 9', []],
  ['SELECT id, myset(n) FROM jobs WHERE id > 0 LIMIT 9', []],
  ['SELECT id, myset(n) FROM jobs WHERE id > 0', []],
  ['SELECT DISTINCT ON (generate_series(1, n)) id FROM jobs WHERE id > 0 LIMIT 9', []],
  ['SELECT n FROM jobs WHERE id > 0 GROUP BY n, generate_series(1, n) LIMIT 9', []],
];

describe('singles', () => {
  it('records', async () => {
    for (const [sql, values] of singles) {
      const { mk, end } = await session();
      const rc = await mk();
      let got: unknown;
      try {
        got = (await rc.query(sql, values)).rows;
      } catch (e) {
        got = `ERROR ${(e as Error).message}`;
      }
      const h = await end();
      log(sql, JSON.stringify(values), '->', got);
      show(h);
      log('    verdict', checkHistory(h).verdict);
    }
  }, 120_000);
});
