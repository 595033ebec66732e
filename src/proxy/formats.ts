/**
 * Binary format on the client's side. Statements run through the recorder in text format (its added columns are
 * read as text); a client asking for binary parameters or results (pgx, pgjdbc once a statement is prepared on the
 * server, asyncpg, Npgsql) gets them converted here, one codec per type (CODECS): integers, floats, bool, bytea, the
 * text types, json and jsonb, uuid, xid, tid, numeric (binary-numeric.ts), dates, times and intervals
 * (binary-datetime.ts, results in the ISO DateStyle and the postgres or iso_8601 IntervalStyle), inet, cidr and
 * MAC addresses (binary-network.ts), points, boxes, segments, lines, circles, paths and polygons (binary-geometry.ts),
 * bit strings (binary-bits.ts), ranges and multiranges of these (binary-range.ts) and arrays of all of them
 * (binary-array.ts). Any other type in
 * binary is refused with a clear error (SQLSTATE 0A000). test/proxy-binary-formats.test.ts checks each conversion
 * against the server's own (its *_send functions) on seeded random values.
 */
import { ARRAY_ELEMENT, arrayFromBinary, arrayToBinary } from './binary-array.js';
import {
  dateFromBinary,
  dateToBinary,
  intervalFromBinary,
  intervalToBinary,
  styleSupported,
  timeFromBinary,
  timestampFromBinary,
  timestampToBinary,
  timeToBinary,
} from './binary-datetime.js';
import { numericFromBinary, numericToBinary } from './binary-numeric.js';
import { inetFromBinary, inetToBinary, macFromBinary, macToBinary } from './binary-network.js';
import { pointsFromBinary, pointsToBinary, type Shape, shapeFromBinary, shapeToBinary } from './binary-geometry.js';
import { bitsFromBinary, bitsToBinary } from './binary-bits.js';
import {
  MULTIRANGE_RANGE,
  multirangeFromBinary,
  multirangeToBinary,
  RANGE_ELEMENT,
  rangeFromBinary,
  rangeToBinary,
} from './binary-range.js';

const BYTEA = 17;

/** The session's settings that shape the server's text of dates and intervals (its ParameterStatus). */
export interface TextStyle {
  dateStyle: string;
  intervalStyle: string;
}

/** One type's conversions: the server's text to binary (undefined: a text it cannot read), binary to text the
 *  server reads; `style`: the text depends on the session's DateStyle or IntervalStyle. */
export interface Codec {
  toBinary(text: string): Buffer | undefined;
  toText(b: Buffer): string;
  style?: 'date' | 'interval' | 'both';
}

function fixed(size: number, write: (b: Buffer) => void): Buffer {
  const b = Buffer.alloc(size);
  write(b);
  return b;
}

/** An integer's text in binary (undefined: not an integer's text: a value of another type than its column's). */
const integer = (t: string, size: number, write: (b: Buffer) => void): Buffer | undefined =>
  /^-?\d+$/.test(t) ? fixed(size, write) : undefined;
/** A float's text in binary (undefined: not a float's text). */
const float = (t: string, size: number, write: (b: Buffer) => void): Buffer | undefined =>
  /^(-?(\d+(\.\d*)?|\.\d+)(e[+-]?\d+)?|-?Infinity|NaN)$/i.test(t) ? fixed(size, write) : undefined;

/** bytea's text in the escape format (bytea_output = escape): `\\` a backslash, `\ooo` a byte in octal, any
 *  other character itself (undefined: not such a text). */
function byteaEscaped(t: string): Buffer | undefined {
  const out: number[] = [];
  for (let i = 0; i < t.length; i++) {
    if (t[i] !== '\\') {
      const c = t.charCodeAt(i);
      if (c > 0xff) return undefined;
      out.push(c);
    } else if (t[i + 1] === '\\') {
      out.push(0x5c);
      i++;
    } else if (/^[0-3][0-7]{2}$/.test(t.slice(i + 1, i + 4))) {
      out.push(Number.parseInt(t.slice(i + 1, i + 4), 8));
      i += 3;
    } else return undefined;
  }
  return Buffer.from(out);
}

/** A float's text the server reads as the same float (-0 included). */
const floatText = (v: number): string => (Object.is(v, -0) ? '-0' : String(v));

