// Parameters $1..$n: their JSON values checked (nesting, NUL bytes), the text node-postgres sends for each (an
// untyped literal whose type PostgreSQL deduces from the context), and the compilation of a parameter reference.

import type { ParamRef } from '@pgsql/types';
import { charge } from './errors.js';
import { coerceUnknown } from './coerce.js';
import { type Ctx, type Ex, type Node, fail, unknownEx } from './expr.js';
import { PREDICATE_LIMITS } from './limits.js';
import { spec, type BaseType } from './values.js';

/** Parameter $n's value, refused if nested deeper than PREDICATE_LIMITS.maxParamDepth (node-postgres
 *  serialises arrays and objects recursively; JSON.parse builds any depth). */
export function paramValue(ctx: Ctx, n: number, node: Node): unknown {
  const v = ctx.params[n - 1];
  if (ctx.paramChecked.has(n)) return v;
  // PostgreSQL verifies the encoding of parameter texts: a NUL byte is refused while binding
  const nul = () => fail(node, `invalid byte sequence for encoding "UTF8": 0x00 (parameter $${n})`);
  if (typeof v === 'string' && v.includes('\0')) nul();
  if (v !== null && typeof v === 'object') {
    const max = PREDICATE_LIMITS.maxParamDepth;
    const stack: [object, number][] = [[v, 1]];
    while (stack.length > 0) {
      const [x, d] = stack.pop()!;
      if (d > max) fail(node, `parameter $${n} is nested more than ${max} levels deep (limit ${max})`);
      const isArray = Array.isArray(x);
      const kids = isArray ? x : Object.values(x);
      charge(kids.length);
      for (const y of kids) {
        if (y !== null && typeof y === 'object') stack.push([y, d + 1]);
        else if (isArray && typeof y === 'string' && y.includes('\0')) nul(); // (objects are sent as JSON: escaped)
      }
    }
  }
  ctx.paramChecked.add(n);
  return v;
}

const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

/** The text PostgreSQL receives for a JavaScript string: node-postgres encodes it in UTF-8, lone
 *  surrogates becoming U+FFFD (String.prototype.toWellFormed). */
export function wellFormed(s: string): string {
  return /[\ud800-\udfff]/.test(s) ? s.replace(LONE_SURROGATE, '\ufffd') : s;
}

/** The text node-postgres sends for a parameter value (null for NULL). */
export function paramText(v: unknown): string | null {
  if (v === null || v === undefined) return null;
  if (typeof v === 'string') return wellFormed(v);
  if (typeof v === 'number' || typeof v === 'bigint') return String(v);
  if (typeof v === 'boolean') return v ? 'true' : 'false';
  if (Array.isArray(v)) return arrayString(v);
  return JSON.stringify(v) ?? null;
}

/** node-postgres' serialisation of a JS array parameter. */
function arrayString(a: unknown[]): string {
  charge(a.length);
  let r = '{';
  a.forEach((x, i) => {
    if (i > 0) r += ',';
    if (x === null || x === undefined) r += 'NULL';
    else if (Array.isArray(x)) r += arrayString(x);
    else r += `"${paramText(x)!.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;
  });
  return `${r}}`;
}

export function compileParam(ctx: Ctx, node: Node, b: ParamRef): Ex {
  const n: number = b.number ?? 0;
  if (n < 1 || n > ctx.params.length) fail(node, `there is no parameter $${n} (${ctx.params.length} given)`);
  ctx.referenced.add(n);
  const text = paramText(paramValue(ctx, n, node));
  const typed = ctx.paramTypes[n];
  const u = unknownEx(text, node, n);
  if (typed === undefined) {
    u.occ = { n, resolved: false };
    ctx.occurrences.push(u.occ);
    return u;
  }
  if (typed.endsWith('[]')) fail(node, `parameter $${n} is used both as an array and as a scalar`);
  return coerceUnknown(ctx, u, spec(typed as BaseType));
}
