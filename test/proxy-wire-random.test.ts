// isocheck proxy on the wire, at random: for each seed, batches of random frontend messages (pg-protocol's
// serialize) go to a direct connection and to one through the proxy, and the bytes each receives up to the batch's
// last ReadyForQuery must be the same (withoutSource: the documented missing F/L/R fields of the proxy's own errors).
//
// Messages: Parse named and unnamed, with and without declared parameter types; Bind with good and bad parameter
// values, or one too few, into the unnamed portal or named ones; Describe S and P; Execute with and without a row
// limit, again on a suspended or finished portal; Close S and P; Flush; Sync; names that do not exist or are in use;
// simple Query messages (one statement or several) with BEGIN, COMMIT, ROLLBACK, SAVEPOINT, ROLLBACK TO, RELEASE,
// errors (1/0, an unknown column, a syntax error, a bad literal), the empty Query; transaction statements through
// Parse/Bind/Execute too (as pgjdbc sends them), so inside PostgreSQL's implicit transaction as well (a Query of
// several statements, several Executes before one Sync): BEGIN/START TRANSACTION with modes (an isolation level,
// READ ONLY/WRITE, NOT DEFERRABLE, a comment among them), COMMIT/ROLLBACK [AND CHAIN], SET TRANSACTION, SET LOCAL
// (work_mem, transaction_isolation), SET CONSTRAINTS, LOCK TABLE, SHOW of the transaction's settings; statements on
// the recorded table `accounts` (by id, by range, aggregates, FOR UPDATE, UPDATE ... RETURNING, INSERT on keys that
// collide, DELETE, a NULL into NOT NULL), on `dfr` (not recorded; its unique constraint and a trigger raising a
// NOTICE per row are DEFERRABLE INITIALLY DEFERRED: an INSERT that collides fails at the commit, at a COMMIT, a
// Sync or a Query's end) and on no table; COPY FROM STDIN Queries into `accounts` (recorded: staged and inserted by
// the proxy) and `dfr`, text or csv, their data sent ahead in one CopyData or several, ended by CopyDone or CopyFail,
// also after a COPY that failed at once (a division by a parameter folded at Bind, generate_series fetched in
// parts, a division by zero after some rows, a function raising a NOTICE per row); COPY accounts TO STDOUT and COPY
// (SELECT ... FROM accounts) TO STDOUT, text or csv (recorded: a COPY of the rewritten SELECT). Every random choice
// comes from seedrandom(`proxy-wire/<seed>`).
//
// Deterministic data: each batch ends with a ROLLBACK Query, and before each side runs it the tables are put back
// to the same rows (TRUNCATE, on a connection of its own), so both sides see the same database; results of several
// rows are ORDER BY id, RETURNING is on one row (or two of `dfr`, in the order given).
//
// Knowing where the server fails: a batch is made message by message against a third direct connection, the
// oracle (each message followed by a Flush, its answer read before the next is chosen): the generator then knows
// whether a Parse or Bind failed, the transaction status, which statements and portals exist. The same messages,
// without those Flushes, are then sent at once to a direct connection and to the proxy (and the direct connection
// must answer them as the oracle did: a check of the test itself).
//
// Excluded by construction, the differences docs/recording.md ("Through `isocheck proxy`") lists:
// - a Flush while a Parse or Bind that failed on the server is still answered by the proxy's held ParseComplete or
//   BindComplete: a Flush only when no such failure is pending;
// - Parse, Bind that fails, then Sync with no Execute: a failed Bind is always followed by its portal's Execute
//   (maybe a Describe of it between), before anything else that sends a reply and before the Sync;
// - two portals bound before either runs: a Bind is followed by its portal's Describe and Execute, or by nothing of
//   it (a portal bound and not run right away is never executed later; it may be described, closed, bound over);
// - a planning error of a recorded statement's 6th run: no recorded statement has an error in planning (the folded
//   division `1 / $1` is on no table only);
// - the source fields of the proxy's own errors (compared withoutSource), and the context of a parameter error in a
//   named portal: bad parameter values (and a wrong number of them) go to the unnamed portal only;
// - error positions the proxy leaves out: every error is on a token of the client's own text;
// - a constraint broken by a COPY's rows into the recorded table (the proxy's INSERT from its staging table raises
//   it, without the COPY's context line): fresh keys and an owner in every row.
// Likewise, a failed Parse whose ParseComplete the proxy holds is followed, before anything else that sends a reply,
// by its check (Describe S of it, or a Bind of it and that portal's Describe/Execute) or by the Sync, as drivers
// send them (P B D E S; P S): the proxy checks a Parse only there.
// And a Query comes only after a Sync, never among extended-protocol messages before their Sync: PostgreSQL itself
// then fails the next transaction statement (XX000 "StartTransactionCommand: unexpected state STARTED").
//
// The seeds that still diverge are listed below (KNOWN_DIVERGENT, it.fails: a seed that passes again fails the test,
// so that it is taken off), by what their first difference is; those that diverge only now and then, by the race of
// SKIPPED_STATUS_RACE, are skipped.
//
// ISOCHECK_WIRE_SEEDS=3,17 runs those seeds only (listed or not, beyond the 300 too); ISOCHECK_WIRE_PRINT=1 prints
// each batch with both answers decoded.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { serialize } from 'pg-protocol';
import seedrandom from 'seedrandom';
import type { EmbeddedServer } from '../src/db/embedded.js';
import type { RunningProxy } from '../src/proxy/proxy.js';
import { proxiedServer } from './helpers/proxied-server.js';
import { decode, directWire, proxiedWire, type Wire, withoutSource } from './helpers/wire.js';

