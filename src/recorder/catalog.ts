/**
 * Preparing tables for recording, and reading their initial rows (history-format.md `table` and `init` lines).
 *
 *   instrument(client, tables) -> catalog (pg_class, pg_index, pg_attribute, pg_collation) -> key + column types
 *     -> ALTER TABLE ADD COLUMN IF NOT EXISTS _isocheck_wid text [, _isocheck_prev text before PostgreSQL 18]
 *   snapshotInit(client, schemas) -> one REPEATABLE READ transaction: clear old wids, read every row -> init rows
 *
 * Every write the recorder makes sets the hidden column `_isocheck_wid` to its wid, so a read that returns a row
 * also returns the wid of the write that produced it (NULL = the initial version, wid `init`). Before PostgreSQL
 * 18 (no `RETURNING old.*`) an UPDATE also copies the previous wid into `_isocheck_prev`.
 *
 * Decisions:
 * - Row identity (the history's key) is the primary key; without one, a unique index over NOT NULL plain
 *   columns (not partial, no expressions). A table with neither is refused: ctid changes on every update and
 *   "all columns" is not an identity (duplicates, updates), so neither is sound.
 * - Foreign keys with ON DELETE/UPDATE CASCADE / SET NULL / SET DEFAULT into a recorded table are refused: the
 *   server would change recorded rows behind the recorder's back. User triggers and rules only warn.
 * - Values are read as the server's text and converted to the format's JSON exactly (`toFormatValue`): numbers
 *   for int2/int4/float4/float8 (NaN and ±Infinity stay strings), strings for int8/numeric/text/time types,
 *   booleans for bool. Queries use a per-query `types` that returns raw text, so the application's parsers
 *   (client.setTypeParser, pg.types) are never touched.
 * - Text columns whose collation (or the database ctype) is not C/POSIX compare differently from what the
 *   checker assumes; they are listed in `unsafeColumns`, and reads whose WHERE uses them are recorded `partial`.
 */
import type pg from 'pg';
import type { ColumnTypes, Row, SqlValue } from '../history/format.js';
import { InputError } from '../history/input-errors.js';
import { UnsupportedTableError } from './errors.js';
import { instrumentOnShards } from './cluster.js';

export const WID_COLUMN = '_isocheck_wid';
export const PREV_COLUMN = '_isocheck_prev';
export const HIDDEN_COLUMNS: ReadonlySet<string> = new Set([WID_COLUMN, PREV_COLUMN]);

/** What the recorder knows about one recorded table. */
export interface TableInfo {
  /** Name in the history (as given to instrument()). */
  name: string;
  schema: string;
  relname: string;
  oid: number;
  /** Key columns (the row identity). */
  key: string[];
  /** Where the key comes from, e.g. `primary key` or `unique index accounts_email_key`. */
  keySource: string;
  /** The server enforces the key's uniqueness at every statement (a unique index not DEFERRABLE): `col = value`
   *  over the key then matches at most one row, even inside a transaction. False for a declared key. */
  keyUnique?: boolean;
  /** Column -> format type name, in table order (hidden columns excluded). */
  columns: ColumnTypes;
  /** Columns in table order (hidden columns excluded). */
  columnOrder: string[];
  /** Text columns whose comparisons depend on a collation other than C (WHERE on them => partial). */
  unsafeColumns: string[];
  /** The table has the `_isocheck_prev` column (pre-18 servers). */
  hasPrev: boolean;
  /** Generated columns (stored or virtual), which COPY leaves out (read from the catalog; absent: none known). */
  generated?: string[];
  /** A partitioned table (relkind `p`), which `COPY ... TO` refuses (absent: a plain or foreign table). */
  partitioned?: boolean;
}

export interface InstrumentOptions {
  /** Add `_isocheck_prev` (needed before PostgreSQL 18). Default: when the server is older than 18. */
  prevColumn?: boolean;
  /** Keys declared by the application, by table name: for tables whose key the server cannot show (a partitioned
   *  table with foreign partitions, a foreign table: cluster.ts); checked on the shards. */
  keys?: Record<string, string[]>;
  /** Connections to the shards' databases: the hidden columns are added to the shard tables too (cluster.ts). */
  shards?: Queryable[];
}

export interface InstrumentResult {
  tables: TableInfo[];
  /** Tables that got hidden columns now (the others already had them). */
  instrumented: string[];
  warnings: string[];
}

/** Per-query type parsers that hand back the server's text unchanged. */
export const RAW_TYPES = { getTypeParser: () => (value: string) => value } as unknown as pg.CustomTypesConfig;

type Queryable = Pick<pg.ClientBase, 'query'>;

async function rawQuery(client: Queryable, text: string, values: unknown[] = []): Promise<(string | null)[][]> {
  const r = await client.query({ text, values, rowMode: 'array', types: RAW_TYPES } as pg.QueryArrayConfig);
  return r.rows as (string | null)[][];
}

