/**
 * `COPY table [(columns)] TO STDOUT` of a recorded table, recorded as a read (docs/recording.md, "COPY"). The server
 * writes the rows as the client asked (every format and option its own), from the rewritten SELECT of those columns,
 * in one statement:
 *
 *   COPY (WITH _isocheck_r AS MATERIALIZED (the rewritten SELECT cols FROM table),
 *              _isocheck_s AS MATERIALIZED (SELECT set_config('isocheck.copy_read', json of r's added columns))
 *         SELECT cols FROM _isocheck_r WHERE (SELECT x FROM _isocheck_s) IS NOT NULL) TO STDOUT options
 *
 * The rows and their traces come from the one materialized result, in the COPY's snapshot (READ COMMITTED
 * included); the session reads the setting after the COPY (client.ts). The setting is set before the first row goes
 * out (the WHERE is a one-time filter), so after a COPY of at least one row it holds this COPY's rows; after none,
 * the read is empty whatever it holds.
 * A column list the server refuses (a column that does not exist, a generated one, one named twice; a FORCE_QUOTE
 * column not in it), a partitioned table or a WHERE (COPY TO has none) pass through: the server's own error, nothing
 * read.
 */
import type { CopyStmt, Node, SelectStmt } from '@pgsql/types';
import { parseSync, scanSync } from 'libpg-query';
import { colRef, refuse, resTarget } from './ast.js';
import { quoteIdent, type TableLookup } from './catalog.js';
import type { Plan } from './plan.js';
import { selectPlan } from './rewrite-select.js';

/** The setting a recorded COPY TO leaves its read's added columns in: a JSON array of rows of text values. */
export const COPY_READ_SETTING = 'isocheck.copy_read';

/** Reads the setting and empties it (it may hold a whole table's traces). */
export const COPY_READ_QUERY =
  `SELECT current_setting('${COPY_READ_SETTING}', true), ` + `set_config('${COPY_READ_SETTING}', '', false)`;

export function copyPlan(sql: string, body: CopyStmt, lookup: TableLookup, touches: (n: unknown) => boolean): Plan {
  const rel = body.relation;
  const table = rel?.relname !== undefined ? lookup.lookup(rel.schemaname, rel.relname) : undefined;
  const toStdout = !body.is_from && body.filename === undefined && !body.is_program;
  if (!table || !toStdout || !rel) {
    if (touches(body)) {
      refuse(
        sql,
        'COPY statements on recorded tables are not recorded but for COPY table FROM STDIN and COPY table TO STDOUT',
        'Use COPY table [(columns)] TO STDOUT or FROM STDIN, or SELECT and INSERT.',
      );
    }
    return { kind: 'passthrough' };
  }
  const listed = body.attlist?.map((n) => (n as { String: { sval: string } }).String.sval);
  const generated = table.generated ?? [];
  const columns = listed ?? table.columnOrder.filter((c) => !generated.includes(c));
  const refused =
    table.partitioned ||
    body.whereClause !== undefined ||
    columns.some((c, i) => !table.columnOrder.includes(c) || generated.includes(c) || columns.indexOf(c) !== i) ||
    forceQuoted(body).some((c) => !columns.includes(c));
  if (refused) return { kind: 'passthrough' }; // the server's error
  // (the recorder reads a table with its children: SELECT ... FROM ONLY is not recorded)
  if (table.inherited)
    refuse(sql, `${table.name} has inheritance children, whose rows COPY leaves out`, 'SELECT the rows instead.');
  const select: SelectStmt = {
    targetList: columns.map((c) => resTarget(colRef(c))),
    fromClause: [{ RangeVar: { ...rel, inh: true } }],
    limitOption: 'LIMIT_OPTION_DEFAULT',
    op: 'SETOP_NONE',
  };
  const read = selectPlan(sql, select, lookup);
  if (read.kind !== 'select') return read;
  const added = Array.from({ length: read.added }, (_, i) => {
    const c = `_isocheck_r.__isocheck_${i}`;
    // (format's %s is the type's output, as pg reads a result column; NULL stays null)
    return `CASE WHEN ${c} IS NULL THEN NULL ELSE format('%s', ${c}) END`;
  });
  const wrapper =
    `(WITH _isocheck_r AS MATERIALIZED (${read.sql}), _isocheck_s AS MATERIALIZED (SELECT set_config(` +
    `'${COPY_READ_SETTING}', coalesce((SELECT json_agg(json_build_array(${added.join(', ')})) FROM _isocheck_r), ` +
    `'[]')::text, false) AS x) SELECT ${columns.map(quoteIdent).join(', ')} FROM _isocheck_r WHERE (SELECT ` +
    `_isocheck_s.x FROM _isocheck_s) IS NOT NULL)`;
  const at = sourceAt(sql, rel.location ?? 0);
  const copy = `${sql.slice(0, at[0])}${wrapper}${sql.slice(at[1])}`;
  try {
    parseSync(copy);
  } catch {
    // (the old syntax COPY BINARY table ..., USING DELIMITERS: a COPY of a query has neither)
    refuse(
      sql,
      'this form of COPY ... TO STDOUT of a recorded table is not recorded',
      'Write COPY table [(columns)] TO STDOUT [WITH (options)].',
    );
  }
  return { ...read, sql: copy, appRows: false, copy: { at, length: wrapper.length } };
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
  let end = byte;
  let depth = 0;
  for (const t of (scanSync(text) as { tokens: { start: number; end: number; text: string }[] }).tokens) {
    if (t.start < byte) continue;
    if (t.text === '(') depth++;
    else if (t.text === ')') depth--;
    else if (depth === 0 && t.text.toLowerCase() === 'to') break;
    if (!t.text.startsWith('/*') && !t.text.startsWith('--')) end = t.end;
  }
  const bytes = Buffer.from(text, 'utf8');
  const chars = (b: number): number => bytes.subarray(0, b).toString('utf8').length;
  return [chars(byte), chars(end)];
}

/** A server error or notice of the COPY as the client's COPY would have it: positions after the replaced text
 *  shifted back, positions inside it at the table's name. */
export function copyPosition(e: unknown, at: readonly [number, number], length: number): void {
  const err = e as { position?: unknown } | null;
  if (!err || typeof err !== 'object' || typeof err.position !== 'string') return;
  const p = Number(err.position);
  const shift = length - (at[1] - at[0]);
  if (p > at[1] + shift) err.position = String(p - shift);
  else if (p > at[0]) err.position = String(at[0] + 1);
}
