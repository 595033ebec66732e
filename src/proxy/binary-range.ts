/**
 * Ranges in binary format (PostgreSQL's range_send / range_recv, utils/adt/rangetypes.c), for the proxy's
 * conversion of results and parameters (formats.ts):
 *
 *   byte flags (0x01 empty, 0x02 lower inclusive, 0x04 upper inclusive, 0x08 no lower bound, 0x10 no upper bound),
 *   then each bound present as int32 length and its bytes in the element type's binary format
 *
 * and their text (range_out): `empty`, `[1,5)`, `(,6)`, `["2020-01-01 00:00:00+00","2021-01-01 00:00:00+00")`, each
 * bound through the element type's own conversion. Multiranges (multirange_send, utils/adt/multirangetypes.c):
 *
 *   int32 count, then each range as int32 length and its bytes as above
 *
 * and their text (multirange_out): `{}`, `{[1,3),[5,7)}`.
 */
import { quoteField, readField } from './quoted-field.js';

/** A range type's element type. */
export const RANGE_ELEMENT = new Map<number, number>([
  [3904, 23], // int4range
  [3926, 20], // int8range
  [3906, 1700], // numrange
  [3908, 1114], // tsrange
  [3910, 1184], // tstzrange
  [3912, 1082], // daterange
]);

/** A multirange type's range type. */
export const MULTIRANGE_RANGE = new Map<number, number>([
  [4451, 3904], // int4multirange
  [4536, 3926], // int8multirange
  [4532, 3906], // nummultirange
  [4533, 3908], // tsmultirange
  [4534, 3910], // tstzmultirange
  [4535, 3912], // datemultirange
]);

const EMPTY = 0x01,
  LB_INC = 0x02,
  UB_INC = 0x04,
  LB_INF = 0x08,
  UB_INF = 0x10;

/** A range's text (range_out) in binary, each bound by `element` (undefined: a text it cannot read). */
export function rangeToBinary(text: string, element: (text: string) => Buffer | undefined): Buffer | undefined {
  if (text === 'empty') return Buffer.from([EMPTY]);
  const open = text[0];
  const close = text[text.length - 1];
  if ((open !== '[' && open !== '(') || (close !== ']' && close !== ')')) return undefined;
  const stop = text.length - 1;
  const lower = readField(text, 1, stop);
  if (!lower || text[lower.next] !== ',') return undefined;
  const upper = readField(text, lower.next + 1, stop);
  if (!upper || upper.next !== stop) return undefined;
  let flags = 0;
  if (lower.value === undefined) flags |= LB_INF;
  else if (open === '[') flags |= LB_INC;
  if (upper.value === undefined) flags |= UB_INF;
  else if (close === ']') flags |= UB_INC;
  const parts: Buffer[] = [Buffer.from([flags])];
  for (const v of [lower.value, upper.value]) {
    if (v === undefined) continue;
    const b = element(v);
    if (b === undefined) return undefined;
    const len = Buffer.alloc(4);
    len.writeInt32BE(b.length);
    parts.push(len, b);
  }
  return Buffer.concat(parts);
}

/** A binary range as text the server reads, each bound by `element` (quoted always). */
export function rangeFromBinary(b: Buffer, element: (b: Buffer) => string): string {
  const flags = b[0];
  if (flags & EMPTY) return 'empty';
  let at = 1;
  const next = (): string => {
    const len = b.readInt32BE(at);
    const v = element(b.subarray(at + 4, at + 4 + len));
    at += 4 + len;
    return quoteField(v);
  };
  const lower = flags & LB_INF ? '' : next();
  const upper = flags & UB_INF ? '' : next();
  return `${flags & LB_INC ? '[' : '('}${lower},${upper}${flags & UB_INC ? ']' : ')'}`;
}

/** Where the range starting at `at` in a multirange's text ends (after its closing bracket): bounds are quoted
 *  when they hold a bracket or a comma (range_bound_escape); undefined when none closes it. */
function rangeEnd(text: string, at: number, stop: number): number | undefined {
  if (text.startsWith('empty', at)) return at + 5;
  let inquote = false;
  for (let i = at + 1; i < stop; i++) {
    const c = text[i];
    if (c === '\\') i++;
    else if (c === '"') inquote = !inquote;
    else if (!inquote && (c === ')' || c === ']')) return i + 1;
  }
  return undefined;
}

/** A multirange's text (multirange_out) in binary, each range by `range` (undefined: a text it cannot read). */
export function multirangeToBinary(text: string, range: (text: string) => Buffer | undefined): Buffer | undefined {
  if (text[0] !== '{' || text[text.length - 1] !== '}') return undefined;
  const stop = text.length - 1;
  const parts: Buffer[] = [Buffer.alloc(4)];
  let count = 0;
  for (let at = 1; at < stop; ) {
    const end = rangeEnd(text, at, stop);
    const b = end === undefined ? undefined : range(text.slice(at, end));
    const next = end === undefined || end === stop ? stop : end + 1;
    if (end === undefined || b === undefined || (end < stop && (text[end] !== ',' || next === stop))) return undefined;
    const len = Buffer.alloc(4);
    len.writeInt32BE(b.length);
    parts.push(len, b);
    count++;
    at = next;
  }
  parts[0].writeInt32BE(count);
  return Buffer.concat(parts);
}

/** A binary multirange as text the server reads, each range by `range`. */
export function multirangeFromBinary(b: Buffer, range: (b: Buffer) => string): string {
  const ranges: string[] = [];
  let at = 4;
  for (let i = b.readInt32BE(0); i > 0; i--) {
    const len = b.readInt32BE(at);
    ranges.push(range(b.subarray(at + 4, at + 4 + len)));
    at += 4 + len;
  }
  return `{${ranges.join(',')}}`;
}