const TEXT_TYPES = new Set(['text', 'varchar', 'bpchar']);

/** Converts one value in the server's text output to the format's JSON representation for `type`. */
export function toFormatValue(raw: string | null | undefined, type: string): SqlValue {
  if (raw === null || raw === undefined) return null;
  switch (type) {
    case 'int2':
    case 'int4':
      return Number(raw);
    case 'float4':
    case 'float8':
      return raw === 'NaN' || raw === 'Infinity' || raw === '-Infinity' ? raw : Number(raw);
    case 'bool':
      return raw === 't' || raw === 'true';
    default:
      return raw;
  }
}

/** Builds a format row from raw text values in `columnOrder`. */
export function toFormatRow(table: TableInfo, raw: (string | null)[]): Row {
  const row: Row = Object.create(null); // a column may be named __proto__
  table.columnOrder.forEach((c, i) => {
    row[c] = toFormatValue(raw[i], table.columns[c]);
  });
  return row;
}

const isCLocale = (s: unknown): boolean => typeof s === 'string' && (s === 'C' || s === 'POSIX');

/** Reads key and column types of one table from the catalog. */
async function describe(
  client: Queryable,
  name: string,
  dbLocaleC: boolean,
  declared?: string[],
): Promise<Omit<TableInfo, 'hasPrev'> & { hidden: Set<string>; relkind: string }> {
  const found = await rawQuery(
    client,
    `SELECT c.oid::text, n.nspname, c.relname, c.relkind::text FROM pg_class c JOIN pg_namespace n ON n.oid = ` +
      `c.relnamespace WHERE c.oid = to_regclass($1)`,
    [name],
  );
  if (found.length === 0)
    throw new InputError(`table "${name}" does not exist (create it before recording, or check the search_path)`);
  const [oidText, schema, relname, relkind] = found[0] as string[];
  const oid = Number(oidText);
  if (relkind !== 'r' && relkind !== 'p' && !(relkind === 'f' && declared))
    throw new UnsupportedTableError(
      name,
      `"${name}" is not a table (relkind ${relkind})`,
      'only tables can be recorded',
    );
  const cols = await rawQuery(
    client,
    `SELECT a.attname, a.attnum::text, a.attnotnull::text,
            CASE WHEN t.typtype = 'd' THEN bt.typname ELSE t.typname END AS typname,
            coalesce(co.collname, ''), coalesce(co.collcollate, ''), coalesce(co.collprovider::text, ''),
            a.attgenerated::text
       FROM pg_attribute a
       JOIN pg_type t ON t.oid = a.atttypid
       LEFT JOIN pg_type bt ON bt.oid = t.typbasetype
       LEFT JOIN pg_collation co ON co.oid = a.attcollation
      WHERE a.attrelid = $1 AND a.attnum > 0 AND NOT a.attisdropped
      ORDER BY a.attnum`,
    [oid],
  );
  const columns: ColumnTypes = Object.create(null); // a column may be named __proto__
  const columnOrder: string[] = [];
  const byNum = new Map<number, { name: string; notnull: boolean }>();
  const hidden = new Set<string>();
  const unsafeColumns: string[] = [];
  const generated: string[] = [];
  for (const [attname, attnum, notnull, typname, collname, collcollate, collprovider, gen] of cols as string[][]) {
    byNum.set(Number(attnum), { name: attname, notnull: notnull === 'true' });
    if (HIDDEN_COLUMNS.has(attname)) {
      hidden.add(attname);
      continue;
    }
    const type = typname; // the format's names are PostgreSQL's typnames; other types are recorded by theirs
    columns[attname] = type;
    columnOrder.push(attname);
    if (gen !== '') generated.push(attname);
    if (TEXT_TYPES.has(type)) {
      const collationC =
        collname === 'default' || collname === ''
          ? dbLocaleC
          : isCLocale(collname) || (collprovider === 'c' && isCLocale(collcollate));
      if (!collationC) unsafeColumns.push(attname);
    }
  }
  // primary key, else the narrowest unique index over NOT NULL plain columns
  const idx = declared
    ? []
    : await rawQuery(
        client,
        `SELECT ci.relname, i.indisprimary::text, i.indkey::text, (i.indpred IS NULL)::text, ` +
          `(i.indexprs IS NULL)::text, i.indimmediate::text
       FROM pg_index i JOIN pg_class ci ON ci.oid = i.indexrelid
      WHERE i.indrelid = $1 AND i.indisunique AND i.indisvalid
      ORDER BY i.indisprimary DESC, i.indnatts, ci.relname`,
        [oid],
      );
  let key: string[] | undefined;
  let keySource = '';
  let keyUnique = false;
  for (const [iname, primary, indkey, nopred, noexprs, immediate] of idx as string[][]) {
    const nums = indkey.split(' ').map(Number);
    if (nopred !== 'true' || noexprs !== 'true' || nums.some((n) => n <= 0)) continue;
    const attrs = nums.map((n) => byNum.get(n));
    if (attrs.some((a) => !a?.notnull || HIDDEN_COLUMNS.has(a.name))) continue;
    key = attrs.map((a) => a!.name);
    keySource = primary === 'true' ? 'primary key' : `unique index ${iname}`;
    keyUnique = immediate === 'true';
    break;
  }
  if (declared) {
    const unknown = declared.filter((c) => !(c in columns));
    if (unknown.length > 0 || declared.length === 0)
      throw new InputError(
        `the key declared for ${name} (${declared.join(', ')}) names no column ${unknown.join(', ')} of it`,
      );
    key = declared;
    keySource = 'declared key';
    keyUnique = false;
  }
  if (!key) {
    throw new UnsupportedTableError(
      name,
      `table "${name}" has no primary key (nor a unique index over NOT NULL columns), so its rows have no ` +
        `identity the history can use`,
      `add one (ALTER TABLE ${name} ADD PRIMARY KEY (...)) or leave the table out of the recording`,
    );
  }
  return {
    name,
    schema,
    relname,
    oid,
    key,
    keySource,
    keyUnique,
    columns,
    columnOrder,
    unsafeColumns,
    ...(generated.length > 0 ? { generated } : {}),
    ...(relkind === 'p' ? { partitioned: true } : {}),
    hidden,
    relkind,
  };
}

