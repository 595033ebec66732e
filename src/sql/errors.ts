// Error classes for the evaluation of recorded reads' "where" clauses (history-format.md
// "where" semantics), and the small helpers every evaluator module shares: one-line, bounded
// quoting of user text in messages, and the work meter that lets a caller's deadline interrupt
// long evaluations.

/** A "where" clause (or a value it is evaluated on) that cannot be evaluated faithfully:
 *  unsupported construct, unknown column, bad parameter, a value PostgreSQL would reject at
 *  planning time, or an input format this evaluator does not implement. */
export class PredicateError extends Error {
  override name = 'PredicateError';
}

/** A run-time error PostgreSQL would raise while evaluating the clause on a row (division by
 *  zero, integer out of range, invalid input syntax of a cast...). test() maps it to "not
 *  satisfied": a read whose evaluation raised could not have succeeded. */
export class SqlEvalError extends Error {
  override name = 'EvalError';
}

// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what clip escapes
const HAS_CONTROL = /[\u0000-\u001f\u007f\u2028\u2029]/;
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what clip escapes
const CONTROL = /[\u0000-\u001f\u007f\u2028\u2029]/g;

/** User text for a one-line message: at most `max` characters (then "…" and the full length),
 *  control characters escaped. */
export function clip(s: string, max = 100): string {
  const cut = s.length > max ? s.slice(0, max) : s;
  const esc = HAS_CONTROL.test(cut)
    ? cut.replace(CONTROL, (c) =>
        c === '\n'
          ? '\\n'
          : c === '\r'
            ? '\\r'
            : c === '\t'
              ? '\\t'
              : `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
      )
    : cut;
  return s.length > max ? `${esc}… (${s.length} characters)` : esc;
}

/** JSON text of any value JSON.parse can produce, however deeply nested (JSON.stringify runs out
 *  of stack at a few thousand levels; JSON.parse does not). Same text as JSON.stringify for such
 *  values; `undefined` for undefined/functions (as JSON.stringify at the top level). */
export function safeJson(v: unknown): string | undefined {
  try {
    return JSON.stringify(v);
  } catch (e) {
    if (!(e instanceof RangeError)) throw e;
  }
  // Iterative serializer: a stack of pending output pieces and values.
  const out: string[] = [];
  type Item = { v: unknown } | { text: string };
  const stack: Item[] = [{ v }];
  while (stack.length > 0) {
    const it = stack.pop()!;
    if ('text' in it) {
      out.push(it.text);
      continue;
    }
    const x = it.v;
    if (x === null || typeof x !== 'object') {
      out.push(typeof x === 'bigint' ? x.toString() : (JSON.stringify(x) ?? 'null'));
      continue;
    }
    if (Array.isArray(x)) {
      const items: Item[] = [{ text: '[' }];
      for (let i = 0; i < x.length; i++) {
        if (i > 0) items.push({ text: ',' });
        const y = x[i];
        items.push(y === undefined || typeof y === 'function' || typeof y === 'symbol' ? { text: 'null' } : { v: y });
      }
      items.push({ text: ']' });
      for (let i = items.length - 1; i >= 0; i--) stack.push(items[i]!);
      continue;
    }
    const items: Item[] = [{ text: '{' }];
    let first = true;
    for (const k of Object.keys(x)) {
      const y = (x as Record<string, unknown>)[k];
      if (y === undefined || typeof y === 'function' || typeof y === 'symbol') continue;
      items.push({ text: `${(first ? '' : ',') + JSON.stringify(k)}:` });
      items.push({ v: y });
      first = false;
    }
    items.push({ text: '}' });
    for (let i = items.length - 1; i >= 0; i--) stack.push(items[i]!);
  }
  return out.join('');
}

/** A value for a one-line message (JSON text, clipped). */
export function showValue(v: unknown, max = 100): string {
  let s: string | undefined;
  try {
    s = safeJson(v);
  } catch {
    s = undefined;
  }
  return clip(s ?? String(typeof v), max);
}

// ---------------------------------------------------------------------------------------------
// Work meter. Evaluation steps whose cost depends on the data (LIKE matching, arithmetic on
// numerics of thousands of digits, long strings) and each test() call charge units here, roughly
// one per elementary step; every WORK_QUANTUM units the current hook (the caller's deadline check,
// see PredicateOptions.checkDeadline in predicate.ts) is called, and may throw to abort.

const WORK_QUANTUM = 1 << 20;
let units = 0;
let hook: (() => void) | undefined;

export function charge(n: number): void {
  units += n;
  if (units >= WORK_QUANTUM) {
    units = 0;
    if (hook !== undefined) hook();
  }
}

/** Installs `h` as the current hook; returns the previous one (restore it in a finally). */
export function setWorkHook(h: (() => void) | undefined): (() => void) | undefined {
  const prev = hook;
  hook = h;
  return prev;
}
