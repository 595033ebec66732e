/**
 * Writer for history files (history-format.md, version 1).
 *
 * `HistoryWriter` appends one line per call with a synchronous write, so a process killed at any moment leaves
 * every line written so far in the file (the last one whole or absent). For `.gz` files each line is written as
 * its own gzip member (concatenated members are a valid gzip stream), which keeps the same guarantee.
 */
import { closeSync, fsyncSync, openSync, writeSync } from 'node:fs';
import { dirname } from 'node:path';
import { makeFolders } from './folders.js';
import { gzipSync } from 'node:zlib';
import { HISTORY_FORMAT, HISTORY_VERSION, type ColumnTypes, type Line, type Row, type TxnLine } from './format.js';

export class HistoryWriter {
  private fd: number | undefined;
  private readonly gzip: boolean;
  private txnCount = 0;

  constructor(readonly file: string) {
    makeFolders(dirname(file));
    this.fd = openSync(file, 'w');
    this.gzip = file.endsWith('.gz');
  }

  private write(line: Line): void {
    if (this.fd === undefined) throw new Error(`history writer for ${this.file} is closed`);
    let text: string;
    try {
      text = `${JSON.stringify(line)}\n`;
    } catch (e) {
      if (!(e instanceof RangeError)) throw e;
      // (V8's longest string is about 512 MB: a read or write of millions of wide rows in one transaction)
      const what = line.kind === 'txn' ? `transaction ${line.id}` : `the ${line.kind} line`;
      throw new Error(
        `${what} is too large for one line of the history (more than the longest string JavaScript can make, ` +
          'about 512 MB of JSON): it is not in the history',
      );
    }
    if (this.gzip) writeSync(this.fd, gzipSync(text));
    else writeSync(this.fd, text);
  }

  header(meta: Record<string, unknown>): void {
    this.write({ kind: 'history', format: HISTORY_FORMAT, version: HISTORY_VERSION, meta });
  }

  table(name: string, key: string[], columns: ColumnTypes): void {
    this.write({ kind: 'table', name, key, columns });
  }

  /** Initial rows, split into lines of at most `chunk` rows. */
  init(table: string, rows: Row[], chunk = 1000): void {
    for (let i = 0; i < rows.length; i += chunk) this.write({ kind: 'init', table, rows: rows.slice(i, i + chunk) });
  }

  txn(txn: Omit<TxnLine, 'kind'>): void {
    this.write({ kind: 'txn', ...txn } as TxnLine);
    this.txnCount++;
  }

  get transactions(): number {
    return this.txnCount;
  }

  /** Writes the `end` line (the recorder finished cleanly) and closes the file. */
  end(): void {
    this.write({ kind: 'end', transactions: this.txnCount });
    this.close();
  }

  /** Closes without the `end` line (the file then reads as truncated). */
  close(): void {
    if (this.fd === undefined) return;
    try {
      fsyncSync(this.fd);
    } catch {
      // not every file system supports fsync; the data is written either way
    }
    closeSync(this.fd);
    this.fd = undefined;
  }
}

/** Writes a whole history at once (tests, generators, converters). */
export function writeHistoryFile(file: string, lines: Line[]): void {
  const w = new HistoryWriter(file);
  for (const line of lines) {
    if (line.kind === 'history') w.header(line.meta);
    else if (line.kind === 'table') w.table(line.name, line.key, line.columns);
    else if (line.kind === 'init') w.init(line.table, line.rows);
    else if (line.kind === 'txn') {
      const { kind: _kind, ...rest } = line;
      w.txn(rest);
    } else if (line.kind === 'end') {
      w.end();
      return;
    }
  }
  w.close();
}
