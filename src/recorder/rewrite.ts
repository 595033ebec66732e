/**
 * Statement rewriting for the recorder: SQL text -> libpg-query AST -> classify and modify -> pgsql-deparser SQL.
 * Never string pasting: values the recorder adds (wids) are extra `$n` parameters, so a rewritten statement's
 * text depends only on the application's text and plans are cached per text.
 *
 *   analyze(sql, nValues, tables, options) -> Plan
 *     control      BEGIN / COMMIT / ROLLBACK / SAVEPOINT / SET TRANSACTION ... (the session tracks transactions)
 *     settings     SET / RESET / DISCARD (session settings the recorder reads may have changed)
 *     passthrough  statements that touch no recorded table
 *     select       (rewrite-select.ts) every recorded table read, in joins, subqueries, CTEs and UNION arms, comes
 *                  back with its rows and wids (traces.ts), in the same statement (one snapshot)
 *     insert/update/delete  (rewrite-write.ts) set `_isocheck_wid` to a fresh wid ($n) and RETURNING what the
 *                  event needs, and the rows of the tables the statement read (FROM, USING, subqueries, SELECT)
 *     DECLARE ... CURSOR FOR a recorded SELECT: a select plan whose text is the DECLARE of the rewritten SELECT;
 *                  FETCH / MOVE / CLOSE: passthrough with the cursor step (the session records them: cursors.ts)
 *   or throws UnsupportedStatementError for shapes it cannot record soundly (data-modifying CTEs, COPY, ...),
 *   saying why and what to do instead.
 *
 * The added result columns come last (aliased `__isocheck_<i>` so ORDER BY names stay unambiguous); the session
 * strips them so the application gets exactly the columns it asked for. `*` and `t.*` are expanded to the
 * tables' own columns (so the hidden columns never reach the application). Query blocks and name resolution:
 * blocks.ts; exact or partial: reads.ts; docs/recording.md.
 *
 * Every recorded statement is also checked to survive deparsing unchanged (parse(deparse(ast)) == ast): a
 * statement the deparser cannot reproduce (e.g. FETCH ... WITH TIES) is refused rather than changed.
 */
import type { DeclareCursorStmt, Node, ParseResult, TransactionStmt } from '@pgsql/types';
import { loadModule, parseSync } from 'libpg-query';
import { nodeKind } from '../sql/expr.js';
import { bodyOf } from '../sql/node.js';
import type { TableInfo } from './catalog.js';
import { deparse, paramNumbers, rangeVars, refuse, sameAst } from './ast.js';
import type { PgIsolation, Plan, RecordedPlan, RewriteOptions, TableLookup } from './plan.js';
import { selectPlan } from './rewrite-select.js';
import { deletePlan, insertPlan, updatePlan } from './rewrite-write.js';
import { copyPlan } from './rewrite-copy.js';

export { isLocationKey } from './ast.js';

export type {
  PgIsolation,
  TxnControl,
  CursorStep,
  SelectPlan,
  InsertPlan,
  UpdatePlan,
  DeletePlan,
  RecordedPlan,
  Plan,
  RewriteOptions,
  TableLookup,
} from './plan.js';

/** The recorded tables by name; `setReturning`: the names of the server's set-returning functions (pg_proc). */
export function tableLookup(tables: TableInfo[], setReturning?: ReadonlySet<string>): TableLookup {
  const byRel = new Map(tables.map((t) => [t.relname, t]));
  return {
    lookup(schemaname, relname) {
      const t = byRel.get(relname);
      if (!t) return undefined;
      return schemaname === undefined || schemaname === t.schema ? t : undefined;
    },
    ...(setReturning ? { setReturning: (name: string) => setReturning.has(name) } : {}),
  };
}

/**
 * The recorded tables that a session's `search_path` hides (docs/recording.md, "Table names are matched"): their
 * names, written without a schema, mean another relation there (one in a schema before theirs, a temporary table),
 * which is not recorded. `key` names the set, for the plan cache.
 */
export interface Shadowed {
  key: string;
  names: ReadonlySet<string>;
}

/** A lookup in which a name without a schema that a session's search_path gives to another relation is not a
 *  recorded table (the statement reads or writes that relation, passed through as written). */
export function shadowLookup(base: TableLookup, names: ReadonlySet<string>): TableLookup {
  return {
    lookup: (schemaname, relname) =>
      schemaname === undefined && names.has(relname) ? undefined : base.lookup(schemaname, relname),
    ...(base.setReturning ? { setReturning: base.setReturning.bind(base) } : {}),
  };
}

let loaded: Promise<void> | undefined;
/** Loads the parser (WASM); must be awaited once before analyze(). */
export function loadRewriter(): Promise<void> {
  return (loaded ??= loadModule());
}

