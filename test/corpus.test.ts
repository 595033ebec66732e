// The recorded corpus (histories/corpus, made by bench/make-corpus.ts on embedded PostgreSQL): every history is
// consistent at the levels PostgreSQL gave it, what-if checks keep their recorded verdicts, and the weaker-than-
// declared runs show violations (TPC-C at READ COMMITTED checked as SER; SmallBank at SI declared SER).
import { beforeAll, describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { checkFile } from '../src/cli/check-command.js';
import { loadPredicateParser } from '../src/sql/predicate.js';
import { anomalyMessage } from '../src/checker/explain/explain.js';

const dir = join(import.meta.dirname, '..', 'histories', 'corpus');
const index: {
  file: string;
  workload: string;
  iso: string;
  declare?: string;
  seed: string;
  checkIso?: string;
  expected: string;
}[] = JSON.parse(readFileSync(join(dir, 'index.json'), 'utf8'));

beforeAll(async () => {
  await loadPredicateParser();
});

describe('recorded corpus', () => {
  it('covers every workload and configuration, and shows violations where levels are weaker than checked', () => {
    for (const w of ['tpcc', 'tpcc-pc', 'twitter', 'smallbank']) {
      for (const c of ['ser', 'si', 'rc', 'ser+rc', 'si+rc'])
        expect(index.some((e) => e.workload === w && e.iso === c && !e.checkIso && e.expected === 'consistent')).toBe(
          true,
        );
    }
    expect(
      index.some(
        (e) => e.workload === 'tpcc' && e.iso === 'rc' && e.checkIso === 'SER' && e.expected === 'inconsistent',
      ),
    ).toBe(true);
    expect(index.some((e) => e.workload === 'smallbank' && e.declare === 'ser' && e.expected === 'inconsistent')).toBe(
      true,
    );
  });
  for (const e of index) {
    it(`${e.file}${e.checkIso ? ` checked as ${e.checkIso}` : ''} is ${e.expected}`, async () => {
      const r = await checkFile(join(dir, e.file), { iso: e.checkIso, timeout: 60 });
      expect(r.verdict, r.error ?? JSON.stringify(r.result?.anomalies[0] ?? {}).slice(0, 500)).toBe(e.expected);
      if (r.verdict === 'inconsistent') expect(anomalyMessage(r.result!.anomalies[0]).length).toBeGreaterThan(10);
    });
  }
});
