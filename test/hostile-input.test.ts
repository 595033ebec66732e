// Hostile input never crashes, hangs or fools `isocheck check` (docs/history-format.md, "Limits"): one test per
// class of defect users met. Each runs the real CLI (built first, as test/cli.test.ts does) or the library, and
// asserts exit 2 with one `FILE:LINE: reason` line naming the field, no stack trace, and a bounded time. The big
// inputs (gzip bombs) are made here with zlib: a few hundred MB to a GB unpacked, a few MB on disk.
import { beforeAll, describe, expect, it } from 'vitest';
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { writeFile } from 'node:fs/promises';
import { gzipSync } from 'node:zlib';
import { check } from '../src/checker/check-file.js';
import { checkHistory } from '../src/checker/check.js';
import { buildModel, predicateHolds } from '../src/checker/model/model.js';
import { loadPredicateParser } from '../src/sql/predicate.js';
import { readHistory } from '../src/history/reader.js';
import { InputError } from '../src/history/input-errors.js';
import type { History } from '../src/history/history.js';

const root = join(import.meta.dirname, '..');
const bin = join(root, 'bin', 'isocheck.js');
let dir: string;

interface Run {
  status: number | null;
  out: string;
  ms: number;
}

function run(args: string[], input?: Buffer | string): Run {
  const started = performance.now();
  const r = spawnSync(process.execPath, [bin, ...args], {
    cwd: root,
    input,
    encoding: 'utf8',
    timeout: 60_000,
    maxBuffer: 64 * 1024 * 1024,
  });
  return { status: r.status, out: r.stdout + r.stderr, ms: performance.now() - started };
}

/** Exit 2, exactly one `FILE:LINE: ...` problem line, matching `reason`, and nothing like a stack trace. */
function expectOneError(r: Run, file: string, line: number, reason: RegExp): void {
  expect(r.out).not.toMatch(/\n\s+at |internal error|RangeError|PredicateError/);
  expect(r.status, r.out).toBe(2);
  const problems = r.out.split('\n').filter((l) => /^\s*\S+:\d+: /.test(l));
  expect(problems, r.out).toHaveLength(1);
  expect(problems[0].trim().startsWith(`${file}:${line}: `), r.out).toBe(true);
  expect(problems[0]).toMatch(reason);
}

/** A History built in memory (library use): t(id, v) with one initial row, no transactions yet. */
const memoryHistory = (): History => ({
  file: 'mem.ndjson',
  meta: {},
  tables: new Map([['t', { name: 't', key: ['id'], columns: { id: 'int4', v: 'int4' }, line: 2 }]]),
  init: new Map([['t', [{ row: { id: 1, v: 0 }, line: 3 }]]]),
  txns: [],
  truncated: false,
});

const HEADER = { kind: 'history', format: 'isocheck-history', version: 1, meta: {} };
const TABLE = { kind: 'table', name: 't', key: ['id'], columns: { id: 'int4', v: 'int4' } };
const INIT = { kind: 'init', table: 't', rows: [{ id: 1, v: 0 }] };
const txn = (id: string, session: number | string, seq: number | string, events: unknown[], iso = 'SER') =>
  `{"kind":"txn","id":"${id}","session":${session},"seq":${seq},"iso":"${iso}","status":"committed",` +
  `"events":${JSON.stringify(events)}}`;
const lines = (...ls: (object | string)[]) =>
  `${ls.map((l) => (typeof l === 'string' ? l : JSON.stringify(l))).join('\n')}\n`;

function write(name: string, content: string | Buffer): string {
  const f = join(dir, name);
  writeFileSync(f, content);
  return f;
}

/** A gzip file of `members` copies of one gzip member of `chunk` (concatenated members are one gzip stream). */
function gzipBomb(name: string, head: string, chunk: Buffer, members: number): string {
  const member = gzipSync(chunk, { level: 9 });
  return write(name, Buffer.concat([gzipSync(head), ...Array.from({ length: members }, () => member)]));
}

