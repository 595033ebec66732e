// LIKE / ILIKE pattern matching with PostgreSQL semantics for the evaluation of recorded reads'
// "where" clauses (history-format.md "where" semantics): '%' any sequence, '_' one character
// (code point), backslash escapes the next character (ESCAPE clauses are first rewritten like
// PostgreSQL's like_escape()), ILIKE folds ASCII letters only (lower() under the C locale).

import { EvalError } from './errors.js';

/** PostgreSQL's do_like_escape: rewrites `pattern` with escape character `esc` into a pattern
 *  using backslash as the escape character. */
export function likeEscape(pattern: string, esc: string): string {
  const p = Array.from(pattern);
  let r = '';
  if (esc.length === 0) {
    for (const c of p) r += c === '\\' ? '\\\\' : c;
    return r;
  }
  const e = Array.from(esc);
  if (e.length !== 1) throw new EvalError('invalid escape string (escape string must be empty or one character)');
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

const RE_SPECIAL = /[\\^$.*+?()[\]{}|/]/;

/** Compiles a backslash-escaped LIKE pattern into an anchored RegExp. */
export function likeRegex(pattern: string): RegExp {
  let re = '^';
  const p = Array.from(pattern);
  for (let i = 0; i < p.length; i++) {
    const c = p[i]!;
    if (c === '\\') {
      i++;
      if (i >= p.length) throw new EvalError('LIKE pattern must not end with escape character');
      const d = p[i]!;
      re += RE_SPECIAL.test(d) ? '\\' + d : d;
    } else if (c === '%') {
      while (p[i + 1] === '%') i++;
      re += '.*';
    } else if (c === '_') re += '.';
    else re += RE_SPECIAL.test(c) ? '\\' + c : c;
  }
  return new RegExp(re + '$', 'su');
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

/** Port of PostgreSQL's MatchText (like_match.c), on code points. Used for patterns that end
 *  with a lone escape character, for which PostgreSQL raises an error only if matching reaches it. */
function matchText(t: number[], ti: number, p: number[], pi: number): number {
  const tn = t.length;
  const pn = p.length;
  if (pn - pi === 1 && p[pi] === PERCENT) return LIKE_TRUE;
  while (ti < tn && pi < pn) {
    const pc = p[pi]!;
    if (pc === BACKSLASH) {
      pi++;
      if (pi >= pn) throw new EvalError('LIKE pattern must not end with escape character');
      if (p[pi] !== t[ti]) return LIKE_FALSE;
    } else if (pc === PERCENT) {
      pi++;
      while (pi < pn) {
        if (p[pi] === PERCENT) pi++;
        else if (p[pi] === UNDERSCORE) {
          if (ti >= tn) return LIKE_ABORT;
          ti++;
          pi++;
        } else break;
      }
      if (pi >= pn) return LIKE_TRUE;
      let firstpat: number;
      if (p[pi] === BACKSLASH) {
        if (pn - pi < 2) throw new EvalError('LIKE pattern must not end with escape character');
        firstpat = p[pi + 1]!;
      } else firstpat = p[pi]!;
      while (ti < tn) {
        if (t[ti] === firstpat) {
          const matched = matchText(t, ti, p, pi);
          if (matched !== LIKE_FALSE) return matched;
        }
        ti++;
      }
      return LIKE_ABORT;
    } else if (pc === UNDERSCORE) {
      ti++;
      pi++;
      continue;
    } else if (pc !== t[ti]) return LIKE_FALSE;
    ti++;
    pi++;
  }
  if (ti < tn) return LIKE_FALSE;
  while (pi < pn && p[pi] === PERCENT) pi++;
  return pi >= pn ? LIKE_TRUE : LIKE_ABORT;
}

/** A matcher for a backslash-escaped LIKE pattern: a RegExp when the pattern is well formed,
 *  else PostgreSQL's algorithm (which raises only when it reaches the dangling escape). */
export function likeMatcher(pattern: string): (s: string) => boolean {
  let re: RegExp;
  try {
    re = likeRegex(pattern);
  } catch (e) {
    if (!(e instanceof EvalError)) throw e;
    const p = codePoints(pattern);
    return (s) => matchText(codePoints(s), 0, p, 0) === LIKE_TRUE;
  }
  return (s) => re.test(s);
}

/** lower() under the C locale: ASCII letters only. */
export function asciiLower(s: string): string {
  return /[A-Z]/.test(s) ? s.replace(/[A-Z]/g, (c) => String.fromCharCode(c.charCodeAt(0) + 32)) : s;
}
