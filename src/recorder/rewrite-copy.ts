/**
 * `COPY table [(columns)] TO STDOUT` and `COPY (query) TO STDOUT` reading a recorded table, recorded as a read
 * (docs/recording.md, "COPY"). The server writes the rows as the client asked (every format and option its own),
 * from the rewritten SELECT (of a table's columns, or the client's query), in one statement (copyOutText):
 *
 *   COPY (WITH _isocheck_r(c0, ..., a0, ...) AS MATERIALIZED (the rewritten SELECT),
 *              _isocheck_s AS MATERIALIZED (SELECT set_config('isocheck.copy_read', json of r's added columns a0...))
 *         SELECT c0 AS name0, ... FROM _isocheck_r
 *         UNION ALL SELECT c0, ... FROM _isocheck_r WHERE (SELECT x FROM _isocheck_s) IS NULL) TO STDOUT options
 *
 * The rows and their traces come from the one materialized result, in the COPY's snapshot (READ COMMITTED
 * included); the session reads the setting after the COPY (client.ts). The rows go out as the query makes them (a
 * query failing at its tenth row has sent nine, as a direct COPY has); the setting is set after the last one, by the
 * second arm of the UNION ALL (run after the first; its one-time filter is false: no row), so a COPY that completed
 * has left it holding its rows.
 * A column list the server refuses (a column that does not exist, a generated one, one named twice; a FORCE_QUOTE
 * column not in it), a partitioned table or a WHERE (COPY TO has none) pass through: the server's own error, nothing
 * read.
 */
import type { CopyStmt, Node, SelectStmt } from '@pgsql/types';
import { parseSync } from 'libpg-query';
import { sqlTokens } from '../sql/tokens.js';
import { colRef, refuse, resTarget } from './ast.js';
import { HIDDEN_COLUMNS, quoteIdent, type TableLookup } from './catalog.js';
import type { Plan } from './plan.js';
import { selectPlan } from './rewrite-select.js';

/** The setting a recorded COPY TO leaves its read's added columns in: a JSON array of rows of text values. */
export const COPY_READ_SETTING = 'isocheck.copy_read';

const ELEMENTS = `json_array_elements(current_setting('${COPY_READ_SETTING}')::json)`;

/** Reads the setting, a row of added columns a result row (a table's traces, read whole, could pass the longest
 *  string JavaScript makes). */
export const COPY_READ_QUERY = `SELECT e::text FROM ${ELEMENTS} e`;

/** Empties the setting (it may hold a whole table's traces). */
export const COPY_CLEAR_QUERY = `SELECT set_config('${COPY_READ_SETTING}', '', false)`;

/** The plan of a COPY statement: a recorded read for COPY TO STDOUT reading a recorded table (of it, or of a query),
 *  refused for other COPYs of recorded tables (COPY FROM STDIN, recorded, is the proxy's: copy-from.ts). */
export function copyPlan(sql: string, body: CopyStmt, lookup: TableLookup, touches: (n: unknown) => boolean): Plan {
  const toStdout = !body.is_from && body.filename === undefined && !body.is_program;
  if (toStdout && body.query && touches(body.query)) return copyQueryPlan(sql, body, lookup);
  const rel = body.relation;
  const table = rel?.relname !== undefined ? lookup.lookup(rel.schemaname, rel.relname) : undefined;
  if (!table || !toStdout || !rel) {
    if (touches(body)) {
      refuse(
        sql,
        'COPY statements on recorded tables are not recorded but for COPY FROM STDIN and COPY TO STDOUT',
        'Use COPY table [(columns)] FROM STDIN, COPY table [(columns)] or (query) TO STDOUT, or SELECT and INSERT.',
      );
    }
    return { kind: 'passthrough' };
  }
  const listed = body.attlist?.map((n) => (n as { String: { sval: string } }).String.sval);
  // (the server has them: it would give them, unrecorded, where a table without them has no such column)
  const hidden = listed?.find((c) => HIDDEN_COLUMNS.has(c));
  if (hidden !== undefined) refuse(sql, `it names the recorder's hidden column ${hidden}`, 'Leave it out.');
  const generated = table.generated ?? [];
  const columns = listed ?? table.columnOrder.filter((c) => !generated.includes(c));
  const refused =
    table.partitioned ||
    body.whereClause !== undefined ||
    columns.some((c, i) => !table.columnOrder.includes(c) || generated.includes(c) || columns.indexOf(c) !== i) ||
    forceQuoted(body).some((c) => !columns.includes(c));
  if (refused) return { kind: 'passthrough' }; // the server's error
  const select: SelectStmt = {
    targetList: columns.map((c) => resTarget(colRef(c))),
    fromClause: [{ RangeVar: { ...rel, inh: true } }],
    limitOption: 'LIMIT_OPTION_DEFAULT',
    op: 'SETOP_NONE',
  };
  const read = selectPlan(sql, select, lookup);
  if (read.kind !== 'select') return read;
  const at = sourceAt(sql, rel.location ?? 0);
  const copy = copyOutText(sql, at, read.sql, read.added, columns);
  try {
    parseSync(copy.text);
  } catch {
    // (the old syntax COPY BINARY table ..., USING DELIMITERS: a COPY of a query has neither)
    refuse(
      sql,
      'this form of COPY ... TO STDOUT of a recorded table is not recorded',
      'Write COPY table [(columns)] TO STDOUT [WITH (options)].',
    );
  }
  return { ...read, sql: copy.text, appRows: false, copy: { at, select: read.sql, text: copy.text, table } };
}

