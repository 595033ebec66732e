/**
 * The relations of one (extension of a) client history that the axioms of docs/semantics.md §2 read, and the
 * visibility predicate `vis_iso(t2, r)` of Figure 3 with a partial commit order standing for `co`.
 *
 * An extension adds witness edges `wr_x(w, r)` for conflicts (paper Algorithm 3); `Relations` holds the base
 * `wr` plus those, so cloning it per choice keeps the search's states independent.
 *
 *   model -> base(): triples (r, x, t1), wrPred, rcFirst, hb = (so ∪ wr)+, pco = (so ∪ wr)+
 *         -> addWitness(r, x, w) -> saturation/saturate.ts
 */
import type { Visibility } from '../anomaly.js';
import { INIT, type CheckModel, type ReadEvent } from './model.js';
import { CC, PC, RA, RC, SER, SI } from '../levels.js';
import { Order, newSet, setAdd, setHas } from './order.js';
import type { WritePartners } from './write-partners.js';
import { memoryStage, pollMemory, reserveBytes } from '../budget.js';

/** The n-bit sets of every transaction, for the reason of a memory stop. */
const setsOf = (n: number) => () => `the read-from sets of ${n.toLocaleString('en-US')} transactions (n bits each)`;

/** One instance of "read r read key x from t1". */
export interface Triple {
  read: number;
  key: number;
  from: number;
  /** Index into the read's from-arrays, or -1 for a witness edge chosen by the search. */
  index: number;
}

/** Why an edge of pco is there (for explanations). */
export interface ForcedEdge {
  from: number;
  to: number;
  /** The triple whose axiom forced it: reader tr(read) read key from `to`, `from` wrote key and is visible. */
  triple: Triple;
  /** How `from` was visible to the read. */
  via: Visibility;
  level: number;
}

export type { Visibility };

export class Relations {
  constructor(
    readonly model: CheckModel,
    public pco: Order,
    /** (so ∪ wr)+, for CC. */
    public hb: Order,
    /** wrPred[t] as bitsets: transactions t reads from (base and witness edges). */
    public wrPred: Uint32Array[],
    /** rcFirst[t3].get(t2): the first program position at which t3 read something from t2. */
    public rcFirst: Map<number, number>[],
    public triples: Triple[],
    /** Triples of each key (for the prefix search and saturation). */
    public triplesOfKey: Map<number, number[]>,
    public forced: ForcedEdge[],
    /** Witness edges chosen so far: (conflict index, writer). */
    public witnesses: { read: number; key: number; writer: number }[],
    /** Commit-order edges assumed by a case split of an explanation (never by the decision procedure). */
    public assumed: [number, number][] = [],
  ) {}

  /** Whether a witness was already chosen for (read, key). */
  hasWitness(read: number, key: number): boolean {
    if (this.witnessIndex.size !== this.witnesses.length) {
      this.witnessIndex = new Set(this.witnesses.map((w) => w.read * this.model.keys.length + w.key));
    }
    return this.witnessIndex.has(read * this.model.keys.length + key);
  }

  private witnessIndex = new Set<number>();

  /** Assumes a -> b in the commit order (case analysis for explanations). */
  assume(a: number, b: number): void {
    this.assumed.push([a, b]);
    this.pco.add(a, b);
  }

  static base(model: CheckModel): Relations {
    const { n, soPrev, reads } = model;
    memoryStage('building the commit order');
    const succ: number[][] = Array.from({ length: n }, () => []);
    for (let t = 1; t < n; t++) succ[soPrev[t]].push(t);
    reserveBytes(n * ((n + 31) >>> 5) * 4, setsOf(n));
    const wrPred = Array.from({ length: n }, () => newSet(n));
    const rcFirst = Array.from({ length: n }, () => new Map<number, number>());
    const triples: Triple[] = [];
    const triplesOfKey = new Map<number, number[]>();
    for (const r of reads) {
      for (let i = 0; i < r.fromCount; i++) {
        const w = model.fromTxn[r.from + i];
        if (!setHas(wrPred[r.txn], w)) {
          setAdd(wrPred[r.txn], w);
          succ[w].push(r.txn);
        }
        const first = rcFirst[r.txn].get(w);
        if (first === undefined || r.po < first) rcFirst[r.txn].set(w, r.po);
        pushTriple(triples, triplesOfKey, { read: r.id, key: model.fromKey[r.from + i], from: w, index: i });
      }
    }
    const hb = Order.closureOf(n, succ);
    return new Relations(model, hb.clone(), hb, wrPred, rcFirst, triples, triplesOfKey, [], []);
  }

  clone(): Relations {
    const triplesOfKey = new Map<number, number[]>();
    for (const [k, list] of this.triplesOfKey) triplesOfKey.set(k, list.slice());
    reserveBytes(this.wrPred.length * this.pco.words * 4, setsOf(this.model.n));
    return new Relations(
      this.model,
      this.pco.clone(),
      this.hb.clone(),
      this.wrPred.map((s) => s.slice()),
      this.rcFirst.map((m) => new Map(m)),
      this.triples.slice(),
      triplesOfKey,
      this.forced.slice(),
      this.witnesses.slice(),
      this.assumed.slice(),
    );
  }

