/**
 * A fuzzing campaign over the committed histories (docs/reliability.md): seeded mutants of histories/known and
 * histories/corpus, each checked in this process with a time limit, and judged against an independent reading
 * of the documents (spec-check.ts) and, when small, against the brute-force oracle.
 *
 * A failure is: a crash (anything but a verdict or an InputError), a check that runs past its limit, a verdict
 * on a file the format forbids, `consistent` for a history with a read the semantics calls ill-formed, or a
 * verdict the oracle contradicts.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import seedrandom from 'seedrandom';
import { check } from '../../src/checker/check-file.js';
import { readHistory } from '../../src/history/reader.js';
import { loadPredicateParser, PredicateError } from '../../src/sql/predicate.js';
import { InputError } from '../../src/history/input-errors.js';
import { naiveCheck } from '../../src/oracle/naive.js';
import { mutate } from './mutate.js';
import { specCheck } from './spec-check.js';

export type FailureKind = 'crash' | 'slow' | 'verdict-on-malformed' | 'consistent-on-ill-formed' | 'oracle-disagrees';

export interface FuzzFailure {
  kind: FailureKind;
  source: string;
  mutation: string;
  detail: string;
  /** The mutant, to reproduce with `isocheck check`. */
  text: string;
}

export interface FuzzStats {
  tried: number;
  /** Refused as bad input (exit 2). */
  errors: number;
  consistent: number;
  inconsistent: number;
  unknown: number;
  /** Mutants the independent check calls malformed (all must be refused). */
  malformed: number;
  /** Mutants with an ill-formed read (none may be consistent). */
  illFormed: number;
  /** Mutants the oracle also decided. */
  oracleCompared: number;
  failures: Record<FailureKind, number>;
  maxMs: number;
  totalMs: number;
}

export interface FuzzOptions {
  n: number;
  seed: string;
  /** The limit given to each check (--timeout). */
  timeoutMs: number;
  /** Time allowed beyond the limit (reading the file, building the explanation). */
  graceMs: number;
  /** Compare with the oracle when the mutant has at most this many transactions. */
  oracleMaxTxns: number;
  /** Source files (default: histories/known and the corpus's small files). */
  sources?: string[];
  onProgress?: (stats: FuzzStats) => void;
}

/** histories/known/*.ndjson and the corpus's files under 200 kB. */
export function defaultSources(root = findRepo()): string[] {
  const known = readdirSync(join(root, 'histories', 'known'))
    .filter((f) => f.endsWith('.ndjson'))
    .map((f) => join(root, 'histories', 'known', f));
  const corpusDir = join(root, 'histories', 'corpus');
  const corpus = readdirSync(corpusDir)
    .filter((f) => f.endsWith('.ndjson.gz') || f.endsWith('.ndjson'))
    .map((f) => join(corpusDir, f))
    .filter((f) => readFileSync(f).length < 200_000)
    .slice(0, 12);
  return [...known, ...corpus].sort();
}

function findRepo(): string {
  // from bench/fuzz (sources) or dist/bench/fuzz (compiled)
  for (const up of [join(import.meta.dirname, '..', '..'), join(import.meta.dirname, '..', '..', '..')]) {
    try {
      readdirSync(join(up, 'histories', 'known'));
      return up;
    } catch {
      // not here
    }
  }
  throw new Error('histories/known not found');
}

const textOf = (file: string): string => {
  const buf = readFileSync(file);
  return (file.endsWith('.gz') ? gunzipSync(buf) : buf).toString('utf8');
};