/** `COPY (query) TO STDOUT` reading a recorded table: the query is rewritten as any SELECT; its columns' names and
 *  number are the server's to give (Describe, by whoever runs it), so the COPY's text is made then (copyOutText). */
function copyQueryPlan(sql: string, body: CopyStmt, lookup: TableLookup): Plan {
  const query = (body.query as { SelectStmt?: SelectStmt }).SelectStmt;
  if (!query)
    refuse(sql, 'COPY of a write with RETURNING is not recorded', 'Run the write, then COPY (SELECT ...) TO STDOUT.');
  const read = selectPlan(sql, query, lookup);
  if (read.kind !== 'select') return read;
  if (read.locks) refuse(sql, 'COPY of a SELECT ... FOR UPDATE/SHARE is not recorded', 'Lock the rows first.');
  const at = queryAt(sql);
  return { ...read, appRows: false, copy: { at, select: read.sql } };
}

/**
 * The COPY the server runs: the client's text with [at) (the table's name and column list, or the parenthesized
 * query) replaced by a query over the rewritten SELECT `select`, whose first `columns.length` columns the COPY gives
 * under those names (a table's columns, or what the server described a query's as) and whose last `added` columns
 * it keeps in COPY_READ_SETTING. `length`: the replacement's (positions of the server's errors after it map back).
 */
export function copyOutText(
  sql: string,
  at: readonly [number, number],
  select: string,
  added: number,
  columns: readonly string[],
): { text: string; length: number } {
  const own = columns.map((_, i) => `_isocheck_c${i}`);
  const traces = Array.from({ length: added }, (_, i) => `_isocheck_a${i}`);
  // (format's %s is the type's output, as pg reads a result column; NULL stays null)
  const asText = traces.map((c) => `CASE WHEN ${c} IS NULL THEN NULL ELSE format('%s', ${c}) END`);
  const named = own.map((c, i) => `${c} AS ${quoteIdent(columns[i])}`);
  const wrapper =
    `(WITH _isocheck_r(${[...own, ...traces].join(', ')}) AS MATERIALIZED (${select}), _isocheck_s AS MATERIALIZED ` +
    `(SELECT set_config('${COPY_READ_SETTING}', coalesce((SELECT json_agg(json_build_array(${asText.join(', ')})) ` +
    `FROM _isocheck_r), '[]')::text, false) AS x) SELECT ${named.join(', ')} FROM _isocheck_r UNION ALL SELECT ` +
    `${own.join(', ')} FROM _isocheck_r WHERE (SELECT _isocheck_s.x FROM _isocheck_s) IS NULL)`;
  return { text: `${sql.slice(0, at[0])}${wrapper}${sql.slice(at[1])}`, length: wrapper.length };
}

/** The columns of FORCE_QUOTE (columns), none for FORCE_QUOTE * (the server names a column that is not in the COPY's
 *  list by the table's name or as not referenced, where in a COPY of a query it does not exist). */
function forceQuoted(body: CopyStmt): string[] {
  const names: string[] = [];
  for (const o of body.options ?? []) {
    const d = (o as { DefElem?: { defname?: string; arg?: { List?: { items?: Node[] } } } }).DefElem;
    if (d?.defname !== 'force_quote') continue;
    for (const item of d.arg?.List?.items ?? []) {
      const name = (item as { String?: { sval?: string } }).String?.sval;
      if (name !== undefined) names.push(name);
    }
  }
  return names;
}

/** Where the table's name and column list are in `text`, from the name at `byte` (the parser's location, in UTF-8
 *  bytes) to the last token before TO, comments after them excluded: [start, end) in characters. */
function sourceAt(text: string, byte: number): [number, number] {
  const { tokens, charAt } = sqlTokens(text);
  const start = charAt(byte);
  let end = start;
  let depth = 0;
  for (const t of tokens) {
    if (t.start < start) continue;
    if (t.text === '(') depth++;
    else if (t.text === ')') depth--;
    else if (depth === 0 && t.text.toLowerCase() === 'to') break;
    if (!t.text.startsWith('/*') && !t.text.startsWith('--')) end = t.end;
  }
  return [start, end];
}

/** Where the parenthesized query of `COPY (query) TO` is in `text`, its parentheses included: [start, end) in
 *  characters. */
function queryAt(text: string): [number, number] {
  let start = -1;
  let depth = 0;
  for (const t of sqlTokens(text).tokens) {
    if (t.text === '(') {
      if (depth++ === 0 && start < 0) start = t.start;
    } else if (t.text === ')' && --depth === 0 && start >= 0) return [start, t.end];
  }
  return [0, 0];
}

/** The length of `s` in characters as PostgreSQL counts them (its error positions): code points, where JavaScript
 *  counts two for a character beyond the Basic Multilingual Plane. */
export function codePoints(s: string): number {
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0xdc00 || c > 0xdfff) n++; // (a low surrogate ends a character its high one counted)
  }
  return n;
}

/** A server error or notice of a statement sent as `original` with its text at `at` ([start, end) in JavaScript's
 *  units) replaced by `replacement`, as the client's statement would have it: positions after the replaced text
 *  shifted back, positions inside it at its start. */
export function copyPosition(e: unknown, original: string, at: readonly [number, number], replacement: string): void {
  const err = e as { position?: unknown } | null;
  if (!err || typeof err !== 'object' || typeof err.position !== 'string') return;
  const p = Number(err.position);
  const start = codePoints(original.slice(0, at[0]));
  const end = start + codePoints(original.slice(at[0], at[1]));
  const shift = codePoints(replacement) - (end - start);
  if (p > end + shift) err.position = String(p - shift);
  else if (p > start) err.position = String(start + 1);
}
