/**
 * Candidate keys filtered by the WHERE's conditions on key columns (conflicts.ts, `conjunctsOn`): a key stays a
 * candidate when any of its versions could satisfy them. Versions of one key have equal canonical key values but
 * not always the same spelling (numeric 1.0 and 1.00), and a condition such as `n::text = '1.00'` tells them
 * apart: filtering on the key's first spelling only would hide a missing row (found in review).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkHistory } from '../src/checker/check.js';
import { loadPredicateParser } from '../src/sql/predicate.js';
import { readHistory } from '../src/history/reader.js';

let dir: string;
beforeAll(async () => {
  await loadPredicateParser();
  dir = mkdtempSync(join(tmpdir(), 'isocheck-key-filter-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** T1 rewrites key 1.0 as 1.00 and writes 40 more keys (the filter runs on more than 32 candidates); T2, after
 *  T1 in the same session, reads with `where` and returns `returned`. */
async function history(where: string, params: unknown[], returned: object[]) {
  const lines = [
    { kind: 'history', format: 'isocheck-history', version: 1 },
    { kind: 'table', name: 't', key: ['n'], columns: { n: 'numeric', v: 'int4' } },
    { kind: 'init', table: 't', rows: [{ n: '1.0', v: 0 }] },
    {
      kind: 'txn',
      id: 'T1',
      session: 1,
      seq: 1,
      iso: 'SER',
      status: 'committed',
      events: [
        {
          op: 'insert',
          table: 't',
          wid: 'T1.1',
          rows: [
            { row: { n: '1.00', v: 1 } },
            ...Array.from({ length: 40 }, (_, i) => ({ row: { n: String(i + 2), v: 1 } })),
          ],
        },
      ],
    },
    {
      kind: 'txn',
      id: 'T2',
      session: 1,
      seq: 2,
      iso: 'SER',
      status: 'committed',
      events: [{ op: 'select', table: 't', where, params, rows: returned }],
    },
    { kind: 'end', transactions: 2 },
  ];
  const file = join(dir, `h${Math.random().toString(36).slice(2)}.ndjson`);
  writeFileSync(file, `${lines.map((l) => JSON.stringify(l)).join('\n')}\n`);
  return readHistory(file);
}

describe('key-column filter of conflict candidates', () => {
  it('keeps a key whose later version satisfies a condition its first spelling does not', async () => {
    // T1's version 1.00 matches and T2 must see it (session order): not returning it is a missing row.
    const h = await history('n::text = $1', ['1.00'], []);
    const r = checkHistory(h, { explain: false, shrink: false });
    expect(r.verdict).toBe('inconsistent');
  });

  it('still filters: a range on the key that no version satisfies is no conflict', async () => {
    const h = await history('n >= $1 AND n < $2', [100, 200], []);
    expect(checkHistory(h, { explain: false, shrink: false }).verdict).toBe('consistent');
    // ... and one every written key satisfies but T2 returns none of: missing rows.
    const h2 = await history('n >= $1 AND n < $2', [1, 200], []);
    expect(checkHistory(h2, { explain: false, shrink: false }).verdict).toBe('inconsistent');
  });
});