const SEEDS = 300;
const BATCHES = 3;

/** What the proxy does differently from a direct connection, undocumented (found by this test; each is shown,
 *  minimized, by a message sequence in the report that added it). */
const DIVERGENCES = {
  'write-suspended':
    'a write with RETURNING fetched with a row limit and suspended: the proxy runs it whole (as PostgreSQL does at ' +
    'its first Execute) and completes it, so its rows are visible to the next statement of the transaction; on a ' +
    'direct connection the portal stays suspended and the statement after it does not see them',
  'portal-cleanup':
    "PostgreSQL's own WARNING 'skipping cleanup for portal' when a transaction ends in which a portal was bound " +
    'after the transaction failed (of a ROLLBACK TO, COMMIT or ROLLBACK: the only ones it binds then) and never ' +
    'run: the proxy holds such a portal itself, the server never has it, and no warning comes',
  'describe-snapshot':
    'transaction modes (SET TRANSACTION, SET LOCAL transaction_isolation, BEGIN with a level) refused (25001) on ' +
    'one side only, because a Describe S before them took a snapshot on that side only: the server re-plans a ' +
    'statement whose table changed since its Parse, or describes through the proxy one it had not described yet',
} as const;
type Divergence = keyof typeof DIVERGENCES;

/** Seeds whose batches diverge (it.fails), by their first difference. (138 and 256, a Describe S in a failed
 *  transaction of a statement the server had not described, give the same bytes since the proxy asks a connection
 *  of its own: describeAside. 122 and 295, a portal fetched with a row limit that fails after the rows fetched,
 *  since the proxy runs a SELECT so fetched as a server portal of its own, in parts: fetchable.) */
const KNOWN_DIVERGENT: Record<Divergence, number[]> = {
  // (52 until COPYs came into the batches; no seed of 1 to 2,300 shows it since: proxy-wire.test.ts does)
  'write-suspended': [],
  'portal-cleanup': [178],
  // (found in seeds beyond 300 before: 949 and 990)
  'describe-snapshot': [267],
};

/** Seeds skipped for a race of the proxy, whose batches diverge now and then only. (None: a pipeline whose COMMIT
 *  at the Sync fails got ReadyForQuery 'T' instead of 'I' in about a third of the runs, and before that a few
 *  percent of the errors in a block 'T' instead of 'E': the proxy now reads the status after the server's
 *  ReadyForQuery in both.) */
const SKIPPED_STATUS_RACE: number[] = [];

// ---- statements -------------------------------------------------------------------------------------------------

type Kind = 'id' | 'owner' | 'bal' | 'int' | 'div' | 'n' | 'dfr';

interface Template {
  text: string;
  kinds: Kind[];
}

const t = (text: string, ...kinds: Kind[]): Template => ({ text, kinds });

/** The statements a seed's palette is drawn from. */
const STATEMENTS: Template[] = [
  // the recorded table
  t('SELECT id, owner, bal FROM accounts WHERE id = $1', 'id'),
  t('SELECT id, owner FROM accounts WHERE id BETWEEN $1 AND $2 ORDER BY id', 'id', 'id'),
  t('SELECT id, bal FROM accounts ORDER BY id'),
  t('SELECT count(*) AS n, sum(bal) AS total FROM accounts WHERE id >= $1', 'id'),
  t('SELECT id FROM accounts WHERE owner = $1 ORDER BY id', 'owner'),
  t('SELECT owner FROM accounts WHERE id = $1 FOR UPDATE', 'id'),
  t('SELECT 1 / (id - 2) AS q FROM accounts WHERE id = $1', 'id'),
  t('UPDATE accounts SET bal = bal + $1 WHERE id = $2 RETURNING id, bal', 'bal', 'id'),
  t('UPDATE accounts SET owner = $1 WHERE id BETWEEN $2 AND $3', 'owner', 'id', 'id'),
  t('INSERT INTO accounts (id, owner, bal) VALUES ($1, $2, $3)', 'id', 'owner', 'bal'),
  t('INSERT INTO accounts (id, owner, bal) VALUES ($1, $2, 0) RETURNING id, owner', 'id', 'owner'),
  t('DELETE FROM accounts WHERE id = $1', 'id'),
  t('DELETE FROM accounts WHERE id = $1 RETURNING owner, bal', 'id'),
  // no table
  t('SELECT $1::int4 + 1 AS n', 'int'),
  t('SELECT 1 / $1::int4 AS q', 'div'),
  t('SELECT 1 / 0 AS q'),
  t("SELECT 'a' AS a, 2 AS b"),
  t('SELECT g FROM generate_series(1, $1::int4) AS g', 'n'),
  t('SELECT 1 / (g - 3) AS q FROM generate_series(1, $1::int4) AS g', 'n'),
  t('SELECT note(g) AS n FROM generate_series(1, $1::int4) AS g', 'n'),
  t(''),
  // checked at COMMIT: dfr's unique constraint and its trigger (a NOTICE per row) are deferred
  t('INSERT INTO dfr (a) VALUES ($1)', 'dfr'),
  t('INSERT INTO dfr (a) VALUES ($1), (2) RETURNING a', 'dfr'),
  // transaction-local settings
  t('SHOW transaction_isolation'),
  t("SET LOCAL work_mem = '2MB'"),
  // errors at Parse
  t('SELECT nosuch FROM accounts WHERE id = $1', 'id'),
  t('UPDATE accounts SET nosuch = 1 WHERE id = $1', 'id'),
  t('SELECT owner FROM accounts WHERE nosuch = $1', 'id'),
  t('SELEC 1'),
  t('SELECT nosuch'),
];

