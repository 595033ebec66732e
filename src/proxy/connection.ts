/**
 * One client connection of the proxy: it terminates the client's protocol and runs each statement through its
 * own server connection wrapped by the Recorder (one history session per client connection, or one per name for
 * the connections whose application_name is `isocheck:NAME`: the Recorder's namedSession).
 *
 *   startup (SSLRequest: TLS when the proxy has a certificate; trust, or MD5 with the proxy's password) -> pg.Client
 *   to the server -> AuthenticationOk, the server's ParameterStatus, BackendKeyData, ReadyForQuery
 *   Query "a; b" -> split (libpg-query) -> each through RecordingClient.query (rewritten, recorded; the app's columns
 *     only) -> RowDescription, DataRow (text), CommandComplete (the server's tag) | ErrorResponse -> ReadyForQuery
 *   Parse/Bind/Describe/Execute/Close/Sync/Flush -> statements and portals kept here; a portal runs (recorded) at
 *     its Describe or first Execute; an Execute with a row limit of a SELECT fetches it from a server portal in
 *     parts as the client fetches (portal-query.ts), another statement's rows are handed out in parts
 *
 * Decisions:
 * - Results reach the client in text format, or in binary for the types formats.ts converts (else an error).
 * - A multi-statement Query outside a transaction block runs as one transaction, as PostgreSQL's implicit one
 *   (BEGIN ... COMMIT sent by the proxy, recorded as one transaction); with BEGIN/COMMIT inside, as written. So do
 *   several Executes before one Sync when they arrived together (beginImplicit).
 * - Describe of a statement asks the server about the application's own text (ParameterDescription and
 *   RowDescription as the server gives them). Describe of a portal runs it when its Execute is already received
 *   (Bind/Describe/Execute/Sync sent together, as drivers do); otherwise the server describes its text and
 *   nothing runs until the Execute (a portal described and closed unexecuted changes nothing).
 * - ParseComplete, BindComplete and CloseComplete are held until something after them is sent (Ack): an error the
 *   server raises at the Parse or Bind of the statement when it runs takes the place of the held answer
 *   (server-phase.ts tells where it came; a planning error only while the client's statement would be custom
 *   planned), as a direct connection answers it; a Parse then Sync with nothing run is parsed by the server at
 *   the Sync for the same reason. A client's Parse/Bind/Execute runs in the extended protocol, parameters or not.
 * - ReadyForQuery's status is the server's, as the proxy's connection last saw it.
 * - A client that disconnects: what it sent runs to its end, then the server connection closes; a transaction
 *   left open is recorded aborted (the server rolls it back). A server connection lost during COMMIT: unknown.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type net from 'node:net';
import tls from 'node:tls';
import pg from 'pg';
import { parseSync } from 'libpg-query';
import type { Recorder } from '../recorder/recorder.js';
import type { Plan, TxnControl } from '../recorder/plan.js';
import { isAddedColumn } from '../recorder/rewrite-select.js';
import { codePoints, copyOutText, copyPosition } from '../recorder/rewrite-copy.js';
import type { CopyOut } from '../recorder/plan.js';
import { type QueryOptions, RecordingClient, type Session } from '../recorder/client.js';
import { recordingOf } from '../recorder/driver.js';
import type { FetchedResult } from '../recorder/portal-query.js';
import type { NamedSession } from '../recorder/sessions.js';
import { RAW_TYPES, type TableInfo } from '../recorder/catalog.js';
import { UnsupportedStatementError } from '../recorder/errors.js';
import { sqlStateOf } from '../recorder/sqlstate.js';
import { FrontendReader, type FrontendMessage, type StartupPacket } from './frontend.js';
import * as B from './backend.js';
import {
  binaryRefusal,
  binaryResultSupported,
  BinaryFormatError,
  BinaryParamError,
  decodeBinaryParam,
  encodeBinaryResult,
  textualType,
  type TextStyle,
  type TypeCodecs,
} from './formats.js';
import { mapPosition } from './positions.js';
import { encodingInOptions, encodingRefused, encodingServed, invalidUtf8 } from './encoding.js';
import { type DescribedField, ServerPhase, type PhaseConnection } from './server-phase.js';
import { splitStatements } from './split.js';
import { takesSnapshot, withoutLeadingComments } from './statement-text.js';
import {
  copyFacts,
  generatedListed,
  insertStaged,
  type RecordedCopy,
  recordedCopyFrom,
  stagedMessage,
  stagingName,
  stagingTable,
} from './copy-from.js';

/** What a connection needs of the proxy that accepted it. */
export interface ProxyContext {
  recorder: Recorder;
  /** A new server connection for a client (its startup parameters: application_name, options, ...): a client of
   *  the Recorder's driver, whose query() records. */
  connectServer(params: Record<string, string>): Promise<{ raw: pg.Client; parameters: Map<string, string> }>;
  /** Sends a CancelRequest to the server for this server connection. */
  cancel(raw: pg.Client): void;
  /** The connection with these BackendKeyData values (for a CancelRequest). */
  byKey(pid: number, secret: number): ProxyConnection | undefined;
  /** A statement the recorder cannot record: refused with its error (SQLSTATE 0A000), or run unrecorded with a
   *  warning (the history may then be wrong about the rows it wrote). */
  onUnsupported: 'refuse' | 'pass';
  /** The password clients must give (MD5 authentication); undefined: trust. */
  password?: string;
  /** TLS for clients that ask for it (SSLRequest answered 'S'); undefined: they are told 'N'. */
  tls?: tls.SecureContext;
  opened(c: ProxyConnection): void;
  closed(c: ProxyConnection): void;
  /** The codecs of the types clients use in binary, the database's own found in its catalog (user-types.ts). */
  types: TypeCodecs;
  /** Reads these types from the catalog into `types` (never fails: a type it cannot read stays unknown). */
  resolveTypes(oids: number[]): Promise<void>;
}

interface Prepared {
  text: string;
  paramTypes: number[];
  /** Binds of it so far (PostgreSQL plans the first CUSTOM_PLANS with their parameters' values). */
  binds?: number;
  /** The server has parsed its text (run or described): its Parse cannot fail there any more. */
  checked?: boolean;
  /** The server's description of its text (parameter types; null columns: it returns no rows), once asked for:
   *  PostgreSQL describes a statement that returns no rows in a failed transaction too, which the proxy then cannot
   *  ask the server for. */
  described?: { params: number[]; columns: unknown[] | null };
  /** Parsed by the client in a transaction that had failed already (the server refuses its Parse there). */
  inFailed?: boolean;
  /** The number of its parameters, once known (described, or run with that many values). */
  paramCount?: number;
}

/** A statement's result as the client sees it. */
interface Outcome {
  columns: B.Column[];
  rows: (string | null)[][];
  tag: string;
  /** A RowDescription is sent (a query that returns rows, maybe zero columns). */
  returnsRows: boolean;
  /** It failed after these rows: the error comes after them, in place of the CommandComplete (or after it, when
   *  `completed`: the server completed it and then failed to commit its own transaction, at the Sync). */
  error?: unknown;
  completed?: boolean;
  /** Notices the server raised in running it, each with the number of rows it had sent before (sent among the
   *  rows at the same place), and how many of them are sent. */
  notices?: HeldNotice[];
  noticesSent?: number;
  /** Run as a server portal fetched as the client fetches (an Execute with a row limit: fetchable), suspended on
   *  the server: its next part, when the client has had every row fetched so far. */
  server?: FetchedResult;
  /** That portal's name on the server. */
  serverName?: string;
}

/** A WARNING the server would send (the proxy's own: no source fields). */
function warningNotice(message: string, code = '25P01'): HeldNotice {
  return { row: 0, message: B.noticeResponse({ S: 'WARNING', V: 'WARNING', C: code, M: message }) };
}

/** PostgreSQL's warning for SET TRANSACTION, SET LOCAL or SET CONSTRAINTS run outside a transaction block
 *  (WarnNoTransactionBlock), or undefined for another statement. */
function blockOnlyWarning(text: string): HeldNotice | undefined {
  const words = withoutLeadingComments(text).replace(/\/\*[\s\S]*?\*\/|--[^\n]*/g, ' ');
  // SET [LOCAL | SESSION] TRANSACTION and SET CONSTRAINTS warn by their name, another SET LOCAL as SET LOCAL
  const named = /^set\s+(?:(?:local|session)\s+)?(transaction|constraints)\b/i.exec(words)?.[1];
  const what = named ? named.toUpperCase() : /^set\s+local\b/i.test(words) ? 'LOCAL' : undefined;
  return what ? warningNotice(`SET ${what} can only be used in transaction blocks`) : undefined;
}

/** A text that may be SAVEPOINT, ROLLBACK TO or RELEASE (whose word SAVEPOINT is optional; controlOf tells). */
const SAVEPOINT_WORD = /savepoint|rollback|release/i;

/** A statement that returns rows and may run in a block (fetchable when the recorder passes it through). */
const RETURNS_ROWS = /^\(*\s*(select|with|values|table|show|explain)\b/i;

/** Statements whose first place in a pipeline (not yet in PostgreSQL's implicit transaction) the proxy gives them
 *  by running them outside its block: LOCK and DECLARE without HOLD, which PostgreSQL refuses outside a block
 *  (RequireTransactionBlock), and VACUUM and the like, which it runs only there (PreventInTransactionBlock). */
const OWN_TRANSACTION = new RegExp(
  '^(?:lock\\b|declare\\b(?![\\s\\S]*\\bwith\\s+hold\\b)|vacuum\\b|cluster\\b|' +
    '(?:create|drop)\\s+(?:database|tablespace)\\b|alter\\s+system\\b|' +
    'create\\s+(?:unique\\s+)?index\\s+concurrently\\b|drop\\s+index\\s+concurrently\\b|' +
    'reindex\\b[\\s\\S]*\\bconcurrently\\b)',
  'i',
);

/** COMMIT or ROLLBACK (chained or not): the transaction ends, and every portal with it. */
const endsBlock = (c: TxnControl | undefined): boolean => c?.kind === 'commit' || c?.kind === 'rollback';

/** PostgreSQL's message for a statement in a failed transaction (25P02). */
const ABORTED_MESSAGE = 'current transaction is aborted, commands ignored until end of transaction block';

/** A statement PostgreSQL runs as one SELECT portal (PORTAL_ONE_SELECT), by its first word. */
const SELECT_TEXT = /^\s*\(*\s*(select|values|table)\b/i;

/** The outcome of a statement that returns no rows, its tag to be filled in. */
const NO_ROWS: Outcome = { columns: [], rows: [], tag: '', returnsRows: false };

interface HeldNotice {
  row: number;
  /** Raised after the server's CommandComplete (in committing, at the Sync): sent after the proxy's. */
  after?: boolean;
  message: Buffer;
}

interface Portal {
  /** The client's name for it ('' the unnamed portal). */
  name: string;
  /** The savepoints made on the server when it was bound (ProxyConnection.savepoints). */
  savepoints: number;
  /** The statement it was bound from. */
  statement: Prepared;
  /** A direct connection would plan it with its parameters' values at Bind (a custom plan): an error in planning
   *  (`1 / $1` with 0, folded) comes at the Bind there, as at the proxy's own unnamed Bind. */
  customPlan: boolean;
  /** Ran to its end and returns no rows: PostgreSQL refuses to run it again (55000). */
  done?: boolean;
  text: string;
  /** The parameter types the client declared in its Parse (0: unspecified). */
  paramTypes: number[];
  values: unknown[];
  resultFormats: number[];
  outcome?: Outcome;
  sent: number;
}

/**
 * An answer the proxy gives a message itself (ParseComplete, BindComplete, CloseComplete), held until something
 * after it is sent: an error the server raises at the Parse or Bind it answers, when the statement runs, takes its
 * place (and the answers after it, to messages the server would have skipped, are dropped).
 */
interface Ack {
  message: Buffer;
  /** The statement or portal its message made (a Parse's, a Bind's). */
  made?: Prepared | Portal;
  /** Puts back what its message changed, for a message the server skipped (after an error, up to Sync). */
  undo?: () => void;
}

interface CopyResponse {
  binary: boolean;
  columnTypes: number[];
}

/** What the COPY relay uses of pg's connection. */
interface CopyConnection extends NodeJS.EventEmitter {
  query(text: string): void;
  sendCopyFromChunk(chunk: Buffer): void;
  endCopyFrom(): void;
  sendCopyFail(message: string): void;
}

const OUT_HIGH_WATER = 64 * 1024;
/** The recorder's wid as the last value of a row in an error's DETAIL ("Failing row contains (1, null, s4.1.1)."). */
const WID_LAST = /, s\d+(?:\.\d+)+\)\.$/;
/** A statement that fails, run by the proxy to fail the server's transaction (failServerTransaction). */
const FAIL_TRANSACTION =
  "DO $$ BEGIN RAISE EXCEPTION 'isocheck proxy: the transaction failed at an error of the proxy'; END $$";

/** A column of the server's RowDescription as the client gets it (text format until the portal says). */
const columnOf = (f: DescribedField): B.Column => ({
  name: f.name,
  tableID: f.tableID,
  columnID: f.columnID,
  dataTypeID: f.dataTypeID,
  dataTypeSize: f.dataTypeSize,
  dataTypeModifier: f.dataTypeModifier,
  format: 0,
});

/** PostgreSQL's message for a Bind with the wrong number of parameters (postgres.c, exec_bind_message). */
const BIND_COUNT = /^bind message supplies (\d+) parameters, but prepared statement "[^"]*" requires (\d+)$/;

/** PostgreSQL makes custom plans for the first 5 Binds of a prepared statement (plancache.c, choose_custom_plan),
 *  then may switch to a generic one. */
const CUSTOM_PLANS = 5;
/** The context PostgreSQL gives an error in converting a Bind's parameter (postgres.c, bind_param_error_callback):
 *  raised at the Bind whatever the plan. */
