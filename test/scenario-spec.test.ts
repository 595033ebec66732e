// The isolation-tester spec parser reads every spec of PostgreSQL's suite (the external suite, when
// ISOCHECK_PG_SPECS or its default finds it: test/helpers/external-specs.ts) and the project's own specs.
import { describe, expect, it } from 'vitest';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { allPermutations, parseSpec, permutationsOf } from '../src/scenario/spec.js';
import { externalSpecs, specPath } from './helpers/external-specs.js';

const suite = externalSpecs();
const own = join(import.meta.dirname, 'scenarios');
const ownFiles = readdirSync(own, { recursive: true, encoding: 'utf8' })
  .filter((f) => f.endsWith('.spec'))
  .map((f) => join(own, f));

describe('isolation-tester spec parser', () => {
  it('finds the external suite', (ctx) => {
    if (!suite.dir && !suite.missing) return ctx.skip(suite.skipReason);
    expect(suite.missing, suite.skipReason).toBeUndefined();
    expect(suite.absent, `missing from ${suite.dir}`).toEqual([]);
  });
  for (const file of [...suite.files.map((f) => specPath(suite, f)), ...ownFiles]) {
    const f = file.split('/').at(-1)!;
    it(`parses ${file.startsWith(own) ? file.slice(own.length + 1) : f}`, () => {
      const spec = parseSpec(readFileSync(file, 'utf8'), f);
      expect(spec.sessions.length).toBeGreaterThanOrEqual(2);
      for (const s of spec.sessions) expect(s.steps.length).toBeGreaterThan(0);
      const perms = permutationsOf(spec);
      const steps = spec.sessions.reduce((n, s) => n + s.steps.length, 0);
      if (spec.permutations.length === 0) for (const p of perms) expect(p.length).toBe(steps);
      expect(perms.length).toBeGreaterThan(0);
    });
  }
  it('parses two-ids as the isolation tester does', (ctx) => {
    if (!suite.dir) return ctx.skip(suite.skipReason);
    const spec = parseSpec(readFileSync(specPath(suite, 'two-ids.spec'), 'utf8'), 'two-ids.spec');
    expect(spec.setup[0]).toMatch(/create table D1/);
    expect(spec.sessions.map((s) => s.name)).toEqual(['s1', 's2', 's3']);
    expect(spec.sessions[1].setup).toEqual(['BEGIN ISOLATION LEVEL SERIALIZABLE;']);
    expect(spec.sessions[1].steps.map((s) => s.name)).toEqual(['rxwy2', 'c2']);
    // 6 steps, 2 per session: 6! / (2! 2! 2!) = 90 interleavings.
    expect(allPermutations(spec).length).toBe(90);
  });
  it('rejects what it cannot read, with the line', () => {
    expect(() => parseSpec('session s1\nstep a { select 1 }\npermutation b', 'x.spec')).toThrow(/unknown step "b"/);
    expect(() => parseSpec('session s1\nstep a { select 1 ', 'x.spec')).toThrow(/x.spec:2: unterminated/);
    expect(() => parseSpec('bogus', 'x.spec')).toThrow(/x.spec:1: unexpected "bogus"/);
  });
});
