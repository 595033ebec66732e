/**
 * Key ids of the model (model.ts keyOf/keyOfRow): values as written are cached per table (a trie of Maps for a key
 * of several columns), and two spellings of one key value (1 and "1" in an int4 column, 2.50 and "2.5" in a
 * numeric one) must still be one key, as their canonical texts are; different values, different keys.
 */
import seedrandom from 'seedrandom';
import { beforeAll, describe, expect, it } from 'vitest';
import { buildModel } from '../src/checker/model/model.js';
import { canonicalValue } from '../src/sql/values.js';
import { loadPredicateParser } from '../src/sql/predicate.js';
import { historyFromLines } from './gen/random-history.js';

beforeAll(async () => {
  await loadPredicateParser();
});

const COLUMNS = { a: 'int4', b: 'text', c: 'numeric', v: 'int4' };
/** Spellings of a few values per key column, as a recorder or a hand-written history may give them. */
const SPELLINGS: Record<string, unknown[][]> = {
  a: [
    [1, '1'],
    [2, '2', 2.0],
    [-0, 0, '0'],
  ],
  b: [['x'], ['1'], ['']],
  c: [
    [2.5, '2.5', '2.50'],
    [3, '3.0'],
  ],
};

describe('key ids', () => {
  it('are equal exactly when the canonical texts of the key values are, however the values are spelled', () => {
    for (let i = 0; i < 200; i++) {
      const rng = seedrandom(`key-ids-${i}`);
      const pick = <T>(xs: T[]): T => xs[Math.floor(rng() * xs.length)];
      const keyCols = i % 2 === 0 ? ['a', 'b'] : ['a', 'b', 'c'];
      // each event writes one row, spelled at random; the init holds one spelling of every key
      const rows: Record<string, unknown>[] = [];
      for (let k = 0; k < 12; k++) {
        const row: Record<string, unknown> = { v: k };
        for (const col of ['a', 'b', 'c']) row[col] = pick(pick(SPELLINGS[col]));
        rows.push(row);
      }
      const canonical = (row: Record<string, unknown>) =>
        keyCols.map((col) => canonicalValue(row[col] as never, COLUMNS[col as keyof typeof COLUMNS])).join('|');
      const lines: unknown[] = [
        { kind: 'history', format: 'isocheck-history', version: 1, meta: {} },
        { kind: 'table', name: 't', key: keyCols, columns: COLUMNS },
        { kind: 'init', table: 't', rows: [] },
      ];
      for (const [k, row] of rows.entries())
        lines.push({
          kind: 'txn',
          id: `t${k}`,
          session: k + 1,
          seq: 1,
          iso: 'RC',
          status: 'committed',
          events: [{ op: 'insert', table: 't', wid: `w${k}`, rows: [{ row }] }],
        });
      const model = buildModel(historyFromLines(lines as never));
      const texts = new Set(rows.map(canonical));
      expect(model.keys.length, `seed ${i}`).toBe(texts.size);
    }
  });
});
