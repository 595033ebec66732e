// The leaves of a clause: constants (typed as PostgreSQL's make_const types them, strings left untyped) and column
// references, whose readers convert a row's history values to the internal representation (values.ts) on the hot
// path, with a one-entry cache per column for the types whose conversion allocates.

import type { A_Const, ColumnRef } from '@pgsql/types';
import { Decimal } from './decimal.js';
import { SqlEvalError, PredicateError, clip, showValue } from './errors.js';
import { type Ctx, type Ev, type Ex, type Node, fail, konstEx, unknownEx } from './expr.js';
import { bodyOf } from './node.js';
import { fromSqlFn, parseIntText, parseTypeName, type BaseType, type Internal } from './values.js';

export function compileConst(node: Node, b: A_Const): Ex {
  if (b.isnull) return unknownEx(null, node);
  if (b.ival !== undefined) return konstEx('int4', b.ival.ival ?? 0, node);
  if (b.fval !== undefined) {
    // make_const: an integer literal (decimal, 0x/0o/0b, underscores; negated by the grammar) is
    // int4 if it fits, else int8 if it fits, else numeric, as are other numeric literals
    const s: string = b.fval.fval ?? '0';
    let v: bigint | undefined;
    try {
      v = parseIntText(s, 'int8') as bigint;
    } catch (e) {
      if (!(e instanceof SqlEvalError)) throw e;
    }
    if (v !== undefined)
      return v >= -2147483648n && v <= 2147483647n ? konstEx('int4', Number(v), node) : konstEx('int8', v, node);
    let d: Decimal | undefined;
    try {
      d = Decimal.parse(s);
    } catch (e) {
      // "value overflows numeric format": PostgreSQL raises it while parsing the statement
      if (e instanceof SqlEvalError) fail(node, e.message);
      throw e;
    }
    if (d === undefined) fail(node, `invalid numeric constant ${clip(s)}`);
    return konstEx('numeric', d, node);
  }
  if (b.sval !== undefined) return unknownEx(b.sval.sval ?? '', node);
  if (b.boolval !== undefined) return konstEx('bool', b.boolval.boolval ?? false, node);
  fail(node, 'unsupported constant (bit strings are not supported)');
}

export function compileColumn(ctx: Ctx, node: Node, b: ColumnRef): Ex {
  const fields = b.fields ?? [];
  const last = fields[fields.length - 1];
  if (!last || bodyOf(last, 'A_Star') !== undefined) fail(node, '"*" is not supported');
  const name = bodyOf(last, 'String')?.sval ?? '';
  // columns and rows are looked up as own properties only ("toString" is a column name like any other)
  if (ctx.columns === null || typeof ctx.columns !== 'object' || !Object.hasOwn(ctx.columns, name)) {
    const known = ctx.columns !== null && typeof ctx.columns === 'object' ? Object.keys(ctx.columns) : [];
    fail(node, `unknown column "${clip(name)}" (known: ${clip(known.join(', '), 200)})`);
  }
  const type: unknown = ctx.columns[name];
  const ts = parseTypeName(type as string);
  if (!ts.supported)
    fail(
      node,
      `column "${clip(name)}" has unsupported type ${typeof type === 'string' ? clip(type) : showValue(type)}`,
    );
  if (!ctx.usedSet.has(name)) {
    ctx.usedSet.add(name);
    ctx.used.push(name);
  }
  const t = ts.base as BaseType;
  const missing = (): never => {
    throw new PredicateError(`row has no value for column "${clip(name)}" read by the where clause`);
  };
  let ev: Ev;
  if ((t === 'text' || t === 'varchar') && ts.mods.length === 0) {
    const conv = fromSqlFn(ts, name);
    ev = (row) => {
      const v = Object.hasOwn(row, name) ? row[name] : undefined;
      if (typeof v === 'string') return v;
      if (v === null) return null;
      if (v === undefined) return missing();
      return conv(v);
    };
  } else {
    let conv = fromSqlFn(ts, name);
    if (t === 'int8' || t === 'numeric' || t === 'date' || t === 'timestamp' || t === 'timestamptz' || t === 'uuid') {
      // one-entry cache of the last converted history value, shared by all reads of the column
      // (BETWEEN and IN read a column several times per row; the value, not the row, is the key)
      let cache = ctx.colCache.get(name);
      if (!cache) {
        const base = conv;
        const c: { raw: unknown; val: Internal } = { raw: undefined, val: null };
        cache = (v) => {
          if (v === c.raw) return c.val;
          const r = base(v);
          c.raw = v;
          c.val = r;
          return r;
        };
        ctx.colCache.set(name, cache);
      }
      conv = cache;
    }
    if (t === 'int4') {
      ev = (row) => {
        const v = Object.hasOwn(row, name) ? row[name] : undefined;
        if (typeof v === 'number' && (v | 0) === v) return v + 0;
        if (v === null) return null;
        if (v === undefined) return missing();
        return conv(v);
      };
    } else if (t === 'float8') {
      ev = (row) => {
        const v = Object.hasOwn(row, name) ? row[name] : undefined;
        if (typeof v === 'number') return v;
        if (v === null) return null;
        if (v === undefined) return missing();
        return conv(v);
      };
    } else {
      ev = (row) => {
        const v = Object.hasOwn(row, name) ? row[name] : undefined;
        if (v === null) return null;
        if (v === undefined) return missing();
        return conv(v);
      };
    }
  }
  return { t, ev, konst: false, col: name, node };
}