function isoOf(options: Node[] | undefined): PgIsolation | undefined {
  for (const o of options ?? []) {
    const d = bodyOf(o, 'DefElem');
    if (d?.defname === 'transaction_isolation') {
      const v = bodyOf(d.arg, 'A_Const')?.sval?.sval;
      if (typeof v === 'string') return v.toLowerCase() as PgIsolation;
    }
  }
  return undefined;
}

/** A BEGIN's transaction modes as the text of SET TRANSACTION's (transaction_mode_list), in their order. */
function modesOf(options: Node[] | undefined): string {
  const modes: string[] = [];
  for (const o of options ?? []) {
    const d = bodyOf(o, 'DefElem');
    const c = bodyOf(d?.arg, 'A_Const');
    // (the grammar gives these three only; READ ONLY and DEFERRABLE are integer constants, 1 or 0)
    const on = c?.ival?.ival === 1;
    if (d?.defname === 'transaction_isolation') modes.push(`ISOLATION LEVEL ${String(c?.sval?.sval).toUpperCase()}`);
    else if (d?.defname === 'transaction_read_only') modes.push(on ? 'READ ONLY' : 'READ WRITE');
    else if (d?.defname === 'transaction_deferrable') modes.push(on ? 'DEFERRABLE' : 'NOT DEFERRABLE');
  }
  return modes.join(', ');
}

function isoOfSetArgs(args: Node[] | undefined): PgIsolation | undefined {
  for (const a of args ?? []) {
    const v = bodyOf(a, 'A_Const')?.sval?.sval;
    if (typeof v === 'string') return v.toLowerCase().replace(/_/g, ' ') as PgIsolation;
  }
  return undefined;
}

// ---------------------------------------------------------------------------------------------------------------
// analyze

/** Statements that may make, drop, rename or move relations (the names a search path resolves). */
const RELATION_STATEMENTS = new Set([
  'CreateStmt',
  'CreateTableAsStmt',
  'ViewStmt',
  'DropStmt',
  'RenameStmt',
  'AlterTableStmt',
  'AlterObjectSchemaStmt',
  'CreateSchemaStmt',
  'IndexStmt',
  'CreateSeqStmt',
  'CreateForeignTableStmt',
  'CompositeTypeStmt',
]);

/** Classifies one application statement and, for a recorded table, rewrites it. */
export function analyze(sql: string, nValues: number, lookup: TableLookup, options: RewriteOptions): Plan {
  let parsed: ParseResult;
  try {
    parsed = parseSync(sql);
  } catch {
    return { kind: 'passthrough' }; // the server reports the syntax error
  }
  // every RawStmt the parser returns has its statement
  const stmts = (parsed.stmts ?? []).map((s) => s.stmt!);
  if (stmts.length === 0) return { kind: 'passthrough' };
  const touches = (node: unknown): boolean =>
    rangeVars(node).some((rv) => lookup.lookup(rv.schemaname, rv.relname) !== undefined);
  // a passthrough that may change what a name without its schema means (set_config('search_path', ...) told by a
  // text test, cheap and rarely true)
  const relations = /set_config/i.test(sql) || stmts.some((s) => RELATION_STATEMENTS.has(nodeKind(s)[0]));
  if (stmts.length > 1) {
    const aboutCursor = (s: Node): boolean => 'FetchStmt' in s || 'ClosePortalStmt' in s || 'DeclareCursorStmt' in s;
    if (stmts.some((s) => touches(s) || 'TransactionStmt' in s || aboutCursor(s))) {
      refuse(
        sql,
        'it holds several statements',
        'Send one statement per query() call, so each can be recorded (and BEGIN/COMMIT seen).',
      );
    }
    const drops = stmts.some((s) => 'DiscardStmt' in s || 'DeallocateStmt' in s)
      ? { dropsPrepared: true as const }
      : {};
    return stmts.some((s) => 'VariableSetStmt' in s || 'DiscardStmt' in s)
      ? { kind: 'settings', ...drops }
      : { kind: 'passthrough', ...drops, ...(relations ? { relations } : {}) };
  }
  const plan = one(sql, nValues, lookup, options, stmts[0], touches);
  return relations && plan.kind === 'passthrough' ? { ...plan, relations } : plan;
}

