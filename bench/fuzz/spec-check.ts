/**
 * An independent reading of docs/history-format.md and docs/semantics.md §1.5, for the fuzzer (docs/reliability.md):
 * written from the documents, not from src/history/reader.ts, so that the two can be compared on mutated files.
 *
 *   specCheck(text) -> { format: problems the format forbids (the file must be refused, exit 2),
 *                        illFormed: reads the semantics calls ill-formed (the verdict must not be consistent),
 *                        unspecified: what the documents leave open (no assertion is made on such a file),
 *                        txns: how many transactions, truncated }
 *
 * Deliberately plain: one pass over the lines with JSON.parse, explicit checks, no sharing with the reader.
 */

export interface SpecVerdict {
  format: string[];
  illFormed: string[];
  unspecified: string[];
  txns: number;
  truncated: boolean;
}

const KINDS_OF_LEVEL = new Set(['RC', 'RA', 'CC', 'PC', 'SI', 'SER']);
const STATUSES = new Set(['committed', 'aborted', 'unknown']);
const OPS = new Set(['select', 'insert', 'update', 'delete']);
const INT_RANGE: Record<string, [number, number]> = { int2: [-32768, 32767], int4: [-2147483648, 2147483647] };
const INT8_MAX = 9223372036854775807n;
const INT8_MIN = -9223372036854775808n;

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
const own = (o: Obj, k: string): boolean => Object.hasOwn(o, k);
const isSafeInt = (v: unknown): v is number => typeof v === 'number' && Number.isSafeInteger(v);

interface Table {
  key: string[];
  columns: Map<string, string>;
}

/** Whether a JSON value is a valid value of the column type (docs/history-format.md, "Values"). */
function valueOk(v: unknown, type: string): boolean {
  if (v === null) return true;
  if (typeof v === 'object') return false; // values are scalars
  switch (type) {
    case 'int2':
    case 'int4': {
      const [lo, hi] = INT_RANGE[type];
      return typeof v === 'number' && Number.isInteger(v) && v >= lo && v <= hi;
    }
    case 'float4':
    case 'float8':
      return (typeof v === 'number' && Number.isFinite(v)) || v === 'NaN' || v === 'Infinity' || v === '-Infinity';
    case 'int8': {
      if (typeof v !== 'string' || !/^[+-]?\d{1,25}$/.test(v)) return false;
      const n = BigInt(v);
      return n >= INT8_MIN && n <= INT8_MAX;
    }
    case 'numeric': {
      if (typeof v !== 'string') return false;
      if (v === 'NaN' || v === 'Infinity' || v === '-Infinity') return true;
      const m = /^[+-]?(\d*)(?:\.(\d*))?(?:[eE]([+-]?\d+))?$/.exec(v);
      if (!m || (m[1] === '' && (m[2] ?? '') === '')) return false;
      // PostgreSQL: up to 131072 digits before the point, 16383 after
      const exp = m[3] === undefined ? 0 : Number(m[3]);
      const intDigits = m[1].replace(/^0+/, '').length + exp;
      return Math.abs(exp) < 1e6 && intDigits <= 131072;
    }
    case 'bool':
      return typeof v === 'boolean';
    case 'text':
    case 'varchar':
    case 'bpchar':
    case 'date':
    case 'timestamp':
    case 'timestamptz':
      return typeof v === 'string';
    default:
      return true;
  }
}

