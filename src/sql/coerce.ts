// Coercion and casts: an untyped literal or parameter resolved to a type (its input function, then the length
// coercion of the type's modifiers), implicit coercions between operand types, explicit casts (x::type, CAST) and
// the type names they are written with.

import type { TypeName } from '@pgsql/types';
import { SqlEvalError, charge, showValue } from './errors.js';
import { type Ctx, type Ex, type Node, type T, fail, konstEx, mapEx, typeName } from './expr.js';
import { bodyOf } from './node.js';
import { CATEGORY, castFn, inputFn, parseTypeName, spec, typmodFn, type BaseType, type TypeSpec } from './values.js';

/** Resolves an unknown literal/param to type `ts` (input function, then explicit length coercion). */
export function coerceUnknown(ctx: Ctx, e: Ex, ts: TypeSpec): Ex {
  const base = ts.base as BaseType;
  if (e.occ) e.occ.resolved = true;
  if (e.param !== undefined) {
    const prev = ctx.paramTypes[e.param];
    if (prev !== undefined && prev !== base) {
      fail(
        e.node,
        `inconsistent types deduced for parameter $${e.param} (${typeName(prev as T)} and ${typeName(base)})`,
      );
    }
    ctx.paramTypes[e.param] = base;
  }
  if (e.text === null || e.text === undefined) return konstEx(base, null, e.node);
  charge(1);
  try {
    let v = inputFn(base)(e.text);
    const tm = typmodFn(ts);
    if (tm) v = tm(v);
    return konstEx(base, v, e.node);
  } catch (err) {
    if (err instanceof SqlEvalError) {
      fail(
        e.node,
        e.param !== undefined
          ? `${err.message} (parameter $${e.param} = ${showValue(ctx.params[e.param - 1])})`
          : err.message,
      );
    }
    throw err;
  }
}

/** An unknown parameter whose type has been deduced meanwhile becomes a typed constant. */
export function refresh(ctx: Ctx, e: Ex): Ex {
  if (e.t !== 'unknown' || e.param === undefined) return e;
  const t = ctx.paramTypes[e.param];
  return t === undefined || t.endsWith('[]') ? e : coerceUnknown(ctx, e, spec(t as BaseType));
}

/** Implicit coercion to `to` (the caller made sure it exists). */
export function coerceTo(ctx: Ctx, e: Ex, to: BaseType): Ex {
  if (e.t === 'unknown') return coerceUnknown(ctx, e, spec(to));
  if (e.t === to) return e;
  const fn = castFn(e.t, to, false);
  if (!fn) fail(e.node, `cannot coerce ${typeName(e.t)} to ${typeName(to)}`);
  return mapEx(to, e, fn, e.node);
}

export function toBool(ctx: Ctx, e: Ex, what: string): Ex {
  if (e.t === 'unknown') return coerceUnknown(ctx, e, spec('bool'));
  if (e.t !== 'bool') fail(e.node, `argument of ${what} must be type boolean, not type ${typeName(e.t)}`);
  return e;
}

/** For LIKE patterns and ||: unknown -> text, string types -> text. */
export function toText(ctx: Ctx, e: Ex, what: string): Ex {
  if (e.t === 'unknown' || e.t === 'text') return coerceTo(ctx, e, 'text');
  if (CATEGORY[e.t] === 'S') return coerceTo(ctx, e, 'text');
  fail(e.node, `${what}: expected a string, got type ${typeName(e.t)}`);
}

export function typeSpecOf(node: Node, typeNameNode: TypeName | undefined): { ts: TypeSpec; array: boolean } {
  const names = (typeNameNode?.names ?? []).map((n) => bodyOf(n, 'String')?.sval ?? '');
  if (typeNameNode?.setof || typeNameNode?.pct_type) fail(node, 'unsupported type syntax');
  let name: string;
  if (names.length === 2 && names[0] === 'pg_catalog') name = names[1]!;
  else if (names.length === 1 && names[0] !== 'char') name = names[0]!;
  else fail(node, `unsupported type ${names.join('.')}`);
  const mods = (typeNameNode?.typmods ?? []).map((m) => {
    const v = bodyOf(m, 'A_Const')?.ival;
    if (v === undefined) fail(node, 'unsupported type modifier');
    return v.ival ?? 0;
  });
  const ts = parseTypeName(mods.length ? `${name}(${mods.join(',')})` : name);
  if (!ts.supported) fail(node, `unsupported type ${name}${mods.length ? `(${mods.join(',')})` : ''}`);
  const bounds = typeNameNode?.arrayBounds ?? [];
  return { ts, array: bounds.length > 0 };
}

export function castEx(ctx: Ctx, e: Ex, ts: TypeSpec, node: Node): Ex {
  if (e.t === 'unknown') {
    const out = coerceUnknown(ctx, e, ts);
    return { ...out, node };
  }
  const to = ts.base as BaseType;
  const fn = castFn(e.t, to, true);
  if (!fn) fail(node, `cannot cast type ${typeName(e.t)} to ${typeName(to)}`);
  const tm = typmodFn(ts);
  if (e.t === to && !tm) return { ...e, col: undefined, points: undefined, node };
  return mapEx(to, e, tm ? (v) => tm(fn(v)) : fn, node);
}
