/**
 * An error position in the rewritten text of a statement, as one in the client's text. The server's ErrorResponse
 * `P` (a 1-based character index) refers to the text it ran, which for a recorded statement is the recorder's
 * deparsed, rewritten one (other spacing and case, added columns and parameters): left as it is, a client would
 * point at the wrong place, or past the end of its own statement.
 *
 *   both texts -> tokens (libpg-query's scanner) -> the longest common subsequence of their tokens (compared
 *   case-insensitively, quotes of identifiers dropped) -> the client's token matched to the one at the position
 *
 * A position whose token the alignment does not match (one the recorder added) gives undefined: the field is then
 * dropped rather than pointing somewhere wrong. Statements of more than MAX_CELLS token pairs are not aligned.
 */
import { type SqlToken, sqlTokens } from '../sql/tokens.js';

interface Token {
  /** Character offsets (the scanner's are UTF-8 bytes). */
  start: number;
  end: number;
  key: string;
}

const MAX_CELLS = 4_000_000;

function tokens(text: string): Token[] | undefined {
  let scanned: SqlToken[];
  try {
    scanned = sqlTokens(text).tokens;
  } catch {
    return undefined;
  }
  return scanned.map((t) => {
    const raw = t.text;
    const key = raw.startsWith('"')
      ? raw.slice(1, -1).replace(/""/g, '"')
      : /^[A-Za-z_]/.test(raw)
        ? raw.toLowerCase()
        : raw;
    return { start: t.start, end: t.end, key };
  });
}

/** The client's position (1-based characters) for a position in the rewritten text, or undefined. */
export function mapPosition(original: string, rewritten: string, position: number): number | undefined {
  if (!Number.isInteger(position) || position < 1) return undefined;
  if (original === rewritten) return position;
  const a = tokens(original);
  const b = tokens(rewritten);
  if (!a || !b || a.length === 0 || b.length === 0 || a.length * b.length > MAX_CELLS) return undefined;
  const at = position - 1;
  const target = b.findIndex((t) => at < t.end);
  if (target < 0) return undefined;
  const inside = Math.max(0, at - b[target].start);
  // lcs[i][j]: the longest common subsequence of a[i..] and b[j..]
  const n = a.length;
  const m = b.length;
  const w = m + 1;
  const lcs = new Int32Array((n + 1) * w);
  for (let i = n - 1; i >= 0; i--)
    for (let j = m - 1; j >= 0; j--)
      lcs[i * w + j] =
        a[i].key === b[j].key ? lcs[(i + 1) * w + j + 1] + 1 : Math.max(lcs[(i + 1) * w + j], lcs[i * w + j + 1]);
  let i = 0;
  let j = 0;
  while (i < n && j < m) {
    if (a[i].key === b[j].key && lcs[i * w + j] === lcs[(i + 1) * w + j + 1] + 1) {
      if (j === target) return a[i].start + Math.min(inside, a[i].end - a[i].start - 1) + 1;
      i++;
      j++;
    } else if (lcs[(i + 1) * w + j] >= lcs[i * w + j + 1]) i++;
    else {
      if (j === target) return undefined;
      j++;
    }
  }
  return undefined;
}
