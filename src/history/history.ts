/**
 * A history as loaded from a file (history-format.md): tables, initial rows and transactions, each remembering
 * the line it came from so that every later report can point back into the file. This is plain data; the
 * checker builds its dense-id model (`src/checker/model/model.ts`) from it.
 */
import type { ColumnTypes, Row, TxnLine } from './format.js';

export interface TableSchema {
  name: string;
  /** Key columns, each declared in `columns`, each once. */
  key: string[];
  /** Column -> type. From the reader, a null-prototype object: `columns[c]` is undefined for any undeclared
   *  name, `toString` and `__proto__` included. Look names up as own properties when the History is built
   *  elsewhere. */
  columns: ColumnTypes;
  line: number;
}

export interface InitRow {
  /** Every column of the table (docs/history-format.md: rows are whole). */
  row: Row;
  line: number;
}

export interface Txn extends TxnLine {
  /** Line of the file this transaction was read from (1-based). */
  line: number;
}

export interface History {
  /** The file name as given, `<stdin>` for standard input. */
  file: string;
  meta: Record<string, unknown>;
  tables: Map<string, TableSchema>;
  /** Initial rows per table, in file order. */
  init: Map<string, InitRow[]>;
  txns: Txn[];
  /** The file has no `end` line: the recorder did not finish cleanly. */
  truncated: boolean;
}
