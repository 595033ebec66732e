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

/** lower() under the C locale: ASCII letters only. */
export function asciiLower(s: string): string {
  return /[A-Z]/.test(s) ? s.replace(/[A-Z]/g, (c) => String.fromCharCode(c.charCodeAt(0) + 32)) : s;
}
