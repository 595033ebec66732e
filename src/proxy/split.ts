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

/** The statements of a Query string (cached by text: applications send the same strings again). */
export function splitStatements(text: string): Piece[] {
  let pieces = cache.get(text);
  if (pieces === undefined) {
    if (cache.size >= CACHE_SIZE) cache.clear();
    cache.set(text, (pieces = split(text)));
  }
  return pieces;
}

function split(text: string): Piece[] {
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
    const lead = piece.length - piece.trimStart().length;
    const copy = s.stmt?.CopyStmt !== undefined && !s.stmt.CopyStmt.filename;
    out.push({
      text: piece.trim(),
      offset: bytes.subarray(0, start).toString('utf8').length + lead,
      ...(copy ? { copy } : {}),
    });
  }
  return out;
}