/** Types whose binary form is their text's bytes: text, varchar, bpchar, name, unknown, json. */
const TEXTUAL = [25, 1043, 1042, 19, 705, 114];
export const textual: Codec = { toBinary: (t) => Buffer.from(t, 'utf8'), toText: (b) => b.toString('utf8') };

const shape = (s: Shape): Codec => ({
  toBinary: (t) => shapeToBinary(t, s),
  toText: (b) => shapeFromBinary(b, s, floatText),
});

const CODECS = new Map<number, Codec>([
  [21, { toBinary: (t) => integer(t, 2, (b) => b.writeInt16BE(Number(t))), toText: (b) => String(b.readInt16BE(0)) }],
  [23, { toBinary: (t) => integer(t, 4, (b) => b.writeInt32BE(Number(t))), toText: (b) => String(b.readInt32BE(0)) }],
  [
    20,
    { toBinary: (t) => integer(t, 8, (b) => b.writeBigInt64BE(BigInt(t))), toText: (b) => String(b.readBigInt64BE(0)) },
  ],
  // oid, xid, cid: unsigned 32 bits; xid8: unsigned 64
  ...[26, 28, 29].map((oid): [number, Codec] => [
    oid,
    { toBinary: (t) => integer(t, 4, (b) => b.writeUInt32BE(Number(t))), toText: (b) => String(b.readUInt32BE(0)) },
  ]),
  [
    5069,
    {
      toBinary: (t) => integer(t, 8, (b) => b.writeBigUInt64BE(BigInt(t))),
      toText: (b) => String(b.readBigUInt64BE(0)),
    },
  ],
  [700, { toBinary: (t) => float(t, 4, (b) => b.writeFloatBE(Number(t))), toText: (b) => floatText(b.readFloatBE(0)) }],
  [
    701,
    { toBinary: (t) => float(t, 8, (b) => b.writeDoubleBE(Number(t))), toText: (b) => floatText(b.readDoubleBE(0)) },
  ],
  [
    16,
    {
      toBinary: (t) => (t === 't' || t === 'f' ? Buffer.from([t === 't' ? 1 : 0]) : undefined),
      toText: (b) => (b[0] ? 't' : 'f'),
    },
  ],
  [
    BYTEA,
    {
      toBinary: (t) => (t.startsWith('\\x') ? Buffer.from(t.slice(2), 'hex') : byteaEscaped(t)),
      toText: (b) => `\\x${b.toString('hex')}`,
    },
  ],
  [
    18, // "char": one byte, printed as itself, or in octal when not ASCII
    {
      toBinary: (t) =>
        Buffer.from([t === '' ? 0 : /^\\[0-7]{3}$/.test(t) ? Number.parseInt(t.slice(1), 8) : t.charCodeAt(0)]),
      toText: (b) =>
        b.length === 0 || b[0] === 0 ? '' : b[0] < 128 ? String.fromCharCode(b[0]) : `\\${b[0].toString(8)}`,
    },
  ],
  // jsonb: version 1, then the text
  [
    3802,
    {
      toBinary: (t) => Buffer.concat([Buffer.from([1]), Buffer.from(t, 'utf8')]),
      toText: (b) => b.toString('utf8', 1),
    },
  ],
  [
    2950,
    {
      toBinary: (t) => Buffer.from(t.replace(/-/g, ''), 'hex'),
      toText: (b) => b.toString('hex').replace(/^(.{8})(.{4})(.{4})(.{4})/, '$1-$2-$3-$4-'),
    },
  ],
  [
    27, // tid: (block, offset)
    {
      toBinary: (t) => {
        const m = /^\((\d+),(\d+)\)$/.exec(t);
        if (!m) return undefined;
        return fixed(6, (b) => {
          b.writeUInt32BE(Number(m[1]));
          b.writeUInt16BE(Number(m[2]), 4);
        });
      },
      toText: (b) => `(${b.readUInt32BE(0)},${b.readUInt16BE(4)})`,
    },
  ],
  [1700, { toBinary: numericToBinary, toText: numericFromBinary }],
  [1082, { toBinary: dateToBinary, toText: dateFromBinary, style: 'date' }],
  [1114, { toBinary: (t) => timestampToBinary(t, false), toText: (b) => timestampFromBinary(b, false), style: 'date' }],
  [1184, { toBinary: (t) => timestampToBinary(t, true), toText: (b) => timestampFromBinary(b, true), style: 'date' }],
  [1083, { toBinary: (t) => timeToBinary(t, false), toText: (b) => timeFromBinary(b, false), style: 'date' }],
  [1266, { toBinary: (t) => timeToBinary(t, true), toText: (b) => timeFromBinary(b, true), style: 'date' }],
  [1186, { toBinary: intervalToBinary, toText: intervalFromBinary, style: 'interval' }],
  [869, { toBinary: (t) => inetToBinary(t, false), toText: inetFromBinary }],
  [650, { toBinary: (t) => inetToBinary(t, true), toText: inetFromBinary }],
  [829, { toBinary: (t) => macToBinary(t, 6), toText: macFromBinary }],
  [774, { toBinary: (t) => macToBinary(t, 8), toText: macFromBinary }],
  [600, shape('point')],
  [601, shape('lseg')],
  [603, shape('box')],
  [628, shape('line')],
  [718, shape('circle')],
  ...(['path', 'polygon'] as const).map((kind, i): [number, Codec] => [
    i === 0 ? 602 : 604,
    { toBinary: (t) => pointsToBinary(t, kind), toText: (b) => pointsFromBinary(b, kind, floatText) },
  ]),
  [1560, { toBinary: bitsToBinary, toText: bitsFromBinary }],
  [1562, { toBinary: bitsToBinary, toText: bitsFromBinary }],
  ...TEXTUAL.map((oid): [number, Codec] => [oid, textual]),
]);
/** A range type's codec, from its element type's. */
export const rangeCodec = (e: Codec): Codec => ({
  toBinary: (t) => rangeToBinary(t, e.toBinary),
  toText: (b) => rangeFromBinary(b, e.toText),
  style: e.style,
});

