/**
 * Sessions that span connections (issue 19): one history session is one logical client, whatever connections
 * (and servers) serve it. An application behind a read/write split sends its read-only transactions to a replica
 * and the rest to the primary; recorded one session per connection, the reads on the replica would be another
 * session's, and a read missing the client's own committed write (read-your-writes) would go unseen.
 *
 *   recorder.namedSession('alice')            -> NamedSession (one history session, numbered on first use)
 *     .client(raw, 'primary')                 -> RecordingClient: every statement on `raw`
 *     .router({ primary, replicas })          -> RoutingClient: picks the connection per transaction
 *
 * Each transaction records the server that served it (`node` in the history: the name given with the
 * connection), which explanations show.
 *
 * Decisions:
 * - Statements of one session are sent one at a time (await each, as a logical client does): the router picks
 *   the connection when query() is called.
 * - A transaction stays on the connection it began on; the session moves only between transactions (an attempt
 *   to move inside one is refused).
 * - RoutingClient: a transaction begun READ ONLY (`BEGIN READ ONLY`, `START TRANSACTION ... READ ONLY`), or one
 *   announced with readOnly(), goes to a replica (round robin over them, per transaction); every other
 *   transaction and every statement outside a transaction block goes to the primary. That is what a read/write
 *   splitting application or proxy does (pgpool-II sends read-only work to standbys the same way).
 * - `hotStandbyLevel`: SERIALIZABLE is refused on a hot standby ("cannot use serializable mode in a hot
 *   standby"); with `hotStandbyLevel: 'REPEATABLE READ'` a read-only `BEGIN ... SERIALIZABLE` routed to a replica
 *   is sent as REPEATABLE READ, and recorded at the level it ran at (SI), never the one asked for.
 */
import type pg from 'pg';
import { RecordingClient, type Session, type Via } from './client.js';

/** What a named session needs of the recorder. */
export interface SpanningOwner {
  /** A new session (numbered now) whose first connection is `raw`, spanning connections. */
  spanningSession(raw: pg.ClientBase): Session;
}

/** A connection and the name of its server (`node` of the transactions it serves). */
export interface ServerConnection {
  client: pg.ClientBase;
  name: string;
}

export interface RouterOptions {
  primary: ServerConnection;
  replicas: ServerConnection[];
  /** Sends read-only SERIALIZABLE transactions routed to a replica at this level instead (hot standbys refuse
   *  SERIALIZABLE). Default: sent as written. */
  hotStandbyLevel?: 'REPEATABLE READ';
}

/** One history session served by any number of connections. */
export class NamedSession {
  private session: Session | undefined;

  constructor(
    private readonly owner: SpanningOwner,
    readonly id: string,
  ) {}

  /** The session's number in the history (after its first client). */
  get number(): number | undefined {
    return this.session?.number;
  }

  /** The underlying session, created with its first connection. @internal */
  sessionOn(raw: pg.ClientBase): Session {
    this.session ??= this.owner.spanningSession(raw);
    return this.session;
  }

  /** A recording client whose statements run on `raw` (named `node` in the history), as this session's. */
  client(raw: pg.ClientBase, node?: string): RecordingClient {
    const via: Via = { raw, ...(node !== undefined ? { node } : {}) };
    return new RecordingClient(this.sessionOn(raw), undefined, () => via);
  }

  /** A client that sends each transaction to the primary, or (read-only ones) to a replica. */
  router(options: RouterOptions): RoutingClient {
    return new RoutingClient(this, options);
  }
}

const BEGIN = /^\s*(?:BEGIN|START\s+TRANSACTION)\b/i;
const READ_ONLY = /\bREAD\s+ONLY\b/i;
const SERIALIZABLE = /\bISOLATION\s+LEVEL\s+SERIALIZABLE\b/i;

/** Routes each transaction of one named session: read-only ones to a replica, the others to the primary. */
export class RoutingClient {
  private next = 0;
  private current: ServerConnection;
  private hint = false;
  private readonly session: Session;
  private readonly recording: RecordingClient;

  constructor(
    readonly named: NamedSession,
    private readonly options: RouterOptions,
  ) {
    this.current = options.primary;
    this.session = named.sessionOn(options.primary.client);
    this.recording = new RecordingClient(this.session, undefined, () => ({
      raw: this.current.client,
      node: this.current.name,
    }));
  }

  /** The next transaction is read-only: it goes to a replica even if its BEGIN does not say READ ONLY. */
  readOnly(): this {
    this.hint = true;
    return this;
  }

  /** The server the last statement was sent to. */
  get node(): string {
    return this.current.name;
  }

  label(name: string): this {
    this.recording.label(name);
    return this;
  }

  declareLevel(level: Parameters<RecordingClient['declareLevel']>[0]): this {
    this.recording.declareLevel(level);
    return this;
  }

  // biome-ignore lint/suspicious/noExplicitAny: the default pg's own query() has, so this stays a drop-in pg client
  query<R extends pg.QueryResultRow = any>(text: string, values?: unknown[]): Promise<pg.QueryResult<R>> {
    if (!this.session.inTransaction) {
      const begins = BEGIN.test(text);
      const toReplica = this.options.replicas.length > 0 && (this.hint || (begins && READ_ONLY.test(text)));
      this.hint = false;
      if (toReplica) {
        this.current = this.options.replicas[this.next++ % this.options.replicas.length];
        if (begins && this.options.hotStandbyLevel && SERIALIZABLE.test(text))
          text = text.replace(SERIALIZABLE, `ISOLATION LEVEL ${this.options.hotStandbyLevel}`);
      } else this.current = this.options.primary;
    }
    return this.recording.query<R>(text, values);
  }
}
