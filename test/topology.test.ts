// Topologies on embedded servers (issue 19): a primary with a hot standby made without pg_basebackup streams, and
// its recovery_min_apply_delay shows (a read on the standby right after a commit misses it); a coordinator with
// two postgres_fdw shards places rows on both shards, and RETURNING old works through it.
import { afterAll, describe, expect, it } from 'vitest';
import {
  createDatabase,
  createSchema,
  startReplicaTopology,
  startShardTopology,
  waitForReplay,
  withClient,
  withDatabase,
  type Topology,
} from '../src/db/topology.js';

const started: Topology[] = [];
afterAll(async () => {
  await Promise.all(started.map((t) => t.stop()));
});

describe('topologies', () => {
  it('a hot standby streams from the primary, behind by its apply delay', async () => {
    const r = await startReplicaTopology({ standbys: 1, applyDelayMs: 300 });
    started.push(r);
    expect(r.describe()).toHaveLength(2);
    await createDatabase(r, 'x');
    await withClient(withDatabase(r.primary.url, 'x'), async (c) => {
      await c.query('CREATE TABLE t (id int PRIMARY KEY, v int)');
      await c.query('INSERT INTO t VALUES (1, 1)');
      await withClient(withDatabase(r.replicas[0].url, 'x'), async (s) => {
        await waitForReplay(c, [s]);
        expect((await s.query('SELECT pg_is_in_recovery() AS r')).rows[0].r).toBe(true);
        const streaming = await c.query(`SELECT application_name, state FROM pg_stat_replication`);
        expect(streaming.rows).toEqual([{ application_name: 'standby1', state: 'streaming' }]);
        await c.query('UPDATE t SET v = 2');
        expect((await s.query('SELECT v FROM t')).rows).toEqual([{ v: 1 }]); // not replayed yet: 300 ms delay
        await waitForReplay(c, [s]);
        expect((await s.query('SELECT v FROM t')).rows).toEqual([{ v: 2 }]);
        await expect(s.query('INSERT INTO t VALUES (2, 2)')).rejects.toThrow(/read-only/);
      });
    });
    await r.stop();
  });

  it('a coordinator spreads a partitioned table over two shards through postgres_fdw', async () => {
    const sh = await startShardTopology({ shards: 2 });
    started.push(sh);
    await createDatabase(sh, 'y');
    const keys = await createSchema(
      sh,
      'y',
      'CREATE TABLE a (id int PRIMARY KEY, v int); CREATE TABLE b (id int GENERATED ALWAYS AS IDENTITY ' +
        'PRIMARY KEY, w int)',
      ['a', 'b'],
    );
    expect(keys).toEqual({ a: ['id'], b: ['id'] });
    await withClient(withDatabase(sh.primary.url, 'y'), async (c) => {
      await c.query('INSERT INTO a SELECT g, g FROM generate_series(1, 20) g');
      await c.query('INSERT INTO b (w) SELECT g FROM generate_series(1, 20) g');
      expect((await c.query('SELECT count(*)::int AS n FROM b')).rows[0].n).toBe(20);
      await c.query('BEGIN ISOLATION LEVEL SERIALIZABLE');
      expect((await c.query('UPDATE a SET v = v + 1 WHERE id = 3 RETURNING old.v AS o, new.v AS n')).rows).toEqual([
        { o: 3, n: 4 },
      ]);
      await c.query('COMMIT');
    });
    const counts: number[] = [];
    for (const s of sh.shards)
      counts.push(
        await withClient(
          withDatabase(s.url, 'y'),
          async (c) => (await c.query('SELECT count(*)::int AS n FROM a')).rows[0].n,
        ),
      );
    expect(counts.reduce((x, y) => x + y)).toBe(20);
    expect(Math.min(...counts)).toBeGreaterThan(0);
    await sh.stop();
  });
});