const CONTROL = {
  begin: [
    'BEGIN',
    'BEGIN ISOLATION LEVEL REPEATABLE READ',
    'START TRANSACTION',
    'BEGIN READ ONLY',
    'START TRANSACTION ISOLATION LEVEL SERIALIZABLE, READ WRITE',
    'BEGIN /* c */ ISOLATION LEVEL REPEATABLE READ',
    'BEGIN WORK ISOLATION LEVEL READ COMMITTED READ ONLY NOT DEFERRABLE',
  ],
  end: ['COMMIT', 'ROLLBACK', 'COMMIT', 'ROLLBACK', 'COMMIT AND CHAIN', 'ROLLBACK AND CHAIN'],
  savepoint: ['SAVEPOINT sp', 'ROLLBACK TO SAVEPOINT sp', 'RELEASE SAVEPOINT sp'],
  /** The transaction's modes and settings, and what shows them (SET TRANSACTION fails after a query: 25001). */
  modes: [
    'SET TRANSACTION ISOLATION LEVEL SERIALIZABLE',
    'SET TRANSACTION READ ONLY',
    'SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ WRITE',
    "SET LOCAL transaction_isolation = 'serializable'",
    'SET LOCAL work_mem = 8192',
    'SET CONSTRAINTS ALL IMMEDIATE',
    'LOCK TABLE dfr IN SHARE MODE',
    'SHOW transaction_isolation',
    'SHOW transaction_read_only',
    'SHOW work_mem',
  ],
};

const GOOD: Record<Kind, (string | null)[]> = {
  id: ['1', '2', '3', '4', '5', '6', '8'],
  owner: ['ann', 'dup', 'zoé', "o'k", null],
  bal: ['1', '-2.5', '100', '0.01'],
  int: ['1', '2', '41'],
  div: ['0', '1', '2'],
  n: ['1', '2', '4'],
  dfr: ['1', '2', '3'],
};
const BAD: Record<Kind, string[]> = {
  id: ['x', '', '2.5'],
  owner: [],
  bal: ['x', '1,5'],
  int: ['x'],
  div: ['zero'],
  n: ['-'],
  dfr: ['x'],
};
/** The types a driver may declare for a parameter (pgjdbc: setInt int4, setLong int8, setString varchar). */
const TYPES: Record<Kind, number[]> = {
  id: [23, 20],
  owner: [25, 1043],
  bal: [1700],
  int: [23, 20],
  div: [23],
  n: [23],
  dfr: [23, 20],
};

const BASELINE = "(1, 'ann', 100), (2, 'bob', 50.5), (3, 'cäcilie', 7), (5, 'dup', 0), (6, 'dup', 1)";
/** dfr's rows (its value 1 taken: an insert of 1 fails at COMMIT). */
const DFR_BASELINE = '(1)';

// ---- messages and the oracle ------------------------------------------------------------------------------------

type Letter = 'P' | 'B' | 'D' | 'E' | 'C' | 'S' | 'H' | 'Q' | 'd' | 'c' | 'f';

interface Msg {
  type: Letter;
  buf: Buffer;
  /** How it reads in a report. */
  label: string;
}

const q = (s: string): string => JSON.stringify(s);
const msg = {
  parse: (name: string, text: string, types: number[]): Msg => ({
    type: 'P',
    buf: serialize.parse({ name, text, types }),
    label: `P ${q(name)} ${q(text)}${types.length ? ` [${types}]` : ''}`,
  }),
  bind: (portal: string, statement: string, values: (string | null)[]): Msg => ({
    type: 'B',
    buf: serialize.bind({ portal, statement, values }),
    label: `B ${q(portal)} ${q(statement)} ${JSON.stringify(values)}`,
  }),
  describe: (what: 'S' | 'P', name: string): Msg => ({
    type: 'D',
    buf: serialize.describe({ type: what, name }),
    label: `D ${what} ${q(name)}`,
  }),
  execute: (portal: string, rows: number): Msg => ({
    type: 'E',
    buf: serialize.execute({ portal, rows }),
    label: `E ${q(portal)}${rows ? ` ${rows}` : ''}`,
  }),
  close: (what: 'S' | 'P', name: string): Msg => ({
    type: 'C',
    buf: serialize.close({ type: what, name }),
    label: `C ${what} ${q(name)}`,
  }),
  sync: (): Msg => ({ type: 'S', buf: serialize.sync(), label: 'S' }),
  flush: (): Msg => ({ type: 'H', buf: serialize.flush(), label: 'H' }),
  query: (text: string): Msg => ({ type: 'Q', buf: serialize.query(text), label: `Q ${q(text)}` }),
  copyData: (text: string): Msg => ({ type: 'd', buf: serialize.copyData(Buffer.from(text)), label: `d ${q(text)}` }),
  copyDone: (): Msg => ({ type: 'c', buf: serialize.copyDone(), label: 'c' }),
  copyFail: (): Msg => ({ type: 'f', buf: serialize.copyFail('given up'), label: 'f' }),
};

