// When `isocheck check` starts itself again with larger semi-spaces (src/cli/respawn.ts): only for `check`, only
// for named histories of RESPAWN_MIN_BYTES or more (gzip counted GZIP_RATIO times), never when the flag is already
// given, a flag debugs or profiles the process, or ISOCHECK_RESPAWN=0; always with ISOCHECK_RESPAWN=1. The child
// itself (flags, signals, output) is tested in cli.test.ts.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  CHECK_VALUE_OPTIONS,
  type FileSize,
  historyBytes,
  RESPAWN_MIN_BYTES,
  type RespawnInput,
  shouldRespawn,
} from '../src/cli/respawn.js';
import { semiSpaceMB } from '../src/checker/budget.js';

const GZ = { bytes: Math.ceil(RESPAWN_MIN_BYTES / 8), gzip: true };
const sizes: Record<string, FileSize> = {
  'big.ndjson': { bytes: RESPAWN_MIN_BYTES, gzip: false },
  'half.ndjson': { bytes: RESPAWN_MIN_BYTES / 2, gzip: false },
  'small.ndjson': { bytes: 1000, gzip: false },
  'big.ndjson.gz': GZ,
  'big-gzip-named-plain.ndjson': GZ, // gzip is known by its bytes, not its name
  'out.html': { bytes: RESPAWN_MIN_BYTES, gzip: false },
};
const input = (args: string[], over: Partial<RespawnInput> = {}): RespawnInput => ({
  args,
  execArgv: [],
  env: {},
  sizeOf: (p) => sizes[p],
  ...over,
});

describe('shouldRespawn', () => {
  it('respawns a check of a large history, and of files that add up to one', () => {
    expect(shouldRespawn(input(['check', 'big.ndjson']))).toBe(true);
    expect(shouldRespawn(input(['check', '--json', 'half.ndjson', 'half.ndjson']))).toBe(true);
    expect(shouldRespawn(input(['check', 'big.ndjson.gz']))).toBe(true);
    expect(shouldRespawn(input(['check', 'big-gzip-named-plain.ndjson']))).toBe(true);
  });
  it('leaves small histories, standard input, missing files and other commands in this process', () => {
    expect(shouldRespawn(input(['check', 'half.ndjson']))).toBe(false);
    expect(shouldRespawn(input(['check', '-', 'small.ndjson', 'missing.ndjson']))).toBe(false);
    expect(shouldRespawn(input(['run', 'big.ndjson']))).toBe(false);
    expect(shouldRespawn(input([]))).toBe(false);
  });
  it("sizes only the files: not the command, options, or an option's value (a report that exists)", () => {
    const seen: string[] = [];
    const bytes = historyBytes(
      ['check', '--iso', 'SER', '--report', 'out.html', '--timeout', '60', '--max-memory=4GB', '-', 'small.ndjson'],
      (p) => {
        seen.push(p);
        return sizes[p];
      },
    );
    expect(seen).toEqual(['small.ndjson']);
    expect(bytes).toBe(1000);
  });
  it('never respawns when the semi-space is set already, a flag debugs or profiles, or ISOCHECK_RESPAWN=0', () => {
    const never = (over: Partial<RespawnInput>) =>
      expect(shouldRespawn(input(['check', 'big.ndjson'], over))).toBe(false);
    never({ execArgv: ['--max-semi-space-size=32'] });
    never({ execArgv: ['--max_semi_space_size', '8'] });
    never({ env: { NODE_OPTIONS: '--max-old-space-size=8192 --max-semi-space-size=16' } });
    never({ execArgv: ['--inspect=9229'] });
    never({ execArgv: ['--cpu-prof'] });
    never({ env: { NODE_OPTIONS: '--heap-prof' } });
    never({ env: { ISOCHECK_RESPAWN: '0' } });
    // a heap limit alone is passed on to the child, not a reason to stay
    expect(shouldRespawn(input(['check', 'big.ndjson'], { execArgv: ['--max-old-space-size=4096'] }))).toBe(true);
  });
  it('always respawns a check with ISOCHECK_RESPAWN=1', () => {
    expect(shouldRespawn(input(['check', 'small.ndjson'], { env: { ISOCHECK_RESPAWN: '1' } }))).toBe(true);
    expect(shouldRespawn(input(['run'], { env: { ISOCHECK_RESPAWN: '1' } }))).toBe(false);
  });
  it("knows every option of check that takes a value (the <...> options of check's definition in main.ts)", () => {
    const main = readFileSync(join(import.meta.dirname, '..', 'src', 'cli', 'main.ts'), 'utf8');
    const check = main.slice(
      main.indexOf(".command('check')"),
      main.indexOf('.action(', main.indexOf(".command('check')")),
    );
    const withValue = [...check.matchAll(/'(--[a-z-]+) <[a-z]+>'/g)].map((m) => m[1]).sort();
    expect(withValue.length).toBeGreaterThan(0);
    expect(withValue).toEqual([...CHECK_VALUE_OPTIONS].sort());
  });
});

describe('semiSpaceMB (checker/budget.ts: one reading of the flag for the respawn and the memory budget)', () => {
  it('reads the semi-space from the flags and NODE_OPTIONS, in each spelling Node takes, as Node orders them', () => {
    expect(semiSpaceMB([], undefined)).toBeUndefined();
    expect(semiSpaceMB(['--max-old-space-size=4096'], '--trace-gc')).toBeUndefined();
    expect(semiSpaceMB(['--max-semi-space-size=64'], undefined)).toBe(64);
    expect(semiSpaceMB(['--max_semi_space_size', '8'], undefined)).toBe(8);
    expect(semiSpaceMB([], '--max-old-space-size=8192 --max-semi-space-size=16')).toBe(16);
    // Node reads NODE_OPTIONS before the command line: the command line's flag wins
    expect(semiSpaceMB(['--max-semi-space-size=32'], '--max-semi-space-size=16')).toBe(32);
    expect(semiSpaceMB([], '--max-semi-space-size=16 --max-semi-space-size=8')).toBe(8);
    expect(semiSpaceMB(['--max-semi-space-size=lots'], undefined)).toBeNaN();
  });
});
