/**
 * Cross-checks the real checker (checkHistory) against the brute-force oracle (naiveCheck) on generated
 * histories (docs/semantics.md §4.8: on every small history the checker must give the verdict of the plain
 * definitions):
 *   (a) random client histories: same verdict; every commit order the checker returns is validated;
 *   (b) histories of an operational multi-level database (consistent by construction): judged consistent;
 *   (c) the random histories again with every transaction overridden to each single level.
 * A disagreement fails the test with the history as NDJSON in the message, and is written to
 * test/fixtures/disagreements/<seed>.ndjson to be replayed with `isocheck check`.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import seedrandom from 'seedrandom';
import { beforeAll, describe, expect, it } from 'vitest';
import { checkHistory, type CheckOptions } from '../src/checker/check.js';
import { parseIsoOverride } from '../src/checker/levels.js';
import { checkCommitOrder, naiveCheck, type NaiveOptions } from '../src/oracle/naive.js';
import { ISOLATION_LEVELS, type Line } from '../src/history/format.js';
import type { History } from '../src/history/history.js';
import { loadPredicateParser } from '../src/sql/predicate.js';
import { readHistory } from '../src/history/reader.js';
import { operationalHistory } from './gen/operational.js';
import { historyFromLines, historyToNdjson, randomHistory } from './gen/random-history.js';

const RANDOM_COUNT = 3000;
const LEVEL_COUNT = 3000; // (c): random histories re-checked at each of the six levels
const OPERATIONAL_COUNT = 1000;
const OPERATIONAL_LARGE_COUNT = 60;
/** Witness combinations the oracle may try per history before answering 'unknown'. */
const NAIVE_WORK = 200_000;
const DISAGREEMENT_DIR = join(import.meta.dirname, 'fixtures', 'disagreements');

interface Disagreement {
  seed: string;
  what: string;
  history: History;
}

function record(list: Disagreement[], seed: string, what: string, history: History): void {
  list.push({ seed, what, history });
  mkdirSync(DISAGREEMENT_DIR, { recursive: true });
  writeFileSync(join(DISAGREEMENT_DIR, `${seed}.ndjson`), historyToNdjson(history));
}

function size(h: History): number {
  return h.txns.reduce((n, t) => n + 1 + t.events.length, 0);
}

/** The failure message: every disagreeing seed, and the smallest histories in full. */
function report(list: Disagreement[]): string {
  if (list.length === 0) return '';
  const sorted = [...list].sort((a, b) => size(a.history) - size(b.history));
  const shown = sorted.slice(0, 5).map((d) => `--- ${d.seed}: ${d.what}\n${historyToNdjson(d.history)}`);
  return (
    `CHECKER AND ORACLE DISAGREE on ${list.length} history(ies) (written to test/fixtures/disagreements/): ` +
    `\n${list.map((d) => `  ${d.seed}: ${d.what.split('\n')[0]}`).join('\n')}\nSmallest:\n${shown.join('\n')}`
  );
}

function safeCheck(h: History, options: CheckOptions) {
  try {
    return checkHistory(h, { shrink: false, ...options });
  } catch (e) {
    return { verdict: 'threw' as const, error: (e as Error).stack ?? String(e), commitOrder: undefined };
  }
}

interface Tally {
  total: number;
  consistent: number;
  inconsistent: number;
  naiveUnknown: number;
  checkerUnknown: number;
  ordersValidated: number;
}

const newTally = (): Tally => ({
  total: 0,
  consistent: 0,
  inconsistent: 0,
  naiveUnknown: 0,
  checkerUnknown: 0,
  ordersValidated: 0,
});