const PARAMETER_CONTEXT = /portal parameter \$\d+|portal "[^"]*" parameter \$\d+/;
/** A Query that may hold a COPY (its CopyData may arrive before the COPY begins). */
const COPY_WORD = /copy/i;

/** The columns the client gets of a statement the recorder passes through: all, but for a FETCH from a cursor the
 *  recorder declared over a recorded SELECT, whose added columns come last under the recorder's own names (a FETCH
 *  from another cursor has none of them). */
function withoutAdded<C extends { name: string }>(plan: Plan | undefined, columns: C[]): C[] {
  if (plan?.kind !== 'passthrough' || plan.cursor?.op !== 'fetch') return columns;
  return withoutAddedColumns(columns);
}

/** Columns without the recorder's added ones, which come last under its own names. */
function withoutAddedColumns<C extends { name: string }>(columns: C[]): C[] {
  let n = columns.length;
  while (n > 0 && isAddedColumn(columns[n - 1].name)) n--;
  return columns.slice(0, n);
}
/** A Bind's parameter's format (0 text, 1 binary): one code for all, one each, or none (text). */
const paramFormat = (m: FrontendMessage & { type: 'B' }, i: number): number =>
  m.paramFormats.length === 0 ? 0 : m.paramFormats.length === 1 ? m.paramFormats[0] : m.paramFormats[i];
/** A parameter's type: declared in the Parse, else as the server described the statement (pgx describes, then binds
 *  in binary); 0: unknown. */
const paramType = (st: Prepared, i: number): number => st.paramTypes[i] || (st.described?.params[i] ?? 0);
const DEALLOCATE_WORD = /deallocate/i;
/** A statement that may create, alter or drop a type (user-types.ts). */
const TYPE_DDL = /\b(create|alter|drop)\b[\s\S]*\b(type|domain|schema|extension)\b/i;
/** Named statements the proxy prepares on one server connection for statements with declared parameter types. */
const TYPED_MAX = 1000;
/** `application_name=isocheck:NAME`: the connection's statements are those of the history session named NAME. */
const SESSION_PREFIX = 'isocheck:';
let nextPid = 1;

/** An error the proxy itself raises, sent as an ErrorResponse. */
class ProxyError extends Error {
  constructor(
    readonly code: string,
    message: string,
    /** The error's context (PostgreSQL's `W` field), if any. */
    readonly where?: string,
    /** Its detail (`D`), if any. */
    readonly detail?: string,
  ) {
    super(message);
  }
}

/** An error about a server portal of the proxy's own (fetchable) names the client's portal instead, as a direct
 *  connection's would: in its message (34000 "portal ... does not exist") and its context (a parameter's error). */
function clientPortalNamed(e: unknown, serverName: string, clientName: string): void {
  const err = e as { message?: unknown; where?: unknown };
  if (!err || typeof err !== 'object') return;
  const quoted = `portal "${serverName}"`;
  if (typeof err.message === 'string') err.message = err.message.replace(quoted, `portal "${clientName}"`);
  if (typeof err.where === 'string')
    err.where = err.where.replace(quoted, clientName === '' ? 'unnamed portal' : `portal "${clientName}"`);
}

/** An error the server sent (pg's DatabaseError: a SQLSTATE and a severity), not one of the proxy or the recorder. */
const serverError = (e: unknown): boolean => {
  const err = e as { code?: unknown; severity?: unknown };
  return sqlStateOf(e) !== undefined && typeof err.severity === 'string' && !(e instanceof ProxyError);
};

/** PostgreSQL's error for a statement it does not have (postgres.c names the unnamed one so). */
const noStatement = (name: string): ProxyError =>
  new ProxyError(
    '26000',
    name === '' ? 'unnamed prepared statement does not exist' : `prepared statement "${name}" does not exist`,
  );

export class ProxyConnection {
  /** The proxy's own number for this connection (names of its statements; the pid until the server's is known). */
  private readonly own = 0x10000 + nextPid++;
  /** The pid clients know this connection by (BackendKeyData, a notification's sender): the server backend's, so
   *  that it is also what pg_backend_pid() returns; the proxy's own number before it is connected. */
  get pid(): number {
    return this.serverPid ?? this.own;
  }
  readonly secret = (Math.random() * 0x7fffffff) | 0;
  private readonly reader: FrontendReader;
  /** What is left to do, in order (startup packets, messages, the end): run by drain(). */
  private readonly steps: (() => Promise<void> | void)[] = [];
  private draining = false;
  /** A message has come since the last ReadyForQuery: a notification waits for the next one. */
  private exchanging = false;
  /** Notifications waiting for that ReadyForQuery. */
  private notifications: Buffer[] = [];
  /** The server reports changed settings just before ReadyForQuery (PostgreSQL 14 on). */
  private reportsAtReady = false;
  /** Settings the server reported in this exchange, in the order they first changed: reported to the client before
   *  the next ReadyForQuery. */
  private statusHeld = new Map<string, string>();
  /** The value of each setting last reported to the client. */
  private readonly reported = new Map<string, string>();
  private raw: pg.Client | undefined;
  /** The same connection: its query() records (the Recorder's driver client). */
  private client: pg.Client | undefined;
  private readonly statements = new Map<string, Prepared>();
  private readonly portals = new Map<string, Portal>();
  private skipToSync = false;
  /** The client's transaction has taken a snapshot on a direct connection (PostgreSQL's FirstSnapshotSet: a Parse or
   *  Bind of a query, a Bind with parameters), so that a BEGIN with transaction modes or SET TRANSACTION after it
   *  fails there (25001) even when the proxy, which answers Parse and Bind itself, has run nothing yet. */
  private snapshot = false;
  /** The status of the last ReadyForQuery: 'E', the transaction failed before this exchange. */
  private readyStatus = 'I';
  /** The session's DateStyle and IntervalStyle (the server's ParameterStatus): how binary results are read. */
  private readonly style: TextStyle = { dateStyle: 'ISO, MDY', intervalStyle: 'postgres' };
  /** Notices, and an error, that a direct connection sends at the next Sync (deferToSync). */
  private atSync: Buffer[] = [];
  private errorAtSync: unknown;
  /** Messages received and not yet handled (for the lookahead of an implicit transaction before Sync). */
  private readonly pending: FrontendMessage[] = [];
  /** The proxy began a transaction for several Executes before one Sync (PostgreSQL's implicit transaction). */
  private implicit = false;
  private tags: string[] = [];
  private out: Buffer[] = [];
  private outBytes = 0;
  /** Answers held back (Ack), in order, ahead of `out`'s next message. */
  private acks: Ack[] = [];
  /** Where the server raised its errors (set when the server connection opens). */
  private phase: ServerPhase | undefined;
  /** The proxy raised its own error in a transaction: failServerTransaction at the Sync. */
  private failPending = false;
  /** The Parses since the last Sync (checkParses). */
  private readonly parsedSinceSync: { name: string; st: Prepared }[] = [];
  /** Notices raised in running a statement whose rows the proxy sends later (run's `hold`), after the server
   *  described it: kept with the outcome and sent among its rows, where the server sent them. */
  private noticesHeld: HeldNotice[] | undefined;
  /** Those of the last statement that failed (failedOutcome takes them). */
  private noticesOfFailure: HeldNotice[] = [];
  private ended = false;
  /** Waiting for the client's PasswordMessage (its startup parameters, the salt sent). */
  private awaiting: { params: Record<string, string>; salt: Buffer } | undefined;
  /** In COPY FROM STDIN: the client's CopyData/CopyDone/CopyFail go straight to the server. */
  private copyIn = false;
  /** Queries received that may start a COPY and are not done yet. */
  private copyQueries = 0;
  /** Queries received that may start a COPY, counted (each COPY message belongs to the last one before it)... */
  private copyReceived = 0;
  /** ... and the number of the one running. */
  private copyRunning = 0;
  /** The client's socket closed. */
  private clientGone = false;
  /** A message other than COPY's, Sync or Flush came in COPY FROM STDIN (its type byte): the COPY fails with
   *  PostgreSQL's error for it. */
  private copyUnexpected: number | undefined;
  /** The recorded COPY under way (its notices name the client's table, not the staging one). */
  private copying: RecordedCopy | undefined;
  /** CopyData/CopyDone/CopyFail received before the COPY they belong to has begun, with their Query's number. */
  private copyEarly: { m: FrontendMessage & { type: 'd' | 'c' | 'f' }; query: number }[] = [];
  /** The history session the client named (application_name `isocheck:NAME`). */
  private named: NamedSession | undefined;
  /** Statements with declared parameter types: the name each (text, types) is prepared as on the server. */
  private readonly typed = new Map<string, string>();
  /** The declared types of the statement being prepared now (a Parse with this name gets them). */
  private parseTypes: { name: string; types: number[] } | undefined;
  /** Server portals made for the client's (fetchable): their names' numbers, and those open on the server with the
   *  outcome each serves (closed once no client portal has it: closeServerPortals). */
  private serverPortalCount = 0;
  /** SAVEPOINTs run (a portal fetched from a server portal of its own only when none was made since its Bind: one
   *  made in a savepoint rolled back later would go with it, where the client's, bound before, stays). */
  private savepoints = 0;
  /** The client's portal whose statement is running (runPortal). */
  private runningPortal: Portal | undefined;
  /** The savepoints of the client's block, each with the count of those made before it. */
  private savepointStack: { name: string; made: number }[] = [];
  private readonly serverPortals = new Map<string, Outcome>();
  /** The client's startup parameters (the server connection's, and the describer's). */
  private params: Record<string, string> = {};
  /** A second server connection, opened the first time a statement must be described while the client's
   *  transaction has failed (describeAside); closed with the connection. */
  private describer: Promise<pg.Client> | undefined;

  /** The client's socket (this.socket is the TLS socket over it once TLS is on). */
  private readonly plain: net.Socket;

  constructor(
    private socket: net.Socket,
    private readonly ctx: ProxyContext,
  ) {
    this.plain = socket;
    socket.setNoDelay(true);
    this.reader = new FrontendReader(
      (p) => this.enqueue(() => this.startup(p)),
      (m) => {
        // COPY data goes to the server as it arrives (the Query that started the COPY is still running); sent
        // before the COPY has begun (pgx does not wait for CopyInResponse), it waits for it; else it is ignored
        // as PostgreSQL ignores it (a client still sending after its COPY failed)
        // (a message after the COPY it belongs to ended, in a failure, is dropped, as PostgreSQL drops it; one of a
        // later COPY, pipelined, waits for it)
        const live = this.copyIn && this.copyRunning === this.copyReceived;
        if (m.type === 'd' || m.type === 'c' || m.type === 'f') {
          if (live) this.copyMessage(m);
          else if (this.copyQueries > 0) this.copyEarly.push({ m, query: this.copyReceived });
          return;
        }
        // in COPY FROM STDIN, PostgreSQL ignores Sync and Flush, and fails the COPY at any other message (which it
        // takes: it is not run)
        if (live) {
          if (m.type !== 'S' && m.type !== 'H') {
            this.copyUnexpected = (m.type === 'other' ? m.code : m.type).charCodeAt(0);
            this.copyMessage({ type: 'f', message: 'isocheck proxy: unexpected message' });
          }
          return;
        }
        this.pending.push(m);
        if (m.type !== 'Q' || !COPY_WORD.test(m.text)) {
          this.enqueue(() => this.message(this.pending.shift()!));
          return;
        }
        this.copyQueries++;
        const query = ++this.copyReceived;
        this.enqueue(async () => {
          this.copyRunning = query;
          try {
            await this.message(this.pending.shift()!);
          } finally {
            this.copyQueries--;
            this.copyEarly = this.copyEarly.filter((e) => e.query > query);
          }
        });
      },
    );
    socket.on('data', this.onData);
    socket.on('error', () => undefined);
    socket.on('close', () => {
      this.clientGone = true;
      this.failCopyOfGoneClient();
      this.enqueue(() => this.end());
    });
    ctx.opened(this);
  }

  private readonly onData = (chunk: Buffer): void => {
    try {
      this.reader.push(chunk);
    } catch (e) {
      this.fatal('08P01', `isocheck proxy: ${(e as Error).message}`);
    }
  };

  /** Answers an SSLRequest 'S' and continues on TLS over the same socket (the StartupMessage comes encrypted). */
  private startTls(context: tls.SecureContext): void {
    const plain = this.socket;
    plain.removeListener('data', this.onData);
    plain.write('S');
    const secure = new tls.TLSSocket(plain, { isServer: true, secureContext: context });
    secure.on('data', this.onData);
    secure.on('error', () => undefined);
    secure.on('close', () => this.enqueue(() => this.end()));
    this.socket = secure;
  }

  /** Closes both sides now (the proxy is stopping). */
  destroy(): void {
    this.socket.destroy();
    this.plain.destroy();
    void this.end();
  }

  /** The server's backend pid of this connection's server connection (once connected). */
  get serverPid(): number | undefined {
    return (this.raw as unknown as { processID?: number | null } | undefined)?.processID ?? undefined;
  }

  cancel(): void {
    if (this.raw) this.ctx.cancel(this.raw);
  }

  /**
   * Runs the steps one after the other, in the order they came (a step that returns a promise is awaited before
   * the next). A step starts in a microtask, never inside the 'data' callback that queued it: the messages of the
   * whole chunk are in `pending` first (the lookahead of beginImplicit and executesSoon). One loop for the
   * connection rather than a promise chain per message (two promises and their reactions a message).
   */
  private enqueue(step: () => Promise<void> | void): void {
    this.steps.push(step);
    if (this.draining) return;
    this.draining = true;
    queueMicrotask(() => void this.drain());
  }

