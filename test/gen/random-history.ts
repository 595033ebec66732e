/**
 * Random small client histories for cross-checking the checker against the brute-force oracle
 * (src/oracle/naive.ts).
 *
 * One or two tables `(id int4 primary key, v int4)` with ids 1..keys and values 0..3, 2–5 transactions over 1–3
 * sessions, each of 1–4 statements: selects (`id = $1`, `v > $1`, `v = $1`, `id IN (...)`, a range, no WHERE),
 * inserts, `UPDATE ... SET v = ...` and deletes with a WHERE; every level; some transactions aborted or `unknown`;
 * some reads `partial`.
 *
 * The rows come from a plausible process, so that the verdicts split: transactions run one after the other in a
 * random order that respects sessions, or with their statements interleaved; writes become visible at commit;
 * each read picks, key by key, a version among those committed so far (mostly the latest one as of a
 * per-transaction snapshot point, sometimes the newest or any older one), or the transaction's own write, and
 * returns the rows whose version matches the WHERE; updates and deletes change the rows they read that match.
 * Occasionally one read is then corrupted (a row dropped, a stale version, a wrong value, a non-matching row). Every
 * history is a valid FILE (unique wids, seq 1..n per session, declared tables, right value types), whatever its
 * verdict. Also here: History <-> format lines <-> NDJSON helpers.
 */
import type { History, TableSchema, Txn } from '../../src/history/history.js';
import {
  HISTORY_FORMAT,
  HISTORY_VERSION,
  INIT_WID,
  ISOLATION_LEVELS,
  type HistoryEvent,
  type IsolationLevel,
  type Line,
  type Row,
  type TxnLine,
  type TxnStatus,
} from '../../src/history/format.js';

export type Rng = () => number;

export function int(rng: Rng, lo: number, hi: number): number {
  return lo + Math.floor(rng() * (hi - lo + 1));
}
export function pick<T>(rng: Rng, xs: readonly T[]): T {
  return xs[Math.floor(rng() * xs.length)];
}
export function chance(rng: Rng, p: number): boolean {
  return rng() < p;
}
export function shuffle<T>(rng: Rng, xs: T[]): T[] {
  for (let i = xs.length - 1; i > 0; i--) {
    const j = Math.floor(rng() * (i + 1));
    [xs[i], xs[j]] = [xs[j], xs[i]];
  }
  return xs;
}

// ---------------------------------------------------------------------------------------------------------------
// Schema and predicates

export const COLUMNS = { id: 'int4', v: 'int4' } as const;
export const TABLE_NAMES = ['t', 'u'];

/** A WHERE with its own evaluator (independent of src/sql/predicate.ts). */
export interface Pred {
  where?: string;
  params?: number[];
  test(row: Row): boolean;
}

const num = (x: unknown): number => x as number;