/** Compares both checkers on one history; records any disagreement. Returns the checker's verdict. */
function compare(
  seed: string,
  h: History,
  checkOpts: CheckOptions,
  naiveOpts: NaiveOptions,
  tally: Tally,
  out: Disagreement[],
): string {
  tally.total++;
  const real = safeCheck(h, checkOpts);
  if (real.verdict === 'threw') {
    record(out, seed, `checkHistory threw: ${'error' in real ? real.error : ''}`, h);
    return real.verdict;
  }
  const naive = naiveCheck(h, { maxWork: NAIVE_WORK, ...naiveOpts });
  if (real.verdict === 'unknown') tally.checkerUnknown++;
  if (naive.verdict === 'unknown') tally.naiveUnknown++;
  if (real.verdict !== 'unknown' && naive.verdict !== 'unknown' && real.verdict !== naive.verdict) {
    const why =
      naive.verdict === 'inconsistent' ? `oracle: ${naive.reason}` : `oracle order: ${naive.commitOrder?.join(' ')}`;
    record(out, seed, `checker says ${real.verdict}, oracle says ${naive.verdict} (${why})`, h);
    return real.verdict;
  }
  if (real.verdict === 'consistent') {
    const valid = real.commitOrder
      ? checkCommitOrder(h, real.commitOrder, { maxWork: NAIVE_WORK, ...naiveOpts })
      : 'invalid';
    if (valid === 'invalid') {
      record(
        out,
        seed,
        `checker says consistent, but its commit order [${real.commitOrder?.join(' ')}] does not satisfy the ` +
          `axioms for any witness`,
        h,
      );
      return real.verdict;
    }
    if (valid === 'valid') tally.ordersValidated++;
  }
  const v = naive.verdict !== 'unknown' ? naive.verdict : real.verdict;
  if (v === 'consistent') tally.consistent++;
  else if (v === 'inconsistent') tally.inconsistent++;
  return real.verdict;
}

beforeAll(async () => {
  await loadPredicateParser();
});

