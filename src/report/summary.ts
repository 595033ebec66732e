/**
 * The configuration a report states next to its verdict, computed from the history itself: which isolation
 * levels each transaction label ran at (with how many committed, aborted or ended unknown), and the
 * recorder's `meta` (database, workload, seed, sizes) as key/value text.
 */
import type { IsolationLevel, TxnStatus } from '../history/format.js';
import type { History } from '../history/history.js';

export interface LabelLevels {
  /** The transaction label, or `(no label)`. */
  label: string;
  /** Transactions per isolation level. */
  levels: Partial<Record<IsolationLevel, number>>;
  statuses: Record<TxnStatus, number>;
  total: number;
}

const NO_LABEL = '(no label)';

export function labelLevels(history: History): LabelLevels[] {
  const byLabel = new Map<string, LabelLevels>();
  for (const t of history.txns) {
    const label = t.label ?? NO_LABEL;
    let entry = byLabel.get(label);
    if (!entry)
      byLabel.set(label, (entry = { label, levels: {}, statuses: { committed: 0, aborted: 0, unknown: 0 }, total: 0 }));
    entry.levels[t.iso] = (entry.levels[t.iso] ?? 0) + 1;
    entry.statuses[t.status]++;
    entry.total++;
  }
  return [...byLabel.values()].sort((a, b) =>
    a.label === NO_LABEL ? 1 : b.label === NO_LABEL ? -1 : a.label.localeCompare(b.label),
  );
}

export interface MetaEntry {
  key: string;
  value: string;
}

/** Keys shown first, in this order; the rest follow in file order. */
const FIRST = [
  'database',
  'workload',
  'case',
  'seed',
  'sessions',
  'txnsPerSession',
  'scale',
  'isolation',
  'config',
  'declared',
  'declaredConfig',
  'level',
  'note',
  'startedAt',
  'tool',
];
const MAX_VALUE = 240;

function valueText(v: unknown): string {
  const s = typeof v === 'string' ? v : (JSON.stringify(v) ?? String(v));
  return s.length > MAX_VALUE ? `${s.slice(0, MAX_VALUE - 1)}…` : s;
}

export function metaEntries(meta: Record<string, unknown>): MetaEntry[] {
  const keys = Object.keys(meta);
  const ordered = [...FIRST.filter((k) => keys.includes(k)), ...keys.filter((k) => !FIRST.includes(k))];
  return ordered.map((key) => ({ key, value: valueText(meta[key]) }));
}
