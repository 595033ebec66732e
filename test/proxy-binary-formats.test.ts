// The proxy's binary formats (src/proxy/formats.ts) against the server's own: for seeded random values of each type
// it converts, the server's text of the value converted to binary must be the server's binary (its *_send function),
// in each DateStyle, IntervalStyle and TimeZone the proxy reads; and a binary value converted to text must be read
// back by the server as the same value, in every style. Clients that use binary: pgx, pgjdbc once a statement is
// prepared on the server (prepareThreshold), asyncpg, Npgsql.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import seedrandom from 'seedrandom';
import { startEmbedded, type EmbeddedServer } from '../src/db/embedded.js';
import { binaryResultSupported, decodeBinaryParam, encodeBinaryResult, TypeCodecs } from '../src/proxy/formats.js';
import { resolveTypes } from '../src/proxy/user-types.js';

type Rng = () => number;
const int = (rng: Rng, lo: number, hi: number): number => lo + Math.floor(rng() * (hi - lo + 1));
const pick = <T>(rng: Rng, xs: readonly T[]): T => xs[Math.floor(rng() * xs.length)];
const pad = (n: number, w = 2): string => String(n).padStart(w, '0');
const N = 120;
const many = (rng: Rng, f: (rng: Rng) => string, fixed: string[] = []): string[] => [
  ...fixed,
  ...Array.from({ length: N }, () => f(rng)),
];

const digits = (rng: Rng, n: number): string => Array.from({ length: n }, () => int(rng, 0, 9)).join('');
const numeric = (rng: Rng): string => {
  const int_ = rng() < 0.2 ? '0' : digits(rng, int(rng, 1, 30)).replace(/^0+(?=\d)/, '');
  const frac = rng() < 0.3 ? '' : `.${digits(rng, int(rng, 1, 25))}`;
  return `${rng() < 0.4 ? '-' : ''}${int_}${frac}`;
};
const year = (rng: Rng): string => {
  const r = rng();
  return r < 0.1 ? `${int(rng, 1, 4713)} BC` : r < 0.15 ? String(int(rng, 10000, 294000)) : String(int(rng, 1, 9999));
};
const date = (rng: Rng): string => {
  const y = year(rng);
  const bc = y.endsWith(' BC');
  return `${pad(Number.parseInt(y, 10), 4)}-${pad(int(rng, 1, 12))}-${pad(int(rng, 1, 28))}${bc ? ' BC' : ''}`;
};
const time = (rng: Rng): string => {
  const frac = rng() < 0.7 ? `.${digits(rng, int(rng, 1, 6))}` : '';
  return `${pad(int(rng, 0, 23))}:${pad(int(rng, 0, 59))}:${pad(int(rng, 0, 59))}${frac}`;
};
const offset = (rng: Rng): string => {
  const seconds = rng() < 0.2 ? `:${pad(int(rng, 1, 59))}` : '';
  return `${pick(rng, ['+', '-'])}${pad(int(rng, 0, 14))}:${pad(pick(rng, [0, 0, 15, 30, 45]))}${seconds}`;
};
const timestamp = (rng: Rng, zone: boolean): string => {
  const d = date(rng);
  const bc = d.endsWith(' BC');
  return `${d.replace(' BC', '')} ${time(rng)}${zone ? offset(rng) : ''}${bc ? ' BC' : ''}`;
};
const signed = (rng: Rng, max: number): number => (rng() < 0.5 ? -1 : 1) * int(rng, 0, max);
const interval = (rng: Rng): string =>
  `${signed(rng, 2000)} mons ${signed(rng, 40000)} days ${pick(rng, ['', '-', '+'])}${int(rng, 0, 2_000_000)}:` +
  `${pad(int(rng, 0, 59))}:${pad(int(rng, 0, 59))}.${digits(rng, 6)}`;