beforeAll(() => {
  execFileSync(
    process.execPath,
    [join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.build.json'],
    { cwd: root, stdio: 'inherit' },
  );
  dir = mkdtempSync(join(tmpdir(), 'isocheck-hostile-'));
  return () => rmSync(dir, { recursive: true, force: true });
}, 120_000);

describe('1. crashes', () => {
  it('a .gz that unpacks to one 1 GiB line is refused at its line, in seconds, without buffering it', () => {
    const f = gzipBomb(
      'one-line.ndjson.gz',
      `${JSON.stringify(HEADER)}\n{"kind":"table","name":"`,
      Buffer.alloc(16 * 1024 * 1024, 'a'),
      64,
    );
    const r = run(['check', f]);
    expectOneError(r, f, 2, /line longer than 64 MiB \(the limit; raise it with --max-line-mb\)/);
    expect(r.ms).toBeLessThan(20_000);
  }, 60_000);

  it(
    'params nested 100,000 deep are refused naming params (JSON.stringify and recursive validators would ' +
      'overflow the stack)',
    () => {
      const deep = '['.repeat(100_000) + ']'.repeat(100_000);
      const f = write(
        'deep-params.ndjson',
        lines(
          HEADER,
          TABLE,
          INIT,
          '{"kind":"txn","id":"a","session":1,"seq":1,"iso":"SER","status":"committed",' +
            `"events":[{"op":"select","table":"t","where":"id = $1","params":[${deep}],"rows":[]}]}`,
          { kind: 'end', transactions: 1 },
        ),
      );
      expectOneError(run(['check', f]), f, 4, /nested deeper than 64 levels \(at events\[0\]\.params\[0\]/);
      // nested less deep than the line limit, but deeper than params may be
      const f2 = write(
        'deep-params-40.ndjson',
        lines(
          HEADER,
          TABLE,
          INIT,
          txn('a', 1, 1, [
            {
              op: 'select',
              table: 't',
              where: 'id = $1',
              params: [JSON.parse('['.repeat(40) + ']'.repeat(40))],
              rows: [],
            },
          ]),
          { kind: 'end', transactions: 1 },
        ),
      );
      expectOneError(run(['check', f2]), f2, 4, /txn "a" event 1 \(select\): "params" nested deeper than 32 levels/);
    },
  );

  it('deep params in a History built in memory are an InputError, not a stack overflow', async () => {
    let deep: unknown = 1;
    for (let i = 0; i < 100_000; i++) deep = [deep];
    const h = memoryHistory();
    h.txns.push({
      kind: 'txn',
      id: 'a',
      session: 1,
      seq: 1,
      iso: 'SER',
      status: 'committed',
      line: 4,
      events: [{ op: 'select', table: 't', where: 'id = $1', params: [deep], rows: [] }],
    });
    // check() holds it to the format, as a file
    await expect(check(h)).rejects.toThrow(
      /^mem\.ndjson:4: JSON nested deeper than 64 levels \(at events\[0\]\.params\[0\]/,
    );
    // and the model refuses it too (checkHistory does not validate)
    await loadPredicateParser();
    expect(() => checkHistory(h)).toThrow(
      /^mem\.ndjson:4: txn "a" event 1 \(select on t\): "params" nested deeper than 32 levels$/,
    );
  });
});

describe('2. hangs', () => {
  it('a .gz of 1 GiB of newlines is refused at the first blank line, in seconds', () => {
    const f = gzipBomb('newlines.ndjson.gz', `${JSON.stringify(HEADER)}\n`, Buffer.alloc(16 * 1024 * 1024, '\n'), 64);
    const r = run(['check', f]);
    expectOneError(r, f, 2, /blank line/);
    expect(r.ms).toBeLessThan(10_000);
  });

  it('a line packed with millions of {} is refused before JSON.parse (which takes minutes on it)', () => {
    const events = `${'{},'.repeat(3_000_000)}{}`;
    const f = write(
      'dense.ndjson',
      lines(
        HEADER,
        TABLE,
        `{"kind":"txn","id":"a","session":1,"seq":1,"iso":"SER","status":"committed","events":[${events}]}`,
      ),
    );
    const r = run(['check', '--max-line-mb', '16', f]);
    expectOneError(
      r,
      f,
      3,
      /more than 1398101 JSON objects and arrays in one line \(at most one per 12 bytes of the line limit, 16 MiB/,
    );
    expect(r.ms).toBeLessThan(10_000);
    // an object of millions of members (Object.keys alone takes seconds); a table of more columns than PostgreSQL
    // allows
    const members = Array.from({ length: 2_000_000 }, (_, i) => `"c${i}":"int4"`).join(',');
    const wide = write('wide.ndjson', lines(HEADER, `{"kind":"table","name":"t","key":["c0"],"columns":{${members}}}`));
    const w = run(['check', wide]);
    expectOneError(w, wide, 2, /more than 65536 members in one JSON object \(a table has at most 1600 columns\)/);
    expect(w.ms).toBeLessThan(10_000);
    const cols = Object.fromEntries(Array.from({ length: 1601 }, (_, i) => [`c${i}`, 'int4']));
    const many = write('many-columns.ndjson', lines(HEADER, { kind: 'table', name: 't', key: ['c0'], columns: cols }));
    expectOneError(run(['check', many]), many, 2, /table "t": more than 1600 columns \(PostgreSQL's limit\)/);
  });

  it('the total size after decompression is bounded (--max-input-gb)', () => {
    const f = gzipBomb(
      'init-bomb.ndjson.gz',
      lines(HEADER, TABLE),
      Buffer.from(`${JSON.stringify(INIT)}\n`.repeat(100_000)),
      1,
    );
    expectOneError(
      run(['check', '--max-input-gb', '0.0000001', f]),
      f,
      2,
      /the input is larger than 107 bytes \(after decompression; the limit: raise it with --max-input-gb\)/,
    );
  });
});

describe('3. verdicts on malformed files', () => {
  const PROTO = Object.getOwnPropertyNames(Object.prototype);

  /** A history over one table per name (every name also a column, and the key of its table): a lost update per
   *  table (inconsistent at SI, consistent at RC), plus a range read, an insert, a delete and a full scan. */
  function namedHistory(names: string[]): string {
    const out: (object | string)[] = [HEADER];
    const cols = (f: (c: string, i: number) => unknown) => Object.fromEntries(names.map((c, i) => [c, f(c, i)]));
    for (const t of names) out.push({ kind: 'table', name: t, key: [t], columns: cols(() => 'int4') });
    for (const t of names)
      out.push({ kind: 'init', table: t, rows: [1, 2].map((k) => cols((c) => (c === t ? k : 0))) });
    let n = 0;
    names.forEach((t, i) => {
      const v = names[(i + 1) % names.length];
      const row = (k: number, x: number) => cols((c) => (c === t ? k : c === v ? x : 0));
      const q = (c: string) => `"${c.replace(/"/g, '""')}"`;
      out.push(
        txn(
          `a${i}`,
          3 * i + 1,
          1,
          [
            { op: 'select', table: t, where: `${q(t)} = $1`, params: [1], rows: [{ wid: 'init', row: row(1, 0) }] },
            {
              op: 'update',
              table: t,
              where: `${q(t)} = $1`,
              params: [1],
              wid: `a${i}.1`,
              rows: [{ read: 'init', row: row(1, 1) }],
            },
          ],
          'SI',
        ),
      );
      out.push(
        txn(
          `b${i}`,
          3 * i + 2,
          1,
          [
            {
              op: 'select',
              table: t,
              where: `${q(t)} >= $1 AND ${q(v)} = $2`,
              params: [1, 0],
              rows: [
                { wid: 'init', row: row(1, 0) },
                { wid: 'init', row: row(2, 0) },
              ],
            },
            {
              op: 'update',
              table: t,
              where: `${q(t)} = $1`,
              params: [1],
              wid: `b${i}.1`,
              rows: [{ read: 'init', row: row(1, 2) }],
            },
          ],
          'SI',
        ),
      );
      out.push(
        txn(
          `c${i}`,
          3 * i + 3,
          1,
          [
            { op: 'insert', table: t, wid: `c${i}.1`, rows: [{ row: row(3, 3) }] },
            {
              op: 'delete',
              table: t,
              where: `${q(t)} = $1`,
              params: [2],
              wid: `c${i}.2`,
              rows: [{ read: 'init', key: [2] }],
            },
            {
              op: 'select',
              table: t,
              rows: [
                { wid: 'init', row: row(1, 0) },
                { wid: `c${i}.1`, row: row(3, 3) },
              ],
            },
          ],
          'SI',
        ),
      );
      n += 3;
    });
    out.push({ kind: 'end', transactions: n });
    return lines(...out);
  }

  const summary = (r: Run) => {
    const j = JSON.parse(r.out);
    return {
      verdict: j.verdict,
      anomalies: (j.anomalies as { type: string }[]).map((a) => a.type).sort(),
      committed: j.stats.committed,
    };
  };

  it('every name of Object.prototype as a table, column and key column checks like an ordinary name', () => {
    expect(PROTO).toContain('__proto__');
    const proto = write('proto-names.ndjson', namedHistory(PROTO));
    const plain = write('plain-names.ndjson', namedHistory(PROTO.map((_, i) => `c${i}`)));
    for (const iso of [[], ['--iso', 'RC']]) {
      const a = run(['check', '--json', '--no-shrink', ...iso, plain]);
      const b = run(['check', '--json', '--no-shrink', ...iso, proto]);
      expect(a.status, a.out).toBe(iso.length ? 0 : 1);
      expect(b.status, b.out).toBe(a.status);
      expect(summary(b)).toEqual(summary(a));
    }
    // and the report renders them
    const report = run(['check', '--no-shrink', '--report', join(dir, 'proto.html'), proto]);
    expect(report.status, report.out).toBe(1);
    expect(readFileSync(join(dir, 'proto.html'), 'utf8')).toContain('__defineGetter__');
  }, 60_000);

  it('every name of Object.prototype used undeclared is an ' +
    'error at its line (rows, key columns, tables, WHERE)', async () => {
    const cols = (extra: string) =>
      Object.fromEntries([
        ['id', 1],
        ['v', 0],
        [extra, 1],
      ]);
    const rows = write(
      'proto-rows.ndjson',
      lines(HEADER, TABLE, ...PROTO.map((c) => ({ kind: 'init', table: 't', rows: [cols(c)] }))),
    );
    const keys = write(
      'proto-keys.ndjson',
      lines(
        HEADER,
        ...PROTO.map((c, i) => ({ kind: 'table', name: `t${i}`, key: [c], columns: { id: 'int4', v: 'int4' } })),
      ),
    );
    const tables = write(
      'proto-tables.ndjson',
      lines(HEADER, TABLE, ...PROTO.map((t, i) => txn(`x${i}`, i + 1, 1, [{ op: 'select', table: t, rows: [] }]))),
    );
    const inits = write(
      'proto-inits.ndjson',
      lines(HEADER, TABLE, ...PROTO.map((t) => ({ kind: 'init', table: t, rows: [] }))),
    );
    for (const [f, re] of [
      [rows, (c: string) => `column "${c}" is not a column of table "t"`],
      [keys, (c: string) => `key column "${c}" is not in "columns"`],
      [tables, (c: string) => `unknown table "${c}"`],
      [inits, (c: string) => `init: unknown table "${c}"`],
    ] as const) {
      const r = run(['check', f]);
      expect(r.status, r.out).toBe(2);
      expect(r.out).not.toMatch(/\n\s+at |internal error/);
      const problems = r.out
        .split('\n')
        .filter((l) => /^\s*\S+:\d+: /.test(l))
        .map((l) => l.trim());
      expect(problems, r.out).toHaveLength(PROTO.length);
      PROTO.forEach((c, i) => {
        expect(problems[i].startsWith(`${f}:${i + (f === keys ? 2 : 3)}: `), problems[i]).toBe(true);
        expect(problems[i]).toContain(re(c));
      });
    }
    // a WHERE that names an undeclared column: refused when the model compiles it
    for (const c of PROTO) {
      const f = write(
        'proto-where.ndjson',
        lines(HEADER, TABLE, INIT, txn('a', 1, 1, [{ op: 'select', table: 't', where: `"${c}" = 1`, rows: [] }]), {
          kind: 'end',
          transactions: 1,
        }),
      );
      const e = await check(f).then(
        () => undefined,
        (x) => x,
      );
      expect(e, c).toBeInstanceOf(InputError);
      expect(e.message).toMatch(
        new RegExp(
          `^${f.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}:4: txn "a" event 1 \\(select on t\\): unsupported ` +
            `WHERE: .*unknown column "${c}"`,
        ),
      );
    }
  }, 60_000);

  it('an empty or blank where is an error, not TRUE', () => {
    for (const where of ['', '   ', '\t\n']) {
      const f = write(
        'blank-where.ndjson',
        lines(HEADER, TABLE, INIT, txn('a', 1, 1, [{ op: 'select', table: 't', where, rows: [] }]), {
          kind: 'end',
          transactions: 1,
        }),
      );
      expectOneError(run(['check', f]), f, 4, /txn "a" event 1 \(select\): field "where" is blank/);
    }
  });

  it(
    'session and seq numbers beyond 2^53 are errors, not rounded into one session (an invented read-your-writes ' +
      'violation)',
    () => {
      const write1 = {
        op: 'update',
        table: 't',
        where: 'id = $1',
        params: [1],
        wid: 'w1',
        rows: [{ read: 'init', row: { id: 1, v: 1 } }],
      };
      const read0 = {
        op: 'select',
        table: 't',
        where: 'id = $1',
        params: [1],
        rows: [{ wid: 'init', row: { id: 1, v: 0 } }],
      };
      // 2^53 + 1 and 2^53 are both read as 2^53: two sessions would become one
      const f = write(
        'big-session.ndjson',
        lines(
          HEADER,
          TABLE,
          INIT,
          txn('a', '9007199254740993', 1, [write1]),
          txn('b', '9007199254740992', 2, [read0]),
          {
            kind: 'end',
            transactions: 2,
          },
        ),
      );
      const r = run(['check', f]);
      expect(r.status, r.out).toBe(2);
      expect(r.out).toMatch(
        new RegExp(`${f}:4: txn "a": field "session" must be an integer >= 1 and at most 2\\^53 - 1`),
      );
      expect(r.out).not.toMatch(/READ-YOUR-WRITES|INCONSISTENT/);
      const g = write(
        'big-seq.ndjson',
        lines(HEADER, TABLE, INIT, txn('a', 1, '9007199254740993', [read0]), { kind: 'end', transactions: 1 }),
      );
      expectOneError(run(['check', g]), g, 4, /txn "a": field "seq" must be an integer >= 1 and at most 2\^53 - 1/);
      const h = write('big-end.ndjson', lines(HEADER, TABLE, INIT, '{"kind":"end","transactions":9007199254740993}'));
      expectOneError(run(['check', h]), h, 4, /end: field "transactions" must be a count/);
    },
  );

  it('values outside their type are errors: int2/int4/int8 ranges, numeric limits without expanding, finite ' +
    'floats, dates', () => {
    const typed = (type: string, value: string) =>
      lines(
        HEADER,
        { kind: 'table', name: 't', key: ['id'], columns: { id: 'int4', x: type } },
        `{"kind":"init","table":"t","rows":[{"id":1,"x":${value}}]}`,
      );
    const cases: [string, string, RegExp][] = [
      ['int2', '32768', /= 32768 should be an integer \(JSON number\) from -32768 to 32767 for int2/],
      ['int4', '-2147483649', /should be an integer \(JSON number\) from -2147483648 to 2147483647 for int4/],
      [
        'int8',
        '"-9223372036854775809"',
        /should be an integer from -9223372036854775808 to 9223372036854775807 for int8/,
      ],
      ['int8', '"1e3"', /should be an integer as a JSON string for int8/],
      [
        'numeric',
        `"1${'0'.repeat(131072)}"`,
        /should be a numeric with at most 131072 digits before the decimal point/,
      ],
      ['numeric', '"1e-999999999"', /should be a numeric with at most 16383 digits after the decimal point/],
      ['numeric', '"1e999999999999999999999"', /at most 131072 digits before/],
      ['float8', '1e400', /= a number beyond the range of a double \(read as Infinity\) should be a finite number/],
      ['float4', '1e39', /should be a finite number within the range of float4/],
      ['date', '"99999999-01-01"', /should be a valid date value/],
      ['timestamp', '"300000-01-01 00:00:00"', /should be a valid timestamp value/],
    ];
    for (const [type, value, re] of cases) {
      const f = write(`value-${type}.ndjson`, typed(type, value));
      const r = run(['check', f]);
      expectOneError(r, f, 3, re);
      expect(r.ms).toBeLessThan(10_000);
    }
  }, 60_000);
});

describe('4. misleading reasons', () => {
  it('an undeclared key column is named as such, not as "two rows with key u()"', () => {
    const f = write(
      'undeclared-key.ndjson',
      lines(HEADER, { kind: 'table', name: 'u', key: ['hasOwnProperty'], columns: { id: 'int4' } }),
    );
    expectOneError(
      run(['check', f]),
      f,
      2,
      /table "u": key column "hasOwnProperty" is not in "columns" \(declared: "id"\)/,
    );
  });

  it(
    '1e400 for an int4 is named as a number beyond a double, not "= null"; an object is "an object", not ' +
      '[object Object]',
    () => {
      const inf = write('inf.ndjson', lines(HEADER, TABLE, '{"kind":"init","table":"t","rows":[{"id":1,"v":1e400}]}'));
      const r = run(['check', inf]);
      expectOneError(
        r,
        inf,
        3,
        /column "v" = a number beyond the range of a double \(read as Infinity\) should be an integer/,
      );
      expect(r.out).not.toMatch(/= null/);
      const obj = write(
        'obj.ndjson',
        lines(HEADER, TABLE, '{"kind":"init","table":"t","rows":[{"id":1,"v":{"a":1}}]}'),
      );
      const o = run(['check', obj]);
      expectOneError(o, obj, 3, /column "v" has a non-scalar value \(an object\)/);
      const param = write(
        'obj-param.ndjson',
        lines(
          HEADER,
          TABLE,
          INIT,
          txn('a', 1, 1, [{ op: 'select', table: 't', where: 'id = $1', params: [{ a: 1 }], rows: [] }]),
          { kind: 'end', transactions: 1 },
        ),
      );
      expect(run(['check', param]).out).not.toMatch(/\[object Object\]/);
    },
  );

  it('a 50 MB garbage line without a newline is "not valid JSON" at line 1, not "empty file"', () => {
    const f = write('garbage.ndjson', Buffer.alloc(50 * 1024 * 1024, 'x'));
    const r = run(['check', f]);
    expectOneError(r, f, 1, /not valid JSON/);
    expect(r.out).not.toMatch(/empty file/);
  });

  it('every error names a line: a .gz that is not gzip, corrupt gzip data, a seq gap', () => {
    const notGz = write('plain.ndjson.gz', lines(HEADER));
    expectOneError(run(['check', notGz]), notGz, 1, /not a readable gzip file/);
    // one gzip member per line, as the recorder writes; the member of line 2003 damaged
    const members = [
      HEADER,
      TABLE,
      ...Array.from({ length: 3000 }, (_, i) =>
        txn(`a${i}`, 1, i + 1, [{ op: 'insert', table: 't', wid: `w${i}`, rows: [{ row: { id: i, v: 0 } }] }]),
      ),
    ].map((l) => gzipSync(lines(l)));
    members[2002].fill(0x55, 12, members[2002].length - 8);
    const bad = write('corrupt.ndjson.gz', Buffer.concat(members));
    const r = run(['check', bad]);
    expect(r.status).toBe(2);
    const at = Number(new RegExp(`${bad}:(\\d+): the gzip data is corrupt at or after this line`).exec(r.out)?.[1]);
    expect(at, r.out).toBeGreaterThan(1500); // what zlib decoded before the damage is read (up to 64 KiB may be lost)
    expect(at).toBeLessThanOrEqual(2003);
    const gap = write(
      'gap.ndjson',
      lines(HEADER, TABLE, INIT, txn('a', 1, 1, []), txn('b', 1, 3, []), { kind: 'end', transactions: 2 }),
    );
    expectOneError(run(['check', gap]), gap, 5, /session 1: seq numbers have gaps \(missing 2/);
  });
});

describe('5. a row without a column its WHERE reads', () => {
  it("is a malformed file at the row's line, not a PredicateError deep in the checker", () => {
    const sel = write(
      'partial-select.ndjson',
      lines(
        HEADER,
        TABLE,
        INIT,
        txn('a', 1, 1, [{ op: 'select', table: 't', where: 'v = 0', rows: [{ wid: 'init', row: { id: 1 } }] }]),
        { kind: 'end', transactions: 1 },
      ),
    );
    expectOneError(
      run(['check', sel]),
      sel,
      4,
      /txn "a" event 1 \(select\) rows\[0\]: the row lacks column "v" of table "t"/,
    );
    const init = write(
      'partial-init.ndjson',
      lines(
        HEADER,
        TABLE,
        { kind: 'init', table: 't', rows: [{ id: 1 }] },
        txn('a', 1, 1, [{ op: 'select', table: 't', where: 'v = 0', rows: [] }]),
        { kind: 'end', transactions: 1 },
      ),
    );
    expectOneError(run(['check', init]), init, 3, /init of "t" rows\[0\]: the row lacks column "v"/);
  });

  it("in a History built in memory, is an InputError naming the statement's and the writer's lines", async () => {
    await loadPredicateParser();
    const h = memoryHistory();
    h.txns.push({
      kind: 'txn',
      id: 'a',
      session: 1,
      seq: 1,
      iso: 'SER',
      status: 'committed',
      line: 4,
      events: [{ op: 'insert', table: 't', wid: 'w', rows: [{ row: { id: 2 } as never }] }],
    });
    await expect(check(h)).rejects.toThrow(
      /^mem\.ndjson:4: txn "a" event 1 \(insert\) rows\[0\]: the row lacks column "v"/,
    );
    expect(() => checkHistory(h)).toThrow(
      /^mem\.ndjson:4: txn "a" event 1 \(insert on t\) rows\[0\]: the row lacks column "v"/,
    );
    // a value the WHERE cannot read: the statement's line and the line of the row's writer
    const g = memoryHistory();
    g.init.set('t', [{ row: { id: 1, v: 'zero' as never }, line: 3 }]);
    g.txns.push({
      kind: 'txn',
      id: 'a',
      session: 1,
      seq: 1,
      iso: 'SER',
      status: 'committed',
      line: 4,
      events: [
        { op: 'select', table: 't', where: 'v = 0', rows: [{ wid: 'init', row: { id: 1, v: 'zero' as never } }] },
      ],
    });
    await expect(check(g)).rejects.toThrow(
      /^mem\.ndjson:3: init of "t" rows\[0\]: column "v" = "zero" should be an integer/,
    );
    const e = (() => {
      try {
        checkHistory(g);
      } catch (x) {
        return x as Error;
      }
    })();
    expect(e).toBeInstanceOf(InputError);
    expect(e!.message).toMatch(
      new RegExp(
        String.raw`^mem\.ndjson:4: txn "a" event 1 \(select on t\): cannot evaluate its WHERE on a row written ` +
          String.raw`by the initial rows \(version init\): `,
      ),
    );
    // a valid History built in memory is checked as usual
    const ok = memoryHistory();
    ok.txns.push({
      kind: 'txn',
      id: 'a',
      session: 1,
      seq: 1,
      iso: 'SER',
      status: 'committed',
      line: 4,
      events: [{ op: 'select', table: 't', where: 'v = 0', rows: [{ wid: 'init', row: { id: 1, v: 0 } }] }],
    });
    expect((await check(ok)).verdict).toBe('consistent');
  });
});

describe('5b. a WHERE the evaluator cannot apply to a version nobody returned', () => {
  it(
    'predicateHolds (for the conflict search and the witness) turns PredicateError into an InputError with both ' +
      'lines',
    async () => {
      await loadPredicateParser();
      // valid history; the evaluator casts text to date in ISO format only ("Jan 5 2020" may be valid in PostgreSQL)
      const f = write(
        'unsupported-cast.ndjson',
        lines(
          HEADER,
          { kind: 'table', name: 't', key: ['id'], columns: { id: 'int4', d: 'text' } },
          {
            kind: 'init',
            table: 't',
            rows: [
              { id: 1, d: 'Jan 5 2020' },
              { id: 2, d: '2020-01-01' },
            ],
          },
          txn('a', 1, 1, [
            {
              op: 'select',
              table: 't',
              where: "d::date > '2019-06-01'",
              rows: [{ wid: 'init', row: { id: 2, d: '2020-01-01' } }],
            },
          ]),
          { kind: 'end', transactions: 1 },
        ),
      );
      const model = buildModel(await readHistory(f));
      const read = model.reads[0];
      expect(predicateHolds(model, read, { id: 2, d: '2020-01-01' }, 0)).toBe(true);
      expect(() => predicateHolds(model, read, model.initRow[model.tables[0].initKeys[0]]!, 0)).toThrow(
        new RegExp(
          `^${f}:4: txn "a" event 1 \\(select on t\\): cannot evaluate its WHERE on a row written by the ` +
            `initial rows: .*unsupported date input format "Jan 5 2020"`,
        ),
      );
    },
  );

  it('--timeout holds however costly the WHEREs: 20,000 ORs evaluated on every version of 4,000 keys', () => {
    // unbounded, this history takes ~13 s (the WHERE on every version, for the conflict search); with --timeout 1
    // the budget is consulted inside the evaluation too
    const where = Array.from({ length: 20_000 }, (_, i) => `v = ${i}`).join(' OR ');
    const init = { kind: 'init', table: 't', rows: Array.from({ length: 4000 }, (_, i) => ({ id: i + 1, v: i })) };
    const txns = Array.from({ length: 60 }, (_, i) =>
      txn(`r${i}`, i + 1, 1, [
        {
          op: 'update',
          table: 't',
          where: 'id = $1',
          params: [i + 1],
          wid: `w${i}`,
          rows: [{ read: 'init', row: { id: i + 1, v: 100_000 + i } }],
        },
        { op: 'select', table: 't', where, rows: [] },
      ]),
    );
    const f = write(
      'costly-where.ndjson',
      lines(HEADER, TABLE, init, ...txns, { kind: 'end', transactions: txns.length }),
    );
    const r = run(['check', '--timeout', '1', '--json', f]);
    expect(r.out).not.toMatch(/\n\s+at |internal error/);
    expect(r.status, r.out.slice(-300)).toBe(3); // unknown: stopped by the limit
    expect(r.ms).toBeLessThan(1000 + 5000); // the limit, plus starting node and reading 1.3 MB
  });

  it(
    'a valid file whose WHERE cannot be applied to a row no read returned is one error, not a crash in the ' +
      'conflict search',
    () => {
      const f = write(
        'unsupported-cast-cli.ndjson',
        lines(
          HEADER,
          { kind: 'table', name: 't', key: ['id'], columns: { id: 'int4', d: 'text' } },
          {
            kind: 'init',
            table: 't',
            rows: [
              { id: 1, d: 'Jan 5 2020' },
              { id: 2, d: '2020-01-01' },
            ],
          },
          txn('a', 1, 1, [
            {
              op: 'select',
              table: 't',
              where: "d::date > '2019-06-01'",
              rows: [{ wid: 'init', row: { id: 2, d: '2020-01-01' } }],
            },
          ]),
          { kind: 'end', transactions: 1 },
        ),
      );
      expectOneError(run(['check', f]), f, 4, /cannot evaluate its WHERE on a row written by the initial rows/);
    },
  );
});

describe('6. standard input, named pipes, --report', () => {
  const known = join(root, 'histories', 'known', 'lost-update.SI.ndjson');
  const verdict = (r: Run) => (JSON.parse(r.out) as { verdict: string }).verdict;

  it('check - reads a history from standard input, plain or gzip (by its magic bytes), with the same verdict', () => {
    const fromFile = run(['check', '--json', known]);
    expect(fromFile.status).toBe(1);
    const text = readFileSync(known);
    for (const input of [text, gzipSync(text)]) {
      const r = run(['check', '--json', '-'], input);
      expect(r.status, r.out).toBe(fromFile.status);
      expect(verdict(r)).toBe(verdict(fromFile));
      expect(JSON.parse(r.out).file).toBe('<stdin>');
    }
    // a gzip file whatever its name, and /dev/stdin
    expect(verdict(run(['check', '--json', write('gzipped.ndjson', gzipSync(text))]))).toBe(verdict(fromFile));
    expect(verdict(run(['check', '--json', '/dev/stdin'], gzipSync(text)))).toBe(verdict(fromFile));
    const piped = spawnSync(
      'sh',
      ['-c', `gzip -c < '${known}' | '${process.execPath}' '${bin}' check --json /dev/stdin`],
      { encoding: 'utf8', timeout: 60_000 },
    );
    expect(verdict({ status: piped.status, out: piped.stdout, ms: 0 })).toBe(verdict(fromFile));
    // errors name <stdin> and the line
    expectOneError(
      run(['check', '-'], lines(HEADER, TABLE, '{"kind":"init","table":"t","rows":[{"id":1,"v":"x"}]}')),
      '<stdin>',
      3,
      /column "v" = "x"/,
    );
  });

  it('check reads a named pipe', async () => {
    const fifo = join(dir, 'pipe.ndjson');
    execFileSync('mkfifo', [fifo]);
    const child = spawn(process.execPath, [bin, 'check', '--json', fifo], { cwd: root });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    await writeFile(fifo, readFileSync(known)); // opening waits (in a worker thread) until the reader opens the pipe
    const status = await new Promise<number | null>((resolve) => child.on('close', resolve));
    expect(status, out).toBe(1);
    expect(JSON.parse(out).verdict).toBe('inconsistent');
  });

  it('--report at a directory or in a missing folder is one line, before the check', () => {
    const d = join(dir, 'reports');
    mkdirSync(d, { recursive: true });
    const r = run(['check', '--report', d, known]);
    expect(r.status).toBe(2);
    expect(r.out).not.toMatch(/EISDIR|\n\s+at /);
    expect(r.out).toContain(`--report ${d}: is a directory`);
    const m = run(['check', '--report', join(dir, 'no', 'such', 'r.html'), known]);
    expect(m.status).toBe(2);
    expect(m.out).toMatch(/--report .*r\.html: cannot write there \(.*ENOENT\)/);
  });

  it('--help documents the limits and standard input', () => {
    const h = run(['check', '--help']).out;
    for (const word of ['--max-line-mb', '--max-input-gb', 'default 64', 'default 16', '- for standard input'])
      expect(h).toContain(word);
  });
});

describe('reading options', () => {
  const known = join(root, 'histories', 'known', 'lost-update.SI.ndjson');
  it('ReadOptions limits are checked and applied', async () => {
    await expect(readHistory(known, { maxLineBytes: 0 })).rejects.toThrow(
      /maxLineBytes must be a whole number of bytes from 1 to/,
    );
    await expect(readHistory(known, { maxLineBytes: 100 })).rejects.toThrow(/:1: line longer than 100 bytes/);
    await expect(readHistory(known, { maxInputBytes: 100 })).rejects.toThrow(/:1: the input is larger than 100 bytes/);
    expect((await readHistory(known, { maxLineBytes: 4096 })).txns.length).toBeGreaterThan(0);
  });
});
