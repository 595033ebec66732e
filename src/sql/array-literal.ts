// Array values on the right of ANY/ALL: PostgreSQL's array literal syntax ('{1,2,"a b",NULL}') and JSON array
// parameters, both flattened to the texts of their elements (at most PostgreSQL's MAXDIM dimensions).

import { SqlEvalError, PredicateError, charge, clip } from './errors.js';
import { paramText } from './params.js';

/** PostgreSQL's MAXDIM */
const MAX_ARRAY_DIMS = 6;

function tooManyDims(d: number): never {
  throw new SqlEvalError(`number of array dimensions (${d}) exceeds the maximum allowed (${MAX_ARRAY_DIMS})`);
}

/** Parses a PostgreSQL array literal ('{1,2,"a b",NULL}'), flattening nested dimensions. */
export function parseArrayLiteral(s: string): (string | null)[] {
  charge(s.length);
  const out: (string | null)[] = [];
  let i = 0;
  const ws = () => {
    while (i < s.length && /\s/.test(s[i]!)) i++;
  };
  const bad = (): never => {
    throw new SqlEvalError(`malformed array literal: "${clip(s)}"`);
  };
  const level = (depth: number) => {
    if (s[i] !== '{') bad();
    if (depth > MAX_ARRAY_DIMS) tooManyDims(depth);
    i++;
    ws();
    if (s[i] === '}') {
      i++;
      return;
    }
    for (;;) {
      ws();
      if (s[i] === '{') level(depth + 1);
      else if (s[i] === '"') {
        i++;
        let v = '';
        while (i < s.length && s[i] !== '"') {
          if (s[i] === '\\') i++;
          if (i >= s.length) bad();
          v += s[i++];
        }
        if (s[i] !== '"') bad();
        i++;
        out.push(v);
      } else {
        let v = '';
        let escaped = false;
        let lastNonWs = 0;
        while (i < s.length && s[i] !== ',' && s[i] !== '}') {
          if (s[i] === '{' || s[i] === '"') bad();
          if (s[i] === '\\') {
            i++;
            if (i >= s.length) bad();
            escaped = true;
            v += s[i++];
            lastNonWs = v.length;
            continue;
          }
          v += s[i];
          if (!/\s/.test(s[i]!)) lastNonWs = v.length;
          i++;
        }
        v = v.slice(0, lastNonWs);
        if (v === '' && !escaped) bad();
        out.push(!escaped && v.toUpperCase() === 'NULL' ? null : v);
      }
      ws();
      if (s[i] === ',') {
        i++;
        continue;
      }
      if (s[i] === '}') {
        i++;
        return;
      }
      bad();
    }
  };
  ws();
  if (s[i] === '[') throw new PredicateError(`array literals with explicit bounds are not supported: "${clip(s)}"`);
  level(1);
  ws();
  if (i !== s.length) bad();
  return out;
}

export function flattenJsonArray(a: unknown[], out: (string | null)[] = [], depth = 1): (string | null)[] {
  if (depth > MAX_ARRAY_DIMS) tooManyDims(depth);
  charge(a.length);
  for (const x of a) {
    if (Array.isArray(x)) flattenJsonArray(x, out, depth + 1);
    else out.push(paramText(x));
  }
  return out;
}
