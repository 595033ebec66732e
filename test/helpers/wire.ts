/** Raw protocol bytes on both sides of isocheck proxy (test/proxy-wire.test.ts, test/proxy-wire-random.test.ts):
 *  a client that writes messages and reads what comes back byte for byte, on a direct connection to the server and
 *  on one through the proxy, and the comparison and decoding of what they receive. */
import net from 'node:net';
import pg from 'pg';
import { serialize } from 'pg-protocol';
import type { RunningProxy } from '../../src/proxy/proxy.js';

/** A client speaking raw bytes: what it receives, cut at message boundaries. */
export interface Wire {
  send(b: Buffer): void;
  /** The bytes received until `readies` ReadyForQuery messages (taken off what is received). */
  until(readies: number, timeoutMs?: number): Promise<Buffer>;
  /** The bytes received up to and including the first message for which `isEnd(type)` is true (it is called once
   *  per message, in order, so it may count). */
  take(isEnd: (type: number) => boolean, timeoutMs?: number): Promise<Buffer>;
  close(): void;
}

/** Raw bytes over a socket that has finished its startup (or will, with `startup` sent). */
export async function wire(sock: net.Socket, startup?: Buffer): Promise<Wire> {
  sock.setNoDelay(true);
  sock.on('error', () => undefined);
  let got = Buffer.alloc(0);
  let waiting: (() => void) | undefined;
  sock.on('data', (chunk: Buffer) => {
    got = Buffer.concat([got, chunk]);
    waiting?.();
  });
  /** Where the first message `isEnd` accepts ends in what is received, or -1 (the messages scanned so far are not
   *  passed to it again: `scanned` is kept until the message is taken). */
  let scanned = 0;
  const endOf = (isEnd: (type: number) => boolean): number => {
    while (scanned + 5 <= got.length) {
      const end = scanned + 1 + got.readInt32BE(scanned + 1);
      if (end > got.length) return -1;
      const type = got[scanned];
      scanned = end;
      if (isEnd(type)) return end;
    }
    return -1;
  };
  const take = async (isEnd: (type: number) => boolean, timeoutMs = 10_000): Promise<Buffer> => {
    const deadline = Date.now() + timeoutMs;
    scanned = 0;
    for (;;) {
      const end = endOf(isEnd);
      if (end >= 0) {
        const out = got.subarray(0, end);
        got = got.subarray(end);
        scanned = 0;
        return Buffer.from(out);
      }
      if (Date.now() > deadline) {
        const seen = decode(got);
        scanned = 0;
        throw new Error(`nothing ended in ${timeoutMs} ms; received: ${seen}`);
      }
      await new Promise<void>((resolve) => {
        waiting = resolve;
        setTimeout(resolve, 50);
      });
      waiting = undefined;
    }
  };
  const until = (readies: number, timeoutMs = 10_000): Promise<Buffer> => {
    let seen = 0;
    return take((type) => type === 0x5a && ++seen === readies, timeoutMs);
  };
  if (startup) {
    sock.write(startup);
    await until(1);
  }
  return { send: (b) => sock.write(b), until, take, close: () => sock.end(serialize.end()) };
}

/** The server's own connection (authenticated by pg, then its socket read raw). */
export async function directWire(url: string): Promise<Wire> {
  const c = new pg.Client({ connectionString: url });
  c.on('error', () => undefined); // its socket is the test's once connected, and the test closes it
  await c.connect();
  const stream = (c as unknown as { connection: { stream: net.Socket } }).connection.stream;
  stream.removeAllListeners('data');
  return wire(stream);
}

/** A connection through the proxy to the database of `url`, as its user. */
export async function proxiedWire(url: string, proxy: RunningProxy): Promise<Wire> {
  const u = new URL(url);
  const sock = net.connect(proxy.port, proxy.host);
  await new Promise<void>((resolve, reject) => {
    sock.once('connect', resolve);
    sock.once('error', reject);
  });
  return wire(
    sock,
    serialize.startup({ user: decodeURIComponent(u.username), database: u.pathname.slice(1) || 'postgres' }),
  );
}