/** The message types (letters) that end the server's answer to each message. */
const ENDS: Record<Letter, string> = {
  P: '1E',
  B: '2E',
  C: '3E',
  D: 'TnE',
  E: 'CsIE',
  S: 'Z',
  Q: 'ZG',
  H: '',
  d: '',
  c: 'Z',
  f: 'Z',
};

/** The SQLSTATE of the ErrorResponse at `at` in `b`. */
function codeAt(b: Buffer, at: number): string {
  const end = at + 1 + b.readInt32BE(at + 1);
  for (let f = at + 5; f < end && b[f] !== 0; ) {
    const z = b.indexOf(0, f + 1);
    if (b[f] === 0x43) return b.toString('latin1', f + 1, z);
    f = z + 1;
  }
  return '';
}

interface Answer {
  bytes: Buffer;
  /** The SQLSTATE of its ErrorResponse, if it failed. */
  error?: string;
  /** The last message's type (a letter). */
  last?: string;
  /** ReadyForQuery's status. */
  status?: 'I' | 'T' | 'E';
}

/** A message sent to the oracle and its answer (none while the server skips to Sync, for a Flush, for CopyData, and
 *  for CopyDone or CopyFail outside a COPY: the server drops them). */
async function ask(oracle: Wire, m: Msg, skipping: boolean, copying: boolean): Promise<Answer> {
  if (m.type === 'H' || m.type === 'd' || (skipping && m.type !== 'S') || ('cf'.includes(m.type) && !copying)) {
    oracle.send(m.buf);
    return { bytes: Buffer.alloc(0) };
  }
  oracle.send('SQcf'.includes(m.type) ? m.buf : Buffer.concat([m.buf, serialize.flush()]));
  const ends = ENDS[m.type];
  const bytes = await oracle.take((type) => ends.includes(String.fromCharCode(type)), 5_000);
  const a: Answer = { bytes };
  let lastAt = 0;
  for (let at = 0; at < bytes.length; at = at + 1 + bytes.readInt32BE(at + 1)) {
    lastAt = at;
    if (bytes[at] === 0x45 && a.error === undefined) a.error = codeAt(bytes, at);
  }
  a.last = String.fromCharCode(bytes[lastAt]);
  if (a.last === 'Z') a.status = String.fromCharCode(bytes[lastAt + 5]) as Answer['status'];
  return a;
}

// ---- the generator ----------------------------------------------------------------------------------------------

interface PortalState {
  statement: Template;
  /** suspended: an Execute reached its row limit; done: run to its end; idle: bound, not run right away (never
   *  executed later: two portals bound before either runs). */
  state: 'suspended' | 'done' | 'idle';
}

/** What the generator knows of the server's session (from the oracle's answers). */
class Session {
  status: 'I' | 'T' | 'E' = 'I';
  /** An error since the last Sync: the server skips the extended-protocol messages to the next Sync. */
  skipping = false;
  /** A Parse or Bind that failed on the server, whose held answer the proxy has not replaced yet (its check comes
   *  next: for a Parse, Describe S or a Bind of it and that portal's run, or the Sync; for a Bind, its Execute). */
  pending: { kind: 'P'; name: string } | { kind: 'B'; portal: string } | undefined;
  statements = new Map<string, Template>();
  portals = new Map<string, PortalState>();
  /** In COPY FROM STDIN (its CopyInResponse came). */
  copying = false;
}

/** Errors the proxy raises itself at a Parse or Bind (at once: nothing of theirs is held). */
const IMMEDIATE: Record<string, string[]> = { P: ['42P05'], B: ['26000', '42P03'] };

class Generator {
  readonly msgs: Msg[] = [];
  /** Keys given to the recorded table by COPYs (each new). */
  private copied = 0;
  private readonly answers: Buffer[] = [];

  constructor(
    private readonly rng: seedrandom.PRNG,
    private readonly oracle: Wire,
    private readonly s: Session,
    private readonly palette: Template[],
  ) {}

  private chance(p: number): boolean {
    return this.rng() < p;
  }
  private pick<T>(xs: readonly T[]): T {
    return xs[Math.floor(this.rng() * xs.length)];
  }
  private int(lo: number, hi: number): number {
    return lo + Math.floor(this.rng() * (hi - lo + 1));
  }

  /** The oracle's bytes so far (what a direct connection answers the batch). */
  get expected(): Buffer {
    return Buffer.concat(this.answers);
  }

