// Well-formedness (docs/semantics.md §1.5): each anomaly has a small history that triggers it (inconsistent at
// every level, named) and a near miss that does not.
import { beforeAll, describe, expect, it } from 'vitest';
import { loadPredicateParser } from '../src/sql/predicate.js';
import { checkHistory } from '../src/checker/check.js';
import { del, ins, loadLines, registerLines, sel, txn, upd } from './helpers/lines.js';

beforeAll(async () => {
  await loadPredicateParser();
});

type Case = { name: string; type: string; bad: object[]; nearMiss: object[] };
const init = [{ id: 1, v: 0 }];

const cases: Case[] = [
  {
    name: 'garbage read: a wid nobody wrote',
    type: 'garbage-read',
    bad: registerLines(init, [txn('a', 1, 1, [sel(1, [{ wid: 'zz', v: 0 }])])]),
    nearMiss: registerLines(init, [txn('a', 1, 1, [sel(1, [{ wid: 'init', v: 0 }])])]),
  },
  {
    name: 'garbage read: init has no such row',
    type: 'garbage-read',
    bad: registerLines(init, [txn('a', 1, 1, [sel(2, [{ wid: 'init', v: 0 }])])]),
    nearMiss: registerLines(init, [txn('a', 1, 1, [sel(2, [])])]),
  },
  {
    name: 'aborted read (G1a)',
    type: 'aborted-read',
    bad: registerLines(init, [
      txn('w', 1, 1, [upd('w1', 1, 'init', 5)], { status: 'aborted' }),
      txn('r', 2, 1, [sel(1, [{ wid: 'w1', v: 5 }])]),
    ]),
    nearMiss: registerLines(init, [
      txn('w', 1, 1, [upd('w1', 1, 'init', 5)]),
      txn('r', 2, 1, [sel(1, [{ wid: 'w1', v: 5 }])]),
    ]),
  },
  {
    name: 'intermediate read (G1b)',
    type: 'intermediate-read',
    bad: registerLines(init, [
      txn('w', 1, 1, [upd('w1', 1, 'init', 5), upd('w2', 1, 'w1', 6)]),
      txn('r', 2, 1, [sel(1, [{ wid: 'w1', v: 5 }])]),
    ]),
    nearMiss: registerLines(init, [
      txn('w', 1, 1, [upd('w1', 1, 'init', 5), upd('w2', 1, 'w1', 6)]),
      txn('r', 2, 1, [sel(1, [{ wid: 'w2', v: 6 }])]),
    ]),
  },
  {
    name: 'internal inconsistency: does not see its own write',
    type: 'internal-inconsistency',
    bad: registerLines(init, [txn('a', 1, 1, [upd('a1', 1, 'init', 5), sel(1, [{ wid: 'init', v: 0 }])])]),
    nearMiss: registerLines(init, [txn('a', 1, 1, [upd('a1', 1, 'init', 5), sel(1, [{ wid: 'a1', v: 5 }])])]),
  },
  {
    name: 'internal inconsistency: misses a row it inserted',
    type: 'internal-inconsistency',
    bad: registerLines(init, [
      txn('a', 1, 1, [ins('a1', 2, 5), sel(0, [{ wid: 'init', v: 0, id: 1 }], 'v >= $1', [0])]),
    ]),
    nearMiss: registerLines(init, [
      txn('a', 1, 1, [ins('a1', 2, 5), sel(0, [{ wid: 'init', v: 0, id: 1 }], 'v <= $1', [0])]),
    ]),
  },
  {
    name: 'internal inconsistency: reads a row it deleted',
    type: 'internal-inconsistency',
    bad: registerLines(init, [txn('a', 1, 1, [del('a1', 1, 'init'), sel(1, [{ wid: 'a1', v: 0 }])])]),
    nearMiss: registerLines(init, [txn('a', 1, 1, [del('a1', 1, 'init'), sel(1, [])])]),
  },
  {
    name: 'predicate mismatch',
    type: 'predicate-mismatch',
    bad: registerLines(init, [txn('a', 1, 1, [sel(1, [{ wid: 'init', v: 0 }], 'v > $1', [0])])]),
    nearMiss: registerLines(init, [txn('a', 1, 1, [sel(1, [{ wid: 'init', v: 0 }], 'v >= $1', [0])])]),
  },
  {
    name: 'value mismatch',
    type: 'value-mismatch',
    bad: registerLines(init, [
      txn('w', 1, 1, [upd('w1', 1, 'init', 5)]),
      txn('r', 2, 1, [sel(1, [{ wid: 'w1', v: 6 }])]),
    ]),
    nearMiss: registerLines(init, [
      txn('w', 1, 1, [upd('w1', 1, 'init', 5)]),
      txn('r', 2, 1, [sel(1, [{ wid: 'w1', v: 5 }])]),
    ]),
  },
  {
    name: 'circular information flow (G1c)',
    type: 'circular-information-flow',
    bad: registerLines(
      [
        { id: 1, v: 0 },
        { id: 2, v: 0 },
      ],
      [
        txn('a', 1, 1, [sel(2, [{ wid: 'b1', v: 7 }]), upd('a1', 1, 'init', 5)]),
        txn('b', 2, 1, [sel(1, [{ wid: 'a1', v: 5 }]), upd('b1', 2, 'init', 7)]),
      ],
    ),
    nearMiss: registerLines(
      [
        { id: 1, v: 0 },
        { id: 2, v: 0 },
      ],
      [
        txn('a', 1, 1, [sel(2, [{ wid: 'init', v: 0 }]), upd('a1', 1, 'init', 5)]),
        txn('b', 2, 1, [sel(1, [{ wid: 'a1', v: 5 }]), upd('b1', 2, 'init', 7)]),
      ],
    ),
  },
];