  private async drain(): Promise<void> {
    while (this.steps.length > 0) {
      const step = this.steps.shift()!;
      try {
        const r = step();
        if (r !== undefined) await r;
      } catch (e) {
        this.fatal('XX000', `isocheck proxy: internal error: ${(e as Error)?.stack ?? String(e)}`);
      }
    }
    this.draining = false;
  }

  // ---- output ---------------------------------------------------------------------------------------------

  private send(b: Buffer): void {
    if (this.acks.length > 0) this.releaseAcks();
    this.out.push(b);
    this.outBytes += b.length;
    if (this.outBytes >= OUT_HIGH_WATER) this.flush();
  }

  /** A Parse, Bind or Close: `name` holds `value` (undefined: removed) in `map`, answered with `message`, held
   *  until something else is sent (Ack). */
  private change<T extends Prepared | Portal>(
    map: Map<string, T>,
    name: string,
    value: T | undefined,
    message: Buffer,
  ): void {
    const before = map.get(name);
    if (value === undefined) map.delete(name);
    else map.set(name, value);
    this.acks.push({
      message,
      made: value,
      undo: () => {
        if (map.get(name) !== value) return;
        if (before === undefined) map.delete(name);
        else map.set(name, before);
      },
    });
  }

  private releaseAcks(): void {
    const acks = this.acks;
    this.acks = [];
    for (const a of acks) {
      this.out.push(a.message);
      this.outBytes += a.message.length;
    }
  }

  /**
   * A statement failed on the server at its Parse or Bind (ServerPhase): when the client's own Parse or Bind of it
   * is still answered by a held ParseComplete or BindComplete, the error goes in its place, as a direct connection
   * sends it. The answers before it are kept, those after it dropped (the server skips to Sync after an error),
   * and the statement or portal the server never made is forgotten.
   */
  private retract(e: unknown, st: Prepared, p?: Portal): void {
    const phase = this.phase?.last;
    let of: Prepared | Portal | undefined;
    // the client's statement parsed before (its ParseComplete sent): what fails at the proxy's Parse now (25P02 in
    // an aborted transaction) fails at the client's Bind
    if (phase === 'parse') of = p === undefined || this.acks.some((a) => a.made === st) ? st : p;
    // an error in planning comes at the Bind only when a direct connection plans at the Bind too; converting a
    // parameter fails there in every case
    else if (phase === 'bind' && p !== undefined) {
      const where = (e as { where?: unknown })?.where;
      if (p.customPlan || (typeof where === 'string' && PARAMETER_CONTEXT.test(where))) of = p;
    }
    const at = of === undefined ? -1 : this.acks.findIndex((a) => a.made === of);
    if (at < 0) return;
    if (of === st) st.checked = true; // its failure is said: not checked again at the Sync
    const dropped = this.acks.splice(at);
    for (let i = dropped.length - 1; i > 0; i--) dropped[i].undo?.();
    // PostgreSQL drops an unnamed statement or portal before it parses or binds the next: nothing is left
    for (const [name, s] of this.statements) if (s === of) this.statements.delete(name);
    for (const [name, q] of this.portals) if (q === of || q.statement === of) this.portals.delete(name);
  }

  /** A statement whose ParseComplete is held and whose text the server has not parsed (a Parse then Sync, as
   *  libpq's PQprepare sends), or undefined. */
  private unchecked(): { name: string; st: Prepared } | undefined {
    // (a statement closed since is checked too: the server parsed it at its Parse, before the Close)
    for (const p of this.parsedSinceSync) if (!p.st.checked && p.st.text.trim() !== '') return p;
    return undefined;
  }

  /** At Sync: the statements parsed by the client only (unchecked) are parsed by the server now, so that an error
   *  at one's Parse takes the place of its ParseComplete, as a direct connection answers it (or, when a Flush sent
   *  the ParseComplete already, comes before the ReadyForQuery rather than never). */
  private async checkParses(): Promise<void> {
    for (let p = this.unchecked(); p !== undefined; p = this.unchecked()) {
      try {
        p.st.described = await this.describeStatement(p.st.text, p.st.paramTypes);
        p.st.checked = true;
      } catch (e) {
        this.retract(e, p.st);
        if (this.statements.get(p.name) === p.st) this.statements.delete(p.name);
        this.sendError(e);
        return;
      }
    }
  }

  /** A Parse of a name in use: the server's error if its text does not parse (or, in a failed transaction, is not
   *  COMMIT or ROLLBACK: 25P02), as PostgreSQL parses before it stores; the caller then raises 42P05. */
  private async parseNameInUse(text: string, paramTypes: number[]): Promise<void> {
    if (text.trim() === '') return;
    await this.describeStatement(text, paramTypes);
  }

  /** Takes a snapshot in the server's transaction (one the client's took on a direct connection: `snapshot`), so
   *  that transaction modes set after it get the server's own check. */
  private async takeSnapshot(): Promise<void> {
    await this.serverQuery('SELECT');
  }

  /** A statement of the proxy's own, with pg's query() (not the recording one): the client sees nothing of it. */
  private serverQuery(text: string): Promise<unknown> {
    const query = pg.Client.prototype.query as (this: pg.Client, text: string) => Promise<unknown>;
    return query.call(this.raw!, text);
  }

  private flush(): void {
    if (this.acks.length > 0) this.releaseAcks();
    if (this.out.length === 0) return;
    const data = this.out.length === 1 ? this.out[0] : Buffer.concat(this.out);
    this.out = [];
    this.outBytes = 0;
    if (!this.socket.destroyed) this.socket.write(data);
  }

  private ready(): void {
    const status = this.status();
    this.readyStatus = status;
    if (status === 'I') {
      this.snapshot = false;
      this.savepointStack = [];
    }
    if (status !== 'E' && this.describer) {
      // the failed transaction it served has ended
      const describer = this.describer;
      this.describer = undefined;
      void describer.then((c) => c.end()).catch(() => undefined);
    }
    for (const n of this.notifications) this.send(n);
    this.notifications = [];
    this.exchanging = false;
    // (as PostgreSQL reports at the end of a Query of several statements, which the proxy runs one by one: the
    // settings last changed first, each once, and only those whose value is not the one last reported)
    for (const [name, value] of [...this.statusHeld].reverse()) this.report(name, value, true);
    this.statusHeld.clear();
    this.send(B.readyForQuery(status));
    this.flush();
  }

  /** A Parse or Bind of `text`: does it take a snapshot on the server (analyze_requires_snapshot, or a Bind's
   *  parameters)? */
  private noteSnapshot(text: string, values = 0): void {
    if (this.snapshot || this.status() === 'E') return;
    this.snapshot = values > 0 || takesSnapshot(text);
  }

  /** Before a statement that sets transaction modes (SET TRANSACTION, BEGIN with modes) in the client's block: when
   *  a Parse or Bind the proxy answered took a snapshot on a direct connection, the server takes one too, so that
   *  the modes fail there as they would (25001: "must be called before any query"). */
  private async snapshotForModes(control: TxnControl | undefined): Promise<void> {
    const setsModes = (control?.kind === 'begin' && control.modes !== '') || control?.kind === 'set-transaction';
    if (setsModes && this.snapshot && !this.implicit && this.status() === 'T') await this.takeSnapshot();
  }

  /** A ParameterStatus to the client (`changed`: only when its value is not the one last reported). */
  private report(name: string, value: string, changed = false): void {
    if (changed && this.reported.get(name) === value) return;
    this.reported.set(name, value);
    this.send(B.parameterStatus(name, value));
  }

  private fatal(code: string, message: string): void {
    this.send(B.errorResponse({ S: 'FATAL', V: 'FATAL', C: code, M: message }));
    this.flush();
    this.socket.end();
    void this.end();
  }

  private sendError(e: unknown, offset = 0): void {
    if (e instanceof ProxyError) {
      const where = e.where !== undefined ? { W: e.where } : {};
      const detail = e.detail !== undefined ? { D: e.detail } : {};
      this.send(B.errorResponse({ S: 'ERROR', V: 'ERROR', C: e.code, M: e.message, ...detail, ...where }));
      return;
    }
    if (e instanceof BinaryFormatError) {
      this.send(B.errorResponse({ S: 'ERROR', V: 'ERROR', C: '0A000', M: `isocheck proxy: ${e.message}` }));
      return;
    }
    if (serverError(e)) {
      const fields = B.fieldsOf(e as Record<string, unknown>, offset);
      // a row's values in a constraint's DETAIL include the recorder's hidden wid column, last: the value a
      // statement of the client's own would leave there (none), not the wid the recorder wrote
      if (fields.D?.startsWith('Failing row contains (')) fields.D = fields.D.replace(WID_LAST, ', null).');
      this.send(B.errorResponse(fields));
      return;
    }
    // the recorder's own refusals (a statement it cannot record, a stopped recording) and lost connections
    const name = (e as Error)?.name ?? '';
    const code = name === 'UnsupportedStatementError' ? '0A000' : name === 'RecorderStoppedError' ? '57P01' : 'XX000';
    this.send(
      B.errorResponse({ S: 'ERROR', V: 'ERROR', C: code, M: `isocheck proxy: ${(e as Error)?.message ?? String(e)}` }),
    );
  }

  // ---- startup and end ------------------------------------------------------------------------------------

  private async startup(p: StartupPacket): Promise<void> {
    switch (p.kind) {
      case 'ssl':
        if (this.ctx.tls && !(this.socket instanceof tls.TLSSocket)) this.startTls(this.ctx.tls);
        else if (!this.socket.destroyed) this.socket.write('N');
        return;
      case 'gssenc':
        if (!this.socket.destroyed) this.socket.write('N');
        return;
      case 'cancel': {
        const target = this.ctx.byKey(p.processId, p.secretKey.length >= 4 ? p.secretKey.readInt32BE(0) : -1);
        target?.cancel();
        this.socket.end();
        return;
      }
      case 'unsupported-version':
        this.fatal(
          '0A000',
          `isocheck proxy: unsupported frontend protocol ${p.version >> 16}.${p.version & 0xffff}: ` +
            'the proxy speaks 3.0',
        );
        return;
      case 'startup':
        break;
    }
    if (this.ctx.password !== undefined) {
      this.awaiting = { params: p.params, salt: randomBytes(4) };
      this.send(B.authenticationMD5Password(this.awaiting.salt));
      this.flush();
      return;
    }
    await this.connect(p.params);
  }