  /** The message whose answer holds the direct connection's `n`th message (counted from 0), or -1. */
  answering(n: number): number {
    for (let i = 0, seen = 0; i < this.answers.length; i++) {
      seen += messagesOf(this.answers[i]).length;
      if (n < seen) return i;
    }
    return -1;
  }

  /** Sends one message to the oracle and learns from its answer. */
  private async send(m: Msg): Promise<Answer> {
    const s = this.s;
    const skipping = s.skipping;
    this.msgs.push(m);
    const a = await ask(this.oracle, m, skipping, s.copying);
    this.answers.push(a.bytes);
    if (m.type === 'Q' && a.last === 'G') {
      s.copying = true;
      s.statements.delete('');
      s.portals.delete('');
      return a;
    }
    if ('cf'.includes(m.type) && a.status !== undefined) s.copying = false;
    if (m.type === 'S' || (m.type === 'Q' && !skipping) || ('cf'.includes(m.type) && a.status !== undefined)) {
      if (m.type === 'S') s.skipping = false;
      s.status = a.status!;
      s.pending = undefined;
      // PostgreSQL drops the unnamed statement at a Query, and a transaction's portals at its end
      if (m.type === 'Q') {
        s.statements.delete('');
        s.portals.delete('');
      }
      if (s.status === 'I') s.portals.clear();
      return a;
    }
    if (a.error !== undefined) {
      s.skipping = true;
      if ((m.type === 'P' || m.type === 'B') && !IMMEDIATE[m.type].includes(a.error))
        s.pending = m.type === 'P' ? { kind: 'P', name: nameOf(m) } : { kind: 'B', portal: portalOf(m) };
    }
    return a;
  }

  /** One batch: groups of extended-protocol messages ending in Sync, and Queries; a ROLLBACK Query at the end. */
  async batch(): Promise<void> {
    for (let g = this.int(2, 5); g > 0; g--) {
      if (this.chance(0.25)) await this.send(msg.query(this.queryText()));
      else if (this.chance(0.12)) await this.copy();
      else await this.group();
    }
    await this.send(msg.query('ROLLBACK'));
  }

  private async group(): Promise<void> {
    for (let u = this.int(1, 4); u > 0; u--) {
      if (this.s.pending) {
        if (await this.resolvePending()) break;
        continue;
      }
      await this.unit();
    }
    // (a failed Parse is checked at the Sync; a failed Bind must run before it)
    if (this.s.pending?.kind === 'B') await this.resolvePending();
    await this.send(msg.sync());
  }

  /**
   * The check of a failed Parse or Bind the proxy still answers with a held ParseComplete/BindComplete, before
   * anything else that sends a reply. True: end the group (a failed Parse is checked at the Sync).
   */
  private async resolvePending(): Promise<boolean> {
    const p = this.s.pending!;
    if (p.kind === 'B') {
      if (this.chance(0.4)) await this.send(msg.describe('P', p.portal));
      await this.send(msg.execute(p.portal, 0));
      this.s.pending = undefined;
      return false;
    }
    // messages the server skips, held by the proxy: a Parse of a new name, a Close (of the failed statement too)
    if (this.chance(0.15)) await this.send(msg.parse(`f${this.msgs.length}`, 'SELECT 1', []));
    if (this.chance(0.05)) {
      await this.send(msg.close('S', p.name));
      this.s.pending = undefined;
      return true;
    }
    const r = this.rng();
    if (r < 0.35) return true;
    if (r < 0.55) await this.send(msg.describe('S', p.name));
    else {
      await this.send(msg.bind('', p.name, []));
      if (this.chance(0.4)) await this.send(msg.describe('P', ''));
      await this.send(msg.execute('', 0));
    }
    this.s.pending = undefined;
    return false;
  }

  private async unit(): Promise<void> {
    const r = this.rng();
    if (r < 0.3) return this.run(true);
    if (r < 0.45) return this.run(false);
    if (r < 0.52) return this.prepare();
    if (r < 0.58) return this.send(msg.describe('S', this.statementName())).then(() => undefined);
    if (r < 0.66) return this.fetchMore();
    if (r < 0.72) return this.close();
    if (r < 0.82) return this.control();
    if (r < 0.88) return this.send(msg.flush()).then(() => undefined);
    return this.junk();
  }

  /** A statement name: one the session has (mostly), or another. */
  private statementName(): string {
    const have = [...this.s.statements.keys()];
    if (have.length > 0 && this.chance(0.85)) return this.pick(have);
    return this.pick(['', 's1', 's2', 's3']);
  }

  private types(tpl: Template): number[] {
    if (tpl.kinds.length === 0 || this.chance(0.6)) return [];
    return tpl.kinds.map((k) => (this.chance(0.8) ? this.pick(TYPES[k]) : 0));
  }

  /** Parameter values for a statement: good ones, or (into the unnamed portal only) one bad value or one too few. */
  private values(tpl: Template, portal: string): (string | null)[] {
    const values = tpl.kinds.map((k) => this.pick(GOOD[k]));
    if (portal !== '') return values;
    const r = this.rng();
    if (r < 0.15) {
      const i = Math.floor(this.rng() * values.length);
      if (values.length > 0 && BAD[tpl.kinds[i]].length > 0) values[i] = this.pick(BAD[tpl.kinds[i]]);
    } else if (r < 0.18 && values.length > 0) values.pop();
    return values;
  }

