/**
 * The brute-force oracle (src/oracle/) is only worth cross-checking against if it shares no logic with the
 * checker it checks (docs/semantics.md §4.8): it may import the history model and format (src/history/), the
 * evaluation of a read's WHERE that the format defines (src/sql/) and the levels (src/checker/levels.ts), nothing
 * else of src/. Read from the import statements of its files, and of what it imports inside src/, transitively
 * (type-only imports carry no code and are allowed).
 */
import { readFileSync, readdirSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const allowed = (file: string) =>
  file.startsWith('src/history/') ||
  file.startsWith('src/sql/') ||
  file === 'src/checker/levels.ts' ||
  file.startsWith('src/oracle/');

/** The files of src/ that `file` imports code from (not `import type`, not node: or packages). */
function codeImports(file: string): string[] {
  const text = readFileSync(join(root, file), 'utf8');
  const out: string[] = [];
  for (const m of text.matchAll(/^\s*(import|export)\s+(type\s+)?(?:[^'";]*?\s+from\s+)?'(\.[^']+)'/gm)) {
    if (m[2]) continue;
    out.push(relative(root, resolve(dirname(join(root, file)), m[3])).replace(/\.js$/, '.ts'));
  }
  for (const m of text.matchAll(/import\(\s*'(\.[^']+)'\s*\)/g))
    out.push(relative(root, resolve(dirname(join(root, file)), m[1])).replace(/\.js$/, '.ts'));
  return out;
}

describe('the oracle is independent of the checker', () => {
  it('imports nothing from src/ but the history model and format, the WHERE evaluator and the levels', () => {
    const seen = new Set<string>();
    const todo = readdirSync(join(root, 'src/oracle'))
      .filter((f) => f.endsWith('.ts'))
      .map((f) => `src/oracle/${f}`);
    expect(todo.length).toBeGreaterThan(0);
    const bad: string[] = [];
    while (todo.length) {
      const file = todo.pop()!;
      if (seen.has(file)) continue;
      seen.add(file);
      for (const dep of codeImports(file)) {
        if (!allowed(dep)) bad.push(`${file} -> ${dep}`);
        else todo.push(dep);
      }
    }
    expect(bad).toEqual([]);
    expect(seen.has('src/checker/levels.ts')).toBe(true);
  });

  it('reads imports as they are written (the check above would see a checker import)', () => {
    expect(codeImports('src/checker/check.ts')).toContain('src/checker/model/model.ts');
    expect(codeImports('src/history/reader.ts').length).toBeGreaterThan(0);
  });
});