  /** MD5 authentication: the client sends "md5" + md5(md5(password + user) + salt), in hex. */
  private async authenticate(m: FrontendMessage): Promise<void> {
    const { params, salt } = this.awaiting!;
    this.awaiting = undefined;
    const user = params.user ?? '';
    const inner = createHash('md5')
      .update(this.ctx.password! + user)
      .digest('hex');
    const expected = Buffer.from(
      'md5' +
        createHash('md5')
          .update(Buffer.concat([Buffer.from(inner), salt]))
          .digest('hex'),
    );
    const given = Buffer.from(m.type === 'p' ? m.password : '');
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
      this.fatal('28P01', `password authentication failed for user "${user}"`);
      return;
    }
    await this.connect(params);
  }

  private async connect(params: Record<string, string>): Promise<void> {
    this.params = params;
    for (const asked of [params.client_encoding, encodingInOptions(params.options)]) {
      if (asked !== undefined && !encodingServed(asked)) {
        this.fatal('0A000', encodingRefused(asked));
        return;
      }
    }
    let raw: pg.Client;
    let parameters: Map<string, string>;
    try {
      ({ raw, parameters } = await this.ctx.connectServer(params));
    } catch (e) {
      const err = e as Record<string, unknown>;
      if (typeof err?.code === 'string' && typeof err.severity === 'string') {
        this.send(B.errorResponse({ ...B.fieldsOf(err), S: 'FATAL', V: 'FATAL' }));
        this.flush();
        this.socket.end();
      } else this.fatal('08006', `isocheck proxy: cannot connect to the server: ${(e as Error).message}`);
      return;
    }
    if (this.ended || this.socket.destroyed) {
      await raw.end().catch(() => undefined);
      return;
    }
    this.raw = raw;
    this.client = raw;
    const name = params.application_name;
    if (name?.startsWith(SESSION_PREFIX) && name.length > SESSION_PREFIX.length)
      this.named = this.ctx.recorder.namedSession(name.slice(SESSION_PREFIX.length));
    const con = (
      raw as unknown as { connection: NodeJS.EventEmitter & { parse(q: { name?: string; types?: unknown }): void } }
    ).connection;
    // a statement with declared parameter types: its Parse (the rewritten text's, or the passed-through one's)
    // declares them to the server too (the recorder's own Parse declares none)
    const parse = con.parse.bind(con);
    con.parse = (q) =>
      parse(this.parseTypes && q.name === this.parseTypes.name ? { ...q, types: this.parseTypes.types } : q);
    this.phase = new ServerPhase(con as unknown as PhaseConnection);
    con.on('commandComplete', (msg: { text: string }) => this.tags.push(msg.text));
    con.on('parameterStatus', (msg: { parameterName: string; parameterValue: string }) => {
      // another client_encoding set where the proxy does not see it (set_config(), a function): its text would be
      // changed from then on, so the session ends (encoding.ts)
      if (msg.parameterName === 'client_encoding' && !encodingServed(msg.parameterValue)) {
        this.fatal('0A000', encodingRefused(msg.parameterValue));
        return;
      }
      this.noteStyle(msg.parameterName, msg.parameterValue);
      // PostgreSQL (14 on) reports the settings an exchange changed at its end, just before the ReadyForQuery, and
      // only those whose value is not the one it last reported: the proxy, which runs a Query of several
      // statements one by one (each reported), holds the reports until its own ReadyForQuery (an older server
      // reports at each SET, before its CommandComplete: sent at once)
      if (this.reportsAtReady) this.statusHeld.set(msg.parameterName, msg.parameterValue);
      else this.report(msg.parameterName, msg.parameterValue);
    });
    raw.on('notice', (msg) => {
      if (this.copying) stagedMessage(msg, this.copying);
      const b = B.noticeResponse(B.fieldsOf(msg as unknown as Record<string, unknown>));
      if (this.noticesHeld && this.phase?.described)
        this.noticesHeld.push({ row: this.phase.rowCount, message: b, after: this.phase.completed });
      else this.send(b);
    });
    // LISTEN/NOTIFY: PostgreSQL sends a notification when it waits for the client's next message (between
    // transactions): at once to a client with nothing under way since its last ReadyForQuery, else just before the
    // ReadyForQuery that ends the exchange (after its results, never among held answers). Its pid is the notifying
    // backend's, which is what the proxy's clients know as theirs too (BackendKeyData).
    raw.on('notification', (msg: { processId: number; channel: string; payload?: string }) => {
      const b = B.notificationResponse(msg.processId, msg.channel, msg.payload ?? '');
      if (this.exchanging || this.draining || this.steps.length > 0 || this.out.length > 0 || this.acks.length > 0)
        this.notifications.push(b);
      else if (!this.socket.destroyed) this.socket.write(b);
    });
    raw.on('error', (e) => this.fatal('08006', `isocheck proxy: the server connection was lost: ${e.message}`));
    raw.on('end', () => {
      if (!this.ended) this.fatal('57P01', 'isocheck proxy: the server closed the connection');
    });
    this.reportsAtReady = Number.parseInt(parameters.get('server_version') ?? '', 10) >= 14;
    this.send(B.authenticationOk());
    for (const [k, v] of parameters) {
      this.noteStyle(k, v);
      this.report(k, v);
    }
    this.send(B.backendKeyData(this.pid, this.secret));
    this.ready();
  }

  /**
   * SQL's DEALLOCATE of a statement the client prepared in the protocol (a Parse): PostgreSQL keeps both kinds under
   * one name space, and DBD::Pg drops its statements so. The proxy holds the client's statements, not the server:
   * it drops it and answers (the tag), as the server would. DEALLOCATE ALL drops them too, then goes to the server
   * (its SQL-prepared statements, the recorder's). Undefined: for the server (another name: PREPAREd in SQL, or its
   * error; in a failed transaction, its 25P02).
   */
  private deallocate(text: string): string | undefined {
    if (this.status() === 'E') return undefined;
    // (the parser's reading: comments, U&"..." names, case folding, a reserved word's syntax error as the server's)
    let stmt: { name?: string; isall?: boolean } | undefined;
    try {
      const stmts = (parseSync(text) as { stmts?: { stmt?: { DeallocateStmt?: typeof stmt } }[] }).stmts ?? [];
      if (stmts.length === 1) stmt = stmts[0].stmt?.DeallocateStmt;
    } catch {
      return undefined;
    }
    if (!stmt) return undefined;
    if (stmt.isall || stmt.name === undefined) {
      for (const name of [...this.statements.keys()]) if (name !== '') this.statements.delete(name);
      return undefined;
    }
    if (!this.statements.has(stmt.name)) return undefined;
    this.statements.delete(stmt.name);
    return 'DEALLOCATE';
  }

  /** DateStyle and IntervalStyle, as the server reports them: the text of its dates and intervals (formats.ts). */
  private noteStyle(name: string, value: string): void {
    if (name === 'DateStyle') this.style.dateStyle = value;
    else if (name === 'IntervalStyle') this.style.intervalStyle = value;
  }

  private async end(): Promise<void> {
    if (this.ended) return;
    this.ended = true;
    this.ctx.closed(this);
    if (!this.socket.destroyed) this.socket.end();
    const raw = this.raw;
    if (raw) await raw.end().catch(() => undefined);
    const describer = await this.describer?.catch(() => undefined);
    await describer?.end().catch(() => undefined);
  }

  // ---- messages -------------------------------------------------------------------------------------------

  /** A message: handled here when it needs no round trip (Parse, Bind, Close, Flush, the Execute of a portal that
   *  ran, a Sync with no implicit transaction to end), else by messageAsync. */
  private message(m: FrontendMessage, typesRead = false): Promise<void> | void {
    if (this.awaiting) return this.authenticate(m);
    if (this.ended || !this.client) return;
    this.exchanging = true;
    if (this.skipToSync && m.type !== 'S') return;
    try {
      // (PostgreSQL reads a message's strings before it does anything with it)
      if (m.invalidUtf8 !== undefined && m.type !== 'p') throw new ProxyError('22021', m.invalidUtf8);
      switch (m.type) {
        case 'P':
          // PostgreSQL parses the text before it stores it under its name: a text that does not parse fails so
          if (m.name !== '' && this.statements.has(m.name)) return this.messageAsync(m);
          this.noteSnapshot(m.text);
          {
            const st: Prepared = { text: m.text, paramTypes: m.paramTypes };
            // (its Parse fails on the server, as on a direct connection, unless it is COMMIT or ROLLBACK)
            if (this.status() === 'E' || this.failPending) st.inFailed = true;
            this.change(this.statements, m.name, st, B.parseComplete());
            this.parsedSinceSync.push({ name: m.name, st });
          }
          return;
        case 'B': {
          // a binary parameter of a type of the database's own: read from the catalog first
          if (!typesRead && this.unknownParamTypes(m).length > 0) return this.messageAsync(m);
          const portal = this.bind(m);
          this.noteSnapshot(portal.text, portal.values.length);
          this.change(this.portals, m.portal, portal, B.bindComplete());
          return;
        }
        case 'C':
          if (m.what === 'S') this.change(this.statements, m.name, undefined, B.closeComplete());
          else this.change(this.portals, m.name, undefined, B.closeComplete());
          return;
        case 'E': {
          // a portal that already ran (its Describe came first, as drivers send it): its rows, no round trip
          const p = this.portals.get(m.portal);
          if (p?.outcome === undefined || p.done) return this.messageAsync(m);
          // run at its Describe, then the transaction failed: PostgreSQL runs only COMMIT and ROLLBACK there
          if (this.failedBefore() && p.outcome.error === undefined && !this.endsTransaction(p.text))
            throw new ProxyError('25P02', ABORTED_MESSAGE);
          if (this.partDue(p, p.outcome)) return this.messageAsync(m);
          this.sendRows(p, p.outcome, m.maxRows);
          return;
        }
        case 'S':
          if (
            this.implicit ||
            this.failPending ||
            !this.serverReady() ||
            (!this.skipToSync && this.unchecked() !== undefined)
          )
            return this.messageAsync(m);
          this.skipToSync = false;
          this.endSync();
          return;
        case 'H':
          this.flush();
          return;
        case 'p':
          throw new ProxyError('08P01', 'isocheck proxy: unexpected password message');
        case 'other':
          throw new ProxyError(
            '0A000',
            `isocheck proxy: message type '${m.code}' is not supported (COPY and function calls are not)`,
          );
        default:
          return this.messageAsync(m);
      }
    } catch (e) {
      this.failed(m, e);
    }
  }

  /** After a message failed: its ErrorResponse, then ReadyForQuery (a Query) or skip to the next Sync. */
  private failed(m: FrontendMessage, e: unknown): Promise<void> | void {
    this.sendError(e);
    const own = !serverError(e) && this.inTransaction();
    if (m.type === 'Q' || m.type === 'other') {
      if (own) return this.failServerTransaction().then(() => this.ready());
      this.ready();
      return;
    }
    this.skipToSync = true;
    if (own) this.failPending = true;
    // PostgreSQL flushes an error at once (elog.c, send_message_to_frontend): a client that sent Flush and waits
    // sees it without a Sync
    this.flush();
  }

  /** A SAVEPOINT, ROLLBACK TO or RELEASE has run on the server: a ROLLBACK TO drops the portals bound since its
   *  savepoint was made, as PostgreSQL drops the portals of the subtransactions it aborts (AtSubAbort_Portals). */
  private savepointRan(c: TxnControl | undefined): void {
    if (c?.kind === 'savepoint') {
      this.savepointStack.push({ name: c.name, made: this.savepoints });
      this.savepoints++;
      return;
    }
    if (c?.kind !== 'rollback-to' && c?.kind !== 'release') return;
    const at = this.savepointStack.map((x) => x.name).lastIndexOf(c.name);
    if (at < 0) return;
    if (c.kind === 'release') {
      this.savepointStack.length = at;
      return;
    }
    const made = this.savepointStack[at].made;
    // (not the portal running the ROLLBACK TO itself: it ends as it runs, its Execute answered)
    for (const [name, p] of this.portals)
      if (p.savepoints > made && p !== this.runningPortal) this.portals.delete(name);
    this.savepointStack.length = at + 1;
  }

  /** The transaction had failed before this exchange (its last ReadyForQuery said so): not by a statement run ahead
   *  in it (at a Describe), whose error a direct connection has not sent yet. */
  private failedBefore(): boolean {
    return this.readyStatus === 'E' && this.status() === 'E';
  }

  /** The server's transaction status as pg last saw it: I (idle), T (in a block), E (a failed block). */
  private status(): string {
    return this.raw?.getTransactionStatus?.() ?? 'I';
  }

  /** A transaction is open on the server: a block, or the implicit one the proxy began. */
  private inTransaction(): boolean {
    return this.implicit || this.status() === 'T';
  }

  /** Portals live until their transaction ends (outside a block, at the Sync or Query that ran them; at a COMMIT or
   *  ROLLBACK, whatever sent it): none is left when the server is idle. */
  private dropPortalsOutsideTransaction(): void {
    if (this.status() === 'I') this.portals.clear();
  }

  /**
   * After an error the proxy raised itself (a statement or portal it knows does not exist, a statement the recorder
   * refuses), PostgreSQL would have failed the transaction: it is failed on the server too, by an error the client
   * does not see, so that what follows is refused (25P02) and COMMIT rolls back, as on a direct connection.
   */
  private async failServerTransaction(): Promise<void> {
    this.failPending = false;
    await this.serverQuery(FAIL_TRANSACTION).catch(() => undefined);
    await this.settle(); // pg rejects at the ErrorResponse: its status is the server's at the ReadyForQuery
  }

  /** Whether pg has seen the server's ReadyForQuery of the last statement (after an error, pg settles the query
   *  at the ErrorResponse, before it): only then is its transaction status the server's. */
  private serverReady(): boolean {
    return (this.raw as unknown as { readyForQuery?: boolean } | undefined)?.readyForQuery !== false;
  }

  /** Waits for the server's ReadyForQuery of the last statement (serverReady). */
  private async settle(): Promise<void> {
    if (this.serverReady()) return;
    const con = (this.raw as unknown as { connection: NodeJS.EventEmitter }).connection;
    await new Promise<void>((resolve) => {
      const done = (): void => {
        con.removeListener('readyForQuery', done);
        con.removeListener('end', done);
        resolve();
      };
      con.on('readyForQuery', done);
      con.on('end', done);
    });
  }

  private async messageAsync(m: FrontendMessage): Promise<void> {
    try {
      switch (m.type) {
        case 'P':
          await this.parseNameInUse(m.text, m.paramTypes);
          throw new ProxyError('42P05', `prepared statement "${m.name}" already exists`);
        case 'Q':
          await this.simpleQuery(m.text);
          await this.settle();
          this.dropPortalsOutsideTransaction();
          this.ready();
          return;
        case 'B':
          await this.ctx.resolveTypes(this.unknownParamTypes(m));
          // (a type still unknown, one the catalog does not show yet, is refused at the Bind)
          this.message(m, true);
          return;
        case 'D':
          await this.describe(m.what, m.name);
          return;
        case 'E':
          await this.execute(m.portal, m.maxRows);
          return;
        case 'S': {
          // after an error in this Sync's messages, the server parsed nothing later (and the error is said)
          const failed = this.skipToSync;
          this.skipToSync = false;
          if (!failed) await this.checkParses();
          if (this.failPending) await this.failServerTransaction();
          await this.settle();
          if (this.implicit) {
            // (a COMMIT that fails: pg rejects at the ErrorResponse, before the server's ReadyForQuery)
            await this.endImplicit().catch((e: unknown) => this.sendError(e));
            await this.settle();
          }
          this.endSync();
          return;
        }
        case 'X':
          this.flush();
          await this.end();
          return;
      }
    } catch (e) {
      this.failed(m, e);
    }
  }

  /** One statement through the recorder; its result as the client sees it (text values). */
  private async run(
    text: string,
    values: unknown[] = [],
    paramTypes: number[] = [],
    extended = false,
    hold = false,
    fetch?: QueryOptions['fetch'],
  ): Promise<Outcome[]> {
    this.closeServerPortals();
    this.tags = [];
    this.phase?.expect();
    this.noticesHeld = hold ? [] : undefined;
    try {
      const outcomes = await this.runHeld(text, values, paramTypes, extended, fetch);
      // a type created, altered or dropped: the codecs of the database's own types are read again (user-types.ts)
      if (TYPE_DDL.test(text)) this.ctx.types.forget();
      if (SAVEPOINT_WORD.test(text)) this.savepointRan(this.controlOf(text));
      const o = outcomes[outcomes.length - 1];
      if (o && this.noticesHeld && this.noticesHeld.length > 0) o.notices = this.noticesHeld;
      return outcomes;
    } catch (e) {
      this.noticesOfFailure = this.noticesHeld ?? [];
      throw e;
    } finally {
      this.noticesHeld = undefined;
    }
  }

  private async runHeld(
    text: string,
    values: unknown[],
    paramTypes: number[],
    extended: boolean,
    fetch?: QueryOptions['fetch'],
  ): Promise<Outcome[]> {
    // (the session's search path known first, when a SET or DDL made it unknown: the plan here is then the one the
    // session runs, a name it gives to another relation not the recorded table's)
    const known = this.knowShadows(text, values.length);
    if (known) await known;
    // the recorder's plan (cached), looked at only off the common path: declared types, an error, DISCARD
    const plan = (): ReturnType<Recorder['plan']> | undefined => this.planOf(text, values.length);
    if (DEALLOCATE_WORD.test(text)) {
      const tag = this.deallocate(text);
      if (tag !== undefined) return [{ columns: [], rows: [], tag, returnsRows: false }];
    }
    // another client_encoding than UTF-8: refused, even with --on-unsupported pass (encoding.ts)
    if (/client_encoding|names/i.test(text)) {
      const p = plan();
      if (p?.kind === 'settings' && p.clientEncoding !== undefined && !encodingServed(p.clientEncoding))
        throw new ProxyError('0A000', encodingRefused(p.clientEncoding));
    }
    const config = { text, rowMode: 'array', types: RAW_TYPES } as pg.QueryArrayConfig & QueryOptions;
    if (fetch) config.fetch = fetch;
    // (a parameter of a declared type may compare in a looser type than the column's: events.ts limitReached)
    if (paramTypes.some((t) => t !== 0)) config.paramTypes = paramTypes;
    // a client's Parse/Bind/Execute goes to the server as one, even with no parameters (pg would send a Query):
    // its errors come at the same message, and a text of two statements is refused (42601) as the server does
    if (extended) (config as { queryMode?: string }).queryMode = 'extended';
    // (in a failed transaction the server refuses the statement anyway, and the recorder sends it as written)
    if (paramTypes.some((t) => t !== 0) && this.raw!.getTransactionStatus() !== 'E') {
      const p = plan();
      const name = this.typedName(p && 'sql' in p ? p.sql : text, paramTypes);
      if (name !== undefined) {
        config.name = name;
        this.parseTypes = { name, types: paramTypes };
      }
    }
    // BEGIN, COMMIT, ROLLBACK, SAVEPOINT ...: no rows, so pg's defaults do as well; as a text, pg copies no config
    const control = values.length === 0 && config.name === undefined && plan()?.kind === 'control';
    let r: pg.QueryArrayResult | pg.QueryArrayResult[];
    try {
      // (a client's Parse/Bind/Execute of one in the extended protocol too: described, NoData, then its notices)
      const c = this.recording();
      r = (await (control && !extended ? c.query(text) : c.query(config, values))) as typeof r;
    } catch (e) {
      // the server's error position is in the text it ran: the rewritten one for a recorded statement
      const err = e as { position?: string };
      if (typeof err?.position === 'string') {
        const at = Number(err.position);
        const p = plan();
        const mapped = p && 'sql' in p ? mapPosition(text, p.sql, at) : at;
        if (mapped === undefined || mapped > text.length) delete err.position;
        else err.position = String(mapped);
      }
      if (this.ctx.onUnsupported !== 'pass' || (e as Error)?.name !== 'UnsupportedStatementError') throw e;
      this.passWarning(text, e);
      // pg's own query(), not the recording one
      const query = pg.Client.prototype.query as (
        this: pg.Client,
        c: pg.QueryArrayConfig,
        v: unknown[],
      ) => Promise<pg.QueryArrayResult>;
      r = await query.call(this.raw!, config, values);
    } finally {
      this.parseTypes = undefined;
      // DISCARD ALL / DEALLOCATE: the server dropped the statements prepared for declared types
      if (this.typed.size > 0 && /discard|deallocate/i.test(text)) {
        const p = plan();
        if (p && 'dropsPrepared' in p && p.dropsPrepared) this.forgetTyped();
      }
    }
    const results = Array.isArray(r) ? r : [r];
    return results.map((x) => this.outcome(x));
  }

  /** A statement the recorder refused, run anyway (--on-unsupported pass). */
  private passWarning(text: string, e: unknown): void {
    const refused = e as Error & { reason?: string };
    this.ctx.recorder.warn(
      `passed through unrecorded (--on-unsupported pass): ${text}: ${refused.reason ?? refused.message}; ` +
        'the history may be wrong about what it read and wrote',
      `unsupported:${refused.reason ?? text}`,
    );
  }

  /** The statements of this connection run through the named session once it can record (else the driver's). */
  private recording(): pg.Client {
    const raw = this.raw!;
    if (this.named && this.client === raw && this.ctx.recorder.instrumented && raw.getTransactionStatus() === 'I') {
      // a view of the connection whose query() is pg's own (the driver's would record in its own session)
      const view = Object.create(raw) as Record<string, unknown>;
      const base = pg.Client.prototype.query as (...a: unknown[]) => unknown;
      view.query = (...a: unknown[]) => base.apply(raw, a);
      for (const m of ['on', 'once', 'off', 'addListener', 'removeListener', 'removeAllListeners', 'emit', 'end']) {
        const f = (raw as unknown as Record<string, unknown>)[m];
        if (typeof f === 'function') view[m] = (...a: unknown[]) => f.apply(raw, a);
      }
      this.client = this.named.client(view as unknown as pg.Client) as unknown as pg.Client;
    }
    return this.client!;
  }

  /** The name a statement with declared parameter types is prepared as (one per text and types), or undefined
   *  beyond TYPED_MAX of them (then it runs without its types, as the recorder's own statement). */
  private typedName(sql: string, types: number[]): string | undefined {
    const key = `${types.join(',')}:${sql}`;
    let name = this.typed.get(key);
    if (name === undefined && this.typed.size < TYPED_MAX)
      this.typed.set(key, (name = `__isocheck_proxy_${this.own}_${this.typed.size + 1}`));
    if (name === undefined)
      this.ctx.recorder.warn(
        `isocheck proxy: more than ${TYPED_MAX} statements with declared parameter types on one connection: ` +
          'the next ones are prepared without their types',
        'proxy:typed-max',
      );
    return name;
  }

  private forgetTyped(): void {
    const parsed = (this.raw as unknown as { connection: { parsedStatements: Record<string, string> } }).connection
      .parsedStatements;
    const submitted = (this.raw as unknown as { connection: { submittedNamedStatements: Record<string, string> } })
      .connection.submittedNamedStatements;
    for (const name of this.typed.values()) {
      delete parsed[name];
      delete submitted[name];
    }
    this.typed.clear();
  }

  private outcome(r: pg.QueryArrayResult): Outcome {
    const columns = (r.fields ?? []).map(columnOf);
    const n = r.rowCount;
    const command = r.command;
    const count = n === null ? '' : ` ${n}`;
    // the last tag of this command (and count): "UPDATE 3", "INSERT 0 1", "SELECT 2"; no copy, no split
    let tag: string | undefined;
    for (let i = this.tags.length - 1; i >= 0 && tag === undefined; i--) {
      const t = this.tags[i];
      const word = t.indexOf(' ');
      if ((word < 0 ? t : t.slice(0, word)) === command && t.endsWith(count)) tag = t;
    }
    if (tag === undefined)
      tag = n === null ? r.command : r.command === 'INSERT' ? `INSERT 0 ${n}` : `${r.command} ${n}`;
    const o: Outcome = {
      columns,
      rows: r.rows as (string | null)[][],
      tag,
      returnsRows: columns.length > 0 || r.command === 'SELECT',
    };
    if ('more' in r) o.server = r as unknown as FetchedResult;
    return o;
  }

  /** The transaction statement a text is, if it is one. */
  private controlOf(text: string): TxnControl | undefined {
    const plan = this.planOf(text, 0);
    return plan?.kind === 'control' ? plan.control : undefined;
  }

  /** COMMIT, ROLLBACK or ROLLBACK TO: what PostgreSQL runs in a failed transaction (IsTransactionExitStmt). */
  private endsTransaction(text: string): boolean {
    const c = this.controlOf(text);
    return endsBlock(c) || c?.kind === 'rollback-to';
  }

  /** Whether PostgreSQL would run this statement of a multi-statement Query (or of a pipeline) in its implicit
   *  transaction, which the proxy then begins: anything but BEGIN, COMMIT, ROLLBACK and the savepoint statements, which
   *  outside a block do the same in an implicit transaction of their own as alone (open a block, warn, fail). */
  private opensImplicit(text: string): boolean {
    const c = this.controlOf(text);
    return c === undefined || c.kind === 'set-transaction';
  }

  /**
   * A transaction statement inside PostgreSQL's implicit transaction, which the proxy runs as a block of its own
   * (xact.c, for TBLOCK_IMPLICIT_INPROGRESS): BEGIN makes it a block, what ran before it included, and its options
   * are SET TRANSACTION's (the same checks: 25001 once a query took a snapshot); COMMIT and ROLLBACK end it with a
   * warning; AND CHAIN and the savepoint statements are refused (25P01) and fail it; SET TRANSACTION runs in it.
   */
  private async controlInImplicit(text: string, c: TxnControl, extended: boolean): Promise<Outcome> {
    switch (c.kind) {
      case 'begin':
        if (c.modes !== '') await this.setTransaction(`SET TRANSACTION ${c.modes}`, extended);
        this.implicit = false;
        return { ...NO_ROWS, tag: c.start ? 'START TRANSACTION' : 'BEGIN' };
      case 'commit':
      case 'rollback': {
        const word = c.kind === 'commit' ? 'COMMIT' : 'ROLLBACK';
        if (c.chain) throw new ProxyError('25P01', `${word} AND CHAIN can only be used in transaction blocks`);
        // the warning first, then what the server says in ending it (a deferred trigger's notice, its error)
        // (in a Query, sent now: the server's notices that a statement raises before its description go straight
        // out; in the extended protocol, held with the portal's answer, after its Describe's)
        const warning = warningNotice('there is no transaction in progress');
        if (!extended) this.send(warning.message);
        const held = extended ? [warning] : [];
        try {
          const [o] = await this.run(word, [], [], extended, true);
          return { ...o, notices: [...held, ...(o.notices ?? [])] };
        } catch (e) {
          this.noticesOfFailure.unshift(...held);
          throw e;
        } finally {
          this.implicit = false;
        }
      }
      case 'savepoint':
      case 'release':
      case 'rollback-to': {
        const what = { savepoint: 'SAVEPOINT', release: 'RELEASE SAVEPOINT', 'rollback-to': 'ROLLBACK TO SAVEPOINT' };
        throw new ProxyError('25P01', `${what[c.kind]} can only be used in transaction blocks`);
      }
      case 'set-transaction':
        return this.setTransaction(text, extended);
    }
  }

  /** SET TRANSACTION in the proxy's block, after a snapshot when the client's transaction took one (`snapshot`), so
   *  that the server checks the modes as it would have (25001). */
  private async setTransaction(text: string, extended: boolean): Promise<Outcome> {
    if (this.snapshot) await this.takeSnapshot();
    return (await this.run(text, [], [], extended, true))[0];
  }

  private async simpleQuery(text: string): Promise<void> {
    // PostgreSQL drops the unnamed statement at a Query, and each statement of it runs in the unnamed portal
    this.statements.delete('');
    this.portals.delete('');
    const pieces = splitStatements(text);
    if (pieces.length === 0) {
      this.send(B.emptyQueryResponse());
      return;
    }
    // PostgreSQL runs the statements of a Query of several in one implicit transaction, begun again after a COMMIT
    // or ROLLBACK among them (postgres.c, exec_simple_query)
    // (a Query inside a pipeline's implicit transaction, before its Sync, runs in it, and its end commits it)
    const multi = pieces.length > 1;
    for (const [i, p] of pieces.entries()) {
      let outcomes: Outcome[];
      const control = p.copy ? undefined : this.controlOf(p.text);
      const ends = endsBlock(control);
      try {
        if (multi && !this.implicit && this.status() === 'I' && this.opensImplicit(p.text)) {
          await this.run('BEGIN');
          this.implicit = true;
        }
        if (ends) this.snapshot = false;
        await this.snapshotForModes(control);
        outcomes = p.copy
          ? [await this.copy(p.text)]
          : this.implicit && control
            ? [await this.controlInImplicit(p.text, control, false)]
            : await this.run(p.text, [], [], false, true);
      } catch (e) {
        // what the server sent before the error comes first: its RowDescription and rows. Run as a Query, all of it
        // (a SELECT is described as it starts, a write's RETURNING only once the write is done); run extended (the
        // recorder's prepared statements, described before they run), a SELECT's, or a write's completed before its
        // commit failed
        const completed = this.phase?.last === 'unknown' || this.phase?.lastCompleted !== undefined;
        const failed =
          serverError(e) && (SELECT_TEXT.test(p.text) || completed) ? this.failedOutcome(p.text, 0, e) : undefined;
        if (failed?.returnsRows) this.send(B.rowDescription(failed.columns));
        if (failed) this.sendTextRows(failed);
        else for (const n of this.takeNotices()) this.send(n.message);
        this.sendError(e, p.offset);
        if (this.implicit) {
          this.implicit = false;
          await this.run('ROLLBACK').catch(() => undefined);
        } else if (!serverError(e) && this.inTransaction()) await this.failServerTransaction();
        return;
      }
      // a transaction's end drops every portal (a chained one's too)
      if (ends) this.portals.clear();
      for (const o of outcomes) {
        if (o.returnsRows) this.send(B.rowDescription(o.columns));
        this.sendTextRows(o);
        this.noticesAfter(o);
        // PostgreSQL ends the implicit transaction before the last statement's CommandComplete: what committing
        // raises comes before it (a deferred trigger's notice), or in its place (a deferred constraint's error)
        if (i === pieces.length - 1 && o === outcomes[outcomes.length - 1] && this.implicit) {
          this.implicit = false;
          try {
            await this.run('COMMIT');
          } catch (e) {
            this.sendError(e);
            return;
          }
        }
        this.send(B.commandComplete(o.tag));
      }
    }
    if (this.implicit) {
      this.implicit = false;
      await this.run('COMMIT');
    }
  }

  private bind(m: FrontendMessage & { type: 'B' }): Portal {
    const st = this.statements.get(m.statement);
    if (!st) throw noStatement(m.statement);
    // PostgreSQL counts the parameters first (exec_bind_message): before it refuses a Bind in a failed transaction
    // (where the proxy's server connection would refuse the statement's Parse first), before a portal name in use,
    // and at the Bind whatever the plan
    const count = st.paramCount ?? st.described?.params.length;
    if (count !== undefined && m.params.length !== count) {
      const supplies = `bind message supplies ${m.params.length} parameters`;
      throw new ProxyError('08P01', `${supplies}, but prepared statement "${m.statement}" requires ${count}`);
    }
    if (m.portal !== '' && this.portals.has(m.portal)) {
      // (in a failed transaction PostgreSQL refuses the Bind before it makes the portal: exec_bind_message)
      if (this.failedBefore() && !this.endsTransaction(st.text)) throw new ProxyError('25P02', ABORTED_MESSAGE);
      throw new ProxyError('42P03', `cursor "${m.portal}" already exists`);
    }
    // in a failed transaction PostgreSQL binds only COMMIT and ROLLBACK (exec_bind_message); the server refuses
    // the other statements when the proxy runs them, but an empty one the proxy answers itself
    if (st.text.trim() === '' && this.status() === 'E') throw new ProxyError('25P02', ABORTED_MESSAGE);
    const failed = this.status() === 'E' || this.failPending;
    const values = m.params.map((b, i) => {
      if (b === null) return null;
      const format = paramFormat(m, i);
      // (in a failed transaction PostgreSQL's 25P02 comes first, and the server gives it: nothing is written)
      const checked = !failed && (format !== 1 || textualType(paramType(st, i)));
      const invalid = checked ? invalidUtf8(b) : undefined;
      if (invalid !== undefined) {
        // (postgres.c, bind_param_error_callback: the value is not known yet)
        const portal = m.portal === '' ? 'unnamed portal' : `portal "${m.portal}"`;
        throw new ProxyError('22021', invalid, `${portal} parameter $${i + 1}`);
      }
      if (format !== 1) return b.toString('utf8');
      try {
        return decodeBinaryParam(b, paramType(st, i), this.ctx.types);
      } catch (e) {
        if (!(e instanceof BinaryParamError)) throw e;
        // (as the server's receive function and exec_bind_message say it, with bind_param_error_callback's context)
        const portal = m.portal === '' ? 'unnamed portal' : `portal "${m.portal}"`;
        const message = e.short ? e.message : `incorrect binary data format in bind parameter ${i + 1}`;
        throw new ProxyError(e.short ? '08P01' : '22P03', message, `${portal} parameter $${i + 1}`);
      }
    });
    st.binds = (st.binds ?? 0) + 1;
    return {
      name: m.portal,
      savepoints: this.savepoints,
      statement: st,
      customPlan: st.binds <= CUSTOM_PLANS,
      text: st.text,
      paramTypes: st.paramTypes,
      values,
      resultFormats: m.resultFormats,
      sent: 0,
    };
  }

  /** The types of a Bind's binary parameters that are neither built in nor read from the catalog yet. */
  private unknownParamTypes(m: FrontendMessage & { type: 'B' }): number[] {
    const st = this.statements.get(m.statement);
    if (!st || m.paramFormats.every((f) => f !== 1)) return [];
    const out: number[] = [];
    m.params.forEach((b, i) => {
      const oid = paramType(st, i);
      if (b !== null && paramFormat(m, i) === 1 && oid !== 0 && !this.ctx.types.known(oid)) out.push(oid);
    });
    return out;
  }

  private formatOf(p: Portal, i: number): number {
    const f = p.resultFormats;
    return f.length === 0 ? 0 : f.length === 1 ? f[0] : (f[i] ?? 0);
  }

  /**
   * Several Executes before one Sync outside a transaction block are one implicit transaction in PostgreSQL: when
   * the Executes that follow are already here (a pipeline sent at once, as JDBC's executeBatch does), the proxy
   * begins one (recorded as one transaction) and ends it at the Sync. So does any other message before the Sync that
   * may fail (the server rolls back the implicit transaction then), and a Sync not here yet (what comes before it is
   * unknown). An Execute followed by its Sync alone runs on its own, in one round trip.
   */
  private async beginImplicit(p: Portal, executesAhead: number): Promise<void> {
    if (this.implicit || this.status() !== 'I' || !this.opensImplicit(p.text)) return;
    // the first statement is not in PostgreSQL's implicit transaction yet: one that needs a block fails alone
    if (OWN_TRANSACTION.test(withoutLeadingComments(p.text))) return;
    let executes = 0;
    let sync = false;
    for (const m of this.pending) {
      if (m.type === 'S') {
        sync = true;
        break;
      }
      // another Execute, or a message ahead that may fail (a Parse, when it runs or at the Sync: checkParses; a
      // Bind or Describe, of a name that does not exist): what ran before it is then rolled back with it
      if (m.type !== 'H' && m.type !== 'C') executes++;
    }
    // with its Sync not here yet (a client that sent Flush and waits), what comes before the Sync is unknown: the
    // statement runs in the proxy's block, so that it commits at the Sync with whatever follows, as on the server
    if (sync && executes < executesAhead) return;
    await this.run('BEGIN');
    this.implicit = true;
  }

  /** At Sync: COMMIT the implicit transaction, or ROLLBACK when a statement failed in it. */
  private async endImplicit(): Promise<void> {
    this.implicit = false;
    const status = this.status();
    if (status === 'E') await this.run('ROLLBACK');
    else if (status === 'T') await this.run('COMMIT');
  }

  /** Runs a portal once (at its Describe or first Execute; `maxRows`: that Execute's row limit, 0: none). */
  private async runPortal(p: Portal, executesAhead: number, maxRows = 0): Promise<Outcome> {
    if (p.outcome) return p.outcome;
    if (/^\s*copy\b/i.test(p.text) && splitStatements(p.text)[0]?.copy)
      throw new ProxyError(
        '0A000',
        'isocheck proxy: COPY FROM STDIN / TO STDOUT is relayed in the simple query protocol only (a Query message)',
      );
    const wasImplicit = this.implicit;
    await this.beginImplicit(p, executesAhead);
    const statement = this.controlOf(p.text);
    if (endsBlock(statement)) this.snapshot = false;
    const setsModes = (statement?.kind === 'begin' && statement.modes !== '') || statement?.kind === 'set-transaction';
    if (setsModes && this.snapshot && !this.implicit && this.status() === 'I') {
      // the client's transaction took a snapshot before: it is open (PostgreSQL's implicit one), and the modes are
      // checked against it
      await this.run('BEGIN');
      this.implicit = true;
    }
    await this.snapshotForModes(statement);
    // the first statement of a transaction outside a block is not in PostgreSQL's implicit transaction yet (that
    // begins after its Execute): SET TRANSACTION and SET LOCAL warn there, which in the proxy's block they do not
    const outside = !wasImplicit && this.implicit ? blockOnlyWarning(p.text) : undefined;
    const first: HeldNotice[] = outside ? [outside] : [];
    let outcomes: Outcome[];
    let fetch: QueryOptions['fetch'];
    try {
      if (this.implicit && statement) {
        // refused or failed, it is described first (NoData) and fails at its Execute, as the server's would
        const o = await this.controlInImplicit(p.text, statement, true).then(
          (x) => ({ ...x, notices: [...first, ...(x.notices ?? [])] }),
          (e: unknown) => ({ ...NO_ROWS, error: e, notices: [...first, ...this.takeNotices()] }),
        );
        p.statement.checked = true;
        p.outcome = o;
        return o;
      }
      // (its parts need a block to live in across Syncs: outside one, beginImplicit above has begun the proxy's,
      // PostgreSQL's implicit one, unless the client's Sync follows with nothing between: then this part is the
      // only one, and the portal ends at that Sync on both sides)
      if (maxRows > 0 && this.fetchable(p)) {
        fetch = { portal: `__isocheck_proxy_portal_${++this.serverPortalCount}`, rows: maxRows };
      }
      this.runningPortal = p;
      outcomes = await this.run(p.text, p.values, p.paramTypes, true, true, fetch)
        .catch((e: unknown) => {
          if (fetch) clientPortalNamed(e, fetch.portal, p.name);
          throw e;
        })
        .finally(() => {
          this.runningPortal = undefined;
        });
      if (outside) {
        const last = outcomes[outcomes.length - 1];
        last.notices = [...first, ...(last.notices ?? [])];
      }
    } catch (e) {
      this.noticesOfFailure.unshift(...first);
      this.nameBindCount(e, p);
      // the server bound it (the error came after BindComplete): its parameter count is known, checked first at a
      // later Bind, as PostgreSQL checks it, even in a failed transaction
      if (this.phase?.last === 'execute') p.statement.paramCount = p.values.length;
      this.retract(e, p.statement, p);
      // failed in running, after the server described it (and maybe sent rows): the Describe gets its answer,
      // the Execute the rows, then the error (failedOutcome)
      const failed = this.phase?.last === 'execute' ? this.failedOutcome(p.text, p.values.length, e) : undefined;
      if (!failed) {
        for (const n of this.takeNotices()) this.send(n.message);
        throw e;
      }
      failed.columns.forEach((c, i) => {
        c.format = this.formatOf(p, i);
      });
      p.outcome = failed;
      return failed;
    }
    p.statement.checked = true;
    p.statement.paramCount = p.values.length;
    const o = outcomes[outcomes.length - 1];
    if (o.server && fetch) {
      this.serverPortals.set(fetch.portal, o);
      o.serverName = fetch.portal;
      // (suspended: it returns rows, columns or not; its tag comes with its last part)
      if (o.server.suspended) o.returnsRows = true;
      else o.server = undefined;
    }
    const binary = o.columns.filter((_, i) => this.formatOf(p, i) === 1).map((c) => c.dataTypeID);
    const unknown = binary.filter((oid) => !this.ctx.types.known(oid));
    if (unknown.length > 0) await this.ctx.resolveTypes(unknown);
    o.columns.forEach((c, i) => {
      c.format = this.formatOf(p, i);
      if (c.format === 1 && !binaryResultSupported(c.dataTypeID, this.style, this.ctx.types))
        throw new BinaryFormatError(binaryRefusal(c.name, c.dataTypeID, this.style, this.ctx.types));
    });
    p.outcome = o;
    return o;
  }

  private async describe(what: 'S' | 'P', name: string): Promise<void> {
    if (what === 'P' && name !== '' && !this.portals.has(name)) {
      // not a portal the client bound: maybe a cursor it declared (DECLARE makes a portal of that name, which the
      // protocol describes too: psycopg 3's server-side cursors), which the server describes, or its 34000
      const columns = await this.describeServerPortal(name);
      this.send(columns ? B.rowDescription(withoutAddedColumns(columns)) : B.noData());
      return;
    }
    if (what === 'P') {
      const p = this.portal(name);
      if (p.text.trim() === '') {
        this.send(B.noData());
        return;
      }
      // in a failed transaction PostgreSQL describes a portal that returns no rows, and refuses one that does
      // (exec_describe_portal_message): one that ran before the transaction failed too
      if (p.outcome?.returnsRows && this.failedBefore()) throw new ProxyError('25P02', ABORTED_MESSAGE);
      const ahead = p.outcome ? undefined : this.executeAhead(name);
      if (p.outcome || ahead) {
        // its Execute is already here (Bind, Describe, Execute, Sync sent together): run it now, once (with that
        // Execute's row limit); when it fails in running, the Describe still gets its answer first, as from the
        // server
        const o = await this.runPortal(p, 2, ahead?.maxRows ?? 0);
        this.send(o.returnsRows ? B.rowDescription(o.columns) : B.noData());
        return;
      }
      // described before any Execute of it arrived: the server describes it, nothing runs (the portal may be
      // closed unexecuted)
      const { columns } = await this.describeText(p.text, p.paramTypes).catch((e: unknown) => {
        this.retract(e, p.statement, p);
        throw e;
      });
      p.statement.checked = true;
      if (!columns) {
        this.send(B.noData());
        return;
      }
      columns.forEach((c, i) => {
        c.format = this.formatOf(p, i);
      });
      this.send(B.rowDescription(columns));
      return;
    }
    const st = this.statements.get(name);
    if (!st) throw noStatement(name);
    if (this.status() === 'E') {
      // in a failed transaction PostgreSQL describes a statement that returns no rows (from what its Parse found)
      // and refuses one that does (25P02, which the server says)
      // (a statement parsed since the last Sync that the server has not seen: its Parse failed there, unless it is
      // COMMIT or ROLLBACK, the only statements PostgreSQL parses in a failed transaction)
      const plan = this.planOf(st.text, 0);
      const exit = this.endsTransaction(st.text);
      const known =
        st.described ??
        ((st.checked && plan?.kind === 'settings') || (plan?.kind === 'control' && (st.checked || exit))
          ? { params: st.paramTypes, columns: null }
          : undefined);
      // (parsed by the client only, the server's Parse at its run or description never came: asked of a server
      // connection outside the failed transaction)
      const d =
        known ?? (!st.inFailed && st.text.trim() !== '' ? await this.describeAside(st.text, st.paramTypes) : undefined);
      if (d && d.columns === null) {
        if (!known) st.described = d;
        this.send(B.parameterDescription(d.params));
        this.send(B.noData());
        return;
      }
    }
    const d = await this.describeText(st.text, st.paramTypes).catch((e: unknown) => {
      this.retract(e, st);
      throw e;
    });
    st.checked = true;
    st.described = d;
    this.send(B.parameterDescription(d.params));
    this.send(d.columns ? B.rowDescription(d.columns) : B.noData());
  }

  /** A Bind with the wrong number of parameters: the server's message names the statement the proxy ran (unnamed,
   *  or the recorder's, with the recorder's own parameters counted); the client's statement and counts instead. */
  private nameBindCount(e: unknown, p: Portal): void {
    const err = e as { code?: unknown; message?: unknown };
    const m = err?.code === '08P01' && typeof err.message === 'string' ? BIND_COUNT.exec(err.message) : null;
    if (!m) return;
    let name = '';
    for (const [n, st] of this.statements) if (st === p.statement) name = n;
    const added = Number(m[1]) - p.values.length;
    const requires = Number(m[2]) - added;
    const supplies = p.values.length;
    err.message = `bind message supplies ${supplies} parameters, but prepared statement "${name}" requires ${requires}`;
  }

  /** The notices of the statement that failed last, taken (sent by whoever reports the failure). */
  private takeNotices(): HeldNotice[] {
    const held = this.noticesOfFailure;
    this.noticesOfFailure = [];
    return held;
  }

  /** A Query's rows (text), each after the notices raised before it, and the notices raised after the last. */
  private sendTextRows(o: Outcome): void {
    for (let i = 0; i < o.rows.length; i++) {
      this.noticesBefore(o, i);
      this.send(B.dataRowText(o.rows[i]));
    }
    this.noticesBefore(o, o.rows.length);
  }

  /** The notices of `o` raised before the server sent its row `i` (every one left, at the end): sent now. */
  private noticesBefore(o: Outcome, i: number): void {
    const ns = o.notices;
    if (!ns) return;
    let k = o.noticesSent ?? 0;
    for (; k < ns.length && !ns[k].after && (ns[k].row <= i || i >= o.rows.length); k++) this.send(ns[k].message);
    o.noticesSent = k;
  }

  /** What the server raised in committing a statement run on its own (its notices after its CommandComplete, an
   *  error), sent at the client's Sync: where a direct connection commits it. */
  private deferToSync(o: Outcome, error?: unknown): void {
    if (error === undefined && (o.notices?.length ?? 0) === (o.noticesSent ?? 0)) return;
    // only when that Sync is here already, with nothing before it that runs: a statement after this one would be
    // in the same transaction on a direct connection, which the proxy has committed (then it sends them now, and an
    // error skips to the Sync, as before: the later statements are not run, where the server rolls them back)
    if (!this.syncNext()) {
      this.noticesAfter(o);
      if (error !== undefined) throw error;
      return;
    }
    this.atSync.push(...this.noticesLeft(o));
    if (error !== undefined) this.errorAtSync = error;
  }

  /** The messages received next are a Sync, maybe after Close and Flush. */
  private syncNext(): boolean {
    for (const m of this.pending) {
      if (m.type === 'S') return true;
      if (m.type !== 'C' && m.type !== 'H') return false;
    }
    return false;
  }

  /** The end of a Sync: its Parses forgotten, the portals of an ended transaction dropped, what deferToSync kept
   *  sent, then ReadyForQuery. */
  private endSync(): void {
    this.parsedSinceSync.length = 0;
    this.dropPortalsOutsideTransaction();
    for (const b of this.atSync) this.send(b);
    this.atSync.length = 0;
    const e = this.errorAtSync;
    this.errorAtSync = undefined;
    if (e !== undefined) this.sendError(e);
    this.ready();
  }

  /** The notices of `o` raised after the server's CommandComplete, sent after the proxy's. */
  private noticesAfter(o: Outcome): void {
    for (const b of this.noticesLeft(o)) this.send(b);
  }

  /** The notices of `o` not sent yet, now counted as sent. */
  private noticesLeft(o: Outcome): Buffer[] {
    const ns = o.notices ?? [];
    const left = ns.slice(o.noticesSent ?? 0).map((n) => n.message);
    o.noticesSent = ns.length;
    return left;
  }

  /**
   * A statement that failed in running after the server described it (ServerPhase): what the client gets before
   * the error, as from the server: its columns (a recorded statement's rewritten text has the recorder's columns at
   * the end, or only those when the client's statement returns no rows) and the rows sent before the error.
   * Undefined when the server had not described it.
   */
  private failedOutcome(text: string, nValues: number, error: unknown): Outcome | undefined {
    const d = this.phase?.lastDescribed;
    if (d === undefined) return undefined;
    const notices = this.takeNotices();
    const completed = this.phase!.lastCompleted;
    const done = { tag: completed ?? '', completed: completed !== undefined };
    const none: Outcome = { columns: [], rows: [], returnsRows: false, error, notices, ...done };
    if (d === null) return none;
    const plan = this.planOf(text, nValues);
    let n = d.length;
    if (plan && 'sql' in plan && 'appRows' in plan) {
      if (!plan.appRows) return none;
      n -= plan.added;
    } else n = withoutAdded(plan, d).length;
    const rows = this.phase!.lastRows;
    return {
      columns: d.slice(0, n).map(columnOf),
      rows: n === d.length ? rows : rows.map((r) => r.slice(0, n)),
      returnsRows: true,
      error,
      notices,
      ...done,
    };
  }

  /** The Execute of this portal among the messages received, before the next Sync, if there is one. */
  private executeAhead(portal: string): (FrontendMessage & { type: 'E' }) | undefined {
    for (const m of this.pending) {
      // a Close of it, or a Bind over it (the Execute is then the next portal's)
      if (m.type === 'S' || (m.type === 'C' && m.what === 'P' && m.name === portal)) return undefined;
      if (m.type === 'B' && m.portal === portal) return undefined;
      if (m.type === 'E' && m.portal === portal) return m;
    }
    return undefined;
  }

  /** The parameters and the columns the client will receive of a statement text, as the server describes it. */
  private async describeText(
    text: string,
    paramTypes: number[],
  ): Promise<{ params: number[]; columns: B.Column[] | null }> {
    const d = await this.describeStatement(text, paramTypes);
    // a recorded statement returns the columns of its rewritten text, the added ones removed (SELECT * of the
    // original text would also show the hidden wid column)
    await this.knowShadows(text, d.params.length);
    const plan = this.planOf(text, d.params.length);
    // a FETCH from a cursor the recorder declared over a recorded SELECT: its added columns come last, under the
    // recorder's own names (a FETCH from another cursor has none of them)
    if (d.columns && plan?.kind === 'passthrough') return { params: d.params, columns: withoutAdded(plan, d.columns) };
    if (!d.columns || !plan || !('appRows' in plan) || !plan.appRows) return d;
    const rewritten = await this.describeStatement(plan.sql, paramTypes).catch((e: unknown) => {
      const err = e as { position?: string };
      if (typeof err?.position === 'string') {
        const at = mapPosition(text, plan.sql, Number(err.position));
        if (at === undefined) delete err.position;
        else err.position = String(at);
      }
      throw e;
    });
    const columns = rewritten.columns ? rewritten.columns.slice(0, rewritten.columns.length - plan.added) : null;
    return { params: d.params, columns };
  }

  /** The session recording this connection's statements (the connection's own or a named one), once it records. */
  private session(): Session | undefined {
    const c = this.client as unknown as object | undefined;
    if (c === undefined) return undefined;
    return (c instanceof RecordingClient ? c : recordingOf(c))?.session;
  }

  /** Before the proxy describes a recorded statement it has not run, the session's search path is read when not
   *  known: a name it gives to another relation is not the recorded table (docs/recording.md). */
  private knowShadows(text: string, nValues: number): Promise<unknown> | undefined {
    const s = this.session();
    if (s === undefined || s.shadowed !== undefined || this.status() === 'E') return undefined;
    const plan = this.planOf(text, nValues);
    return plan !== undefined && 'tables' in plan && plan.tables.length > 0 ? s.shadows() : undefined;
  }

  /** The recorder's plan for a text, or undefined when it has none (not instrumented yet, refused). */
  private planOf(text: string, nValues: number): ReturnType<Recorder['plan']> | undefined {
    try {
      return this.ctx.recorder.plan(text, nValues, this.session()?.shadowed);
    } catch {
      return undefined;
    }
  }

  /**
   * The server's description of a statement text, asked on the describer connection: for a statement the client
   * parsed in a transaction that has failed since, before the server saw its text (the proxy answered the Parse).
   * A direct connection parsed it at the Parse and describes it still when it returns no rows; the proxy's own
   * connection can no longer parse it (25P02). Undefined when the describer cannot describe it (it does not see
   * what the failed transaction made, nor SETs of the session): the caller then asks the proxy's connection.
   */
  private async describeAside(
    text: string,
    paramTypes: number[],
  ): Promise<{ params: number[]; columns: B.Column[] | null } | undefined> {
    try {
      this.describer ??= this.ctx.connectServer(this.params).then(({ raw }) => {
        raw.on('error', () => undefined);
        return raw;
      });
      return await this.describeStatement(text, paramTypes, await this.describer);
    } catch {
      return undefined;
    }
  }

  /** The server's RowDescription of one of its portals (a cursor the client declared), null: NoData. */
  private async describeServerPortal(name: string): Promise<B.Column[] | null> {
    const d = await this.describeOnServer((c) => c.describe({ type: 'P', name }));
    return d.columns;
  }

  /** The server's ParameterDescription and RowDescription of a statement text (on the proxy's connection, or
   *  another: then not where the client's errors come from). */
  private describeStatement(
    text: string,
    paramTypes: number[],
    raw = this.raw!,
  ): Promise<{ params: number[]; columns: B.Column[] | null }> {
    return this.describeOnServer((c) => {
      c.parse({ name: '', text, types: paramTypes });
      c.describe({ type: 'S', name: '' });
    }, raw);
  }

  /** What the server answers to `send`'s messages and a Sync: its ParameterDescription (none: no parameters) and its
   *  RowDescription (null: NoData), the columns' formats as it gives them (a statement's are text). */
  private describeOnServer(
    send: (c: { parse(x: unknown): void; describe(x: unknown): void }) => void,
    raw = this.raw!,
  ): Promise<{ params: number[]; columns: B.Column[] | null }> {
    const con = (raw as unknown as { connection: NodeJS.EventEmitter }).connection;
    if (raw === this.raw) this.phase?.expect();
    return new Promise((resolve, reject) => {
      let params: number[] = [];
      let columns: B.Column[] | null = null;
      const onParams = (msg: { dataTypeIDs: number[] }): void => {
        params = msg.dataTypeIDs;
      };
      con.on('parameterDescription', onParams);
      const done = (): void => {
        con.removeListener('parameterDescription', onParams);
      };
      const q = {
        submit(c: { parse(x: unknown): void; describe(x: unknown): void; sync(): void }) {
          send(c);
          c.sync();
        },
        handleRowDescription(msg: { fields: B.Column[] }) {
          // (pg-protocol gives the format as 'text' or 'binary')
          columns = msg.fields.map((f) => ({ ...f, format: String(f.format) === 'binary' ? 1 : 0 }));
        },
        handleError(err: Error) {
          done();
          reject(err);
        },
        handleReadyForQuery() {
          done();
          resolve({ params, columns });
        },
        handleDataRow() {},
        handleCommandComplete() {},
        handleEmptyQuery() {},
        handlePortalSuspended() {},
        handleCopyInResponse() {},
      };
      // (the describer's query() is pg's own: nothing of it is recorded, not even an empty session)
      const query = raw === this.raw ? raw.query : pg.Client.prototype.query;
      (query as (this: pg.Client, q: unknown) => unknown).call(raw, q);
    });
  }

  /**
   * `COPY ... FROM STDIN` / `TO STDOUT`: into a recorded table, recorded (copyRecorded); on a table not recorded,
   * relayed between the client and the server (relayCopy); other COPYs of recorded tables (TO, WHERE, FREEZE, ...)
   * the recorder refuses (SQLSTATE 0A000), or with --on-unsupported pass they are relayed with a warning.
   */
  private async copy(text: string): Promise<Outcome> {
    let recorded: RecordedCopy | undefined;
    let out: CopyOut | undefined;
    if (this.ctx.recorder.instrumented) {
      try {
        // (a name the session's search path gives to another relation is not the recorded table: Settings.shadowed)
        const s = this.status() === 'E' ? undefined : this.session();
        const shadowed = s === undefined ? undefined : (s.shadowed ?? (await s.shadows()));
        const table = (schema: string | undefined, rel: string): TableInfo | undefined =>
          schema === undefined && shadowed?.names.has(rel) ? undefined : this.ctx.recorder.table(schema, rel);
        recorded = recordedCopyFrom(text, table);
        const plan = recorded ? undefined : this.ctx.recorder.plan(text, 0, shadowed);
        if (plan?.kind === 'select') out = plan.copy;
        if (out?.table) await this.copyOnlyOwnRows(text, out.table);
      } catch (e) {
        if (this.ctx.onUnsupported !== 'pass' || (e as Error)?.name !== 'UnsupportedStatementError') throw e;
        this.passWarning(text, e);
        out = undefined;
      }
    }
    if (recorded) return this.copyRecorded(recorded);
    if (!out) return this.relayCopy(text);
    // COPY ... TO STDOUT reading a recorded table (rewrite-copy.ts): the recorder runs it through copyOut
    let sent: { at: readonly [number, number]; replacement: string } | undefined;
    const copyOut = async (c: CopyOut, added: number): Promise<string> => {
      let copy =
        c.text === undefined ? undefined : { text: c.text, length: c.text.length - text.length + c.at[1] - c.at[0] };
      if (!copy) {
        // a query's columns: as the server describes its rewritten text, the added ones left out
        const inner = text.slice(c.at[0] + 1, c.at[1] - 1);
        const d = await this.describeStatement(c.select, []).catch((e: unknown) => {
          const err = e as { position?: string };
          const p = typeof err?.position === 'string' ? mapPosition(inner, c.select, Number(err.position)) : undefined;
          if (p === undefined) delete err.position;
          else err.position = String(p + codePoints(text.slice(0, c.at[0] + 1)));
          throw e;
        });
        const names = (d.columns ?? []).slice(0, (d.columns?.length ?? 0) - added).map((col) => col.name);
        copy = copyOutText(text, c.at, c.select, added, names);
      }
      sent = { at: c.at, replacement: copy.text.slice(c.at[0], c.at[0] + copy.length) };
      return (await this.relayCopy(copy.text)).tag;
    };
    try {
      const r = await this.recording().query({ text, copyOut } as pg.QueryConfig);
      return { columns: [], rows: [], tag: `COPY ${r.rowCount}`, returnsRows: false };
    } catch (e) {
      if (sent) copyPosition(e, text, sent.at, sent.replacement);
      throw e;
    }
  }

  /** A table's COPY TO gives its own rows, the recorder's SELECT its inheritance children's too: a table that has
   *  children now is refused (one catalog read; the COPY would fail as this does in a failed transaction, 25P02). */
  private async copyOnlyOwnRows(text: string, table: TableInfo): Promise<void> {
    const q = `SELECT EXISTS (SELECT 1 FROM pg_inherits WHERE inhparent = ${table.oid}) AS children`;
    const [row] = ((await this.serverQuery(q)) as { rows: { children: boolean }[] }).rows;
    if (row.children)
      throw new UnsupportedStatementError(
        text,
        `${table.name} has inheritance children, whose rows a COPY of it leaves out and the recorder reads with it`,
        'COPY (SELECT ... FROM ONLY ...) is not recorded either: SELECT the rows while recording.',
      );
  }
  /** A COPY FROM STDIN into a recorded table (copy-from.ts): staged, then inserted through the recorder, in one
   *  transaction as the COPY is (outside a block, the proxy's: simpleQuery ends it). */
  private async copyRecorded(c: RecordedCopy): Promise<Outcome> {
    if (!this.implicit && this.status() === 'I') {
      await this.run('BEGIN');
      this.implicit = true;
    }
    type Facts = { ro: string; generated: string | null; rules: boolean; staged: boolean };
    const [facts] = ((await this.serverQuery(copyFacts(c.table))) as { rows: Facts[] }).rows;
    if (facts.ro === 'on') throw new ProxyError('25006', 'cannot execute COPY FROM in a read-only transaction');
    if (facts.rules)
      throw new ProxyError(
        '0A000',
        `isocheck proxy: COPY FROM into ${c.table.relname} is not recorded: the table has rules, which COPY ` +
          'ignores and the INSERT the proxy records it by would apply',
      );
    const generated = JSON.parse(facts.generated ?? '[]') as string[];
    const listed = generatedListed(c, generated);
    if (listed && !listed.errorBefore)
      throw new ProxyError(
        '42P10',
        `column "${listed.column}" is a generated column`,
        undefined,
        'Generated columns cannot be used in COPY.',
      );
    // (empty: emptied after each COPY, and when its transaction rolls back, so are the rows it had)
    if (!facts.staged) await this.serverQuery(stagingTable(c, generated));
    this.copying = c;
    try {
      await this.relayCopy(c.staged);
    } catch (e) {
      stagedMessage(e, c);
      throw e;
    } finally {
      this.copying = undefined;
    }
    const [o] = await this.run(insertStaged(c, generated), [], [], false, true);
    await this.serverQuery(`TRUNCATE pg_temp.${stagingName(c.table)}`);
    return { ...o, tag: `COPY ${o.tag.slice(o.tag.lastIndexOf(' ') + 1)}` };
  }
  /** A COPY FROM STDIN under way whose client is gone fails on the server (which a direct connection's backend does
   *  too), so that the proxy gets to end the session. */
  private failCopyOfGoneClient(): void {
    if (this.copyIn && this.clientGone)
      this.copyMessage({ type: 'f', message: 'isocheck proxy: the client disconnected' });
  }
  /** COPY relayed message by message between the client and the server. */
  private relayCopy(text: string): Promise<Outcome> {
    const raw = this.raw!;
    const con = (raw as unknown as { connection: CopyConnection }).connection;
    return new Promise<Outcome>((resolve, reject) => {
      let tag = 'COPY';
      const onIn = (msg: CopyResponse): void => {
        this.copyIn = true;
        this.send(B.copyResponse('G', msg.binary, msg.columnTypes));
        this.flush();
        // this COPY's, up to its end (a Query of several COPYs: the next one's come after it)
        while (this.copyIn && this.copyEarly[0]?.query === this.copyRunning)
          this.copyMessage(this.copyEarly.shift()!.m);
        this.failCopyOfGoneClient();
      };
      const onOut = (msg: CopyResponse): void => this.send(B.copyResponse('H', msg.binary, msg.columnTypes));
      const onDone = (): void => this.send(B.copyDone());
      con.on('copyInResponse', onIn);
      con.on('copyOutResponse', onOut);
      con.on('copyDone', onDone);
      const done = (): void => {
        this.copyIn = false;
        con.removeListener('copyInResponse', onIn);
        con.removeListener('copyOutResponse', onOut);
        con.removeListener('copyDone', onDone);
      };
      const q = {
        submit: (c: CopyConnection) => c.query(text),
        handleCopyInResponse() {},
        handleCopyData: (msg: { chunk: Buffer }) => this.send(B.copyData(msg.chunk)),
        handleCommandComplete(msg: { text: string }) {
          tag = msg.text;
        },
        handleError: (err: Error) => {
          done();
          // (the proxy's CopyFail for a message the server would have failed the COPY at: the server's error for it)
          if (this.copyUnexpected !== undefined) {
            const e = err as Error & { code?: string };
            e.code = '08P01';
            const type = this.copyUnexpected.toString(16).toUpperCase();
            e.message = `unexpected message type 0x${type} during COPY from stdin`;
            this.copyUnexpected = undefined;
          }
          reject(err);
        },
        handleReadyForQuery() {
          done();
          resolve({ columns: [], rows: [], tag, returnsRows: false });
        },
        handleRowDescription() {},
        handleDataRow() {},
        handleEmptyQuery() {},
        handlePortalSuspended() {},
      };
      (pg.Client.prototype.query as (q: unknown) => unknown).call(raw, q);
    });
  }

  /** The client's CopyData, CopyDone or CopyFail, to the server (during COPY FROM STDIN). */
  private copyMessage(m: FrontendMessage & { type: 'd' | 'c' | 'f' }): void {
    if (!this.raw) return;
    const con = (this.raw as unknown as { connection: CopyConnection }).connection;
    if (m.type === 'd') con.sendCopyFromChunk(m.data);
    else {
      this.copyIn = false;
      if (m.type === 'c') con.endCopyFrom();
      else con.sendCopyFail(m.message);
    }
  }

  private portal(name: string): Portal {
    const p = this.portals.get(name);
    if (!p) throw new ProxyError('34000', `portal "${name}" does not exist`);
    return p;
  }

  private async execute(name: string, maxRows: number): Promise<void> {
    const p = this.portal(name);
    // in a failed transaction PostgreSQL refuses the Execute before it looks at the portal's state
    // (exec_execute_message): 25P02 for a portal that ran to its end too, unless it is COMMIT or ROLLBACK
    if (p.done && this.status() === 'E' && !this.endsTransaction(p.text))
      throw new ProxyError('25P02', ABORTED_MESSAGE);
    if (p.done) throw new ProxyError('55000', `portal "${name}" cannot be run`);
    if (p.text.trim() === '') {
      this.send(B.emptyQueryResponse());
      return;
    }
    const o = await this.runPortal(p, 1, maxRows);
    if (this.partDue(p, o)) await this.nextPart(p, o, maxRows);
    this.sendRows(p, o, maxRows);
  }

  /**
   * Whether a portal's Execute with a row limit runs as a server portal of its own, fetched as the client fetches
   * (docs/recording.md): a SELECT the recorder records (its read is `partial` while rows are left), or a statement it
   * passes through that returns rows. Another (a write with RETURNING, which PostgreSQL runs whole at its first
   * Execute anyway) runs whole, its rows handed out in parts.
   */
  private fetchable(p: Portal): boolean {
    if (this.status() === 'E' || this.failPending || p.savepoints !== this.savepoints) return false;
    const plan = this.planOf(p.text, p.values.length);
    // (a DECLARE returns no rows: its cursor's rows come with FETCHes)
    if (plan?.kind === 'select') return plan.declare === undefined;
    return plan?.kind === 'passthrough' && RETURNS_ROWS.test(withoutLeadingComments(p.text));
  }

  /**
   * Before a statement goes to the server: a Close ahead of it for each server portal no client portal has any more
   * (the client closed it, bound another over its name, or a Query dropped the unnamed one), so that the server frees
   * it (its executor, its snapshot) as it would have freed the client's, and DDL on its table is allowed (PostgreSQL
   * refuses DDL on a table an open portal uses, 55006; pgjdbc sends a ResultSet's Close with the next statement). No
   * round trip of its own: pg ignores the CloseComplete, and a Close of a portal the server dropped already (at a
   * transaction's end) is no error. (A Close or Bind whose answer is still held is final here too: an error at a
   * held Parse or Bind would undo it on a direct connection, Ack, but then the client does not fetch that portal.)
   */
  private closeServerPortals(): void {
    if (this.serverPortals.size === 0 || !this.raw) return;
    const used = new Set<Outcome>();
    for (const p of this.portals.values()) if (p.outcome) used.add(p.outcome);
    const con = (this.raw as unknown as { connection: { close(x: { type: 'P'; name: string }): void } }).connection;
    for (const [name, o] of this.serverPortals) {
      if (used.has(o)) continue;
      con.close({ type: 'P', name });
      this.serverPortals.delete(name);
    }
  }

  /** The client has had every row of the server portal's parts: its next Execute fetches the next part. */
  private partDue(p: Portal, o: Outcome): boolean {
    return o.server?.suspended === true && p.sent === o.rows.length;
  }

  /** The next part of a portal fetched as the client fetches (up to maxRows rows, 0: the rest): its rows, its
   *  notices among them, its tag when it completes, or its error after the rows that came before it. */
  private async nextPart(p: Portal, o: Outcome, maxRows: number): Promise<void> {
    const base = o.rows.length;
    this.tags = [];
    this.phase?.expect(o.columns);
    this.noticesHeld = [];
    try {
      const r = await o.server!.more(maxRows);
      o.rows.push(...(r.rows as (string | null)[][]));
      o.server = r.suspended ? r : undefined;
      if (!r.suspended) o.tag = this.outcome(r as unknown as pg.QueryArrayResult).tag;
    } catch (e) {
      // (the server's rows have the recorder's columns after the client's)
      o.rows.push(...(this.phase?.lastRows ?? []).map((r) => r.slice(0, o.columns.length)));
      o.server = undefined;
      o.error = e;
      if (o.serverName) clientPortalNamed(e, o.serverName, p.name);
    } finally {
      const held = this.noticesHeld ?? [];
      this.noticesHeld = undefined;
      if (held.length > 0) o.notices = [...(o.notices ?? []), ...held.map((n) => ({ ...n, row: n.row + base }))];
    }
  }

  /** An Execute's rows (up to maxRows, 0: all) and its CommandComplete, or PortalSuspended when rows are left. */
  private sendRows(p: Portal, o: Outcome, maxRows: number): void {
    const end = maxRows > 0 ? Math.min(o.rows.length, p.sent + maxRows) : o.rows.length;
    const binary = o.columns.some((c) => c.format === 1);
    for (let i = p.sent; i < end; i++) {
      this.noticesBefore(o, i);
      if (!binary) {
        this.send(B.dataRowText(o.rows[i]));
        continue;
      }
      this.send(
        B.dataRow(
          o.rows[i].map((v, j) => {
            if (v === null) return null;
            const c = o.columns[j];
            return c.format === 1 ? encodeBinaryResult(v, c.dataTypeID, this.ctx.types) : Buffer.from(v, 'utf8');
          }),
        ),
      );
    }
    const batch = end - p.sent;
    p.sent = end;
    if (end === o.rows.length) this.noticesBefore(o, end);
    if (o.error !== undefined && end === o.rows.length && !(maxRows > 0 && batch === maxRows)) {
      p.done = true;
      if (!o.completed) throw o.error;
      // completed, then failed in committing at the Sync (run on its own: the client's Sync, on a direct connection)
      this.send(B.commandComplete(o.tag));
      this.deferToSync(o, o.error);
      return;
    }
    // PostgreSQL suspends a portal whenever an Execute reached its row limit, rows left or not (PortalRunSelect
    // marks it at its end only when it fetched fewer): the next Execute then gets no rows and "SELECT 0"
    if (end < o.rows.length || (o.returnsRows && maxRows > 0 && batch === maxRows)) {
      this.send(B.portalSuspended());
      // (run on its own and committed: what committing raised comes at the Sync, which closes the portal)
      if (o.completed || o.notices?.some((n) => n.after)) {
        p.done = o.completed === true;
        this.deferToSync(o, o.completed ? o.error : undefined);
      }
      return;
    }
    // fetched in parts (a row limit now or before): the count is this Execute's rows, as PostgreSQL's PortalRun
    // gives it for a SELECT and for a RETURNING alike ("SELECT 1", "UPDATE 1", "INSERT 0 1"); a statement that
    // returns no rows runs whole whatever the limit (JDBC's executeUpdate sends one), its tag its own
    const partial = o.returnsRows && (maxRows > 0 || end - batch > 0);
    this.send(B.commandComplete(partial && /\d$/.test(o.tag) ? o.tag.replace(/\d+$/, String(batch)) : o.tag));
    this.deferToSync(o);
    if (!o.returnsRows) p.done = true;
    // a COMMIT or ROLLBACK run as a portal ends the transaction, and every portal with it (its own too), a chained
    // one's too
    const c = this.controlOf(p.text);
    if (endsBlock(c)) this.portals.clear();
    else if (c) this.dropPortalsOutsideTransaction();
  }
}