  /** A Parse of a statement. */
  private async parseOf(tpl: Template, named: boolean): Promise<string> {
    let name = '';
    if (named) {
      const free = ['s1', 's2', 's3'].filter((n) => !this.s.statements.has(n));
      // a name in use now and then (42P05)
      name = free.length > 0 && this.chance(0.92) ? this.pick(free) : this.pick(['s1', 's2', 's3']);
    }
    const skipping = this.s.skipping;
    const a = await this.send(msg.parse(name, tpl.text, this.types(tpl)));
    if (!skipping && a.error === undefined) this.s.statements.set(name, tpl);
    else if (!skipping && name === '') this.s.statements.delete(''); // dropped before the new one is parsed
    return name;
  }

  /** Parse (when `parse`), Bind, then most often Describe P and Execute(s): a driver's statement. */
  private async run(parse: boolean): Promise<void> {
    let name: string;
    let tpl: Template;
    if (parse) {
      tpl = this.pick(this.palette);
      name = await this.parseOf(tpl, this.chance(0.35));
    } else {
      name = this.statementName();
      tpl = this.s.statements.get(name) ?? this.pick(this.palette);
    }
    // a failed Parse: its check (a Bind of it, that portal's Describe/Execute) is what follows
    const portal = this.s.pending ? '' : this.portalName();
    await this.bindRun(name, tpl, portal);
  }

  private portalName(): string {
    if (this.chance(0.7)) return '';
    const free = ['p1', 'p2'].filter((n) => !this.s.portals.has(n));
    return free.length > 0 && this.chance(0.9) ? this.pick(free) : this.pick(['p1', 'p2']);
  }

  private async bindRun(name: string, tpl: Template, portal: string): Promise<void> {
    const before = this.s.skipping;
    const a = await this.send(msg.bind(portal, name, this.values(tpl, portal)));
    const bound = !before && a.error === undefined;
    if (bound) this.s.portals.set(portal, { statement: tpl, state: 'idle' });
    else if (portal === '') this.s.portals.delete('');
    // a failed Bind (or the Bind of a failed Parse) is run at once; a good one mostly, else described or left
    const failed = this.s.pending !== undefined;
    const r = this.rng();
    if (!failed && r < 0.08) return;
    if (!failed && r < 0.16) {
      await this.send(msg.describe('P', portal));
      return;
    }
    if (this.chance(0.6)) await this.send(msg.describe('P', portal));
    await this.executeMore(portal, this.pick([0, 0, 0, 1, 2]));
  }

  /** Execute (and, while it suspends, more Executes now and then), and a Flush now and then. */
  private async executeMore(portal: string, rows: number): Promise<void> {
    let a = await this.send(msg.execute(portal, rows));
    this.s.pending = undefined; // (a failed Parse or Bind of it is checked by now)
    this.learnRun(portal, a);
    while (a.last === 's' && this.chance(0.6)) {
      a = await this.send(msg.execute(portal, this.pick([0, 1, 1, 2])));
      this.learnRun(portal, a);
    }
    if (this.chance(0.12)) await this.send(msg.flush());
  }

  private learnRun(portal: string, a: Answer): void {
    const p = this.s.portals.get(portal);
    if (!p) return;
    if (a.last === 's') p.state = 'suspended';
    else if (a.last === 'C' || a.last === 'I') p.state = 'done';
  }

  /** A Parse then nothing of it (libpq's PQprepare, when the Sync follows), or with Describe S. */
  private async prepare(): Promise<void> {
    const tpl = this.pick(this.palette);
    const name = await this.parseOf(tpl, this.chance(0.8));
    if (!this.s.pending && this.chance(0.3)) await this.send(msg.describe('S', name));
  }

  /** More rows of a portal run before (suspended, or finished: then none). */
  private async fetchMore(): Promise<void> {
    const ran = [...this.s.portals].filter(([, p]) => p.state !== 'idle').map(([n]) => n);
    if (ran.length === 0) return this.run(true);
    const portal = this.pick(ran);
    if (this.chance(0.2)) await this.send(msg.describe('P', portal));
    await this.executeMore(portal, this.pick([0, 1, 2]));
  }

  private async close(): Promise<void> {
    if (this.chance(0.5)) {
      const name = this.statementName();
      const a = await this.send(msg.close('S', name));
      if (a.error === undefined && !this.s.skipping) this.s.statements.delete(name);
    } else {
      const name = this.pick(['', 'p1', 'p2']);
      const a = await this.send(msg.close('P', name));
      if (a.error === undefined && !this.s.skipping) this.s.portals.delete(name);
    }
  }

  /** A transaction statement through the extended protocol (as pgjdbc sends BEGIN). */
  private async control(): Promise<void> {
    const text = this.controlText();
    const skipping = this.s.skipping;
    const a = await this.send(msg.parse('', text, []));
    if (this.s.pending) return;
    if (!skipping && a.error === undefined) this.s.statements.set('', { text, kinds: [] });
    await this.bindRun('', { text, kinds: [] }, '');
  }

