// isocheck merge (issue 19, "Load from several machines"): histories of several client processes against one
// database become one history. A read in one file of a write in another resolves (wids kept); sessions stay
// apart (kept when disjoint, renumbered when not; clashing transaction ids renamed); tables and initial rows must
// be identical (the error names both files, the line, the table and what differs); colliding wids are refused;
// gzip in and out; a truncated input gives a truncated merge; begin/end are shifted by meta.startedAt.
import { describe, expect, it } from 'vitest';
import { mkdtempSync, readFileSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { mergeHistories } from '../src/history/merge.js';
import { readHistory } from '../src/history/reader.js';
import { HistoryFormatError } from '../src/history/input-errors.js';
import { writeHistoryFile } from '../src/history/writer.js';
import { check } from '../src/checker/check-file.js';
import type { Line, TxnLine } from '../src/history/format.js';
import { HEADER, TABLE_T, registerLines, sel, upd, writeLines } from './helpers/lines.js';

const dir = mkdtempSync(join(tmpdir(), 'isocheck-merge-'));
let n = 0;
const outFile = (ext = 'ndjson') => join(dir, `m${++n}.${ext}`);
const txn = (id: string, session: number, seq: number, events: object[], extra: object = {}) =>
  ({ id, session, seq, iso: 'SER' as const, status: 'committed' as const, events, ...extra }) as unknown as Omit<
    TxnLine,
    'kind'
  >;

async function mergeError(files: string[]): Promise<string> {
  try {
    await mergeHistories(files, outFile());
  } catch (e) {
    expect(e).toBeInstanceOf(HistoryFormatError);
    return (e as Error).message;
  }
  throw new Error('merge succeeded');
}

describe('isocheck merge', () => {
  it(
    "joins two clients: a read of the other file's write resolves, sessions kept when disjoint, the end line " +
      'written',
    async () => {
      // client 1 (session 1) writes id 1; client 2 (session 2) reads that write and then writes id 2
      const a = writeLines(
        registerLines(
          [
            { id: 1, v: 0 },
            { id: 2, v: 0 },
          ],
          [txn('s1.1', 1, 1, [upd('s1.1.1', 1, 'init', 1)])],
        ),
      );
      const b = writeLines(
        registerLines(
          [
            { id: 1, v: 0 },
            { id: 2, v: 0 },
          ],
          [txn('s2.1', 2, 1, [sel(1, [{ wid: 's1.1.1', v: 1 }]), upd('s2.1.2', 2, 'init', 1)])],
        ),
      );
      expect((await check(b)).verdict).toBe('inconsistent'); // alone, the read names a write nobody made
      const out = outFile();
      const s = await mergeHistories([a, b], out);
      expect(s).toMatchObject({ transactions: 2, sessions: 2, renumbered: false, truncated: false });
      const h = await readHistory(out);
      expect(h.truncated).toBe(false);
      expect(h.txns.map((t) => [t.id, t.session, t.seq])).toEqual([
        ['s1.1', 1, 1],
        ['s2.1', 2, 1],
      ]);
      expect(h.init.get('t')!.map((r) => r.row)).toEqual([
        { id: 1, v: 0 },
        { id: 2, v: 0 },
      ]);
      expect((h.meta.merged as { files: { file: string }[] }).files.map((f) => f.file)).toEqual([a, b]);
      expect((await check(out)).verdict).toBe('consistent');
    },
  );

  it('renumbers overlapping sessions file after file and renames clashing transaction ids; wids are kept', async () => {
    const a = writeLines(
      registerLines(
        [{ id: 1, v: 0 }],
        [txn('t1', 1, 1, [upd('a1', 1, 'init', 1)]), txn('t2', 2, 1, [sel(1, [{ wid: 'a1', v: 1 }])])],
      ),
    );
    const b = writeLines(
      registerLines(
        [{ id: 1, v: 0 }],
        [txn('t1', 1, 1, [sel(1, [{ wid: 'a1', v: 1 }])]), txn('t1b', 1, 2, [upd('b1', 1, 'a1', 2)])],
      ),
    );
    const out = outFile();
    const s = await mergeHistories([a, b], out);
    expect(s.renumbered).toBe(true);
    expect(s.files.map((f) => [...f.sessions])).toEqual([
      [
        [1, 1],
        [2, 2],
      ],
      [[1, 3]],
    ]);
    const h = await readHistory(out);
    expect(h.txns.map((t) => [t.id, t.session, t.seq])).toEqual([
      ['t1', 1, 1],
      ['t2', 2, 1],
      ['t1~2', 3, 1],
      ['t1b', 3, 2],
    ]);
    expect(h.txns[3].events[0]).toMatchObject({ wid: 'b1', rows: [{ read: 'a1' }] });
    expect((await check(out)).verdict).toBe('consistent');
  });

  it('refuses two files writing the same wid: file, line and why', async () => {
    const a = writeLines(registerLines([{ id: 1, v: 0 }], [txn('s1.1', 1, 1, [upd('s1.1.1', 1, 'init', 1)])]));
    const b = writeLines(registerLines([{ id: 1, v: 0 }], [txn('x', 1, 1, [upd('s1.1.1', 1, 'init', 2)])]));
    const m = await mergeError([a, b]);
    expect(m).toBe(m.split('\n')[0]);
    expect(m).toContain(`${b}:4: txn "x": wid "s1.1.1" is also written in ${a}`);
    expect(m).toContain('--client K/N');
  });

  it(
    'refuses files of different databases: a table that differs, a missing table, an initial row that differs ' +
      'or is missing',
    async () => {
      const a = writeLines(
        registerLines(
          [
            { id: 1, v: 0 },
            { id: 2, v: 5 },
          ],
          [],
        ),
      );
      const otherType = writeLines([
        HEADER,
        { ...TABLE_T, columns: { id: 'int4', v: 'int8' } },
        { kind: 'end', transactions: 0 },
      ]);
      expect(await mergeError([a, otherType])).toBe(
        `${otherType}:2: table "t" differs from ${a}:2: column "v" is int4 there, int8 here (merged histories ` +
          `must be recorded against one database: the same tables and initial rows)`,
      );
      const noTable = writeLines([HEADER, { kind: 'end', transactions: 0 }]);
      expect(await mergeError([a, noTable])).toMatch(
        new RegExp(`^${noTable}:1: table "t" \\(declared in ${a}:2\\) is not in this file`),
      );
      const extra = writeLines([
        ...registerLines(
          [
            { id: 1, v: 0 },
            { id: 2, v: 5 },
          ],
          [],
        ).slice(0, 3),
        { kind: 'table', name: 'u', key: ['k'], columns: { k: 'text' } },
      ]);
      expect(await mergeError([a, extra])).toMatch(new RegExp(`^${extra}:4: table "u" is not in ${a}`));
      const otherRow = writeLines(
        registerLines(
          [
            { id: 1, v: 0 },
            { id: 2, v: 6 },
          ],
          [],
        ),
      );
      expect(await mergeError([a, otherRow])).toMatch(
        new RegExp(
          `^${otherRow}:3: initial row of table "t" with key \\(2\\) differs from ${a}:3: column "v" is 5 ` +
            `there, 6 here`,
        ),
      );
      const fewer = writeLines(registerLines([{ id: 1, v: 0 }], []));
      expect(await mergeError([a, fewer])).toMatch(
        new RegExp(`^${fewer}:2: table "t": the initial row with key \\(2\\) \\(${a}:3\\) is not in this file`),
      );
      const more = writeLines(
        registerLines(
          [
            { id: 1, v: 0 },
            { id: 2, v: 5 },
            { id: 3, v: 0 },
          ],
          [],
        ),
      );
      expect(await mergeError([a, more])).toMatch(
        new RegExp(`^${more}:3: initial row of table "t" with key \\(3\\) is not among ${a}'s initial rows`),
      );
    },
  );

  it(
    'reports a malformed input as the reader does, and refuses standard input, a file given twice, or -o an ' + 'input',
    async () => {
      const a = writeLines(registerLines([{ id: 1, v: 0 }], []));
      const bad = writeLines([...registerLines([{ id: 1, v: 0 }], []).slice(0, 3), { kind: 'txn', id: 'x' }]);
      expect(await mergeError([a, bad])).toMatch(new RegExp(`^${bad}:4: txn "x": missing field "session"`));
      await expect(mergeHistories(['-', a], outFile())).rejects.toThrow(/standard input cannot be merged/);
      await expect(mergeHistories([a, a], outFile())).rejects.toThrow(/given twice/);
      await expect(mergeHistories([a], a)).rejects.toThrow(/is one of the inputs/);
    },
  );

  it(
    "reads and writes gzip, keeps a truncated input's " + 'truncation, and shifts begin/end by meta.startedAt',
    async () => {
      const header = (startedAt: string): Line =>
        ({ ...HEADER, meta: { workload: 'w', startedAt, client: startedAt } }) as Line;
      const a = join(dir, 'a.ndjson.gz');
      writeHistoryFile(a, [
        header('2026-01-01T00:00:00.000Z'),
        TABLE_T,
        { kind: 'init', table: 't', rows: [{ id: 1, v: 0 }] },
        { kind: 'txn', ...txn('s1.1', 1, 1, [upd('s1.1.1', 1, 'init', 1)], { begin: 10, end: 20 }) },
        { kind: 'end', transactions: 1 },
      ] as Line[]);
      const b = join(dir, 'b.ndjson');
      writeHistoryFile(b, [
        header('2026-01-01T00:00:01.500Z'),
        TABLE_T,
        { kind: 'init', table: 't', rows: [{ id: 1, v: 0 }] },
        { kind: 'txn', ...txn('s2.1', 2, 1, [sel(1, [{ wid: 's1.1.1', v: 1 }])], { begin: 1, end: 2 }) },
      ] as Line[]); // no end line
      const out = outFile('ndjson.gz');
      const s = await mergeHistories([a, b], out);
      expect(s.truncated).toBe(true);
      expect(gunzipSync(readFileSync(out)).toString()).not.toContain('"kind":"end"');
      const h = await readHistory(out);
      expect(h.truncated).toBe(true);
      expect(h.txns.map((t) => [t.begin, t.end])).toEqual([
        [10, 20],
        [1501, 1502],
      ]);
      expect(h.meta).toMatchObject({
        workload: 'w',
        merged: {
          files: [
            { meta: { client: '2026-01-01T00:00:00.000Z' } },
            { meta: { client: '2026-01-01T00:00:01.500Z' }, truncated: true },
          ],
        },
      });
    },
  );
});
