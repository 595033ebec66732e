// Statement rewriting (src/recorder/rewrite.ts): for each shape, the SQL that runs, what the plan records, and
// the statements that are refused with a message saying how to split them.
import { beforeAll, describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { analyze, isLocationKey, loadRewriter, tableLookup, type Plan, type RecordedPlan } from '../src/recorder/rewrite.js';
import type { TableInfo } from '../src/recorder/catalog.js';
import { InputError } from '../src/history/input-errors.js';
import { dAccounts, fromDrizzle, fromKnex, fromKysely, fromTypeorm, knex, kysely, drizzleDb, sequelizeOffline, typeormOffline, type OrmStatement } from './helpers/orm-sql.js';
import { asc, inArray } from 'drizzle-orm';
import { Op } from 'sequelize';

const accounts: TableInfo = {
  name: 'accounts', schema: 'public', relname: 'accounts', oid: 1, key: ['id'], keySource: 'primary key',
  columns: { id: 'int4', name: 'text', bal: 'numeric' }, columnOrder: ['id', 'name', 'bal'], unsafeColumns: [], hasPrev: false,
};
const lookup = tableLookup([accounts]);
const PG18 = { oldReturning: true };
const PG15 = { oldReturning: false };

const plan = (sql: string, n = 0, options = PG18): Plan => analyze(sql, n, lookup, options);
const rec = (sql: string, n = 0, options = PG18): RecordedPlan => {
  const p = plan(sql, n, options);
  if (p.kind !== 'select' && p.kind !== 'insert' && p.kind !== 'update' && p.kind !== 'delete') throw new Error(`not recorded: ${p.kind}`);
  return p;
};
const refused = (sql: string, n = 0): string => {
  try {
    plan(sql, n);
  } catch (e) {
    expect(e).toBeInstanceOf(InputError);
    return (e as Error).message;
  }
  throw new Error(`not refused: ${sql}`);
};

const COLS = 'accounts.id AS __isocheck_0, accounts.name AS __isocheck_1, accounts.bal AS __isocheck_2, accounts._isocheck_wid AS __isocheck_3';
const JSON_ROWS = 'json_agg(ARRAY[accounts.id::text, accounts.name::text, accounts.bal::text, accounts._isocheck_wid::text]) AS __isocheck_0';

beforeAll(async () => {
  await loadRewriter();
});

describe('SELECT', () => {
  it('adds key, columns and wid after the application columns, expanding *', () => {
    expect(rec('SELECT * FROM accounts WHERE id = $1', 1)).toMatchObject({
      kind: 'select', mode: 'rows', added: 4, appRows: true, where: 'id = $1',
      sql: `SELECT id, name, bal, ${COLS} FROM accounts WHERE id = $1`,
    });
  });

  it('keeps aliases, ORDER BY, FOR UPDATE; records the WHERE without qualifiers', () => {
    const p = rec('SELECT a.name FROM public.accounts a WHERE a.bal > 0 AND a.id = $1 ORDER BY name FOR UPDATE', 1);
    expect(p.sql).toBe(
      'SELECT a.name, a.id AS __isocheck_0, a.name AS __isocheck_1, a.bal AS __isocheck_2, a._isocheck_wid AS __isocheck_3 FROM public.accounts AS a WHERE a.bal > 0 AND a.id = $1 ORDER BY name FOR UPDATE',
    );
    expect(p).toMatchObject({ where: 'bal > 0 AND id = $1' });
    expect(p).toMatchObject({ partialReason: undefined });
  });

  it('marks LIMIT / OFFSET / FETCH FIRST partial (LIMIT ALL is not)', () => {
    expect(rec('SELECT id FROM accounts ORDER BY id LIMIT 3')).toMatchObject({ partialReason: 'LIMIT/OFFSET/FETCH' });
    expect(rec('SELECT id FROM accounts ORDER BY id OFFSET 1')).toMatchObject({ partialReason: 'LIMIT/OFFSET/FETCH' });
    expect(rec('SELECT id FROM accounts ORDER BY id FETCH FIRST 2 ROWS ONLY')).toMatchObject({ partialReason: 'LIMIT/OFFSET/FETCH' });
    expect(rec('SELECT id FROM accounts LIMIT ALL')).toMatchObject({ partialReason: undefined });
  });

  it('runs aggregates with json_agg of the rows read, in the same statement', () => {
    expect(rec('SELECT count(*), sum(bal) FROM accounts WHERE bal > $1', 1)).toMatchObject({
      mode: 'aggregate', added: 1, where: 'bal > $1',
      sql: `SELECT count(*), sum(bal), ${JSON_ROWS} FROM accounts WHERE bal > $1`,
    });
    expect(rec('SELECT name, max(bal) FROM accounts GROUP BY name ORDER BY 2')).toMatchObject({
      mode: 'aggregate', sql: `SELECT name, max(bal), ${JSON_ROWS} FROM accounts GROUP BY name ORDER BY 2`,
    });
    expect(rec('SELECT name FROM accounts GROUP BY name HAVING count(*) > 1')).toMatchObject({ mode: 'aggregate', partialReason: 'HAVING' });
  });

  it('turns DISTINCT into GROUP BY so that every row read is recorded', () => {
    expect(rec('SELECT DISTINCT name FROM accounts WHERE bal > 0')).toMatchObject({
      mode: 'aggregate', sql: `SELECT name, ${JSON_ROWS} FROM accounts WHERE bal > 0 GROUP BY 1`, where: 'bal > 0',
    });
  });

  it('keeps window functions as a row query', () => {
    expect(rec('SELECT id, sum(bal) OVER () FROM accounts')).toMatchObject({ mode: 'rows' });
  });

  it('marks set-returning functions in the select list partial', () => {
    expect(rec('SELECT generate_series(1, id) FROM accounts')).toMatchObject({ partialReason: 'a set-returning function in the select list' });
  });

  it('passes statements on other tables through untouched', () => {
    expect(plan('SELECT * FROM other WHERE x = 1')).toEqual({ kind: 'passthrough' });
    expect(plan('SELECT 1')).toEqual({ kind: 'passthrough' });
    expect(plan('SELEC oops')).toEqual({ kind: 'passthrough' }); // the server reports the syntax error
  });

  it('refuses joins, subqueries, WITH, set operations, whole-row references and DISTINCT ON', () => {
    expect(refused('SELECT * FROM accounts a JOIN other o ON o.id = a.id')).toMatch(/reads several tables.*Split it into one SELECT per table/);
    expect(refused('SELECT * FROM accounts, other')).toMatch(/reads several tables/);
    expect(refused('SELECT * FROM (SELECT * FROM accounts) s')).toMatch(/reads several tables|subquery/);
    expect(refused('SELECT * FROM accounts WHERE id IN (SELECT id FROM other)')).toMatch(/subquery.*pass its result as a parameter/);
    expect(refused('SELECT * FROM other WHERE id IN (SELECT id FROM accounts)')).toMatch(/subquery/);
    expect(refused('WITH x AS (SELECT 1) SELECT * FROM accounts')).toMatch(/uses WITH/);
    expect(refused('SELECT id FROM accounts UNION SELECT id FROM other')).toMatch(/combines queries \(UNION\)/);
    expect(refused('SELECT row_to_json(accounts) FROM accounts')).toMatch(/whole row/);
    expect(refused('SELECT DISTINCT ON (name) * FROM accounts')).toMatch(/DISTINCT ON/);
    expect(refused('SELECT _isocheck_wid FROM accounts')).toMatch(/hidden column/);
    expect(refused('SELECT * INTO copy FROM accounts')).toMatch(/SELECT INTO/);
  });

  it('refuses what the deparser cannot reproduce exactly', () => {
    expect(refused('SELECT * FROM accounts ORDER BY id FETCH FIRST 2 ROWS WITH TIES')).toMatch(/deparser cannot reproduce/);
  });
});

describe('INSERT', () => {
  it('adds the wid as a parameter to every row, fills the column list, returns the rows', () => {
    expect(rec('INSERT INTO accounts VALUES (1, $1, 0), (2, $2, DEFAULT)', 2)).toMatchObject({
      kind: 'insert', widParam: 3, appRows: false, added: 4,
      sql: 'INSERT INTO accounts (id, name, bal, _isocheck_wid) VALUES (1, $1, 0, CAST($3 AS text)), (2, $2, DEFAULT, CAST($3 AS text)) RETURNING id AS __isocheck_0, name AS __isocheck_1, bal AS __isocheck_2, _isocheck_wid AS __isocheck_3',
    });
  });

  it('handles DEFAULT VALUES and INSERT ... SELECT without FROM', () => {
    expect(rec('INSERT INTO accounts DEFAULT VALUES').sql).toBe(
      'INSERT INTO accounts (_isocheck_wid) VALUES (CAST($1 AS text)) RETURNING id AS __isocheck_0, name AS __isocheck_1, bal AS __isocheck_2, _isocheck_wid AS __isocheck_3',
    );
    expect(rec('INSERT INTO accounts (id, name) SELECT $1, $2', 2).sql).toBe(
      'INSERT INTO accounts (id, name, _isocheck_wid) SELECT $1, $2, CAST($3 AS text) RETURNING id AS __isocheck_0, name AS __isocheck_1, bal AS __isocheck_2, _isocheck_wid AS __isocheck_3',
    );
  });

  it('keeps the application RETURNING first (stars expanded)', () => {
    expect(rec('INSERT INTO accounts (id, name) VALUES (1, $1) RETURNING *', 1)).toMatchObject({
      appRows: true,
      sql: 'INSERT INTO accounts (id, name, _isocheck_wid) VALUES (1, $1, CAST($2 AS text)) RETURNING id, name, bal, id AS __isocheck_0, name AS __isocheck_1, bal AS __isocheck_2, _isocheck_wid AS __isocheck_3',
    });
  });

  it('gives ON CONFLICT DO UPDATE its own wid and reads the previous one (old, or _isocheck_prev before 18)', () => {
    const sql = 'INSERT INTO accounts AS a (id, name) VALUES ($1, $2) ON CONFLICT (id) DO UPDATE SET name = excluded.name';
    expect(rec(sql, 2)).toMatchObject({
      widParam: 3, upsertWidParam: 4, added: 5,
      sql: 'INSERT INTO accounts AS a (id, name, _isocheck_wid) VALUES ($1, $2, CAST($3 AS text)) ON CONFLICT (id) DO UPDATE SET name = excluded.name, _isocheck_wid = CAST($4 AS text) RETURNING id AS __isocheck_0, name AS __isocheck_1, bal AS __isocheck_2, _isocheck_wid AS __isocheck_3, old._isocheck_wid AS __isocheck_4',
    });
    expect(rec(sql, 2, PG15).sql).toBe(
      'INSERT INTO accounts AS a (id, name, _isocheck_wid) VALUES ($1, $2, CAST($3 AS text)) ON CONFLICT (id) DO UPDATE SET name = excluded.name, _isocheck_wid = CAST($4 AS text), _isocheck_prev = a._isocheck_wid RETURNING id AS __isocheck_0, name AS __isocheck_1, bal AS __isocheck_2, _isocheck_wid AS __isocheck_3, _isocheck_prev AS __isocheck_4',
    );
    expect(rec('INSERT INTO accounts VALUES (1, $1, 0) ON CONFLICT DO NOTHING', 1)).toMatchObject({ upsertWidParam: undefined });
  });

  it('refuses INSERT ... SELECT FROM, subqueries, key changes in DO UPDATE, copies into other tables', () => {
    expect(refused('INSERT INTO accounts SELECT * FROM other')).toMatch(/INSERT \.\.\. SELECT.*VALUES/);
    expect(refused('INSERT INTO accounts VALUES ((SELECT max(id) + 1 FROM accounts), $1, 0)', 1)).toMatch(/subquery/);
    expect(refused('INSERT INTO accounts VALUES (1, $1, 0) ON CONFLICT (id) DO UPDATE SET id = 5', 1)).toMatch(/key column "id"/);
    expect(refused('INSERT INTO other SELECT * FROM accounts')).toMatch(/copies rows of a recorded table/);
    expect(refused('INSERT INTO accounts (id, _isocheck_wid) VALUES (1, $1)', 1)).toMatch(/hidden column/);
  });
});

describe('UPDATE and DELETE', () => {
  it('sets the wid and returns the new row and the previous wid', () => {
    expect(rec('UPDATE accounts SET bal = bal + $2 WHERE id = $1', 2)).toMatchObject({
      kind: 'update', widParam: 3, where: 'id = $1', appRows: false,
      sql: 'UPDATE accounts SET bal = bal + $2, _isocheck_wid = CAST($3 AS text) WHERE id = $1 RETURNING id AS __isocheck_0, name AS __isocheck_1, bal AS __isocheck_2, old._isocheck_wid AS __isocheck_3',
    });
    expect(rec('UPDATE accounts AS x SET bal = 0 WHERE x.id = $1', 1, PG15)).toMatchObject({
      where: 'id = $1',
      sql: 'UPDATE accounts AS x SET bal = 0, _isocheck_wid = CAST($2 AS text), _isocheck_prev = x._isocheck_wid WHERE x.id = $1 RETURNING id AS __isocheck_0, name AS __isocheck_1, bal AS __isocheck_2, _isocheck_prev AS __isocheck_3',
    });
  });

  it('uses the application RETURNING WITH (OLD AS o) alias', () => {
    expect(rec('UPDATE accounts SET bal = 1 RETURNING WITH (OLD AS o) o.bal').sql).toBe(
      'UPDATE accounts SET bal = 1, _isocheck_wid = CAST($1 AS text) RETURNING WITH (OLD AS o) o.bal, id AS __isocheck_0, name AS __isocheck_1, bal AS __isocheck_2, o._isocheck_wid AS __isocheck_3',
    );
  });

  it('deletes return the key and the deleted version wid', () => {
    expect(rec('DELETE FROM accounts WHERE id = $1 RETURNING name', 1)).toMatchObject({
      kind: 'delete', where: 'id = $1', appRows: true, added: 2,
      sql: 'DELETE FROM accounts WHERE id = $1 RETURNING name, id AS __isocheck_0, _isocheck_wid AS __isocheck_1',
    });
  });

  it('refuses joins, subqueries, cursors and key changes', () => {
    expect(refused('UPDATE accounts SET bal = (SELECT max(v) FROM other)')).toMatch(/subquery.*parameter/);
    expect(refused('UPDATE accounts SET bal = o.v FROM other o WHERE o.id = accounts.id')).toMatch(/UPDATE \.\.\. FROM/);
    expect(refused('DELETE FROM accounts USING other WHERE other.id = accounts.id')).toMatch(/DELETE \.\.\. USING/);
    expect(refused('UPDATE accounts SET bal = 0 WHERE CURRENT OF c')).toMatch(/CURRENT OF/);
    expect(refused('UPDATE accounts SET id = id + 1')).toMatch(/key column "id".*Delete the row and insert it/);
    expect(refused('UPDATE other SET v = 1 WHERE id IN (SELECT id FROM accounts)')).toMatch(/reads a recorded table/);
  });
});

describe('other statements', () => {
  it('classifies transaction control', () => {
    expect(plan('BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY')).toEqual({ kind: 'control', control: { kind: 'begin', iso: 'repeatable read' } });
    expect(plan('START TRANSACTION')).toEqual({ kind: 'control', control: { kind: 'begin', iso: undefined } });
    expect(plan('SET TRANSACTION ISOLATION LEVEL SERIALIZABLE')).toEqual({ kind: 'control', control: { kind: 'set-transaction', iso: 'serializable' } });
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
    expect(refused('COPY accounts FROM STDIN')).toMatch(/Copy statements/);
    expect(refused('EXPLAIN ANALYZE UPDATE accounts SET bal = 0')).toMatch(/EXPLAIN ANALYZE/);
    expect(refused('SELECT 1; UPDATE accounts SET bal = 0')).toMatch(/several statements/);
    expect(plan('EXPLAIN SELECT * FROM accounts')).toEqual({ kind: 'passthrough' });
    expect(plan('LOCK TABLE accounts')).toEqual({ kind: 'passthrough' });
    expect(plan('DO $$ BEGIN END $$')).toMatchObject({ kind: 'passthrough', warning: expect.stringMatching(/not looked into/) });
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
    expect(new Set(positions.map((f) => f.name))).toEqual(new Set(['location', 'name_location', 'list_start', 'list_end', 'rexpr_list_start', 'rexpr_list_end', 'stmt_location', 'stmt_len']));
  });

  it('records select / update / delete by IN list with ORDER BY from each library', async () => {
    const ds = await typeormOffline();
    const seq = sequelizeOffline();
    const qg = (seq.sequelize.getQueryInterface() as unknown as { queryGenerator: { selectQuery(t: string, o: object, m: unknown): string } }).queryGenerator;
    const selects: OrmStatement[] = [
      fromKysely(kysely.selectFrom('accounts').selectAll().where('id', 'in', [1, 2, 3]).orderBy('id')),
      fromKnex(knex('accounts').whereIn('id', [1, 2, 3]).orderBy('id')),
      fromDrizzle(drizzleDb.select().from(dAccounts).where(inArray(dAccounts.id, [1, 2, 3])).orderBy(asc(dAccounts.id))),
      fromTypeorm(ds.getRepository('Account').createQueryBuilder('a').where('a.id IN (:...ids)', { ids: [1, 2, 3] }).orderBy('a.id')),
      { sql: qg.selectQuery('accounts', { attributes: ['id', 'name', 'bal'], where: { id: [1, 2, 3] }, order: [['id', 'ASC']] }, seq.Account), values: [] },
      ...(await seq.capture(() => seq.Account.findAll({ where: { id: { [Op.in]: [1, 2, 3] } }, order: [['id', 'ASC']] }))),
    ];
    const writes: OrmStatement[] = [
      fromKysely(kysely.updateTable('accounts').set({ bal: '0' }).where('id', 'in', [1, 2])),
      fromKysely(kysely.deleteFrom('accounts').where('id', 'in', [1, 2])),
      fromKnex(knex('accounts').whereIn('id', [1, 2]).update({ bal: 0 })),
      fromKnex(knex('accounts').whereIn('id', [1, 2]).del()),
      fromDrizzle(drizzleDb.update(dAccounts).set({ bal: '0' }).where(inArray(dAccounts.id, [1, 2]))),
      fromDrizzle(drizzleDb.delete(dAccounts).where(inArray(dAccounts.id, [1, 2]))),
      fromTypeorm(ds.createQueryBuilder().update('Account').set({ bal: '0' }).where('id IN (:...ids)', { ids: [1, 2] })),
      fromTypeorm(ds.createQueryBuilder().delete().from('Account').where('id IN (:...ids)', { ids: [1, 2] })),
      ...(await seq.capture(() => seq.Account.update({ bal: 0 }, { where: { id: [1, 2] } }))),
      ...(await seq.capture(() => seq.Account.destroy({ where: { id: [1, 2] } }))),
    ];
    expect(selects.every((s) => /\bIN \(/i.test(s.sql) && /ORDER BY/i.test(s.sql))).toBe(true);
    for (const s of selects) expect(rec(s.sql, s.values.length), s.sql).toMatchObject({ kind: 'select', where: expect.stringMatching(/ IN \(/) });
    expect(writes.map((w) => rec(w.sql, w.values.length).kind)).toEqual(['update', 'delete', 'update', 'delete', 'update', 'delete', 'update', 'delete', 'update', 'delete']);
    for (const w of writes) expect(rec(w.sql, w.values.length), w.sql).toMatchObject({ where: expect.stringMatching(/ IN \(/) });
  });
});
