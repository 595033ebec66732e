/**
 * `isocheck merge`: joins the histories that several client processes recorded against one database into one
 * history (issue 19, "Load from several machines").
 *
 * The files must describe one database: the same tables (names, keys, column types) and the same initial rows;
 * the first difference is an error naming both files, the table and what differs. Their transactions are then
 * one history's:
 *
 * - sessions stay apart: when the files' session numbers are disjoint (as `isocheck run --client K/N` and the
 *   Recorder's `firstSession` make them) they are kept; otherwise every file's sessions are renumbered, in
 *   order, after the previous file's (1..a for the first file, a+1..a+b for the second, ...);
 * - wids are kept as they are: a read names the write it saw by the wid the database row holds, and that row may
 *   have been written by another process, so a read in one file resolves to a write in another only if wids are
 *   never renamed. Two files writing the same wid cannot be told apart by their readers: an error (record the
 *   clients with disjoint sessions: wids are `s<session>.<seq>.<n>`);
 * - transaction ids (opaque: no line refers to them) are kept, and one that another file already used gets a
 *   suffix `~<file number>`;
 * - `begin`/`end` times (milliseconds since each recorder started) are shifted by the difference of the files'
 *   `meta.startedAt`, when every file has one: comparable across files up to the machines' clock skew (a
 *   checker uses them only to order its search);
 * - meta: the keys equal in every file, `sessions` the total, and `merged` listing each file with its session
 *   numbers, transactions and its own values of the keys that differ;
 * - the `end` line is written when every input has one (a truncated input makes a truncated merge: its reads of
 *   unknown wids are then partial, as in the input).
 *
 * Streaming: each file is read twice (first to validate it and collect its sessions, wids and transaction ids;
 * then to copy its transactions), never held whole: what is kept is the first file's tables and initial rows, the
 * session numbers, and the set of wids (as the reader holds for one file). Standard input cannot be read twice.
 */
import { realpathSync, renameSync, rmSync } from 'node:fs';
import { dirname, basename, join, resolve } from 'node:path';
import { STDIN_NAME, type Row, type TxnLine } from './format.js';
import type { History, TableSchema } from './history.js';
import { HistoryFormatError, InputError } from './input-errors.js';
import { readHistory, show, type ReadOptions } from './reader.js';
import { HistoryWriter } from './writer.js';

export interface MergeOptions extends Pick<ReadOptions, 'maxLineBytes' | 'maxInputBytes'> {
  /** Notes (a truncated input, renumbered sessions). Default: none. */
  log?: (line: string) => void;
}

export interface MergedFile {
  file: string;
  transactions: number;
  /** Session number in the file -> in the merged history. */
  sessions: Map<number, number>;
  truncated: boolean;
  /** Transaction ids renamed because an earlier file used them. */
  renamedIds: number;
}

export interface MergeSummary {
  out: string;
  files: MergedFile[];
  transactions: number;
  sessions: number;
  /** Sessions were renumbered (the files' session numbers overlapped). */
  renumbered: boolean;
  /** Some input had no `end` line: so has the merge. */
  truncated: boolean;
}

const problem = (file: string, line: number, message: string): HistoryFormatError =>
  new HistoryFormatError([{ file, line, message }]);

const keyText = (key: unknown[]): string => `(${key.map((v) => show(v)).join(', ')})`;

/** How table `b` differs from `a` ("there" is a's file, "here" b's), or undefined when they are the same. */
function tableDifference(a: TableSchema, b: TableSchema): string | undefined {
  if (a.key.length !== b.key.length || a.key.some((k, i) => k !== b.key[i]))
    return `key ${keyText(a.key)} there, ${keyText(b.key)} here`;
  for (const c of Object.keys(a.columns)) {
    if (!Object.hasOwn(b.columns, c)) return `column ${show(c)} (${a.columns[c]}) there, missing here`;
    if (a.columns[c] !== b.columns[c]) return `column ${show(c)} is ${a.columns[c]} there, ${b.columns[c]} here`;
  }
  for (const c of Object.keys(b.columns))
    if (!Object.hasOwn(a.columns, c)) return `column ${show(c)} (${b.columns[c]}) here, not there`;
  return undefined;
}

