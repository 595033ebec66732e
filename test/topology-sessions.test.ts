// Sessions that span connections (issue 19): one named session over two connections is one history session, its
// transactions numbered in order whatever connection served them, each with its node; a transaction stays on its
// connection (moving inside one is refused); the end of a connection the session no longer uses does not end it,
// and interrupt() still writes its transaction in flight. The router sends BEGIN ... READ ONLY and readOnly()
// transactions to a replica (round robin) and the rest to the primary.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { startEmbedded, type EmbeddedServer } from '../src/db/embedded.js';
import { Recorder } from '../src/recorder/index.js';
import { readHistory } from '../src/history/reader.js';

let server: EmbeddedServer;
const clients: pg.Client[] = [];
const dir = mkdtempSync(join(tmpdir(), 'isocheck-topo-sessions-'));

async function connect(): Promise<pg.Client> {
  const c = new pg.Client({ connectionString: server.url });
  c.on('error', () => undefined);
  await c.connect();
  clients.push(c);
  return c;
}

beforeAll(async () => {
  server = await startEmbedded();
  const c = await connect();
  await c.query('CREATE TABLE kv (k int PRIMARY KEY, v int NOT NULL); INSERT INTO kv VALUES (1, 0), (2, 0)');
});

afterAll(async () => {
  await Promise.all(clients.map((c) => c.end().catch(() => undefined)));
  await server?.stop();
});

describe('named sessions', () => {
  it('are one session over several connections, each transaction with its node', async () => {
    const file = join(dir, 'named.ndjson');
    const recorder = new Recorder({ file, onWarning: () => undefined });
    await recorder.instrument(clients[0], ['kv']);
    const [c1, c2] = [await connect(), await connect()];
    const other = recorder.client(await connect()); // an ordinary session first: session 1
    await other.query('SELECT v FROM kv WHERE k = 2');
    const alice = recorder.namedSession('alice');
    expect(recorder.namedSession('alice')).toBe(alice);
    const a1 = alice.client(c1, 'n1');
    const a2 = alice.client(c2, 'n2');
    expect(alice.number).toBe(2);
    await a1.query('BEGIN');
    await a1.query('UPDATE kv SET v = v + 1 WHERE k = 1');
    await expect(a2.query('SELECT v FROM kv WHERE k = 1')).rejects.toThrow(/transaction open on n1/);
    await a1.query('COMMIT');
    await a2.query('SELECT v FROM kv WHERE k = 1'); // autocommit, on n2
    await c1.end(); // no longer used by the session: it lives on
    await a2.query('BEGIN');
    await a2.query('UPDATE kv SET v = v + 1 WHERE k = 2');
    const r = recorder.interrupt('stopped by the test');
    expect(r).toEqual({ unknown: 0, aborted: 1 });
    const h = await readHistory(file);
    const mine = h.txns.filter((t) => t.session === 2).map((t) => ({ id: t.id, node: t.node, status: t.status }));
    expect(mine).toEqual([
      { id: 's2.1', node: 'n1', status: 'committed' },
      { id: 's2.2', node: 'n2', status: 'committed' },
      { id: 's2.3', node: 'n2', status: 'aborted' },
    ]);
    expect(h.txns.find((t) => t.session === 1)?.node).toBeUndefined();
  });

  it('route read-only transactions to the replicas, round robin, and the rest to the primary', async () => {
    const file = join(dir, 'router.ndjson');
    const recorder = new Recorder({ file, onWarning: () => undefined });
    await recorder.instrument(clients[0], ['kv']);
    const [p, r1, r2] = [await connect(), await connect(), await connect()];
    const bob = recorder.namedSession('bob').router({
      primary: { client: p, name: 'primary' },
      replicas: [
        { client: r1, name: 'r1' },
        { client: r2, name: 'r2' },
      ],
      hotStandbyLevel: 'REPEATABLE READ',
    });
    await bob.query('BEGIN READ ONLY');
    await bob.query('SELECT v FROM kv WHERE k = 1');
    await bob.query('COMMIT');
    await bob.query('UPDATE kv SET v = v + 1 WHERE k = 1'); // autocommit write: primary
    await bob.readOnly().query('BEGIN ISOLATION LEVEL SERIALIZABLE'); // sent as REPEATABLE READ
    await bob.query('SELECT v FROM kv WHERE k = 2');
    await bob.query('COMMIT');
    await bob.query('START TRANSACTION ISOLATION LEVEL READ COMMITTED, READ ONLY');
    await bob.query('SELECT v FROM kv WHERE k = 2');
    await bob.query('ROLLBACK');
    await bob.query('SELECT v FROM kv WHERE k = 1'); // autocommit read, no hint: primary
    recorder.finish();
    const h = await readHistory(file);
    expect(h.txns.map((t) => [t.node, t.iso, t.status])).toEqual([
      ['r1', 'RC', 'committed'],
      ['primary', 'RC', 'committed'],
      ['r2', 'SI', 'committed'],
      ['r1', 'RC', 'aborted'],
      ['primary', 'RC', 'committed'],
    ]);
    expect(new Set(h.txns.map((t) => t.session))).toEqual(new Set([1]));
  });
});
