// The history file format (history-format.md): the spec's example loads (plain and gzip), each malformed
// file in test/fixtures/bad gives its own error naming file and line (one problem, one line), truncated files
// load as truncated, and the writer's output reads back identically.
import { describe, expect, it } from 'vitest';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { readHistory } from '../src/history/reader.js';
import { HistoryFormatError, InputError } from '../src/history/input-errors.js';
import { loadPredicateParser } from '../src/sql/predicate.js';
import { buildModel } from '../src/checker/model/model.js';
import { HistoryWriter, writeHistoryFile } from '../src/history/writer.js';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';

const fixtures = join(import.meta.dirname, 'fixtures');

describe('history format', () => {
  it('loads the spec example, plain and gzip', async () => {
    for (const f of ['spec-example.ndjson', 'spec-example.ndjson.gz']) {
      const h = await readHistory(join(fixtures, 'ok', f));
      expect(h.truncated).toBe(false);
      expect(h.txns.map((t) => t.id)).toEqual(['a', 'b']);
      expect(h.tables.get('t')!.key).toEqual(['id']);
      expect(h.init.get('t')!.map((r) => r.row)).toEqual([{ id: 1, v: 0 }]);
      expect(h.meta).toEqual({ note: 'lost update' });
    }
  });

  it('accepts a file without the end line as truncated, also one cut mid-line', async () => {
    for (const f of ['truncated.ndjson', 'truncated-mid-line.ndjson']) {
      const h = await readHistory(join(fixtures, 'ok', f));
      expect(h.truncated).toBe(true);
      expect(h.txns.map((t) => t.id)).toEqual(['a']);
    }
  });

  const expectations: Record<string, RegExp> = {
    'malformed-json.ndjson': /:4: not valid JSON/,
    'missing-field.ndjson': /:4: txn "a": missing field "iso"/,
    'wrong-type.ndjson': /:4: txn "a": field "session" must be an integer >= 1/,
    'duplicate-wid.ndjson': /:5: .*duplicate wid "w1"/,
    'unknown-table.ndjson': /:4: .*unknown table "accounts"/,
    'seq-gap.ndjson': /session 1: seq numbers have gaps \(missing 2/,
    'seq-repeat.ndjson': /:5: txn "b": session 1 already has a transaction with seq 1/,
    'duplicate-txn-id.ndjson': /:5: txn "a": duplicate transaction id/,
    'wrong-value-type.ndjson': /:3: init of "t" rows\[0\]: column "v" = "zero" should be an integer/,
    'no-header.ndjson': /:1: the first line must be the "history" header/,
    'wrong-version.ndjson': /:1: unsupported version 2/,
    'unknown-level.ndjson': /:4: txn "a": unknown isolation level "SERIALIZABLE"/,
    'wrong-end-count.ndjson': /:5: "end" says 5 transactions, the file has 1/,
    'unknown-op.ndjson': /:4: .*unknown op "merge"/,
    'line-after-end.ndjson': /:5: line after the "end" line/,
    'wrong-key-arity.ndjson': /:4: .*key has 2 values, table "t" has key \(id\)/,
    'empty.ndjson': /:1: empty file/,
    'not-gzip.ndjson.gz': /:1: not a readable gzip file/,
    // hostile input (test/hostile-input.test.ts has the large cases)
    'proto-column.ndjson': /:3: init of "t" rows\[0\]: column "toString" is not a column of table "t"/,
    'proto-key.ndjson': /:2: table "t": key column "constructor" is not in "columns"/,
    'blank-where.ndjson': /:4: txn "a" event 1 \(select\): field "where" is blank/,
    'session-beyond-2-53.ndjson': /:4: txn "a": field "session" must be an integer >= 1 and at most 2\^53 - 1/,
    'int4-infinity.ndjson': new RegExp(
      String.raw`:3: init of "t" rows\[0\]: column "v" = a number beyond the range of a double \(read as ` +
        String.raw`Infinity\) should be an integer .* for int4`,
    ),
    'partial-row.ndjson': /:4: txn "a" event 1 \(select\) rows\[0\]: the row lacks column "v"/,
    'blank-line.ndjson': /:3: blank line/,
    'numeric-exponent.ndjson':
      /:3: .*column "n" = "1e999999999" should be a numeric with at most 131072 digits before the decimal point/,
    'int8-range.ndjson': new RegExp(
      ':3: .*column "id" = "9223372036854775808" should be an integer from -9223372036854775808 to ' +
        '9223372036854775807 for int8',
    ),
    'not-utf8.ndjson': /:3: not UTF-8 text/,
    'garbage-no-newline.ndjson': /:1: not valid JSON/,
  };

  it('has an expectation for every bad fixture', () => {
    const files = readdirSync(join(fixtures, 'bad')).sort();
    expect(
      files.filter(
        (f) => !(f in expectations) && f !== 'duplicate-init-key.ndjson' && f !== 'unsupported-where.ndjson',
      ),
    ).toEqual([]);
  });

  for (const [file, pattern] of Object.entries(expectations)) {
    it(`rejects ${file} with a clear error`, async () => {
      const path = join(fixtures, 'bad', file);
      const err = await readHistory(path).then(
        () => undefined,
        (e) => e,
      );
      expect(err).toBeInstanceOf(InputError);
      expect(err.message).toMatch(pattern);
      if (err instanceof HistoryFormatError) expect(err.message.startsWith(path)).toBe(true);
      if (err instanceof HistoryFormatError && file !== 'seq-gap.ndjson')
        expect(err.message.split('\n')).toHaveLength(1);
    });
  }

  it('rejects duplicate initial keys and unsupported WHERE clauses when building the model', async () => {
    await loadPredicateParser();
    const dup = await readHistory(join(fixtures, 'bad', 'duplicate-init-key.ndjson'));
    expect(() => buildModel(dup)).toThrow(/:3: init of "t" has two rows with key t\(1\)/);
    const unsupported = await readHistory(join(fixtures, 'bad', 'unsupported-where.ndjson'));
    expect(() => buildModel(unsupported)).toThrow(/:4: txn "a" event 1 \(select on t\): unsupported WHERE/);
  });

  it('reads a file that starts with a UTF-8 byte order mark', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'isocheck-bom-'));
    const file = join(dir, 'bom.ndjson');
    writeFileSync(
      file,
      Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), readFileSync(join(fixtures, 'ok', 'spec-example.ndjson'))]),
    );
    expect((await readHistory(file)).txns.map((t) => t.id)).toEqual(['a', 'b']);
  });

  it('reports a missing file as an input error', async () => {
    await expect(readHistory(join(fixtures, 'nope.ndjson'))).rejects.toThrow(/cannot read \(ENOENT\)/);
  });

  it('writes what it reads (plain and gzip)', async () => {
    const source = join(fixtures, 'ok', 'spec-example.ndjson');
    const lines = readFileSync(source, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    const dir = mkdtempSync(join(tmpdir(), 'isocheck-w-'));
    for (const name of ['out.ndjson', 'out.ndjson.gz']) {
      const out = join(dir, name);
      writeHistoryFile(out, lines);
      const a = await readHistory(source);
      const b = await readHistory(out);
      expect({ ...b, file: '' }).toEqual({ ...a, file: '' });
    }
  });
});

