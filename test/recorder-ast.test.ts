// The parse-tree helpers planning runs on every statement (src/recorder/ast.ts), against the simple forms they
// replace: clone against structuredClone, sameAst against comparing the JSON of both trees stripped of their positions
// (stripNoise). On the trees of a set of statements, their round trips through the deparser, and seeded random
// changes to them (a value changed, a field dropped or set undefined, a position moved, keys reordered).
import { describe, expect, it } from 'vitest';
import seedrandom from 'seedrandom';
import { loadModule, parseSync } from 'libpg-query';
import { clone, deparse, sameAst, stripNoise } from '../src/recorder/ast.js';

const STATEMENTS = [
  'SELECT 1',
  "SELECT id, name FROM acct WHERE id = $1 AND name LIKE 'a%' ORDER BY id DESC LIMIT 21",
  'UPDATE pgbench_accounts SET abalance = abalance + -4003 WHERE aid = 52305',
  "INSERT INTO item (label, qty) VALUES ('a', 1), ('b', 2) RETURNING id",
  'DELETE FROM acct USING other WHERE acct.id = other.k AND other.k > 3',
  'WITH x AS (SELECT * FROM acct) SELECT count(*), sum(bal) FROM x GROUP BY name HAVING count(*) > 1',
  'SELECT a.id, (SELECT max(b.id) FROM item b WHERE b.qty = a.bal) FROM acct a LEFT JOIN item i ON i.id = a.id',
  "SELECT ARRAY[1, 2], '{1,2}'::int[], row(1, 'x'), CASE WHEN bal > 0 THEN 'pos' ELSE NULL END FROM acct",
  'SELECT * FROM acct WHERE id IN (1, 2, 3) FOR UPDATE SKIP LOCKED',
  "INSERT INTO acct VALUES (1, 'x', 0) ON CONFLICT (id) DO UPDATE SET bal = excluded.bal + 1",
  'DECLARE c CURSOR WITH HOLD FOR SELECT id FROM acct WHERE bal >= 100 ORDER BY id',
  "SELECT interval '1 day' + now(), date '2024-01-01', x'1f'::int, 1.5e10, -2147483648",
];

type Json = unknown;

/** The comparison sameAst replaced. */
const byJson = (a: Json, b: Json): boolean => JSON.stringify(stripNoise(a)) === JSON.stringify(stripNoise(b));

/** Every object of the tree (arrays' elements included), with a setter for each of its fields. */
function objects(t: Json): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  const go = (x: Json): void => {
    if (Array.isArray(x)) x.forEach(go);
    else if (x !== null && typeof x === 'object') {
      out.push(x as Record<string, unknown>);
      for (const v of Object.values(x)) go(v);
    }
  };
  go(t);
  return out;
}

/** One random change to a copy of the tree. */
function mutate(t: Json, rng: () => number): Json {
  const copy = structuredClone(t);
  const objs = objects(copy);
  const o = objs[Math.floor(rng() * objs.length)];
  const keys = Object.keys(o);
  if (keys.length === 0) return copy;
  const k = keys[Math.floor(rng() * keys.length)];
  const r = rng();
  if (r < 0.2) delete o[k];
  else if (r < 0.35) o[k] = undefined;
  else if (r < 0.55 && typeof o[k] === 'number')
    o[k] = (o[k] as number) + 1; // a position moved, or a value changed
  else if (r < 0.7) o[k] = typeof o[k] === 'string' ? `${o[k]}x` : 'x';
  else if (r < 0.85) {
    // the same fields, in another order
    const entries = Object.entries(o).reverse();
    for (const key of Object.keys(o)) delete o[key];
    for (const [key, v] of entries) o[key] = v;
  } else o.location = 7;
  return copy;
}

describe('parse-tree helpers', () => {
  it('clone gives what structuredClone gives, and shares nothing with the tree', async () => {
    await loadModule();
    for (const sql of STATEMENTS) {
      const t = parseSync(sql);
      const c = clone(t);
      expect(c).toStrictEqual(structuredClone(t));
      const objs = new Set(objects(t));
      expect(objects(c).some((o) => objs.has(o))).toBe(false);
    }
    expect(clone({ a: undefined, b: [null, 1, 'x', { c: true }] })).toStrictEqual({
      a: undefined,
      b: [null, 1, 'x', { c: true }],
    });
  });

  it('sameAst says what comparing the stripped JSON says, on round trips and random changes', async () => {
    await loadModule();
    const rng = seedrandom('recorder-ast');
    let equal = 0;
    let different = 0;
    for (const sql of STATEMENTS) {
      const t = parseSync(sql).stmts![0].stmt;
      const back = parseSync(deparse(parseSync(sql))).stmts![0].stmt;
      expect(sameAst(t, back)).toBe(byJson(t, back));
      for (const other of STATEMENTS) {
        const u = parseSync(other).stmts![0].stmt;
        expect(sameAst(t, u)).toBe(byJson(t, u));
      }
      for (let i = 0; i < 300; i++) {
        const m = mutate(t, rng);
        const want = byJson(t, m);
        expect(sameAst(t, m), `${sql}: ${JSON.stringify(m)}`).toBe(want);
        expect(sameAst(m, t)).toBe(want);
        if (want) equal++;
        else different++;
      }
    }
    // both answers came up often
    expect(equal).toBeGreaterThan(300);
    expect(different).toBeGreaterThan(300);
  });
});
