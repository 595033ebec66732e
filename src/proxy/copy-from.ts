/**
 * `COPY ... FROM STDIN` into a recorded table, recorded (docs/recording.md, "COPY"): the server reads the client's
 * data into a temporary staging table with the table's columns (so every format, option and data error is the
 * server's own), then one `INSERT ... SELECT` from it goes through the recorder as any write does, its rows recorded
 * with their write id; the client is answered `COPY n`. This file finds such a COPY and writes the statements the
 * proxy runs for it; connection.ts runs them in the client's transaction.
 */
import { parseSync } from 'libpg-query';
import { sqlTokens } from '../sql/tokens.js';
import type { Node } from '@pgsql/types';
import { quoteIdent, type TableInfo } from '../recorder/catalog.js';
import { UnsupportedStatementError } from '../recorder/errors.js';
import { copyPosition } from '../recorder/rewrite-copy.js';

export interface RecordedCopy {
  table: TableInfo;
  /** The table as the client named it (quoted, schema-qualified if it was). */
  relation: string;
  /** The columns the client listed (folded as the parser folds them), or undefined: COPY's default, every column
   *  that is not generated. */
  columns?: string[];
  /** The client's COPY with the staging table (`pg_temp.` and stagingName) in place of the recorded table's name,
   *  the rest as written (so that the server's error positions hold after it: mapped). */
  staged: string;
  /** Where the table's name is in the text (characters): [start, end). */
  at: [number, number];
  /** The client's COPY. */
  text: string;
}

interface CopyBody {
  relation?: { schemaname?: string; relname: string; location?: number };
  query?: unknown;
  attlist?: Node[];
  is_from?: boolean;
  is_program?: boolean;
  filename?: string;
  options?: Node[];
  whereClause?: unknown;
}

/** The recorded `COPY table FROM STDIN` that `text` (one statement) is, or undefined: another statement, or a COPY
 *  of no recorded table, or one to or from a file or a program, or `COPY ... TO`. Throws UnsupportedStatementError
 *  for the forms whose meaning a staging table would change (WHERE, FREEZE, DEFAULT). */
export function recordedCopyFrom(
  text: string,
  lookup: (schemaname: string | undefined, relname: string) => TableInfo | undefined,
): RecordedCopy | undefined {
  let tree: { stmts?: { stmt?: Node }[] };
  try {
    tree = parseSync(text) as typeof tree;
  } catch {
    return undefined;
  }
  if (tree.stmts?.length !== 1) return undefined;
  const body = (tree.stmts[0].stmt as { CopyStmt?: CopyBody } | undefined)?.CopyStmt;
  if (!body?.is_from || body.filename !== undefined || body.is_program || !body.relation || body.query)
    return undefined;
  const rel = body.relation;
  const table = lookup(rel.schemaname, rel.relname);
  if (!table) return undefined;
  const refuse = (what: string, how: string): never => {
    throw new UnsupportedStatementError(text, `COPY ... FROM STDIN ${what} into a recorded table is not recorded`, how);
  };
  if (body.whereClause !== undefined) refuse('with WHERE', 'Filter the rows before the COPY, or copy them all.');
  for (const o of body.options ?? []) {
    const name = (o as { DefElem?: { defname?: string } }).DefElem?.defname;
    // FREEZE: the server's check of where the table was made would be of the staging table; DEFAULT: its marker
    // means the table's default, which the staging table does not have
    if (name === 'freeze' || name === 'default') refuse(`with ${name.toUpperCase()}`, `Drop the ${name} option.`);
  }
  const relation = `${rel.schemaname !== undefined ? `${quoteIdent(rel.schemaname)}.` : ''}${quoteIdent(rel.relname)}`;
  const columns = body.attlist?.map((n) => (n as { String: { sval: string } }).String.sval);
  const at = nameAt(text, rel.location ?? 0);
  return {
    table,
    relation,
    ...(columns ? { columns } : {}),
    at,
    text,
    staged: `${text.slice(0, at[0])}pg_temp.${stagingName(table)}${text.slice(at[1])}`,
  };
}

/** Where the qualified name starting at `byte` (the parser's location, in UTF-8 bytes) is in `text`, in characters:
 *  its tokens up to the column list's parenthesis or FROM, comments between them included. */