describe('history writer', () => {
  it("refuses a folder it cannot make at once (Node's recursive mkdir loops forever under /proc/self)", () => {
    const started = Date.now();
    expect(() => writeHistoryFile('/proc/self/isocheck-no-such/run.ndjson', [])).toThrow(/ENOENT|EACCES|EPERM|EROFS/);
    expect(Date.now() - started).toBeLessThan(2000);
  });
  it('makes missing folders for the file', () => {
    const dir = mkdtempSync(join(tmpdir(), 'isocheck-writer-'));
    writeHistoryFile(join(dir, 'a', 'b', 'run.ndjson'), [
      { kind: 'history', format: 'isocheck-history', version: 1, meta: {} },
    ]);
    expect(readFileSync(join(dir, 'a', 'b', 'run.ndjson'), 'utf8')).toMatch(/isocheck-history/);
  });
  it('says which transaction is too large for one line (a JSON text longer than the longest string)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'isocheck-writer-'));
    const w = new HistoryWriter(join(dir, 'run.ndjson'));
    // (V8's longest string: 2^29 - 24 characters; its JSON has two quotes more)
    const wide = 'x'.repeat(2 ** 29 - 24);
    const txn = { id: 's1.1', session: 1, seq: 1, iso: 'RC' as const, status: 'committed' as const, begin: 0, end: 1 };
    const events = [{ op: 'select' as const, table: 't', rows: [{ wid: 'init', row: { v: wide } }] }];
    expect(() => w.txn({ ...txn, events })).toThrow(/^transaction s1\.1 is too large for one line of the history/);
    w.txn({ ...txn, id: 's1.2', events: [] });
    w.end();
    expect(readFileSync(join(dir, 'run.ndjson'), 'utf8')).toMatch(/"id":"s1\.2"/);
  });
});
