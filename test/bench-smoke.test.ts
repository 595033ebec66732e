// The paper benchmark's machinery on a tiny grid (`npm run bench -- paper --quick` restricted to Twitter, one
// configuration, one seed, two sizes, plus experiment 3's two naive baselines): records on the embedded PostgreSQL,
// checks each history in a child process, and writes well-formed CSVs, SVGs and a report. Speed targets are the
// benchmark's business (bench/RESULTS.md), not this test's.
import { beforeAll, describe, expect, it } from 'vitest';
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { COLUMNS, splitCsvLine, fromCsv, toCsv } from '../bench/paper.js';

const root = join(import.meta.dirname, '..');
let work: string;
let run: ReturnType<typeof spawnSync>;

/** Every tag closed in order (enough for the SVG we write by hand: no CDATA, no comments). */
function wellFormedXml(text: string): string | undefined {
  const stack: string[] = [];
  for (const m of text.matchAll(/<(\/?)([a-zA-Z][\w:-]*)((?:\s+[\w:-]+="[^"<]*")*)\s*(\/?)>/g)) {
    const [, close, name, , selfClose] = m;
    if (selfClose) continue;
    if (!close) stack.push(name);
    else if (stack.pop() !== name) return `unexpected </${name}>`;
  }
  if (stack.length) return `unclosed <${stack.join('>, <')}>`;
  if (/<(?![a-zA-Z/])/.test(text.replace(/<\?xml[^>]*>/, ''))) return 'a stray "<"';
  return undefined;
}

beforeAll(() => {
  execFileSync(
    process.execPath,
    [join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.build.json'],
    { cwd: root, stdio: 'inherit' },
  );
  work = mkdtempSync(join(tmpdir(), 'isocheck-bench-smoke-'));
  run = spawnSync(
    process.execPath,
    [
      join(root, 'dist', 'bench', 'run.js'),
      'paper',
      '--quick',
      '--experiments',
      'exp1,exp3',
      '--workloads',
      'twitter',
      '--configs',
      'ser',
      '--sessions',
      '1,2',
      '--txns',
      '1,2',
      '--seeds',
      '1',
      '--timeout',
      '10',
      '--results',
      join(work, 'results'),
      '--md',
      join(work, 'RESULTS.md'),
      '--histories',
      join(work, 'histories'),
    ],
    { cwd: root, encoding: 'utf8', timeout: 110_000 },
  );
  return () => rmSync(work, { recursive: true, force: true });
}, 120_000);

describe('npm run bench -- paper --quick (tiny grid)', () => {
  it('runs to the end and prints progress on stderr', () => {
    expect(run.error).toBeUndefined();
    expect(run.status, String(run.stderr)).toBe(0);
    expect(String(run.stderr)).toMatch(/\[paper \d+s\] .*histories/);
    expect(String(run.stdout)).toMatch(/report: /);
  });

  it('writes one CSV line per history and checker, with the documented columns', () => {
    const exp1 = readFileSync(join(work, 'results', 'exp1.csv'), 'utf8');
    const exp3 = readFileSync(join(work, 'results', 'exp3.csv'), 'utf8');
    for (const text of [exp1, exp3]) {
      const lines = text.trimEnd().split('\n');
      expect(lines[0]).toBe(COLUMNS.join(','));
      for (const l of lines) expect(splitCsvLine(l)).toHaveLength(COLUMNS.length);
    }
    const r1 = fromCsv(exp1);
    expect(r1.map((r) => [r.workload, r.config, r.sessions, r.txns, r.checker])).toEqual([
      ['twitter', 'ser', 1, 10, 'ours'],
      ['twitter', 'ser', 2, 10, 'ours'],
    ]);
    for (const r of r1) {
      expect(r.verdict).toBe('consistent');
      expect(r.events).toBeGreaterThan(0);
      expect(r.time_ms).toBeGreaterThanOrEqual(0);
      expect(r.load_ms).toBeGreaterThan(0);
      expect(r.peak_mb).toBeGreaterThan(10);
      expect(typeof r.conflicts).toBe('number');
      expect(typeof r.prefixes).toBe('number');
    }
    const r3 = fromCsv(exp3);
    expect(r3.map((r) => `${r.txns}:${r.checker}:${r.check_iso}:${r.config}`)).toEqual([
      '1:ours:SER:rc',
      '1:naive:SER:rc',
      '1:naive-exhaustive:SER:rc',
      '2:ours:SER:rc',
      '2:naive:SER:rc',
      '2:naive-exhaustive:SER:rc',
    ]);
    for (const r of r3) expect(['consistent', 'inconsistent', 'timeout']).toContain(r.verdict);
    // The same history gets the same verdict from every checker that decided it.
    for (const [a, b] of [
      [0, 1],
      [0, 2],
      [3, 4],
      [3, 5],
    ])
      if (r3[b].verdict !== 'timeout') expect(r3[a].verdict).toBe(r3[b].verdict);
  });

  it('round-trips CSV fields with commas and quotes', () => {
    const [row] = fromCsv(readFileSync(join(work, 'results', 'exp1.csv'), 'utf8'));
    const odd = { ...row, reason: 'a, "b"' };
    expect(fromCsv(toCsv([odd]))[0]).toEqual(odd);
  });

  it('draws a well-formed SVG per experiment with one panel for the workload', () => {
    for (const id of ['exp1', 'exp3']) {
      const svg = readFileSync(join(work, 'results', `${id}.svg`), 'utf8');
      expect(svg.startsWith('<svg xmlns="http://www.w3.org/2000/svg"')).toBe(true);
      expect(svg.trimEnd().endsWith('</svg>')).toBe(true);
      expect(wellFormedXml(svg)).toBeUndefined();
      expect(svg).toMatch(/>Twitter</);
      expect(svg).toMatch(/<circle /);
    }
    expect(readFileSync(join(work, 'results', 'exp1.svg'), 'utf8')).toMatch(/<polyline /);
    expect(readFileSync(join(work, 'results', 'exp3.svg'), 'utf8')).toMatch(/naive baseline/);
  });

  it('writes the report with the targets and the comparison with the paper', () => {
    const md = readFileSync(join(work, 'RESULTS.md'), 'utf8');
    expect(md).toMatch(/## Targets/);
    expect(md).toMatch(/## Line by line with the paper/);
    expect(md).toMatch(/load average/);
    expect(md).toMatch(/Exp\. 3: naive \(sets of sources, smallest first\), not decided in time, Twitter \| 35\.5% \|/);
    expect(existsSync(join(work, 'results', 'run.json'))).toBe(true);
    const info = JSON.parse(readFileSync(join(work, 'results', 'run.json'), 'utf8'));
    expect(info.checksRun).toBe(8); // 2 experiment-1 checks + 3 checkers x 2 experiment-3 histories
  });
});