/**
 * Adds the hidden columns to each table (idempotent) and returns their schemas. Run it before the workload
 * starts (ALTER TABLE takes an exclusive lock).
 */
export async function instrument(
  client: Queryable,
  tables: string[],
  options: InstrumentOptions = {},
): Promise<InstrumentResult> {
  const [[versionText, collate, ctype]] = (await rawQuery(
    client,
    `SELECT current_setting('server_version_num'), d.datcollate, d.datctype FROM pg_database d WHERE ` +
      `d.datname = current_database()`,
  )) as string[][];
  const version = Number(versionText);
  if (version < 140000) throw new InputError(`recording needs PostgreSQL 14 or newer (this server is ${versionText})`);
  // provider details (PostgreSQL 15+: datlocprovider; 17+: datlocale) read through to_jsonb to work on every version
  const [[dbJson]] = (await rawQuery(
    client,
    `SELECT to_jsonb(d)::text FROM pg_database d WHERE d.datname = current_database()`,
  )) as string[][];
  const db = JSON.parse(dbJson) as Record<string, unknown>;
  const provider = (db.datlocprovider as string | undefined) ?? 'c';
  // libc C/POSIX, or the builtin provider's "C" locale (code point order, ASCII-only case mapping); ICU is never C
  const dbLocaleC =
    provider === 'c' ? isCLocale(collate) && isCLocale(ctype) : provider === 'b' ? db.datlocale === 'C' : false;
  const prevColumn = options.prevColumn ?? version < 180000;
  const seen = new Map<string, string>();
  const result: InstrumentResult = { tables: [], instrumented: [], warnings: [] };
  const described = [];
  for (const name of tables) {
    const d = await describe(client, name.trim(), dbLocaleC, options.keys?.[name.trim()]);
    const other = seen.get(d.relname);
    if (other !== undefined)
      throw new InputError(
        `tables "${other}" and "${name}" have the same name "${d.relname}"; record tables with distinct names`,
      );
    seen.set(d.relname, name);
    described.push(d);
  }
  const oids = described.map((d) => d.oid);
  const cascades = await rawQuery(
    client,
    `SELECT conrelid::regclass::text, confrelid::regclass::text, conname, confdeltype::text, confupdtype::text
       FROM pg_constraint WHERE contype = 'f' AND conrelid = ANY($1::oid[])
        AND (confdeltype IN ('c', 'n', 'd') OR confupdtype IN ('c', 'n', 'd'))`,
    [oids],
  );
  if (cascades.length > 0) {
    const list = (cascades as string[][]).map(([rel, ref, con]) => `${rel} (${con} references ${ref})`).join(', ');
    throw new UnsupportedTableError(
      (cascades as string[][])[0][0],
      `foreign keys with ON DELETE/UPDATE CASCADE, SET NULL or SET DEFAULT change recorded rows without the ` +
        `recorder seeing it: ${list}`,
      `use NO ACTION/RESTRICT (and do the cascade in the application) or leave the referencing table out of ` +
        `the recording`,
    );
  }
  const triggers = await rawQuery(
    client,
    `SELECT tgrelid::regclass::text, tgname FROM pg_trigger WHERE tgrelid = ANY($1::oid[]) AND NOT tgisinternal`,
    [oids],
  );
  for (const [rel, tg] of triggers as string[][]) {
    result.warnings.push(
      `table ${rel} has trigger ${tg}: rows it changes in recorded tables other than the one being written ` +
        `are not recorded`,
    );
  }
  const rules = await rawQuery(
    client,
    `SELECT ev_class::regclass::text, rulename FROM pg_rewrite WHERE ev_class = ANY($1::oid[]) AND rulename ` +
      `<> '_RETURN'`,
    [oids],
  );
  for (const [rel, rule] of rules as string[][])
    result.warnings.push(`table ${rel} has rule ${rule}: statements it rewrites are not recorded faithfully`);
  for (const d of described) {
    const q = `${quoteIdent(d.schema)}.${quoteIdent(d.relname)}`;
    const wanted = prevColumn ? [WID_COLUMN, PREV_COLUMN] : [WID_COLUMN];
    const missing = wanted.filter((c) => !d.hidden.has(c));
    if (options.shards && (d.relkind === 'p' || d.relkind === 'f')) await instrumentOnShards(options.shards, d, wanted);
    if (missing.length > 0) {
      try {
        await client.query(
          `ALTER TABLE ${q} ${missing.map((c) => `ADD COLUMN IF NOT EXISTS ${quoteIdent(c)} text`).join(', ')}`,
        );
      } catch (e) {
        const err = e as Error & { code?: string };
        throw new InputError(
          `cannot add the recorder's hidden column ${missing.join(', ')} ` +
            `to ${d.name}: ${err.message}${err.code ? ` [${err.code}]` : ''}` +
            ` (recording needs a role that owns the table, and no other session using it while it is instrumented)`,
        );
      }
      result.instrumented.push(d.name);
    }
    for (const d2 of d.unsafeColumns) {
      result.warnings.push(
        `column ${d.name}.${d2} does not use the C collation: reads whose WHERE uses it are recorded as partial`,
      );
    }
    const { hidden: _h, relkind: _k, ...info } = d;
    result.tables.push({ ...info, hasPrev: prevColumn || d.hidden.has(PREV_COLUMN) });
  }
  return result;
}

