// Test helpers: build history files from line objects and load them through the real reader.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Line, TxnLine } from '../../src/history/format.js';
import type { History } from '../../src/history/history.js';
import { readHistory } from '../../src/history/reader.js';

const dir = mkdtempSync(join(tmpdir(), 'isocheck-test-'));
let counter = 0;

export function writeLines(lines: object[], name = `h${++counter}.ndjson`): string {
  const file = join(dir, name);
  writeFileSync(file, `${lines.map((l) => JSON.stringify(l)).join('\n')}\n`);
  return file;
}

export async function loadLines(lines: object[]): Promise<History> {
  return readHistory(writeLines(lines));
}

export const HEADER: Line = { kind: 'history', format: 'isocheck-history', version: 1, meta: {} };
export const TABLE_T: Line = { kind: 'table', name: 't', key: ['id'], columns: { id: 'int4', v: 'int4' } };

/** A history over t(id, v) with the given initial rows and transactions (kind and end added). */
export function registerLines(
  init: { id: number; v: number }[],
  txns: Omit<TxnLine, 'kind'>[],
  withEnd = true,
): object[] {
  return [
    HEADER,
    TABLE_T,
    { kind: 'init', table: 't', rows: init },
    ...txns.map((t) => ({ kind: 'txn', ...t })),
    ...(withEnd ? [{ kind: 'end', transactions: txns.length }] : []),
  ];
}

export const sel = (
  id: number,
  rows: { wid: string; v: number; id?: number }[],
  where = 'id = $1',
  params: unknown[] = [id],
) => ({
  op: 'select' as const,
  table: 't',
  where,
  params,
  rows: rows.map((r) => ({ wid: r.wid, row: { id: r.id ?? id, v: r.v } })),
});
export const ins = (wid: string, id: number, v: number) => ({
  op: 'insert' as const,
  table: 't',
  wid,
  rows: [{ row: { id, v } }],
});
export const upd = (wid: string, id: number, read: string, v: number) => ({
  op: 'update' as const,
  table: 't',
  where: 'id = $1',
  params: [id],
  wid,
  rows: [{ read, row: { id, v } }],
});
export const del = (wid: string, id: number, read: string) => ({
  op: 'delete' as const,
  table: 't',
  where: 'id = $1',
  params: [id],
  wid,
  rows: [{ read, key: [id] }],
});
export const txn = (
  id: string,
  session: number,
  seq: number,
  events: TxnLine['events'],
  extra: Partial<TxnLine> = {},
): Omit<TxnLine, 'kind'> => ({
  id,
  session,
  seq,
  iso: 'SER',
  status: 'committed',
  events,
  ...extra,
});
