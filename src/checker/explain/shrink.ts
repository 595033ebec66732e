/**
 * Shrinking an inconsistent history to a small inconsistent sub-history (docs/semantics.md §5), for explanations
 * when the contradiction is not one forced cycle.
 *
 *   drop every aborted transaction
 *   -> the neighbourhood of where it went wrong: the transactions the last failed check names (the search's
 *      stuck frontier, the linear check's cycle, a case split's pair), then rings around them (what they read
 *      from, their session predecessors, then the other writers of the rows they read); the first ring that is
 *      still inconsistent replaces the history
 *   -> delta debugging: drop chunks of transactions (halving the chunk size, latest first), then single
 *      transactions until none can go (1-minimal); after a pass that dropped some, the neighbourhood of the
 *      smaller history is tried again
 *
 * A drop is kept only when the rest is still inconsistent with a contradiction of the same class: a commit-order
 * contradiction (a named cycle or case split, or no consistent order), never a missing row or a well-formedness
 * anomaly the drop made.
 *
 * What a kept transaction read from a dropped one: by default a transaction is dropped only when no kept one read
 * from it (a read of a dropped write would be a garbage read), so a sub-history keeps whole chains of versions
 * (every earlier writer of a row a kept transaction updated). With `cutReads`, the sub-history is cut instead,
 * as a truncated file is (§1.4): a read of a version not in it loses that row and becomes partial (§3.2), and so
 * does a read that did not return a row a dropped transaction wrote a version of beside a kept one (init's or a
 * kept writer's): the dropped version may be what hid it. Every cut only removes constraints, so an inconsistent
 * cut sub-history shows a contradiction the whole history has; the caller must then explain `Shrunk.history`, not
 * the transactions by id. By default a dropped version that hid an unreturned row can leave the sub-history a
 * contradiction of its own (docs/semantics.md §5 says so).
 *
 * The verdict of the whole history never depends on this: it only picks what to show. Bounded by a deadline;
 * returns the smallest sub-history reached.
 */
import type { Anomaly } from '../anomaly.js';
import type { HistoryEvent } from '../../history/format.js';
import type { History, Txn } from '../../history/history.js';
import type { CheckOptions, CheckResult } from '../result.js';

export interface Shrunk {
  /** The transactions kept, by id. */
  txns: string[];
  /** The sub-history to explain: the kept transactions (with `cutReads`, cut as described above). */
  history: History;
  /** The check of `history` that found it inconsistent. */
  result: CheckResult;
}

/** How many rings around the named transactions are tried before delta debugging. */
const RINGS = 3;

export function shrink(
  history: History,
  _options: CheckOptions,
  check: (h: History) => CheckResult | undefined,
  deadline: number,
  cutReads = false,
): Shrunk | undefined {
  return new Shrinker(history, check, deadline, cutReads).run();
}

/** A sub-history is kept when it is inconsistent with a commit-order contradiction (the class shrinking is for). */
function sameClass(r: CheckResult | undefined): r is CheckResult {
  return r?.verdict === 'inconsistent' && r.anomalies.length > 0 && r.anomalies.every(isOrderContradiction);
}

function isOrderContradiction(a: Anomaly): boolean {
  return a.type === 'no-consistent-order' || 'by' in a;
}

/** The transactions an anomaly names: its own list, the edges' ends and readers, a case split's pair, the stuck
 *  frontier (blocked, blockers, the last committed) and the open conflicts' readers and writers. */
export function namedTxns(a: Anomaly): string[] {
  const out = new Set<string>(a.txns);
  if ('by' in a) {
    if (a.by === 'cases') for (const id of a.pair) out.add(id);
    for (const e of a.by === 'cases' ? a.cases.flatMap((c) => c.edges) : a.edges) {
      out.add(e.from).add(e.to);
      if (e.kind === 'axiom') out.add(e.reader);
    }
  }
  if (a.type === 'no-consistent-order') {
    for (const id of a.stuck?.lastCommitted ?? []) out.add(id);
    for (const b of a.stuck?.blocked ?? []) {
      out.add(b.txn);
      if (b.why === 'forced-order') out.add(b.after);
      if (b.why === 'visible-writer' || b.why === 'stale-snapshot') out.add(b.reader).add(b.version);
      if (b.why === 'stale-snapshot') out.add(b.later);
    }
    for (const c of a.conflicts ?? []) for (const id of [c.reader, ...c.matching, ...c.hiding]) out.add(id);
  }
  out.delete('init');
  return [...out];
}

/** Rows as `table\0key` text: those each transaction read and wrote (also as [table, key]), each row's writers,
 *  the initial database's rows. */
interface RowIndex {
  read: string[][];
  written: [string, string][][];
  writers: Map<string, number[]>;
  init: Set<string>;
}