/** The first file's initial rows of one table, by key (JSON of the key values). */
interface InitIndex {
  rows: Map<string, { text: string; row: Row; line: number }>;
}

function rowText(t: TableSchema, row: Row): string {
  return JSON.stringify(Object.keys(t.columns).map((c) => row[c]));
}

function indexInit(h: History): Map<string, InitIndex> {
  const out = new Map<string, InitIndex>();
  for (const [name, t] of h.tables) {
    const rows = new Map<string, { text: string; row: Row; line: number }>();
    for (const r of h.init.get(name) ?? [])
      rows.set(JSON.stringify(t.key.map((k) => r.row[k])), { text: rowText(t, r.row), row: r.row, line: r.line });
    out.set(name, { rows });
  }
  return out;
}

/** Throws at the first way `h` does not describe the same database as the first file `ref`. */
function compareDatabase(ref: History, refInit: Map<string, InitIndex>, h: History): void {
  const why = ' (merged histories must be recorded against one database: the same tables and initial rows)';
  for (const [name, a] of ref.tables) {
    const b = h.tables.get(name);
    if (!b)
      throw problem(h.file, 1, `table ${show(name)} (declared in ${ref.file}:${a.line}) is not in this file${why}`);
    const d = tableDifference(a, b);
    if (d) throw problem(h.file, b.line, `table ${show(name)} differs from ${ref.file}:${a.line}: ${d}${why}`);
  }
  for (const [name, b] of h.tables)
    if (!ref.tables.has(name)) throw problem(h.file, b.line, `table ${show(name)} is not in ${ref.file}${why}`);
  for (const [name, t] of ref.tables) {
    const index = refInit.get(name)!.rows;
    const seen = new Set<string>();
    for (const r of h.init.get(name) ?? []) {
      const keyValues = t.key.map((k) => r.row[k]);
      const key = JSON.stringify(keyValues);
      const there = index.get(key);
      const at = `initial row of table ${show(name)} with key ${keyText(keyValues)}`;
      if (!there) throw problem(h.file, r.line, `${at} is not among ${ref.file}'s initial rows${why}`);
      if (there.text !== rowText(t, r.row)) {
        const c = Object.keys(t.columns).find((col) => JSON.stringify(there.row[col]) !== JSON.stringify(r.row[col]))!;
        throw problem(
          h.file,
          r.line,
          `${at} differs from ${ref.file}:${there.line}: column ${show(c)} is ${show(there.row[c])} ` +
            `there, ${show(r.row[c])} here${why}`,
        );
      }
      seen.add(key);
    }
    if (seen.size < index.size) {
      for (const [key, there] of index) {
        if (seen.has(key)) continue;
        const keyValues = JSON.parse(key) as unknown[];
        throw problem(
          h.file,
          h.tables.get(name)!.line,
          `table ${show(name)}: the initial row with key ${keyText(keyValues)} (${ref.file}:${there.line}) is ` +
            `not in this file${why}`,
        );
      }
    }
  }
}

