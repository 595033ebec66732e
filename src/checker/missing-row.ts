/**
 * The anomaly of a missing row (docs/semantics.md §3.3, §5): a read did not return a row although every version
 * it could have seen satisfies its WHERE. Used by the search (check.ts) and by the linear check (linear/).
 */
import type { Anomaly } from './anomaly.js';
import { valueOf } from './conflicts.js';
import { txnName } from './cycle.js';
import { whereText } from './describe.js';
import { levelName } from './levels.js';
import { describeKey, INIT, type CheckModel } from './model.js';

export function missingRowAnomaly(model: CheckModel, readId: number, key: number, ones: number[]): Anomaly {
  const read = model.reads[readId];
  const reader = model.txns[read.txn];
  const keyText = describeKey(model, key);
  const versions = ones.map((t) => `${t === INIT ? 'init' : model.txns[t].id}: ${JSON.stringify(valueOf(model, t, key))}`);
  return {
    type: 'missing-row',
    message: `${reader.id} (${levelName(reader.level)}) ${read.ref.op} with WHERE ${read.ref.where !== undefined ? whereText(read.ref.where) : '(none)'}${read.ref.params ? ` ${JSON.stringify(read.ref.params)}` : ''} did not return ${keyText}, but every version it could have seen matches the WHERE (${versions.join('; ')}), and no transaction it could have read from deleted it or changed it to not match`,
    txns: [reader.id, ...ones.filter((t) => t !== INIT).map((t) => model.txns[t].id)],
    levels: [levelName(reader.level)],
    events: [read.ref],
    details: { key: model.keys[key].values, table: model.tables[model.keys[key].table].schema.name, reader: txnName(model, read.txn), versions },
  };
}
