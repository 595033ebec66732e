/**
 * The timeline's data: one lane per session, each transaction a bar from its recorded `begin` to `end`
 * (milliseconds since the recorder started). When some transaction has no times (hand-written or generated
 * histories), every transaction instead takes one slot in file order, which keeps each session's order.
 * The page draws this on a canvas; these are plain arrays indexed like `history.txns`.
 */
import type { History } from '../history/history.js';

export interface TimelineData {
  /** `recorded`: begin/end are milliseconds; `file-order`: begin/end are positions in the file. */
  mode: 'recorded' | 'file-order';
  /** Session numbers, ascending: lane i shows session sessions[i]. */
  sessions: number[];
  begin: number[];
  end: number[];
}

export function timelineData(history: History): TimelineData {
  const txns = history.txns;
  const recorded =
    txns.length > 0 && txns.every((t) => Number.isFinite(t.begin) && Number.isFinite(t.end) && t.end! >= t.begin!);
  const sessions = [...new Set(txns.map((t) => t.session))].sort((a, b) => a - b);
  if (recorded) return { mode: 'recorded', sessions, begin: txns.map((t) => t.begin!), end: txns.map((t) => t.end!) };
  return { mode: 'file-order', sessions, begin: txns.map((_, i) => i), end: txns.map((_, i) => i + 0.8) };
}