const CHARS = ['a', 'Z', ' ', '"', '\\', ',', '{', '}', "'", 'é', '日', '😀', 'NULL', '\t', '\n'];
const text = (rng: Rng): string => Array.from({ length: int(rng, 0, 8) }, () => pick(rng, CHARS)).join('');
const quoted = (s: string): string => `"${s.replace(/["\\]/g, (c) => `\\${c}`)}"`;
const array = (rng: Rng, element: (rng: Rng) => string): string => {
  if (rng() < 0.1) return '{}';
  const item = (): string => (rng() < 0.15 ? 'NULL' : quoted(element(rng)));
  const dims = rng() < 0.3 ? 2 : 1;
  const [a, b] = [int(rng, 1, 4), int(rng, 1, 3)];
  const body =
    dims === 1
      ? `{${Array.from({ length: a }, item).join(',')}}`
      : `{${Array.from({ length: a }, () => `{${Array.from({ length: b }, item).join(',')}}`).join(',')}}`;
  if (rng() >= 0.2) return body;
  const bound = (n: number): string => {
    const lb = int(rng, -3, 3);
    return `[${lb}:${lb + n - 1}]`;
  };
  return `${bound(a)}${dims === 2 ? bound(b) : ''}=${body}`;
};

const hex = (rng: Rng, n: number): string => Array.from({ length: n }, () => int(rng, 0, 15).toString(16)).join('');
const ipv4 = (rng: Rng): string => Array.from({ length: 4 }, () => int(rng, 0, 255)).join('.');
const ipv6 = (rng: Rng): string => {
  const groups = Array.from({ length: 8 }, () => (rng() < 0.3 ? '0' : hex(rng, int(rng, 1, 4))));
  if (rng() < 0.2) return `::ffff:${ipv4(rng)}`;
  return groups.join(':');
};
const inet = (rng: Rng): string => {
  const v6 = rng() < 0.4;
  const a = v6 ? ipv6(rng) : ipv4(rng);
  return rng() < 0.5 ? a : `${a}/${int(rng, 0, v6 ? 128 : 32)}`;
};
/** A cidr: no bit set past its netmask. */
const cidr = (rng: Rng): string =>
  rng() < 0.5 ? `${int(rng, 0, 255)}.${int(rng, 0, 255)}.0.0/16` : `${hex(rng, 4)}:${hex(rng, 3)}0::/28`;
const mac = (rng: Rng, n: number): string => Array.from({ length: n }, () => hex(rng, 2)).join(':');
const coordinate = (rng: Rng): string =>
  rng() < 0.05 ? pick(rng, ['-0', 'Infinity', '-Infinity']) : String((rng() - 0.5) * 10 ** int(rng, -5, 8));
const point = (rng: Rng): string => `(${coordinate(rng)},${coordinate(rng)})`;
const bits = (rng: Rng): string => Array.from({ length: int(rng, 0, 40) }, () => int(rng, 0, 1)).join('');
const range = (rng: Rng, element: (rng: Rng) => string, order: (a: string, b: string) => number): string => {
  if (rng() < 0.1) return 'empty';
  const [a, b] = [element(rng), element(rng)].sort(order);
  const lower = rng() < 0.15 ? '' : quoted(a);
  const upper = rng() < 0.15 ? '' : quoted(b);
  return `${pick(rng, ['[', '('])}${lower},${upper}${pick(rng, [']', ')'])}`;
};
const byNumber = (a: string, b: string): number => Number(a) - Number(b);
/** A multirange's text: any number of ranges, overlapping, touching, empty or unbounded (the server merges them). */
const multirange = (rng: Rng, r: (rng: Rng) => string): string =>
  `{${Array.from({ length: int(rng, 0, 4) }, () => r(rng)).join(rng() < 0.5 ? ',' : ' , ')}}`;
const points = (rng: Rng): string => Array.from({ length: int(rng, 1, 5) }, () => point(rng)).join(',');

interface TypeCase {
  type: string;
  oid: number;
  send: string;
  values(rng: Rng): string[];
}