/** Drops the hidden columns again (after recording; the application's own columns are untouched). */
export async function uninstrument(client: Queryable, tables: string[]): Promise<void> {
  for (const name of tables) {
    const found = await rawQuery(
      client,
      `SELECT n.nspname, c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.oid ` +
        `= to_regclass($1)`,
      [name],
    );
    if (found.length === 0) continue;
    const [schema, rel] = found[0] as string[];
    await client.query(
      `ALTER TABLE ${quoteIdent(schema)}.${quoteIdent(rel)} DROP COLUMN IF EXISTS ${quoteIdent(WID_COLUMN)}, ` +
        `DROP COLUMN IF EXISTS ${quoteIdent(PREV_COLUMN)}`,
    );
  }
}

/** Quotes an identifier (as pg.escapeIdentifier). */
export function quoteIdent(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}

/**
 * Reads the current rows of each table as the initial database (wid `init`), in one REPEATABLE READ
 * transaction that first clears wids left by an earlier recording (they would read as writes nobody made).
 */
export async function snapshotInit(client: Queryable, schemas: TableInfo[]): Promise<Map<string, Row[]>> {
  const out = new Map<string, Row[]>();
  await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ');
  try {
    for (const t of schemas) {
      const q = `${quoteIdent(t.schema)}.${quoteIdent(t.relname)}`;
      const sets = [`${quoteIdent(WID_COLUMN)} = NULL`];
      if (t.hasPrev) sets.push(`${quoteIdent(PREV_COLUMN)} = NULL`);
      await client.query(`UPDATE ${q} SET ${sets.join(', ')} WHERE ${quoteIdent(WID_COLUMN)} IS NOT NULL`);
    }
    for (const t of schemas) {
      const q = `${quoteIdent(t.schema)}.${quoteIdent(t.relname)}`;
      const cols = t.columnOrder.map(quoteIdent).join(', ');
      const rows = await rawQuery(client, `SELECT ${cols} FROM ${q} ORDER BY ${t.key.map(quoteIdent).join(', ')}`);
      out.set(
        t.name,
        rows.map((r) => toFormatRow(t, r)),
      );
    }
    await client.query('COMMIT');
  } catch (e) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw e;
  }
  return out;
}

/** Finds the recorded table a RangeVar names, if any. */
export interface TableLookup {
  lookup(schemaname: string | undefined, relname: string): TableInfo | undefined;
  /** Whether a function of this name may return a set (the server's catalog at instrument(); a name the recorder
   *  does not know otherwise). */
  setReturning?(name: string): boolean;
}
