/**
 * `npm run bench -- components FILE...`: how much of a history splits into independent parts (docs/scale.md).
 *
 * Two committed transactions are linked when they touch a common row: write it, read it, or could have matched
 * it with a WHERE and did not return it (the candidate rows of the linear check); with session order, also when
 * they are in one session. Parts linked by neither can be checked apart at every level: every axiom instance
 * (a read, the writer it read from, another writer of the row, and what makes that one visible: session order,
 * reads, a common written row, or the commit order among these) stays inside one part, so consistent commit
 * orders of the parts interleave into one. Prints, per file, the number of parts and the share of transactions
 * in the largest, by rows alone and by rows and sessions.
 */
import { readHistory } from '../../src/history/reader.js';
import { loadPredicateParser } from '../../src/sql/predicate.js';
import { buildModel } from '../../src/checker/model/model.js';
import { CandidateRows } from '../../src/checker/linear/candidate-rows.js';
import { UsageError } from '../usage-error.js';

function find(parent: Int32Array, x: number): number {
  while (parent[x] !== x) {
    parent[x] = parent[parent[x]];
    x = parent[x];
  }
  return x;
}

function parts(parent: Int32Array, n: number): { count: number; largest: number } {
  const size = new Map<number, number>();
  for (let t = 1; t < n; t++) {
    const r = find(parent, t);
    size.set(r, (size.get(r) ?? 0) + 1);
  }
  return { count: size.size, largest: Math.max(0, ...size.values()) };
}

export async function runComponents(files: string[]): Promise<void> {
  if (files.length === 0) throw new UsageError('components: give one or more history files');
  await loadPredicateParser();
  console.log(
    '| history | transactions | parts (rows) | largest (rows) | parts (rows + sessions) | largest (rows + sessions) |',
  );
  console.log('| :-- | --: | --: | --: | --: | --: |');
  for (const file of files) {
    const model = buildModel(await readHistory(file));
    const { n } = model;
    const parent = Int32Array.from({ length: n }, (_, i) => i);
    const union = (a: number, b: number) => {
      const x = find(parent, a),
        y = find(parent, b);
      if (x !== y) parent[x] = y;
    };
    // Per row, the first transaction that touched it: every later one joins it. Init (0) is no link.
    const first = new Int32Array(model.keys.length).fill(-1);
    const touch = (t: number, key: number) => {
      if (first[key] < 0) first[key] = t;
      else union(first[key], t);
    };
    for (let t = 1; t < n; t++) for (const key of model.writes[t].keys()) touch(t, key);
    const rows = new CandidateRows(model);
    for (const r of model.reads) {
      for (let i = r.from; i < r.from + r.fromCount; i++) touch(r.txn, model.fromKey[i]);
      if (!r.partial) for (const key of rows.of(r)) touch(r.txn, key);
    }
    const byRows = parts(parent, n);
    for (let t = 1; t < n; t++) if (model.soPrev[t] > 0) union(model.soPrev[t], t);
    const withSessions = parts(parent, n);
    const pct = (x: number) => `${((100 * x) / Math.max(1, n - 1)).toFixed(1)}%`;
    console.log(
      `| ${file.split('/').pop()} | ${n - 1} | ${byRows.count} | ${pct(byRows.largest)} | ${withSessions.count} ` +
        `| ${pct(withSessions.largest)} |`,
    );
  }
}
