// Operator resolution, a faithful subset of PostgreSQL's for the supported types: the type both sides of a
// comparison are coerced to, and the common type of a list (ARRAY[...], IN), by type category and preference.

import { type Ex, type Node, type T, fail, typeName } from './expr.js';
import { CATEGORY, isFloat, isImplicitCast, isPreferred, type BaseType } from './values.js';

export const CMP_OPS = new Set(['=', '<>', '<', '<=', '>', '>=']);

export function opError(node: Node, op: string, l: T, r: T): never {
  fail(node, `operator does not exist: ${typeName(l)} ${op} ${typeName(r)}`);
}

/** The type both sides of a comparison are coerced to. */
export function compareType(node: Node, op: string, l: T, r: T): BaseType {
  if (l === 'unknown' && r === 'unknown') return 'text';
  if (l === 'unknown') return r === 'varchar' ? 'text' : (r as BaseType);
  if (r === 'unknown') return l === 'varchar' ? 'text' : l;
  if (l === r) return l === 'varchar' ? 'text' : l;
  const cl = CATEGORY[l];
  if (cl !== CATEGORY[r]) opError(node, op, l, r);
  switch (cl) {
    case 'N':
      if (isFloat(l) || isFloat(r)) return 'float8';
      if (l === 'numeric' || r === 'numeric') return 'numeric';
      return l === 'int8' || r === 'int8' ? 'int8' : 'int4';
    case 'S':
      if (l === 'bpchar' || r === 'bpchar') return l === 'varchar' || r === 'varchar' ? 'bpchar' : 'text';
      return 'text';
    case 'D':
      return l === 'timestamptz' || r === 'timestamptz' ? 'timestamptz' : 'timestamp';
  }
  opError(node, op, l, r);
}

export function selectCommonType(exprs: Ex[], node: Node | undefined, what: string): BaseType | undefined {
  let p: BaseType | undefined;
  for (const e of exprs) {
    if (e.t === 'unknown') continue;
    if (p === undefined) {
      p = e.t;
      continue;
    }
    if (e.t === p) continue;
    if (CATEGORY[e.t] !== CATEGORY[p]) {
      if (node === undefined) return undefined;
      fail(node, `${what} types ${typeName(p)} and ${typeName(e.t)} cannot be matched`);
    }
    if (!isPreferred(p) && isImplicitCast(p, e.t) && !isImplicitCast(e.t, p)) p = e.t;
  }
  return p ?? 'text';
}
