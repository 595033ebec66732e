// The code base's style that Biome (npm test runs `biome check`) does not enforce: no line over 120 characters in
// source files, comments and strings included (issue 18). Data (histories, fixtures, results) is exempt.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '..');
const SOURCE = /\.(ts|mts|cts|js|mjs|cjs)$/;
const SKIP = new Set(['node_modules', 'dist', '.histories', 'results', 'fixtures', 'golden']);

function sources(dir: string, out: string[] = []): string[] {
  for (const name of readdirSync(dir)) {
    if (SKIP.has(name) || name.startsWith('.')) continue;
    const path = join(dir, name);
    if (statSync(path).isDirectory()) sources(path, out);
    else if (SOURCE.test(name)) out.push(path);
  }
  return out;
}

describe('style', () => {
  it('no source line is longer than 120 characters', () => {
    const files = ['src', 'test', 'bench', 'workloads', 'examples', 'scripts', 'bin']
      .flatMap((d) => sources(join(root, d)))
      .concat(join(root, 'histories', 'known', 'make.mjs'));
    expect(files.length).toBeGreaterThan(200);
    const long: string[] = [];
    for (const file of files) {
      readFileSync(file, 'utf8')
        .split('\n')
        .forEach((line, i) => {
          // characters, not UTF-16 units or bytes: ✓ and × count one
          if ([...line].length > 120) long.push(`${relative(root, file)}:${i + 1} (${[...line].length})`);
        });
    }
    expect(long).toEqual([]);
  });
});
