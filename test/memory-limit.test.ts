/**
 * Never a crash for memory (docs/reliability.md, "Memory"): a check that would outgrow its memory stops with the
 * verdict `unknown`, exit 3 and a reason that says memory, never a V8 abort ("JavaScript heap out of memory",
 * exit 134) or an uncaught RangeError. Through the command line (`--max-memory`, and a child whose heap is small),
 * the checker's allocation hook, and the parsing of the limit.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildPrivateCli } from './helpers/private-cli.js';
import { historyFromLines } from './gen/random-history.js';
import { scaleHistoryLines, writeScaleHistory } from '../bench/scale/generate.js';
import { BudgetExceeded, MemoryExceeded, parseMemorySize, withMemoryGuard } from '../src/checker/budget.js';
import { checkHistory } from '../src/checker/check.js';
import { Order } from '../src/checker/model/order.js';
import { loadPredicateParser } from '../src/sql/predicate.js';
import { InputError } from '../src/history/input-errors.js';

const MiB = 1024 * 1024;
let work: string;
let cli: string;
/** 20,000 generated bank transactions (11 MB): about 30 MB of heap once read, 60-100 MB with the model. */
let big: string;

beforeAll(() => {
  work = mkdtempSync(join(tmpdir(), 'isocheck-memory-'));
  cli = buildPrivateCli(join(work, 'cli'));
  big = join(work, 'bank-20000.ndjson');
  writeScaleHistory(big, { txns: 20_000, level: 'si+rc', seed: 1 });
}, 120_000);

afterAll(() => rmSync(work, { recursive: true, force: true }));

const run = (nodeArgs: string[], ...args: string[]) =>
  spawnSync(process.execPath, [...nodeArgs, cli, ...args], { encoding: 'utf8', timeout: 60_000 });

describe('the command line', () => {
  it('--max-memory below what a history needs: unknown, exit 3, the reason says memory, no stack trace', () => {
    const r = run([], 'check', '--json', '--max-memory', '24MB', big);
    expect(r.stderr).toBe('');
    expect(r.status).toBe(3);
    const out = JSON.parse(r.stdout);
    expect(out.verdict).toBe('unknown');
    expect(out.reason).toMatch(
      /^stopped: memory limit of 24 MB \(--max-memory\) reached while [a-z ]+: [\d,]+ MB in use/,
    );
    const text = run([], 'check', '--max-memory', '24', big);
    expect(text.status).toBe(3);
    expect(text.stdout).toMatch(/UNKNOWN/);
    expect(text.stdout).toMatch(/stopped: memory limit of 24 MB/);
    expect(text.stdout + text.stderr).not.toMatch(/\n\s+at |RangeError|FATAL/);
  }, 60_000);

  it('a heap too small for the history (--max-old-space-size=32): unknown and exit 3, not a V8 abort (134)', () => {
    const r = run(['--max-old-space-size=32'], 'check', '--json', big);
    expect(r.stderr).not.toMatch(/FATAL ERROR|heap out of memory/);
    expect(r.signal).toBeNull();
    expect(r.status).toBe(3);
    const out = JSON.parse(r.stdout);
    expect(out.verdict).toBe('unknown');
    expect(out.reason).toMatch(
      new RegExp(
        String.raw`^stopped: memory limit of [\d,]+ MB of JavaScript heap reached while ` +
          '.*NODE_OPTIONS=--max-old-space-size=MB raises it',
      ),
    );
  }, 60_000);

  it('a --max-memory that is not a size is a usage error (exit 2)', () => {
    const r = run([], 'check', '--max-memory', 'lots', big);
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/--max-memory lots: expected a size such as 4GB, 512MB, or a number of MB/);
  });
});

describe('the checker', () => {
  it('stops before allocating an n×n order that does not fit, naming it', () => {
    const u = process.memoryUsage();
    const limit = u.heapUsed + u.arrayBuffers + 64 * MiB;
    let allocated = false;
    const r = withMemoryGuard(
      limit,
      () => {
        new Order(40_000); // 40,000 × 1,250 words: 191 MB
        allocated = true;
        return { verdict: 'consistent', notes: [] as string[] } as {
          verdict: string;
          reason?: string;
          notes: string[];
        };
      },
      (reason) => ({ verdict: 'unknown', reason, notes: [] }),
    );
    expect(allocated).toBe(false);
    expect(r.verdict).toBe('unknown');
    expect(r.reason).toMatch(
      new RegExp(
        String.raw`^stopped: memory limit of [\d,]+ MB \(--max-memory\) reached while building the model: .*; ` +
          'the n×n order of 40,000 transactions needs 191 MB more$',
      ),
    );
  });

  it('checkHistory with maxMemoryBytes below what the ' +
    'check needs: unknown, with the stats of the history', async () => {
    await loadPredicateParser();
    const h = historyFromLines(scaleHistoryLines({ txns: 3000, level: 'si+rc', seed: 2 }));
    // 1 MB: less than the process holds already (a limit just above it would depend on when garbage is collected).
    const r = checkHistory(h, { maxMemoryBytes: MiB, shrink: false });
    expect(r.verdict).toBe('unknown');
    expect(r.reason).toMatch(/^stopped: memory limit of 1 MB \(--max-memory\) reached while building the model: /);
    expect(r.stats.transactions).toBe(3000);
    // The same history checks within the default limits.
    expect(checkHistory(h, { shrink: false }).verdict).toBe('consistent');
  }, 30_000);

  it('MemoryExceeded is a BudgetExceeded: every stage that stops for time also stops for memory', () => {
    expect(new MemoryExceeded('stopped: ...')).toBeInstanceOf(BudgetExceeded);
  });
});

describe('--max-memory sizes', () => {
  it('reads MB as a bare number and KB, MB, GB, TB with or without B or i, in binary units', () => {
    expect(parseMemorySize('4096')).toBe(4096 * MiB);
    expect(parseMemorySize('512MB')).toBe(512 * MiB);
    expect(parseMemorySize('4GB')).toBe(4096 * MiB);
    expect(parseMemorySize('4gb')).toBe(4096 * MiB);
    expect(parseMemorySize('1.5G')).toBe(1536 * MiB);
    expect(parseMemorySize(' 800 MiB ')).toBe(800 * MiB);
    expect(parseMemorySize('2048k')).toBe(2 * MiB);
    expect(parseMemorySize('1TB')).toBe(1024 * 1024 * MiB);
  });

  it('refuses what is not a size, or less than 1 MB', () => {
    for (const bad of ['', 'lots', '-1', '4XB', '4 G B', 'GB', '1e3', '0', '0.5', '512KB', 'Infinity']) {
      expect(() => parseMemorySize(bad), bad).toThrow(InputError);
    }
    expect(() => parseMemorySize('0')).toThrow(/--max-memory 0: at least 1 MB/);
  });
});
