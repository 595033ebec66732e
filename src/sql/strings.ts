// String operators: || (concatenation, bounded by PREDICATE_LIMITS.maxStringLength), [NOT] LIKE / ILIKE with an
// optional ESCAPE (the matcher is likepattern.ts), and COLLATE (only "C" is modelled).

import type { CollateClause } from '@pgsql/types';
import { PredicateError } from './errors.js';
import { castEx, coerceTo, toText } from './coerce.js';
import {
  type Ctx,
  type Ev,
  type EvOf,
  type Ex,
  type Node,
  derive,
  fail,
  isNullConst,
  konstEx,
  lastName,
  nodeKind,
  typeName,
} from './expr.js';
import { asciiLower, likeEscape, likeMatcher } from './likepattern.js';
import { PREDICATE_LIMITS } from './limits.js';
import { opError } from './resolve.js';
import { CATEGORY, spec, type BaseType } from './values.js';

export function compileConcat(ctx: Ctx, node: Node, L: Ex, R: Ex): Ex {
  const isStr = (e: Ex) => e.t === 'unknown' || CATEGORY[e.t] === 'S';
  if (!isStr(L) && !isStr(R)) opError(node, '||', L.t, R.t);
  const asText = (e: Ex): Ex => (isStr(e) ? toText(ctx, e, '||') : castEx(ctx, e, spec('text'), e.node));
  const l = asText(L);
  const r = asText(R);
  if (isNullConst(l) || isNullConst(r)) return konstEx('text', null, node);
  const lf = l.ev as EvOf<string>;
  const rf = r.ev as EvOf<string>;
  const max = PREDICATE_LIMITS.maxStringLength;
  return derive(
    'text',
    (row) => {
      const a = lf(row);
      const b = rf(row);
      if (a === null || b === null) return null;
      if (a.length + b.length > max)
        throw new PredicateError(`a string computed by || is longer than ${max} characters (limit ${max})`);
      return a + b;
    },
    [l, r],
    node,
  );
}

export function compileLike(ctx: Ctx, node: Node, op: string, ci: boolean, lexpr: Node, rexpr: Node): Ex {
  const negate = op.startsWith('!');
  let L = ctx.compile(lexpr);
  if (L.t === 'unknown' || L.t === 'varchar') L = coerceTo(ctx, L, 'text');
  if (L.t !== 'text' && L.t !== 'bpchar') fail(node, `operator does not exist: ${typeName(L.t)} ${op} text`);
  let P: Ex;
  const [rk, rb] = nodeKind(rexpr);
  const args = rk === 'FuncCall' && lastName(rb.funcname) === 'like_escape' ? (rb.args ?? []) : [];
  if (args.length === 2) {
    const pat = toText(ctx, ctx.compile(args[0]), 'LIKE pattern');
    const esc = toText(ctx, ctx.compile(args[1]), 'ESCAPE');
    if (isNullConst(pat) || isNullConst(esc)) P = konstEx('text', null, rexpr);
    else {
      const pf = pat.ev as EvOf<string>;
      const ef = esc.ev as EvOf<string>;
      P = derive(
        'text',
        (row) => {
          const p = pf(row);
          const e = ef(row);
          return p === null || e === null ? null : likeEscape(p, e);
        },
        [pat, esc],
        rexpr,
      );
    }
  } else P = toText(ctx, ctx.compile(rexpr), 'LIKE pattern');
  if (isNullConst(L) || isNullConst(P)) return konstEx('bool', null, node);
  const lf = L.ev as EvOf<string>;
  const norm = ci ? asciiLower : (s: string) => s;
  let ev: Ev;
  if (P.konst) {
    const m = likeMatcher(norm(P.cval as string));
    ev = ci
      ? (row) => {
          const s = lf(row);
          return s === null ? null : m(asciiLower(s)) !== negate;
        }
      : (row) => {
          const s = lf(row);
          return s === null ? null : m(s) !== negate;
        };
  } else {
    const pf = P.ev as EvOf<string>;
    let lastPat: string | undefined;
    let lastM: ((s: string) => boolean) | undefined;
    ev = (row) => {
      const s = lf(row);
      const p = pf(row);
      if (s === null || p === null) return null;
      if (p !== lastPat) {
        lastM = likeMatcher(norm(p));
        lastPat = p;
      }
      return lastM!(norm(s)) !== negate;
    };
  }
  return derive('bool', ev, [L, P], node);
}

/** `expr COLLATE name`: only the "C" collation (and its synonyms) is modelled. */
export function compileCollate(ctx: Ctx, node: Node, b: CollateClause): Ex {
  const coll = lastName(b.collname ?? []);
  if (!['C', 'POSIX', 'ucs_basic', 'pg_c_utf8'].includes(coll))
    fail(node, `unsupported collation "${coll}" (only "C" is modelled)`);
  let e = ctx.compile(b.arg);
  if (e.t === 'unknown') e = coerceTo(ctx, e, 'text');
  if (CATEGORY[e.t as BaseType] !== 'S') fail(node, `collations are not supported by type ${typeName(e.t)}`);
  return e;
}
