/**
 * One field of a range's or a composite's text, as PostgreSQL reads and writes it (rangetypes.c range_parse_bound,
 * rowtypes.c record_in; range_bound_escape, record_out): a field is absent (NULL, or an infinite bound) when empty
 * and unquoted; double quotes group characters, a doubled quote inside them is one, and a backslash escapes the
 * next character. Fields are separated by commas.
 */

/** The field of `text` starting at `at`, up to a comma or `stop`: its text (undefined: absent), and where it
 *  ended; undefined when a quote is left open. */
export function readField(
  text: string,
  at: number,
  stop: number,
): { value: string | undefined; next: number } | undefined {
  if (at === stop || text[at] === ',') return { value: undefined, next: at };
  let value = '';
  let inquote = false;
  let i = at;
  while (inquote || (i < stop && text[i] !== ',')) {
    if (i >= stop) return undefined;
    const c = text[i++];
    if (c === '\\') value += text[i++];
    else if (c === '"') {
      if (!inquote) inquote = true;
      else if (text[i] === '"') value += text[i++];
      else inquote = false;
    } else value += c;
  }
  return { value, next: i };
}

/** A field's text quoted as the server reads it back (quotes and backslashes doubled). */
export const quoteField = (v: string): string => `"${v.replace(/["\\]/g, (c) => `${c}${c}`)}"`;
