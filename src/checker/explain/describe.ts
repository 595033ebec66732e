/**
 * The transactions an anomaly involves, in SQL terms (docs/semantics.md §5): session, position, label, level and
 * each statement with the rows and wids it read or wrote, so a person can check the explanation by hand.
 */
import type { HistoryEvent } from '../../history/format.js';
import type { History } from '../../history/history.js';
import type { Anomaly, TxnDescription } from '../anomaly.js';

export type { TxnDescription };

const MAX_ROWS = 6;
const MAX_VALUE = 32;
const MAX_WHERE = 300;

/** A WHERE clause for a message: cut in the middle past 300 characters (a WHERE of 20,000 ORs stays readable;
 *  the data, EventRef.where, keeps it whole). */
export function whereText(where: string): string {
  if (where.length <= MAX_WHERE) return where;
  const half = Math.floor((MAX_WHERE - 40) / 2);
  return `${where.slice(0, half)} … (${where.length} characters) … ${where.slice(-half)}`;
}

/** A row as JSON with long values cut (the file has them whole). */
function short(row: unknown): string {
  return JSON.stringify(row, (_k, v) =>
    typeof v === 'string' && v.length > MAX_VALUE ? `${v.slice(0, MAX_VALUE - 1)}…` : v,
  );
}

function rowsText(rows: string[]): string {
  return rows.length <= MAX_ROWS ? rows.join('; ') : `${rows.slice(0, MAX_ROWS).join('; ')}; ... (${rows.length} rows)`;
}

const rowsOrNone = (rows: string[]) => (rows.length === 0 ? 'no rows' : rowsText(rows));

function statementText(e: HistoryEvent): string {
  const where =
    e.op !== 'insert' && e.where ? ` WHERE ${whereText(e.where)}${e.params?.length ? ` ${short(e.params)}` : ''}` : '';
  const partial = e.op !== 'insert' && e.partial ? ' (partial)' : '';
  switch (e.op) {
    case 'select':
      return `SELECT ${e.table}${where}${partial} -> ${rowsOrNone(e.rows.map((r) => `${short(r.row)} [${r.wid}]`))}`;
    case 'insert':
      return `INSERT ${e.table} [${e.wid}] ${rowsText(e.rows.map((r) => short(r.row)))}`;
    case 'update': {
      const rows = e.rows.map((r) => `${short(r.row)} (was ${r.read})`);
      return `UPDATE ${e.table}${where}${partial} [${e.wid}] -> ${rowsOrNone(rows)}`;
    }
    case 'delete': {
      const rows = e.rows.map((r) => `${JSON.stringify(r.key)} (was ${r.read})`);
      return `DELETE ${e.table}${where}${partial} [${e.wid}] -> ${rowsOrNone(rows)}`;
    }
  }
}

function describeTransactions(history: History, ids: string[]): TxnDescription[] {
  const wanted = new Set(ids);
  return history.txns
    .filter((t) => wanted.has(t.id))
    .map((t) => ({
      id: t.id,
      session: t.session,
      seq: t.seq,
      ...(t.label ? { label: t.label } : {}),
      ...(t.node ? { node: t.node } : {}),
      iso: t.iso,
      status: t.status,
      statements: t.events.map(statementText),
    }));
}

/** Adds `transactions` to each anomaly that names a few transactions. */
export function attachTransactions(history: History, anomalies: Anomaly[], max = 8): void {
  for (const a of anomalies) {
    if (a.type === 'no-consistent-order') continue; // it says where the search got stuck
    const ids = a.txns.filter((id) => id !== 'init');
    if (ids.length === 0 || ids.length > max) continue;
    a.transactions = describeTransactions(history, ids);
  }
}