  /** Adds the witness edge wr_x(w, r): r read key x (which it did not return) from w. */
  addWitness(read: ReadEvent, key: number, w: number): void {
    const t3 = read.txn;
    setAdd(this.wrPred[t3], w);
    const first = this.rcFirst[t3].get(w);
    if (first === undefined || read.po < first) this.rcFirst[t3].set(w, read.po);
    this.hb.add(w, t3);
    this.pco.add(w, t3);
    pushTriple(this.triples, this.triplesOfKey, { read: read.id, key, from: w, index: -1 });
    this.witnesses.push({ read: read.id, key, writer: w });
  }

  soBefore(a: number, b: number): boolean {
    return a === INIT ? b !== INIT : a < b && this.model.txns[a].session === this.model.txns[b].session;
  }

  /**
   * vis_iso(t3)(t2, r) with pco standing for co (docs/semantics.md §2.3).
   * `partners` finds, for SI, the transactions that write a key t3 also writes.
   */
  visible(t2: number, read: ReadEvent, level: number, partners: WritePartners): boolean {
    const t3 = read.txn;
    const { pco } = this;
    switch (level) {
      case RC: {
        if (this.soBefore(t2, t3)) return true;
        const first = this.rcFirst[t3].get(t2);
        return first !== undefined && first < read.po;
      }
      case RA:
        return this.soBefore(t2, t3) || setHas(this.wrPred[t3], t2);
      case CC:
        return this.hb.has(t2, t3);
      case PC:
      case SI: {
        if (this.soBefore(t2, t3) || setHas(this.wrPred[t3], t2)) return true;
        const prev = this.model.soPrev[t3];
        if (prev >= 0 && pco.has(t2, prev)) return true;
        if (pco.precedesAny(t2, this.wrPred[t3])) return true;
        if (level === SI && partners.some(t3, (t4) => pco.has(t4, t3) && (t4 === t2 || pco.has(t2, t4)))) return true;
        return false;
      }
      case SER:
        return pco.has(t2, t3);
      default:
        throw new Error(`unknown level ${level}`);
    }
  }

  /** Why t2 is visible to the read (the most specific reason, for explanations); call only when visible. */
  visibilityReason(t2: number, read: ReadEvent, level: number): Visibility {
    const t3 = read.txn;
    if (this.soBefore(t2, t3)) return 'so';
    if (level === RC) return 'wr-earlier';
    if (setHas(this.wrPred[t3], t2)) return 'wr';
    if (this.hb.has(t2, t3)) return 'causal';
    if (level === PC || level === SI) {
      const prev = this.model.soPrev[t3];
      if ((prev >= 0 && this.pco.has(t2, prev)) || this.pco.precedesAny(t2, this.wrPred[t3])) return 'prefix';
      if (level === SI) return 'conflict';
    }
    return 'co';
  }
}

/**
 * vis(t3)(t2, ·) for PC and SI readers as one bitset per reader, built from pco as it was when the pass began:
 * wr-predecessors, pco-predecessors of the previous transaction of the session and of every wr-predecessor
 * (Prefix), and for SI every writer of a key t3 writes that precedes t3, with its pco-predecessors (Conflict).
 * `Relations.visible` loops over those writers for each (t2, read): hundreds per reader on TPC-C's district and
 * warehouse rows, for every writer of every key read, in every pass (bench/results/profiles.md).
 * Used by saturation (saturation/saturate.ts). A set can lag behind edges added later in the same pass: it only
 * misses visibility, never invents it, and a pass that adds an edge is followed by another, so the fixpoint is the
 * same.
 */
export class PrefixVisibility {
  private pred: Uint32Array | undefined;
  private sets: (Uint32Array | undefined)[];

  constructor(
    private readonly rel: Relations,
    private readonly partners: WritePartners,
  ) {
    this.sets = new Array(rel.model.n);
  }

  startPass(): void {
    this.pred = undefined;
    this.sets.fill(undefined);
  }

  of(t3: number): Uint32Array {
    let set = this.sets[t3];
    if (set) return set;
    const { rel } = this;
    const { pco, model } = rel;
    const words = pco.words;
    const pred = (this.pred ??= pco.predecessors());
    pollMemory(); // up to n sets of n bits in a pass
    set = new Uint32Array(words);
    // The set stays closed under pco-predecessors (pco is transitive): a t already in it brings nothing new.
    const withPredecessors = (t: number) => {
      if (setHas(set!, t)) return;
      const row = t * words;
      for (let w = 0; w < words; w++) set![w] |= pred[row + w];
      setAdd(set!, t);
    };
    const prev = model.soPrev[t3];
    if (prev >= 0) withPredecessors(prev);
    const wr = rel.wrPred[t3];
    for (let w = 0; w < words; w++) {
      let x = wr[w];
      while (x !== 0) {
        const low = x & -x;
        withPredecessors((w << 5) + (31 - Math.clz32(low)));
        x ^= low;
      }
    }
    if (model.txns[t3].level === SI) {
      // Latest ids first (a session's transactions have increasing ids): each one's predecessors subsume the
      // session's earlier ones, which are then skipped.
      this.partners.some(t3, (t4) => {
        if (pco.has(t4, t3)) withPredecessors(t4);
        return false;
      });
    }
    this.sets[t3] = set;
    return set;
  }
}

function pushTriple(triples: Triple[], byKey: Map<number, number[]>, t: Triple): void {
  const id = triples.length;
  triples.push(t);
  let list = byKey.get(t.key);
  if (!list) byKey.set(t.key, (list = []));
  list.push(id);
}
