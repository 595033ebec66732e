/**
 * A simple-protocol Query string cut into its statements (libpg-query, the parser the recorder rewrites with), so
 * that each runs through the recorder on its own. Offsets are libpg-query's, in UTF-8 bytes. A string that does
 * not parse is one statement: the server then gives its syntax error as it would have.
 */
import { parseSync } from 'libpg-query';

export interface Piece {
  text: string;
  /** Where it starts in the whole string, in characters (for an error's position). */
  offset: number;
  /** `COPY ... FROM STDIN` or `COPY ... TO STDOUT`: data goes through the protocol (CopyData messages). */
  copy?: boolean;
}

interface Stmt {
  stmt_location?: number;
  stmt_len?: number;
  stmt?: { CopyStmt?: { filename?: string } };
}

const CACHE_SIZE = 2000;
const cache = new Map<string, Piece[]>();

/** What a Query of several statements, a comment or a COPY needs: without any, it is one statement. */
const NOT_PLAIN = /[;]|--|\/\*|copy/i;
/** PostgreSQL's whitespace (another character, a no-break space, is the server's syntax error to give). */
const LEADING = /^[ \t\n\r\f\v]+/;
const TRAILING = /[ \t\n\r\f\v]+$/;

/** A text of one statement, known without parsing it: no comment, no COPY, and no ';' but maybe one that ends it
 *  (pgbench's) when the text has no quotes (where a ';' could be inside a string or name). */
function plainStatement(text: string): Piece | undefined {
  let body = text;
  if (NOT_PLAIN.test(body)) {
    const end = body.replace(TRAILING, '');
    if (!end.endsWith(';') || /['"$]/.test(end)) return undefined;
    body = end.slice(0, -1);
    if (NOT_PLAIN.test(body)) return undefined;
  }
  const start = text.length - text.replace(LEADING, '').length;
  body = body.slice(start).replace(TRAILING, '');
  return body === '' ? undefined : { text: body, offset: start };
}

/** The statements of a Query string (cached by text: applications send the same strings again). */
export function splitStatements(text: string): Piece[] {
  // one statement (most Queries; a text with its values inlined is new every time, and parsing it here as well as in
  // the recorder cost a tenth of its planning): no need to parse it
  const plain = plainStatement(text);
  if (plain) return [plain];
  let pieces = cache.get(text);
  if (pieces === undefined) {
    if (cache.size >= CACHE_SIZE) cache.clear();
    cache.set(text, (pieces = split(text)));
  }
  return pieces;
}

/** The statements of a Query string as the parser finds them (what splitStatements gives, uncached). */
export function split(text: string): Piece[] {
  if (text === '') return []; // an empty Query (libpg-query refuses it): EmptyQueryResponse, as PostgreSQL answers
  let stmts: Stmt[];
  try {
    stmts = (parseSync(text) as { stmts?: Stmt[] }).stmts ?? [];
  } catch {
    return [{ text, offset: 0 }];
  }
  const bytes = Buffer.from(text, 'utf8');
  const out: Piece[] = [];
  for (const s of stmts) {
    const start = s.stmt_location ?? 0;
    const end = s.stmt_len ? start + s.stmt_len : bytes.length;
    const piece = bytes.subarray(start, end).toString('utf8');
    const lead = piece.length - piece.replace(LEADING, '').length;
    const copy = s.stmt?.CopyStmt !== undefined && !s.stmt.CopyStmt.filename;
    out.push({
      text: piece.replace(LEADING, '').replace(TRAILING, ''),
      offset: bytes.subarray(0, start).toString('utf8').length + lead,
      ...(copy ? { copy } : {}),
    });
  }
  return out;
}
