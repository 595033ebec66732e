/**
 * Seeded mutations of a history file for the fuzzer (docs/reliability.md): structural ones on the parsed lines
 * (drop, duplicate or swap lines; delete, replace or retype a field anywhere; point a read at another wid;
 * rename a column, possibly to a name of Object.prototype) and raw ones on the text (cut, splice garbage).
 * Replacement values are the hostile ones users met: huge and non-finite numbers, 2^53+1, digits by the
 * thousand, deep nesting, blank strings, Object.prototype's names, wrong JSON types.
 */
import type seedrandom from 'seedrandom';

type Rng = seedrandom.PRNG;
type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

const PROTO_NAMES = Object.getOwnPropertyNames(Object.prototype);

function pick<T>(rng: Rng, xs: readonly T[]): T {
  return xs[Math.floor(rng() * xs.length)];
}

/** A hostile JSON value, as text (some, like 1e400, exist only as text). */
function hostileText(rng: Rng, near?: Json): string {
  const r = rng();
  if (r < 0.08) return pick(rng, ['1e400', '-1e400', '1e-400', '9007199254740993', '-0', '1.5', '2147483648', '32768']);
  if (r < 0.14) return JSON.stringify('9'.repeat(1 + Math.floor(rng() * 3000)));
  if (r < 0.18)
    return JSON.stringify(
      pick(rng, ['1e999999999', '-1e-999999999', 'NaN', 'Infinity', '-Infinity', '1e131072', '.', '1.', '+', '0x10']),
    );
  if (r < 0.24) return JSON.stringify(pick(rng, ['', ' ', '   ', '\t', '\u0000', '\ud800', 'init', 'NULL', 'true']));
  if (r < 0.32) return JSON.stringify(pick(rng, PROTO_NAMES));
  if (r < 0.36) {
    const depth = rng() < 0.2 ? 100_000 : 1 + Math.floor(rng() * 3000);
    return '['.repeat(depth) + ']'.repeat(depth);
  }
  if (r < 0.42) return pick(rng, ['null', 'true', 'false', '{}', '[]', '{"a":1}', '[1,"2",null]']);
  if (r < 0.5) return String(Math.floor((rng() - 0.5) * 1e6));
  if (r < 0.56) return JSON.stringify(`${Math.floor(rng() * 10)}`);
  if (near !== undefined && typeof near === 'number')
    return String(pick(rng, [near + 1, near - 1, -near, near * 1e12, 0]));
  if (near !== undefined && typeof near === 'string')
    return JSON.stringify(pick(rng, [near + near, near.slice(1), near.toUpperCase(), `${near}x`]));
  return pick(rng, ['0', '1', '-1', '"x"', '"s1.1.1"', 'null']);
}

/** Every (container, key) pair inside a JSON value, for picking a place to mutate. */
function places(
  v: Json,
  acc: [Json[] | { [k: string]: Json }, string | number][] = [],
): [Json[] | { [k: string]: Json }, string | number][] {
  if (Array.isArray(v)) {
    for (const [i, x] of v.entries()) {
      acc.push([v, i]);
      places(x, acc);
    }
  } else if (v !== null && typeof v === 'object') {
    for (const k of Object.keys(v)) {
      acc.push([v, k]);
      places(v[k], acc);
    }
  }
  return acc;
}

const widsIn = (lines: Json[]): string[] => {
  const out = new Set<string>(['init']);
  for (const p of lines.flatMap((l) => places(l))) {
    const [c, k] = p;
    if ((k === 'wid' || k === 'read') && !Array.isArray(c)) {
      const w = (c as { [k: string]: Json })[k];
      if (typeof w === 'string') out.add(w);
    }
  }
  return [...out];
};

export interface Mutant {
  text: string;
  /** What was done, for a failure report. */
  what: string;
}

/** One mutant of `text` (a history file), chosen by `rng`. */
export function mutate(text: string, rng: Rng): Mutant {
  try {
    return mutateOnce(text, rng, rng() < 0.12);
  } catch (e) {
    // a line nested too deep for JSON.stringify (an earlier hostile value): edit the text instead
    if (e instanceof RangeError) return mutateOnce(text, rng, true);
    throw e;
  }
}

