/**
 * The one renderer of anomalies (data, anomaly.ts) into words (docs/semantics.md §5): each edge's reason, each
 * anomaly's one-line message, the stuck frontier and open conflicts, and the terminal text a person can check by
 * hand (a verdict line, then per anomaly its name with Adya's and Elle's, the violated levels, the transactions
 * and each forced edge with its reason). `--json` (report/json.ts) and the HTML report (report/html.ts) take
 * their prose from here.
 */
import {
  anomalyName,
  ANOMALY_NAMES,
  literatureNames,
  type Anomaly,
  type Blocked,
  type Edge,
  type MissingRowAnomaly,
  type OpenConflict,
  type ReadAnomaly,
  type Visibility,
} from '../anomaly.js';
import type { CheckResult } from '../result.js';
import { whereText } from './describe.js';

export { anomalyName, literatureNames };

/** `table(v1, v2)`, as the checker writes rows. */
export function keyText(table: string, key: readonly unknown[]): string {
  return `${table}(${key.map((v) => JSON.stringify(v)).join(', ')})`;
}

const VIA_TEXT: Record<Visibility, string> = {
  so: 'precedes the reader in its session',
  'wr-earlier': 'an earlier statement of the reader read from it',
  wr: 'the reader read from it',
  causal: 'it causally precedes the reader (session order and reads)',
  prefix: 'it commits before a transaction the reader read from or follows in its session',
  conflict:
    'it commits before a transaction that writes a row the reader also writes, and that commits before the reader',
  co: 'it commits before the reader',
};

/** A missing row's versions as `writer: row` lines. */
export function missingVersions(a: MissingRowAnomaly): string[] {
  return a.versions.map((v) => `${v.writer}: ${JSON.stringify(v.row)}`);
}

const versionOf = (writer: string) => (writer === 'init' ? 'the initial version' : `the version of ${writer}`);

/** Why an edge holds, in SQL terms. */
export function edgeReason(e: Edge): string {
  switch (e.kind) {
    case 'so':
      return e.from === 'init'
        ? 'init precedes every transaction'
        : `${e.from} precedes ${e.to} in session ${e.session}`;
    case 'wr':
      return (
        `${e.to} read ${keyText(e.table, e.key)} written by ${e.from} (wid ${e.wid})` +
        (e.overwrote ? ' and overwrote it' : '')
      );
    case 'witness':
      return (
        `${e.to} did not return ${keyText(e.table, e.key)}: ` +
        `it is taken to have read the version of ${e.from}, which does not match its WHERE`
      );
    case 'rw': {
      const key = keyText(e.table, e.key);
      return (
        `${e.from} must commit before ${e.to}: ${e.from} (${e.level}) read ${key} as ${versionOf(e.version)} ` +
        `(wid ${e.wid}), which ${e.to} overwrote; had ${e.to} committed first, ${e.from} would have seen it`
      );
    }
    case 'axiom': {
      const key = keyText(e.table, e.key);
      const chosen = e.unreturned
        ? ' (the row was not returned: among the versions that would hide it, this one was chosen)'
        : '';
      const wid = e.wid ? ` (wid ${e.wid})` : '';
      return (
        `${e.from} must commit before ${e.to}: ${e.reader} (${e.level}) read ${key} as ${versionOf(e.to)}${wid}` +
        `${chosen}, ${e.from} also wrote ${key} and is visible to it (${VIA_TEXT[e.via]})`
      );
    }
    case 'assumed':
      return `suppose ${e.from} commits before ${e.to}`;
  }
}

