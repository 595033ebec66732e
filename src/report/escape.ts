/**
 * Escaping for the HTML report. Everything a history holds (values, labels, ids, table names, WHERE texts) is
 * untrusted, so it reaches the page only through these functions:
 *
 *   text in HTML              -> escapeHtml (element content and quoted attribute values)
 *   data for the page script  -> jsonForScript (inside <script type="application/json">, then textContent)
 *   text in Graphviz labels   -> dotHtml (HTML-like labels; Graphviz escapes it again in its SVG output)
 *
 * `cleanText` first removes what XML cannot hold (control characters, lone surrogates): Graphviz rejects such
 * labels, and they would only show as garbage anyway.
 */

// biome-ignore lint/suspicious/noControlCharactersInRegex: matching the control characters XML cannot hold is the point
const CONTROL = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f\ufffe\uffff]/g;
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

/** The text with control characters shown as `\uXXXX` and lone surrogates replaced by U+FFFD. */
export function cleanText(s: string): string {
  return s
    .replace(LONE_SURROGATE, '\ufffd')
    .replace(CONTROL, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

const HTML_ENTITIES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/** Text for HTML element content or a quoted attribute value. */
export function escapeHtml(s: string): string {
  return cleanText(s).replace(/[&<>"']/g, (c) => HTML_ENTITIES[c]);
}

/**
 * JSON that can sit inside `<script type="application/json">`: `<`, `>` and `&` become `\u003c` etc. (so no
 * `</script>` or `<!--` can appear), and U+2028/2029 are escaped too. JSON.parse gives back the same value.
 */
export function jsonForScript(value: unknown): string {
  return JSON.stringify(value).replace(
    /[<>&\u2028\u2029]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
}

/** Text for a Graphviz HTML-like label (`label=<...>`): entities for the XML specials, cleaned of what XML forbids. */
export function dotHtml(s: string): string {
  return escapeHtml(s);
}

/** Cuts a text to `max` characters (by code point), marking the cut with an ellipsis. */
export function truncate(s: string, max: number): string {
  const chars = Array.from(s);
  return chars.length <= max ? s : `${chars.slice(0, max - 1).join('')}…`;
}

/** Cuts a text to `max` characters by removing its middle, so that both ends (e.g. a trailing wid) stay. */
export function truncateMiddle(s: string, max: number): string {
  const chars = Array.from(s);
  if (chars.length <= max) return s;
  const tail = Math.floor((max - 1) / 3);
  return `${chars.slice(0, max - 1 - tail).join('')}…${chars.slice(chars.length - tail).join('')}`;
}