export function randomPred(rng: Rng, keys: number, pointBias = 0.3): Pred {
  if (chance(rng, pointBias)) {
    const k = int(rng, 1, keys);
    return { where: 'id = $1', params: [k], test: (r) => num(r.id) === k };
  }
  switch (int(rng, 0, 5)) {
    case 0: {
      const k = int(rng, 1, keys);
      return { where: 'id = $1', params: [k], test: (r) => num(r.id) === k };
    }
    case 1: {
      const c = int(rng, -1, 2);
      return { where: 'v > $1', params: [c], test: (r) => r.v !== null && num(r.v) > c };
    }
    case 2: {
      const c = int(rng, 0, 3);
      return { where: 'v = $1', params: [c], test: (r) => r.v !== null && num(r.v) === c };
    }
    case 3: {
      const a = int(rng, 1, keys + 1);
      const b = int(rng, 1, keys + 1);
      return { where: 'id IN ($1, $2)', params: [a, b], test: (r) => num(r.id) === a || num(r.id) === b };
    }
    case 4: {
      const a = int(rng, 1, keys);
      const b = int(rng, a, keys + 1);
      return { where: 'id >= $1 AND id <= $2', params: [a, b], test: (r) => num(r.id) >= a && num(r.id) <= b };
    }
    default:
      return { test: () => true };
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Lines <-> History <-> NDJSON

/** Builds the History the reader would build from these lines (no validation: use readHistory for that). */
export function historyFromLines(lines: Line[], file = 'generated.ndjson'): History {
  const h: History = { file, meta: {}, tables: new Map(), init: new Map(), txns: [], truncated: true };
  lines.forEach((line, i) => {
    const lineNo = i + 1;
    switch (line.kind) {
      case 'history':
        h.meta = line.meta;
        break;
      case 'table': {
        const schema: TableSchema = { name: line.name, key: line.key, columns: line.columns, line: lineNo };
        h.tables.set(line.name, schema);
        h.init.set(line.name, []);
        break;
      }
      case 'init':
        for (const row of line.rows) h.init.get(line.table)!.push({ row, line: lineNo });
        break;
      case 'txn':
        h.txns.push({ ...line, line: lineNo } as Txn);
        break;
      case 'end':
        h.truncated = false;
        break;
    }
  });
  return h;
}

/** The format lines of a History (header, tables, init, txns, end unless truncated). */
export function historyToLines(h: History): Line[] {
  const lines: Line[] = [{ kind: 'history', format: HISTORY_FORMAT, version: HISTORY_VERSION, meta: h.meta }];
  for (const t of h.tables.values()) lines.push({ kind: 'table', name: t.name, key: t.key, columns: t.columns });
  for (const [table, rows] of h.init)
    if (rows.length) lines.push({ kind: 'init', table, rows: rows.map((r) => r.row) });
  for (const t of h.txns) {
    const { line: _line, ...rest } = t;
    lines.push({ ...rest, kind: 'txn' } as TxnLine);
  }
  if (!h.truncated) lines.push({ kind: 'end', transactions: h.txns.length });
  return lines;
}

export function historyToNdjson(h: History): string {
  return `${historyToLines(h)
    .map((l) => JSON.stringify(l))
    .join('\n')}\n`;
}

// ---------------------------------------------------------------------------------------------------------------
// A small store of versions, shared with the operational generator

export interface Version {
  wid: string;
  /** null: † */
  value: Row | null;
  txn: string;
  /** Commit time (0 for init). */
  time: number;
}

/** Committed versions per key (`table/id`), oldest first. */
export class VersionStore {
  readonly versions = new Map<string, Version[]>();
  constructor(
    readonly tables: string[],
    readonly keys: number,
  ) {}
  static key(table: string, id: number): string {
    return `${table}/${id}`;
  }
  /** Ids that can exist in a table: 1..keys+1 (inserts may add one beyond the initial range). */
  ids(): number[] {
    return Array.from({ length: this.keys + 1 }, (_, i) => i + 1);
  }
  list(table: string, id: number): Version[] {
    const k = VersionStore.key(table, id);
    let l = this.versions.get(k);
    if (!l) {
      l = [{ wid: INIT_WID, value: null, txn: INIT_WID, time: 0 }];
      this.versions.set(k, l);
    }
    return l;
  }
  /** Latest version committed at or before `time`. */
  asOf(table: string, id: number, time: number): Version {
    const l = this.list(table, id);
    let v = l[0];
    for (const x of l) if (x.time <= time) v = x;
    return v;
  }
  latest(table: string, id: number): Version {
    const l = this.list(table, id);
    return l[l.length - 1];
  }
  commit(table: string, id: number, v: Version): void {
    this.list(table, id).push(v);
  }
}

/** The history header, tables and random initial rows; registers the init versions in `store`. */
export function randomPreamble(rng: Rng, store: VersionStore, meta: Record<string, unknown>): Line[] {
  const lines: Line[] = [{ kind: 'history', format: HISTORY_FORMAT, version: HISTORY_VERSION, meta }];
  for (const name of store.tables) lines.push({ kind: 'table', name, key: ['id'], columns: { ...COLUMNS } });
  for (const name of store.tables) {
    const rows: Row[] = [];
    for (let id = 1; id <= store.keys; id++) {
      if (!chance(rng, 0.65)) continue;
      const row = { id, v: int(rng, 0, 3) };
      rows.push(row);
      store.list(name, id)[0].value = row;
    }
    if (rows.length) lines.push({ kind: 'init', table: name, rows });
  }
  return lines;
}

/**
 * The statements of one transaction, executed against a view: `see(table, id)` gives the version the current
 * statement observes for a key that the transaction has not written. Own writes are applied on top, as local
 * reads. Returns the recorded event and the writes it made.
 */
export class TxnRunner {
  readonly events: HistoryEvent[] = [];
  /** Own latest write per key: wid and value. */
  readonly own = new Map<string, { wid: string; value: Row | null }>();
  private n = 0;
  constructor(
    readonly id: string,
    readonly rng: Rng,
    readonly store: VersionStore,
  ) {}

  private nextWid(): string {
    return `${this.id}.${++this.n}`;
  }

  /** What this statement observes for a key: own write, or `see`. */
  view(table: string, id: number, see: (table: string, id: number) => Version): { wid: string; value: Row | null } {
    return this.own.get(VersionStore.key(table, id)) ?? see(table, id);
  }

  /** One random statement. */
  step(see: (table: string, id: number) => Version, partialRate = 0.08): void {
    const rng = this.rng;
    const table = pick(rng, this.store.tables);
    const ids = this.store.ids();
    const r = rng();
    if (r < 0.45) {
      const pred = randomPred(rng, this.store.keys);
      const rows: { wid: string; row: Row }[] = [];
      for (const id of ids) {
        const v = this.view(table, id, see);
        if (v.value && pred.test(v.value)) rows.push({ wid: v.wid, row: { ...v.value } });
      }
      const partial = chance(rng, partialRate);
      const shown = partial ? rows.filter(() => chance(rng, 0.6)) : rows;
      this.events.push({ op: 'select', table, ...where(pred), ...(partial ? { partial: true } : {}), rows: shown });
    } else if (r < 0.7) {
      const pred = randomPred(rng, this.store.keys, 0.6);
      const wid = this.nextWid();
      const rows: { read: string; row: Row }[] = [];
      const newV = int(rng, 0, 3);
      for (const id of ids) {
        const v = this.view(table, id, see);
        if (v.value && pred.test(v.value)) {
          const row = { ...v.value, v: chance(rng, 0.5) ? newV : ((v.value.v as number) + 1) % 4 };
          rows.push({ read: v.wid, row });
        }
      }
      for (const x of rows) this.own.set(VersionStore.key(table, x.row.id as number), { wid, value: x.row });
      this.events.push({ op: 'update', table, ...where(pred), wid, rows });
    } else if (r < 0.85) {
      const free = ids.filter((id) => this.view(table, id, see).value === null);
      if (free.length === 0) {
        this.step(see, partialRate);
        return;
      }
      const wid = this.nextWid();
      const row = { id: pick(rng, free), v: int(rng, 0, 3) };
      this.own.set(VersionStore.key(table, row.id), { wid, value: row });
      this.events.push({ op: 'insert', table, wid, rows: [{ row }] });
    } else {
      const pred = randomPred(rng, this.store.keys, 0.7);
      const wid = this.nextWid();
      const rows: { read: string; key: number[] }[] = [];
      for (const id of ids) {
        const v = this.view(table, id, see);
        if (v.value && pred.test(v.value)) rows.push({ read: v.wid, key: [id] });
      }
      for (const x of rows) this.own.set(VersionStore.key(table, x.key[0]), { wid, value: null });
      this.events.push({ op: 'delete', table, ...where(pred), wid, rows });
    }
  }

  /** Makes this transaction's last writes committed versions at `time`. */
  commitTo(store: VersionStore, time: number): void {
    for (const [k, w] of this.own) {
      const [table, id] = k.split('/');
      store.commit(table, Number(id), { wid: w.wid, value: w.value, txn: this.id, time });
    }
  }
}

function where(pred: Pred): { where?: string; params?: number[] } {
  return pred.where === undefined ? {} : { where: pred.where, params: pred.params };
}

// ---------------------------------------------------------------------------------------------------------------
// The random generator

export interface RandomHistoryOptions {
  /** Number of transactions, inclusive range. Default [2, 5]. */
  txns?: [number, number];
  /** Default [1, 3]. */
  sessions?: [number, number];
  /** Statements per transaction. Default [1, 4]. */
  events?: [number, number];
  /** Ids 1..keys initially (inserts may use keys+1). Default 3. */
  keys?: number;
  /** Probability of corrupting one read. Default 0.15. */
  corrupt?: number;
  /** Fixed level for every transaction (default: random). */
  level?: IsolationLevel;
  /** Levels to draw from when `level` is not given (default: all six). */
  levels?: readonly IsolationLevel[];
  meta?: Record<string, unknown>;
}

export function randomHistoryLines(rng: Rng, opts: RandomHistoryOptions = {}): Line[] {
  const tables = TABLE_NAMES.slice(0, int(rng, 1, 2));
  const store = new VersionStore(tables, opts.keys ?? 3);
  const lines = randomPreamble(rng, store, { generator: 'random-history', ...opts.meta });

  const n = int(rng, ...(opts.txns ?? [2, 5]));
  const nSessions = Math.min(n, int(rng, ...(opts.sessions ?? [1, 3])));
  const sessions: number[][] = Array.from({ length: nSessions }, () => []);
  for (let i = 0; i < n; i++) sessions[i < nSessions ? i : int(rng, 0, nSessions - 1)].push(i);

  // Half the histories run their transactions one after the other, half interleave their statements; either
  // way writes become visible at commit, and each read picks its versions as described above.
  const interleave = chance(rng, 0.5);
  // How often a read ignores its snapshot point for a key (fractured reads, long forks).
  const wander = pick(rng, [0.25, 0.25, 0.5]);
  const heads = sessions.map(() => 0);
  const active: (
    | { i: number; runner: TxnRunner; left: number; see: (table: string, key: number) => Version }
    | undefined
  )[] = sessions.map(() => undefined);
  const txnLines: TxnLine[] = [];
  const committedTimes: number[] = [0];
  const sessionCommit = sessions.map(() => 0);
  let time = 0;
  for (;;) {
    const busy = active.findIndex((a) => a !== undefined);
    const ready = sessions.map((_, s) => s).filter((s) => active[s] !== undefined || heads[s] < sessions[s].length);
    if (ready.length === 0) break;
    const session = !interleave && busy >= 0 ? busy : pick(rng, ready);
    let a = active[session];
    if (!a) {
      const i = sessions[session][heads[session]++];
      // Mostly the state as of a snapshot point (usually not before the session's previous commit), sometimes
      // the newest or any version, per key.
      const floor = chance(rng, 0.9) ? sessionCommit[session] : 0;
      const snap = chance(rng, 0.4)
        ? time
        : pick(
            rng,
            committedTimes.filter((t) => t >= floor),
          );
      const see = (table: string, key: number): Version => {
        const r = rng();
        if (r >= wander) return store.asOf(table, key, snap);
        if (r < wander / 2) return store.latest(table, key);
        return pick(rng, store.list(table, key));
      };
      a = active[session] = {
        i,
        runner: new TxnRunner(`t${i + 1}`, rng, store),
        left: int(rng, ...(opts.events ?? [1, 4])),
        see,
      };
    }
    if (a.left > 0) {
      a.left--;
      a.runner.step(a.see);
      continue;
    }
    const sr = rng();
    const status: TxnStatus = sr < 0.75 ? 'committed' : sr < 0.87 ? 'aborted' : 'unknown';
    const visible = status === 'committed' || (status === 'unknown' && chance(rng, 0.5));
    if (visible) {
      time++;
      committedTimes.push(time);
      sessionCommit[session] = time;
      a.runner.commitTo(store, time);
    }
    txnLines.push({
      kind: 'txn',
      id: a.runner.id,
      session: session + 1,
      seq: sessions[session].indexOf(a.i) + 1,
      iso: opts.level ?? pick(rng, opts.levels ?? ISOLATION_LEVELS),
      status,
      events: a.runner.events,
    });
    active[session] = undefined;
  }
  if (chance(rng, opts.corrupt ?? 0.15)) corrupt(rng, txnLines, store);
  return [...lines, ...txnLines, { kind: 'end', transactions: txnLines.length }];
}

/** Damages one read so that the history is likely (not surely) inconsistent, keeping the file valid. */
function corrupt(rng: Rng, txns: TxnLine[], store: VersionStore): void {
  const selects = txns.flatMap((t) => t.events.filter((e) => e.op === 'select'));
  if (selects.length === 0) return;
  const e = pick(rng, selects);
  if (e.op !== 'select') return;
  const kind = int(rng, 0, 3);
  if (kind === 0 && e.rows.length > 0) {
    e.rows.splice(int(rng, 0, e.rows.length - 1), 1); // drop a returned row
  } else if (kind === 1 && e.rows.length > 0) {
    const r = pick(rng, e.rows); // return another committed version of the same key (stale or newer)
    const others = store.list(e.table, r.row.id as number).filter((v) => v.value && v.wid !== r.wid);
    if (others.length) {
      const v = pick(rng, others);
      r.wid = v.wid;
      r.row = { ...v.value! };
    }
  } else if (kind === 2 && e.rows.length > 0) {
    const r = pick(rng, e.rows); // a wrong value
    r.row = { ...r.row, v: ((r.row.v as number) + 1) % 4 };
  } else {
    // a row of a committed version, whether or not it matches, that was not returned
    const id = int(rng, 1, store.keys + 1);
    if (e.rows.some((r) => r.row.id === id)) return;
    const vs = store.list(e.table, id).filter((v) => v.value);
    if (vs.length) {
      const v = pick(rng, vs);
      e.rows.push({ wid: v.wid, row: { ...v.value! } });
    }
  }
}

export function randomHistory(rng: Rng, opts: RandomHistoryOptions = {}): History {
  return historyFromLines(randomHistoryLines(rng, opts));
}
