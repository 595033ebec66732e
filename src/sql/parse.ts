// Parsing a "where" text with libpg-query: loading the parser's WASM, checking that the text is one boolean
// expression within PREDICATE_LIMITS (nodes, depth, length), and a bounded cache of recent parse trees.

import type { ParseResult } from '@pgsql/types';
import { loadModule, parseSync } from 'libpg-query';
import { PredicateError, clip } from './errors.js';
import type { Node } from './expr.js';
import { bodyOf } from './node.js';
import { PREDICATE_LIMITS } from './limits.js';
import { wellFormed } from './params.js';

let loadPromise: Promise<void> | undefined;
let loaded = false;

/** Whether loadPredicateParser has finished (the synchronous API needs it). */
export function parserLoaded(): boolean {
  return loaded;
}

/** A caller's mistake, not the history's: the synchronous API was used before the parser was loaded. */
export class ParserNotLoadedError extends Error {
  override name = 'ParserNotLoadedError';
  constructor() {
    super(
      'the WHERE-clause parser is not loaded: await loadPredicateParser() before checkHistory() (the async ' +
        'check() of the isocheck package loads it itself)',
    );
  }
}

/** Must be called (awaited) once before compilePredicate; loads the parser WASM. Idempotent. */
export async function loadPredicateParser(): Promise<void> {
  if (!loadPromise) {
    loadPromise = loadModule().then(() => {
      loaded = true;
    });
  }
  return loadPromise;
}

const ALLOWED_SELECT_KEYS = new Set(['targetList', 'fromClause', 'whereClause', 'limitOption', 'op']);

export interface Parsed {
  clause: Node;
  /** parse-tree nodes */
  nodes: number;
}

// Parse trees of recent where texts (parsing dominates compile time; compilation never mutates them),
// at most AST_CACHE_MAX of them and AST_CACHE_CHARS characters of text in all.
const AST_CACHE = new Map<string, Parsed>();
const AST_CACHE_MAX = 4096;
const AST_CACHE_CHARS = 8_000_000;
let astCacheChars = 0;

/** Node count and nesting depth of a parse tree (node wrappers such as {"A_Expr": ...}), iteratively. */
export function measure(root: Node): { nodes: number; depth: number } {
  let nodes = 0;
  let depth = 0;
  const stack: [object, number][] = [[root, 0]];
  while (stack.length > 0) {
    const [v, d] = stack.pop()!;
    if (Array.isArray(v)) {
      for (const x of v) if (x !== null && typeof x === 'object') stack.push([x, d]);
      continue;
    }
    const keys = Object.keys(v);
    let dd = d;
    if (keys.length === 1 && /^[A-Z]/.test(keys[0]!)) {
      nodes++;
      dd = d + 1;
      if (dd > depth) depth = dd;
      if (nodes > PREDICATE_LIMITS.maxNodes || depth > PREDICATE_LIMITS.maxDepth) break;
    }
    for (const k of keys) {
      const x = (v as Record<string, unknown>)[k];
      if (x !== null && typeof x === 'object') stack.push([x, dd]);
    }
  }
  return { nodes, depth };
}

function tooDeep(): never {
  throw new PredicateError(`expression nested too deeply (limit ${PREDICATE_LIMITS.maxDepth} levels)`);
}

export function parseWhere(where: string): Parsed {
  const hit = AST_CACHE.get(where);
  if (hit !== undefined) return hit;
  const { maxLength, maxNodes, maxDepth } = PREDICATE_LIMITS;
  if (where.length > maxLength) throw new PredicateError(`too long: ${where.length} characters (limit ${maxLength})`);
  let parsed: ParseResult;
  try {
    // as node-postgres sends it (lone surrogates become U+FFFD; the parser's own conversion differs)
    parsed = parseSync(`SELECT 1 FROM t WHERE ${wellFormed(where)}`);
  } catch (e) {
    const msg = String((e as Error)?.message ?? e);
    // the parser's own stack (bison's "memory exhausted", or its JavaScript side running out of stack)
    if (e instanceof RangeError || /memory exhausted|stack depth limit/i.test(msg)) tooDeep();
    throw new PredicateError(`syntax error: ${clip(msg, 200)}`);
  }
  const stmts = parsed.stmts ?? [];
  const sel = stmts.length === 1 ? bodyOf(stmts[0]!.stmt, 'SelectStmt') : undefined;
  if (
    !sel?.whereClause ||
    Object.keys(sel).some((k) => !ALLOWED_SELECT_KEYS.has(k)) ||
    (sel.op && sel.op !== 'SETOP_NONE')
  ) {
    throw new PredicateError('not a single boolean expression');
  }
  const { nodes, depth } = measure(sel.whereClause);
  if (nodes > maxNodes)
    throw new PredicateError(`too large: more than ${maxNodes} expression nodes (limit ${maxNodes})`);
  if (depth > maxDepth) tooDeep();
  const out: Parsed = { clause: sel.whereClause, nodes };
  while (AST_CACHE.size > 0 && (AST_CACHE.size >= AST_CACHE_MAX || astCacheChars + where.length > AST_CACHE_CHARS)) {
    const oldest = AST_CACHE.keys().next().value!;
    AST_CACHE.delete(oldest);
    astCacheChars -= oldest.length;
  }
  if (where.length <= AST_CACHE_CHARS) {
    AST_CACHE.set(where, out);
    astCacheChars += where.length;
  }
  return out;
}