const CASES: TypeCase[] = [
  { type: 'int2', oid: 21, send: 'int2send', values: (r) => many(r, (x) => String(signed(x, 32767)), ['-32768']) },
  { type: 'int4', oid: 23, send: 'int4send', values: (r) => many(r, (x) => String(signed(x, 2 ** 31 - 1))) },
  {
    type: 'int8',
    oid: 20,
    send: 'int8send',
    values: (r) => many(r, (x) => `${pick(x, ['', '-'])}${digits(x, int(x, 1, 18))}`, ['-9223372036854775808']),
  },
  {
    type: 'float8',
    oid: 701,
    send: 'float8send',
    values: (r) =>
      many(r, (x) => String((x() - 0.5) * 10 ** int(x, -300, 300)), ['NaN', 'Infinity', '-Infinity', '-0', '5e-324']),
  },
  {
    type: 'float4',
    oid: 700,
    send: 'float4send',
    values: (r) => many(r, (x) => String((x() - 0.5) * 10 ** int(x, -30, 30))),
  },
  { type: 'bool', oid: 16, send: 'boolsend', values: () => ['t', 'f'] },
  { type: 'text', oid: 25, send: 'textsend', values: (r) => many(r, text) },
  {
    type: 'uuid',
    oid: 2950,
    send: 'uuid_send',
    values: (r) => many(r, (x) => digits(x, 32).replace(/^(.{8})(.{4})(.{4})(.{4})/, '$1-$2-$3-$4-')),
  },
  {
    type: 'jsonb',
    oid: 3802,
    send: 'jsonb_send',
    values: (r) => many(r, (x) => JSON.stringify({ [text(x)]: [signed(x, 99), text(x), x() < 0.5, null] })),
  },
  { type: 'json', oid: 114, send: 'json_send', values: (r) => many(r, (x) => JSON.stringify({ k: text(x) })) },
  { type: '"char"', oid: 18, send: 'charsend', values: () => ['a', 'Z', ' ', '', '\\200', '\\377'] },
  {
    type: 'numeric',
    oid: 1700,
    send: 'numeric_send',
    values: (r) => many(r, numeric, ['0', '0.000', '-0.5', 'NaN', 'Infinity', '-Infinity', '10000', '0.0001', '1e-20']),
  },
  { type: 'date', oid: 1082, send: 'date_send', values: (r) => many(r, date, ['infinity', '-infinity', '2000-01-01']) },
  { type: 'time', oid: 1083, send: 'time_send', values: (r) => many(r, time, ['24:00:00', '00:00:00']) },
  { type: 'timetz', oid: 1266, send: 'timetz_send', values: (r) => many(r, (x) => `${time(x)}${offset(x)}`) },
  {
    type: 'timestamp',
    oid: 1114,
    send: 'timestamp_send',
    values: (r) => many(r, (x) => timestamp(x, false), ['infinity', '-infinity', '4713-01-01 00:00:00 BC']),
  },
  {
    type: 'timestamptz',
    oid: 1184,
    send: 'timestamptz_send',
    values: (r) => many(r, (x) => timestamp(x, true), ['infinity', '-infinity', '1850-06-01 12:00:00+00']),
  },
  {
    type: 'interval',
    oid: 1186,
    send: 'interval_send',
    values: (r) => many(r, interval, ['infinity', '-infinity', '0', '-1 sec', '178000000 years']),
  },
  {
    type: 'int4[]',
    oid: 1007,
    send: 'array_send',
    values: (r) => many(r, (x) => array(x, (y) => String(signed(y, 1e9)))),
  },
  { type: 'text[]', oid: 1009, send: 'array_send', values: (r) => many(r, (x) => array(x, text)) },
  { type: 'numeric[]', oid: 1231, send: 'array_send', values: (r) => many(r, (x) => array(x, numeric)) },
  {
    type: 'timestamptz[]',
    oid: 1185,
    send: 'array_send',
    values: (r) => many(r, (x) => array(x, (y) => timestamp(y, true)), ['[0:1]={"2020-01-01 00:00:00+00",NULL}']),
  },
  {
    type: 'bytea[]',
    oid: 1001,
    send: 'array_send',
    values: (r) => many(r, (x) => array(x, (y) => `\\x${digits(y, 6)}`)),
  },
  { type: 'bytea', oid: 17, send: 'byteasend', values: (r) => many(r, (x) => `\\x${digits(x, int(x, 0, 20) * 2)}`) },
  { type: 'inet', oid: 869, send: 'inet_send', values: (r) => many(r, inet, ['::', '0.0.0.0/0', '::ffff:0.0.0.0']) },
  { type: 'cidr', oid: 650, send: 'cidr_send', values: (r) => many(r, cidr, ['0.0.0.0/0', '::/0']) },
  { type: 'macaddr', oid: 829, send: 'macaddr_send', values: (r) => many(r, (x) => mac(x, 6)) },
  { type: 'macaddr8', oid: 774, send: 'macaddr8_send', values: (r) => many(r, (x) => mac(x, 8)) },
  { type: 'point', oid: 600, send: 'point_send', values: (r) => many(r, point, ['(NaN,1)']) },
  { type: 'box', oid: 603, send: 'box_send', values: (r) => many(r, (x) => `${point(x)},${point(x)}`) },
  { type: 'lseg', oid: 601, send: 'lseg_send', values: (r) => many(r, (x) => `[${point(x)},${point(x)}]`) },
  {
    type: 'line',
    oid: 628,
    send: 'line_send',
    values: (r) => many(r, (x) => `{${1 + int(x, 0, 9)},${coordinate(x)},${coordinate(x)}}`),
  },
  {
    type: 'circle',
    oid: 718,
    send: 'circle_send',
    values: (r) => many(r, (x) => `<${point(x)},${Math.abs(Number(coordinate(x))) || 1}>`),
  },
  {
    type: 'path',
    oid: 602,
    send: 'path_send',
    values: (r) => many(r, (x) => (x() < 0.5 ? `[${points(x)}]` : `(${points(x)})`), ['[(1,2)]', '((-0,NaN))']),
  },
  { type: 'polygon', oid: 604, send: 'poly_send', values: (r) => many(r, (x) => `(${points(x)})`, ['((1,2))']) },
  { type: 'path[]', oid: 1019, send: 'array_send', values: (r) => many(r, (x) => array(x, (y) => `[${points(y)}]`)) },
  {
    type: 'polygon[]',
    oid: 1027,
    send: 'array_send',
    values: (r) => many(r, (x) => array(x, (y) => `(${points(y)})`)),
  },
  { type: 'varbit', oid: 1562, send: 'varbit_send', values: (r) => many(r, bits) },
  { type: 'bit(12)', oid: 1560, send: 'bit_send', values: (r) => many(r, (x) => bits(x).padEnd(12, '0').slice(0, 12)) },
  { type: 'xid', oid: 28, send: 'xidsend', values: (r) => many(r, (x) => String(int(x, 0, 2 ** 32 - 1))) },
  {
    type: 'xid8',
    oid: 5069,
    send: 'xid8send',
    values: (r) => many(r, (x) => digits(x, int(x, 1, 19)).replace(/^0+(?=\d)/, '')),
  },
  { type: 'cid', oid: 29, send: 'cidsend', values: (r) => many(r, (x) => String(int(x, 0, 2 ** 32 - 1))) },
  {
    type: 'tid',
    oid: 27,
    send: 'tidsend',
    values: (r) => many(r, (x) => `(${int(x, 0, 2 ** 32 - 1)},${int(x, 0, 65535)})`),
  },
  {
    type: 'int4range',
    oid: 3904,
    send: 'range_send',
    values: (r) => many(r, (x) => range(x, (y) => String(signed(y, 1e6)), byNumber), ['(,)', '[5,5)', '[5,5]']),
  },
  {
    type: 'int8range',
    oid: 3926,
    send: 'range_send',
    values: (r) => many(r, (x) => range(x, (y) => String(signed(y, 1e12)), byNumber)),
  },
  { type: 'numrange', oid: 3906, send: 'range_send', values: (r) => many(r, (x) => range(x, numeric, byNumber)) },
  {
    type: 'tstzrange',
    oid: 3910,
    send: 'range_send',
    values: (r) =>
      many(r, (x) =>
        range(
          x,
          (y) => `${2000 + int(y, 0, 99)}-01-01 ${time(y)}+00`,
          (a, b) => a.localeCompare(b),
        ),
      ),
  },
  {
    type: 'daterange',
    oid: 3912,
    send: 'range_send',
    values: (r) =>
      many(r, (x) =>
        range(
          x,
          (y) => `${2000 + int(y, 0, 99)}-0${int(y, 1, 9)}-1${int(y, 0, 9)}`,
          (a, b) => a.localeCompare(b),
        ),
      ),
  },
  {
    type: 'int4multirange',
    oid: 4451,
    send: 'multirange_send',
    values: (r) =>
      many(r, (x) => multirange(x, (y) => range(y, (z) => String(signed(z, 99)), byNumber)), ['{}', '{(,)}']),
  },
  {
    type: 'int8multirange',
    oid: 4536,
    send: 'multirange_send',
    values: (r) => many(r, (x) => multirange(x, (y) => range(y, (z) => String(signed(z, 1e12)), byNumber))),
  },
  {
    type: 'nummultirange',
    oid: 4532,
    send: 'multirange_send',
    values: (r) => many(r, (x) => multirange(x, (y) => range(y, numeric, byNumber))),
  },
  {
    type: 'tstzmultirange',
    oid: 4534,
    send: 'multirange_send',
    values: (r) =>
      many(r, (x) =>
        multirange(x, (y) =>
          range(
            y,
            (z) => `${2000 + int(z, 0, 99)}-01-01 ${time(z)}+00`,
            (a, b) => a.localeCompare(b),
          ),
        ),
      ),
  },
  {
    type: 'tsmultirange',
    oid: 4533,
    send: 'multirange_send',
    values: (r) =>
      many(r, (x) =>
        multirange(x, (y) =>
          range(
            y,
            (z) => `${2000 + int(z, 0, 99)}-01-01 ${time(z)}`,
            (a, b) => a.localeCompare(b),
          ),
        ),
      ),
  },
  {
    type: 'datemultirange',
    oid: 4535,
    send: 'multirange_send',
    values: (r) =>
      many(r, (x) =>
        multirange(x, (y) =>
          range(
            y,
            (z) => `${2000 + int(z, 0, 99)}-0${int(z, 1, 9)}-1${int(z, 0, 9)}`,
            (a, b) => a.localeCompare(b),
          ),
        ),
      ),
  },
  {
    type: 'int4multirange[]',
    oid: 6150,
    send: 'array_send',
    values: (r) =>
      many(r, (x) => array(x, (y) => multirange(y, (z) => range(z, (w) => String(signed(w, 99)), byNumber)))),
  },
  { type: 'inet[]', oid: 1041, send: 'array_send', values: (r) => many(r, (x) => array(x, inet)) },
  { type: 'point[]', oid: 1017, send: 'array_send', values: (r) => many(r, (x) => array(x, point)) },
  {
    type: 'int4range[]',
    oid: 3905,
    send: 'array_send',
    values: (r) => many(r, (x) => array(x, (y) => range(y, (z) => String(signed(z, 99)), byNumber))),
  },
];

