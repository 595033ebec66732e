/**
 * Arrays in binary format (PostgreSQL's array_send / array_recv, utils/adt/arrayfuncs.c), for the proxy's
 * conversion of results and parameters (formats.ts):
 *
 *   int32 ndim, int32 flags (1: has nulls), int32 element type oid, ndim x (int32 length, int32 lower bound),
 *   then each element in row-major order: int32 length (-1: NULL) and its bytes in the element type's binary format
 *
 * and their text ('{1,2}', '{{"a b",NULL},{c,d}}', '[0:1]={1,2}': array_out), element by element through the
 * element type's own conversion.
 */

/** An array type's element type, for the types formats.ts converts. */
export const ARRAY_ELEMENT = new Map<number, number>([
  [1005, 21], // int2
  [1007, 23], // int4
  [1016, 20], // int8
  [1028, 26], // oid
  [1021, 700], // float4
  [1022, 701], // float8
  [1000, 16], // bool
  [1001, 17], // bytea
  [1009, 25], // text
  [1015, 1043], // varchar
  [1014, 1042], // bpchar
  [1003, 19], // name
  [1002, 18], // "char"
  [199, 114], // json
  [3807, 3802], // jsonb
  [1231, 1700], // numeric
  [1182, 1082], // date
  [1183, 1083], // time
  [1270, 1266], // timetz
  [1115, 1114], // timestamp
  [1185, 1184], // timestamptz
  [1187, 1186], // interval
  [2951, 2950], // uuid
  [1011, 28], // xid
  [1012, 29], // cid
  [271, 5069], // xid8
  [1010, 27], // tid
  [1041, 869], // inet
  [651, 650], // cidr
  [1040, 829], // macaddr
  [775, 774], // macaddr8
  [1017, 600], // point
  [1018, 601], // lseg
  [629, 628], // line
  [719, 718], // circle
  [1019, 602], // path
  [1027, 604], // polygon
  [1561, 1560], // bit
  [1563, 1562], // varbit
  [3905, 3904], // int4range
  [3927, 3926], // int8range
  [3907, 3906], // numrange
  [3909, 3908], // tsrange
  [3911, 3910], // tstzrange
  [3913, 3912], // daterange
  [6150, 4451], // int4multirange
  [6157, 4536], // int8multirange
  [6151, 4532], // nummultirange
  [6152, 4533], // tsmultirange
  [6153, 4534], // tstzmultirange
  [6155, 4535], // datemultirange
]);

/** An array's text (array_out) in binary, each element by `element` (undefined: a text it cannot read). */
export function arrayToBinary(
  text: string,
  elementOid: number,
  element: (text: string) => Buffer | undefined,
): Buffer | undefined {
  let pos = 0;
  let lowerBounds: number[] | undefined;
  if (text[0] === '[') {
    // "[lb:ub][lb:ub]=" when a lower bound is not 1
    lowerBounds = [];
    const dims = /^((?:\[-?\d+:-?\d+\])+)=/.exec(text);
    if (!dims) return undefined;
    for (const d of dims[1].matchAll(/\[(-?\d+):(-?\d+)\]/g)) lowerBounds.push(Number(d[1]));
    pos = dims[0].length;
  }
  const lengths: number[] = [];
  const values: (string | null)[] = [];
  // a nested list at depth `depth`: its length is checked against the others' at that depth
  const list = (depth: number): boolean => {
    if (text[pos] !== '{') return false;
    pos++;
    let n = 0;
    if (text[pos] === '}') {
      pos++;
      return depth === 0;
    }
    for (;;) {
      if (text[pos] === '{') {
        if (!list(depth + 1)) return false;
      } else {
        const v = item();
        if (v === undefined) return false;
        values.push(v);
        if (lengths.length > depth + 1) return false;
      }
      n++;
      if (text[pos] === ',') {
        pos++;
        continue;
      }
      if (text[pos] !== '}') return false;
      pos++;
      break;
    }
    if (lengths[depth] === undefined) lengths[depth] = n;
    return lengths[depth] === n;
  };
  const item = (): string | null | undefined => {
    if (text[pos] === '"') {
      let s = '';
      for (pos++; pos < text.length && text[pos] !== '"'; pos++) {
        if (text[pos] === '\\') pos++;
        s += text[pos];
      }
      pos++;
      return s;
    }
    const start = pos;
    while (pos < text.length && text[pos] !== ',' && text[pos] !== '}') pos++;
    const s = text.slice(start, pos);
    return s === 'NULL' ? null : s === '' ? undefined : s;
  };
  if (!list(0) || pos !== text.length) return undefined;
  if (lowerBounds && lowerBounds.length !== lengths.length) return undefined;
  const parts: Buffer[] = [];
  const head = Buffer.alloc(12 + 8 * lengths.length);
  head.writeInt32BE(lengths.length, 0);
  head.writeInt32BE(values.includes(null) ? 1 : 0, 4);
  head.writeUInt32BE(elementOid, 8);
  lengths.forEach((n, i) => {
    head.writeInt32BE(n, 12 + 8 * i);
    head.writeInt32BE(lowerBounds?.[i] ?? 1, 16 + 8 * i);
  });
  parts.push(head);
  for (const v of values) {
    const len = Buffer.alloc(4);
    if (v === null) {
      len.writeInt32BE(-1);
      parts.push(len);
      continue;
    }
    const b = element(v);
    if (b === undefined) return undefined;
    len.writeInt32BE(b.length);
    parts.push(len, b);
  }
  return Buffer.concat(parts);
}

/** A binary array as the text the server reads, each element by `element` (given its type's oid). */
export function arrayFromBinary(b: Buffer, element: (b: Buffer, oid: number) => string): string {
  const ndim = b.readInt32BE(0);
  const oid = b.readUInt32BE(8);
  if (ndim === 0) return '{}';
  const lengths: number[] = [];
  const lowers: number[] = [];
  for (let i = 0; i < ndim; i++) {
    lengths.push(b.readInt32BE(12 + 8 * i));
    lowers.push(b.readInt32BE(16 + 8 * i));
  }
  let pos = 12 + 8 * ndim;
  const next = (): string => {
    const len = b.readInt32BE(pos);
    pos += 4;
    if (len < 0) return 'NULL';
    const v = element(b.subarray(pos, pos + len), oid);
    pos += len;
    // quoted always: any text reads back as itself
    return `"${v.replace(/["\\]/g, (c) => `\\${c}`)}"`;
  };
  const level = (d: number): string => {
    const items: string[] = [];
    for (let i = 0; i < lengths[d]; i++) items.push(d === ndim - 1 ? next() : level(d + 1));
    return `{${items.join(',')}}`;
  };
  const dims = lowers.some((l) => l !== 1)
    ? `${lengths.map((n, i) => `[${lowers[i]}:${lowers[i] + n - 1}]`).join('')}=`
    : '';
  return dims + level(0);
}
