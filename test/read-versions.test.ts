// The reader keeps each version a select returned once (src/history/read-versions.ts): a later row equal to it
// (same wid, same value in every column, no other field) is the same object; anything else is validated as it
// always was. Reading is otherwise unchanged: random and operational histories read back equal to what was
// written, with the same verdicts.
import { describe, expect, it, beforeAll } from 'vitest';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import seedrandom from 'seedrandom';
import { readHistory } from '../src/history/reader.js';
import { writeHistoryFile } from '../src/history/writer.js';
import { loadPredicateParser } from '../src/sql/predicate.js';
import { checkHistory } from '../src/checker/check.js';
import { historyFromLines, historyToLines, randomHistory } from './gen/random-history.js';
import { operationalHistoryLines } from './gen/operational.js';
import type { SelectEvent } from '../src/history/format.js';

const dir = mkdtempSync(join(tmpdir(), 'isocheck-read-versions-'));
let files = 0;
function file(lines: object[]): string {
  const f = join(dir, `h${files++}.ndjson`);
  writeFileSync(f, `${lines.map((l) => JSON.stringify(l)).join('\n')}\n`);
  return f;
}

const head = [
  { kind: 'history', format: 'isocheck-history', version: 1 },
  { kind: 'table', name: 't', key: ['a', 'b'], columns: { a: 'int4', b: 'int4', v: 'text' } },
  { kind: 'init', table: 't', rows: Array.from({ length: 12 }, (_, i) => ({ a: 1, b: i, v: 'x' })) },
];
const select = (rows: object[]) => ({ op: 'select', table: 't', where: 'a = 1', rows });
const txn = (id: string, seq: number, events: object[]) => ({
  kind: 'txn',
  id,
  session: 1,
  seq,
  iso: 'SER',
  status: 'committed',
  events,
});
const initRow = (b: number, v = 'x') => ({ wid: 'init', row: { a: 1, b, v } });

beforeAll(async () => {
  await loadPredicateParser();
});

describe('versions read', () => {
  it('are one object per version, past the short list too (12 init rows of one wid)', async () => {
    const all = Array.from({ length: 12 }, (_, b) => initRow(b));
    const h = await readHistory(file([...head, txn('t1', 1, [select(all)]), txn('t2', 2, [select(all)])]));
    const [r1, r2] = h.txns.map((t) => (t.events[0] as SelectEvent).rows);
    for (let b = 0; b < 12; b++) expect(r2[b]).toBe(r1[b]);
    expect(r1.map((r) => r.row.b)).toEqual([...Array(12).keys()]);
  });

  it('are not shared when they differ: the model still reports the wrong value', async () => {
    const h = await readHistory(
      file([...head, txn('t1', 1, [select([initRow(3)])]), txn('t2', 2, [select([initRow(3, 'y')])])]),
    );
    const [r1, r2] = h.txns.map((t) => (t.events[0] as SelectEvent).rows);
    expect(r2[0]).not.toBe(r1[0]);
    expect(r2[0].row.v).toBe('y');
    const result = checkHistory(h);
    expect(result.verdict).toBe('inconsistent');
    expect(result.anomalies.map((a) => a.type)).toContain('value-mismatch');
  });

  it('tell -0 from 0 (their texts differ in a float column): the row with -0 is its own (review finding)', async () => {
    // JSON.stringify writes -0 as 0: the lines are written by hand. t2's WHERE holds on 0 and not on -0 ('-0')
    const head2 = [
      '{"kind":"history","format":"isocheck-history","version":1}',
      '{"kind":"table","name":"t","key":["k"],"columns":{"k":"int4","v":"float8"}}',
      '{"kind":"init","table":"t","rows":[{"k":1,"v":0}]}',
    ];
    const t = (id: string, seq: number, event: string) =>
      `{"kind":"txn","id":"${id}","session":1,"seq":${seq},"iso":"SER","status":"committed","events":[${event}]}`;
    const f = join(dir, 'negative-zero.ndjson');
    writeFileSync(
      f,
      `${[
        ...head2,
        t('t1', 1, '{"op":"select","table":"t","rows":[{"wid":"init","row":{"k":1,"v":0}}]}'),
        t('t2', 2, `{"op":"select","table":"t","where":"v::text = '0'","rows":[{"wid":"init","row":{"k":1,"v":-0}}]}`),
      ].join('\n')}\n`,
    );
    const h = await readHistory(f);
    const [r1, r2] = h.txns.map((x) => (x.events[0] as SelectEvent).rows);
    expect(r2[0]).not.toBe(r1[0]);
    expect(Object.is(r2[0].row.v, -0)).toBe(true);
    const result = checkHistory(h);
    expect(result.verdict).toBe('inconsistent');
    expect(result.anomalies.map((a) => a.type)).toContain('predicate-mismatch');
  });

  it('validate a row equal to a kept one in its columns but with more: an extra column is refused', async () => {
    const extra = { wid: 'init', row: { a: 1, b: 3, v: 'x', w: 1 } };
    const f = file([...head, txn('t1', 1, [select([initRow(3)])]), txn('t2', 2, [select([extra])])]);
    await expect(readHistory(f)).rejects.toThrow(/column "w" is not a column of table "t"/);
  });

  it('read random and operational histories back as written, with the same verdicts', async () => {
    let shared = 0;
    for (let i = 0; i < 60; i++) {
      const lines =
        i % 2 === 0
          ? historyToLines(randomHistory(seedrandom(`rv-${i}`), { txns: [6, 14], keys: 3 }))
          : operationalHistoryLines(seedrandom(`rv-op-${i}`), { txns: [20, 30], keys: 4 });
      const f = join(dir, `rt${i}.ndjson`);
      writeHistoryFile(f, lines);
      const h = await readHistory(f);
      const written = lines.filter((l) => (l as { kind: string }).kind === 'txn');
      expect(h.txns.map((t) => t.events)).toEqual(written.map((l) => (l as { events: unknown }).events));
      expect(checkHistory(h).verdict, `history ${i}`).toBe(checkHistory(historyFromLines(lines)).verdict);
      const seen = new Set<object>();
      for (const t of h.txns)
        for (const e of t.events)
          if (e.op === 'select')
            for (const r of e.rows) {
              if (seen.has(r)) shared++;
              seen.add(r);
            }
    }
    expect(shared).toBeGreaterThan(50);
  });
});