  private controlText(): string {
    const s = this.s.status;
    const r = this.rng();
    const { begin, end, savepoint, modes } = CONTROL;
    if (s === 'I') return this.pick(r < 0.55 ? begin : r < 0.8 ? modes : [...end, ...savepoint]);
    if (s === 'E') return r < 0.5 ? 'ROLLBACK' : r < 0.7 ? 'ROLLBACK TO SAVEPOINT sp' : this.pick(end);
    return this.pick(r < 0.35 ? savepoint : r < 0.65 ? end : r < 0.85 ? modes : begin);
  }

  /** Messages naming what does not exist. */
  private async junk(): Promise<void> {
    const r = this.rng();
    if (r < 0.35) await this.send(msg.bind('', 'nope', []));
    else if (r < 0.7) await this.send(msg.execute('nope', 0));
    else await this.send(msg.describe('P', 'nope'));
  }

  /**
   * A COPY TO STDOUT of the recorded table, or a COPY FROM STDIN, its data sent ahead of the CopyInResponse as a
   * driver may (pgx): into the recorded table (the proxy stages the rows and records one INSERT; rows that break no
   * constraint, since such an error comes without the COPY's context line through the proxy, a documented
   * difference: fresh keys, an owner; maybe a value that is not a number, refused in the staging with the context)
   * or into dfr (relayed; its keys may collide, at COMMIT), ended by CopyDone or CopyFail; sent too when the COPY
   * fails at once (a failed transaction), the server and the proxy then drop it.
   */
  private async copy(): Promise<void> {
    const recorded = this.chance(0.7);
    const csv = this.chance(0.3);
    if (recorded && this.chance(0.3)) {
      // (its columns listed: on the direct side the table has the recorder's hidden ones too)
      const from = this.chance(0.5)
        ? 'accounts (id, owner, bal)'
        : `(SELECT id, owner, bal FROM accounts WHERE id > ${this.int(0, 4)} ORDER BY id)`;
      await this.send(msg.query(`COPY ${from} TO STDOUT${csv ? ' WITH (FORMAT csv)' : ''}`));
      return;
    }
    const rows: string[] = [];
    for (let n = this.int(1, 3); n > 0; n--) {
      if (!recorded) rows.push(this.pick(['1', '2', '3', '4', 'x']));
      else {
        const id = this.chance(0.1) ? 'x' : String(1000 + this.copied++);
        const bal = this.chance(0.1) ? 'y' : this.pick(GOOD.bal)!;
        rows.push([id, this.pick(['ann', 'zoé', "o'k", 'tab']), bal].join(csv ? ',' : '\t'));
      }
    }
    const into = recorded ? 'accounts (id, owner, bal)' : 'dfr (a)';
    await this.send(msg.query(`COPY ${into} FROM STDIN${csv ? ' WITH (FORMAT csv)' : ''}`));
    const data = rows.map((r) => `${r}\n`).join('');
    if (this.chance(0.5)) await this.send(msg.copyData(data));
    else for (let i = 0; i < rows.length; i++) await this.send(msg.copyData(`${rows[i]}\n`));
    await this.send(this.chance(0.15) ? msg.copyFail() : msg.copyDone());
  }

  /** A Query's text: a transaction statement, a statement with its parameters written in, or several. */
  private queryText(): string {
    const one = (): string => {
      if (this.chance(0.35)) return this.controlText();
      const tpl = this.pick(this.palette);
      const values = this.values(tpl, '');
      return tpl.text.replace(/\$(\d)/g, (_, i: string) => {
        const v = values[Number(i) - 1];
        return v === null || v === undefined ? 'NULL' : `'${v.replace(/'/g, "''")}'`;
      });
    };
    if (this.chance(0.75)) return one();
    return Array.from({ length: this.int(2, 3) }, one).join('; ');
  }
}

/** The messages of a batch, numbered, for a report. */
const listing = (msgs: Msg[]): string => msgs.map((m, i) => `  ${i}: ${m.label}`).join('\n');

// ---- the test ---------------------------------------------------------------------------------------------------

const dir = mkdtempSync(join(tmpdir(), 'isocheck-proxy-wire-random-'));
let server: EmbeddedServer;
let proxy: RunningProxy;
let admin: pg.Client;

/** The table's rows put back (on its own connection: both sides then run a batch on the same rows). */
async function reset(): Promise<void> {
  // TRUNCATE, not DELETE: a new heap, the rows in one order on both sides, so that a statement failing on one of
  // several rows (a NULL into NOT NULL over a range) names the same row in its DETAIL
  await admin.query(
    `TRUNCATE accounts, dfr; INSERT INTO accounts (id, owner, bal) VALUES ${BASELINE}; ` +
      `INSERT INTO dfr (a) VALUES ${DFR_BASELINE}`,
  );
}

