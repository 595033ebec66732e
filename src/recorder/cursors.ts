/**
 * Cursors a session declared over recorded SELECTs (`DECLARE name CURSOR FOR SELECT ...`: psycopg2's named
 * cursors, Django's and SQLAlchemy's server-side cursors; docs/recording.md, "Cursors"). The DECLARE runs the
 * rewritten SELECT, so every FETCH from the cursor brings the added columns: the session strips them (as for any
 * recorded statement) and hands the rows here.
 *
 * The read is recorded at the DECLARE, where the cursor's snapshot is taken, with the rows fetched so far: one
 * `select` event per table reference, made at the DECLARE (partial, no rows) and filled in place by each FETCH (in
 * place, so that the transaction's events keep their positions: savepoints hold indices into them). It is
 * `partial` until a FETCH FORWARD finds the end with no row skipped before (a MOVE, or a FETCH BACKWARD, ABSOLUTE,
 * RELATIVE or of a count of 0 or below, leaves it partial: rows may have been passed over).
 *
 * A cursor ends with CLOSE, with its transaction (a WITH HOLD cursor outlives a commit: its FETCHes after it are
 * stripped, not recorded, the transaction's line being written), with a ROLLBACK TO a savepoint set before its
 * DECLARE, and with DISCARD ALL; a DECLARE of the same name that the recorder passes through replaces it. (A cursor
 * moved or closed inside a function is not seen: FETCH and MOVE in the application's own statements are.)
 */
import type { HistoryEvent, SelectEvent } from '../history/format.js';
import { type EventContext, eventsFor, type TextRow } from './events.js';
import type { CursorStep, SelectPlan } from './plan.js';

/** What the cursors need of the transaction a cursor was declared in. */
export interface CursorTxn {
  events: HistoryEvent[];
  closed: boolean;
}

export interface CursorRead {
  /** The DECLARE's plan: the added columns and the reads of its SELECT. */
  readonly plan: SelectPlan & { declare: NonNullable<SelectPlan['declare']> };
  readonly txn: CursorTxn;
  readonly ctx: EventContext;
  /** The index of its first event in the transaction's events. */
  readonly at: number;
  /** Its events in the transaction (filled in place). */
  readonly events: SelectEvent[];
  /** The added columns of every row fetched so far. */
  readonly rows: TextRow[];
  /** A step did not go on from the rows read: rows may have been passed over. */
  skipped: boolean;
  /** A FETCH FORWARD found the end. */
  ended: boolean;
}

export class SessionCursors {
  private readonly open = new Map<string, CursorRead>();

  /** After a successful DECLARE: its read, partial with no rows yet, in the transaction's events. A FOR UPDATE/SHARE
   *  cursor's read stays partial: its rows are locked (and, at READ COMMITTED, re-checked) as they are fetched, so
   *  a row the transaction itself changed after the DECLARE is left out, as are rows others changed meanwhile. */
  declared(plan: CursorRead['plan'], txn: CursorTxn, ctx: EventContext): void {
    const events: SelectEvent[] = plan.reads.map((r) => ({
      op: 'select',
      table: r.table.name,
      partial: true,
      rows: [],
    }));
    const at = txn.events.length;
    const c: CursorRead = { plan, txn, ctx, at, events, rows: [], skipped: plan.locks === true, ended: false };
    txn.events.push(...events);
    this.open.set(plan.declare.name, c);
  }

  /** The recorded cursor a FETCH or MOVE names, if any. */
  get(name: string): CursorRead | undefined {
    return this.open.get(name);
  }

  /** After a successful FETCH or MOVE (`rows`: the added columns of the rows it returned; undefined: how far the
   *  cursor went is not known, e.g. a FETCH run in parts). */
  fetched(c: CursorRead, step: CursorStep & { op: 'fetch' }, rows: TextRow[], known = true): void {
    if (c.txn.closed) return; // a WITH HOLD cursor after its transaction: the read is written
    if (step.forward === undefined || !known) c.skipped = true;
    else if (rows.length < step.forward) c.ended = true;
    c.rows.push(...rows);
    const next = eventsFor(c.plan, c.rows, c.ctx) as SelectEvent[];
    // in the order of the plan's reads; with no row, a subquery's read (carried by the result rows) has no event and
    // keeps its placeholder
    let j = 0;
    c.plan.reads.forEach((r, i) => {
      if (r.needsRow && c.rows.length === 0) return;
      const e = next[j++];
      if (e === undefined) throw new Error('isocheck bug: a cursor read has fewer events than its plan has reads');
      const old = c.events[i] as unknown as Record<string, unknown>;
      for (const k of Object.keys(old)) delete old[k];
      Object.assign(old, e);
      if (c.skipped || !c.ended) c.events[i].partial = true;
    });
  }

  /** CLOSE name, or CLOSE ALL / DISCARD ALL (no name); or a DECLARE of the name passed through. */
  closed(name?: string): void {
    if (name === undefined) this.open.clear();
    else this.open.delete(name);
  }

  /** The transaction ended: its cursors end, but a WITH HOLD one's that it committed. */
  transactionEnded(txn: CursorTxn, committed: boolean): void {
    for (const [name, c] of this.open) if (c.txn === txn && !(committed && c.plan.declare.hold)) this.open.delete(name);
  }

  /** ROLLBACK TO a savepoint set when the transaction had `events` events: the cursors declared since end. */
  rolledBack(txn: CursorTxn, events: number): void {
    for (const [name, c] of this.open) if (c.txn === txn && c.at >= events) this.open.delete(name);
  }
}
