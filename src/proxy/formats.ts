/**
 * Binary format on the client's side. Statements run through the recorder in text format (its added columns are
 * read as text); a client asking for binary parameters or results (pgx, pgjdbc once a statement is prepared on the
 * server, asyncpg, Npgsql) gets them converted here: integers, floats, bool, bytea, the text types, json and jsonb,
 * uuid, numeric (binary-numeric.ts), dates, times and intervals (binary-datetime.ts, results in the ISO DateStyle
 * and the postgres or iso_8601 IntervalStyle) and arrays of these (binary-array.ts). Any other type in binary is
 * refused with a clear error (SQLSTATE 0A000). test/proxy-binary-formats.test.ts checks each conversion against
 * the server's own (its *_send functions) on seeded random values.
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

const INT2 = 21,
  INT4 = 23,
  INT8 = 20,
  OID = 26,
  FLOAT4 = 700,
  FLOAT8 = 701,
  BOOL = 16,
  BYTEA = 17,
  CHAR = 18,
  JSONB = 3802,
  UUID = 2950,
  NUMERIC = 1700,
  DATE = 1082,
  TIME = 1083,
  TIMETZ = 1266,
  TIMESTAMP = 1114,
  TIMESTAMPTZ = 1184,
  INTERVAL = 1186;
const DATE_TYPES = new Set([DATE, TIME, TIMETZ, TIMESTAMP, TIMESTAMPTZ]);

/** The session's settings that shape the server's text of dates and intervals (its ParameterStatus). */
export interface TextStyle {
  dateStyle: string;
  intervalStyle: string;
}

/** Types whose binary form is their text's bytes. */
const TEXTUAL = new Set([25, 1043, 1042, 19, 705, 114, 0]);

/** A type whose binary form is its text (text, varchar, bpchar, name, unknown, json; 0: not declared). */
export const textualType = (oid: number): boolean => TEXTUAL.has(oid) && oid !== 0;

export class BinaryFormatError extends Error {}

/** A binary parameter as the text (or, for bytea, the Buffer pg sends in binary) the recorder runs. */
export function decodeBinaryParam(b: Buffer, oid: number): string | Buffer {
  const text = binaryToText(b, oid);
  if (text !== undefined) return text;
  // (bytea: a copy, for pg to send in binary; b is a view of the socket's chunk, and the value outlives the message)
  if (oid === BYTEA) return Buffer.from(b);
  throw new BinaryFormatError(
    `a binary parameter of type oid ${oid || 'unspecified'} (the proxy converts ${CONVERTED}; send it in text format)`,
  );
}

const CONVERTED =
  'integers, floats, numeric, bool, bytea, text types, json, jsonb, uuid, dates, times, timestamps, intervals and ' +
  'arrays of these';

/** A float's text the server reads as the same float (-0 included). */
const floatText = (v: number): string => (Object.is(v, -0) ? '-0' : String(v));

/** A binary value of a type other than bytea as text (undefined: a type not converted). */
function binaryToText(b: Buffer, oid: number): string | undefined {
  switch (oid) {
    case INT2:
      return String(b.readInt16BE(0));
    case INT4:
      return String(b.readInt32BE(0));
    case OID:
      return String(b.readUInt32BE(0));
    case INT8:
      return b.readBigInt64BE(0).toString();
    case FLOAT4:
      return floatText(b.readFloatBE(0));
    case FLOAT8:
      return floatText(b.readDoubleBE(0));
    case BOOL:
      return b[0] ? 't' : 'f';
    case CHAR:
      return b.length === 0 || b[0] === 0 ? '' : b[0] < 128 ? String.fromCharCode(b[0]) : `\\${b[0].toString(8)}`;
    case JSONB:
      // (version 1, then the text)
      return b.toString('utf8', 1);
    case UUID:
      return b.toString('hex').replace(/^(.{8})(.{4})(.{4})(.{4})/, '$1-$2-$3-$4-');
    case NUMERIC:
      return numericFromBinary(b);
    case DATE:
      return dateFromBinary(b);
    case TIMESTAMP:
    case TIMESTAMPTZ:
      return timestampFromBinary(b, oid === TIMESTAMPTZ);
    case TIME:
    case TIMETZ:
      return timeFromBinary(b, oid === TIMETZ);
    case INTERVAL:
      return intervalFromBinary(b);
    default:
      if (TEXTUAL.has(oid) && oid !== 0) return b.toString('utf8');
      if (ARRAY_ELEMENT.has(oid))
        return arrayFromBinary(b, (e, elementOid) => {
          if (elementOid === BYTEA) return `\\x${e.toString('hex')}`;
          const t = binaryToText(e, elementOid);
          if (t === undefined) throw new BinaryFormatError(`an array element of type oid ${elementOid} in binary`);
          return t;
        });
      return undefined;
  }
}

