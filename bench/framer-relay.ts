/**
 * A relay that parses (the proxy bench's `framer` mode, bench/proxy-overhead.ts): a Node script that splits the
 * protocol's messages both ways and does the least per-message work a proxy rewriting messages in place would do:
 * decodes every Parse's and Query's text, looks it up in a Map and encodes the message again, and rebuilds every
 * DataRow field by field. No pg client, no recording. What per-message JavaScript costs, beside the byte pipe
 * (`relay`) and the proxy. Run as `node -e FRAMER_RELAY URL`; prints its own URL.
 */
/** The end of a relay script (its net.Server `server`, the server's URL `db`): listens on a free port of 127.0.0.1,
 *  prints the URL clients should use, and exits 0 on SIGTERM. */
export const LISTEN_AND_PRINT = `
server.listen(0, '127.0.0.1', () => {
  const mine = new URL(db);
  mine.hostname = '127.0.0.1';
  mine.port = String(server.address().port);
  console.log(mine.toString());
});
process.on('SIGTERM', () => process.exit(0));
`;

export const FRAMER_RELAY = `
const net = require('node:net');
const db = process.argv[process.argv.length - 1];
const u = new URL(db);
const cache = new Map();
const again = (text) => {
  let r = cache.get(text);
  if (r === undefined) cache.set(text, (r = Buffer.from(text, 'utf8')));
  return r;
};
/** The whole messages of a chunk (and what is left of one), each passed through 'each'. */
function frames(pending, chunk, each) {
  const b = pending ? Buffer.concat([pending, chunk]) : chunk;
  const out = [];
  let i = 0;
  while (i + 5 <= b.length) {
    const len = b.readInt32BE(i + 1);
    if (i + 1 + len > b.length) break;
    out.push(each(b, i, len));
    i += 1 + len;
  }
  return { out, rest: i < b.length ? b.subarray(i) : null };
}
function fromClient(b, i, len) {
  if (b[i] === 0x50) {
    // Parse: name, text, the rest (parameter types)
    const nameEnd = b.indexOf(0, i + 5);
    const textEnd = b.indexOf(0, nameEnd + 1);
    const text = again(b.toString('utf8', nameEnd + 1, textEnd));
    const name = b.subarray(i + 5, nameEnd + 1);
    const rest = b.subarray(textEnd, i + 1 + len);
    const m = Buffer.allocUnsafe(5 + name.length + text.length + rest.length);
    m[0] = 0x50;
    m.writeInt32BE(4 + name.length + text.length + rest.length, 1);
    name.copy(m, 5);
    text.copy(m, 5 + name.length);
    rest.copy(m, 5 + name.length + text.length);
    return m;
  }
  if (b[i] === 0x51) {
    const text = again(b.toString('utf8', i + 5, i + len));
    const m = Buffer.allocUnsafe(6 + text.length);
    m[0] = 0x51;
    m.writeInt32BE(5 + text.length, 1);
    text.copy(m, 5);
    m[5 + text.length] = 0;
    return m;
  }
  return b.subarray(i, i + 1 + len);
}
function fromServer(b, i, len) {
  if (b[i] !== 0x44) return b.subarray(i, i + 1 + len);
  // DataRow: each field read, the message written again
  const n = b.readInt16BE(i + 5);
  let p = i + 7;
  const values = [];
  let size = 6;
  for (let k = 0; k < n; k++) {
    const l = b.readInt32BE(p);
    p += 4;
    values.push(l < 0 ? null : b.subarray(p, p + l));
    if (l > 0) p += l;
    size += 4 + (l > 0 ? l : 0);
  }
  const m = Buffer.allocUnsafe(1 + size);
  m[0] = 0x44;
  m.writeInt32BE(size, 1);
  m.writeInt16BE(n, 5);
  let q = 7;
  for (const v of values) {
    m.writeInt32BE(v === null ? -1 : v.length, q);
    q += 4;
    if (v !== null) q += v.copy(m, q);
  }
  return m;
}
const server = net.createServer((c) => {
  const s = net.connect(Number(u.port || 5432), u.hostname);
  c.setNoDelay(true);
  s.setNoDelay(true);
  let started = false;
  let fromC = null;
  let fromS = null;
  c.on('data', (d) => {
    if (!started) {
      // the startup packet (or an SSLRequest first) goes as it is
      s.write(d);
      started = d.length >= 8 && d.readInt32BE(4) !== 80877103;
      return;
    }
    const r = frames(fromC, d, fromClient);
    fromC = r.rest;
    if (r.out.length) s.write(r.out.length === 1 ? r.out[0] : Buffer.concat(r.out));
  });
  s.on('data', (d) => {
    const r = frames(fromS, d, fromServer);
    fromS = r.rest;
    if (r.out.length) c.write(r.out.length === 1 ? r.out[0] : Buffer.concat(r.out));
  });
  c.on('error', () => s.destroy());
  s.on('error', () => c.destroy());
  c.on('close', () => s.end());
  s.on('close', () => c.end());
});
${LISTEN_AND_PRINT}`;
