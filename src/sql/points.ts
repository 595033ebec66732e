// Point constraints: the finite sets of values a column must equal for a clause to be TRUE (col = c, col IN (...),
// col IS NOT DISTINCT FROM c), as canonical values of the column's type, merged through AND (intersection) and OR
// (union, only when every branch constrains the column). The checker looks keys up by them.

import type { Decimal } from './decimal.js';
import { charge } from './errors.js';
import type { Ctx, Ex } from './expr.js';
import { canonicalFn, isInt, parseTypeName, type BaseType, type Internal } from './values.js';

/** Canonical value of a column whose comparison with `v` (in type t) is equality; null if no
 *  value of the column can be equal; undefined if not derivable. */
function pointValue(colType: string, t: BaseType, v: Internal): string | null | undefined {
  const colBase = parseTypeName(colType).base;
  if (t === colBase || (t === 'text' && colBase === 'varchar')) return canonicalFn(t)(v);
  if (isInt(colBase) && isInt(t)) return String(v);
  if (isInt(colBase) && t === 'numeric') {
    const d = v as Decimal;
    return d.isInteger() ? d.truncToBigInt().toString() : null;
  }
  return undefined;
}

export function pointsFor(ctx: Ctx, col: string, t: BaseType, vals: Internal[]): Map<string, string[]> | undefined {
  const out = new Set<string>();
  charge(vals.length);
  for (const v of vals) {
    if (v === null) continue;
    const c = pointValue(ctx.columns[col]!, t, v);
    if (c === undefined) return undefined;
    if (c !== null) out.add(c);
  }
  return new Map([[col, [...out]]]);
}

export function mergeAnd(parts: Ex[]): Map<string, string[]> | undefined {
  let out: Map<string, string[]> | undefined;
  for (const p of parts) {
    if (!p.points) continue;
    out ??= new Map();
    for (const [c, vs] of p.points) {
      const prev = out.get(c);
      if (prev === undefined) out.set(c, vs);
      else {
        const s = new Set(vs);
        out.set(
          c,
          prev.filter((v) => s.has(v)),
        );
      }
    }
  }
  return out;
}

export function mergeOr(parts: Ex[]): Map<string, string[]> | undefined {
  if (parts.length === 0 || parts.some((p) => !p.points)) return undefined;
  // union per column (sets: linear in the total size of the parts' constraints)
  let out: Map<string, Set<string>> | undefined;
  for (const p of parts) {
    if (out === undefined) {
      out = new Map([...p.points!].map(([c, vs]) => [c, new Set(vs)]));
      continue;
    }
    for (const [c, set] of out) {
      const vs = p.points!.get(c);
      if (vs === undefined) out.delete(c);
      else for (const v of vs) set.add(v);
    }
    if (out.size === 0) return undefined;
  }
  return out && out.size > 0 ? new Map([...out].map(([c, set]) => [c, [...set]])) : undefined;
}