function readMessage(a: ReadAnomaly): string {
  const head = `${a.reader} ${a.read.op}`;
  const key = keyText(a.table, a.key);
  const where = `WHERE ${a.read.where ?? ''}`;
  switch (a.problem) {
    case 'returned-twice':
      return `${head} returned ${key} twice`;
    case 'own-version-overwritten':
      return `${head} read ${key} as version ${a.wid}, but it had itself written version ${a.laterWid} before`;
    case 'own-row-deleted':
      return `${head} read ${key}, a row it had deleted itself`;
    case 'no-initial-row':
      return `${head} read ${key} as written by init, but the initial database has no such row`;
    case 'unknown-wid':
      return `${head} read ${key} from wid ${a.wid}, which no event of the history wrote`;
    case 'own-later-write':
      return `${head} read ${key} from its own wid ${a.wid}, written later in the transaction`;
    case 'writer-did-not-write-row':
      return `${head} read ${key} from wid ${a.wid} (${a.writer}), which did not write that row`;
    case 'writer-aborted':
      return `${head} read ${key} from wid ${a.wid} of ${a.writer}, which aborted (G1a)`;
    case 'writer-overwrote':
      return `${head} read ${key} from wid ${a.wid} of ${a.writer}, which later overwrote it with ${a.laterWid} (G1b)`;
    case 'writer-deleted-row':
      return `${head} read ${key} from wid ${a.wid} of ${a.writer}, which deleted that row`;
    case 'values-differ': {
      const diff = (a.differences ?? [])
        .map((d) => `${d.column} = ${JSON.stringify(d.returned)}${d.notWritten ? ' (not written)' : ''}`)
        .join(', ');
      const by = a.own ? 'it had itself written' : `wid ${a.wid} wrote`;
      return `${head} returned ${key} with ${diff}, but ${by} ${JSON.stringify(a.row)}`;
    }
    case 'where-not-satisfied': {
      const params = a.read.params ? ` with ${JSON.stringify(a.read.params)}` : '';
      return `${head} returned ${key} = ${JSON.stringify(a.row)}, which does not satisfy ${where}${params}`;
    }
    case 'own-row-not-returned':
      return (
        `${head} did not return ${key} = ${JSON.stringify(a.row)}, ` +
        `which it had written itself and which satisfies ${where}`
      );
  }
}

const meaning = (a: Anomaly) => `${anomalyName(a.type)}: ${ANOMALY_NAMES[a.type].text ?? ''}`;

/** The anomaly's one-line statement of what is wrong, in SQL terms (the `message` of `--json` and the report). */
export function anomalyMessage(a: Anomaly): string {
  const sub = a.inSubHistory ? ` (in a sub-history of ${a.inSubHistory} transactions)` : '';
  return `${messageOf(a)}${sub}`;
}

function messageOf(a: Anomaly): string {
  switch (a.type) {
    case 'circular-information-flow': {
      const ids = a.edges.map((e) => e.from);
      return `information flows in a cycle (G1c): ${[...ids, ids[0]].join(' -> ')}`;
    }
    case 'missing-row': {
      const versions = missingVersions(a).join('; ');
      const where = a.read.where !== undefined ? whereText(a.read.where) : '(none)';
      const params = a.read.params ? ` ${JSON.stringify(a.read.params)}` : '';
      return (
        `${a.reader} (${a.level}) ${a.read.op} with WHERE ${where}${params} did not return ` +
        `${keyText(a.table, a.key)}, but every version it could have seen matches the WHERE (${versions}), ` +
        'and no transaction it could have read from deleted it or changed it to not match'
      );
    }
    case 'no-consistent-order':
      return a.conflicts || a.conflictCount !== undefined
        ? `no choice of the versions that hide the ${a.conflictCount ?? 0} unreturned row(s) with a matching ` +
            'version admits a commit order'
        : 'no commit order satisfies every axiom for the rows that were returned, although no single cycle is forced';
    default:
      break;
  }
  if ('problem' in a) return readMessage(a);
  if (a.by === 'cycle') return `${meaning(a)}${a.readers.length ? `; violated by ${a.readers.join(', ')}` : ''}`;
  const [x, y] = a.pair;
  if (a.table && a.key) {
    return (
      `${meaning(a)}: ${x} and ${y} both read ${keyText(a.table, a.key)} (wid ${a.wid}) and both wrote it; ` +
      'whichever committed second would have seen the other'
    );
  }
  const what =
    a.type === 'commit-order-cycle'
      ? 'no commit order works: each way of ordering two transactions forces a cycle'
      : meaning(a);
  const stuck = a.fromStuck
    ? ' (the search for a commit order got stuck with each of them waiting for the other, or for a later transaction' +
      " of the other's session)"
    : '';
  return `${what}: ${x} and ${y} cannot be ordered either way${stuck}`;
}

/** Why a transaction could not commit next where the search got stuck. */
export function blockedText(b: Blocked): string {
  switch (b.why) {
    case 'forced-order':
      return `must commit after ${b.after}, which has not committed yet (forced order)`;
    case 'visible-writer': {
      const key = keyText(b.table, b.key);
      return (
        `${b.reader} (${b.level}) read ${key} from ${b.version}, which already committed; ${b.txn} also writes ` +
        `${key} and would be visible to that read, so it would have had to commit before ${b.version}`
      );
    }
    case 'stale-snapshot':
      return (
        `${b.reader} (SI) writes a row ${b.txn} writes, so everything committed so far is visible to it, ` +
        `but it read ${keyText(b.table, b.key)} from ${b.version} while ${b.later} wrote it later`
      );
    case 'explored':
      return 'every prefix it leads to was already explored and failed';
  }
}