class Shrinker {
  readonly txns: Txn[];
  readonly n: number;
  readonly index = new Map<string, number>();
  /** Per transaction: the transactions it read from, those that read from it; its session predecessor (-1: none). */
  readonly readsFrom: number[][] = [];
  readonly readersOf: number[][];
  readonly soPrev: Int32Array;
  /** The rows each transaction read and wrote, made when first needed (a ring past the reads-from one, or
   *  `cutReads`). */
  #rows: RowIndex | undefined;
  readonly kept: Uint8Array;
  live: number;
  last: CheckResult | undefined;
  /** Rests found consistent (or of another class), by signature. */
  readonly failed = new Set<string>();

  constructor(
    readonly history: History,
    readonly check: (h: History) => CheckResult | undefined,
    readonly deadline: number,
    readonly cutReads: boolean,
  ) {
    this.txns = history.txns;
    this.n = this.txns.length;
    this.live = this.n;
    this.kept = new Uint8Array(this.n).fill(1);
    this.readersOf = Array.from({ length: this.n }, () => []);
    this.soPrev = new Int32Array(this.n).fill(-1);
    this.indexHistory();
  }

  /** A row's key as text (the values of its table's key columns). */
  keyText(table: string, row: Record<string, unknown>): string {
    const schema = this.history.tables.get(table);
    return JSON.stringify(schema ? schema.key.map((c) => row[c]) : row);
  }

  rowKey(table: string, r: { key: unknown } | { row: Record<string, unknown> }): string {
    return 'key' in r ? JSON.stringify(r.key) : this.keyText(table, r.row);
  }

  indexHistory(): void {
    const { txns } = this;
    const writerOf = new Map<string, number>();
    txns.forEach((t, i) => {
      this.index.set(t.id, i);
      for (const e of t.events) if (e.op !== 'select') writerOf.set(e.wid, i);
    });
    txns.forEach((t, i) => {
      const from = new Set<number>();
      for (const e of t.events) {
        if (e.op === 'insert') continue;
        for (const r of e.rows) {
          const x = writerOf.get('wid' in r ? r.wid : r.read);
          if (x !== undefined && x !== i) from.add(x);
        }
      }
      this.readsFrom.push([...from]);
      for (const x of from) this.readersOf[x].push(i);
    });
    const lastOfSession = new Map<number, number>();
    const bySession = txns.map((_, i) => i);
    bySession.sort((a, b) => txns[a].session - txns[b].session || txns[a].seq - txns[b].seq || a - b);
    for (const i of bySession) {
      const p = lastOfSession.get(txns[i].session);
      if (p !== undefined) this.soPrev[i] = p;
      lastOfSession.set(txns[i].session, i);
    }
  }