/** Settings whose text the proxy reads (results), and others (parameters are read in all). */
const READ = [
  ['ISO, MDY', 'postgres', 'UTC'],
  ['ISO, DMY', 'iso_8601', 'Asia/Kolkata'],
  ['ISO, YMD', 'postgres', 'America/St_Johns'],
  ['ISO, MDY', 'iso_8601', 'Europe/Amsterdam'],
  ['ISO, MDY', 'postgres', 'Pacific/Chatham'],
];
const OTHER = [
  ['SQL, DMY', 'sql_standard', 'Asia/Kolkata'],
  ['German', 'postgres_verbose', 'America/St_Johns'],
  ['Postgres, YMD', 'sql_standard', 'UTC'],
];

let server: EmbeddedServer;
let c: pg.Client;
beforeAll(async () => {
  server = await startEmbedded();
  c = new pg.Client({ connectionString: server.url });
  await c.connect();
}, 60_000);
afterAll(async () => {
  await c?.end();
  await server?.stop();
});

async function settle([dateStyle, intervalStyle, zone]: string[]): Promise<void> {
  await c.query(`SET DateStyle = '${dateStyle}'; SET IntervalStyle = ${intervalStyle}; SET TimeZone = '${zone}'`);
}

/** Each value's text and binary (the server's), in the session's settings. */
async function serverForms(t: TypeCase, values: string[]): Promise<[string | null, Buffer | null][]> {
  const r = await c.query({
    text:
      `SELECT v, encode(${t.send}(v), 'hex') FROM unnest($1::text[]) WITH ORDINALITY AS x(s, i), ` +
      `LATERAL (SELECT s::${t.type} AS v) y ORDER BY i`,
    values: [values],
    rowMode: 'array',
    // the value's text as the server sends it (its output function)
    types: { getTypeParser: () => (x: string) => x },
  } as pg.QueryArrayConfig);
  return (r.rows as [string | null, string | null][]).map(([v, hex]) => [
    v,
    hex === null ? null : Buffer.from(hex, 'hex'),
  ]);
}

