// src/proxy/statement-text.ts: which statements PostgreSQL analyzes with a snapshot (analyze_requires_snapshot),
// read from the text after its leading comments.
import { describe, expect, it } from 'vitest';
import { takesSnapshot, withoutLeadingComments } from '../src/proxy/statement-text.js';

describe('takesSnapshot', () => {
  it('says yes for queries and the utility statements holding one', () => {
    for (const t of [
      'SELECT 1',
      '/* app */ ( (SELECT 1))',
      '-- note\nINSERT INTO t VALUES (1)',
      'with x as (select 1) select * from x',
      'VALUES (1)',
      'TABLE t',
      'UPDATE t SET a = 1',
      'DELETE FROM t',
      'MERGE INTO t USING u ON true WHEN MATCHED THEN DO NOTHING',
      'DECLARE c CURSOR FOR SELECT 1',
      'EXPLAIN SELECT 1',
      'CALL p()',
      'CREATE TEMP TABLE z AS SELECT 1',
      'create unlogged table q as (select 1)',
      'CREATE TABLE z (a, b) AS VALUES (1, 2)',
      'CREATE MATERIALIZED VIEW v AS SELECT 1',
    ])
      expect([t, takesSnapshot(t)]).toEqual([t, true]);
  });
  it('says no for other utility statements', () => {
    for (const t of [
      'SET work_mem = 64',
      'SHOW work_mem',
      'BEGIN',
      'CREATE TABLE t (a int4 DEFAULT 1)',
      "CREATE TABLE t (a text DEFAULT 'as select')",
      'VACUUM t',
      'selectivity',
    ])
      expect([t, takesSnapshot(t)]).toEqual([t, false]);
  });
  it('takes off comments and white space at the start only', () => {
    expect(withoutLeadingComments(' /* a */ -- b\n\tBEGIN /* c */')).toBe('BEGIN /* c */');
    expect(withoutLeadingComments('/* unclosed')).toBe('/* unclosed');
  });
});