export async function runCampaign(options: FuzzOptions): Promise<{ stats: FuzzStats; failures: FuzzFailure[] }> {
  await loadPredicateParser();
  const rng = seedrandom(options.seed);
  const sources = (options.sources ?? defaultSources()).map((f) => ({ file: f, text: textOf(f) }));
  const dir = mkdtempSync(join(tmpdir(), 'isocheck-fuzz-'));
  const stats: FuzzStats = {
    tried: 0,
    errors: 0,
    consistent: 0,
    inconsistent: 0,
    unknown: 0,
    malformed: 0,
    illFormed: 0,
    oracleCompared: 0,
    failures: { crash: 0, slow: 0, 'verdict-on-malformed': 0, 'consistent-on-ill-formed': 0, 'oracle-disagrees': 0 },
    maxMs: 0,
    totalMs: 0,
  };
  const failures: FuzzFailure[] = [];
  try {
    for (let i = 0; i < options.n; i++) {
      const source = sources[Math.floor(rng() * sources.length)];
      // most mutants get one mutation, some several
      let m = mutate(source.text, rng);
      const what = [m.what];
      while (rng() < 0.25) {
        m = mutate(m.text, rng);
        what.push(m.what);
      }
      const file = join(dir, `m${i}.ndjson`);
      writeFileSync(file, m.text);
      const fail = (kind: FailureKind, detail: string): void => {
        stats.failures[kind]++;
        failures.push({ kind, source: source.file, mutation: what.join('; '), detail, text: m.text });
      };
      const spec = specCheck(m.text);
      if (spec.format.length > 0) stats.malformed++;
      else if (spec.illFormed.length > 0) stats.illFormed++;
      const started = performance.now();
      let verdict: string;
      try {
        const r = await check(file, { timeoutMs: options.timeoutMs, shrink: false });
        verdict = r.verdict;
      } catch (e) {
        if (e instanceof InputError) {
          verdict = 'error';
          if (/\n/.test(e.message) && !e.message.split('\n').every((l) => /^.+:\d+: /.test(l)))
            fail('crash', `an error of several lines that are not FILE:LINE: ${e.message.slice(0, 300)}`);
        } else {
          verdict = 'crash';
          fail('crash', String((e as Error)?.stack ?? e).slice(0, 600));
        }
      }
      const ms = performance.now() - started;
      stats.tried++;
      stats.totalMs += ms;
      stats.maxMs = Math.max(stats.maxMs, ms);
      if (verdict === 'error') stats.errors++;
      else if (verdict === 'consistent') stats.consistent++;
      else if (verdict === 'inconsistent') stats.inconsistent++;
      else if (verdict === 'unknown') stats.unknown++;
      if (ms > options.timeoutMs + options.graceMs)
        fail('slow', `${Math.round(ms)} ms with a limit of ${options.timeoutMs} ms`);
      if (spec.format.length > 0 && verdict !== 'error' && verdict !== 'crash')
        fail('verdict-on-malformed', `${verdict}, but: ${spec.format.slice(0, 3).join('; ')}`);
      if (spec.format.length === 0 && spec.illFormed.length > 0 && verdict === 'consistent')
        fail('consistent-on-ill-formed', spec.illFormed.slice(0, 3).join('; '));
      if ((verdict === 'consistent' || verdict === 'inconsistent') && spec.txns <= options.oracleMaxTxns) {
        let naive: ReturnType<typeof naiveCheck> | undefined;
        try {
          naive = naiveCheck(await readHistory(file), { maxWork: 200_000 });
        } catch (e) {
          // the oracle evaluates every WHERE on every version: one it cannot evaluate means the file is malformed
          if (!(e instanceof PredicateError)) throw e;
          fail(
            'verdict-on-malformed',
            `${verdict}, but the oracle cannot evaluate a WHERE: ${e.message.slice(0, 200)}`,
          );
        }
        if (naive && naive.verdict !== 'unknown') {
          stats.oracleCompared++;
          if (naive.verdict !== verdict) fail('oracle-disagrees', `checker ${verdict}, oracle ${naive.verdict}`);
        }
      }
      rmSync(file, { force: true });
      if ((i + 1) % 250 === 0) options.onProgress?.(stats);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  return { stats, failures };
}
