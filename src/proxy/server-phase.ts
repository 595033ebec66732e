/**
 * At which of its messages the server raised an error (docs/recording.md, "Through isocheck proxy"): the proxy
 * answers a client's Parse and Bind itself and runs the statement later (connection.ts), so an error PostgreSQL
 * raises while parsing (an unknown column, a transaction already aborted) or binding (a parameter that is not an
 * integer, a division folded into the plan at Bind) must take the place of the ParseComplete or BindComplete it
 * held back, where a direct connection sends it.
 *
 * It watches the proxy's server connection (pg's Connection): the Parse and Bind it sends, the ParseComplete and
 * BindComplete it receives, and where the ErrorResponse comes among them. A statement run with the simple
 * protocol (pg sends a Query when there are no parameters) has no phases: its errors are `unknown`.
 *
 * It also keeps what the server sent of the exchange before the error, for what the client gets before it as a
 * direct connection would: the RowDescription or NoData (a portal the proxy runs at the client's Describe) and the
 * rows (a SELECT that fails after some), and how many rows have come (notices go among them).
 */
import type { EventEmitter } from 'node:events';
import type { Column } from './backend.js';

export type Phase = 'parse' | 'bind' | 'execute' | 'unknown';

/** A column of the server's RowDescription, as pg-protocol parses it (backend.ts's Column, with no format yet). */
export type DescribedField = Omit<Column, 'format'>;

/** What of pg's Connection this watches: its events, and parse/bind, wrapped. */
export interface PhaseConnection extends EventEmitter {
  parse(q: unknown): void;
  bind(q: unknown): void;
}

export class ServerPhase {
  #parseSent = false;
  #bindSent = false;
  #parsed = false;
  #bound = false;
  /** The server's RowDescription (its columns) or NoData (null) in this exchange, before any error. */
  #described: DescribedField[] | null | undefined;
  /** Where the last error came (set at the ErrorResponse; cleared by `expect`). */
  #last: Phase = 'unknown';
  #lastDescribed: DescribedField[] | null | undefined;
  /** The rows (text values) the server sent in this exchange, and those it sent before the last error. */
  #rows: (string | null)[][] = [];
  #lastRows: (string | null)[][] = [];
  /** The CommandComplete's tag in this exchange (a statement that then failed in committing its own transaction,
   *  at the Sync: a deferred constraint), and the one before the last error. */
  #completed: string | undefined;
  #lastCompleted: string | undefined;

  constructor(con: PhaseConnection) {
    const parse = con.parse.bind(con);
    con.parse = (q) => {
      this.#parseSent = true;
      parse(q);
    };
    const bind = con.bind.bind(con);
    con.bind = (q) => {
      this.#bindSent = true;
      bind(q);
    };
    con.prependListener('parseComplete', () => {
      this.#parsed = true;
    });
    con.prependListener('bindComplete', () => {
      this.#bound = true;
    });
    con.prependListener('rowDescription', (msg: { fields: DescribedField[] }) => {
      this.#described = msg.fields;
    });
    con.prependListener('noData', () => {
      this.#described = null;
    });
    con.prependListener('dataRow', (msg: { fields: (string | null)[] }) => {
      this.#rows.push(msg.fields);
    });
    con.prependListener('commandComplete', (msg: { text: string }) => {
      this.#completed = msg.text;
    });
    con.prependListener('errorMessage', () => {
      this.#lastDescribed = this.#described;
      this.#lastRows = this.#rows;
      this.#lastCompleted = this.#completed;
      this.#last =
        this.#parseSent && !this.#parsed ? 'parse' : !this.#bindSent ? 'unknown' : this.#bound ? 'execute' : 'bind';
    });
    // the end of one exchange (a Sync or a Query answered): the next starts with nothing sent. Each listener runs
    // before pg's own, which at ReadyForQuery sends the next query queued (its Parse and Bind counted above)
    con.prependListener('readyForQuery', () => {
      this.#parseSent = this.#bindSent = this.#parsed = this.#bound = false;
      this.#described = undefined;
      this.#rows = [];
      this.#completed = undefined;
    });
  }

  /** Before a statement is sent: forget where an earlier error came. `columns`: the next part of a portal the
   *  server described in its first (an Execute alone: what it sends comes from running it). */
  expect(columns?: DescribedField[]): void {
    this.#last = 'unknown';
    this.#lastDescribed = undefined;
    this.#lastRows = [];
    this.#rows = [];
    this.#completed = undefined;
    this.#lastCompleted = undefined;
    if (columns) this.#described = columns;
  }

  /** The server has completed the statement (CommandComplete) in this exchange: a notice now is raised after it
   *  (in committing, at the Sync). */
  get completed(): boolean {
    return this.#completed !== undefined;
  }

  /** The CommandComplete's tag the server sent before the last error, if it sent one (the error came in
   *  committing the statement's own transaction, at the Sync). */
  get lastCompleted(): string | undefined {
    return this.#lastCompleted;
  }

  /** Where the error of the statement sent since `expect` came. */
  get last(): Phase {
    return this.#last;
  }

  /** The rows the server has sent in this exchange. */
  get rowCount(): number {
    return this.#rows.length;
  }

  /** The rows the server sent before the last error (a statement that fails after some rows). */
  get lastRows(): (string | null)[][] {
    return this.#lastRows;
  }

  /** The server has described the statement of this exchange (RowDescription or NoData came): what it sends
   *  now comes from running it. */
  get described(): boolean {
    return this.#described !== undefined;
  }

  /** What the server described of the statement whose error came last (its portal, as pg asks: Describe before
   *  Execute): its columns, null for NoData, undefined when no description came before the error. */
  get lastDescribed(): DescribedField[] | null | undefined {
    return this.#lastDescribed;
  }
}
