/**
 * The transaction modes of a BEGIN or START TRANSACTION, as the text SET TRANSACTION takes (both statements take
 * PostgreSQL's transaction_mode_list: ISOLATION LEVEL ..., READ ONLY / READ WRITE, [NOT] DEFERRABLE). The proxy
 * runs them as SET TRANSACTION where a BEGIN turns PostgreSQL's implicit transaction into a block (connection.ts,
 * controlInImplicit): there the options get the same checks as BEGIN's (25001 once a query took a snapshot).
 */

/** Comments and white space at the start of a statement. */
const LEADING = /^(?:\s+|--[^\n]*(?:\n|$)|\/\*[\s\S]*?\*\/)*/;

/** The words before the modes: BEGIN [WORK | TRANSACTION], START TRANSACTION. */
const BEGIN_WORDS = /^(?:begin(?:\s+(?:work|transaction)\b)?|start\s+transaction\b)/i;

/** The text without the comments and white space it starts with. */
export function withoutLeadingComments(text: string): string {
  return text.replace(LEADING, '');
}

/** The modes of a BEGIN or START TRANSACTION text (`''` when it has none), without a final semicolon. */
export function beginOptions(text: string): string {
  const body = withoutLeadingComments(text);
  const words = BEGIN_WORDS.exec(body);
  if (!words) return '';
  return body.slice(words[0].length).replace(/;\s*$/, '').trim();
}