  get rows(): RowIndex {
    if (this.#rows) return this.#rows;
    const rows: RowIndex = { read: [], written: [], writers: new Map(), init: new Set() };
    for (const [table, init] of this.history.init)
      for (const r of init) rows.init.add(`${table}\u0000${this.keyText(table, r.row)}`);
    this.txns.forEach((t, i) => {
      const read = new Set<string>();
      const written = new Map<string, [string, string]>();
      for (const e of t.events) {
        for (const r of e.rows) {
          const key = this.rowKey(e.table, r);
          if (e.op !== 'insert') read.add(`${e.table}\u0000${key}`);
          if (e.op !== 'select') written.set(`${e.table}\u0000${key}`, [e.table, key]);
        }
      }
      for (const k of written.keys()) {
        const ws = rows.writers.get(k);
        if (ws) ws.push(i);
        else rows.writers.set(k, [i]);
      }
      rows.read.push([...read]);
      rows.written.push([...written.values()]);
    });
    this.#rows = rows;
    return rows;
  }

  out(): boolean {
    return Date.now() > this.deadline;
  }

  /** The kept transactions as a history (cut, with `cutReads`). */
  sub(): History {
    const kept = this.txns.filter((_, i) => this.kept[i]);
    if (!this.cutReads || this.live === this.n) return { ...this.history, txns: kept };
    // Rows a dropped transaction wrote a version of, beside a kept version (init's or a kept writer's): a read
    // that did not return one of them may have been hidden by the dropped version, and becomes partial.
    const hidden = new Map<string, Set<string>>();
    const rows = this.rows;
    for (let i = 0; i < this.n; i++) {
      if (this.kept[i] || this.txns[i].status === 'aborted') continue;
      for (const [table, key] of rows.written[i]) {
        const k = `${table}\u0000${key}`;
        if (!rows.init.has(k) && !rows.writers.get(k)!.some((w) => this.kept[w])) continue;
        const keys = hidden.get(table) ?? new Set<string>();
        hidden.set(table, keys.add(key));
      }
    }
    const mayHide = (e: HistoryEvent): boolean => {
      const keys = e.op === 'insert' || e.partial ? undefined : hidden.get(e.table);
      if (!keys) return false;
      const returned = new Set(e.rows.map((r) => this.rowKey(e.table, r)));
      for (const k of keys) if (!returned.has(k)) return true;
      return false;
    };
    const cut = (t: Txn): Txn =>
      t.events.some(mayHide) ? { ...t, events: t.events.map((e) => (mayHide(e) ? { ...e, partial: true } : e)) } : t;
    return { ...this.history, txns: kept.map(cut), truncated: true };
  }

  /** Drops `set` if the rest is still of the class; puts it back otherwise. A rest already found consistent (or
   *  of another class) is not checked again. */
  tryWithout(set: number[]): boolean {
    for (const i of set) this.kept[i] = 0;
    this.live -= set.length;
    const sign = this.signature();
    const result = this.failed.has(sign) ? undefined : this.check(this.sub());
    if (sameClass(result)) {
      this.last = result;
      return true;
    }
    this.failed.add(sign);
    for (const i of set) this.kept[i] = 1;
    this.live += set.length;
    return false;
  }

  /** The kept set, hashed (two FNV-1a hashes and the count). */
  signature(): string {
    let a = 0x811c9dc5;
    let b = 0x01000193;
    for (let i = 0; i < this.n; i++) {
      if (!this.kept[i]) continue;
      a = Math.imul(a ^ i, 0x01000193);
      b = Math.imul(b ^ (i * 31 + 7), 0x811c9dc5);
    }
    return `${this.live}:${a >>> 0}:${b >>> 0}`;
  }

  /** Drops `set` if the rest stays inconsistent (and, without `cutReads`, nothing kept reads from it). */
  tryDrop(set: number[]): boolean {
    // A commit-order contradiction needs two transactions at least.
    if (set.length === 0 || this.live - set.length < 2 || this.out()) return false;
    if (!this.cutReads) {
      const dropping = new Set(set);
      for (const i of set) for (const r of this.readersOf[i]) if (this.kept[r] && !dropping.has(r)) return false;
    }
    return this.tryWithout(set);
  }

  /** Keeps only `set` (and, `closed`, what it reads from, transitively) if that is still inconsistent. */
  tryKeepOnly(set: Set<number>, closed: boolean): boolean {
    const keep = new Set<number>();
    for (const i of set) if (this.kept[i]) keep.add(i);
    if (closed) for (const i of keep) for (const w of this.readsFrom[i]) keep.add(w);
    const drop: number[] = [];
    for (let i = 0; i < this.n; i++) if (this.kept[i] && !keep.has(i)) drop.push(i);
    return drop.length > 0 && this.live - drop.length >= 2 && !this.out() && this.tryWithout(drop);
  }

  /** The next ring around `set`: what it reads from and session predecessors; when that adds nothing, the other
   *  writers of the rows it read. */
  ring(set: Set<number>): Set<number> {
    const next = new Set(set);
    for (const i of set) {
      for (const w of this.readsFrom[i]) next.add(w);
      if (this.soPrev[i] >= 0) next.add(this.soPrev[i]);
    }
    if (next.size > set.size) return next;
    const rows = this.rows;
    for (const i of set) for (const k of rows.read[i]) for (const w of rows.writers.get(k) ?? []) next.add(w);
    return next;
  }

  /** The neighbourhood of what the last failed check names, ring by ring, smallest first. */
  focus(): boolean {
    if (!this.last) return false;
    let set = new Set<number>();
    for (const a of this.last.anomalies)
      for (const id of namedTxns(a)) if (this.index.has(id)) set.add(this.index.get(id)!);
    for (let k = 0; k <= RINGS && set.size > 0 && set.size < this.live && !this.out(); k++) {
      if ((this.cutReads && this.tryKeepOnly(set, false)) || this.tryKeepOnly(set, true)) return true;
      set = this.ring(set);
    }
    return false;
  }

  /** One pass of delta debugging with chunks of `chunk` transactions, latest first. Did it drop any? */
  pass(order: number[], chunk: number): boolean {
    const live = order.filter((i) => this.kept[i]);
    let dropped = false;
    for (let s = 0; s < live.length && !this.out(); s += chunk) {
      const set = live.slice(s, s + chunk).filter((i) => this.kept[i]);
      if (set.length === 0) continue;
      if (this.tryDrop(set)) dropped = true;
    }
    return dropped;
  }

  run(): Shrunk | undefined {
    const { txns } = this;
    this.tryDrop(txns.map((t, i) => (t.status === 'aborted' ? i : -1)).filter((i) => i >= 0));
    // No aborted transaction to drop: the whole history's check names the first neighbourhood.
    if (!this.last && !this.out()) {
      const whole = this.check(this.history);
      if (sameClass(whole)) this.last = whole;
    }
    this.focus();
    // Latest first (by end time, else file order): anomalies tend to be local, and later readers go first.
    const order = txns.map((_, i) => i).sort((a, b) => (txns[b].end ?? b) - (txns[a].end ?? a));
    for (let chunk = Math.ceil(this.live / 2); chunk >= 1 && !this.out(); ) {
      const dropped = this.pass(order, chunk);
      // A smaller history names a smaller neighbourhood; single drops repeat until none goes.
      if (dropped && this.focus()) chunk = Math.ceil(this.live / 2);
      else if (chunk > 1) chunk = Math.ceil(chunk / 2);
      else if (!dropped) break;
    }
    if (!this.last || this.live === this.n) return undefined;
    return {
      txns: txns.filter((_, i) => this.kept[i]).map((t) => t.id),
      history: this.sub(),
      result: this.last,
    };
  }
}
