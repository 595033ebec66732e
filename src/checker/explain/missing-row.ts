/**
 * The anomaly of a missing row (docs/semantics.md §3.3, §5): a read did not return a row although every version
 * it could have seen satisfies its WHERE. Used by the search (check.ts) and by the linear check (linear/).
 */
import type { MissingRowAnomaly } from '../anomaly.js';
import { keyRef, txnId } from './cycle.js';
import { levelName } from '../levels.js';
import { INIT, versionValue, type CheckModel } from '../model/model.js';

export function missingRowAnomaly(model: CheckModel, readId: number, key: number, ones: number[]): MissingRowAnomaly {
  const read = model.reads[readId];
  const reader = model.txns[read.txn];
  return {
    type: 'missing-row',
    txns: [reader.id, ...ones.filter((t) => t !== INIT).map((t) => model.txns[t].id)],
    levels: [levelName(reader.level)],
    events: [read.ref],
    reader: reader.id,
    level: levelName(reader.level),
    read: read.ref,
    ...keyRef(model, key),
    versions: ones.map((t) => ({ writer: txnId(model, t), row: versionValue(model, t, key) })),
  };
}