beforeAll(async () => {
  ({ server, proxy } = await proxiedServer(
    [
      'CREATE TABLE accounts (id int4 PRIMARY KEY, owner text NOT NULL, bal numeric(10,2) NOT NULL)',
      `INSERT INTO accounts (id, owner, bal) VALUES ${BASELINE}`,
      `CREATE FUNCTION note(int) RETURNS int LANGUAGE plpgsql AS $$ BEGIN RAISE NOTICE 'note %', $1; RETURN $1; END $$`,
      // checked at COMMIT (not recorded): a deferred unique constraint, and a deferred trigger raising a NOTICE
      'CREATE TABLE dfr (a int4 UNIQUE DEFERRABLE INITIALLY DEFERRED)',
      `CREATE FUNCTION dfr_note() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE NOTICE 'checked %', NEW.a; ` +
        'RETURN NULL; END $$',
      'CREATE CONSTRAINT TRIGGER dfr_note AFTER INSERT ON dfr DEFERRABLE INITIALLY DEFERRED FOR EACH ROW ' +
        'EXECUTE FUNCTION dfr_note()',
      `INSERT INTO dfr (a) VALUES ${DFR_BASELINE}`,
    ],
    ['accounts'],
    join(dir, 'run.ndjson'),
  ));
  admin = new pg.Client({ connectionString: server.url });
  await admin.connect();
}, 60_000);

afterAll(async () => {
  await admin?.end();
  await proxy?.close();
  await server?.stop();
});

const only = process.env.ISOCHECK_WIRE_SEEDS?.split(',').map(Number);
const print = process.env.ISOCHECK_WIRE_PRINT === '1';

/** One seed: its batches on three connections (the oracle, direct, proxied); the first divergence fails it. */
async function runSeed(seed: number): Promise<void> {
  const rng = seedrandom(`proxy-wire/${seed}`);
  const palette = Array.from({ length: 6 }, () => STATEMENTS[Math.floor(rng() * STATEMENTS.length)]);
  const oracle = await directWire(server.url);
  const direct = await directWire(server.url);
  const proxied = await proxiedWire(server.url, proxy);
  const session = new Session();
  try {
    for (let b = 0; b < BATCHES; b++) {
      await reset();
      const gen = new Generator(rng, oracle, session, palette);
      await gen.batch();
      const batch = Buffer.concat(gen.msgs.map((m) => m.buf));
      const expected = gen.expected;
      let readies = 0;
      for (let at = 0; at < expected.length; at = at + 1 + expected.readInt32BE(at + 1))
        if (expected[at] === 0x5a) readies++;
      await reset();
      direct.send(batch);
      const d = await direct.until(readies, 10_000);
      await reset();
      proxied.send(batch);
      const got = await proxied.until(readies, 10_000).catch((e: Error) => e);
      const where = `seed ${seed}, batch ${b}:\n${listing(gen.msgs)}`;
      if (got instanceof Error) expect.fail(`${where}\n  direct:  ${decode(d)}\n  proxied: ${got.message}`);
      const p = got;
      if (print) console.log(`${where}\n  direct:  ${decode(d)}\n  proxied: ${decode(p)}`);
      // the test itself: a direct connection answers the batch as the oracle did message by message
      expect(withoutSource(d), `the oracle and the direct connection differ, ${where}`).toBe(withoutSource(expected));
      if (withoutSource(p) !== withoutSource(d)) {
        const dm = messagesOf(d);
        const pm = messagesOf(p);
        let n = 0;
        while (n < dm.length && n < pm.length && withoutSource(dm[n]) === withoutSource(pm[n])) n++;
        expect.fail(
          `${where}\n  direct:  ${decode(d)}\n  proxied: ${decode(p)}\n  first difference: answer #${n} ` +
            `(direct ${dm[n] ? decode(dm[n]) : 'none'}, proxied ${pm[n] ? decode(pm[n]) : 'none'}), ` +
            `in the answer to message ${gen.answering(n)}`,
        );
      }
    }
  } finally {
    oracle.close();
    direct.close();
    proxied.close();
  }
}

/** The messages of a backend byte stream, each its own buffer. */
function messagesOf(b: Buffer): Buffer[] {
  const out: Buffer[] = [];
  for (let at = 0; at + 5 <= b.length; ) {
    const end = at + 1 + b.readInt32BE(at + 1);
    out.push(b.subarray(at, end));
    at = end;
  }
  return out;
}

/** The name a Parse gives its statement. */
function nameOf(m: Msg): string {
  return m.buf.toString('utf8', 5, m.buf.indexOf(0, 5));
}

/** The portal a Bind makes. */
function portalOf(m: Msg): string {
  return m.buf.toString('utf8', 5, m.buf.indexOf(0, 5));
}

describe('isocheck proxy on the wire, random messages', () => {
  const known = new Map<number, Divergence>();
  for (const [why, seeds] of Object.entries(KNOWN_DIVERGENT))
    for (const seed of seeds) known.set(seed, why as Divergence);
  if (only) {
    for (const seed of only) it(`seed ${seed}`, () => runSeed(seed), 60_000);
    return;
  }
  for (let seed = 1; seed <= SEEDS; seed++) {
    const why = known.get(seed);
    if (SKIPPED_STATUS_RACE.includes(seed)) it.skip(`seed ${seed} (status race)`, () => runSeed(seed));
    else if (why) it.fails(`seed ${seed} (diverges: ${why}: ${DIVERGENCES[why]})`, () => runSeed(seed), 60_000);
    else it(`seed ${seed}`, () => runSeed(seed), 60_000);
  }
});