describe('checker agrees with the brute-force oracle', () => {
  it(`on ${RANDOM_COUNT} random client histories`, () => {
    const out: Disagreement[] = [];
    const tally = newTally();
    for (let i = 0; i < RANDOM_COUNT; i++) {
      const seed = `random-${i}`;
      // Every third history is larger (3–7 transactions of up to 5 statements, 2–4 keys).
      const opts =
        i % 3 === 2 ? { txns: [3, 7] as [number, number], events: [1, 5] as [number, number], keys: 2 + (i % 3) } : {};
      compare(seed, randomHistory(seedrandom(seed), opts), {}, {}, tally, out);
    }
    console.log(`random histories: ${JSON.stringify(tally)}`);
    expect(out.length, report(out)).toBe(0);
    // The generator must exercise both verdicts, and the oracle must rarely give up.
    expect(tally.consistent).toBeGreaterThan(RANDOM_COUNT / 10);
    expect(tally.inconsistent).toBeGreaterThan(RANDOM_COUNT / 10);
    expect(tally.naiveUnknown).toBeLessThan(RANDOM_COUNT / 50);
  });

  it(`on random histories with every transaction at one level (${LEVEL_COUNT} x 6)`, () => {
    const out: Disagreement[] = [];
    const tallies: Record<string, Tally> = {};
    for (const level of ISOLATION_LEVELS) {
      const tally = (tallies[level] = newTally());
      const iso = parseIsoOverride(level);
      for (let i = 0; i < LEVEL_COUNT; i++) {
        const seed = `random-${i}`;
        compare(`${seed}-${level}`, randomHistory(seedrandom(seed)), { iso }, { iso }, tally, out);
      }
    }
    for (const [level, t] of Object.entries(tallies)) console.log(`random histories at ${level}: ${JSON.stringify(t)}`);
    expect(out.length, report(out)).toBe(0);
  });

  it(`judges ${OPERATIONAL_COUNT} operational histories (2–8 transactions) consistent`, () => {
    const out: Disagreement[] = [];
    const tally = newTally();
    for (let i = 0; i < OPERATIONAL_COUNT; i++) {
      const seed = `op-${i}`;
      const h = operationalHistory(seedrandom(seed));
      const before = out.length;
      const verdict = compare(seed, h, {}, {}, tally, out);
      if (out.length === before && verdict !== 'consistent')
        record(out, seed, `operational history (consistent by construction) judged ${verdict} by the checker`, h);
    }
    console.log(`operational histories: ${JSON.stringify(tally)}`);
    expect(out.length, report(out)).toBe(0);
    expect(tally.inconsistent, 'the oracle judged an operational history inconsistent').toBe(0);
  });

  it(`judges ${OPERATIONAL_LARGE_COUNT} larger operational histories (15–30 transactions) consistent`, () => {
    const out: Disagreement[] = [];
    let unknown = 0;
    let validated = 0;
    for (let i = 0; i < OPERATIONAL_LARGE_COUNT; i++) {
      const seed = `op-large-${i}`;
      const h = operationalHistory(seedrandom(seed), { txns: [15, 30], sessions: [2, 6], keys: 4 });
      const real = safeCheck(h, { timeoutMs: 5000 });
      if (real.verdict === 'unknown') unknown++;
      else if (real.verdict !== 'consistent')
        record(out, seed, `operational history (consistent by construction) judged ${real.verdict} by the checker`, h);
      else {
        const valid = checkCommitOrder(h, real.commitOrder!, { maxWork: NAIVE_WORK });
        if (valid === 'invalid')
          record(out, seed, `checker's commit order [${real.commitOrder!.join(' ')}] does not validate`, h);
        if (valid === 'valid') validated++;
      }
    }
    console.log(
      `large operational histories: ${OPERATIONAL_LARGE_COUNT}, checker unknown (timeout): ${unknown}, commit ` +
        `orders validated: ${validated}`,
    );
    expect(out.length, report(out)).toBe(0);
  });

  it("the oracle's fast witness search agrees with plain enumeration of every witness", () => {
    let compared = 0;
    for (let i = 0; i < 400; i++) {
      const h = randomHistory(seedrandom(`random-${i}`));
      for (const iso of [undefined, ...ISOLATION_LEVELS.map((l) => parseIsoOverride(l))]) {
        const fast = naiveCheck(h, { iso, maxWork: NAIVE_WORK });
        const slow = naiveCheck(h, { iso, maxWork: 20_000, exhaustive: true });
        if (fast.verdict === 'unknown' || slow.verdict === 'unknown') continue;
        compared++;
        expect(
          fast.verdict,
          `oracle modes disagree on random-${i} at ${iso?.all ?? 'recorded levels'}:\n${historyToNdjson(h)}`,
        ).toBe(slow.verdict);
      }
    }
    console.log(`oracle self-check: ${compared} comparisons`);
    expect(compared).toBeGreaterThan(2000);
  });

  it('generated histories are valid files', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'isocheck-oracle-'));
    try {
      for (let i = 0; i < 150; i++) {
        const h = i % 2 === 0 ? randomHistory(seedrandom(`random-${i}`)) : operationalHistory(seedrandom(`op-${i}`));
        const file = join(dir, `${i}.ndjson`);
        writeFileSync(file, historyToNdjson(h));
        const back = await readHistory(file);
        expect(back.txns.length).toBe(h.txns.length);
        expect(naiveCheck(back, { maxWork: NAIVE_WORK }).verdict).toBe(naiveCheck(h, { maxWork: NAIVE_WORK }).verdict);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

// ---------------------------------------------------------------------------------------------------------------
// The oracle itself reproduces the known answers of docs/semantics.md §6 (registers as point SQL).

type RegOp = ['r' | 'w', 'x' | 'y', number];
interface RegTxn {
  id: string;
  ops: RegOp[];
  session?: number;
  iso?: (typeof ISOLATION_LEVELS)[number];
}

/** w(x,v): a blind write (insert) of row x; r(x,v): `select ... where id = x` returned v (0 from init). */
function registerHistory(txns: RegTxn[], level: (typeof ISOLATION_LEVELS)[number]): History {
  const keyId = { x: 1, y: 2 } as const;
  const widOf = new Map<string, string>(); // `${key}=${value}` -> wid
  for (const t of txns) {
    for (const [i, op] of t.ops.entries()) if (op[0] === 'w') widOf.set(`${op[1]}=${op[2]}`, `${t.id}.${i + 1}`);
  }
  const seqs = new Map<number, number>();
  const lines: object[] = [
    { kind: 'history', format: 'isocheck-history', version: 1, meta: {} },
    { kind: 'table', name: 't', key: ['id'], columns: { id: 'int4', v: 'int4' } },
    {
      kind: 'init',
      table: 't',
      rows: [
        { id: 1, v: 0 },
        { id: 2, v: 0 },
      ],
    },
  ];
  txns.forEach((t, n) => {
    const session = t.session ?? 100 + n;
    const seq = (seqs.get(session) ?? 0) + 1;
    seqs.set(session, seq);
    const events = t.ops.map((op, i) =>
      op[0] === 'w'
        ? { op: 'insert', table: 't', wid: `${t.id}.${i + 1}`, rows: [{ row: { id: keyId[op[1]], v: op[2] } }] }
        : {
            op: 'select',
            table: 't',
            where: 'id = $1',
            params: [keyId[op[1]]],
            rows: [
              { wid: op[2] === 0 ? 'init' : widOf.get(`${op[1]}=${op[2]}`)!, row: { id: keyId[op[1]], v: op[2] } },
            ],
          },
    );
    lines.push({ kind: 'txn', id: t.id, session, seq, iso: t.iso ?? level, status: 'committed', events });
  });
  lines.push({ kind: 'end', transactions: txns.length });
  return historyFromLines(lines as Line[]);
}

const KNOWN: { name: string; txns: RegTxn[]; ok: string }[] = [
  {
    name: 'write skew',
    ok: '11111.',
    txns: [
      {
        id: 'T1',
        ops: [
          ['r', 'x', 0],
          ['r', 'y', 0],
          ['w', 'x', 1],
        ],
      },
      {
        id: 'T2',
        ops: [
          ['r', 'x', 0],
          ['r', 'y', 0],
          ['w', 'y', 1],
        ],
      },
    ],
  },
  {
    name: 'lost update',
    ok: '1111..',
    txns: [
      {
        id: 'T1',
        ops: [
          ['r', 'x', 0],
          ['w', 'x', 1],
        ],
      },
      {
        id: 'T2',
        ops: [
          ['r', 'x', 0],
          ['w', 'x', 2],
        ],
      },
    ],
  },
  {
    name: 'long fork',
    ok: '111...',
    txns: [
      { id: 'T1', ops: [['w', 'x', 1]] },
      { id: 'T2', ops: [['w', 'y', 1]] },
      {
        id: 'T3',
        ops: [
          ['r', 'x', 1],
          ['r', 'y', 0],
        ],
      },
      {
        id: 'T4',
        ops: [
          ['r', 'y', 1],
          ['r', 'x', 0],
        ],
      },
    ],
  },
  {
    name: 'causality violation',
    ok: '11....',
    txns: [
      { id: 'T1', ops: [['w', 'x', 1]] },
      {
        id: 'T2',
        ops: [
          ['r', 'x', 1],
          ['w', 'x', 2],
        ],
      },
      {
        id: 'T4',
        ops: [
          ['r', 'x', 2],
          ['w', 'y', 1],
        ],
      },
      {
        id: 'T3',
        ops: [
          ['r', 'y', 1],
          ['r', 'x', 1],
        ],
      },
    ],
  },
  {
    name: 'fractured read',
    ok: '1.....',
    txns: [
      {
        id: 'T1',
        ops: [
          ['w', 'x', 1],
          ['w', 'y', 1],
        ],
      },
      {
        id: 'T2',
        ops: [
          ['r', 'y', 0],
          ['r', 'x', 1],
        ],
      },
    ],
  },
  {
    name: 'fractured read, reversed',
    ok: '......',
    txns: [
      {
        id: 'T1',
        ops: [
          ['w', 'x', 1],
          ['w', 'y', 1],
        ],
      },
      {
        id: 'T2',
        ops: [
          ['r', 'x', 1],
          ['r', 'y', 0],
        ],
      },
    ],
  },
  {
    name: 'read your writes',
    ok: '......',
    txns: [
      { id: 'T1', session: 1, ops: [['w', 'x', 1]] },
      { id: 'T2', session: 1, ops: [['r', 'x', 0]] },
    ],
  },
  {
    name: 'serial chain',
    ok: '111111',
    txns: [
      { id: 'T1', ops: [['w', 'x', 1]] },
      {
        id: 'T2',
        ops: [
          ['r', 'x', 1],
          ['w', 'x', 2],
        ],
      },
      { id: 'T3', ops: [['r', 'x', 2]] },
    ],
  },
];

describe('the oracle reproduces docs/semantics.md §6', () => {
  for (const k of KNOWN) {
    it(k.name, () => {
      const got = ISOLATION_LEVELS.map((level) =>
        naiveCheck(registerHistory(k.txns, level)).verdict === 'consistent' ? '1' : '.',
      ).join('');
      expect(got, `${k.name}: RC RA CC PC SI SER`).toBe(k.ok);
      const real = ISOLATION_LEVELS.map((level) =>
        checkHistory(registerHistory(k.txns, level)).verdict === 'consistent' ? '1' : '.',
      ).join('');
      expect(real, `checkHistory on ${k.name}: RC RA CC PC SI SER`).toBe(k.ok);
    });
  }
  it('mixed levels', () => {
    const ws = KNOWN[0].txns;
    expect(
      naiveCheck(
        registerHistory(
          [
            { ...ws[0], iso: 'SER' },
            { ...ws[1], iso: 'SI' },
          ],
          'SER',
        ),
      ).verdict,
    ).toBe('consistent');
    const lf = KNOWN[2].txns;
    expect(
      naiveCheck(registerHistory([lf[0], lf[1], { ...lf[2], iso: 'PC' }, { ...lf[3], iso: 'RA' }], 'SER')).verdict,
    ).toBe('consistent');
    expect(
      naiveCheck(registerHistory([lf[0], lf[1], { ...lf[2], iso: 'PC' }, { ...lf[3], iso: 'PC' }], 'SER')).verdict,
    ).toBe('inconsistent');
    const lu = KNOWN[1].txns;
    expect(
      naiveCheck(
        registerHistory(
          [
            { ...lu[0], iso: 'SI' },
            { ...lu[1], iso: 'RC' },
          ],
          'SER',
        ),
      ).verdict,
    ).toBe('consistent');
    expect(
      naiveCheck(
        registerHistory(
          [
            { ...lu[0], iso: 'SI' },
            { ...lu[1], iso: 'SI' },
          ],
          'SER',
        ),
      ).verdict,
    ).toBe('inconsistent');
  });
});

// ---------------------------------------------------------------------------------------------------------------
// A departure from the earlier rule for unknown transactions, found by the operational generator (with
// unknownCommitted > 0); documented in docs/semantics.md §1.4 and §7.

describe('docs/semantics.md §1.4: unknown transactions nobody read', () => {
  // T1's commit happened but its outcome was lost (status unknown). T2 then reads `v = 2` and rightly skips row 1,
  // which T1 changed to v = 3. Nobody returned a row written by T1. The earlier rule dropped T1 ("exact: dropping
  // it only removes constraints"); but dropping it also removes the only writer that can hide row 1 from T2 (the
  // witness of docs/semantics.md §3.1), so the history was judged inconsistent although PostgreSQL can produce it.
  // Both the checker and the oracle now try which unknown transactions committed, so it is consistent.
  const lines = [
    '{"kind":"history","format":"isocheck-history","version":1,"meta":{}}',
    '{"kind":"table","name":"t","key":["id"],"columns":{"id":"int4","v":"int4"}}',
    '{"kind":"init","table":"t","rows":[{"id":1,"v":2}]}',
    '{"kind":"txn","id":"T1","session":1,"seq":1,"iso":"SER","status":"unknown",' +
      '"events":[{"op":"update","table":"t","where":"id = $1","params":[1],"wid":"T1.1",' +
      '"rows":[{"read":"init","row":{"id":1,"v":3}}]}]}',
    '{"kind":"txn","id":"T2","session":2,"seq":1,"iso":"SER","status":"committed",' +
      '"events":[{"op":"select","table":"t","where":"v = $1","params":[2],"rows":[]}]}',
    '{"kind":"end","transactions":2}',
  ];
  const h = historyFromLines(lines.map((l) => JSON.parse(l) as Line));
  it('an unread unknown transaction that hides a row makes the history consistent (it may have committed)', () => {
    expect(checkHistory(h).verdict).toBe('consistent');
    expect(naiveCheck(h).verdict).toBe('consistent');
  });
});

// ---------------------------------------------------------------------------------------------------------------
// Disagreements found by the oracle (smallest histories), kept as regressions. Each runs through compare(), so a
// failure prints the history and writes it to test/fixtures/disagreements/.

const REGRESSIONS: { name: string; ndjson: string[] }[] = [
  {
    // CHECKER BUG (verdict): the checker says consistent, the oracle inconsistent. t4 must commit before t3 (t4 at
    // SER read id 3 as absent, so t3's insert of id 3 is after it). t3 at SER then must read key id 1 from t4 (the
    // last writer before it; init's † is not allowed as t4 is visible) for its `v = 9` select. That wr edge puts
    // t4 in t5's causal past (t4 -wr-> t3 -so-> t5), and t5 at CC read id 1 as absent although t4's row matches.
    // The checker only gave witnesses to conflicts (1ˣʳ ≠ ∅, docs/semantics.md §4.3), and (t3, id 1) is not one:
    // the paper's argument that non-conflicts can be ignored covers SER, SI, PC, RA, RC, not CC (the witness of
    // docs/semantics.md §3.1 covers every unreturned key). Now documented as a departure: docs/semantics.md §3.3.
    name: 'CC: the witness of a non-conflict read creates causality',
    ndjson: [
      '{"kind":"history","format":"isocheck-history","version":1,"meta":{}}',
      '{"kind":"table","name":"t","key":["id"],"columns":{"id":"int4","v":"int4"}}',
      '{"kind":"txn","id":"t3","session":1,"seq":1,"iso":"SER","status":"committed",' +
        '"events":[{"op":"select","table":"t","where":"v = $1","params":[9],"rows":[]},' +
        '{"op":"insert","table":"t","wid":"t3.2","rows":[{"row":{"id":3,"v":0}}]}]}',
      '{"kind":"txn","id":"t5","session":1,"seq":2,"iso":"CC","status":"committed",' +
        '"events":[{"op":"select","table":"t","where":"id = $1","params":[1],"rows":[]}]}',
      '{"kind":"txn","id":"t4","session":2,"seq":1,"iso":"SER","status":"committed",' +
        '"events":[{"op":"select","table":"t","where":"id = $1","params":[3],"rows":[]},' +
        '{"op":"insert","table":"t","wid":"t4.2","rows":[{"row":{"id":1,"v":1}}]}]}',
      '{"kind":"end","transactions":3}',
    ],
  },
  {
    // CHECKER BUG (commit order): consistent (t3 t5 t4 works), but the checker's order t4 t3 t5 is not: with t4
    // before t3 (SER), t3 must read id 1 from t4, which then precedes t5 (CC) causally, and t5 read id 1 as absent.
    // Same cause as above, found by the random sweep (seed sweep-11620, shrunk).
    name: 'CC: commit order ignores the witness of a non-conflict read',
    ndjson: [
      '{"kind":"history","format":"isocheck-history","version":1,"meta":{}}',
      '{"kind":"table","name":"t","key":["id"],"columns":{"id":"int4","v":"int4"}}',
      '{"kind":"init","table":"t","rows":[{"id":3,"v":2}]}',
      '{"kind":"txn","id":"t3","session":3,"seq":1,"iso":"SER","status":"committed",' +
        '"events":[{"op":"select","table":"t","where":"id >= $1 AND id <= $2","params":[3,3],' +
        '"rows":[{"wid":"init","row":{"id":3,"v":2}}]}]}',
      '{"kind":"txn","id":"t5","session":3,"seq":2,"iso":"CC","status":"committed",' +
        '"events":[{"op":"select","table":"t","where":"id = $1","params":[1],"rows":[]}]}',
      '{"kind":"txn","id":"t4","session":2,"seq":1,"iso":"CC","status":"committed",' +
        '"events":[{"op":"insert","table":"t","wid":"t4.1","rows":[{"row":{"id":1,"v":1}}]}]}',
      '{"kind":"end","transactions":3}',
    ],
  },
];

describe('regressions found by the oracle', () => {
  for (const r of REGRESSIONS) {
    it(r.name, () => {
      const h = historyFromLines(r.ndjson.map((l) => JSON.parse(l) as Line));
      const out: Disagreement[] = [];
      compare(`regression-${r.name.replace(/[^a-z0-9]+/gi, '-')}`, h, {}, {}, newTally(), out);
      expect(out.length, report(out)).toBe(0);
    });
  }
});
