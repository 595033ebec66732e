/**
 * The fast forms of PC/SI visibility agree with the reference `Relations.visible` (docs/semantics.md §2.3):
 *   - `PrefixVisibility` (one bitset per reader, used by saturation) under random partial commit orders;
 *   - `prefixBound`/`visibleUnder` (a position bound, used by the witness completion) under random total orders;
 *   - `WritePartners` (SI's Conflict partners, found through the written keys) against every pair of transactions.
 * The histories are random (test/gen), with every transaction at PC or SI and with random witness edges
 * added, so that wr-predecessors, previous transactions of the session and SI co-writers all matter.
 */
import seedrandom from 'seedrandom';
import { beforeAll, describe, expect, it } from 'vitest';
import { parseIsoOverride, PC, SI } from '../src/checker/levels.js';
import { buildModel, INIT, type CheckModel } from '../src/checker/model/model.js';
import { Order } from '../src/checker/model/order.js';
import { PrefixVisibility, Relations } from '../src/checker/model/relations.js';
import { WritePartners } from '../src/checker/model/write-partners.js';
import { PositionIndex, prefixBound, visibleUnder } from '../src/checker/search/witness.js';
import { loadPredicateParser } from '../src/sql/predicate.js';
import { randomHistory } from './gen/random-history.js';

beforeAll(async () => {
  await loadPredicateParser();
});

type Rng = () => number;

/** A random order of the committed transactions (INIT first) and its positions. */
function randomSequence(rng: Rng, model: CheckModel): { seq: number[]; pos: Int32Array } {
  const seq = Array.from({ length: model.n - 1 }, (_, i) => i + 1);
  for (let i = seq.length - 1; i > 0; i--) {
    const j = Math.floor(rng() * (i + 1));
    [seq[i], seq[j]] = [seq[j], seq[i]];
  }
  const pos = new Int32Array(model.n);
  for (let i = 0; i < seq.length; i++) pos[seq[i]] = i + 1;
  return { seq, pos };
}

/** Adds random witness edges (writer -> reader) so that wrPred is not only what reads returned. */
function addRandomWitnesses(rng: Rng, model: CheckModel, rel: Relations): void {
  if (rng() < 0.5) return; // half the cases keep only the wr of the returned rows
  for (const read of model.reads) {
    if (rng() < 0.7) continue;
    const writers = model.writersOf
      .flatMap((ws, key) => ws.map((w) => [w, key] as const))
      .filter(([w]) => w !== read.txn);
    if (writers.length === 0) continue;
    const [w, key] = writers[Math.floor(rng() * writers.length)];
    rel.addWitness(read, key, w);
  }
}

function* cases(count: number): Generator<{ rng: Rng; model: CheckModel; label: string }> {
  for (const level of ['PC', 'SI', 'PC,SI'] as const) {
    for (let i = 0; i < count; i++) {
      const seed = `visibility-${level}-${i}`;
      const rng = seedrandom(seed);
      const history = randomHistory(rng, {
        txns: [3, 8],
        sessions: [1, 3],
        corrupt: 0,
        levels: level === 'PC,SI' ? ['PC', 'SI'] : undefined,
        level: level === 'PC,SI' ? undefined : level,
      });
      const model = buildModel(history, level === 'PC,SI' ? {} : { iso: parseIsoOverride(level) });
      if (model.anomalies.length > 0) continue;
      yield { rng, model, label: seed };
    }
  }
}

