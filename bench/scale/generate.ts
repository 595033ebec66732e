/**
 * Seeded generator of large bank-like histories, consistent by construction (docs/semantics.md), streamed line by
 * line: the groundwork of the "check a million transactions" issue. test/gen/operational.ts builds every line in
 * memory, on 3 keys, through a generic random runner: it does not scale to 10^5-10^6 transactions, so this is a
 * separate, streaming simulation of a multi-version database:
 *
 *   - one table `accounts(id int4, grp int4, bal int4)`, `accounts` initial rows, in groups of `groupSize`;
 *   - per key, the list of committed versions (commit time, wid, row), pruned below the oldest active snapshot;
 *   - SI: a snapshot taken at the first statement, plus the transaction's own writes; an update of a row whose
 *     latest committed version is newer than the snapshot aborts with 40001 (first updater wins, as PostgreSQL);
 *   - RC: each statement reads the latest committed state, plus its own writes; an update waits for the row lock,
 *     then updates the latest committed version (PostgreSQL's re-check);
 *   - row locks held to commit or abort by update and insert; a wait that would close a cycle aborts (40P01);
 *   - transaction types: Transfer (select, update, update), Deposit (select, update), Balance (two selects), Audit
 *     (the predicate read `grp = $1` of one group), Range (`id >= $1 AND id < $2`, 4 ids), Open (insert a new
 *     account, update the funding one); 2% application rollbacks;
 *   - 16 sessions by default, a random runnable session steps at each tick (begin, one statement, or commit).
 *
 * Levels: `si` (every transaction SI), `rc`, `si+rc` (each transaction draws SI or RC).
 *
 * Injected anomalies (option `inject`), halfway through the run, in regular sessions left idle for them (session
 * order then pins them among the others: in sessions of their own, the checker's search could put them anywhere
 * and times out), each transaction of them SI (so that the anomaly is one at every level mix, RC only included):
 *   - `lost-update`: two transactions read the same version of one account and both update it, both committed;
 *   - `stale-read`: a transaction updates an account, the next one of its session reads the version before;
 *   - `fractured-read`: a transfer updates two accounts; another transaction then reads the new version of one
 *     and the old version of the other.
 */
import { closeSync, mkdirSync, openSync, renameSync, writeSync } from 'node:fs';
import { dirname } from 'node:path';
import seedrandom from 'seedrandom';
import {
  HISTORY_FORMAT,
  HISTORY_VERSION,
  type HistoryEvent,
  type Line,
  type Row,
  type TxnLine,
} from '../../src/history/format.js';

export type ScaleLevel = 'si+rc' | 'si' | 'rc';
export const SCALE_LEVELS: readonly ScaleLevel[] = ['si+rc', 'si', 'rc'];
export type Injected = 'lost-update' | 'stale-read' | 'fractured-read';
export const INJECTED: readonly Injected[] = ['lost-update', 'stale-read', 'fractured-read'];

export interface ScaleOptions {
  /** Transactions in the history (every one started: committed and aborted), injected ones excluded. */
  txns: number;
  level: ScaleLevel;
  seed: string | number;
  /** Default 16. */
  sessions?: number;
  /**
   * Initial accounts. Default `defaultAccounts(txns)`: txns / 10, at least 50, so that a history twice as long has
   * the same shape (updates per account, rows per audited group, inserts per group), not twice the contention.
   */
  accounts?: number;
  /** Accounts per group (the predicate read's group). Default 20. */
  groupSize?: number;
  /** Probability of an application rollback. Default 0.02. */
  rollback?: number;
  inject?: readonly Injected[];
}

export interface ScaleStats {
  transactions: number;
  committed: number;
  aborted: number;
  injected: number;
  lines: number;
}

interface Version {
  t: number;
  wid: string;
  row: Row;
}

type Op =
  | { k: 'select'; id: number }
  | { k: 'update'; id: number; delta: number }
  | { k: 'insert'; grp: number }
  | { k: 'group'; grp: number }
  | { k: 'range'; lo: number; hi: number };

interface Txn {
  id: string;
  session: number;
  seq: number;
  iso: 'SI' | 'RC';
  label: string;
  ops: Op[];
  pc: number;
  snapshot?: number;
  own: Map<number, { wid: string; row: Row }>;
  locks: number[];
  waitsFor?: Txn;
  events: HistoryEvent[];
  begin: number;
}