/** The server's own connection and the proxy's. */
export async function bothSides(url: string, proxy: RunningProxy): Promise<{ direct: Wire; proxied: Wire }> {
  return { direct: await directWire(url), proxied: await proxiedWire(url, proxy) };
}

/** The messages, in hex, with the source location fields (F file, L line, R routine) taken out of each
 *  ErrorResponse and NoticeResponse: an error or warning the proxy raises itself (26000 for a statement it knows the
 *  server does not have, the warning of a COMMIT in an implicit transaction) has none (docs/recording.md, a known
 *  difference). */
export function withoutSource(b: Buffer): string {
  const out: Buffer[] = [];
  for (let at = 0; at < b.length; ) {
    const end = at + 1 + b.readInt32BE(at + 1);
    if (b[at] !== 0x45 && b[at] !== 0x4e) out.push(b.subarray(at, end));
    else {
      const fields: Buffer[] = [];
      for (let f = at + 5; b[f] !== 0; ) {
        const z = b.indexOf(0, f + 1);
        if (!'FLR'.includes(String.fromCharCode(b[f]))) fields.push(b.subarray(f, z + 1));
        f = z + 1;
      }
      const body = Buffer.concat([...fields, Buffer.from([0])]);
      const head = Buffer.alloc(5);
      head[0] = b[at];
      head.writeInt32BE(body.length + 4, 1);
      out.push(head, body);
    }
    at = end;
  }
  return Buffer.concat(out).toString('hex');
}

/** The fields of an ErrorResponse or NoticeResponse body. */
function fieldsOf(body: Buffer): Record<string, string> {
  const fields: Record<string, string> = {};
  for (let f = 0; f < body.length && body[f] !== 0; ) {
    const z = body.indexOf(0, f + 1);
    fields[String.fromCharCode(body[f])] = body.toString('utf8', f + 1, z);
    f = z + 1;
  }
  return fields;
}

/** Backend messages, one word each: their letters, with an ErrorResponse's or NoticeResponse's SQLSTATE (and
 *  `P` position, `W` context when present), a CommandComplete's tag, a ReadyForQuery's status, a DataRow's values
 *  and a RowDescription's column names. Hex when a message is cut. */
export function decode(b: Buffer): string {
  const words: string[] = [];
  for (let at = 0; at < b.length; ) {
    if (at + 5 > b.length) return `${words.join(' ')} <cut: ${b.subarray(at).toString('hex')}>`;
    const end = at + 1 + b.readInt32BE(at + 1);
    if (end > b.length) return `${words.join(' ')} <cut: ${b.subarray(at).toString('hex')}>`;
    const type = String.fromCharCode(b[at]);
    const body = b.subarray(at + 5, end);
    switch (type) {
      case 'E':
      case 'N': {
        const f = fieldsOf(body);
        const extra = [f.P ? `P${f.P}` : '', f.W ? `W:${f.W.replace(/\s+/g, ' ').slice(0, 60)}` : '']
          .filter((x) => x !== '')
          .join(',');
        words.push(`${type}(${f.C}${extra ? `,${extra}` : ''})`);
        break;
      }
      case 'C':
        words.push(`C(${body.toString('utf8', 0, body.length - 1)})`);
        break;
      case 'Z':
        words.push(`Z(${String.fromCharCode(body[0])})`);
        break;
      case 'D': {
        const values: string[] = [];
        for (let i = 0, n = body.readInt16BE(0), p = 2; i < n; i++) {
          const len = body.readInt32BE(p);
          p += 4;
          values.push(len < 0 ? 'null' : body.toString('utf8', p, p + len));
          if (len > 0) p += len;
        }
        words.push(`D[${values.join(',')}]`);
        break;
      }
      case 'T': {
        const names: string[] = [];
        for (let i = 0, n = body.readInt16BE(0), p = 2; i < n; i++) {
          const z = body.indexOf(0, p);
          names.push(body.toString('utf8', p, z));
          p = z + 1 + 18;
        }
        words.push(`T[${names.join(',')}]`);
        break;
      }
      default:
        words.push(type);
    }
    at = end;
  }
  return words.join(' ');
}
