/**
 * Parser for PostgreSQL's isolation-tester spec files (src/test/isolation/specs/*.spec in PostgreSQL):
 *
 *   setup { SQL }            (any number)        teardown { SQL }
 *   session NAME  setup { SQL }?  step NAME { SQL }+  teardown { SQL }?
 *   permutation STEP ...     (any number; none means every interleaving of the sessions' steps)
 *
 * Names may be quoted ("s1"); `#` starts a comment outside SQL blocks. Permutation entries may carry the
 * isolation tester's markers (`step(*)`, `step(other)`, `step(*, other)`); we keep the step and ignore the
 * markers, since our runner detects blocking by itself.
 */
import { InputError } from '../history/input-errors.js';

export interface Step {
  name: string;
  session: string;
  sql: string;
}

export interface SessionSpec {
  name: string;
  setup: string[];
  steps: Step[];
  teardown: string[];
}

export interface ScenarioSpec {
  file: string;
  setup: string[];
  teardown: string[];
  sessions: SessionSpec[];
  /** Explicit permutations (step names); empty means all interleavings. */
  permutations: string[][];
}

type Token =
  | { kind: 'word'; text: string; line: number }
  | { kind: 'block'; text: string; line: number }
  | { kind: 'paren'; text: string; line: number };

function tokenize(text: string, file: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  let line = 1;
  const at = () => `${file}:${line}`;
  while (i < text.length) {
    const c = text[i];
    if (c === '\n') {
      line++;
      i++;
    } else if (/\s/.test(c)) {
      i++;
    } else if (c === '#') {
      while (i < text.length && text[i] !== '\n') i++;
    } else if (c === '{') {
      // A SQL block: up to the matching brace, skipping braces inside quotes and comments.
      const start = line;
      let depth = 1;
      let j = i + 1;
      let quote: string | undefined;
      while (j < text.length && depth > 0) {
        const d = text[j];
        if (d === '\n') line++;
        if (quote) {
          if (d === quote) quote = undefined;
        } else if (d === "'" || d === '"') quote = d;
        else if (d === '-' && text[j + 1] === '-') {
          while (j < text.length && text[j] !== '\n') j++;
          continue;
        } else if (d === '{') depth++;
        else if (d === '}') depth--;
        j++;
      }
      if (depth > 0) throw new InputError(`${file}:${start}: unterminated { block`);
      tokens.push({ kind: 'block', text: text.slice(i + 1, j - 1).trim(), line: start });
      i = j;
    } else if (c === '(') {
      const j = text.indexOf(')', i);
      if (j < 0) throw new InputError(`${at()}: unterminated (`);
      tokens.push({ kind: 'paren', text: text.slice(i + 1, j), line });
      i = j + 1;
    } else if (c === '"') {
      const j = text.indexOf('"', i + 1);
      if (j < 0) throw new InputError(`${at()}: unterminated quoted name`);
      tokens.push({ kind: 'word', text: text.slice(i + 1, j), line });
      i = j + 1;
    } else {
      let j = i;
      while (j < text.length && !/[\s{}()#"]/.test(text[j])) j++;
      if (j === i) throw new InputError(`${at()}: unexpected character ${JSON.stringify(c)}`);
      tokens.push({ kind: 'word', text: text.slice(i, j), line });
      i = j;
    }
  }
  return tokens;
}

export function parseSpec(text: string, file: string): ScenarioSpec {
  const tokens = tokenize(text, file);
  const spec: ScenarioSpec = { file, setup: [], teardown: [], sessions: [], permutations: [] };
  const stepNames = new Map<string, Step>();
  let i = 0;
  const expectBlock = (what: string): string => {
    const t = tokens[i++];
    if (t?.kind !== 'block') throw new InputError(`${file}:${t?.line ?? '?'}: expected { SQL } after ${what}`);
    return t.text;
  };
  const expectName = (what: string): string => {
    const t = tokens[i++];
    if (t?.kind !== 'word') throw new InputError(`${file}:${t?.line ?? '?'}: expected a name after ${what}`);
    return t.text;
  };
  const keywords = new Set(['setup', 'teardown', 'session', 'step', 'permutation']);
  let session: SessionSpec | undefined;
  while (i < tokens.length) {
    const t = tokens[i++];
    if (t.kind !== 'word')
      throw new InputError(`${file}:${t.line}: unexpected ${t.kind === 'block' ? '{ block }' : '( )'}`);
    switch (t.text) {
      case 'setup':
        if (session && session.steps.length === 0) session.setup.push(expectBlock('setup'));
        else if (session) throw new InputError(`${file}:${t.line}: a session's setup comes before its steps`);
        else spec.setup.push(expectBlock('setup'));
        break;
      case 'teardown':
        if (session) session.teardown.push(expectBlock('teardown'));
        else spec.teardown.push(expectBlock('teardown'));
        break;
      case 'session': {
        session = { name: expectName('session'), setup: [], steps: [], teardown: [] };
        spec.sessions.push(session);
        break;
      }
      case 'step': {
        if (!session) throw new InputError(`${file}:${t.line}: step outside a session`);
        const name = expectName('step');
        if (stepNames.has(name)) throw new InputError(`${file}:${t.line}: step "${name}" is defined twice`);
        const step = { name, session: session.name, sql: expectBlock(`step ${name}`) };
        session.steps.push(step);
        stepNames.set(name, step);
        break;
      }
      case 'permutation': {
        session = undefined;
        const perm: string[] = [];
        while (
          i < tokens.length &&
          tokens[i].kind !== 'block' &&
          !(tokens[i].kind === 'word' && keywords.has(tokens[i].text))
        ) {
          const tok = tokens[i++];
          if (tok.kind === 'paren') continue; // blocker markers
          perm.push(tok.text);
        }
        if (perm.length === 0) throw new InputError(`${file}:${t.line}: empty permutation`);
        spec.permutations.push(perm);
        break;
      }
      default:
        throw new InputError(
          `${file}:${t.line}: unexpected "${t.text}" (expected setup, teardown, session, step or permutation)`,
        );
    }
  }
  for (const perm of spec.permutations) {
    for (const name of perm)
      if (!stepNames.has(name)) throw new InputError(`${file}: permutation names unknown step "${name}"`);
  }
  if (spec.sessions.length === 0) throw new InputError(`${file}: no sessions`);
  return spec;
}

/** Every interleaving of the sessions' step sequences (each session's steps stay in order). */
export function allPermutations(spec: ScenarioSpec, limit = 100_000): string[][] {
  const result: string[][] = [];
  const seqs = spec.sessions.map((s) => s.steps.map((st) => st.name));
  const pos = seqs.map(() => 0);
  const total = seqs.reduce((n, s) => n + s.length, 0);
  const current: string[] = [];
  const rec = (): void => {
    if (result.length >= limit) return;
    if (current.length === total) {
      result.push(current.slice());
      return;
    }
    for (let s = 0; s < seqs.length; s++) {
      if (pos[s] < seqs[s].length) {
        current.push(seqs[s][pos[s]++]);
        rec();
        pos[s]--;
        current.pop();
      }
    }
  };
  rec();
  return result;
}

export function permutationsOf(spec: ScenarioSpec): string[][] {
  return spec.permutations.length > 0 ? spec.permutations : allPermutations(spec);
}