/** Meta of the merge: keys equal in every file, the total of sessions, and each file's own values. */
function mergeMeta(
  metas: Record<string, unknown>[],
  files: MergedFile[],
  sessions: number,
  shifted: boolean,
): Record<string, unknown> {
  const common: Record<string, unknown> = {};
  const differing = new Set<string>();
  for (const m of metas) for (const k of Object.keys(m)) if (k !== 'merged') differing.add(k);
  for (const k of [...differing]) {
    const first = JSON.stringify(metas[0][k]);
    if (metas[0][k] !== undefined && metas.every((m) => JSON.stringify(m[k]) === first)) {
      common[k] = metas[0][k];
      differing.delete(k);
    }
  }
  return {
    ...common,
    ...(metas.some((m) => typeof m.sessions === 'number') ? { sessions } : {}),
    merged: {
      tool: 'isocheck merge',
      times: shifted
        ? "begin/end shifted by each file's meta.startedAt (clock skew between machines not corrected)"
        : "begin/end as recorded (each file's own clock)",
      files: files.map((f, i) => {
        const own: Record<string, unknown> = {};
        for (const k of differing) if (metas[i][k] !== undefined) own[k] = metas[i][k];
        return {
          file: f.file,
          transactions: f.transactions,
          sessions: Object.fromEntries(f.sessions),
          truncated: f.truncated,
          meta: own,
        };
      }),
    },
  };
}

/**
 * Merges `inputs` into `out` (written to a temporary file beside it, renamed when complete). Throws
 * HistoryFormatError (`FILE:LINE: reason`) for a malformed input or inputs that do not fit together, InputError
 * for inputs that cannot be read.
 */
