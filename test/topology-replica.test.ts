// Known answer (issue 19): a primary with a hot standby whose apply delay is 200 ms, one logical client whose
// read-only transactions are routed to the standby: reading right after its own committed write misses it, a
// read-your-writes violation at READ COMMITTED, with the servers in the explanation. The same client on the
// primary alone is consistent.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createDatabase, startReplicaTopology, withDatabase, type Topology } from '../src/db/topology.js';
import { Recorder } from '../src/recorder/index.js';
import { readHistory } from '../src/history/reader.js';
import { checkHistory } from '../src/checker/check.js';
import { renderResult } from '../src/checker/explain/explain.js';
import { loadPredicateParser } from '../src/sql/predicate.js';
import { connections } from './helpers/connections.js';

let topo: Topology;
const { connect, closeAll } = connections();
const dir = mkdtempSync(join(tmpdir(), 'isocheck-topo-replica-'));

beforeAll(async () => {
  await loadPredicateParser();
  topo = await startReplicaTopology({ standbys: 1, applyDelayMs: 200 });
  await createDatabase(topo, 'app');
});

afterAll(async () => {
  await closeAll();
  await topo?.stop();
});

/** One logical client: a write, then a read-only transaction (routed to a replica when there is one), 4 times. */
async function record(name: string, withReplica: boolean): Promise<string> {
  const file = join(dir, `${name}.ndjson`);
  const primaryUrl = withDatabase(topo.primary.url, 'app');
  const setup = await connect(primaryUrl);
  await setup.query(`CREATE TABLE counters_${name} (id int PRIMARY KEY, n int NOT NULL)`);
  await setup.query(`INSERT INTO counters_${name} VALUES (1, 0), (2, 0)`);
  const standby = await connect(withDatabase(topo.replicas[0].url, 'app'));
  const recorder = new Recorder({ file, onWarning: () => undefined });
  await recorder.instrument(setup, [`counters_${name}`], { replicas: [standby] });
  const primary = await connect(primaryUrl);
  const alice = recorder.namedSession('alice').router({
    primary: { client: primary, name: 'primary' },
    replicas: withReplica ? [{ client: standby, name: 'standby1' }] : [],
  });
  for (let i = 1; i <= 4; i++) {
    await alice.query('BEGIN ISOLATION LEVEL READ COMMITTED');
    await alice.query(`UPDATE counters_${name} SET n = n + 1 WHERE id = $1`, [1 + (i % 2)]);
    await alice.query('COMMIT');
    await alice.query('BEGIN ISOLATION LEVEL READ COMMITTED READ ONLY');
    await alice.query(`SELECT n FROM counters_${name} WHERE id = $1`, [1 + (i % 2)]);
    await alice.query('COMMIT');
  }
  recorder.finish();
  return file;
}

describe('a hot standby with apply delay', () => {
  it('breaks read-your-writes at READ COMMITTED for a session whose reads go to the standby', async () => {
    const file = await record('routed', true);
    const history = await readHistory(file);
    expect(new Set(history.txns.map((t) => t.session))).toEqual(new Set([1])); // one session over two connections
    expect(history.txns.map((t) => t.node)).toEqual([
      'primary',
      'standby1',
      'primary',
      'standby1',
      'primary',
      'standby1',
      'primary',
      'standby1',
    ]);
    const r = checkHistory(history);
    expect(r.verdict).toBe('inconsistent');
    expect(r.anomalies[0].type).toBe('read-your-writes');
    expect(r.anomalies[0].levels).toContain('RC');
    const text = renderResult(file, r);
    expect(text).toMatch(/READ-YOUR-WRITES VIOLATION/);
    expect(text).toMatch(/on standby1/);
    expect(text).toMatch(/on primary/);
  });

  it('is consistent when the same session runs on the primary alone', async () => {
    const file = await record('single', false);
    const history = await readHistory(file);
    expect(history.txns.every((t) => t.node === 'primary')).toBe(true);
    expect(checkHistory(history).verdict).toBe('consistent');
  });
});