describe('well-formedness', () => {
  for (const c of cases) {
    it(`${c.name}: triggered, named, at every level`, async () => {
      const h = await loadLines(c.bad);
      for (const level of ['RC', 'RA', 'CC', 'PC', 'SI', 'SER'] as const) {
        const r = checkHistory(h, { iso: { all: level, byLabel: new Map() } });
        expect(r.verdict).toBe('inconsistent');
        expect(r.anomalies.map((a) => a.type)).toContain(c.type);
      }
    });
    it(`${c.name}: near miss is consistent`, async () => {
      const h = await loadLines(c.nearMiss);
      const r = checkHistory(h);
      expect(r.anomalies).toEqual([]);
      expect(r.verdict).toBe('consistent');
    });
  }

  it('judges every read of a version read many times: one object per version read, compared once', async () => {
    // the reader keeps one object per version read, and the model compares it with the written row once: the
    // reads that return other values (of the same version) are each a value mismatch, those before and after not
    const reads = [5, 6, 5, 7, 5];
    const initReads = [0, 1, 0];
    const h = await loadLines(
      registerLines(
        [...init, { id: 2, v: 0 }],
        [
          txn('w', 1, 1, [upd('w1', 1, 'init', 5)]),
          ...reads.map((v, i) => txn(`r${i}`, i + 2, 1, [sel(1, [{ wid: 'w1', v }])])),
          ...initReads.map((v, i) => txn(`i${i}`, i + 2, 2, [sel(2, [{ wid: 'init', v, id: 2 }])])),
        ],
      ),
    );
    const r = checkHistory(h);
    const mismatched = r.anomalies.filter((a) => a.type === 'value-mismatch').map((a) => a.txns[0]);
    expect(mismatched.sort()).toEqual(['i1', 'r1', 'r3']);
  });

  it('does not check reads of aborted transactions by default, and does with checkAbortedReads', async () => {
    const h = await loadLines(
      registerLines(init, [txn('a', 1, 1, [sel(1, [{ wid: 'zz', v: 0 }])], { status: 'aborted' })]),
    );
    expect(checkHistory(h).verdict).toBe('consistent');
    const r = checkHistory(h, { checkAbortedReads: true });
    expect(r.verdict).toBe('inconsistent');
    expect(r.anomalies[0].type).toBe('garbage-read');
  });

  it('counts an unknown-outcome transaction as committed when it was read, and drops it otherwise', async () => {
    const read = await loadLines(
      registerLines(init, [
        txn('w', 1, 1, [upd('w1', 1, 'init', 5)], { status: 'unknown' }),
        txn('r', 2, 1, [sel(1, [{ wid: 'w1', v: 5 }])]),
      ]),
    );
    const r1 = checkHistory(read);
    expect(r1.verdict).toBe('consistent');
    expect(r1.commitOrder).toEqual(['w', 'r']);
    const unread = await loadLines(
      registerLines(init, [
        txn('w', 1, 1, [upd('w1', 1, 'init', 5)], { status: 'unknown' }),
        txn('r', 2, 1, [sel(1, [{ wid: 'init', v: 0 }])], { iso: 'SER' }),
      ]),
    );
    const r2 = checkHistory(unread);
    expect(r2.verdict).toBe('consistent');
    expect(r2.commitOrder).toEqual(['r']);
  });

  it('treats an unknown wid in a truncated file as unresolved (partial), not garbage', async () => {
    const h = await loadLines(registerLines(init, [txn('r', 2, 1, [sel(1, [{ wid: 'w9', v: 5 }])])], false));
    const r = checkHistory(h);
    expect(r.verdict).toBe('consistent');
    expect(r.notes.join('\n')).toMatch(/not in this truncated file/);
  });
});