describe('fast PC/SI visibility', () => {
  it('PrefixVisibility equals Relations.visible under random partial orders', () => {
    let compared = 0;
    let visible = 0;
    for (const { rng, model, label } of cases(300)) {
      const sharesWrite = new WritePartners(model);
      const rel = Relations.base(model);
      if (rel.pco.cyclic) continue;
      addRandomWitnesses(rng, model, rel);
      // A random partial order: pco plus edges of a random total order, kept acyclic.
      const { seq } = randomSequence(rng, model);
      const order = rel.pco.clone();
      for (let i = 0; i < seq.length; i++)
        for (let j = i + 1; j < seq.length; j++)
          if (rng() < 0.2 && !order.has(seq[j], seq[i])) order.add(seq[i], seq[j]);
      if (order.cyclic) continue;
      rel.pco = order;
      const fast = new PrefixVisibility(rel, sharesWrite);
      fast.startPass();
      for (const read of model.reads) {
        const level = model.txns[read.txn].level;
        if (level !== PC && level !== SI) continue;
        const set = fast.of(read.txn);
        for (let t2 = 0; t2 < model.n; t2++) {
          if (t2 === read.txn) continue;
          const expected = rel.visible(t2, read, level, sharesWrite);
          const got = ((set[t2 >>> 5] >>> (t2 & 31)) & 1) === 1 || rel.soBefore(t2, read.txn);
          if (got !== expected)
            expect.fail(`${label}: t2=${t2} read ${read.id} of t${read.txn}: fast ${got}, reference ${expected}`);
          compared++;
          if (expected) visible++;
        }
      }
    }
    // Both answers occur often enough for the comparison to mean something.
    expect(compared).toBeGreaterThan(2000);
    expect(visible).toBeGreaterThan(compared / 10);
    expect(visible).toBeLessThan(compared * 0.9);
  });

  it('prefixBound/visibleUnder equal Relations.visible under random total orders', () => {
    let compared = 0;
    let visible = 0;
    for (const { rng, model, label } of cases(300)) {
      const sharesWrite = new WritePartners(model);
      const rel = Relations.base(model);
      addRandomWitnesses(rng, model, rel);
      const { seq, pos } = randomSequence(rng, model);
      const order = new Order(model.n);
      const all = [INIT, ...seq];
      for (let i = 0; i < all.length; i++) for (let j = i + 1; j < all.length; j++) order.add(all[i], all[j]);
      rel.pco = order;
      const index = new PositionIndex(model, pos);
      for (const read of model.reads) {
        const level = model.txns[read.txn].level;
        if (level !== PC && level !== SI) continue;
        const bound = prefixBound(rel, read.txn, pos, sharesWrite);
        // The Conflict part by binary search over writers sorted by position gives the same bound.
        const indexed = prefixBound(rel, read.txn, pos, sharesWrite, index);
        if (indexed !== bound)
          expect.fail(`${label}: read ${read.id} of t${read.txn}: bound ${bound}, with PositionIndex ${indexed}`);
        for (let t2 = 0; t2 < model.n; t2++) {
          if (t2 === read.txn) continue;
          const expected = rel.visible(t2, read, level, sharesWrite);
          const got = visibleUnder(rel, t2, read, level, pos, bound, sharesWrite);
          if (got !== expected)
            expect.fail(`${label}: t2=${t2} read ${read.id} of t${read.txn}: fast ${got}, reference ${expected}`);
          compared++;
          if (expected) visible++;
        }
      }
    }
    expect(compared).toBeGreaterThan(2000);
    expect(visible).toBeGreaterThan(compared / 10);
    expect(visible).toBeLessThan(compared * 0.9);
  });

  it('WritePartners visits exactly the other writers of a key the transaction writes', () => {
    let pairs = 0;
    let sharing = 0;
    for (const { model, label } of cases(100)) {
      const partners = new WritePartners(model);
      for (let t3 = 1; t3 < model.n; t3++) {
        const visited = new Set<number>();
        partners.some(t3, (t4) => {
          visited.add(t4);
          return false;
        });
        for (let t = 1; t < model.n; t++) {
          const expected = t !== t3 && [...model.writes[t3].keys()].some((k) => model.writes[t].has(k));
          if (visited.has(t) !== expected || (t !== t3 && partners.share(t, t3) !== expected))
            expect.fail(`${label}: t${t} and t${t3}: expected ${expected}`);
          pairs++;
          if (expected) sharing++;
        }
        // Stops at the first partner the visitor accepts.
        let calls = 0;
        expect(partners.some(t3, () => ++calls > 0)).toBe(visited.size > 0);
        expect(calls).toBe(visited.size > 0 ? 1 : 0);
      }
    }
    expect(sharing).toBeGreaterThan(pairs / 20);
    expect(sharing).toBeLessThan(pairs * 0.9);
  });
});
