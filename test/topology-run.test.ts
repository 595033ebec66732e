// isocheck run --topology (issue 19), through runWorkload as the CLI calls it: SmallBank on a coordinator with two
// postgres_fdw shards at SERIALIZABLE ends in a named anomaly; Twitter on a primary with a hot standby (reads routed
// to it) ends in a read-your-writes violation, its transactions on primary and standby1; the refusals (pgpool:
// test/topology-pgpool.test.ts). Each run: 8 sessions x 100 transactions (the topology defaults), a few seconds.
import { describe, expect, it } from 'vitest';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { renderRunSummary, runWorkload } from '../src/cli/run-command.js';
import { topologyOf } from '../src/cli/run-topology.js';
import { startReplicaTopology, withClient } from '../src/db/topology.js';
import { readHistory } from '../src/history/reader.js';
import { checkHistory } from '../src/checker/check.js';
import { loadPredicateParser } from '../src/sql/predicate.js';

const dir = mkdtempSync(join(tmpdir(), 'isocheck-topo-run-'));

describe('isocheck run --topology', () => {
  it('smallbank on shards at SERIALIZABLE: a named anomaly', async () => {
    await loadPredicateParser();
    const lines: string[] = [];
    const out = join(dir, 'smallbank-shards.ndjson');
    const s = await runWorkload({
      workload: 'smallbank',
      topology: 'shards',
      iso: 'ser',
      out,
      progress: false,
      log: (l) => lines.push(l),
    });
    expect(s.sessions * s.txnsPerSession).toBe(800);
    expect(s.database).toMatch(/coordinator[\s\S]*shard1[\s\S]*shard2/);
    expect(s.invariantViolations).toEqual([]);
    const history = await readHistory(out);
    // the shards each transaction used, as postgres_fdw says
    const nodes = new Set(history.txns.map((t) => t.node));
    expect([...nodes].every((n) => /^coordinator( \((shard[12](, )?)+\))?$/.test(n ?? ''))).toBe(true);
    expect(nodes).toContain('coordinator (shard1, shard2)');
    const r = checkHistory(history);
    expect(r.verdict).toBe('inconsistent');
    expect(['fractured-read', 'write-skew', 'read-skew', 'lost-update']).toContain(r.anomalies[0].type);
  });

  it('twitter on a primary and a hot standby: a read-your-writes violation', async () => {
    await loadPredicateParser();
    const out = join(dir, 'twitter-replica.ndjson');
    const summary = await runWorkload({
      workload: 'twitter',
      topology: 'replica',
      out,
      progress: false,
      log: () => undefined,
    });
    // the summary says where the read-only types asked at SER ran (a standby refuses SERIALIZABLE)
    const getTweet = renderRunSummary(summary)
      .split('\n')
      .find((l) => l.trim().startsWith('GetTweet '));
    expect(getTweet).toMatch(/\(SER, ran at SI on a standby\)/);
    const history = await readHistory(out);
    expect(history.meta.topology).toMatchObject({
      kind: 'replica',
      applyDelayMs: 100,
      nodes: [
        { name: 'primary', role: 'primary' },
        { name: 'standby1', role: 'standby' },
      ],
    });
    expect(new Set(history.txns.map((t) => t.node))).toEqual(new Set(['primary', 'standby1']));
    expect(
      history.txns
        .filter((t) => t.node === 'standby1')
        .every((t) => t.iso === 'SI' && t.events.every((e) => e.op === 'select')),
    ).toBe(true);
    const r = checkHistory(history);
    expect(r.verdict).toBe('inconsistent');
    expect(r.anomalies.map((a) => a.type)).toContain('read-your-writes');
  });

  it(
    'twitter on your own primary and standby (--db URL ' + '--replica URL): the same violation, nothing started',
    async () => {
      await loadPredicateParser();
      const own = await startReplicaTopology({ standbys: 1, applyDelayMs: 100 }); // stands for a cluster of the user's
      try {
        const out = join(dir, 'twitter-own.ndjson');
        await expect(
          runWorkload({
            workload: 'twitter',
            topology: 'replica',
            db: own.primary.url,
            replicaUrls: [own.primary.url],
            out,
            progress: false,
            log: () => undefined,
          }),
        ).rejects.toThrow(/is not a hot standby/);
        const lines: string[] = [];
        const s = await runWorkload({
          workload: 'twitter',
          ...topologyOf({ replica: [own.replicas[0].url] }),
          db: own.primary.url,
          txns: 60,
          out,
          progress: false,
          log: (l) => lines.push(l),
        });
        expect(s.database).toMatch(/a primary and 1 hot standby \(yours\)/);
        const history = await readHistory(out);
        expect(new Set(history.txns.map((t) => t.node))).toEqual(new Set(['primary', 'replica1']));
        expect(checkHistory(history).anomalies.map((a) => a.type)).toContain('read-your-writes');
        // the run's database is gone from the user's primary afterwards, the primary still runs
        const left = await withClient(
          own.primary.url,
          async (c) =>
            (await c.query(`SELECT count(*)::int AS n FROM pg_database WHERE datname LIKE 'isocheck_%'`)).rows[0].n,
        );
        expect(left).toBe(0);
      } finally {
        await own.stop();
      }
    },
  );

  it('refuses what it cannot do, in one line', async () => {
    const out = join(dir, 'x.ndjson');
    await expect(
      runWorkload({ workload: 'twitter', topology: 'ring', out, progress: false, log: () => undefined }),
    ).rejects.toThrow(/--topology ring: expected replica, shards, pgpool/);
    await expect(
      runWorkload({ workload: 'twitter', topology: 'shards', standbys: 2, out, progress: false, log: () => undefined }),
    ).rejects.toThrow(/--standbys is for --topology replica or pgpool/);
    await expect(
      runWorkload({
        workload: 'twitter',
        topology: 'replica',
        db: 'postgresql://x@127.0.0.1:1/x',
        out,
        progress: false,
        log: () => undefined,
      }),
    ).rejects.toThrow(/leave out --db/);
    await expect(
      runWorkload({
        workload: 'twitter',
        topology: 'shards',
        replicaUrls: ['postgresql://x@127.0.0.1:1/x'],
        out,
        progress: false,
        log: () => undefined,
      }),
    ).rejects.toThrow(/--replica is for --topology replica/);
    await expect(
      runWorkload({
        workload: 'twitter',
        replicaUrls: ['postgresql://x@127.0.0.1:1/x'],
        ...topologyOf({ replica: ['postgresql://x@127.0.0.1:1/x'] }),
        out,
        progress: false,
        log: () => undefined,
      }),
    ).rejects.toThrow(/--replica needs --db URL/);
  });
});