/** One statement (of a text of one). */
function one(
  sql: string,
  nValues: number,
  lookup: TableLookup,
  options: RewriteOptions,
  stmt: Node,
  touches: (node: unknown) => boolean,
): Plan {
  const [kind, body] = nodeKind(stmt);
  switch (kind) {
    case 'TransactionStmt':
      return transaction(sql, body);
    case 'VariableSetStmt': {
      if (body.kind === 'VAR_SET_MULTI' && body.name === 'TRANSACTION')
        return { kind: 'control', control: { kind: 'set-transaction', iso: isoOf(body.args) } };
      if (body.name === 'transaction_isolation' && (body.kind === 'VAR_SET_VALUE' || body.kind === 'VAR_SET_CURRENT')) {
        return { kind: 'control', control: { kind: 'set-transaction', iso: isoOfSetArgs(body.args) } };
      }
      const encoding = body.name === 'client_encoding' && body.kind === 'VAR_SET_VALUE' ? body.args?.[0] : undefined;
      if (encoding !== undefined) {
        const c = bodyOf(encoding, 'A_Const');
        return { kind: 'settings', clientEncoding: String(c?.sval?.sval ?? c?.ival?.ival ?? '') };
      }
      return { kind: 'settings' };
    }
    case 'DiscardStmt':
      // DISCARD ALL deallocates every prepared statement, and closes every cursor
      return {
        kind: 'settings',
        dropsPrepared: true,
        ...(body.target === 'DISCARD_ALL' ? { cursor: { op: 'close' } } : {}),
      };
    case 'DeallocateStmt':
      return { kind: 'passthrough', dropsPrepared: true };
    case 'DoStmt':
    case 'CallStmt':
      return {
        kind: 'passthrough',
        warning:
          `${kind === 'DoStmt' ? 'DO blocks' : 'CALL'} are not looked into: writes they make to recorded tables ` +
          `are not recorded (the history would be wrong)`,
      };
    case 'SelectStmt':
      if (!touches(body)) return { kind: 'passthrough' };
      return finish(sql, stmt, selectPlan(sql, body, lookup), nValues);
    case 'InsertStmt':
      if (!touches(body)) return { kind: 'passthrough' };
      return finish(sql, stmt, insertPlan(sql, body, lookup, options, nValues), nValues);
    case 'UpdateStmt':
      if (!touches(body)) return { kind: 'passthrough' };
      return finish(sql, stmt, updatePlan(sql, body, lookup, options, nValues), nValues);
    case 'DeleteStmt':
      if (!touches(body)) return { kind: 'passthrough' };
      return finish(sql, stmt, deletePlan(sql, body, lookup), nValues);
    case 'DeclareCursorStmt':
      return declareCursor(sql, stmt, body, lookup, nValues, touches);
    case 'CopyStmt':
      return copyPlan(sql, body, lookup, touches);
    case 'FetchStmt': {
      // FETCH ALL is FETCH_ALL (LONG_MAX), which the parser's JSON gives as 2147483647 or more
      const n = Number(body.howMany ?? 0);
      const forward =
        body.direction === 'FETCH_FORWARD' && !body.ismove && n > 0 ? (n >= 2147483647 ? Infinity : n) : undefined;
      return {
        kind: 'passthrough',
        cursor: { op: 'fetch', name: body.portalname ?? '', move: body.ismove === true, forward },
      };
    }
    case 'ClosePortalStmt':
      return { kind: 'passthrough', cursor: { op: 'close', ...(body.portalname ? { name: body.portalname } : {}) } };
    case 'ExplainStmt': {
      const analyzeOpt = (body.options ?? []).some((o) => {
        const d = bodyOf(o, 'DefElem');
        return (
          d?.defname === 'analyze' &&
          bodyOf(d.arg, 'String')?.sval !== 'false' &&
          bodyOf(d.arg, 'Boolean')?.boolval !== false
        );
      });
      if (analyzeOpt && touches(body))
        refuse(
          sql,
          'EXPLAIN ANALYZE runs the statement without the recorder seeing its rows',
          'Use EXPLAIN without ANALYZE, or run the statement itself.',
        );
      return { kind: 'passthrough' };
    }
    case 'LockStmt':
    case 'VacuumStmt':
    case 'IndexStmt':
    case 'CommentStmt':
    case 'GrantStmt':
    case 'CreateStmt':
    case 'VariableShowStmt':
    case 'ListenStmt':
    case 'NotifyStmt':
    case 'UnlistenStmt':
    case 'ExecuteStmt':
    case 'CheckPointStmt':
      return { kind: 'passthrough' };
    default:
      if (touches(body)) {
        refuse(
          sql,
          `${kind.replace(/Stmt$/, '')} statements on recorded tables are not recorded`,
          'Use SELECT, INSERT, UPDATE and DELETE on recorded tables while recording (schema changes before ' +
            'instrument()).',
        );
      }
      return { kind: 'passthrough' };
  }
}

/** PostgreSQL's cursor options (parsenodes.h). */
const CURSOR_OPT_BINARY = 0x1;
const CURSOR_OPT_SCROLL = 0x2;
const CURSOR_OPT_NO_SCROLL = 0x4;
const CURSOR_OPT_HOLD = 0x20;

