/**
 * What the proxy sends its clients (protocol 3.0, backend side), as bytes. pg-protocol serializes only the
 * frontend side, so these few message builders are ours.
 */

/** A column of a RowDescription. */
export interface Column {
  name: string;
  tableID: number;
  columnID: number;
  dataTypeID: number;
  dataTypeSize: number;
  dataTypeModifier: number;
  format: number;
}

/** ErrorResponse / NoticeResponse fields by their one-letter codes (S, V, C, M, D, H, P, ...). */
export type Fields = Partial<Record<string, string>>;

function message(type: string, body: Buffer): Buffer {
  const head = Buffer.alloc(5);
  head.write(type, 0, 'latin1');
  head.writeInt32BE(body.length + 4, 1);
  return Buffer.concat([head, body]);
}

const cstr = (s: string): Buffer => Buffer.from(`${s}\0`, 'utf8');
const int32 = (n: number): Buffer => {
  const b = Buffer.alloc(4);
  b.writeInt32BE(n | 0);
  return b;
};
const int16 = (n: number): Buffer => {
  const b = Buffer.alloc(2);
  b.writeInt16BE(n);
  return b;
};

export const authenticationOk = (): Buffer => message('R', int32(0));
export const authenticationMD5Password = (salt: Buffer): Buffer => message('R', Buffer.concat([int32(5), salt]));
export const parameterStatus = (name: string, value: string): Buffer =>
  message('S', Buffer.concat([cstr(name), cstr(value)]));
export const backendKeyData = (pid: number, secret: number): Buffer =>
  message('K', Buffer.concat([int32(pid), int32(secret)]));
export const readyForQuery = (status: string): Buffer => message('Z', Buffer.from(status, 'latin1'));
export const parseComplete = (): Buffer => message('1', Buffer.alloc(0));
export const bindComplete = (): Buffer => message('2', Buffer.alloc(0));
export const closeComplete = (): Buffer => message('3', Buffer.alloc(0));
export const noData = (): Buffer => message('n', Buffer.alloc(0));
export const portalSuspended = (): Buffer => message('s', Buffer.alloc(0));
export const emptyQueryResponse = (): Buffer => message('I', Buffer.alloc(0));
export const commandComplete = (tag: string): Buffer => message('C', cstr(tag));

/** CopyInResponse ('G') or CopyOutResponse ('H'): the overall format and each column's. */
export function copyResponse(type: 'G' | 'H', binary: boolean, columnFormats: number[]): Buffer {
  return message(
    type,
    Buffer.concat([Buffer.from([binary ? 1 : 0]), int16(columnFormats.length), ...columnFormats.map(int16)]),
  );
}
export const copyData = (chunk: Buffer): Buffer => message('d', chunk);
export const copyDone = (): Buffer => message('c', Buffer.alloc(0));

export function parameterDescription(types: number[]): Buffer {
  return message('t', Buffer.concat([int16(types.length), ...types.map((t) => int32(t))]));
}

export function rowDescription(columns: Column[]): Buffer {
  const parts: Buffer[] = [int16(columns.length)];
  for (const c of columns) {
    const b = Buffer.alloc(18);
    b.writeInt32BE(c.tableID | 0, 0);
    b.writeInt16BE(c.columnID, 4);
    b.writeInt32BE(c.dataTypeID | 0, 6);
    b.writeInt16BE(c.dataTypeSize, 10);
    b.writeInt32BE(c.dataTypeModifier | 0, 12);
    b.writeInt16BE(c.format, 16);
    parts.push(cstr(c.name), b);
  }
  return message('T', Buffer.concat(parts));
}

export function dataRow(values: (Buffer | null)[]): Buffer {
  const parts: Buffer[] = [int16(values.length)];
  for (const v of values) {
    if (v === null) parts.push(int32(-1));
    else parts.push(int32(v.length), v);
  }
  return message('D', Buffer.concat(parts));
}

function fieldsBody(fields: Fields): Buffer {
  const parts: Buffer[] = [];
  for (const [k, v] of Object.entries(fields))
    if (v !== undefined && v !== '') parts.push(Buffer.from(k, 'latin1'), cstr(v));
  parts.push(Buffer.from([0]));
  return Buffer.concat(parts);
}

export const errorResponse = (fields: Fields): Buffer => message('E', fieldsBody(fields));
export const noticeResponse = (fields: Fields): Buffer => message('N', fieldsBody(fields));

/** The fields of an error or notice as node-postgres gives it (pg-protocol's DatabaseError / NoticeMessage). */
export function fieldsOf(e: Record<string, unknown>, positionOffset = 0): Fields {
  const s = (k: string): string | undefined => (typeof e[k] === 'string' ? (e[k] as string) : undefined);
  const pos = s('position');
  return {
    S: s('severity') ?? 'ERROR',
    V: s('severity') ?? 'ERROR',
    C: s('code') ?? 'XX000',
    M: s('message') ?? String(e),
    D: s('detail'),
    H: s('hint'),
    P: pos !== undefined ? String(Number(pos) + positionOffset) : undefined,
    p: s('internalPosition'),
    q: s('internalQuery'),
    W: s('where'),
    s: s('schema'),
    t: s('table'),
    c: s('column'),
    d: s('dataType'),
    n: s('constraint'),
    F: s('file'),
    L: s('line'),
    R: s('routine'),
  };
}