describe('binary formats, against the server', () => {
  for (const t of CASES) {
    it(`${t.type}: results (text to binary) and parameters (binary to text)`, async () => {
      const rng = seedrandom(`binary-formats/${t.type}`);
      await settle(READ[0]);
      const values = t.values(rng);
      let checked = 0;
      for (const setting of READ) {
        await settle(setting);
        expect(binaryResultSupported(t.oid, { dateStyle: setting[0], intervalStyle: setting[1] })).toBe(true);
        for (const [text, binary] of await serverForms(t, values)) {
          const mine = encodeBinaryResult(text!, t.oid);
          expect(mine.toString('hex'), `${t.type} ${text} in ${setting.join(', ')}`).toBe(binary!.toString('hex'));
          checked++;
        }
      }
      await settle(READ[0]);
      const binaries = (await serverForms(t, values)).map(([, b]) => b!);
      if (t.oid === 17) return; // (bytea parameters go to the server in binary as they came)
      const texts = binaries.map((b) => decodeBinaryParam(b, t.oid) as string);
      for (const setting of [...READ, ...OTHER]) {
        await settle(setting);
        const back = await serverForms(t, texts);
        back.forEach(([, b], i) => {
          expect(b!.toString('hex'), `${t.type} ${texts[i]} read in ${setting.join(', ')}`).toBe(
            binaries[i].toString('hex'),
          );
        });
      }
      expect(checked).toBeGreaterThan(0);
    });
  }

  it("converts the database's own types found in its catalog: enums, domains, composites, ranges, arrays", async () => {
    await settle(READ[0]);
    await c.query(`DROP TYPE IF EXISTS pair, mood, posint, stamped, floatrange, moodrange CASCADE`);
    await c.query(`CREATE TYPE mood AS ENUM ('sad', 'ok', 'a "quoted" one', 'été')`);
    await c.query(`CREATE DOMAIN posint AS int4 CHECK (VALUE > 0)`);
    await c.query(`CREATE DOMAIN stamped AS timestamptz`);
    await c.query(`CREATE TYPE pair AS (a posint, b text, c stamped, d mood[], e numeric)`);
    await c.query(`CREATE TYPE floatrange AS RANGE (subtype = float8)`);
    await c.query(`CREATE TYPE moodrange AS RANGE (subtype = mood)`);
    await c.query(`CREATE TYPE unconverted AS (a money)`).catch(() => undefined);
    const oid = async (type: string): Promise<number> =>
      Number((await c.query(`SELECT '${type}'::regtype::oid::int4 AS o`)).rows[0].o);
    const types = new TypeCodecs();
    const query = async (text: string, values: unknown[]) =>
      (await c.query({ text, values, rowMode: 'array', types: { getTypeParser: () => (x: string) => x } })).rows as (
        | string
        | null
      )[][];
    const cases: [string, string, (rng: Rng) => string][] = [
      ['mood', 'enum_send', (r) => pick(r, ['sad', 'ok', 'a "quoted" one', 'été'])],
      ['posint', 'int4send', (r) => String(int(r, 1, 2 ** 31 - 1))],
      ['stamped', 'timestamptz_send', (r) => timestamp(r, true)],
      ['mood[]', 'array_send', (r) => array(r, (x) => pick(x, ['sad', 'ok', 'a "quoted" one', 'été']))],
      ['posint[]', 'array_send', (r) => array(r, (x) => String(int(x, 1, 999)))],
      [
        'pair',
        'record_send',
        (r) =>
          `(${r() < 0.2 ? '' : int(r, 1, 99)},${r() < 0.2 ? '' : quoted(text(r))},` +
          `${r() < 0.2 ? '' : quoted(timestamp(r, true))},${quoted(array(r, () => 'ok'))},${numeric(r)})`,
      ],
      ['pair[]', 'array_send', (r) => array(r, () => `(1,"x y",,"{sad}",${numeric(r)})`)],
      ['floatrange', 'range_send', (r) => range(r, (x) => String((x() - 0.5) * 1e6), byNumber)],
      [
        'floatmultirange',
        'multirange_send',
        (r) => multirange(r, (x) => range(x, (y) => String((y() - 0.5) * 1e6), byNumber)),
      ],
      ['floatrange[]', 'array_send', (r) => array(r, (x) => range(x, (y) => String(int(y, -9, 9)), byNumber))],
      [
        'moodrange',
        'range_send',
        (r) =>
          range(
            r,
            (x) => pick(x, ['sad', 'ok']),
            () => 0,
          ).replace(/"ok","sad"/, '"sad","ok"'),
      ],
    ];
    await resolveTypes(await Promise.all(cases.map(([t]) => oid(t))), types, query);
    expect(types.known(await oid('unconverted'))).toBe(false);
    await resolveTypes([await oid('unconverted')], types, query);
    expect(types.known(await oid('unconverted'))).toBe(true);
    expect(
      binaryResultSupported(await oid('unconverted'), { dateStyle: 'ISO', intervalStyle: 'postgres' }, types),
    ).toBe(false);
    for (const [type, send, gen] of cases) {
      const rng = seedrandom(`binary-formats/${type}`);
      const t: TypeCase = { type, oid: await oid(type), send, values: (r) => many(r, gen) };
      const values = t.values(rng);
      for (const setting of READ.slice(0, 3)) {
        await settle(setting);
        expect(binaryResultSupported(t.oid, { dateStyle: setting[0], intervalStyle: setting[1] }, types)).toBe(true);
        for (const [txt, binary] of await serverForms(t, values))
          expect(encodeBinaryResult(txt!, t.oid, types).toString('hex'), `${type} ${txt}`).toBe(
            binary!.toString('hex'),
          );
      }
      await settle(READ[0]);
      const binaries = (await serverForms(t, values)).map(([, b]) => b!);
      const texts = binaries.map((b) => decodeBinaryParam(b, t.oid, types) as string);
      for (const setting of [READ[1], OTHER[0]]) {
        await settle(setting);
        (await serverForms(t, texts)).forEach(([, b], i) => {
          expect(b!.toString('hex'), `${type} ${texts[i]}`).toBe(binaries[i].toString('hex'));
        });
      }
    }
  });

  it('reads bytea in the escape format, refuses a text of another type than its column (review)', async () => {
    await settle(READ[0]);
    await c.query('SET bytea_output = escape');
    try {
      for (const t of [
        { type: 'bytea', oid: 17, send: 'byteasend', values: () => ['\\x00ff275c5c0a41', '\\x', '\\x5c78'] },
        { type: 'bytea[]', oid: 1001, send: 'array_send', values: () => ['{"\\\\x00ff5c",NULL}'] },
      ] as TypeCase[]) {
        for (const [txt, binary] of await serverForms(
          t,
          t.values(() => 0),
        )) {
          expect(txt!.startsWith('\\x')).toBe(false); // (the escape format indeed)
          expect(encodeBinaryResult(txt!, t.oid).toString('hex'), txt!).toBe(binary!.toString('hex'));
        }
      }
    } finally {
      await c.query('RESET bytea_output');
    }
    // a composite's column whose type changed: an error, not the bytes of a 0 (Number('hello') is NaN)
    for (const [text, oid] of [
      ['hello', 23],
      ['1.5', 20],
      ['x', 700],
      ['maybe', 16],
    ] as const)
      expect(() => encodeBinaryResult(text, oid), text).toThrow(/cannot read/);
  });

  it('reads a type the catalog does not show yet (made in a transaction not committed) at its next use', async () => {
    await c.query('DROP TYPE IF EXISTS later');
    const other = new pg.Client({ connectionString: server.url });
    await other.connect();
    try {
      await other.query('BEGIN');
      await other.query(`CREATE TYPE later AS ENUM ('x')`);
      const oid = Number((await other.query(`SELECT 'later'::regtype::oid::int4 AS o`)).rows[0].o);
      const types = new TypeCodecs();
      const query = async (text: string, values: unknown[]) =>
        (await c.query({ text, values, rowMode: 'array', types: { getTypeParser: () => (x: string) => x } })).rows as (
          | string
          | null
        )[][];
      await resolveTypes([oid], types, query);
      expect(types.known(oid)).toBe(false);
      await other.query('COMMIT');
      await resolveTypes([oid], types, query);
      expect(types.codecFor(oid)?.toText(Buffer.from('x'))).toBe('x');
      types.forget();
      expect(types.known(oid)).toBe(false);
    } finally {
      await other.query('ROLLBACK').catch(() => undefined);
      await other.query('DROP TYPE IF EXISTS later');
      await other.end();
    }
  });

  it('refuses dates in a DateStyle other than ISO, intervals in an IntervalStyle it does not read', () => {
    const sql = { dateStyle: 'SQL, DMY', intervalStyle: 'sql_standard' };
    for (const oid of [1082, 1083, 1184, 1185, 1186]) expect(binaryResultSupported(oid, sql)).toBe(false);
    expect(binaryResultSupported(23, sql)).toBe(true);
    expect(binaryResultSupported(790, { dateStyle: 'ISO', intervalStyle: 'postgres' })).toBe(false); // money
    // tstzrange, tstzrange[], timestamp[], tstzmultirange, its array
    for (const oid of [3910, 3911, 1115, 4534, 6153]) expect(binaryResultSupported(oid, sql)).toBe(false);
  });
});
