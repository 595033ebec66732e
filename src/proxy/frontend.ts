/**
 * What a PostgreSQL client sends (protocol 3.0, frontend side), cut from the socket's bytes into messages:
 * the untyped first packet (StartupMessage, SSLRequest, GSSENCRequest, CancelRequest), then typed messages
 * (Query, Parse, Bind, Describe, Execute, Sync, Close, Flush, Terminate, PasswordMessage, and COPY's CopyData, CopyDone
 * and CopyFail; others are kept raw for the caller to refuse).
 *
 * pg-protocol parses only the backend side (what a server sends), so this side is ours: a few dozen lines.
 */
import { invalidUtf8 } from './encoding.js';

export type StartupPacket =
  | { kind: 'startup'; params: Record<string, string> }
  | { kind: 'ssl' }
  | { kind: 'gssenc' }
  | { kind: 'cancel'; processId: number; secretKey: Buffer }
  | { kind: 'unsupported-version'; version: number };

export type FrontendMessage = (
  | { type: 'Q'; text: string }
  | { type: 'P'; name: string; text: string; paramTypes: number[] }
  | {
      type: 'B';
      portal: string;
      statement: string;
      paramFormats: number[];
      params: (Buffer | null)[];
      resultFormats: number[];
    }
  | { type: 'D'; what: 'S' | 'P'; name: string }
  | { type: 'E'; portal: string; maxRows: number }
  | { type: 'C'; what: 'S' | 'P'; name: string }
  | { type: 'S' }
  | { type: 'H' }
  | { type: 'X' }
  | { type: 'p'; password: string }
  | { type: 'd'; data: Buffer }
  | { type: 'c' }
  | { type: 'f'; message: string }
  | { type: 'other'; code: string }
) & {
  /** A string of it is not valid UTF-8: PostgreSQL's error message for it (22021, encoding.ts). */
  invalidUtf8?: string;
};

const SSL_CODE = 80877103;
const GSSENC_CODE = 80877104;
const CANCEL_CODE = 80877102;
const PROTOCOL_3 = 196608;

class Cursor {
  at = 0;
  /** The first string read that is not valid UTF-8: PostgreSQL's error message for it. */
  invalid: string | undefined;
  constructor(private readonly b: Buffer) {}
  int32(): number {
    const v = this.b.readInt32BE(this.at);
    this.at += 4;
    return v;
  }
  int16(): number {
    const v = this.b.readInt16BE(this.at);
    this.at += 2;
    return v;
  }
  byte(): string {
    return String.fromCharCode(this.b[this.at++]);
  }
  cstring(): string {
    const end = this.b.indexOf(0, this.at);
    if (end < 0) throw new Error('malformed message: unterminated string');
    this.invalid ??= invalidUtf8(this.b.subarray(this.at, end));
    const s = this.b.toString('utf8', this.at, end);
    this.at = end + 1;
    return s;
  }
  bytes(n: number): Buffer {
    const v = this.b.subarray(this.at, this.at + n);
    this.at += n;
    return v;
  }
}

function parseStartup(body: Buffer): StartupPacket {
  const c = new Cursor(body);
  const code = c.int32();
  if (code === SSL_CODE) return { kind: 'ssl' };
  if (code === GSSENC_CODE) return { kind: 'gssenc' };
  if (code === CANCEL_CODE)
    return { kind: 'cancel', processId: c.int32(), secretKey: Buffer.from(c.bytes(body.length - 8)) };
  if (code >> 16 !== 3) return { kind: 'unsupported-version', version: code };
  const params: Record<string, string> = {};
  while (c.at < body.length && body[c.at] !== 0) {
    const k = c.cstring();
    params[k] = c.cstring();
  }
  void PROTOCOL_3;
  return { kind: 'startup', params };
}

function parseTyped(type: string, body: Buffer): FrontendMessage {
  const c = new Cursor(body);
  const m = parseBody(type, c, body);
  if (c.invalid !== undefined) m.invalidUtf8 = c.invalid;
  return m;
}

function parseBody(type: string, c: Cursor, body: Buffer): FrontendMessage {
  switch (type) {
    case 'Q':
      return { type, text: c.cstring() };
    case 'P': {
      const name = c.cstring();
      const text = c.cstring();
      const n = c.int16();
      const paramTypes: number[] = [];
      for (let i = 0; i < n; i++) paramTypes.push(c.int32() >>> 0);
      return { type, name, text, paramTypes };
    }
    case 'B': {
      const portal = c.cstring();
      const statement = c.cstring();
      const paramFormats: number[] = [];
      for (let i = 0, n = c.int16(); i < n; i++) paramFormats.push(c.int16());
      const params: (Buffer | null)[] = [];
      for (let i = 0, n = c.int16(); i < n; i++) {
        const len = c.int32();
        // a view: the chunk is not reused, and bind() turns the values into strings (or decoded values) at once
        params.push(len < 0 ? null : c.bytes(len));
      }
      const resultFormats: number[] = [];
      for (let i = 0, n = c.int16(); i < n; i++) resultFormats.push(c.int16());
      return { type, portal, statement, paramFormats, params, resultFormats };
    }
    case 'D':
    case 'C': {
      const what = c.byte();
      if (what !== 'S' && what !== 'P') throw new Error(`malformed ${type === 'D' ? 'Describe' : 'Close'}: ${what}`);
      return { type, what, name: c.cstring() };
    }
    case 'E':
      return { type, portal: c.cstring(), maxRows: c.int32() };
    case 'S':
    case 'H':
    case 'X':
    case 'c':
      return { type };
    case 'd':
      return { type, data: body };
    case 'f':
      return { type, message: c.cstring() };
    case 'p':
      return { type, password: c.cstring() };
    default:
      return { type: 'other', code: type };
  }
}

/** Feeds socket chunks in; calls back with each whole message, the startup packet(s) first. */
export class FrontendReader {
  private buf: Buffer = Buffer.alloc(0);
  /** True until the StartupMessage (an SSLRequest or GSSENCRequest is followed by another untyped packet). */
  private untyped = true;

  constructor(
    private readonly onStartup: (p: StartupPacket) => void,
    private readonly onMessage: (m: FrontendMessage) => void,
  ) {}

  push(chunk: Buffer): void {
    this.buf = this.buf.length === 0 ? chunk : Buffer.concat([this.buf, chunk]);
    for (;;) {
      if (this.untyped) {
        if (this.buf.length < 4) return;
        const len = this.buf.readInt32BE(0);
        if (len < 8 || len > 10000) throw new Error(`malformed startup packet (length ${len})`);
        if (this.buf.length < len) return;
        const p = parseStartup(this.buf.subarray(4, len));
        this.buf = this.buf.subarray(len);
        if (p.kind !== 'ssl' && p.kind !== 'gssenc') this.untyped = false;
        this.onStartup(p);
        continue;
      }
      if (this.buf.length < 5) return;
      const len = this.buf.readInt32BE(1);
      if (len < 4) throw new Error(`malformed message (length ${len})`);
      if (this.buf.length < 1 + len) return;
      const type = String.fromCharCode(this.buf[0]);
      const body = this.buf.subarray(5, 1 + len);
      this.buf = this.buf.subarray(1 + len);
      this.onMessage(parseTyped(type, body));
    }
  }
}
