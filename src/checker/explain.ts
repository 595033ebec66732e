/**
 * Rendering anomalies (data, anomaly.ts) as text a person can check by hand in a terminal
 * (docs/semantics.md §5): a verdict line, then per anomaly its name, the violated levels, the transactions and
 * each forced edge with its reason.
 */
import type { Anomaly } from './anomaly.js';
import type { CheckResult } from './check.js';
import { whereText, type TxnDescription } from './describe.js';

const NAMES: Record<string, string> = {
  'garbage-read': 'garbage read',
  'aborted-read': 'aborted read (G1a)',
  'intermediate-read': 'intermediate read (G1b)',
  'internal-inconsistency': 'internal inconsistency',
  'predicate-mismatch': 'predicate mismatch',
  'value-mismatch': 'value mismatch',
  'circular-information-flow': 'circular information flow (G1c)',
  'lost-update': 'lost update',
  'write-skew': 'write skew',
  'long-fork': 'long fork',
  'fractured-read': 'fractured read',
  'causality-violation': 'causality violation',
  'g-single': 'G-single',
  'missing-row': 'missing row',
  'read-your-writes': 'read-your-writes violation',
  'commit-order-cycle': 'commit-order cycle',
  'no-consistent-order': 'no consistent commit order',
};

export function anomalyName(type: string): string {
  return NAMES[type] ?? type;
}

export function renderAnomaly(a: Anomaly, indent = '  '): string[] {
  const lines = [`${indent}${anomalyName(a.type).toUpperCase()}${a.levels?.length ? ` [violates ${a.levels.join(', ')}]` : ''}`];
  lines.push(`${indent}  ${a.message}`);
  if (a.events?.length) {
    for (const e of a.events) {
      lines.push(`${indent}  at ${e.txn} statement ${e.event} (line ${e.line}): ${e.op} ${e.table}${e.where ? ` WHERE ${whereText(e.where)}` : ''}${e.params ? ` params ${JSON.stringify(e.params)}` : ''}`);
    }
  }
  const cases = a.details?.cases as { assume: string; edges: Anomaly['edges'] }[] | undefined;
  if (cases) {
    cases.forEach((c, i) => {
      lines.push(`${indent}  Case ${i + 1}: suppose ${c.assume}. Then a cycle is forced:`);
      c.edges!.forEach((e, j) => lines.push(`${indent}   ${j + 1}. [${e.kind}] ${e.from} -> ${e.to}: ${e.reason}`));
    });
  } else if (a.edges?.length) {
    lines.push(`${indent}  Why (each step is forced; together they form a cycle):`);
    a.edges.forEach((e, i) => {
      lines.push(`${indent}   ${i + 1}. [${e.kind}] ${e.from} -> ${e.to}: ${e.reason}`);
    });
  }
  const txns = a.details?.transactions as TxnDescription[] | undefined;
  if (txns) {
    lines.push(`${indent}  Transactions:`);
    for (const t of txns) {
      lines.push(`${indent}   ${t.id}: session ${t.session} #${t.seq}${t.label ? ` ${t.label}` : ''}, ${t.iso}, ${t.status}`);
      const MAX_STATEMENTS = 10;
      for (const st of t.statements.slice(0, MAX_STATEMENTS)) lines.push(`${indent}     ${st}`);
      if (t.statements.length > MAX_STATEMENTS) lines.push(`${indent}     ... ${t.statements.length - MAX_STATEMENTS} more statements (--json has them all)`);
    }
  }
  const stuck = a.details?.stuck as { committed: number; lastCommitted: string[]; blocked: string[] } | undefined;
  if (stuck) {
    lines.push(`${indent}  The search for a commit order got furthest with ${stuck.committed} transactions committed (the last: ${stuck.lastCommitted.join(', ') || 'none'}); then none of the next ones can commit:`);
    for (const b of stuck.blocked) lines.push(`${indent}   - ${b}`);
  }
  const sub = a.details?.subHistory as string[] | undefined;
  if (sub) lines.push(`${indent}  Smallest inconsistent sub-history found: ${sub.join(', ')}`);
  const conflicts = a.details?.conflicts as string[] | undefined;
  if (conflicts) {
    lines.push(`${indent}  Unreturned rows whose hiding version had to be chosen:`);
    for (const c of conflicts) lines.push(`${indent}   - ${c}`);
  }
  return lines;
}

export function renderResult(file: string, r: CheckResult): string {
  const s = r.stats;
  const head = `${file}: ${r.verdict.toUpperCase()} (${s.committed} committed, ${s.aborted} aborted of ${s.transactions} transactions in ${s.sessions} sessions; ${s.decidedBy === 'linear' ? 'decided by the linear check' : `${s.conflicts} conflicts`}; ${(s.timeMs / 1000).toFixed(2)} s)`;
  const lines = [head];
  if (r.reason) lines.push(`  ${r.reason}`);
  for (const note of r.notes) lines.push(`  note: ${note}`);
  const shown = r.anomalies.slice(0, 5);
  for (const a of shown) lines.push(...renderAnomaly(a));
  if (r.anomalies.length > shown.length) lines.push(`  ... and ${r.anomalies.length - shown.length} more (use --json to see all)`);
  return lines.join('\n');
}
