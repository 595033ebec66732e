// The level boundary (`check --levels`, src/checker/level-boundary.ts) against the known answers: for every case
// of histories/known checked at all six levels, the boundary computed from one file gives each level's expected
// verdict; with labels, the configuration found is consistent and raising a label it stopped is not.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { levelBoundary } from '../src/checker/level-boundary.js';
import { check } from '../src/checker/check-file.js';
import { parseIsoOverride } from '../src/checker/levels.js';
import { readHistory } from '../src/history/reader.js';
import { loadPredicateParser } from '../src/sql/predicate.js';
import { ISOLATION_LEVELS } from '../src/history/format.js';
import { runCheckCommand } from '../src/cli/check-command.js';
import seedrandom from 'seedrandom';
import { randomHistory } from './gen/random-history.js';

const known = join(import.meta.dirname, '..', 'histories', 'known');
const expected = JSON.parse(readFileSync(join(known, 'expected.json'), 'utf8')) as Record<
  string,
  { case: string; level: string; verdict: string }
>;
/** Cases checked at each of the six levels: case -> level -> verdict. */
const cases = new Map<string, Map<string, string>>();
for (const e of Object.values(expected)) {
  if (!cases.has(e.case)) cases.set(e.case, new Map());
  cases.get(e.case)!.set(e.level, e.verdict);
}
const sixLevels = [...cases].filter(([, byLevel]) => ISOLATION_LEVELS.every((l) => byLevel.has(l)));

beforeAll(async () => {
  await loadPredicateParser();
});

afterEach(() => {
  vi.restoreAllMocks();
});

describe('level boundary', () => {
  it('has known answers to compare with', () => {
    expect(sixLevels.length).toBeGreaterThanOrEqual(8);
  });

  it.each(sixLevels)(
    '%s: every level as the known answers say, weaker levels consistent, stronger inconsistent',
    async (name, byLevel) => {
      const b = await levelBoundary(await readHistory(join(known, `${name}.RC.ndjson`)));
      expect(b.uniform.map((v) => v.level)).toEqual([...ISOLATION_LEVELS]);
      expect(Object.fromEntries(b.uniform.map((v) => [v.level, v.verdict]))).toEqual(Object.fromEntries(byLevel));
      const strongest = [...ISOLATION_LEVELS]
        .reverse()
        .find(
          (l) =>
            byLevel.get(l) === 'consistent' &&
            ISOLATION_LEVELS.slice(0, ISOLATION_LEVELS.indexOf(l)).every((w) => byLevel.get(w) === 'consistent'),
        );
      expect(b.strongest).toBe(strongest);
      // a verdict is either checked (with its result) or implied by a checked one
      for (const v of b.uniform) {
        if (v.impliedBy) expect(b.uniform.find((w) => w.level === v.impliedBy)?.result?.verdict).toBe(v.verdict);
        else expect(v.result?.verdict).toBe(v.verdict);
      }
      expect(b.checks).toBe(b.uniform.filter((v) => v.result).length);
    },
  );

  it('shares one model across the levels it checks, with the verdicts of separate checks (200 histories)', async () => {
    let compared = 0;
    for (let i = 0; i < 200; i++) {
      const h = randomHistory(seedrandom(`levels-reuse-${i}`));
      const stages: string[] = [];
      const b = await levelBoundary(h, { shrink: false, progress: (s) => stages.push(s) });
      const built = stages.filter((s) => s.startsWith('building the model')).length;
      const taken = stages.filter((s) => s.startsWith('taking the model')).length;
      expect([built, taken], `levels-reuse-${i}: one model for ${b.checks} checks`).toEqual([1, b.checks - 1]);
      for (const v of b.uniform) {
        if (!v.result) continue;
        const alone = await check(h, { iso: v.level, shrink: false });
        expect(v.result.verdict, `levels-reuse-${i} at ${v.level}`).toBe(alone.verdict);
        expect(v.result.anomalies.map((a) => a.type)).toEqual(alone.anomalies.map((a) => a.type));
        compared++;
      }
    }
    expect(compared).toBeGreaterThan(400);
  });

  it('finds a strongest configuration by label: consistent, and each label one level higher is not', async () => {
    const file = join(import.meta.dirname, '..', 'histories', 'corpus', 'smallbank-si-as-ser-s4-t20-seed1.ndjson.gz');
    const history = await readHistory(file);
    const b = await levelBoundary(history);
    expect(b.strongest).toBe('SI');
    expect(b.byLabel).toBeDefined();
    const { levels, spec, blockedBy } = b.byLabel!;
    expect(levels.get('WriteCheck')).toBe('SI');
    expect([...levels.values()].some((l) => l === 'SER')).toBe(true);
    expect((await check(history, { iso: parseIsoOverride(spec) })).verdict).toBe('consistent');
    for (const [label, level] of levels) {
      if (level === 'SER') continue;
      expect(blockedBy.get(label)?.level).toBe(ISOLATION_LEVELS[ISOLATION_LEVELS.indexOf(level) + 1]);
      const raised = new Map(levels).set(label, blockedBy.get(label)!.level);
      expect(
        (await check(history, { iso: parseIsoOverride([...raised].map(([k, v]) => `${k}=${v}`).join(',')) })).verdict,
        label,
      ).not.toBe('consistent');
    }
  });

  it('check --levels prints the boundary and its JSON, exit 0; refuses --iso with it', async () => {
    const logs: string[] = [];
    vi.spyOn(console, 'log').mockImplementation((...a: unknown[]) => void logs.push(a.join(' ')));
    const file = join(known, 'causality-violation.CC.ndjson');
    expect(await runCheckCommand([file], { levels: true })).toBe(0);
    const text = logs.join('\n');
    expect(text).toMatch(/RA +✓ consistent/);
    expect(text).toMatch(/CC +✗ inconsistent: CAUSALITY VIOLATION/);
    expect(text).toMatch(/SER +✗ inconsistent \(implied by CC\)/);
    expect(text).toMatch(/strongest: RA/);
    logs.length = 0;
    expect(await runCheckCommand([file], { levels: true, json: true })).toBe(0);
    const json = JSON.parse(logs.join('\n'));
    expect(json.strongest).toBe('RA');
    expect(json.levels.map((l: { verdict: string }) => l.verdict)).toEqual([
      'consistent',
      'consistent',
      'inconsistent',
      'inconsistent',
      'inconsistent',
      'inconsistent',
    ]);
    expect(json.levels[1].result.commitOrder.length).toBeGreaterThan(0);
    expect(json.levels[2].result.anomalies[0].type).toBe('causality-violation');
    expect(json.levels[3]).toEqual({ level: 'PC', verdict: 'inconsistent', impliedBy: 'CC' });
    logs.length = 0;
    expect(await runCheckCommand([file], { levels: true, iso: 'SER' })).toBe(2);
    expect(logs.join('\n')).toMatch(/--levels checks every level itself/);
  });
});