/** A multirange type's codec, from its range type's. */
export const multirangeCodec = (r: Codec): Codec => ({
  toBinary: (t) => multirangeToBinary(t, r.toBinary),
  toText: (b) => multirangeFromBinary(b, r.toText),
  style: r.style,
});

// ranges of these, through their element's codec, and multiranges of those
for (const [range, element] of RANGE_ELEMENT) CODECS.set(range, rangeCodec(CODECS.get(element)!));
for (const [multirange, range] of MULTIRANGE_RANGE) CODECS.set(multirange, multirangeCodec(CODECS.get(range)!));
/**
 * The codecs of types: the built-in ones, and the database's own (enums, domains, composite types, arrays of them),
 * found in its catalog when a client first uses one in binary (user-types.ts). One per proxy: a proxy serves one
 * database.
 */
export class TypeCodecs {
  /** By oid; null: a type known not to be converted. */
  private readonly user = new Map<number, Codec | null>();

  /** The codec of a type, if known. */
  codecFor(oid: number): Codec | undefined {
    return CODECS.get(oid) ?? this.user.get(oid) ?? undefined;
  }

  /** Whether the type is known: built in, or its codec (or that it has none) found in the catalog. */
  known(oid: number): boolean {
    return CODECS.has(oid) || this.user.has(oid);
  }

  /** The database's own type `oid` has this codec (null: it is not converted). */
  add(oid: number, codec: Codec | null): void {
    if (!CODECS.has(oid)) this.user.set(oid, codec);
  }

  /** Forgets the database's own types (a type was created, altered or dropped): read again at their next use. */
  forget(): void {
    this.user.clear();
  }
}

/** The built-in types only (no catalog). */
const BUILT_IN = new TypeCodecs();

/** An array's codec, from its element type's (`types`: where the element's oid is looked up). */
export function arrayCodec(element: number, e: Codec, types: TypeCodecs = BUILT_IN): Codec {
  return {
    toBinary: (t) => arrayToBinary(t, element, e.toBinary),
    toText: (b) =>
      arrayFromBinary(b, (x, oid) => {
        const c = types.codecFor(oid);
        if (!c) throw new BinaryFormatError(`an array element of type oid ${oid} in binary`);
        return c.toText(x);
      }),
    style: e.style,
  };
}

// arrays of all of them (box[] aside: its elements are separated by ';'), through their element's codec
for (const [array, element] of ARRAY_ELEMENT) {
  const e = CODECS.get(element);
  if (e && element !== 603) CODECS.set(array, arrayCodec(element, e));
}