const TABLE = 'accounts';

/**
 * Initial accounts of a history of `txns` transactions: one per 10 transactions (at least 50). Until session 9 the
 * default was capped at 20,000, so that from 250,000 transactions on each doubling also doubled the updates per
 * account and added a third to the rows an audit returns (1M had 2.0x the events of 500k but 2.16x the bytes and
 * 2.56x the predicate reads' candidate rows): a different history, not a longer one. `accounts: 20_000` gives it.
 */
export const defaultAccounts = (txns: number): number => Math.max(50, Math.floor(txns / 10));

/** Generates one history, passing each line to `emit` as soon as it is final. */
export function generateScale(opts: ScaleOptions, emit: (line: Line) => void): ScaleStats {
  const rng = seedrandom(`scale:${opts.level}:${opts.seed}`);
  const int = (lo: number, hi: number) => lo + Math.floor(rng() * (hi - lo + 1));
  const nSessions = opts.sessions ?? 16;
  const nAccounts = opts.accounts ?? defaultAccounts(opts.txns);
  const groupSize = opts.groupSize ?? 20;
  const rollback = opts.rollback ?? 0.02;
  const inject = opts.inject ?? [];

  const versions = new Map<number, Version[]>();
  const groupOf = new Map<number, number>();
  const groupKeys: number[][] = [];
  /** Committed account ids (what the transactions pick from). */
  const live: number[] = [];
  const locks = new Map<number, Txn>();
  let nextId = nAccounts + 1;
  let clock = 0;
  let tick = 0;
  const stats: ScaleStats = { transactions: 0, committed: 0, aborted: 0, injected: 0, lines: 0 };
  const out = (l: Line) => {
    stats.lines++;
    emit(l);
  };

  out({
    kind: 'history',
    format: HISTORY_FORMAT,
    version: HISTORY_VERSION,
    meta: {
      generator: 'bench/scale/generate.ts',
      workload: 'bank',
      level: opts.level,
      seed: String(opts.seed),
      txns: opts.txns,
      sessions: nSessions,
      accounts: nAccounts,
      groupSize,
      inject: [...inject],
    },
  });
  out({ kind: 'table', name: TABLE, key: ['id'], columns: { id: 'int4', grp: 'int4', bal: 'int4' } });
  const initRows: Row[] = [];
  for (let id = 1; id <= nAccounts; id++) {
    const grp = Math.floor((id - 1) / groupSize);
    const row = { id, grp, bal: 1000 };
    initRows.push(row);
    versions.set(id, [{ t: 0, wid: 'init', row }]);
    groupOf.set(id, grp);
    (groupKeys[grp] ??= []).push(id);
    live.push(id);
  }
  for (let i = 0; i < initRows.length; i += 1000)
    out({ kind: 'init', table: TABLE, rows: initRows.slice(i, i + 1000) });

  const active: (Txn | undefined)[] = Array.from({ length: nSessions }, () => undefined);
  const seqs: number[] = Array.from({ length: nSessions }, () => 0);

  const minSnapshot = (): number => {
    let m = clock;
    for (const a of active) if (a?.snapshot !== undefined && a.snapshot < m) m = a.snapshot;
    return m;
  };
  const latest = (id: number): Version | undefined => {
    const vs = versions.get(id);
    return vs?.[vs.length - 1];
  };
  const asOf = (id: number, snap: number): Version | undefined => {
    const vs = versions.get(id);
    if (!vs) return undefined;
    for (let i = vs.length - 1; i >= 0; i--) if (vs[i].t <= snap) return vs[i];
    return undefined;
  };
  /** What `a` sees of `id` now: its own write, else its snapshot (SI) or the latest committed version (RC). */
  const visible = (a: Txn, id: number): { wid: string; row: Row } | undefined => {
    const own = a.own.get(id);
    if (own) return own;
    return a.iso === 'SI' ? asOf(id, a.snapshot!) : latest(id);
  };
  const install = (id: number, v: Version) => {
    let vs = versions.get(id);
    if (!vs) versions.set(id, (vs = []));
    vs.push(v);
    if (vs.length > 6) {
      // Drop what no active snapshot can see: everything before the newest version at or below the oldest one.
      const m = minSnapshot();
      let keep = 0;
      for (let i = vs.length - 1; i >= 0; i--)
        if (vs[i].t <= m) {
          keep = i;
          break;
        }
      if (keep > 0) vs.splice(0, keep);
    }
  };
  /** The transaction `h` waits for now, if it waits (a waitsFor left from an earlier wait does not count). */
  const waitingOn = (h: Txn): Txn | undefined => {
    if (!h.waitsFor || active[h.session - 1] !== h) return undefined;
    const op = h.ops[h.pc];
    return op?.k === 'update' && locks.get(op.id) === h.waitsFor ? h.waitsFor : undefined;
  };
  const pickLive = () => live[int(0, live.length - 1)];

  const plan = (): { label: string; ops: Op[] } => {
    const r = rng();
    const a = pickLive();
    let b = pickLive();
    if (b === a) b = live[(live.indexOf(a) + 1) % live.length];
    const amount = int(1, 100);
    if (r < 0.4)
      return {
        label: 'Transfer',
        ops: [
          { k: 'select', id: a },
          { k: 'update', id: a, delta: -amount },
          { k: 'update', id: b, delta: amount },
        ],
      };
    if (r < 0.62)
      return {
        label: 'Deposit',
        ops: [
          { k: 'select', id: a },
          { k: 'update', id: a, delta: amount },
        ],
      };
    if (r < 0.8)
      return {
        label: 'Balance',
        ops: [
          { k: 'select', id: a },
          { k: 'select', id: b },
        ],
      };
    if (r < 0.88) return { label: 'Audit', ops: [{ k: 'group', grp: groupOf.get(a)! }] };
    if (r < 0.96) {
      const lo = Math.max(1, a - 1);
      return { label: 'Range', ops: [{ k: 'range', lo, hi: lo + 4 }] };
    }
    return {
      label: 'Open',
      ops: [
        { k: 'insert', grp: int(0, groupKeys.length - 1) },
        { k: 'update', id: a, delta: -amount },
      ],
    };
  };

  const end = (s: number, a: Txn, status: 'committed' | 'aborted', error?: { code: string; message: string }) => {
    if (status === 'committed' && a.own.size > 0) {
      clock++;
      for (const [id, w] of a.own) {
        const fresh = !versions.has(id) || versions.get(id)!.length === 0;
        install(id, { t: clock, wid: w.wid, row: w.row });
        if (fresh) live.push(id);
      }
    }
    for (const id of a.locks) locks.delete(id);
    const line: TxnLine = {
      kind: 'txn',
      id: a.id,
      session: a.session,
      seq: a.seq,
      iso: a.iso,
      status,
      label: a.label,
      begin: a.begin,
      end: ++tick,
      ...(error ? { error } : {}),
      events: a.events,
    };
    out(line);
    stats.transactions++;
    if (status === 'committed') stats.committed++;
    else stats.aborted++;
    active[s] = undefined;
  };

  /** Runs the next statement of `a`; false if it waits for a row lock. */
  const stepOp = (s: number, a: Txn): boolean => {
    const op = a.ops[a.pc];
    if (a.iso === 'SI' && a.snapshot === undefined) a.snapshot = clock;
    const wid = `${a.id}.${a.events.length + 1}`;
    switch (op.k) {
      case 'select': {
        const v = visible(a, op.id);
        a.events.push({
          op: 'select',
          table: TABLE,
          where: 'id = $1',
          params: [op.id],
          rows: v ? [{ wid: v.wid, row: v.row }] : [],
        });
        break;
      }
      case 'group':
      case 'range': {
        const ids = op.k === 'group' ? groupKeys[op.grp] : Array.from({ length: op.hi - op.lo }, (_, i) => op.lo + i);
        const rows: { wid: string; row: Row }[] = [];
        for (const id of ids) {
          const v = visible(a, id);
          if (v) rows.push({ wid: v.wid, row: v.row });
        }
        a.events.push(
          op.k === 'group'
            ? { op: 'select', table: TABLE, where: 'grp = $1', params: [op.grp], rows }
            : { op: 'select', table: TABLE, where: 'id >= $1 AND id < $2', params: [op.lo, op.hi], rows },
        );
        break;
      }
      case 'insert': {
        const id = nextId++;
        const row = { id, grp: op.grp, bal: 0 };
        groupOf.set(id, op.grp);
        groupKeys[op.grp].push(id);
        locks.set(id, a);
        a.locks.push(id);
        a.own.set(id, { wid, row });
        a.events.push({ op: 'insert', table: TABLE, wid, rows: [{ row }] });
        break;
      }
      case 'update': {
        const holder = locks.get(op.id);
        if (holder && holder !== a) {
          // Wait, unless waiting closes a cycle (deadlock: this transaction is the victim).
          for (let h: Txn | undefined = holder, n = 0; h && n <= nSessions; h = waitingOn(h), n++) {
            if (h === a) {
              a.waitsFor = undefined;
              end(s, a, 'aborted', { code: '40P01', message: 'deadlock detected' });
              return true;
            }
          }
          a.waitsFor = holder;
          return false;
        }
        a.waitsFor = undefined;
        const cur = a.own.get(op.id) ?? (a.iso === 'SI' ? asOf(op.id, a.snapshot!) : latest(op.id));
        if (!cur) {
          a.events.push({ op: 'update', table: TABLE, where: 'id = $1', params: [op.id], wid, rows: [] });
          break;
        }
        if (a.iso === 'SI' && !a.own.has(op.id) && latest(op.id)!.t > a.snapshot!) {
          end(s, a, 'aborted', { code: '40001', message: 'could not serialize access due to concurrent update' });
          return true;
        }
        if (!holder) {
          locks.set(op.id, a);
          a.locks.push(op.id);
        }
        const row = { ...cur.row, bal: (cur.row.bal as number) + op.delta };
        a.own.set(op.id, { wid, row });
        a.events.push({
          op: 'update',
          table: TABLE,
          where: 'id = $1',
          params: [op.id],
          wid,
          rows: [{ read: cur.wid, row }],
        });
        break;
      }
    }
    a.pc++;
    return true;
  };

  // ------------------------------------------------------------------------------------------- injection
  /** Sessions the injected transactions run in: idle regular ones (session order pins them among the others). */
  let idle: number[] = [];
  let nextIdle = 0;
  const takeSession = (): number => idle[nextIdle++ % idle.length] + 1;
  const unlockedLive = (): number => {
    for (;;) {
      const id = pickLive();
      if (!locks.has(id)) return id;
    }
  };
  /** One committed SI transaction of an extra session, at one instant; the caller installs its writes. */
  const atomic = (session: number, label: string, build: (id: string) => HistoryEvent[]) => {
    const seq = ++seqs[session - 1];
    const id = `s${session}.${seq}`;
    const events = build(id);
    tick++;
    out({ kind: 'txn', id, session, seq, iso: 'SI', status: 'committed', label, begin: tick, end: tick, events });
    stats.injected++;
  };
  const upd = (k: number, from: Version, wid: string, delta: number): [HistoryEvent, Row] => {
    const row = { ...from.row, bal: (from.row.bal as number) + delta };
    return [{ op: 'update', table: TABLE, where: 'id = $1', params: [k], wid, rows: [{ read: from.wid, row }] }, row];
  };
  const sel = (k: number, v: Version): HistoryEvent => ({
    op: 'select',
    table: TABLE,
    where: 'id = $1',
    params: [k],
    rows: [{ wid: v.wid, row: v.row }],
  });
  const injectAll = () => {
    for (const kind of inject) {
      if (kind === 'lost-update') {
        const k = unlockedLive();
        const v0 = latest(k)!;
        const sa = takeSession(),
          sb = takeSession();
        let rowA: Row = v0.row,
          rowB: Row = v0.row;
        // Both read v0 and overwrite it; the second becomes the latest.
        atomic(sa, 'LostUpdateA', (id) => {
          const [e, r] = upd(k, v0, `${id}.2`, 7);
          rowA = r;
          return [sel(k, v0), e];
        });
        const firstVersion = { t: clock + 1, wid: `s${sa}.${seqs[sa - 1]}.2`, row: rowA };
        atomic(sb, 'LostUpdateB', (id) => {
          const [e, r] = upd(k, v0, `${id}.2`, 11);
          rowB = r;
          return [sel(k, v0), e];
        });
        clock++;
        install(k, firstVersion);
        clock++;
        install(k, { t: clock, wid: `s${sb}.${seqs[sb - 1]}.2`, row: rowB });
      } else if (kind === 'stale-read') {
        const k = unlockedLive();
        const v0 = latest(k)!;
        const s = takeSession();
        let row: Row = v0.row;
        atomic(s, 'StaleWrite', (id) => {
          const [e, r] = upd(k, v0, `${id}.1`, 5);
          row = r;
          return [e];
        });
        clock++;
        install(k, { t: clock, wid: `s${s}.${seqs[s - 1]}.1`, row });
        atomic(s, 'StaleRead', () => [sel(k, v0)]);
      } else {
        const x = unlockedLive();
        let y = unlockedLive();
        while (y === x) y = unlockedLive();
        const vx = latest(x)!,
          vy = latest(y)!;
        const sw = takeSession(),
          sr = takeSession();
        let rx: Row = vx.row,
          ry: Row = vy.row;
        atomic(sw, 'FracturedWrite', (id) => {
          const [ex, a] = upd(x, vx, `${id}.1`, -3);
          const [ey, b] = upd(y, vy, `${id}.2`, 3);
          rx = a;
          ry = b;
          return [ex, ey];
        });
        const wid = `s${sw}.${seqs[sw - 1]}`;
        clock++;
        install(x, { t: clock, wid: `${wid}.1`, row: rx });
        install(y, { t: clock, wid: `${wid}.2`, row: ry });
        atomic(sr, 'FracturedRead', () => [sel(x, latest(x)!), sel(y, vy)]);
      }
    }
  };

  // ------------------------------------------------------------------------------------------- scheduler
  let started = 0;
  let injected = inject.length === 0;
  const runnable: number[] = [];
  for (;;) {
    // Halfway, sessions that end a transaction start no other until two are idle (or all): the injection runs there.
    const draining = !injected && started >= opts.txns / 2;
    if (draining) {
      idle = [];
      for (let s = 0; s < nSessions; s++) if (!active[s]) idle.push(s);
      if (idle.length >= Math.min(2, nSessions)) {
        injectAll();
        injected = true;
      }
    }
    runnable.length = 0;
    for (let s = 0; s < nSessions; s++) {
      const a = active[s];
      if (a ? waitingOn(a) === undefined : started < opts.txns && !(draining && !injected)) runnable.push(s);
    }
    if (runnable.length === 0) break;
    const s = runnable[int(0, runnable.length - 1)];
    tick++;
    let a = active[s];
    if (!a) {
      const seq = ++seqs[s];
      const { label, ops } = plan();
      const iso = opts.level === 'si' ? 'SI' : opts.level === 'rc' ? 'RC' : rng() < 0.5 ? 'SI' : 'RC';
      a = {
        id: `s${s + 1}.${seq}`,
        session: s + 1,
        seq,
        iso,
        label,
        ops,
        pc: 0,
        own: new Map(),
        locks: [],
        events: [],
        begin: tick,
      };
      active[s] = a;
      started++;
      continue;
    }
    if (a.pc < a.ops.length) {
      stepOp(s, a);
      continue;
    }
    if (rng() < rollback) end(s, a, 'aborted', { code: 'P0001', message: 'application rollback' });
    else end(s, a, 'committed');
  }
  if (!injected) {
    idle = Array.from({ length: nSessions }, (_, s) => s);
    injectAll();
  }
  out({ kind: 'end', transactions: stats.transactions + stats.injected });
  return stats;
}

/** Writes one history to `file` (through a temporary file, renamed at the end), buffered. */
export function writeScaleHistory(file: string, opts: ScaleOptions): ScaleStats {
  mkdirSync(dirname(file), { recursive: true });
  const tmp = `${file}.tmp-${process.pid}`;
  const fd = openSync(tmp, 'w');
  let buf: string[] = [];
  let size = 0;
  const flush = () => {
    if (buf.length) writeSync(fd, buf.join(''));
    buf = [];
    size = 0;
  };
  try {
    const stats = generateScale(opts, (line) => {
      const s = `${JSON.stringify(line)}\n`;
      buf.push(s);
      size += s.length;
      if (size > 1 << 20) flush();
    });
    flush();
    closeSync(fd);
    renameSync(tmp, file);
    return stats;
  } catch (e) {
    closeSync(fd);
    throw e;
  }
}

/** All lines of one history in memory (tests, small sizes). */
export function scaleHistoryLines(opts: ScaleOptions): Line[] {
  const lines: Line[] = [];
  generateScale(opts, (l) => lines.push(l));
  return lines;
}
