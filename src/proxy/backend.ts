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
  const b = Buffer.allocUnsafe(5 + body.length);
  b[0] = type.charCodeAt(0);
  b.writeInt32BE(body.length + 4, 1);
  body.copy(b, 5);
  return b;
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

/** A message without a body, made once: the same bytes every time (nothing writes into a message once built). */
const empty = (type: string): (() => Buffer) => {
  const b = message(type, Buffer.alloc(0));
  return () => b;
};
const READY: Record<string, Buffer> = {
  I: message('Z', Buffer.from('I', 'latin1')),
  T: message('Z', Buffer.from('T', 'latin1')),
  E: message('Z', Buffer.from('E', 'latin1')),
};

export const authenticationOk = (): Buffer => message('R', int32(0));
export const authenticationMD5Password = (salt: Buffer): Buffer => message('R', Buffer.concat([int32(5), salt]));
export const parameterStatus = (name: string, value: string): Buffer =>
  message('S', Buffer.concat([cstr(name), cstr(value)]));
export const backendKeyData = (pid: number, secret: number): Buffer =>
  message('K', Buffer.concat([int32(pid), int32(secret)]));
/** NotificationResponse (LISTEN/NOTIFY): the notifying backend's pid, the channel, the payload. */
export const notificationResponse = (pid: number, channel: string, payload: string): Buffer =>
  message('A', Buffer.concat([int32(pid), cstr(channel), cstr(payload)]));
export const readyForQuery = (status: string): Buffer => READY[status] ?? message('Z', Buffer.from(status, 'latin1'));
export const parseComplete = empty('1');
export const bindComplete = empty('2');
export const closeComplete = empty('3');
export const noData = empty('n');
export const portalSuspended = empty('s');
export const emptyQueryResponse = empty('I');
export function commandComplete(tag: string): Buffer {
  const n = Buffer.byteLength(tag, 'utf8');
  const b = Buffer.allocUnsafe(6 + n);
  b[0] = 0x43; // 'C'
  b.writeInt32BE(5 + n, 1);
  b.write(tag, 5, n, 'utf8');
  b[5 + n] = 0;
  return b;
}

/** CopyInResponse ('G') or CopyOutResponse ('H'): the overall format and each column's. */
export function copyResponse(type: 'G' | 'H', binary: boolean, columnFormats: number[]): Buffer {
  return message(
    type,
    Buffer.concat([Buffer.from([binary ? 1 : 0]), int16(columnFormats.length), ...columnFormats.map(int16)]),
  );
}
export const copyData = (chunk: Buffer): Buffer => message('d', chunk);
export const copyDone = empty('c');

export function parameterDescription(types: number[]): Buffer {
  return message('t', Buffer.concat([int16(types.length), ...types.map((t) => int32(t))]));
}

export function rowDescription(columns: Column[]): Buffer {
  let length = 6;
  const names = columns.map((c) => Buffer.byteLength(c.name, 'utf8'));
  for (const n of names) length += n + 1 + 18;
  const b = Buffer.allocUnsafe(1 + length);
  b[0] = 0x54; // 'T'
  b.writeInt32BE(length, 1);
  b.writeInt16BE(columns.length, 5);
  let at = 7;
  columns.forEach((c, i) => {
    at += b.write(c.name, at, names[i], 'utf8');
    b[at++] = 0;
    b.writeInt32BE(c.tableID | 0, at);
    b.writeInt16BE(c.columnID, at + 4);
    b.writeInt32BE(c.dataTypeID | 0, at + 6);
    b.writeInt16BE(c.dataTypeSize, at + 10);
    b.writeInt32BE(c.dataTypeModifier | 0, at + 12);
    b.writeInt16BE(c.format, at + 16);
    at += 18;
  });
  return b;
}

export function dataRow(values: (Buffer | null)[]): Buffer {
  let length = 6;
  for (const v of values) length += v === null ? 4 : 4 + v.length;
  const b = Buffer.allocUnsafe(1 + length);
  b[0] = 0x44; // 'D'
  b.writeInt32BE(length, 1);
  b.writeInt16BE(values.length, 5);
  let at = 7;
  for (const v of values) {
    b.writeInt32BE(v === null ? -1 : v.length, at);
    at += 4;
    if (v !== null) at += v.copy(b, at);
  }
  return b;
}

/** A DataRow of text values (UTF-8), written into one buffer (no buffer per value). */
export function dataRowText(values: readonly (string | null)[]): Buffer {
  let length = 6;
  const sizes = new Array<number>(values.length);
  for (let i = 0; i < values.length; i++) {
    const v = values[i];
    sizes[i] = v === null ? -1 : Buffer.byteLength(v, 'utf8');
    length += 4 + (v === null ? 0 : sizes[i]);
  }
  const b = Buffer.allocUnsafe(1 + length);
  b[0] = 0x44; // 'D'
  b.writeInt32BE(length, 1);
  b.writeInt16BE(values.length, 5);
  let at = 7;
  for (let i = 0; i < values.length; i++) {
    b.writeInt32BE(sizes[i], at);
    at += 4;
    const v = values[i];
    if (v !== null) at += b.write(v, at, sizes[i], 'utf8');
  }
  return b;
}

/** An ErrorResponse or NoticeResponse: each non-empty field as its code and a C string, then a zero byte; one
 *  buffer, written in place. */
function fieldsMessage(type: number, fields: Fields): Buffer {
  let length = 5;
  for (const k in fields) {
    const v = fields[k];
    if (v !== undefined && v !== '') length += Buffer.byteLength(k, 'latin1') + Buffer.byteLength(v, 'utf8') + 1;
  }
  const b = Buffer.allocUnsafe(1 + length);
  b[0] = type;
  b.writeInt32BE(length, 1);
  let at = 5;
  for (const k in fields) {
    const v = fields[k];
    if (v === undefined || v === '') continue;
    at += b.write(k, at, 'latin1');
    at += b.write(v, at, 'utf8');
    b[at++] = 0;
  }
  b[at] = 0;
  return b;
}

export const errorResponse = (fields: Fields): Buffer => fieldsMessage(0x45, fields); // 'E'
export const noticeResponse = (fields: Fields): Buffer => fieldsMessage(0x4e, fields); // 'N'

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