export function conflictText(c: OpenConflict): string {
  return (
    `${c.reader} event ${c.read.event} (${c.read.op} ${c.read.where ?? ''}) did not return ` +
    `${keyText(c.table, c.key)}, which ${c.matching.join(', ')} wrote matching the WHERE; ` +
    `it may have read the version of ${c.hiding.join(' or ')}`
  );
}

/** The heading of an anomaly: `WRITE SKEW [violates SER] (Adya G2-item; Berenson A5B; Elle G2-item)`. */
export function anomalyHeading(a: Anomaly): string {
  const lit = literatureNames(a.type);
  const levels = a.levels?.length ? ` [violates ${a.levels.join(', ')}]` : '';
  return `${anomalyName(a.type).toUpperCase()}${levels}${lit ? ` (${lit})` : ''}`;
}

export function renderAnomaly(a: Anomaly, indent = '  '): string[] {
  const lines = [`${indent}${anomalyHeading(a)}`];
  lines.push(`${indent}  ${anomalyMessage(a)}`);
  for (const e of a.events ?? []) {
    lines.push(
      `${indent}  statement ${e.event} of ${e.txn} (line ${e.line}): ${e.op} ${e.table}` +
        `${e.where ? ` WHERE ${whereText(e.where)}` : ''}${e.params ? ` params ${JSON.stringify(e.params)}` : ''}`,
    );
  }
  const steps = (edges: Edge[]) =>
    edges.map((e, j) => `${indent}   ${j + 1}. [${e.kind}] ${e.from} -> ${e.to}: ${edgeReason(e)}`);
  if ('by' in a && a.by === 'cases') {
    a.cases.forEach((c, i) => {
      lines.push(
        `${indent}  Case ${i + 1}: suppose ${c.assume.before} commits before ${c.assume.after}. ` +
          'Then a cycle is forced:',
        ...steps(c.edges),
      );
    });
  } else if ('edges' in a && a.edges.length) {
    lines.push(`${indent}  Why (each step is forced; together they form a cycle):`, ...steps(a.edges));
  }
  if (a.transactions) {
    lines.push(`${indent}  Transactions:`);
    for (const t of a.transactions) {
      lines.push(
        `${indent}   ${t.id}: session ${t.session} #${t.seq}${t.label ? ` ${t.label}` : ''}, ${t.iso}, ${t.status}` +
          (t.node ? `, on ${t.node}` : ''),
      );
      const MAX_STATEMENTS = 10;
      for (const st of t.statements.slice(0, MAX_STATEMENTS)) lines.push(`${indent}     ${st}`);
      if (t.statements.length > MAX_STATEMENTS)
        lines.push(`${indent}     ... ${t.statements.length - MAX_STATEMENTS} more statements (--json has them all)`);
    }
  }
  if (a.type !== 'no-consistent-order') return lines;
  if (a.stuck) {
    const s = a.stuck;
    lines.push(
      `${indent}  The search for a commit order got furthest with ${s.committed} transactions committed ` +
        `(the last: ${s.lastCommitted.join(', ') || 'none'}); then none of the next ones can commit:`,
    );
    for (const b of s.blocked) lines.push(`${indent}   - ${b.txn}: ${blockedText(b)}`);
  }
  if (a.subHistory) lines.push(`${indent}  Smallest inconsistent sub-history found: ${a.subHistory.join(', ')}`);
  if (a.conflicts) {
    lines.push(`${indent}  Unreturned rows whose hiding version had to be chosen:`);
    for (const c of a.conflicts) lines.push(`${indent}   - ${conflictText(c)}`);
  }
  return lines;
}

export function renderResult(file: string, r: CheckResult): string {
  const s = r.stats;
  const decided = s.decidedBy === 'linear' ? 'decided by the linear check' : `${s.conflicts} conflicts`;
  const head =
    `${file}: ${r.verdict.toUpperCase()} (${s.committed} committed, ${s.aborted} aborted of ${s.transactions} ` +
    `transactions in ${s.sessions} sessions; ${decided}; ${(s.timeMs / 1000).toFixed(2)} s)`;
  const lines = [head];
  if (r.reason) lines.push(`  ${r.reason}`);
  for (const note of r.notes) lines.push(`  note: ${note}`);
  const shown = r.anomalies.slice(0, 5);
  for (const a of shown) lines.push(...renderAnomaly(a));
  if (r.anomalies.length > shown.length)
    lines.push(`  ... and ${r.anomalies.length - shown.length} more (use --json to see all)`);
  return lines.join('\n');
}