function nameAt(text: string, byte: number): [number, number] {
  const { tokens, charAt } = sqlTokens(text);
  const start = charAt(byte);
  let end = start;
  for (const t of tokens) {
    if (t.start < start) continue;
    if (t.text === '(' || t.text.toLowerCase() === 'from') break;
    if (!t.text.startsWith('/*') && !t.text.startsWith('--')) end = t.end;
  }
  return [start, end];
}

/** The statement reading what a recorded COPY needs to know first, in the client's transaction: whether it is read
 *  only (the server refuses a COPY FROM there, and would refuse the staging table with another message), the
 *  table's generated columns (COPY refuses them in its list, the staging table does not have them), whether it has
 *  rules (COPY ignores them, the INSERT would apply them: refused), and whether the session's staging table for it
 *  is there. One row: `ro`, `generated` (a JSON array of names, or null), `rules`, `staged`. */
export const copyFacts = (table: TableInfo): string =>
  `SELECT current_setting('transaction_read_only') AS ro, (SELECT json_agg(attname::text ORDER BY attnum)::text ` +
  `FROM pg_attribute WHERE attrelid = ${table.oid} AND attnum > 0 AND NOT attisdropped AND attgenerated <> '') ` +
  `AS generated, EXISTS (SELECT 1 FROM pg_rewrite WHERE ev_class = ${table.oid} AND rulename <> '_RETURN') AS ` +
  `rules, to_regclass('pg_temp.${stagingName(table)}') IS NOT NULL AS staged`;

/** The session's staging table for `table`: one per table, made at its first COPY (again if that transaction rolled
 *  back), emptied after each (a table made and dropped per COPY held its locks to the transaction's end: thousands
 *  of COPYs in one transaction ran out of shared memory for locks). */
export const stagingName = (table: TableInfo): string => `_isocheck_copy_${table.oid}`;

/** The staging table: the table's columns COPY may name (not generated, not the recorder's), of their types. */
export const stagingTable = (c: RecordedCopy, generated: readonly string[]): string =>
  `CREATE TEMP TABLE ${stagingName(c.table)} AS SELECT ${stagingColumns(c, generated).map(quoteIdent).join(', ')} ` +
  `FROM ${c.relation} WITH NO DATA`;

function stagingColumns(c: RecordedCopy, generated: readonly string[]): string[] {
  return c.table.columnOrder.filter((n) => !generated.includes(n));
}

/** The recorded write: the staged rows into the table, in the order they came (the order a serial default or a
 *  trigger sees them in, as with COPY); an identity column named in the COPY takes the value given, as COPY's does. */
export function insertStaged(c: RecordedCopy, generated: readonly string[]): string {
  const cols = (c.columns ?? stagingColumns(c, generated)).map(quoteIdent).join(', ');
  return (
    `INSERT INTO ${c.relation} (${cols}) OVERRIDING SYSTEM VALUE SELECT ${cols} FROM ` +
    `pg_temp.${stagingName(c.table)} ORDER BY ctid`
  );
}

/** A column the client listed that COPY refuses because it is generated (the server checks the list in its order:
 *  a missing or repeated column before it is the staging COPY's error to give). */
export function generatedListed(
  c: RecordedCopy,
  generated: readonly string[],
): { column: string; errorBefore: boolean } | undefined {
  const at = c.columns?.findIndex((n) => generated.includes(n)) ?? -1;
  if (at < 0) return undefined;
  const known = new Set(c.table.columnOrder);
  const before = c.columns!.slice(0, at);
  const errorBefore = before.some((n, i) => !known.has(n) || before.indexOf(n) !== i);
  return { column: c.columns![at], errorBefore };
}

/** An error or notice of the staged COPY as the client's own COPY would have it: the table's name for the staging
 *  table's (a data error's context `COPY name, line 3`, a missing column's message), positions after the name
 *  shifted. */
export function stagedMessage(e: unknown, c: RecordedCopy): void {
  const err = e as Record<string, unknown>;
  if (!err || typeof err !== 'object') return;
  const staging = stagingName(c.table);
  for (const k of ['message', 'detail', 'where', 'hint'])
    if (typeof err[k] === 'string') err[k] = (err[k] as string).split(staging).join(c.table.relname);
  copyPosition(err, c.text, c.at, `pg_temp.${staging}`);
}
