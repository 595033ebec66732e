/**
 * Binary format on the client's side. Statements run through the recorder in text format (its added columns are
 * read as text); a client asking for binary parameters or results gets them converted here, for the types whose
 * binary form is simple. Any other type in binary is refused with a clear error (SQLSTATE 0A000).
 */

const INT2 = 21,
  INT4 = 23,
  INT8 = 20,
  OID = 26,
  FLOAT4 = 700,
  FLOAT8 = 701,
  BOOL = 16,
  BYTEA = 17;
/** Types whose binary form is their text's bytes. */
const TEXTUAL = new Set([25, 1043, 1042, 19, 705, 114, 0]);

/** A type whose binary form is its text (text, varchar, bpchar, name, unknown, json; 0: not declared). */
export const textualType = (oid: number): boolean => TEXTUAL.has(oid) && oid !== 0;

export class BinaryFormatError extends Error {}

/** A binary parameter as the text (or, for bytea, the Buffer pg sends in binary) the recorder runs. */
export function decodeBinaryParam(b: Buffer, oid: number): string | Buffer {
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
      return String(b.readFloatBE(0));
    case FLOAT8:
      return String(b.readDoubleBE(0));
    case BOOL:
      return b[0] ? 't' : 'f';
    case BYTEA:
      return Buffer.from(b); // a copy: b is a view of the socket's chunk, and the value outlives the message
    default:
      if (TEXTUAL.has(oid) && oid !== 0) return b.toString('utf8');
      throw new BinaryFormatError(
        `a binary parameter of type oid ${oid || 'unspecified'} (the proxy converts int2/4/8, float4/8, bool, ` +
          'bytea and text types only; send it in text format)',
      );
  }
}

/** Can a result column of this type be sent in binary? */
export function binaryResultSupported(oid: number): boolean {
  return (
    oid === INT2 ||
    oid === INT4 ||
    oid === INT8 ||
    oid === OID ||
    oid === FLOAT4 ||
    oid === FLOAT8 ||
    oid === BOOL ||
    oid === BYTEA ||
    TEXTUAL.has(oid)
  );
}

/** A text value (as the server sent it) in binary format. */
export function encodeBinaryResult(text: string, oid: number): Buffer {
  switch (oid) {
    case INT2: {
      const b = Buffer.alloc(2);
      b.writeInt16BE(Number(text));
      return b;
    }
    case INT4: {
      const b = Buffer.alloc(4);
      b.writeInt32BE(Number(text));
      return b;
    }
    case OID: {
      const b = Buffer.alloc(4);
      b.writeUInt32BE(Number(text));
      return b;
    }
    case INT8: {
      const b = Buffer.alloc(8);
      b.writeBigInt64BE(BigInt(text));
      return b;
    }
    case FLOAT4: {
      const b = Buffer.alloc(4);
      b.writeFloatBE(Number(text));
      return b;
    }
    case FLOAT8: {
      const b = Buffer.alloc(8);
      b.writeDoubleBE(Number(text));
      return b;
    }
    case BOOL:
      return Buffer.from([text === 't' ? 1 : 0]);
    case BYTEA:
      return text.startsWith('\\x') ? Buffer.from(text.slice(2), 'hex') : Buffer.from(text, 'latin1');
    default:
      return Buffer.from(text, 'utf8');
  }
}
