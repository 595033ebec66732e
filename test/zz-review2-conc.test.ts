import { afterAll, beforeAll, describe, it } from 'vitest';
import { appendFileSync, mkdtempSync } from 'node:fs';
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
const dir = mkdtempSync(join(tmpdir(), 'isocheck-rev2c-'));
const log = (...a: unknown[]) =>
  appendFileSync('/tmp/review2/conc.txt', a.map((x) => (typeof x === 'string' ? x : JSON.stringify(x))).join(' ') + '\n');

beforeAll(async () => {
  server = await startEmbedded();
  setup = new pg.Client({ connectionString: server.url });
  await setup.connect();
  await setup.query(`CREATE TABLE jobs (id int4 PRIMARY KEY, state text NOT NULL, n int4 NOT NULL)`);
}, 60_000);

afterAll(async () => {
  await setup?.end().catch(() => undefined);
  await server?.stop();
});

async function session(init: string) {
  await setup.query(`DELETE FROM jobs`);
  await setup.query(init);
  const file = join(dir, `run${Math.random().toString(36).slice(2)}.ndjson`);
  const recorder = new Recorder({ file, onWarning: () => undefined });
  await recorder.instrument(setup, ['jobs']);
  const clients: pg.Client[] = [];
  const mk = async () => {
    const c = new pg.Client({ connectionString: server.url });
    c.on('error', () => undefined);
    await c.connect();
    clients.push(c);
    return recorder.client(c);
  };
  const end = async (title: string) => {
    for (const c of clients) await c.end();
    recorder.finish();
    const h = await readHistory(file);
    log('==', title);
    for (const t of h.txns) {
      log('  txn', (t as any).id, (t as any).iso ?? (t as any).isolation ?? '', (t as any).outcome ?? (t as any).status ?? '');
      for (const e of t.events as SelectEvent[])
        log('   ', e.op, e.table, 'where=', e.where ?? null, 'partial=', e.partial ?? false,
          'rows=', (e.rows ?? []).map((r: any) => [r.row?.id ?? r.key, r.wid ?? r.read, r.row?.state]));
    }
    const r = checkHistory(h);
    log('  verdict', r.verdict, r.anomalies.map((a: any) => a.kind ?? a.type ?? JSON.stringify(a).slice(0, 200)));
  };
  return { mk, end };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('concurrency', () => {
  for (const lim of ['', ' LIMIT 9']) {
    it(`EPQ drops a row that no longer matches${lim}`, async () => {
      const { mk, end } = await session(`INSERT INTO jobs SELECT g, 'ready', 0 FROM generate_series(1, 4) g`);
      const a = await mk();
      const b = await mk();
      await b.query('BEGIN');
      await b.query(`UPDATE jobs SET state = 'done' WHERE id = 1`);
      await a.query('BEGIN');
      const p = a.query(`SELECT id FROM jobs WHERE state = 'ready'${lim} FOR UPDATE`);
      await sleep(300);
      await b.query('COMMIT');
      log('got', (await p).rows);
      await a.query('COMMIT');
      await end(`EPQ drop${lim}`);
    });
    it(`EPQ: a row that newly matches is not returned${lim}`, async () => {
      const { mk, end } = await session(
        `INSERT INTO jobs VALUES (1,'ready',0),(2,'done',0),(3,'ready',0)`,
      );
      const a = await mk();
      const b = await mk();
      await b.query('BEGIN');
      await b.query(`UPDATE jobs SET n = 1 WHERE id = 1`);
      await b.query(`UPDATE jobs SET state = 'ready' WHERE id = 2`);
      await a.query('BEGIN');
      const p = a.query(`SELECT id FROM jobs WHERE state = 'ready'${lim} FOR UPDATE`);
      await sleep(300);
      await b.query('COMMIT');
      log('got', (await p).rows);
      await a.query('COMMIT');
      await end(`EPQ newly matching${lim}`);
    });
  }
  for (const [title, sql] of [
    ['delete = (SKIP LOCKED LIMIT 1)', `DELETE FROM jobs WHERE id = (SELECT id FROM jobs WHERE state = 'ready' ORDER BY id FOR UPDATE SKIP LOCKED LIMIT 1) RETURNING id`],
    ['update IN (SKIP LOCKED)', `UPDATE jobs SET state = 'run' WHERE id IN (SELECT id FROM jobs WHERE state = 'ready' FOR UPDATE SKIP LOCKED) RETURNING id`],
    ['cte skip locked', `WITH c AS (SELECT id FROM jobs WHERE state = 'ready' ORDER BY id LIMIT 2 FOR UPDATE SKIP LOCKED) UPDATE jobs SET state = 'run' FROM c WHERE jobs.id = c.id RETURNING jobs.id`],
    ['root share skip', `SELECT id FROM jobs WHERE state = 'ready' LIMIT 9 FOR SHARE SKIP LOCKED`],
    ['derived skip', `SELECT id FROM (SELECT id FROM jobs WHERE state = 'ready') s LIMIT 9 FOR UPDATE SKIP LOCKED`],
  ]) {
    for (const iso of ['READ COMMITTED', 'REPEATABLE READ', 'SERIALIZABLE']) {
      it(`${title} ${iso}`, async () => {
        const { mk, end } = await session(`INSERT INTO jobs SELECT g, 'ready', 0 FROM generate_series(1, 4) g`);
        const a = await mk();
        const b = await mk();
        await b.query(`BEGIN ISOLATION LEVEL ${iso}`);
        await b.query(`SELECT id FROM jobs WHERE id = 1 FOR UPDATE`);
        await a.query(`BEGIN ISOLATION LEVEL ${iso}`);
        try {
          log('got', (await a.query(sql)).rows);
          await a.query('COMMIT');
        } catch (e) {
          log('a error', (e as Error).message);
          await a.query('ROLLBACK');
        }
        try {
          await b.query(`UPDATE jobs SET state = 'done' WHERE id = 1`);
          await b.query('COMMIT');
        } catch (e) {
          log('b error', (e as Error).message);
          await b.query('ROLLBACK');
        }
        await end(`${title} ${iso}`);
      });
    }
  }
  for (const [lim, f] of [[9, 2], [4, 2], [4, 3], [5, 5]] as const) {
    it(`cursor LIMIT ${lim} fetch ${f}`, async () => {
      const { mk, end } = await session(`INSERT INTO jobs SELECT g, 'ready', 0 FROM generate_series(1, 4) g`);
      const a = await mk();
      await a.query('BEGIN');
      await a.query(`DECLARE c CURSOR FOR SELECT id FROM jobs WHERE id > 0 ORDER BY id LIMIT ${lim}`);
      for (let i = 0; i < 4; i++) {
        const r = await a.query(`FETCH FORWARD ${f} FROM c`);
        if (r.rows.length < f) break;
      }
      await a.query('COMMIT');
      await end(`cursor LIMIT ${lim} fetch ${f}`);
    });
  }
});