/** DECLARE name CURSOR FOR a SELECT of recorded tables: the DECLARE of the rewritten SELECT, whose FETCHes bring the
 *  added columns (the session strips them and records the rows fetched as the read of the DECLARE). */
function declareCursor(
  sql: string,
  stmt: Node,
  body: DeclareCursorStmt,
  lookup: TableLookup,
  nValues: number,
  touches: (node: unknown) => boolean,
): Plan {
  const name = body.portalname ?? '';
  if (!touches(body)) return { kind: 'passthrough', cursor: { op: 'declare', name } };
  const options = body.options ?? 0;
  if (options & CURSOR_OPT_BINARY)
    refuse(sql, 'a BINARY cursor gives its rows in binary', 'Declare the cursor without BINARY while recording.');
  const query = bodyOf(body.query, 'SelectStmt');
  if (!query) return { kind: 'passthrough' }; // (the grammar allows only a SELECT or VALUES)
  const select = selectPlan(sql, query, lookup);
  if (select.kind === 'passthrough') return select;
  const rewritten = parseSync(select.sql).stmts?.[0]?.stmt;
  const declare = (opts: number): string =>
    deparse({
      version: 0,
      stmts: [{ stmt: { DeclareCursorStmt: { ...body, options: opts, query: rewritten } } as Node }],
    });
  const hold = (options & CURSOR_OPT_HOLD) !== 0;
  return finish(
    sql,
    stmt,
    {
      ...select,
      sql: declare(options),
      appRows: false,
      // a WITH HOLD cursor declared in a transaction of its own is read whole at once and rewound (client.ts), so
      // that its read is in that transaction: it scrolls
      declare: hold
        ? { name, hold, heldSql: declare((options & ~CURSOR_OPT_NO_SCROLL) | CURSOR_OPT_SCROLL) }
        : { name, hold },
    },
    nValues,
  );
}

function transaction(sql: string, body: TransactionStmt): Plan {
  const chain = body.chain === true;
  switch (body.kind) {
    case 'TRANS_STMT_BEGIN':
    case 'TRANS_STMT_START':
      return {
        kind: 'control',
        control: {
          kind: 'begin',
          iso: isoOf(body.options),
          modes: modesOf(body.options),
          start: body.kind === 'TRANS_STMT_START',
        },
      };
    case 'TRANS_STMT_COMMIT':
      return { kind: 'control', control: { kind: 'commit', chain } };
    case 'TRANS_STMT_ROLLBACK':
      return { kind: 'control', control: { kind: 'rollback', chain } };
    // (the grammar requires a savepoint's name)
    case 'TRANS_STMT_SAVEPOINT':
      return { kind: 'control', control: { kind: 'savepoint', name: body.savepoint_name! } };
    case 'TRANS_STMT_ROLLBACK_TO':
      return { kind: 'control', control: { kind: 'rollback-to', name: body.savepoint_name! } };
    case 'TRANS_STMT_RELEASE':
      return { kind: 'control', control: { kind: 'release', name: body.savepoint_name! } };
    default:
      return refuse(
        sql,
        'two-phase commit (PREPARE TRANSACTION / COMMIT PREPARED) is not supported by the recorder',
        'Use COMMIT.',
      );
  }
}

/** Rewritten texts are parsed again to assert they parse: under vitest, or with ISOCHECK_CHECK_REWRITES=1. */
const CHECK_REWRITES = process.env.VITEST !== undefined || process.env.ISOCHECK_CHECK_REWRITES === '1';

/** Final checks shared by recorded plans: parameters, deparser fidelity. */
function finish(sql: string, original: Node, plan: RecordedPlan | { kind: 'passthrough' }, nValues: number): Plan {
  if (plan.kind === 'passthrough') return plan;
  if (paramNumbers(original) > nValues) return { kind: 'passthrough' }; // the server rejects the missing parameters
  let reparsed: Node | undefined;
  try {
    reparsed = parseSync(deparse({ version: 0, stmts: [{ stmt: original }] })).stmts?.[0]?.stmt;
  } catch {
    reparsed = undefined;
  }
  if (!sameAst(original, reparsed)) {
    refuse(
      sql,
      'the SQL deparser cannot reproduce it exactly, so it cannot be rewritten safely',
      'Write it more plainly (e.g. LIMIT instead of FETCH ... WITH TIES).',
    );
  }
  // (an assertion, in tests: a rewritten text that did not parse would get the server's syntax error; parsing it
  // again costs a fifth of planning a text, which applications that inline their values pay for every statement)
  if (CHECK_REWRITES) {
    try {
      parseSync(plan.sql);
    } catch (e) {
      throw new Error(`isocheck bug: the rewritten statement does not parse (${(e as Error).message}): ${plan.sql}`);
    }
  }
  return plan;
}
