// When `isocheck check` starts itself again with larger semi-spaces (src/cli/respawn.ts): only for `check`, only
// for histories of RESPAWN_MIN_BYTES or more (gzip counted GZIP_RATIO times), never when the flag is already given
// or ISOCHECK_RESPAWN=0, always with ISOCHECK_RESPAWN=1. The child itself is tested in cli.test.ts.
import { describe, expect, it } from 'vitest';
import { GZIP_RATIO, historyBytes, RESPAWN_MIN_BYTES, type RespawnInput, shouldRespawn } from '../src/cli/respawn.js';

const sizes: Record<string, number> = {
  'big.ndjson': RESPAWN_MIN_BYTES,
  'half.ndjson': RESPAWN_MIN_BYTES / 2,
  'small.ndjson': 1000,
  'big.ndjson.gz': Math.ceil(RESPAWN_MIN_BYTES / GZIP_RATIO),
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
  });
  it('leaves small histories, standard input, missing files and other commands in this process', () => {
    expect(shouldRespawn(input(['check', 'half.ndjson']))).toBe(false);
    expect(shouldRespawn(input(['check', '-', 'small.ndjson', 'missing.ndjson']))).toBe(false);
    expect(shouldRespawn(input(['run', 'big.ndjson']))).toBe(false);
    expect(shouldRespawn(input([]))).toBe(false);
  });
  it('counts only the files: options and the command name are not sized', () => {
    const seen: string[] = [];
    historyBytes(['check', '--iso', 'SER', '-', 'small.ndjson'], (p) => {
      seen.push(p);
      return sizes[p];
    });
    expect(seen).toEqual(['SER', 'small.ndjson']); // an option's value is sized like a file, and is none
  });
  it('never respawns when the semi-space is set already, or ISOCHECK_RESPAWN=0', () => {
    expect(shouldRespawn(input(['check', 'big.ndjson'], { execArgv: ['--max-semi-space-size=32'] }))).toBe(false);
    expect(shouldRespawn(input(['check', 'big.ndjson'], { execArgv: ['--max_semi_space_size', '8'] }))).toBe(false);
    const env = { NODE_OPTIONS: '--max-old-space-size=8192 --max-semi-space-size=16' };
    expect(shouldRespawn(input(['check', 'big.ndjson'], { env }))).toBe(false);
    expect(shouldRespawn(input(['check', 'big.ndjson'], { env: { ISOCHECK_RESPAWN: '0' } }))).toBe(false);
  });
  it('always respawns a check with ISOCHECK_RESPAWN=1', () => {
    expect(shouldRespawn(input(['check', 'small.ndjson'], { env: { ISOCHECK_RESPAWN: '1' } }))).toBe(true);
    expect(shouldRespawn(input(['run'], { env: { ISOCHECK_RESPAWN: '1' } }))).toBe(false);
  });
});
