// The cache of compiled WHERE clauses the sessions judge reads by (where-columns.ts): the answer is compilePredicate's,
// kept per (table, WHERE, parameter values), since the values can decide whether the checker compiles it.
import { beforeAll, describe, expect, it } from 'vitest';
import { compilePredicate, loadPredicateParser, PredicateError } from '../src/sql/predicate.js';
import type { TableInfo } from '../src/recorder/catalog.js';
import { WhereColumnsCache } from '../src/recorder/where-columns.js';

const table = (name: string): TableInfo => ({
  name,
  schema: 'public',
  relname: name,
  oid: 1,
  key: ['id'],
  keySource: 'primary key',
  columns: { id: 'int', balance: 'int', note: 'text' },
  columnOrder: ['id', 'balance', 'note'],
  unsafeColumns: [],
  hasPrev: false,
});

beforeAll(async () => {
  await loadPredicateParser();
});

describe('WhereColumnsCache', () => {
  it('gives what compilePredicate gives, and the same answer object for the same table, WHERE and values', () => {
    const cache = new WhereColumnsCache();
    const t = table('accounts');
    const first = cache.get('id = $1 AND balance > 0', [3], t);
    expect(first).toEqual({ columns: compilePredicate('id = $1 AND balance > 0', [3], t.columns).columns });
    expect(cache.get('id = $1 AND balance > 0', [3], t)).toBe(first);
    expect(cache.get('note = $1', [], t)).toBe(cache.get('note = $1', [], t));
  });

  it(
    'keeps the parameter values apart: a value the checker cannot take is an error, another value of the same ' +
      'WHERE is not',
    () => {
      const cache = new WhereColumnsCache();
      const t = table('accounts');
      let expected: string | undefined;
      try {
        compilePredicate('id = $1', ['not a number'], t.columns);
      } catch (e) {
        if (!(e instanceof PredicateError)) throw e;
        expected = e.message;
      }
      expect(expected).toBeDefined();
      expect(cache.get('id = $1', ['not a number'], t)).toEqual({ error: expected });
      expect(cache.get('id = $1', [7], t)).toEqual({ columns: ['id'] });
      expect(cache.get('id = $1', ['7'], t)).not.toBe(cache.get('id = $1', [7], t));
    },
  );

  it('keeps tables apart (another TableInfo, other column types)', () => {
    const cache = new WhereColumnsCache();
    const a = table('a');
    const b = { ...table('b'), columns: { id: 'int', balance: 'text', note: 'text' } } as TableInfo;
    expect(cache.get('balance > $1', [1], a)).toEqual({ columns: ['balance'] });
    expect(cache.get('balance > $1', [1], b)).toEqual(compileOrError('balance > $1', [1], b));
  });

  it('stays bounded: past its size it starts again and still answers', () => {
    const cache = new WhereColumnsCache();
    const t = table('accounts');
    for (let i = 0; i < 5100; i++) expect(cache.get('id = $1', [i], t)).toEqual({ columns: ['id'] });
    const size = (cache as unknown as { size: number }).size;
    expect(size).toBeLessThanOrEqual(5000);
  });
});

function compileOrError(where: string, params: unknown[], t: TableInfo): unknown {
  try {
    return { columns: compilePredicate(where, params, t.columns).columns };
  } catch (e) {
    return { error: (e as Error).message };
  }
}