function mutateOnce(text: string, rng: Rng, rawEdit: boolean): Mutant {
  const raw = text.split('\n').filter((l, i, a) => l !== '' || i < a.length - 1);
  if (rawEdit) {
    // raw edits of the text
    const at = Math.floor(rng() * text.length);
    const kind = pick(rng, ['cut', 'garbage', 'drop-bytes', 'dup-bytes', 'newlines'] as const);
    if (kind === 'cut') return { text: text.slice(0, at), what: `cut at byte ${at}` };
    if (kind === 'garbage') {
      const junk = pick(rng, ['\u0000', '\uffff', '}', '{', '"', ',', '\\', 'x'.repeat(1000), '\n\n', '\r\n']);
      return {
        text: text.slice(0, at) + junk + text.slice(at),
        what: `garbage ${JSON.stringify(junk.slice(0, 10))} at ${at}`,
      };
    }
    if (kind === 'drop-bytes')
      return { text: text.slice(0, at) + text.slice(at + 1 + Math.floor(rng() * 40)), what: `bytes dropped at ${at}` };
    if (kind === 'newlines')
      return {
        text: text.slice(0, at) + '\n'.repeat(1 + Math.floor(rng() * 5000)) + text.slice(at),
        what: `newlines at ${at}`,
      };
    const len = 1 + Math.floor(rng() * 200);
    return { text: text.slice(0, at) + text.slice(at, at + len) + text.slice(at), what: `bytes duplicated at ${at}` };
  }
  let lines: Json[];
  try {
    lines = raw.map((l) => JSON.parse(l) as Json);
  } catch {
    return { text: `${text}\n`, what: 'unparsable input, newline added' };
  }
  const li = Math.floor(rng() * lines.length);
  let what: string;
  const op = rng();
  if (op < 0.08) {
    lines.splice(li, 1);
    what = `line ${li + 1} dropped`;
  } else if (op < 0.14) {
    lines.splice(li, 0, structuredClone(lines[li]));
    what = `line ${li + 1} duplicated`;
  } else if (op < 0.2) {
    const lj = Math.floor(rng() * lines.length);
    [lines[li], lines[lj]] = [lines[lj], lines[li]];
    what = `lines ${li + 1} and ${lj + 1} swapped`;
  } else if (op < 0.34) {
    // a read pointed at another wid of the file, or a fresh one
    const ps = places(lines[li]).filter(([c, k]) => (k === 'wid' || k === 'read') && !Array.isArray(c));
    if (ps.length === 0) return mutateOnce(text, rng, true);
    const [c, k] = pick(rng, ps);
    const w = rng() < 0.85 ? pick(rng, widsIn(lines)) : `nobody-${Math.floor(rng() * 100)}`;
    (c as { [k: string]: Json })[k as string] = w;
    what = `line ${li + 1}: ${k} -> ${w}`;
  } else if (op < 0.44) {
    // a column renamed (in a row, a table's columns or its key)
    const ps = places(lines[li]).filter(
      ([c, k]) =>
        typeof k === 'string' &&
        !Array.isArray(c) &&
        !['kind', 'op', 'rows', 'events', 'wid', 'read', 'row', 'table', 'id'].includes(k),
    );
    if (ps.length === 0) return mutateOnce(text, rng, true);
    const [c, k] = pick(rng, ps) as [{ [k: string]: Json }, string];
    const name = rng() < 0.6 ? pick(rng, PROTO_NAMES) : `${k}_`;
    const v = c[k];
    delete c[k];
    Object.defineProperty(c, name, { value: v, enumerable: true, writable: true, configurable: true });
    what = `line ${li + 1}: field ${k} renamed ${name}`;
  } else if (op < 0.56) {
    const ps = places(lines[li]);
    if (ps.length === 0) return mutateOnce(text, rng, true);
    const [c, k] = pick(rng, ps);
    if (Array.isArray(c)) c.splice(k as number, 1);
    else delete c[k as string];
    what = `line ${li + 1}: ${String(k)} deleted`;
  } else {
    // a value replaced by a hostile one (spliced as text: 1e400 and deep nesting do not survive JSON)
    const ps = places(lines[li]);
    if (ps.length === 0) return mutateOnce(text, rng, true);
    const [c, k] = pick(rng, ps);
    const marker = `__isocheck_fuzz_${Math.floor(rng() * 1e9)}__`;
    const old = (c as Record<string | number, Json>)[k];
    const replacement = hostileText(rng, old);
    (c as Record<string | number, Json>)[k] = marker;
    const texts = lines.map((l) => JSON.stringify(l));
    texts[li] = texts[li].replace(JSON.stringify(marker), replacement);
    return { text: `${texts.join('\n')}\n`, what: `line ${li + 1}: ${String(k)} = ${replacement.slice(0, 40)}` };
  }
  return { text: `${lines.map((l) => JSON.stringify(l)).join('\n')}\n`, what };
}
