/**
 * What the proxy reads from a statement's text without the parser: the text after its leading comments, and
 * whether PostgreSQL takes a snapshot to analyze it (analyze_requires_snapshot in analyze.c: queries, and the
 * utility statements that hold one). A client's Parse or Bind of such a statement outside a block takes the
 * transaction's first snapshot on a direct connection, after which a BEGIN with an isolation level there fails
 * (25001): the proxy answers Parse and Bind itself, so it notes them (connection.ts, `snapshot`).
 */

/** Comments and white space at the start of a statement. */
const LEADING = /^(?:\s+|--[^\n]*(?:\n|$)|\/\*[\s\S]*?\*\/)*/;

/** A query: SELECT, INSERT, ..., or a utility statement holding one (DECLARE, EXPLAIN, CALL). */
const QUERY = /^[\s(]*(?:select|insert|update|delete|merge|with|values|table|declare|explain|call)\b/i;

/** CREATE TABLE ... AS and CREATE MATERIALIZED VIEW (both analyze their query); no quote before the AS (a CREATE
 *  TABLE whose default is the string 'as select' is not one). */
const CREATE_AS = new RegExp(
  '^create\\s+(?:(?:global|local)\\s+)?(?:temp\\w*\\s+|unlogged\\s+)?' +
    '(?:table\\b[^\\x27]*?\\bas\\s*[\\s(]*(?:select|values|table|with|execute)\\b|materialized\\s+view\\b)',
  'i',
);

/** The text without the comments and white space it starts with. */
export function withoutLeadingComments(text: string): string {
  return text.replace(LEADING, '');
}

/** Whether PostgreSQL analyzes the statement with a snapshot. */
export function takesSnapshot(text: string): boolean {
  const body = withoutLeadingComments(text);
  return QUERY.test(body) || CREATE_AS.test(body);
}