export function specCheck(text: string): SpecVerdict {
  const format: string[] = [];
  const illFormed: string[] = [];
  const unspecified: string[] = [];
  const out = (): SpecVerdict => ({ format, illFormed, unspecified, txns: txnIds.size, truncated });
  const tables = new Map<string, Table>();
  const txnIds = new Set<string>();
  const wids = new Map<string, { txn: string; status: string; key: string; last: boolean }>();
  const widNames = new Set<string>();
  const lastWrite = new Map<string, string>(); // txn + key -> wid of the txn's last write of that key
  const reads: { txn: string; status: string; wid: string; key: string; where: string }[] = [];
  const sessions = new Map<number, number[]>();
  let truncated = true;
  let sawEnd = false;

  let lines = text.split('\n');
  if (lines.length > 0 && lines[lines.length - 1] === '') lines = lines.slice(0, -1);
  else if (lines.length > 0) {
    // a last line without its newline: a crash cut it (docs: ignored when it does not parse)
    try {
      JSON.parse(lines[lines.length - 1]);
    } catch {
      lines = lines.slice(0, -1);
      unspecified.push('a last line cut mid-way');
    }
  }
  if (lines.length === 0) {
    format.push('empty file');
    return out();
  }
  const rowOk = (row: unknown, t: Table, where: string, needKey: boolean): boolean => {
    if (!isObj(row)) {
      format.push(`${where}: row not an object`);
      return false;
    }
    const before = format.length;
    for (const [c, v] of Object.entries(row)) {
      const type = t.columns.get(c);
      if (type === undefined) format.push(`${where}: column ${c} not declared`);
      else if (!valueOk(v, type)) format.push(`${where}: ${c} not a ${type}`);
    }
    if (needKey)
      for (const k of t.key) if (!own(row, k) || row[k] === null) format.push(`${where}: key column ${k} missing`);
    return format.length === before; // a row with a problem is not looked at further (its values may not be scalars)
  };
  const keyOf = (table: string, t: Table, row: Obj): string =>
    `${table}(${t.key.map((k) => JSON.stringify(row[k])).join(',')})`;

  lines.forEach((line, i) => {
    const at = `line ${i + 1}`;
    if (sawEnd) {
      format.push(`${at}: after end`);
      return;
    }
    if (line.trim() === '') {
      unspecified.push(`${at}: blank line`);
      return;
    }
    let v: unknown;
    try {
      v = JSON.parse(line);
    } catch {
      format.push(`${at}: not JSON`);
      return;
    }
    if (!isObj(v)) {
      format.push(`${at}: not an object`);
      return;
    }
    if (i === 0) {
      if (v.kind !== 'history' || v.format !== 'isocheck-history' || v.version !== 1) format.push(`${at}: bad header`);
      if (own(v, 'meta') && !isObj(v.meta)) format.push(`${at}: meta not an object`);
      return;
    }
    switch (v.kind) {
      case 'history': {
        format.push(`${at}: second header`);
        return;
      }
      case 'table': {
        const { name, key, columns } = v;
        if (typeof name !== 'string' || name === '') {
          format.push(`${at}: table name`);
          return;
        }
        if (tables.has(name)) {
          format.push(`${at}: table declared twice`);
          return;
        }
        if (!isObj(columns)) {
          format.push(`${at}: columns`);
          return;
        }
        const cols = new Map<string, string>();
        for (const [c, t] of Object.entries(columns)) {
          if (typeof t !== 'string') {
            format.push(`${at}: type of ${c}`);
            return;
          }
          cols.set(c, t);
        }
        if (!Array.isArray(key) || key.length === 0 || key.some((k) => typeof k !== 'string' || !cols.has(k))) {
          format.push(`${at}: key`);
          return;
        }
        if (new Set(key).size !== key.length) unspecified.push(`${at}: a key column twice`);
        tables.set(name, { key: key as string[], columns: cols });
        return;
      }
      case 'init': {
        const t = typeof v.table === 'string' ? tables.get(v.table) : undefined;
        if (!t) {
          format.push(`${at}: init of an undeclared table`);
          return;
        }
        if (!Array.isArray(v.rows)) {
          format.push(`${at}: rows`);
          return;
        }
        if (txnIds.size > 0) unspecified.push(`${at}: init after transactions`);
        for (const r of v.rows) {
          if (rowOk(r, t, at, true)) {
            const k = keyOf(v.table as string, t, r as Obj);
            if (wids.has(`init|${k}`)) unspecified.push(`${at}: two initial rows for one key`);
            wids.set(`init|${k}`, { txn: 'init', status: 'committed', key: k, last: true });
          }
        }
        return;
      }
      case 'txn': {
        const { id, session, seq, iso, status, label, begin, end, error, events } = v;
        if (typeof id !== 'string' || id === '') {
          format.push(`${at}: id`);
          return;
        }
        if (txnIds.has(id)) format.push(`${at}: duplicate id`);
        txnIds.add(id);
        if (!isSafeInt(session) || session < 1) format.push(`${at}: session`);
        if (!isSafeInt(seq) || seq < 1) format.push(`${at}: seq`);
        if (isSafeInt(session) && isSafeInt(seq)) sessions.set(session, [...(sessions.get(session) ?? []), seq]);
        if (typeof iso !== 'string' || !KINDS_OF_LEVEL.has(iso)) format.push(`${at}: iso`);
        if (typeof status !== 'string' || !STATUSES.has(status)) format.push(`${at}: status`);
        if (label !== undefined && typeof label !== 'string') format.push(`${at}: label`);
        for (const [n, t] of [
          ['begin', begin],
          ['end', end],
        ] as const)
          if (t !== undefined && (typeof t !== 'number' || !Number.isFinite(t))) format.push(`${at}: ${n}`);
        if (error !== undefined && typeof error !== 'string' && !isObj(error)) format.push(`${at}: error`);
        if (!Array.isArray(events)) {
          format.push(`${at}: events`);
          return;
        }
        const st = typeof status === 'string' ? status : '?';
        events.forEach((e, j) => {
          const ev = `${at} event ${j + 1}`;
          if (!isObj(e) || typeof e.op !== 'string' || !OPS.has(e.op)) {
            format.push(`${ev}: op`);
            return;
          }
          const t = typeof e.table === 'string' ? tables.get(e.table) : undefined;
          if (!t) {
            format.push(`${ev}: undeclared table`);
            return;
          }
          const table = e.table as string;
          if (e.op !== 'insert') {
            if (own(e, 'where') && (typeof e.where !== 'string' || e.where.trim() === '')) format.push(`${ev}: where`);
            if (own(e, 'params') && !Array.isArray(e.params)) format.push(`${ev}: params`);
            if (own(e, 'partial') && typeof e.partial !== 'boolean') format.push(`${ev}: partial`);
            if (own(e, 'params') && !own(e, 'where')) unspecified.push(`${ev}: params without where`);
            if (own(e, 'params') || own(e, 'where'))
              unspecified.push(`${ev}: a WHERE (the evaluator's subset is not in the format)`);
          }
          if (e.op !== 'select') {
            if (typeof e.wid !== 'string' || e.wid === '') {
              format.push(`${ev}: wid`);
              return;
            }
            if (e.wid === 'init') format.push(`${ev}: wid init`);
            if (widNames.has(e.wid)) format.push(`${ev}: duplicate wid`);
            widNames.add(e.wid);
          }
          if (!Array.isArray(e.rows)) {
            format.push(`${ev}: rows`);
            return;
          }
          for (const r of e.rows) {
            if (!isObj(r)) {
              format.push(`${ev}: row entry`);
              continue;
            }
            if (e.op === 'select' || e.op === 'update' || e.op === 'delete') {
              const w = e.op === 'select' ? r.wid : r.read;
              if (typeof w !== 'string' || w === '') {
                format.push(`${ev}: wid read`);
                continue;
              }
            }
            if (e.op === 'delete') {
              if (!Array.isArray(r.key) || r.key.length !== t.key.length) {
                format.push(`${ev}: key`);
                continue;
              }
              const badKey = (r.key as unknown[]).some(
                (kv, ki) => kv === null || !valueOk(kv, t.columns.get(t.key[ki])!),
              );
              if (badKey) {
                format.push(`${ev}: key value`);
                continue;
              }
              const k = `${table}(${(r.key as unknown[]).map((x) => JSON.stringify(x)).join(',')})`;
              reads.push({ txn: id, status: st, wid: r.read as string, key: k, where: ev });
              lastWrite.set(`${id}|${k}`, e.wid as string);
              wids.set(`${e.wid}|${k}`, { txn: id, status: st, key: k, last: false });
              continue;
            }
            if (!rowOk(r.row, t, ev, true)) continue;
            const k = keyOf(table, t, r.row as Obj);
            if (e.op === 'select' || e.op === 'update')
              reads.push({
                txn: id,
                status: st,
                wid: (e.op === 'select' ? r.wid : r.read) as string,
                key: k,
                where: ev,
              });
            if (e.op !== 'select') {
              lastWrite.set(`${id}|${k}`, e.wid as string);
              wids.set(`${e.wid}|${k}`, { txn: id, status: st, key: k, last: false });
            }
          }
        });
        return;
      }
      case 'end': {
        sawEnd = true;
        truncated = false;
        if (!isSafeInt(v.transactions) || v.transactions !== txnIds.size) format.push(`${at}: end count`);
        return;
      }
      default:
        format.push(`${at}: kind`);
    }
  });
  if (!sawEnd) truncated = true;
  for (const [s, seqs] of sessions) {
    const sorted = [...seqs].sort((a, b) => a - b);
    if (sorted.some((q, i) => q !== i + 1)) {
      // a truncated file may miss the transactions still open when the recorder died
      if (truncated && new Set(sorted).size === sorted.length)
        unspecified.push(`session ${s}: a gap in seq in a truncated file`);
      else format.push(`session ${s}: seq not 1, 2, ...`);
    }
  }
  // semantics §1.5, for committed readers: reads of a wid nobody wrote (garbage), of an aborted write, or of a
  // write its transaction overwrote later (intermediate)
  for (const [k, w] of lastWrite) {
    const [txn, key] = [k.slice(0, k.indexOf('|')), k.slice(k.indexOf('|') + 1)];
    const entry = wids.get(`${w}|${key}`);
    if (entry && entry.txn === txn) entry.last = true;
  }
  for (const r of reads) {
    if (r.status !== 'committed') continue;
    const w = wids.get(`${r.wid}|${r.key}`);
    if (r.wid === 'init') continue; // a missing initial row is a value question, judged by the checker
    if (!widNames.has(r.wid)) {
      if (truncated) unspecified.push(`${r.where}: a wid not in a truncated file`);
      else illFormed.push(`${r.where}: garbage read of ${r.wid}`);
      continue;
    }
    if (!w) continue; // a wid that wrote other keys: the checker's value comparison decides
    if (w.txn === r.txn) continue; // own writes: judged by the checker (internal reads)
    if (w.status === 'aborted') illFormed.push(`${r.where}: aborted read of ${r.wid}`);
    else if (!w.last) illFormed.push(`${r.where}: intermediate read of ${r.wid}`);
  }
  return out();
}
