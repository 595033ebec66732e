/**
 * CSV files for workload data: a tiny RFC 4180 writer (generate) and a csv-parse based loader (load) that turns
 * the rows into batched multi-row INSERTs with parameters.
 *
 * Conventions: first line is the header (column names); NULL is an empty unquoted field; an empty string is
 * `""`; fields holding a comma, quote, CR/LF, or leading/trailing spaces are quoted (quotes doubled); lines end
 * with "\n". Values are converted per column type when loading: int -> number, bool -> boolean, everything else
 * (numeric, bigint, text, timestamp) stays text so that PostgreSQL parses it exactly.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { parse } from 'csv-parse/sync';
import type { Queryable } from '../types.js';

export type ColType = 'int' | 'bigint' | 'numeric' | 'text' | 'bool' | 'timestamp';
export type Cell = string | number | boolean | null;

/** A table's columns in CSV (and INSERT) order. */
export type TableColumns = ReadonlyArray<readonly [name: string, type: ColType]>;

function field(v: Cell): string {
  if (v === null) return '';
  const s = typeof v === 'string' ? v : typeof v === 'boolean' ? (v ? 'true' : 'false') : String(v);
  if (s === '' || /[",\r\n]/.test(s) || s.trim() !== s) return `"${s.replace(/"/g, '""')}"`;
  return s;
}

/** Accumulates rows of one table and writes them as CSV. */
export class CsvWriter {
  private readonly lines: string[];
  constructor(private readonly columns: TableColumns) {
    this.lines = [columns.map(([name]) => field(name)).join(',')];
  }
  row(values: Cell[]): void {
    if (values.length !== this.columns.length)
      throw new Error(`CSV row has ${values.length} fields, expected ${this.columns.length}`);
    this.lines.push(values.map(field).join(','));
  }
  get count(): number {
    return this.lines.length - 1;
  }
  async write(file: string): Promise<void> {
    await writeFile(file, `${this.lines.join('\n')}\n`, 'utf8');
  }
}

function convert(value: string | null, type: ColType, where: string): Cell {
  if (value === null) return null;
  switch (type) {
    case 'int': {
      if (!/^-?\d+$/.test(value)) throw new Error(`${where}: "${value}" is not an integer`);
      const n = Number(value);
      if (!Number.isSafeInteger(n) || n < -2147483648 || n > 2147483647)
        throw new Error(`${where}: ${value} is out of int4 range`);
      return n;
    }
    case 'bigint':
      if (!/^-?\d+$/.test(value)) throw new Error(`${where}: "${value}" is not an integer`);
      return value;
    case 'numeric':
      if (!/^-?\d+(\.\d+)?$/.test(value)) throw new Error(`${where}: "${value}" is not a decimal number`);
      return value;
    case 'bool':
      if (value === 'true' || value === 't') return true;
      if (value === 'false' || value === 'f') return false;
      throw new Error(`${where}: "${value}" is not a boolean`);
    case 'text':
    case 'timestamp':
      return value;
  }
}

/** Reads a CSV written by CsvWriter into typed rows (checks the header against the columns). */
export async function readCsv(file: string, columns: TableColumns): Promise<Cell[][]> {
  const text = await readFile(file, 'utf8');
  const records = parse(text, {
    // an unquoted empty field is NULL; a quoted one is the empty string
    cast: (value: string, context: { quoting: boolean }) => (value === '' && !context.quoting ? null : value),
    relax_column_count: false,
  }) as (string | null)[][];
  if (records.length === 0) throw new Error(`${file}: empty CSV (no header)`);
  const header = records[0];
  const expected = columns.map(([n]) => n);
  if (header.length !== expected.length || header.some((h, i) => h !== expected[i])) {
    throw new Error(`${file}: header ${JSON.stringify(header)} does not match columns ${JSON.stringify(expected)}`);
  }
  return records
    .slice(1)
    .map((rec, i) => rec.map((v, j) => convert(v, columns[j][1], `${file} line ${i + 2} column ${expected[j]}`)));
}

/** Inserts rows with multi-row INSERTs of at most `batch` rows (and fewer than 65535 parameters). */
export async function insertRows(
  client: Queryable,
  table: string,
  columns: TableColumns,
  rows: Cell[][],
  batch = 500,
): Promise<void> {
  const n = columns.length;
  const perBatch = Math.max(1, Math.min(batch, Math.floor(60000 / n)));
  const names = columns.map(([c]) => c).join(', ');
  for (let start = 0; start < rows.length; start += perBatch) {
    const chunk = rows.slice(start, start + perBatch);
    const params: Cell[] = [];
    const tuples = chunk.map((row) => {
      const ph = row.map((v) => {
        params.push(v);
        return `$${params.length}`;
      });
      return `(${ph.join(', ')})`;
    });
    await client.query(`INSERT INTO ${table} (${names}) VALUES ${tuples.join(', ')}`, params);
  }
}

/** Loads every table's CSV (in the given table order) inside one transaction. */
export async function loadTables(
  client: Queryable,
  files: Record<string, string>,
  tables: Record<string, TableColumns>,
): Promise<void> {
  await client.query('BEGIN');
  try {
    for (const [table, columns] of Object.entries(tables)) {
      const file = files[table];
      if (file === undefined) throw new Error(`no CSV file for table ${table}`);
      await insertRows(client, table, columns, await readCsv(file, columns));
    }
    await client.query('COMMIT');
  } catch (e) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw e;
  }
}