/** Can a result column of this type be sent in binary, given the session's style? */
export function binaryResultSupported(oid: number, style: TextStyle): boolean {
  const base = ARRAY_ELEMENT.get(oid) ?? oid;
  const supported = styleSupported(style.dateStyle, style.intervalStyle);
  if (DATE_TYPES.has(base)) return supported.date;
  if (base === INTERVAL) return supported.interval;
  return (
    base === INT2 ||
    base === INT4 ||
    base === INT8 ||
    base === OID ||
    base === FLOAT4 ||
    base === FLOAT8 ||
    base === BOOL ||
    base === BYTEA ||
    base === CHAR ||
    base === JSONB ||
    base === UUID ||
    base === NUMERIC ||
    TEXTUAL.has(base)
  );
}

/** Why a result column cannot be sent in binary (binaryResultSupported is false). */
export function binaryRefusal(name: string, oid: number, style: TextStyle): string {
  const base = ARRAY_ELEMENT.get(oid) ?? oid;
  const because = DATE_TYPES.has(base)
    ? ` in DateStyle "${style.dateStyle}" (the proxy reads the ISO DateStyle)`
    : base === INTERVAL
      ? ` in IntervalStyle "${style.intervalStyle}" (the proxy reads postgres and iso_8601)`
      : ` (the proxy sends ${CONVERTED} in binary)`;
  return `column "${name}" (type oid ${oid}) is asked for in binary${because}; ask for text results instead`;
}

/** A text value (as the server sent it) in binary format. */
export function encodeBinaryResult(text: string, oid: number): Buffer {
  const b = textToBinary(text, oid);
  if (b === undefined) throw new BinaryFormatError(`a value of type oid ${oid} the proxy cannot read: ${text}`);
  return b;
}

function fixed(size: number, write: (b: Buffer) => void): Buffer {
  const b = Buffer.alloc(size);
  write(b);
  return b;
}

function textToBinary(text: string, oid: number): Buffer | undefined {
  switch (oid) {
    case INT2:
      return fixed(2, (b) => b.writeInt16BE(Number(text)));
    case INT4:
      return fixed(4, (b) => b.writeInt32BE(Number(text)));
    case OID:
      return fixed(4, (b) => b.writeUInt32BE(Number(text)));
    case INT8:
      return fixed(8, (b) => b.writeBigInt64BE(BigInt(text)));
    case FLOAT4:
      return fixed(4, (b) => b.writeFloatBE(Number(text)));
    case FLOAT8:
      return fixed(8, (b) => b.writeDoubleBE(Number(text)));
    case BOOL:
      return Buffer.from([text === 't' ? 1 : 0]);
    case BYTEA:
      return text.startsWith('\\x') ? Buffer.from(text.slice(2), 'hex') : Buffer.from(text, 'latin1');
    case CHAR:
      return Buffer.from([
        text === '' ? 0 : /^\\[0-7]{3}$/.test(text) ? Number.parseInt(text.slice(1), 8) : text.charCodeAt(0),
      ]);
    case JSONB:
      return Buffer.concat([Buffer.from([1]), Buffer.from(text, 'utf8')]);
    case UUID:
      return Buffer.from(text.replace(/-/g, ''), 'hex');
    case NUMERIC:
      return numericToBinary(text);
    case DATE:
      return dateToBinary(text);
    case TIMESTAMP:
    case TIMESTAMPTZ:
      return timestampToBinary(text, oid === TIMESTAMPTZ);
    case TIME:
    case TIMETZ:
      return timeToBinary(text, oid === TIMETZ);
    case INTERVAL:
      return intervalToBinary(text);
    default: {
      if (TEXTUAL.has(oid)) return Buffer.from(text, 'utf8');
      const element = ARRAY_ELEMENT.get(oid);
      if (element === undefined) return undefined;
      return arrayToBinary(text, element, (t) =>
        element === BYTEA ? Buffer.from(t.slice(2), 'hex') : textToBinary(t, element),
      );
    }
  }
}
