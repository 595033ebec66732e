/**
 * Composite values in binary format (PostgreSQL's record_send / record_recv, utils/adt/rowtypes.c), for the
 * proxy's conversion of results and parameters (formats.ts, user-types.ts):
 *
 *   int32 the number of columns, then each: uint32 its type oid, int32 length (-1: NULL), its bytes
 *
 * and their text (record_out): `(1,x)`, `(1,"a b",)` (an empty field is NULL; a value with a quote, backslash,
 * parenthesis, comma or space, or an empty one, is quoted, quotes and backslashes doubled inside).
 */
import { BinaryFormatError, type Codec } from './formats.js';
import { quoteField, readField } from './quoted-field.js';

/** The fields of a composite's text (PostgreSQL's record_in): each its text, or null; undefined: not such a text. */
function fields(text: string): (string | null)[] | undefined {
  if (text[0] !== '(' || text[text.length - 1] !== ')') return undefined;
  const out: (string | null)[] = [];
  const stop = text.length - 1;
  for (let i = 1; ; i++) {
    const f = readField(text, i, stop);
    if (!f) return undefined;
    out.push(f.value ?? null);
    if (f.next === stop) return out;
    i = f.next; // (then the comma)
  }
}

/** The session styles a text made of values with these styles follows. */
export function styleOf(styles: Codec['style'][]): Codec['style'] {
  const date = styles.some((x) => x === 'date' || x === 'both');
  const interval = styles.some((x) => x === 'interval' || x === 'both');
  return date && interval ? 'both' : date ? 'date' : interval ? 'interval' : undefined;
}

/** The codec of a composite type whose columns have these types and codecs (undefined: a column not converted). */
export function recordCodec(columns: { oid: number; codec: Codec }[]): Codec {
  return {
    toBinary(text) {
      const values = fields(text);
      if (!values || values.length !== columns.length) return undefined;
      const parts: Buffer[] = [Buffer.alloc(4)];
      parts[0].writeInt32BE(columns.length);
      for (let k = 0; k < columns.length; k++) {
        const head = Buffer.alloc(8);
        head.writeUInt32BE(columns[k].oid, 0);
        const v = values[k];
        if (v === null) {
          head.writeInt32BE(-1, 4);
          parts.push(head);
          continue;
        }
        const b = columns[k].codec.toBinary(v);
        if (b === undefined) return undefined;
        head.writeInt32BE(b.length, 4);
        parts.push(head, b);
      }
      return Buffer.concat(parts);
    },
    toText(b) {
      const n = b.readInt32BE(0);
      if (n !== columns.length)
        throw new BinaryFormatError(`a composite value of ${n} columns, where its type has ${columns.length}`);
      let at = 4;
      const out: string[] = [];
      for (let k = 0; k < n; k++) {
        const len = b.readInt32BE(at + 4);
        at += 8;
        if (len < 0) {
          out.push('');
          continue;
        }
        const v = columns[k].codec.toText(b.subarray(at, at + len));
        at += len;
        out.push(quoteField(v));
      }
      return `(${out.join(',')})`;
    },
    // (its columns' text may follow the session's styles)
    style: styleOf(columns.map((c) => c.codec.style)),
  };
}
