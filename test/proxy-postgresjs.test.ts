// isocheck proxy under postgres.js (the `postgres` package): a Node driver with its own implementation of the
// protocol, unlike pg's: statements prepared and described before their Bind, queries pipelined on a pool of
// connections, transactions and savepoints by callback, cursors as portals fetched with a row limit. The same code
// runs on a database directly and through the proxy on a twin: the results are the same, the history is consistent
// and records the reads (the cursor's, fetched to its end, exact).
import { describe, expect, it } from 'vitest';
import postgres from 'postgres';
import { check } from '../src/index.js';
import { twinServer } from './helpers/twin-databases.js';

const server = twinServer();

/** A small application: reads, a transfer at REPEATABLE READ with a savepoint rolled back, pipelined reads, a
 *  multi-row insert, a cursor, an error; what it got, as JSON. */
async function app(url: string): Promise<string> {
  const sql = postgres(url, { max: 4, onnotice: () => undefined });
  try {
    const out: Record<string, unknown> = {};
    out.one = await sql`SELECT id, bal FROM acct WHERE id = ${1}`;
    out.tx = await sql.begin('isolation level repeatable read', async (tx) => {
      const [a] = await tx`SELECT bal FROM acct WHERE id = ${2} FOR UPDATE`;
      await tx`UPDATE acct SET bal = ${a.bal - 5} WHERE id = ${2}`;
      const [b] = await tx`UPDATE acct SET bal = bal + 5 WHERE id = ${3} RETURNING id, bal`;
      await tx
        .savepoint(async (sp) => {
          await sp`UPDATE acct SET bal = 0 WHERE id = 4`;
          throw new Error('undone');
        })
        .catch(() => undefined);
      return [a, b];
    });
    out.many = await Promise.all([1, 2, 3, 4, 5].map((i) => sql`SELECT id, name FROM acct WHERE id = ${i}`));
    out.ins = await sql`INSERT INTO item ${sql([
      { label: 'a', qty: 1 },
      { label: 'b', qty: 2 },
    ])} RETURNING id, label`;
    const batches: number[][] = [];
    for await (const rows of sql`SELECT id FROM acct WHERE bal >= ${100} ORDER BY id`.cursor(3))
      batches.push(rows.map((r) => r.id as number));
    out.cursor = batches;
    out.any = await sql`SELECT id FROM acct WHERE id = ANY(${[1, 2, 3]}) ORDER BY id`;
    out.err = await sql`SELECT 1 / (bal - bal) FROM acct WHERE id = 1`.catch((e: { code?: string }) => e.code);
    out.final = await sql`SELECT id, bal FROM acct ORDER BY id`;
    return JSON.stringify(out);
  } finally {
    await sql.end();
  }
}

describe('isocheck proxy under postgres.js', () => {
  it('gives the driver what a direct connection gives, and records a consistent history', async () => {
    const twins = await server.twins('postgresjs');
    const direct = await app(twins.direct);
    const proxied = await app(twins.proxy.url);
    expect(proxied).toBe(direct);
    expect(JSON.parse(proxied)).toMatchObject({
      cursor: [
        [1, 3, 4],
        [5, 6, 7],
        [8, 9, 10],
      ],
      err: '22012',
    });
    const reads = await twins.reads();
    // the cursor: a portal fetched 3 rows at a time to its end, one exact read
    expect(reads.flat()).toContainEqual(['bal >= $1', false, 9]);
    const own = await check(twins.file);
    expect(own.verdict, own.reason).toBe('consistent');
  }, 60_000);
});
