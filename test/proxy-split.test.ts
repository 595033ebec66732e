// A Query string cut into its statements (src/proxy/split.ts): a text of one statement with no ';', comment or COPY
// is taken whole without parsing it (a text with its values inlined is new every time); what that gives is what
// parsing it gives, on statements, on leading and trailing whitespace, and on texts that do not parse (then the
// server's syntax error: the same text reaches it, at the same offset).
import { describe, expect, it } from 'vitest';
import { loadModule } from 'libpg-query';
import { split, splitStatements } from '../src/proxy/split.js';

const PARSES = [
  'SELECT 1',
  '  \n\tUPDATE pgbench_accounts SET abalance = abalance + -4003 WHERE aid = 52305 \n ',
  "INSERT INTO t VALUES ('été', E'a\\'b', $$x$$)",
  'SELECT "weird""name" FROM "T"\r\n',
  'BEGIN ISOLATION LEVEL REPEATABLE READ',
  '\fEND\v',
  'UPDATE pgbench_tellers SET tbalance = tbalance + 12 WHERE tid = 3;',
  '  END ;  \n',
];
const FAILS = [
  'SELEC 1',
  '\u00a0SELECT 1',
  'SELECT 1\u00a0',
  'SELECT (',
  '  SELECT * FROM  ',
  'select 1 2',
  'SELEC 1;',
];
/** Texts that take the parser's way: several statements, comments, COPY, nothing. */
const PARSED = [
  'SELECT 1; SELECT 2',
  'SELECT 1 -- one',
  '/* c */ SELECT 1',
  'COPY t FROM STDIN',
  '   ',
  '-- only',
  '',
  ';',
  'SELECT 1;;',
  "SELECT 'a;';",
  "SELECT 'a;",
  'SELECT $$;$$;',
];

const trimmed = (s: string): string => s.replace(/^[ \t\n\r\f\v]+|[ \t\n\r\f\v]+$/g, '');

describe('splitStatements', () => {
  it("gives a plain statement as the parser's split does, without parsing it", async () => {
    await loadModule();
    for (const text of PARSES) expect(splitStatements(text), JSON.stringify(text)).toEqual(split(text));
    for (const text of PARSED) expect(splitStatements(text), JSON.stringify(text)).toEqual(split(text));
  });

  it('hands a text that does not parse to the server as it is, at its offset (the same syntax error)', async () => {
    await loadModule();
    for (const text of FAILS) {
      const [whole] = split(text);
      expect(whole).toEqual({ text, offset: 0 });
      const pieces = splitStatements(text);
      expect(pieces).toHaveLength(1);
      const [p] = pieces;
      expect(p.text).toBe(trimmed(text).replace(/;$/, ''));
      expect(text.slice(p.offset, p.offset + p.text.length)).toBe(p.text);
    }
    // (a no-break space is not PostgreSQL's whitespace: kept, for the server to refuse; by the parser's split too)
    expect(splitStatements('\u00a0SELECT 1')[0].text).toBe('\u00a0SELECT 1');
    expect(split('SELECT 1; SELECT x\u00a0').map((p) => p.text)).toEqual(['SELECT 1', 'SELECT x\u00a0']);
  });
});
