// Statement rewriting (src/recorder/rewrite.ts): for each shape, the SQL that runs, what the plan records, and
// the statements that are refused with a message saying how to split them.
import { beforeAll, describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import {
  analyze,
  isLocationKey,
  loadRewriter,
  tableLookup,
  type Plan,
  type RecordedPlan,
} from '../src/recorder/rewrite.js';
import type { SelectPlan } from '../src/recorder/plan.js';
import { copyOutText } from '../src/recorder/rewrite-copy.js';
import type { TableInfo } from '../src/recorder/catalog.js';
import { InputError } from '../src/history/input-errors.js';
import {
  dAccounts,
  fromDrizzle,
  fromKnex,
  fromKysely,
  fromTypeorm,
  knex,
  kysely,
  drizzleDb,
  ormReads,
  ormWrites,
  sequelizeOffline,
  typeormOffline,
  type OrmStatement,
} from './helpers/orm-sql.js';
import { asc, inArray } from 'drizzle-orm';
import { Op } from 'sequelize';

const accounts: TableInfo = {
  name: 'accounts',
  schema: 'public',
  relname: 'accounts',
  oid: 1,
  key: ['id'],
  keySource: 'primary key',
  columns: { id: 'int4', name: 'text', bal: 'numeric' },
  columnOrder: ['id', 'name', 'bal'],
  unsafeColumns: [],
  hasPrev: false,
};
const orders: TableInfo = {
  name: 'orders',
  schema: 'public',
  relname: 'orders',
  oid: 2,
  key: ['id'],
  keySource: 'primary key',
  columns: { id: 'int4', account_id: 'int4', status: 'text' },
  columnOrder: ['id', 'account_id', 'status'],
  unsafeColumns: [],
  hasPrev: false,
};
const lookup = tableLookup([accounts, orders]);
const PG18 = { oldReturning: true };
const PG15 = { oldReturning: false };

const plan = (sql: string, n = 0, options = PG18): Plan => analyze(sql, n, lookup, options);
const rec = (sql: string, n = 0, options = PG18): RecordedPlan => {
  const p = plan(sql, n, options);
  if (p.kind !== 'select' && p.kind !== 'insert' && p.kind !== 'update' && p.kind !== 'delete')
    throw new Error(`not recorded: ${p.kind}`);
  return p;
};
const read = (sql: string, n = 0, i = 0) => rec(sql, n).reads[i];
const refused = (sql: string, n = 0): string => {
  try {
    plan(sql, n);
  } catch (e) {
    expect(e).toBeInstanceOf(InputError);
    return (e as Error).message;
  }
  throw new Error(`not refused: ${sql}`);
};

const COLS =
  'accounts.id AS __isocheck_0, accounts.name AS __isocheck_1, accounts.bal AS __isocheck_2, ' +
  'accounts._isocheck_wid AS __isocheck_3';
const JSON_ROWS =
  'json_agg(ARRAY[accounts.id::text, accounts.name::text, accounts.bal::text, accounts._isocheck_wid::text]) ' +
  'AS __isocheck_0';

beforeAll(async () => {
  await loadRewriter();
});

describe('SELECT', () => {
  it('adds key, columns and wid after the application columns, expanding *', () => {
    expect(rec('SELECT * FROM accounts WHERE id = $1', 1)).toMatchObject({
      kind: 'select',
      reads: [{ form: 'row', at: 0, where: 'id = $1', partialReason: undefined, needsRow: false }],
      added: 4,
      appRows: true,
      sql: `SELECT id, name, bal, ${COLS} FROM accounts WHERE id = $1`,
    });
  });

  it('keeps aliases, ORDER BY, FOR UPDATE; records the WHERE without qualifiers', () => {
    const p = rec('SELECT a.name FROM public.accounts a WHERE a.bal > 0 AND a.id = $1 ORDER BY name FOR UPDATE', 1);
    expect(p.sql).toBe(
      'SELECT a.name, a.id AS __isocheck_0, a.name AS __isocheck_1, a.bal AS __isocheck_2, a._isocheck_wid AS ' +
        '__isocheck_3 FROM public.accounts AS a WHERE a.bal > 0 AND a.id = $1 ORDER BY name FOR UPDATE',
    );
    expect(p.reads).toMatchObject([{ where: 'bal > 0 AND id = $1', partialReason: undefined }]);
  });

  it('marks OFFSET and a LIMIT of an expression partial; a LIMIT of a number or parameter, per execution', () => {
    // the root's LIMIT n leaves the read exact when fewer than n rows come back (events.ts, limitReached)
    expect(read('SELECT id FROM accounts ORDER BY id LIMIT 3')).toMatchObject({
      partialReason: undefined,
      limit: { count: 3 },
    });
    expect(read('SELECT id FROM accounts WHERE id = $1 LIMIT $2', 2)).toMatchObject({
      partialReason: undefined,
      limit: { param: 2 },
    });
    expect(read('SELECT id FROM accounts ORDER BY id FETCH FIRST 2 ROWS ONLY')).toMatchObject({ limit: { count: 2 } });
    expect(read('SELECT id FROM accounts ORDER BY id OFFSET 1')).toMatchObject({ partialReason: 'LIMIT/OFFSET/FETCH' });
    expect(read('SELECT id FROM accounts ORDER BY id LIMIT 2 OFFSET 1')).toMatchObject({
      partialReason: 'LIMIT/OFFSET/FETCH',
    });
    expect(read('SELECT id FROM accounts ORDER BY id LIMIT 1 + 1')).toMatchObject({
      partialReason: 'LIMIT/OFFSET/FETCH',
    });
    expect(read('SELECT id FROM accounts LIMIT ALL')).toMatchObject({ partialReason: undefined });
    expect(read('SELECT id FROM accounts LIMIT ALL')).not.toHaveProperty('limit');
    // a LIMIT in a subquery is that block's: partial
    expect(rec('SELECT 1 FROM generate_series(1, 2) g WHERE g IN (SELECT id FROM accounts LIMIT 1)')).toMatchObject({
      reads: [{ partialReason: 'LIMIT/OFFSET/FETCH' }],
    });
  });

  it('marks SKIP LOCKED partial: rows other transactions locked are not returned', () => {
    const skip = 'SKIP LOCKED (rows other transactions locked are not returned)';
    expect(read('SELECT id FROM accounts WHERE bal > 0 FOR UPDATE SKIP LOCKED')).toMatchObject({
      partialReason: skip,
    });
    expect(read('SELECT id FROM accounts WHERE bal > 0 FOR UPDATE NOWAIT')).toMatchObject({ partialReason: undefined });
  });

  it('runs aggregates with json_agg of the rows read, in the same statement', () => {
    expect(rec('SELECT count(*), sum(bal) FROM accounts WHERE bal > $1', 1)).toMatchObject({
      reads: [{ form: 'json', where: 'bal > $1' }],
      added: 1,
      sql: `SELECT count(*), sum(bal), ${JSON_ROWS} FROM accounts WHERE bal > $1`,
    });
    expect(rec('SELECT name, max(bal) FROM accounts GROUP BY name ORDER BY 2')).toMatchObject({
      reads: [{ form: 'json' }],
      sql: `SELECT name, max(bal), ${JSON_ROWS} FROM accounts GROUP BY name ORDER BY 2`,
    });
    expect(read('SELECT name FROM accounts GROUP BY name HAVING count(*) > 1')).toMatchObject({
      form: 'json',
      partialReason: 'HAVING',
    });
  });

  it('turns DISTINCT into GROUP BY so that every row read is recorded', () => {
    expect(rec('SELECT DISTINCT name FROM accounts WHERE bal > 0')).toMatchObject({
      reads: [{ form: 'json', where: 'bal > 0' }],
      sql: `SELECT name, ${JSON_ROWS} FROM accounts WHERE bal > 0 GROUP BY 1`,
    });
  });

  it('keeps window functions as a row query', () => {
    expect(read('SELECT id, sum(bal) OVER () FROM accounts')).toMatchObject({ form: 'row', partialReason: undefined });
  });

  it('marks set-returning functions in the select list partial', () => {
    expect(read('SELECT generate_series(1, id) FROM accounts')).toMatchObject({
      partialReason: 'a set-returning function in the select list',
    });
  });

  it('records a SELECT with no select list (SELECT FROM t, in a UNION, in INSERT ... SELECT): no TypeError', () => {
    expect(rec('SELECT FROM accounts WHERE id = $1', 1)).toMatchObject({
      kind: 'select',
      added: 4,
      sql: `SELECT ${COLS} FROM accounts WHERE id = $1`,
    });
    expect(rec('SELECT FROM accounts UNION ALL SELECT FROM accounts').kind).toBe('select');
    expect(rec('INSERT INTO accounts SELECT FROM accounts').kind).toBe('insert');
  });

  it('passes statements on other tables through untouched', () => {
    expect(plan('SELECT * FROM other WHERE x = 1')).toEqual({ kind: 'passthrough' });
    expect(plan('SELECT 1')).toEqual({ kind: 'passthrough' });
    expect(plan('SELEC oops')).toEqual({ kind: 'passthrough' }); // the server reports the syntax error
  });

  it('still refuses whole-row references, hidden columns, SELECT INTO, data-modifying and nested WITH', () => {
    expect(refused('SELECT row_to_json(accounts) FROM accounts')).toMatch(/whole row/);
    expect(refused('SELECT a FROM accounts a JOIN other o ON o.id = a.id')).toMatch(/whole row "a"/);
    expect(refused('SELECT _isocheck_wid FROM accounts')).toMatch(/hidden column/);
    expect(refused('SELECT o._isocheck_wid FROM other x JOIN accounts o ON true')).toMatch(/hidden column/);
    expect(refused('SELECT * INTO copy FROM accounts')).toMatch(/SELECT INTO/);
    expect(refused('WITH d AS (DELETE FROM accounts RETURNING id) SELECT * FROM d')).toMatch(/data-modifying CTE/);
    expect(refused('SELECT * FROM other WHERE x IN (WITH c AS (SELECT id FROM accounts) SELECT id FROM c)')).toMatch(
      /WITH inside a subquery/,
    );
    expect(refused('SELECT * FROM accounts a JOIN other o USING (id)')).toMatch(/\* over a JOIN \.\.\. USING/);
    expect(refused('SELECT x.a FROM accounts AS x(a, b, c)')).toMatch(/renames the columns/);
    expect(refused('SELECT DISTINCT ON (1) id FROM accounts')).toMatch(/DISTINCT ON names an output column/);
  });

  it('records joins: every table in FROM, exact only on the preserved side with a WHERE about it alone', () => {
    const inner = rec('SELECT a.name, o.v FROM accounts a JOIN other o ON o.id = a.id WHERE a.id = $1', 1);
    expect(inner.sql).toBe(
      'SELECT a.name, o.v, a.id AS __isocheck_0, a.name AS __isocheck_1, a.bal AS __isocheck_2, ' +
        'a._isocheck_wid AS __isocheck_3 FROM accounts AS a JOIN other AS o ON o.id = a.id WHERE a.id = $1',
    );
    expect(inner.reads).toMatchObject([
      { form: 'row', where: 'id = $1', partialReason: 'a join (rows without a match are not returned)' },
    ]);
    const left = rec('SELECT * FROM accounts a LEFT JOIN other o ON o.id = a.id WHERE a.bal > $1', 1);
    expect(left.sql).toMatch(/^SELECT a\.id, a\.name, a\.bal, o\.\*, a\.id AS __isocheck_0/);
    expect(left.reads).toMatchObject([{ where: 'bal > $1', partialReason: undefined }]);
    // a condition on the other table: rows of accounts may be missing
    expect(read('SELECT a.id FROM accounts a LEFT JOIN other o ON o.id = a.id WHERE o.v IS NULL')).toMatchObject({
      where: undefined,
      partialReason: expect.stringMatching(/WHERE about more/),
    });
    expect(read('SELECT a.id FROM other o RIGHT JOIN accounts a ON o.id = a.id')).toMatchObject({
      partialReason: undefined,
    });
    expect(read('SELECT a.id FROM accounts a, other o')).toMatchObject({
      partialReason: expect.stringMatching(/a join/),
    });
    expect(read('SELECT a.id FROM accounts a LEFT JOIN other o ON o.id = a.id FOR UPDATE OF a')).toMatchObject({
      partialReason: expect.stringMatching(/FOR UPDATE\/SHARE in a join/),
    });
    // self-join: two reads of one table
    expect(
      rec('SELECT x.id FROM accounts x JOIN accounts y ON y.bal = x.bal').reads.map((r) => [r.table.name, r.at]),
    ).toEqual([
      ['accounts', 0],
      ['accounts', 4],
    ]);
  });

  it('records aggregates over joins and DISTINCT ON with every row read', () => {
    const agg = rec('SELECT a.name, count(o.id) FROM accounts a LEFT JOIN other o ON o.id = a.id GROUP BY a.name');
    expect(agg.sql).toBe(
      `SELECT a.name, count(o.id), ${JSON_ROWS.replaceAll('accounts.', 'a.')} FROM accounts AS a LEFT JOIN ` +
        `other AS o ON o.id = a.id GROUP BY a.name`,
    );
    expect(agg.reads).toMatchObject([{ form: 'json', partialReason: undefined }]);
    const on = rec('SELECT DISTINCT ON (name) id, name FROM accounts ORDER BY name, id DESC');
    expect(on.sql).toBe(
      `SELECT DISTINCT ON (name) id, name, ${JSON_ROWS.replace(' AS __isocheck_0', '')} OVER (PARTITION BY ` +
        `name) AS __isocheck_0 FROM accounts ORDER BY name, id DESC`,
    );
    expect(on.reads).toMatchObject([{ form: 'json', partialReason: undefined, needsRow: false }]);
  });

  it('records subqueries by evaluating them again in the same statement (exact when closed)', () => {
    const sub = rec('SELECT v FROM other WHERE id IN (SELECT id FROM accounts WHERE bal > $1)', 1);
    expect(sub.sql).toBe(
      `SELECT v, (SELECT ${JSON_ROWS.replace(' AS __isocheck_0', '')} FROM accounts WHERE bal > $1) AS ` +
        `__isocheck_0 FROM other WHERE id IN (SELECT id FROM accounts WHERE bal > $1)`,
    );
    expect(sub.reads).toMatchObject([{ form: 'json', where: 'bal > $1', partialReason: undefined, needsRow: true }]);
    // correlated: evaluated per result row, partial
    const corr = rec('SELECT o.v FROM other o WHERE EXISTS (SELECT 1 FROM accounts a WHERE a.id = o.id AND a.bal > 0)');
    expect(corr.sql).toContain(
      '(SELECT json_agg(ARRAY[a.id::text, a.name::text, a.bal::text, a._isocheck_wid::text]) FROM accounts AS ' +
        'a WHERE a.id = o.id AND a.bal > 0) AS __isocheck_0',
    );
    expect(corr.reads).toMatchObject([
      { where: 'bal > 0', partialReason: expect.stringMatching(/correlated subquery/) },
    ]);
    // correlated under aggregates: json_agg of the per-row subquery
    expect(rec('SELECT count(*) FROM other o WHERE EXISTS (SELECT 1 FROM accounts a WHERE a.id = o.id)').sql).toContain(
      'json_agg((SELECT json_agg(ARRAY[a.id::text',
    );
    // a subquery in FROM with LIMIT: the same ORDER BY and LIMIT, partial
    const lim = rec('SELECT s.id FROM (SELECT id FROM accounts ORDER BY id LIMIT 2) s');
    expect(lim.sql).toContain(
      '(SELECT json_agg(__isocheck_s.__isocheck_t) FROM ( SELECT id, ARRAY[accounts.id::text, ' +
        'accounts.name::text, accounts.bal::text, accounts._isocheck_wid::text] AS __isocheck_t FROM accounts ' +
        'ORDER BY id LIMIT 2 ) AS __isocheck_s)',
    );
    expect(lim.reads).toMatchObject([{ partialReason: 'LIMIT/OFFSET/FETCH' }]);
    // WITH and UNION
    expect(read('WITH c AS (SELECT id FROM accounts WHERE bal > 0) SELECT * FROM c')).toMatchObject({
      where: 'bal > 0',
      partialReason: undefined,
      needsRow: true,
    });
    const union = rec('SELECT id FROM accounts WHERE bal > 0 UNION SELECT id FROM other');
    expect(union.sql).toBe(
      `SELECT id, CAST((SELECT ${JSON_ROWS.replace(' AS __isocheck_0', '')} FROM accounts WHERE bal > 0) AS ` +
        `text) AS __isocheck_0 FROM accounts WHERE bal > 0 UNION SELECT id, ` +
        `CAST((SELECT ${JSON_ROWS.replace(' AS __isocheck_0', '')} FROM accounts WHERE bal > 0) AS text) AS ` +
        `__isocheck_0 FROM other`,
    );
    expect(union.reads).toMatchObject([{ where: 'bal > 0', partialReason: undefined }]);
    // a CTE named like a recorded table is not that table
    expect(plan('WITH accounts AS (SELECT 1 AS id) SELECT id FROM accounts')).toEqual({ kind: 'passthrough' });
  });

  it('refuses what the deparser cannot reproduce exactly', () => {
    expect(refused('SELECT * FROM accounts ORDER BY id FETCH FIRST 2 ROWS WITH TIES')).toMatch(
      /deparser cannot reproduce/,
    );
  });
});

describe('INSERT', () => {
  it('adds the wid as a parameter to every row, fills the column list, returns the rows', () => {
    expect(rec('INSERT INTO accounts VALUES (1, $1, 0), (2, $2, DEFAULT)', 2)).toMatchObject({
      kind: 'insert',
      widParam: 3,
      appRows: false,
      added: 4,
      sql:
        'INSERT INTO accounts (id, name, bal, _isocheck_wid) VALUES (1, $1, 0, CAST($3 AS text)), (2, $2, ' +
        'DEFAULT, CAST($3 AS text)) RETURNING id AS __isocheck_0, name AS __isocheck_1, bal AS __isocheck_2, ' +
        '_isocheck_wid AS __isocheck_3',
    });
  });

  it('handles DEFAULT VALUES and INSERT ... SELECT without FROM', () => {
    expect(rec('INSERT INTO accounts DEFAULT VALUES').sql).toBe(
      'INSERT INTO accounts (_isocheck_wid) VALUES (CAST($1 AS text)) RETURNING id AS __isocheck_0, name AS ' +
        '__isocheck_1, bal AS __isocheck_2, _isocheck_wid AS __isocheck_3',
    );
    expect(rec('INSERT INTO accounts (id, name) SELECT $1, $2', 2).sql).toBe(
      'INSERT INTO accounts (id, name, _isocheck_wid) SELECT $1, $2, CAST($3 AS text) RETURNING id AS ' +
        '__isocheck_0, name AS __isocheck_1, bal AS __isocheck_2, _isocheck_wid AS __isocheck_3',
    );
  });

  it('keeps the application RETURNING first (stars expanded)', () => {
    expect(rec('INSERT INTO accounts (id, name) VALUES (1, $1) RETURNING *', 1)).toMatchObject({
      appRows: true,
      sql:
        'INSERT INTO accounts (id, name, _isocheck_wid) VALUES (1, $1, CAST($2 AS text)) RETURNING id, name, ' +
        'bal, id AS __isocheck_0, name AS __isocheck_1, bal AS __isocheck_2, _isocheck_wid AS __isocheck_3',
    });
  });

  it('gives ON CONFLICT DO UPDATE its own wid and reads the previous one (old, or _isocheck_prev before 18)', () => {
    const sql =
      'INSERT INTO accounts AS a (id, name) VALUES ($1, $2) ON CONFLICT (id) DO UPDATE SET name = excluded.name';
    expect(rec(sql, 2)).toMatchObject({
      widParam: 3,
      upsertWidParam: 4,
      added: 5,
      sql:
        'INSERT INTO accounts AS a (id, name, _isocheck_wid) VALUES ($1, $2, CAST($3 AS text)) ON CONFLICT (id) ' +
        'DO UPDATE SET name = excluded.name, _isocheck_wid = CAST($4 AS text) RETURNING id AS __isocheck_0, name ' +
        'AS __isocheck_1, bal AS __isocheck_2, _isocheck_wid AS __isocheck_3, old._isocheck_wid AS __isocheck_4',
    });
    expect(rec(sql, 2, PG15).sql).toBe(
      'INSERT INTO accounts AS a (id, name, _isocheck_wid) VALUES ($1, $2, CAST($3 AS text)) ON CONFLICT (id) ' +
        'DO UPDATE SET name = excluded.name, _isocheck_wid = CAST($4 AS text), _isocheck_prev = a._isocheck_wid ' +
        'RETURNING id AS __isocheck_0, name AS __isocheck_1, bal AS __isocheck_2, _isocheck_wid AS __isocheck_3, ' +
        '_isocheck_prev AS __isocheck_4',
    );
    expect(rec('INSERT INTO accounts VALUES (1, $1, 0) ON CONFLICT DO NOTHING', 1)).toMatchObject({
      upsertWidParam: undefined,
    });
  });

  it(
    'records INSERT ... SELECT and subqueries in VALUES; refuses key changes in DO UPDATE, copies into other ' +
      'tables',
    () => {
      const sel = rec('INSERT INTO accounts SELECT id, name, bal FROM accounts WHERE bal > $1 ORDER BY id', 1);
      expect(sel.sql).toBe(
        `INSERT INTO accounts (id, name, bal, _isocheck_wid) SELECT id, name, bal, CAST($2 AS text) FROM ` +
          `accounts WHERE bal > $1 ORDER BY id RETURNING id AS __isocheck_0, name AS __isocheck_1, bal AS ` +
          `__isocheck_2, _isocheck_wid AS __isocheck_3, (SELECT ${JSON_ROWS.replace(' AS __isocheck_0', '')} ` +
          `FROM accounts WHERE bal > $1) AS __isocheck_4`,
      );
      expect(sel.reads).toMatchObject([{ at: 4, where: 'bal > $1', partialReason: undefined, needsRow: true }]);
      expect(rec('INSERT INTO accounts VALUES ((SELECT max(id) + 1 FROM accounts), $1, 0)', 1).reads).toMatchObject([
        { at: 4, where: undefined, partialReason: undefined },
      ]);
      expect(refused('INSERT INTO accounts SELECT 1, $1, 0 UNION SELECT 2, $1, 0', 1)).toMatch(
        /UNION\/INTERSECT\/EXCEPT/,
      );
      expect(refused('INSERT INTO accounts VALUES (1, $1, 0) ON CONFLICT (id) DO UPDATE SET id = 5', 1)).toMatch(
        /key column "id"/,
      );
      expect(refused('INSERT INTO other SELECT * FROM accounts')).toMatch(
        /reads a recorded table to write a table that is not recorded/,
      );
      expect(refused('INSERT INTO accounts (id, _isocheck_wid) VALUES (1, $1)', 1)).toMatch(/hidden column/);
    },
  );
});

describe('UPDATE and DELETE', () => {
  it('sets the wid and returns the new row and the previous wid', () => {
    expect(rec('UPDATE accounts SET bal = bal + $2 WHERE id = $1', 2)).toMatchObject({
      kind: 'update',
      widParam: 3,
      where: 'id = $1',
      appRows: false,
      sql:
        'UPDATE accounts SET bal = bal + $2, _isocheck_wid = CAST($3 AS text) WHERE id = $1 RETURNING id AS ' +
        '__isocheck_0, name AS __isocheck_1, bal AS __isocheck_2, old._isocheck_wid AS __isocheck_3',
    });
    expect(rec('UPDATE accounts AS x SET bal = 0 WHERE x.id = $1', 1, PG15)).toMatchObject({
      where: 'id = $1',
      sql:
        'UPDATE accounts AS x SET bal = 0, _isocheck_wid = CAST($2 AS text), _isocheck_prev = x._isocheck_wid ' +
        'WHERE x.id = $1 RETURNING id AS __isocheck_0, name AS __isocheck_1, bal AS __isocheck_2, _isocheck_prev ' +
        'AS __isocheck_3',
    });
  });

  it('uses the application RETURNING WITH (OLD AS o) alias', () => {
    expect(rec('UPDATE accounts SET bal = 1 RETURNING WITH (OLD AS o) o.bal').sql).toBe(
      'UPDATE accounts SET bal = 1, _isocheck_wid = CAST($1 AS text) RETURNING WITH (OLD AS o) o.bal, id AS ' +
        '__isocheck_0, name AS __isocheck_1, bal AS __isocheck_2, o._isocheck_wid AS __isocheck_3',
    );
  });

  it('deletes return the key and the deleted version wid', () => {
    expect(rec('DELETE FROM accounts WHERE id = $1 RETURNING name', 1)).toMatchObject({
      kind: 'delete',
      where: 'id = $1',
      appRows: true,
      added: 2,
      sql: 'DELETE FROM accounts WHERE id = $1 RETURNING name, id AS __isocheck_0, _isocheck_wid AS __isocheck_1',
    });
  });

  it(
    'records UPDATE ... FROM, DELETE ... USING and subqueries; refuses WHERE CURRENT OF, key changes, subqueries on ' +
      'assigned columns',
    () => {
      const from = rec('UPDATE accounts SET bal = o.v FROM other o WHERE o.id = accounts.id AND accounts.bal > 0');
      expect(from).toMatchObject({
        where: 'bal > 0',
        partialReason: expect.stringMatching(/UPDATE \.\.\. FROM/),
        reads: [],
      });
      expect(from.sql).toBe(
        'UPDATE accounts SET bal = o.v, _isocheck_wid = CAST($1 AS text) FROM other AS o WHERE o.id = ' +
          'accounts.id AND accounts.bal > 0 RETURNING accounts.id AS __isocheck_0, accounts.name AS __isocheck_1, ' +
          'accounts.bal AS __isocheck_2, old._isocheck_wid AS __isocheck_3',
      );
      const using = rec('DELETE FROM orders USING accounts a WHERE a.id = orders.account_id AND a.bal > $1', 1);
      expect(using.sql).toBe(
        'DELETE FROM orders USING accounts AS a WHERE a.id = orders.account_id AND a.bal > $1 RETURNING ' +
          'orders.id AS __isocheck_0, orders._isocheck_wid AS __isocheck_1, a.id AS __isocheck_2, a.name AS ' +
          '__isocheck_3, a.bal AS __isocheck_4, a._isocheck_wid AS __isocheck_5',
      );
      expect(using.reads).toMatchObject([
        {
          table: { name: 'accounts' },
          form: 'row',
          at: 2,
          where: 'bal > $1',
          partialReason: expect.stringMatching(/DELETE \.\.\. USING/),
        },
      ]);
      const set = rec(
        'UPDATE accounts SET bal = (SELECT max(v) FROM other o WHERE o.id = accounts.id) WHERE id = $1',
        1,
      );
      expect(set).toMatchObject({ where: 'id = $1', partialReason: undefined, reads: [] }); // other is not recorded
      const self = rec('UPDATE accounts SET bal = 0 WHERE id IN (SELECT id FROM accounts WHERE bal < $1)', 1);
      expect(self).toMatchObject({
        where: undefined,
        partialReason: expect.stringMatching(/WHERE about more/),
        reads: [{ where: 'bal < $1', partialReason: undefined, needsRow: true }],
      });
      expect(refused('UPDATE accounts SET bal = (SELECT count(*) FROM other o WHERE o.v = accounts.bal)')).toMatch(
        /refers to column "bal", which the UPDATE assigns/,
      );
      expect(refused('UPDATE accounts SET bal = 0 WHERE CURRENT OF c')).toMatch(/CURRENT OF/);
      expect(refused('UPDATE accounts SET id = id + 1')).toMatch(/key column "id".*Delete the row and insert it/);
      expect(refused('UPDATE other SET v = 1 WHERE id IN (SELECT id FROM accounts)')).toMatch(
        /reads a recorded table to update a table that is not recorded/,
      );
    },
  );
});

describe('other statements', () => {
  it('classifies transaction control', () => {
    expect(plan('BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY')).toEqual({
      kind: 'control',
      control: {
        kind: 'begin',
        iso: 'repeatable read',
        modes: 'ISOLATION LEVEL REPEATABLE READ, READ ONLY',
        start: false,
      },
    });
    expect(plan('START TRANSACTION')).toEqual({
      kind: 'control',
      control: { kind: 'begin', iso: undefined, modes: '', start: true },
    });
    // the modes as SET TRANSACTION takes them, whatever comments or commas the BEGIN had
    expect(plan('BEGIN /* a */ WORK READ ONLY NOT DEFERRABLE, ISOLATION LEVEL SERIALIZABLE -- b')).toEqual({
      kind: 'control',
      control: {
        kind: 'begin',
        iso: 'serializable',
        modes: 'READ ONLY, NOT DEFERRABLE, ISOLATION LEVEL SERIALIZABLE',
        start: false,
      },
    });
    expect(plan('SET TRANSACTION ISOLATION LEVEL SERIALIZABLE')).toEqual({
      kind: 'control',
      control: { kind: 'set-transaction', iso: 'serializable' },
    });
    expect(plan('COMMIT AND CHAIN')).toEqual({ kind: 'control', control: { kind: 'commit', chain: true } });
    expect(plan('END')).toEqual({ kind: 'control', control: { kind: 'commit', chain: false } });
    expect(plan('ABORT')).toEqual({ kind: 'control', control: { kind: 'rollback', chain: false } });
    expect(plan('ROLLBACK TO SAVEPOINT a')).toEqual({ kind: 'control', control: { kind: 'rollback-to', name: 'a' } });
    expect(plan('SET default_transaction_isolation = serializable')).toEqual({ kind: 'settings' });
    expect(plan('RESET ALL')).toEqual({ kind: 'settings' });
    expect(refused("PREPARE TRANSACTION 'x'")).toMatch(/two-phase commit/);
  });

  it('refuses statements that change recorded tables behind the recorder', () => {
    expect(refused('TRUNCATE accounts')).toMatch(/Truncate statements on recorded tables/);
    expect(refused('COPY accounts FROM STDIN')).toMatch(/COPY statements on recorded tables are not recorded/);
    expect(refused("COPY accounts TO '/tmp/x'")).toMatch(/COPY statements on recorded tables/);
    expect(refused("COPY (SELECT id FROM accounts) TO '/tmp/x'")).toMatch(/COPY statements on recorded tables/);
    expect(refused('EXPLAIN ANALYZE UPDATE accounts SET bal = 0')).toMatch(/EXPLAIN ANALYZE/);
    expect(refused('SELECT 1; UPDATE accounts SET bal = 0')).toMatch(/several statements/);
    expect(plan('EXPLAIN SELECT * FROM accounts')).toEqual({ kind: 'passthrough' });
    expect(plan('LOCK TABLE accounts')).toEqual({ kind: 'passthrough' });
    expect(plan('DO $$ BEGIN END $$')).toMatchObject({
      kind: 'passthrough',
      warning: expect.stringMatching(/not looked into/),
    });
  });

  it('records COPY table TO STDOUT as a read of the rewritten SELECT, its traces left in a setting', () => {
    const gen: TableInfo = { ...accounts, name: 'gen', relname: 'gen', oid: 3, generated: ['bal'] };
    const lookup2 = tableLookup([accounts, gen]);
    const p = analyze('COPY /* x */ accounts TO STDOUT (FORMAT csv)', 0, lookup2, PG18) as SelectPlan;
    expect(p).toMatchObject({
      kind: 'select',
      appRows: false,
      tables: [accounts],
      copy: { at: [13, 21], table: accounts },
    });
    expect(p.copy?.select).toMatch(/^SELECT id, name, bal, .* FROM accounts$/);
    expect(p.sql).toBe(p.copy?.text);
    expect(p.sql).toMatch(
      /^COPY \/\* x \*\/ \(WITH _isocheck_r\(_isocheck_c0, _isocheck_c1, _isocheck_c2, _isocheck_a0, /,
    );
    expect(p.sql).toMatch(
      /set_config\('isocheck\.copy_read', .*\) SELECT _isocheck_c0 AS "id", _isocheck_c1 AS "name", _isocheck_c2 AS /,
    );
    expect(p.sql).toMatch(
      / FROM _isocheck_r UNION ALL SELECT _isocheck_c0, _isocheck_c1, _isocheck_c2 FROM _isocheck_r /,
    );
    expect(p.sql).toMatch(/ WHERE \(SELECT _isocheck_s\.x FROM _isocheck_s\) IS NULL\) TO STDOUT \(FORMAT csv\)$/);
    // a generated column is not in COPY's own list; a list the server refuses, WHERE, a partitioned table: its error
    expect((analyze('COPY gen TO STDOUT', 0, lookup2, PG18) as RecordedPlan).sql).toMatch(
      /SELECT _isocheck_c0 AS "id", _isocheck_c1 AS "name" FROM _isocheck_r/,
    );
    for (const sql of [
      'COPY gen (bal) TO STDOUT',
      'COPY accounts (id, nope) TO STDOUT',
      'COPY accounts (id, id) TO STDOUT',
      'COPY accounts (id) TO STDOUT WHERE id > 1',
      'COPY accounts (id) TO STDOUT (FORMAT csv, FORCE_QUOTE (name))',
    ])
      expect(analyze(sql, 0, lookup2, PG18)).toEqual({ kind: 'passthrough' });
    const parted = tableLookup([{ ...accounts, partitioned: true }]);
    expect(analyze('COPY accounts TO STDOUT', 0, parted, PG18)).toEqual({ kind: 'passthrough' });
    expect(refused('COPY BINARY accounts TO STDOUT')).toMatch(/this form of COPY/);
    expect(refused('COPY accounts (id, _isocheck_wid) TO STDOUT')).toMatch(/hidden column _isocheck_wid/);
    expect(plan('COPY orders_archive TO STDOUT')).toEqual({ kind: 'passthrough' });
  });

  it('records COPY (query) TO STDOUT as a read of the rewritten query, its text made once its columns known', () => {
    const text = 'COPY (SELECT a.name, o.status FROM accounts a JOIN orders o ON o.account_id = a.id) TO STDOUT';
    const p = analyze(text, 0, lookup, PG18) as SelectPlan;
    const at = [text.indexOf('('), text.lastIndexOf(')') + 1];
    expect(p).toMatchObject({ kind: 'select', appRows: false, copy: { at } });
    expect(p.copy?.text).toBeUndefined();
    expect(p.copy?.select).toMatch(/^SELECT a\.name, o\.status, .* AS __isocheck_0, /);
    const made = copyOutText(text, p.copy!.at, p.copy!.select, p.added, ['name', 'status']);
    expect(made.text).toMatch(/^COPY \(WITH _isocheck_r\(_isocheck_c0, _isocheck_c1, _isocheck_a0, .*\) TO STDOUT$/);
    expect(made.text.length - made.length).toBe(text.length - (at[1] - at[0]));
    expect(refused('COPY (SELECT id FROM accounts FOR UPDATE) TO STDOUT')).toMatch(/FOR UPDATE/);
    expect(refused('COPY (DELETE FROM accounts RETURNING id) TO STDOUT')).toMatch(/a write with RETURNING/);
    expect(plan('COPY (SELECT 1) TO STDOUT')).toEqual({ kind: 'passthrough' });
  });

  it('leaves a statement with missing parameters to the server', () => {
    expect(plan('UPDATE accounts SET bal = $2 WHERE id = $1', 1)).toEqual({ kind: 'passthrough' });
  });
});

describe('ORM IN lists (issue 17)', () => {
  it('ignores exactly the position fields of libpg-query 18 node types in the round-trip check', () => {
    const require = createRequire(import.meta.url);
    const types = readFileSync(join(dirname(require.resolve('@pgsql/types/package.json')), 'types.d.ts'), 'utf8');
    const fields = [...types.matchAll(/^\s+([A-Za-z_]+)\?: ([^;]+);/gm)].map((m) => ({ name: m[1], type: m[2] }));
    const positions = fields.filter((f) => isLocationKey(f.name));
    // every field the rule matches is a number (an offset), but for CREATE TABLESPACE's location (a path, a
    // string: kept, since only numbers are dropped), and every offset-like number field is matched
    expect(positions.length).toBeGreaterThan(80);
    expect(positions.filter((f) => f.type !== 'number')).toEqual([{ name: 'location', type: 'string' }]);
    const offsetLike = fields.filter((f) => f.type === 'number' && /location|_start$|_end$|^stmt_len$/.test(f.name));
    expect(offsetLike.filter((f) => !isLocationKey(f.name))).toEqual([]);
    expect(new Set(positions.map((f) => f.name))).toEqual(
      new Set([
        'location',
        'name_location',
        'list_start',
        'list_end',
        'rexpr_list_start',
        'rexpr_list_end',
        'stmt_location',
        'stmt_len',
      ]),
    );
  });

  it('records select / update / delete by IN list with ORDER BY from each library', async () => {
    const ds = await typeormOffline();
    const seq = sequelizeOffline();
    const qg = (
      seq.sequelize.getQueryInterface() as unknown as {
        queryGenerator: { selectQuery(t: string, o: object, m: unknown): string };
      }
    ).queryGenerator;
    const selects: OrmStatement[] = [
      fromKysely(kysely.selectFrom('accounts').selectAll().where('id', 'in', [1, 2, 3]).orderBy('id')),
      fromKnex(knex('accounts').whereIn('id', [1, 2, 3]).orderBy('id')),
      fromDrizzle(
        drizzleDb
          .select()
          .from(dAccounts)
          .where(inArray(dAccounts.id, [1, 2, 3]))
          .orderBy(asc(dAccounts.id)),
      ),
      fromTypeorm(
        ds
          .getRepository('Account')
          .createQueryBuilder('a')
          .where('a.id IN (:...ids)', { ids: [1, 2, 3] })
          .orderBy('a.id'),
      ),
      {
        sql: qg.selectQuery(
          'accounts',
          { attributes: ['id', 'name', 'bal'], where: { id: [1, 2, 3] }, order: [['id', 'ASC']] },
          seq.Account,
        ),
        values: [],
      },
      ...(await seq.capture(() =>
        seq.Account.findAll({ where: { id: { [Op.in]: [1, 2, 3] } }, order: [['id', 'ASC']] }),
      )),
    ];
    const writes: OrmStatement[] = [
      fromKysely(kysely.updateTable('accounts').set({ bal: '0' }).where('id', 'in', [1, 2])),
      fromKysely(kysely.deleteFrom('accounts').where('id', 'in', [1, 2])),
      fromKnex(knex('accounts').whereIn('id', [1, 2]).update({ bal: 0 })),
      fromKnex(knex('accounts').whereIn('id', [1, 2]).del()),
      fromDrizzle(
        drizzleDb
          .update(dAccounts)
          .set({ bal: '0' })
          .where(inArray(dAccounts.id, [1, 2])),
      ),
      fromDrizzle(drizzleDb.delete(dAccounts).where(inArray(dAccounts.id, [1, 2]))),
      fromTypeorm(
        ds
          .createQueryBuilder()
          .update('Account')
          .set({ bal: '0' })
          .where('id IN (:...ids)', { ids: [1, 2] }),
      ),
      fromTypeorm(
        ds
          .createQueryBuilder()
          .delete()
          .from('Account')
          .where('id IN (:...ids)', { ids: [1, 2] }),
      ),
      ...(await seq.capture(() => seq.Account.update({ bal: 0 }, { where: { id: [1, 2] } }))),
      ...(await seq.capture(() => seq.Account.destroy({ where: { id: [1, 2] } }))),
    ];
    expect(selects.every((s) => /\bIN \(/i.test(s.sql) && /ORDER BY/i.test(s.sql))).toBe(true);
    for (const s of selects)
      expect(rec(s.sql, s.values.length), s.sql).toMatchObject({
        kind: 'select',
        reads: [{ where: expect.stringMatching(/ IN \(/), partialReason: undefined }],
      });
    expect(writes.map((w) => rec(w.sql, w.values.length).kind)).toEqual([
      'update',
      'delete',
      'update',
      'delete',
      'update',
      'delete',
      'update',
      'delete',
      'update',
      'delete',
    ]);
    for (const w of writes)
      expect(rec(w.sql, w.values.length), w.sql).toMatchObject({ where: expect.stringMatching(/ IN \(/) });
  });
});

describe('ORM joins, subqueries, CTEs and writes that read (issue 17)', () => {
  const lines: TableInfo = {
    name: 'lines',
    schema: 'public',
    relname: 'lines',
    oid: 3,
    key: ['id'],
    keySource: 'primary key',
    columns: { id: 'int4', order_id: 'int4', product: 'text', qty: 'int4' },
    columnOrder: ['id', 'order_id', 'product', 'qty'],
    unsafeColumns: [],
    hasPrev: false,
  };
  const shop = tableLookup([accounts, orders, lines]);

  it('records each statement of the five libraries, exact only where the rows read are known to be all', async () => {
    const got = [...(await ormReads()), ...ormWrites()].map((w) => {
      const p = analyze(w.sql, w.values.length, shop, PG18) as RecordedPlan & { partialReason?: string };
      return [
        w.label,
        p.reads.map((r) => `${r.table.name}:${r.partialReason ? 'partial' : 'exact'}${r.where ? ` ${r.where}` : ''}`),
        p.kind === 'select' ? undefined : `${p.kind} ${p.partialReason ? 'partial' : 'exact'}`,
      ];
    });
    expect(got).toEqual([
      ['kysely inner join', ['orders:partial id = $1', 'lines:partial'], undefined],
      ['kysely IN (SELECT)', ['orders:partial', 'lines:exact qty > $1'], undefined],
      ['kysely EXISTS', ['orders:partial', 'lines:partial qty > $1'], undefined],
      ['kysely WITH', ['orders:partial', 'lines:exact qty > $1'], undefined],
      ['kysely UNION', ['orders:exact status = $1', 'lines:exact qty > $2'], undefined],
      ['knex join', ['orders:partial account_id = $1', 'lines:partial'], undefined],
      ['knex whereExists', ['orders:partial', 'lines:partial qty = 4'], undefined],
      ['knex sum over join', ['orders:partial', 'lines:partial'], undefined],
      ['drizzle left join', ['orders:exact id = $1', 'lines:partial'], undefined],
      ['drizzle count group by', ['orders:exact', 'lines:partial'], undefined],
      ['drizzle DISTINCT ON', ['lines:exact'], undefined],
      ['typeorm leftJoinAndSelect', ['orders:exact id = $1', 'lines:partial'], undefined],
      ['typeorm innerJoinAndSelect', ['orders:partial', 'lines:partial qty > $1'], undefined],
      ['sequelize include', ['orders:exact id = 4', 'lines:partial'], undefined],
      ['sequelize include required + limit', ['lines:partial', 'orders:partial', 'lines:partial qty > 2'], undefined],
      ['sequelize include + limit', ['lines:partial', 'orders:partial'], undefined],
      ['kysely UPDATE ... FROM', ['orders:partial id = $2'], 'update partial'],
      ['knex UPDATE SET (SELECT)', ['orders:partial'], 'update exact'],
      ['knex DELETE IN (SELECT)', ['orders:exact status = $1'], 'delete partial'],
      ['kysely INSERT ... SELECT', ['accounts:exact bal > $3'], 'insert exact'],
      ['kysely DELETE ... USING', ['orders:partial status = $1'], 'delete partial'],
    ]);
  });
});
