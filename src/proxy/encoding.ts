/**
 * The client's text encoding (docs/recording.md, "Through isocheck proxy": encodings). The proxy reads and writes
 * text as UTF-8 (its server connection is pg's, which decodes UTF-8): a client that asks for another
 * client_encoding (LATIN1, WIN1252, ...) is refused with a clear error, at startup or at its SET, rather than having
 * its bytes decoded as UTF-8 and written to the database changed. SQL_ASCII is taken as UTF-8 (libpq asks for it in
 * the C locale; on a UTF-8 database the server accepts only UTF-8 from it anyway).
 *
 * A client's text that is not valid UTF-8 gets PostgreSQL's own error (22021, the bytes of the first invalid
 * character as report_invalid_encoding prints them), at the message that carries it, as on a direct connection.
 */
import { isUtf8 } from 'node:buffer';

/** client_encoding values the proxy serves (PostgreSQL's names and aliases, compared as it compares them). */
const SERVED = new Set(['utf8', 'unicode', 'sqlascii']);

/** Is this client_encoding one the proxy serves? (PostgreSQL ignores case and non-alphanumerics in names.) */
export function encodingServed(name: string): boolean {
  return SERVED.has(name.toLowerCase().replace(/[^a-z0-9]/g, ''));
}

/** The refusal of another client_encoding. */
export function encodingRefused(name: string): string {
  return (
    `isocheck proxy: client_encoding "${name}" is not supported: the proxy reads and writes UTF-8 (connect with ` +
    'client_encoding UTF8, e.g. PGCLIENTENCODING=UTF8)'
  );
}

/** The client_encoding a startup `options` value sets (-c client_encoding=X or --client_encoding=X), if any. */
export function encodingInOptions(options: string | undefined): string | undefined {
  const m = /(?:^|\s)(?:-c\s*|--)client[_-]encoding=(\S+)/i.exec(options ?? '');
  return m?.[1];
}

/** PostgreSQL's pg_utf_mblen: the length of the character a UTF-8 lead byte starts. */
function mblen(b: number): number {
  if ((b & 0x80) === 0) return 1;
  if ((b & 0xe0) === 0xc0) return 2;
  if ((b & 0xf0) === 0xe0) return 3;
  if ((b & 0xf8) === 0xf0) return 4;
  return 1;
}

/** PostgreSQL's pg_utf8_islegal: is this a whole, legal UTF-8 character (of `n` bytes) at `at`? */
function legal(b: Buffer, at: number, n: number): boolean {
  if (at + n > b.length) return false;
  const a = b[at];
  const second = n > 1 ? b[at + 1] : 0;
  for (let i = 1; i < n; i++) if (b[at + i] < 0x80 || b[at + i] > 0xbf) return false;
  switch (n) {
    case 1:
      return a < 0x80 && a !== 0; // (PostgreSQL takes no zero byte in text)
    case 2:
      return a >= 0xc2 && a <= 0xdf;
    case 3:
      if (a === 0xe0) return second >= 0xa0;
      if (a === 0xed) return second <= 0x9f;
      return a > 0xe0 && a <= 0xef;
    default:
      if (a === 0xf0) return second >= 0x90;
      if (a === 0xf4) return second <= 0x8f;
      return a > 0xf0 && a < 0xf4;
  }
}

/** The message of PostgreSQL's 22021 for bytes that are not valid UTF-8, or undefined when they are. */
export function invalidUtf8(b: Buffer): string | undefined {
  if (isUtf8(b) && !b.includes(0)) return undefined;
  let at = 0;
  while (at < b.length) {
    const n = mblen(b[at]);
    if (!legal(b, at, n)) {
      const shown = [...b.subarray(at, at + Math.min(n, b.length - at, 8))].map(
        (x) => `0x${x.toString(16).padStart(2, '0')}`,
      );
      return `invalid byte sequence for encoding "UTF8": ${shown.join(' ')}`;
    }
    at += n;
  }
  return 'invalid byte sequence for encoding "UTF8"';
}
