// isocheck scenario --topology (issue 19): an isolation-tester spec run on a cluster isocheck builds. A transfer
// between two accounts on different shards, read by a SERIALIZABLE transaction before and after it commits
// (test/scenarios/topology/transfer.ser.spec): through a postgres_fdw coordinator the reader sees half of it,
// FRACTURED READ [violates SER], each transaction on `coordinator (shard1, shard2)`; on a primary and a standby the
// reader (a session that only reads) runs on the standby and the history is consistent, as on one server; with the
// external suite (ISOCHECK_PG_SPECS), PostgreSQL's project-manager.spec on shards is a write skew at SERIALIZABLE;
// bad options are refused before any server starts. Each topology: a few seconds.
import { describe, expect, it } from 'vitest';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { runScenarios } from '../src/scenario/run.js';
import { readOnlySession } from '../src/scenario/cluster.js';
import { parseSpec } from '../src/scenario/spec.js';
import { readHistory } from '../src/history/reader.js';
import { renderPermutation } from '../src/cli/scenario-command.js';
import { externalSpecs, specPath } from './helpers/external-specs.js';

const spec = resolve(import.meta.dirname, 'scenarios', 'topology', 'transfer.ser.spec');
const dir = mkdtempSync(join(tmpdir(), 'isocheck-topo-scenario-'));
const quiet = { log: () => undefined, progress: false };
const suite = externalSpecs();

describe('isocheck scenario --topology', () => {
  it(
    'shards: the reader sees half of a committed transfer, FRACTURED READ [violates SER], on the coordinator ' +
      'and both shards',
    async () => {
      const run = await runScenarios([spec], { topology: 'shards', out: join(dir, 'shards'), ...quiet });
      expect(run.database).toMatch(/coordinator[\s\S]*shard1[\s\S]*shard2/);
      const [r] = run.results;
      expect(r.verdict, renderPermutation(r, true)).toBe('inconsistent');
      expect(r.result!.anomalies[0].type).toBe('fractured-read');
      expect(r.result!.anomalies[0].levels).toContain('SER');
      expect(renderPermutation(r)).toMatch(/FRACTURED READ \[violates SER\]/);
      const history = await readHistory(r.file!);
      expect(history.meta.topology).toMatchObject({
        kind: 'shards',
        nodes: [{ name: 'coordinator' }, { name: 'shard1' }, { name: 'shard2' }],
      });
      // one history session per spec session, numbered in spec order, every transaction through the coordinator
      expect(history.txns.map((t) => [t.session, t.iso, t.node])).toEqual(
        expect.arrayContaining([
          [1, 'SER', 'coordinator (shard1, shard2)'],
          [2, 'SER', 'coordinator (shard1, shard2)'],
        ]),
      );
    },
  );

  it(
    'replica: the reader runs on the standby (REPEATABLE ' + 'READ there), the writer on the primary: consistent',
    async () => {
      const run = await runScenarios([spec], { topology: 'replica', out: join(dir, 'replica'), ...quiet });
      const [r] = run.results;
      expect(r.verdict, renderPermutation(r, true)).toBe('consistent');
      const history = await readHistory(r.file!);
      expect(history.txns.map((t) => [t.session, t.iso, t.node]).sort()).toEqual([
        [1, 'SI', 'standby1'],
        [2, 'SER', 'primary'],
      ]);
    },
  );

  it('one server: the reader keeps one snapshot, consistent', async () => {
    const run = await runScenarios([spec], { out: join(dir, 'one'), ...quiet });
    expect(run.results.map((r) => r.verdict)).toEqual(['consistent']);
  });

  it.skipIf(!suite.dir)(
    `PostgreSQL's project-manager.spec on shards: each shard's SSI sees only its part of the read-write ` +
      `cycle: WRITE SKEW [violates SER] (${suite.dir ?? suite.skipReason})`,
    async () => {
      // on one server SSI aborts one of the two in 18 of its 20 permutations (scenario-run.test.ts: all consistent)
      const run = await runScenarios([specPath(suite, 'project-manager.spec')], {
        topology: 'shards',
        permutation: 5,
        out: join(dir, 'pm'),
        ...quiet,
      });
      const [r] = run.results;
      expect(r.steps).toEqual(['rx1', 'ry2', 'wy1', 'c1', 'wx2', 'c2']);
      expect(r.verdict, renderPermutation(r, true)).toBe('inconsistent');
      expect(renderPermutation(r)).toMatch(/WRITE SKEW \[violates SER\]/);
    },
  );

  it('maps onto a standby only the sessions whose statements only read', () => {
    const s = parseSpec(
      `setup { create table t (id int primary key); }
       session a
       setup { begin isolation level serializable; }
       step a1 { select * from t; }
       step a2 { commit; }
       session b
       step b1 { select * from t for update; }
       session c
       step c1 { update t set id = 2; }`,
      'x.spec',
    );
    expect(s.sessions.map(readOnlySession)).toEqual([true, false, false]);
  });

  it('refuses bad options before any server starts', async () => {
    await expect(runScenarios([spec], { topology: 'ring', ...quiet })).rejects.toThrow(
      /--topology ring: expected replica or shards/,
    );
    await expect(
      runScenarios([spec], { topology: 'shards', db: 'postgresql://x@127.0.0.1:1/x', ...quiet }),
    ).rejects.toThrow(/builds its own servers: leave out --db/);
    await expect(runScenarios([spec], { topology: 'replica', shards: 3, ...quiet })).rejects.toThrow(
      /--shards is for --topology shards/,
    );
    await expect(runScenarios([spec], { shards: 3, ...quiet })).rejects.toThrow(/need --topology/);
  });
});