/** A type whose binary form is its text (text, varchar, bpchar, name, unknown, json). */
export const textualType = (oid: number): boolean => TEXTUAL.includes(oid);

export class BinaryFormatError extends Error {}

const CONVERTED =
  'integers, floats, numeric, bool, bytea, text types, json, jsonb, uuid, dates, times, timestamps, intervals, ' +
  'network addresses, geometric types, bit strings, ranges, multiranges and arrays of these';

/** The size in binary of the types whose values all have one (their *_recv reads that many bytes). */
const FIXED_SIZE = new Map<number, number>([
  [16, 1], // bool
  [18, 1], // "char"
  [21, 2], // int2
  [23, 4], // int4
  [26, 4], // oid
  [28, 4], // xid
  [29, 4], // cid
  [700, 4], // float4
  [1082, 4], // date
  [27, 6], // tid
  [829, 6], // macaddr
  [20, 8], // int8
  [5069, 8], // xid8
  [701, 8], // float8
  [1083, 8], // time
  [1114, 8], // timestamp
  [1184, 8], // timestamptz
  [774, 8], // macaddr8
  [1266, 12], // timetz
  [2950, 16], // uuid
  [1186, 16], // interval
  [600, 16], // point
  [628, 24], // line
  [718, 24], // circle
  [601, 32], // lseg
  [603, 32], // box
]);

/** A binary parameter shorter than its type's value (PostgreSQL: 08P01, "insufficient data left in message") or
 *  longer (22P03, "incorrect binary data format in bind parameter n"). */
export class BinaryParamError extends Error {
  constructor(readonly short: boolean) {
    super(short ? 'insufficient data left in message' : 'incorrect binary data format');
  }
}

/** A binary parameter as the text (or, for bytea, the Buffer pg sends in binary) the recorder runs. */
export function decodeBinaryParam(b: Buffer, oid: number, types: TypeCodecs = BUILT_IN): string | Buffer {
  // (bytea: a copy, for pg to send in binary; b is a view of the socket's chunk, and the value outlives the message)
  if (oid === BYTEA) return Buffer.from(b);
  const size = FIXED_SIZE.get(oid);
  if (size !== undefined && b.length !== size) throw new BinaryParamError(b.length < size);
  const codec = types.codecFor(oid);
  if (codec) {
    try {
      return codec.toText(b);
    } catch (e) {
      // (a length or count that runs past the value's bytes)
      if (e instanceof RangeError) throw new BinaryParamError(true);
      throw e;
    }
  }
  throw new BinaryFormatError(
    `a binary parameter of type oid ${oid || 'unspecified'} (the proxy converts ${CONVERTED}; send it in text format)`,
  );
}

/** Can a result column of this type be sent in binary, given the session's style? */
export function binaryResultSupported(oid: number, style: TextStyle, types: TypeCodecs = BUILT_IN): boolean {
  const codec = types.codecFor(oid);
  if (!codec) return false;
  const supported = styleSupported(style.dateStyle, style.intervalStyle);
  if (codec.style === 'both') return supported.date && supported.interval;
  return codec.style === undefined || supported[codec.style];
}

/** Why a result column cannot be sent in binary (binaryResultSupported is false). */
export function binaryRefusal(name: string, oid: number, style: TextStyle, types: TypeCodecs = BUILT_IN): string {
  const kind = types.codecFor(oid)?.style;
  const because =
    kind === 'date' || kind === 'both'
      ? ` in DateStyle "${style.dateStyle}" (the proxy reads the ISO DateStyle)`
      : kind === 'interval'
        ? ` in IntervalStyle "${style.intervalStyle}" (the proxy reads postgres and iso_8601)`
        : ` (the proxy sends ${CONVERTED} in binary)`;
  return `column "${name}" (type oid ${oid}) is asked for in binary${because}; ask for text results instead`;
}

/** A text value (as the server sent it) in binary format. */
export function encodeBinaryResult(text: string, oid: number, types: TypeCodecs = BUILT_IN): Buffer {
  const b = types.codecFor(oid)?.toBinary(text);
  if (b === undefined) throw new BinaryFormatError(`a value of type oid ${oid} the proxy cannot read: ${text}`);
  return b;
}
