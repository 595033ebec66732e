// The tokens of a SQL text as libpg-query's scanner finds them, with their offsets in JavaScript's string units
// (the scanner's, and the parser's locations, are UTF-8 bytes): for the places that cut or point into a statement's
// text (an error position mapped back, a table's name replaced in a COPY).

import { scanSync } from 'libpg-query';

export interface SqlToken {
  /** [start, end) in the text's string units. */
  start: number;
  end: number;
  /** The token as written (a comment, a quoted name, a keyword in its case). */
  text: string;
}

/** The tokens of `text`, and the string offset of a UTF-8 byte offset in it (clamped to the text). Throws what the
 *  scanner throws (an unterminated quote). */
export function sqlTokens(text: string): { tokens: SqlToken[]; charAt: (byte: number) => number } {
  const scanned = (scanSync(text) as { tokens?: SqlToken[] }).tokens ?? [];
  const bytes = Buffer.byteLength(text, 'utf8');
  let charAt: (byte: number) => number;
  if (bytes === text.length) charAt = (b) => Math.min(Math.max(b, 0), bytes);
  else {
    const table = new Int32Array(bytes + 1);
    let b = 0;
    let c = 0;
    for (const ch of text) {
      const n = Buffer.byteLength(ch, 'utf8');
      for (let i = 0; i < n; i++) table[b + i] = c;
      b += n;
      c += ch.length;
    }
    table[bytes] = c;
    charAt = (x) => table[Math.min(Math.max(x, 0), bytes)];
  }
  const tokens = scanned.map((t) => ({ start: charAt(t.start), end: charAt(t.end), text: t.text }));
  return { tokens, charAt };
}
