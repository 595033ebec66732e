// LIKE / ILIKE pattern matching with PostgreSQL semantics for the evaluation of recorded reads'
// "where" clauses (history-format.md "where" semantics): '%' any sequence, '_' one character
// (code point), backslash escapes the next character (ESCAPE clauses are first rewritten like
// PostgreSQL's like_escape()), ILIKE folds ASCII letters only (lower() under the C locale).
//
// Matching is PostgreSQL's MatchText (like_match.c) made iterative: after a '%', a failed attempt
// only ever resumes at the most recent '%' (MatchText returns TRUE or ABORT from a '%' level,
// never FALSE, so older levels are never resumed), so the cost is O(text x pattern) in the worst
// case, without exponential backtracking and without recursion. Exploring in MatchText's order
// also raises "LIKE pattern must not end with escape character" exactly when PostgreSQL does: only
// when matching reaches the dangling escape. No user text is ever compiled to a RegExp.

import { SqlEvalError, charge } from './errors.js';

/** PostgreSQL's do_like_escape: rewrites `pattern` with escape character `esc` into a pattern
 *  using backslash as the escape character. */
export function likeEscape(pattern: string, esc: string): string {
  charge(pattern.length + esc.length);
  const p = Array.from(pattern);
  let r = '';
  if (esc.length === 0) {
    for (const c of p) r += c === '\\' ? '\\\\' : c;
    return r;
  }
  const e = Array.from(esc);
  if (e.length !== 1) throw new SqlEvalError('invalid escape string (escape string must be empty or one character)');
  const ec = e[0]!;
  if (ec === '\\') return pattern;
  let afterEscape = false;
  for (const c of p) {
    if (c === ec && !afterEscape) {
      r += '\\';
      afterEscape = true;
    } else if (c === '\\') {
      r += afterEscape ? '\\' : '\\\\';
      afterEscape = false;
    } else {
      r += c;
      afterEscape = false;
    }
  }
  return r;
}

const LIKE_TRUE = 1;
const LIKE_FALSE = 0;
const LIKE_ABORT = -1;
const BACKSLASH = 0x5c;
const PERCENT = 0x25;
const UNDERSCORE = 0x5f;

function codePoints(s: string): number[] {
  const out: number[] = [];
  for (const c of s) out.push(c.codePointAt(0)!);
  return out;
}

/** Code point at UTF-16 index i (a lone surrogate is its own code point). */
function cpAt(t: string, i: number): number {
  const c = t.charCodeAt(i);
  if (c >= 0xd800 && c <= 0xdbff && i + 1 < t.length) {
    const d = t.charCodeAt(i + 1);
    if (d >= 0xdc00 && d <= 0xdfff) return ((c - 0xd800) << 10) + (d - 0xdc00) + 0x10000;
  }
  return c;
}

function danglingEscape(): never {
  throw new SqlEvalError('LIKE pattern must not end with escape character');
}

/** Steps between two charges to the work meter inside one long match. */
const CHARGE_EVERY = 1 << 16;

/** PostgreSQL's MatchText on code points, iteratively (see the header): LIKE_TRUE, LIKE_FALSE or
 *  LIKE_ABORT; throws SqlEvalError where PostgreSQL raises for a dangling escape. */
