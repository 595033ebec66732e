import { it } from 'vitest';
import { analyze, loadRewriter, tableLookup } from '../src/recorder/rewrite.js';
import type { TableInfo } from '../src/recorder/catalog.js';
const t: TableInfo = { name: 'accounts', schema: 'public', relname: 'accounts', oid: 1, key: ['id'], keySource: 'primary key', columns: { id: 'int4', name: 'text', bal: 'numeric' }, columnOrder: ['id', 'name', 'bal'], unsafeColumns: [], hasPrev: true };
it('scratch', async () => {
  await loadRewriter();
  const lk = tableLookup([t]);
  for (const [q, n] of [
    ['SELECT * FROM accounts WHERE id = $1', 1],
    ['SELECT a.name FROM accounts a WHERE a.bal > 0 ORDER BY name LIMIT 3', 0],
    ['SELECT count(*), sum(bal) FROM accounts WHERE bal > $1', 1],
    ['SELECT DISTINCT name FROM accounts', 0],
    ['INSERT INTO accounts VALUES (1, $1, 0), (2, $2, 0)', 2],
    ['INSERT INTO accounts (id, name) VALUES ($1, $2) ON CONFLICT (id) DO UPDATE SET name = excluded.name RETURNING *', 2],
    ['INSERT INTO accounts DEFAULT VALUES', 0],
    ['UPDATE accounts SET bal = bal + $2 WHERE id = $1', 2],
    ['DELETE FROM accounts WHERE id = $1 RETURNING name', 1],
    ['BEGIN ISOLATION LEVEL SERIALIZABLE', 0],
  ] as [string, number][]) {
    for (const oldReturning of [true, false]) {
      const p = analyze(q, n, lk, { oldReturning });
      console.log(q, '\n  ', oldReturning, JSON.stringify(p, (k, v) => (k === 'table' ? undefined : v)));
    }
  }
  for (const q of ['SELECT * FROM accounts a JOIN x ON true', 'UPDATE accounts SET bal = (SELECT max(v) FROM u)', 'SELECT * FROM accounts ORDER BY id FETCH FIRST 2 ROWS WITH TIES', 'WITH x AS (SELECT 1) SELECT * FROM accounts', 'UPDATE accounts SET id = 2', 'SELECT row_to_json(accounts) FROM accounts']) {
    try { analyze(q, 0, lk, { oldReturning: true }); console.log('NO ERROR', q); } catch (e) { console.log((e as Error).message); }
  }
});
