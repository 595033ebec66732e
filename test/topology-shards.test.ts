// Known answer (issue 19): a postgres_fdw coordinator and two shards, every transaction SERIALIZABLE. A reader
// reads account a (its snapshot on a's shard is taken then), a transfer from a to b on the other shard commits,
// and the reader reads b (its snapshot on b's shard is taken only now): it sees half of the transfer, a fractured
// read [violates SER]. The same two transactions on one server are consistent. Also: the coordinator's
// partitioned table has no primary key, so its key is declared, and the hidden column is added on the shards.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type pg from 'pg';
import { createDatabase, createSchema, startShardTopology, withDatabase, type Topology } from '../src/db/topology.js';
import { startEmbedded, type EmbeddedServer } from '../src/db/embedded.js';
import { Recorder } from '../src/recorder/index.js';
import { readHistory } from '../src/history/reader.js';
import { checkHistory } from '../src/checker/check.js';
import { renderResult } from '../src/checker/explain/explain.js';
import { loadPredicateParser } from '../src/sql/predicate.js';
import { connections } from './helpers/connections.js';

let topo: Topology;
let single: EmbeddedServer;
const { connect, closeAll } = connections();
const dir = mkdtempSync(join(tmpdir(), 'isocheck-topo-shards-'));

beforeAll(async () => {
  await loadPredicateParser();
  [topo, single] = await Promise.all([startShardTopology({ shards: 2 }), startEmbedded()]);
});

afterAll(async () => {
  await closeAll();
  await Promise.all([topo?.stop(), single?.stop()]);
});

/** Reader reads a; a transfer a -> b commits; reader reads b. Both SERIALIZABLE. */
async function record(
  file: string,
  url: string,
  setup: pg.Client,
  a: number,
  b: number,
  cluster: Parameters<Recorder['instrument']>[2],
): Promise<void> {
  const recorder = new Recorder({ file, onWarning: () => undefined });
  await recorder.instrument(setup, ['accounts'], cluster);
  const reader = recorder.namedSession('reader').client(await connect(url), 'coordinator');
  const writer = recorder.namedSession('writer').client(await connect(url), 'coordinator');
  await reader.label('Audit').query('BEGIN ISOLATION LEVEL SERIALIZABLE');
  await reader.query('SELECT bal FROM accounts WHERE id = $1', [a]);
  await writer.label('Transfer').query('BEGIN ISOLATION LEVEL SERIALIZABLE');
  await writer.query('UPDATE accounts SET bal = bal - 10 WHERE id = $1', [a]);
  await writer.query('UPDATE accounts SET bal = bal + 10 WHERE id = $1', [b]);
  await writer.query('COMMIT');
  await reader.query('SELECT bal FROM accounts WHERE id = $1', [b]);
  await reader.query('COMMIT');
  recorder.finish();
}

describe('postgres_fdw shards', () => {
  it('give a fractured read with every transaction at SERIALIZABLE', async () => {
    await createDatabase(topo, 'bank');
    const keys = await createSchema(topo, 'bank', 'CREATE TABLE accounts (id int PRIMARY KEY, bal int NOT NULL)', [
      'accounts',
    ]);
    const url = withDatabase(topo.primary.url, 'bank');
    const setup = await connect(url);
    await setup.query('INSERT INTO accounts SELECT g, 100 FROM generate_series(1, 10) g');
    const placed = (
      await setup.query<{ id: number; p: string }>('SELECT id, tableoid::regclass::text AS p FROM accounts ORDER BY id')
    ).rows;
    const a = placed[0];
    const b = placed.find((r) => r.p !== a.p)!;
    expect(b).toBeDefined();

    // the coordinator cannot show the key: refused without a declaration
    const refused = new Recorder({ file: join(dir, 'refused.ndjson'), onWarning: () => undefined });
    await expect(refused.instrument(setup, ['accounts'])).rejects.toThrow(/primary key/);
    refused.abandon();

    const shards = await Promise.all(topo.shards.map((s) => connect(withDatabase(s.url, 'bank'))));
    const file = join(dir, 'shards.ndjson');
    await record(file, url, setup, a.id, b.id, { keys, shards });
    for (const s of shards) {
      const cols = await s.query(
        `SELECT attname FROM pg_attribute WHERE attrelid = 'accounts'::regclass AND attname = '_isocheck_wid'`,
      );
      expect(cols.rows).toHaveLength(1);
    }
    const history = await readHistory(file);
    expect(history.meta.tables).toEqual([{ name: 'accounts', key: ['id'], keySource: 'declared key' }]);
    const r = checkHistory(history);
    expect(r.verdict).toBe('inconsistent');
    expect(r.anomalies[0].type).toBe('fractured-read');
    expect(r.anomalies[0].levels).toContain('SER');
    const text = renderResult(file, r);
    expect(text).toMatch(/FRACTURED READ \[violates SER\]/);
    expect(text).toMatch(/Audit, SER, committed, on coordinator/);
  });

  it('the same transactions on one server are consistent', async () => {
    const admin = await connect(single.url);
    await admin.query('CREATE DATABASE bank');
    const url = withDatabase(single.url, 'bank');
    const setup = await connect(url);
    await setup.query(
      'CREATE TABLE accounts (id int PRIMARY KEY, bal int NOT NULL); INSERT INTO accounts SELECT g, 100 FROM ' +
        'generate_series(1, 10) g',
    );
    const file = join(dir, 'single.ndjson');
    await record(file, url, setup, 1, 2, {});
    expect(checkHistory(await readHistory(file)).verdict).toBe('consistent');
  });
});
