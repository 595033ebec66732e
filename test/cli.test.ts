// The command line as a user runs it: exit codes (0 consistent, 1 inconsistent, 2 bad input, 3 unknown), the
// JSON shape for CI, one line per file and a total, help that documents levels, --iso, --timeout and exit codes.
import { beforeAll, describe, expect, it } from 'vitest';
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const root = join(import.meta.dirname, '..');
const bin = join(root, 'bin', 'isocheck.js');
const run = (...args: string[]) =>
  spawnSync(process.execPath, [bin, ...args], { cwd: root, encoding: 'utf8', timeout: 60_000 });

beforeAll(() => {
  // The CLI runs the compiled code: build it so the test sees the current sources.
  execFileSync(
    process.execPath,
    [join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.build.json'],
    { cwd: root, stdio: 'inherit' },
  );
}, 120_000);

describe('isocheck check', () => {
  it('exits 0 with a witness commit order for a consistent history', () => {
    const r = run('check', '--json', 'histories/known/serial-chain.SER.ndjson');
    expect(r.status).toBe(0);
    const out = JSON.parse(r.stdout);
    expect(out).toMatchObject({
      file: 'histories/known/serial-chain.SER.ndjson',
      verdict: 'consistent',
      anomalies: [],
    });
    expect(out.commitOrder).toEqual(['T1', 'T2', 'T3']);
    expect(out.stats.transactions).toBe(3);
  });
  it('exits 1 and explains an inconsistent history', () => {
    const r = run('check', 'histories/known/lost-update.SI.ndjson');
    expect(r.status).toBe(1);
    expect(r.stdout).toMatch(/INCONSISTENT/);
    expect(r.stdout).toMatch(/LOST UPDATE \[violates SI\]/);
    expect(r.stdout).toMatch(/suppose T1 commits before T2/);
  });
  it('--iso changes the levels checked', () => {
    expect(run('check', '--iso', 'RC', 'histories/known/lost-update.SI.ndjson').status).toBe(0);
    expect(run('check', '--iso', 'T=SER,*=SI', 'histories/known/write-skew.SI.ndjson').status).toBe(0);
    expect(run('check', '--iso', 'SER', 'histories/known/write-skew.SI.ndjson').status).toBe(1);
    const bad = run('check', '--iso', 'BOGUS', 'histories/known/write-skew.SI.ndjson');
    expect(bad.status).toBe(2);
    expect(bad.stdout + bad.stderr).toMatch(/unknown level "BOGUS"/);
  });
  it('exits 2 with file and line for a malformed file, never a stack trace', () => {
    const r = run('check', 'test/fixtures/bad/duplicate-wid.ndjson');
    expect(r.status).toBe(2);
    expect(r.stdout).toMatch(/duplicate-wid.ndjson:5: .*duplicate wid "w1"/);
    expect(r.stdout + r.stderr).not.toMatch(/\n\s+at /);
    expect(run('check', 'no/such/file.ndjson').status).toBe(2);
    expect(run('check').status).toBe(2);
    expect(run('frobnicate').status).toBe(2);
  });
  it('prints one line per file and a total for many files', () => {
    const r = run(
      'check',
      'histories/known/serial-chain.SER.ndjson',
      'histories/known/lost-update.SI.ndjson',
      'test/fixtures/bad/empty.ndjson',
    );
    expect(r.status).toBe(2);
    expect(r.stdout).toMatch(/serial-chain.SER.ndjson: CONSISTENT/);
    expect(r.stdout).toMatch(/total: 3 files: 1 consistent, 1 inconsistent, 0 unknown, 1 bad input/);
    const j = JSON.parse(
      run('check', '--json', 'histories/known/serial-chain.SER.ndjson', 'histories/known/lost-update.SI.ndjson').stdout,
    );
    expect(j.map((x: { verdict: string }) => x.verdict)).toEqual(['consistent', 'inconsistent']);
  });
  it('documents levels, --iso, --timeout, --json and exit codes in --help', () => {
    const h = run('check', '--help').stdout;
    for (const word of [
      'RC',
      'RA',
      'CC',
      'PC',
      'SI',
      'SER',
      '--iso',
      '--timeout',
      '--json',
      'Exit status',
      '3  some history could not be decided',
    ])
      expect(h).toContain(word);
  });
});

// src/cli/respawn.ts: a large check runs in a child Node with --max-semi-space-size (ISOCHECK_RESPAWN=1 forces it).
describe('isocheck check in a child Node with a larger young generation', () => {
  const runWith = (respawn: string, ...args: string[]) =>
    spawnSync(process.execPath, [bin, ...args], {
      cwd: root,
      encoding: 'utf8',
      timeout: 60_000,
      env: { ...process.env, ISOCHECK_RESPAWN: respawn },
    });
  it('prints and exits exactly as a check in this process does', () => {
    for (const args of [
      ['check', '--json', 'histories/known/serial-chain.SER.ndjson'],
      ['check', 'histories/known/lost-update.SI.ndjson'],
      ['check', 'histories/known/no-such-file.ndjson'],
    ]) {
      const child = runWith('1', ...args);
      const here = runWith('0', ...args);
      expect(child.status).toBe(here.status);
      const timeless = (out: string) => out.replace(/\d+ ms|"timeMs": \d+|[\d.]+ s\)/g, 'TIME');
      expect(timeless(child.stdout)).toBe(timeless(here.stdout));
      expect(child.stderr).toBe(here.stderr);
    }
  });
  /** `check -` in a child (ISOCHECK_RESPAWN=1), waiting on standard input, which the test keeps open; resolves
   *  once the child runs with the flag, with its pid. */
  async function startChecking() {
    const p = spawn(process.execPath, [bin, 'check', '-'], {
      cwd: root,
      stdio: ['pipe', 'ignore', 'ignore'],
      env: { ...process.env, ISOCHECK_RESPAWN: '1' },
    });
    const ended = new Promise<[number | null, string | null]>((r) => p.once('exit', (c, s) => r([c, s])));
    const childrenFile = `/proc/${p.pid}/task/${p.pid}/children`;
    const argsOf = (pid: string) => {
      try {
        return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
      } catch {
        return [];
      }
    };
    let kid = '';
    // until the child has exec'd Node with the flag (before that, its command line is the parent's)
    for (let i = 0; i < 200 && !argsOf(kid).includes('--max-semi-space-size=64'); i++) {
      await new Promise((r) => setTimeout(r, 50));
      kid = existsSync(childrenFile) ? readFileSync(childrenFile, 'utf8').trim() : '';
    }
    expect(argsOf(kid)).toContain('--max-semi-space-size=64');
    return { p, kid, ended };
  }
  const gone = async (pid: string) => {
    for (let i = 0; i < 100 && existsSync(`/proc/${pid}`); i++) await new Promise((r) => setTimeout(r, 50));
    return !existsSync(`/proc/${pid}`);
  };
  it('gives the child the flag, forwards SIGTERM to it, and dies of it as the child did', async () => {
    const { p, kid, ended } = await startChecking();
    p.kill('SIGTERM');
    expect(await ended).toEqual([null, 'SIGTERM']);
    expect(await gone(kid)).toBe(true);
  });
  it('the child leaves when the parent is killed by a signal it cannot forward', async () => {
    const { p, kid, ended } = await startChecking();
    p.kill('SIGKILL');
    expect(await ended).toEqual([null, 'SIGKILL']);
    expect(await gone(kid)).toBe(true);
  });
});