function matchText(t: string, p: number[]): number {
  const tn = t.length;
  const pn = p.length;
  if (pn === 1 && p[0] === PERCENT) return LIKE_TRUE;
  let ti = 0;
  let pi = 0;
  // the innermost '%' level: where its attempts resume (pattern index of the first character
  // after the wildcards, that character, and the text index of the current attempt)
  let starPi = -1;
  let starTi = 0;
  let firstpat = 0;
  let steps = 0;
  /** The first text index from `from` on whose code point is `firstpat` (-1: none: MatchText's ABORT). */
  const seek = (from: number): number => {
    for (let i = from; i < tn; steps++) {
      const c = cpAt(t, i);
      if (c === firstpat) return i;
      i += c > 0xffff ? 2 : 1;
    }
    return -1;
  };
  for (;;) {
    let failed = false;
    while (ti < tn && pi < pn) {
      if (++steps >= CHARGE_EVERY) {
        charge(steps);
        steps = 0;
      }
      const pc = p[pi]!;
      if (pc === BACKSLASH) {
        pi++;
        if (pi >= pn) danglingEscape();
        const c = cpAt(t, ti);
        if (p[pi] !== c) {
          failed = true;
          break;
        }
        ti += c > 0xffff ? 2 : 1;
        pi++;
      } else if (pc === PERCENT) {
        pi++;
        while (pi < pn) {
          if (p[pi] === PERCENT) pi++;
          else if (p[pi] === UNDERSCORE) {
            if (ti >= tn) {
              charge(steps);
              return LIKE_ABORT;
            }
            ti += cpAt(t, ti) > 0xffff ? 2 : 1;
            pi++;
          } else break;
        }
        if (pi >= pn) {
          charge(steps);
          return LIKE_TRUE;
        }
        if (p[pi] === BACKSLASH) {
          if (pn - pi < 2) danglingEscape();
          firstpat = p[pi + 1]!;
        } else firstpat = p[pi]!;
        ti = seek(ti);
        if (ti < 0) {
          charge(steps);
          return LIKE_ABORT;
        }
        // MatchText recurses here on (ti, pi): this loop goes on from there instead
        starPi = pi;
        starTi = ti;
      } else if (pc === UNDERSCORE) {
        ti += cpAt(t, ti) > 0xffff ? 2 : 1;
        pi++;
      } else {
        const c = cpAt(t, ti);
        if (pc !== c) {
          failed = true;
          break;
        }
        ti += c > 0xffff ? 2 : 1;
        pi++;
      }
    }
    if (!failed) {
      if (ti < tn) failed = true;
      else {
        while (pi < pn && p[pi] === PERCENT) pi++;
        charge(steps);
        return pi >= pn ? LIKE_TRUE : LIKE_ABORT;
      }
    }
    // The current attempt returned FALSE: the innermost '%' level tries its next position.
    if (starPi < 0) {
      charge(steps);
      return LIKE_FALSE;
    }
    ti = seek(starTi + (cpAt(t, starTi) > 0xffff ? 2 : 1));
    if (ti < 0) {
      charge(steps);
      return LIKE_ABORT;
    }
    starTi = ti;
    pi = starPi;
  }
}

const SURROGATE = /[\ud800-\udfff]/;

/** A matcher for a backslash-escaped LIKE pattern (PostgreSQL's MatchText semantics; throws
 *  SqlEvalError when matching reaches a dangling escape). Patterns that are a literal with at most a
 *  leading and a trailing '%' use the equivalent native string tests. */
export function likeMatcher(pattern: string): (s: string) => boolean {
  charge(pattern.length);
  const p = codePoints(pattern);
  // Literal segments: a pattern without '_' or escapes whose '%' are only at the ends.
  if (!SURROGATE.test(pattern) && !pattern.includes('_') && !pattern.includes('\\')) {
    let a = 0;
    let b = pattern.length;
    while (a < b && pattern.charCodeAt(a) === PERCENT) a++;
    while (b > a && pattern.charCodeAt(b - 1) === PERCENT) b--;
    const lit = pattern.slice(a, b);
    if (!lit.includes('%')) {
      const lead = a > 0;
      const trail = b < pattern.length;
      if (lit.length === 0) {
        if (lead || trail) return () => true; // '%' matches any text
        return (s) => s.length === 0;
      }
      if (lead && trail)
        return (s) => {
          charge(s.length);
          return s.includes(lit);
        };
      if (lead) return (s) => s.endsWith(lit);
      if (trail) return (s) => s.startsWith(lit);
      return (s) => s === lit;
    }
  }
  return (s) => {
    charge(s.length);
    return matchText(s, p) === LIKE_TRUE;
  };
}

/** lower() under the C locale: ASCII letters only. */
export function asciiLower(s: string): string {
  return /[A-Z]/.test(s) ? s.replace(/[A-Z]/g, (c) => String.fromCharCode(c.charCodeAt(0) + 32)) : s;
}