export async function mergeHistories(inputs: string[], out: string, options: MergeOptions = {}): Promise<MergeSummary> {
  if (inputs.length === 0) throw new InputError('merge: no input files');
  const real = new Map<string, string>();
  for (const f of inputs) {
    if (f === '-' || f === STDIN_NAME)
      throw new InputError(
        `merge: ${f}: standard input cannot be merged (each input is read twice); save it to a file first`,
      );
    let r: string;
    try {
      r = realpathSync(f);
    } catch (e) {
      throw new InputError(`${f}: cannot read (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`);
    }
    const other = real.get(r);
    if (other !== undefined) throw new InputError(`merge: ${f} is given twice${other !== f ? ` (as ${other})` : ''}`);
    real.set(r, f);
  }
  let outReal: string | undefined;
  try {
    outReal = realpathSync(out);
  } catch {
    outReal = resolve(out);
  }
  if (real.has(outReal)) throw new InputError(`merge: -o ${out} is one of the inputs; write the merge to another file`);
  const readOptions: ReadOptions = {
    keepTransactions: false,
    maxLineBytes: options.maxLineBytes,
    maxInputBytes: options.maxInputBytes,
  };

  // ---- pass 1: validate each file, compare its database with the first's, collect sessions, wids and ids ----
  let ref: History | undefined;
  let refInit: Map<string, InitIndex> | undefined;
  const metas: Record<string, unknown>[] = [];
  const fileSessions: number[][] = [];
  const files: MergedFile[] = [];
  const renamed: Set<string>[] = [];
  let wids: Map<string, number> | undefined = new Map();
  let ids: Set<string> | undefined = new Set();
  for (let i = 0; i < inputs.length; i++) {
    const file = inputs[i];
    const sessions = new Set<number>();
    const myIds: string[] = [];
    const clash = new Set<string>();
    let count = 0;
    const h = await readHistory(file, {
      ...readOptions,
      onTxn: (t, line) => {
        count++;
        sessions.add(t.session);
        if (ids!.has(t.id)) clash.add(t.id);
        else myIds.push(t.id);
        for (const e of t.events) {
          if (e.op === 'select') continue;
          const other = wids!.get(e.wid);
          if (other !== undefined) {
            throw problem(
              file,
              line,
              `txn ${show(t.id)}: wid ${show(e.wid)} is also written in ${inputs[other]}: a read of it could ` +
                `be either write ` +
                `(the files were recorded with overlapping session numbers; record each client process with ` +
                `its own sessions: isocheck run --client K/N, or the Recorder's firstSession)`,
            );
          }
          wids!.set(e.wid, i);
        }
      },
    });
    for (const id of myIds) ids.add(id);
    if (i === 0) {
      ref = h;
      refInit = indexInit(h);
    } else compareDatabase(ref!, refInit!, h);
    metas.push(h.meta);
    fileSessions.push([...sessions].sort((a, b) => a - b));
    renamed.push(clash);
    files.push({ file, transactions: count, sessions: new Map(), truncated: h.truncated, renamedIds: clash.size });
    if (h.truncated)
      options.log?.(`note: ${file} has no end line (its recorder did not finish): the merge will not have one either`);
  }
  wids = undefined; // pass 2 needs only the sessions and the renamed ids
  refInit = undefined;

  // ---- sessions: kept when disjoint, else renumbered file after file ----
  const all = new Set<number>();
  let disjoint = true;
  for (const s of fileSessions)
    for (const n of s)
      if (all.has(n)) disjoint = false;
      else all.add(n);
  let next = 0;
  fileSessions.forEach((s, i) => {
    for (const n of s) files[i].sessions.set(n, disjoint ? n : ++next);
  });
  const sessionCount = disjoint ? all.size : next;
  if (!disjoint)
    options.log?.(
      `note: the files' session numbers overlap: renumbered ` +
        `(${files.map((f) => `${f.file} ${rangeText([...f.sessions.values()])}`).join(', ')})`,
    );

  // ---- times: shifted by each file's start ----
  const starts = metas.map((m) => (typeof m.startedAt === 'string' ? Date.parse(m.startedAt) : NaN));
  const shifted = starts.every((t) => Number.isFinite(t));
  const t0 = Math.min(...starts);
  const shift = (t: number | undefined, i: number): number | undefined =>
    t === undefined || !shifted ? t : Math.round((t + starts[i] - t0) * 100) / 100;

  // ---- pass 2: write ----
  const truncated = files.some((f) => f.truncated);
  const temp = join(dirname(out), `.${basename(out)}.merging-${process.pid}${out.endsWith('.gz') ? '.gz' : ''}`);
  const writer = new HistoryWriter(temp);
  let ok = false;
  try {
    writer.header(mergeMeta(metas, files, sessionCount, shifted));
    for (const t of ref!.tables.values()) writer.table(t.name, t.key, { ...t.columns });
    for (const t of ref!.tables.values())
      writer.init(
        t.name,
        (ref!.init.get(t.name) ?? []).map((r) => r.row),
      );
    ref = undefined;
    for (let i = 0; i < inputs.length; i++) {
      const map = files[i].sessions;
      const clash = renamed[i];
      await readHistory(inputs[i], {
        ...readOptions,
        onTxn: (t) => {
          const txn: Omit<TxnLine, 'kind'> & { kind?: string } = { ...t, session: map.get(t.session)! };
          delete txn.kind;
          if (clash.has(t.id)) {
            let id = `${t.id}~${i + 1}`;
            while (ids!.has(id)) id += '~';
            ids!.add(id);
            txn.id = id;
          }
          if (shifted) {
            if (t.begin !== undefined) txn.begin = shift(t.begin, i);
            if (t.end !== undefined) txn.end = shift(t.end, i);
          }
          writer.txn(txn);
        },
      });
    }
    if (truncated) writer.close();
    else writer.end();
    renameSync(temp, out);
    ok = true;
  } finally {
    if (!ok) {
      writer.close();
      rmSync(temp, { force: true });
    }
  }
  ids = undefined;
  return { out, files, transactions: writer.transactions, sessions: sessionCount, renumbered: !disjoint, truncated };
}

/** `1-3` or `1, 4, 7` for a list of session numbers. */
export function rangeText(ns: number[]): string {
  if (ns.length === 0) return 'no sessions';
  const sorted = [...ns].sort((a, b) => a - b);
  const contiguous = sorted[sorted.length - 1] - sorted[0] === sorted.length - 1;
  if (contiguous)
    return sorted.length === 1 ? `session ${sorted[0]}` : `sessions ${sorted[0]}-${sorted[sorted.length - 1]}`;
  return `sessions ${sorted.slice(0, 6).join(', ')}${sorted.length > 6 ? ', ...' : ''}`;
}
