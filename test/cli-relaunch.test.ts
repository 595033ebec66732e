// bin/isocheck.js runs `isocheck check` in a child Node with 64 MB semi-spaces (docs/scale.md §4): the child has
// the flag, the exit code is the child's, and a signal sent to the command alone stops the check too (no orphan).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildPrivateCli } from './helpers/private-cli.js';
import { writeScaleHistory } from '../bench/scale/generate.js';

let dir: string;
let bin: string;
let big: string;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'isocheck-relaunch-'));
  bin = buildPrivateCli(join(dir, 'cli'));
  // long enough to be interrupted: a few seconds of checking
  big = join(dir, 'bank.ndjson');
  writeScaleHistory(big, { txns: 60_000, level: 'si+rc', seed: 'relaunch' });
}, 180_000);

afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The command lines of the processes whose parent is `pid`. */
function childrenOf(pid: number): { pid: number; cmd: string }[] {
  const out = spawnSync('ps', ['-o', 'pid=', '--ppid', String(pid)], { encoding: 'utf8' }).stdout ?? '';
  return out
    .split('\n')
    .map((s) => Number(s.trim()))
    .filter((p) => p > 0 && existsSync(`/proc/${p}/cmdline`))
    .map((p) => ({ pid: p, cmd: readFileSync(`/proc/${p}/cmdline`, 'utf8').split('\0').join(' ') }));
}

describe('isocheck check in a child Node', () => {
  it('passes the verdict exit codes through (0, 1, 2)', () => {
    const root = join(import.meta.dirname, '..');
    const run = (...args: string[]) => spawnSync(process.execPath, [bin, ...args], { cwd: root, encoding: 'utf8' });
    expect(run('check', 'histories/known/serial-chain.SER.ndjson').status).toBe(0);
    expect(run('check', 'histories/known/causality-violation.CC.ndjson').status).toBe(1);
    const bad = run('check', join(dir, 'missing.ndjson'));
    expect(bad.status).toBe(2);
    expect(bad.stderr).toBe('');
    expect(bad.stdout).toContain('cannot read (ENOENT)');
  });

  it(
    'runs the check with --max-semi-space-size=64, and SIGTERM to the command stops the check (exit by SIGTERM)',
    async () => {
      if (process.platform !== 'linux') return; // reads /proc
      const cmd = spawn(process.execPath, [bin, 'check', big, '--no-shrink'], { stdio: 'ignore' });
      const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((done) =>
        cmd.on('exit', (code, signal) => done({ code, signal })),
      );
      let kids: { pid: number; cmd: string }[] = [];
      for (let i = 0; i < 100 && kids.length === 0; i++) {
        await new Promise((r) => setTimeout(r, 50));
        kids = childrenOf(cmd.pid!);
      }
      expect(kids.map((k) => k.cmd).join('\n')).toContain('--max-semi-space-size=64');
      expect(kids[0].cmd).toContain(' check ');
      cmd.kill('SIGTERM');
      const { code, signal } = await exited;
      expect({ code, signal }).toEqual({ code: null, signal: 'SIGTERM' });
      for (let i = 0; i < 40 && existsSync(`/proc/${kids[0].pid}`); i++) await new Promise((r) => setTimeout(r, 50));
      expect(existsSync(`/proc/${kids[0].pid}`), 'the check outlived the command').toBe(false);
    },
    60_000,
  );

  it('does not relaunch when the flag is given already (NODE_OPTIONS)', async () => {
    const cmd = spawn(process.execPath, [bin, 'check', big, '--no-shrink'], {
      stdio: 'ignore',
      env: { ...process.env, NODE_OPTIONS: '--max-semi-space-size=32' },
    });
    const exited = new Promise((done) => cmd.on('exit', done));
    await new Promise((r) => setTimeout(r, 800));
    const kids = childrenOf(cmd.pid!);
    cmd.kill('SIGKILL');
    await exited;
    expect(kids.filter((k) => k.cmd.includes('main.js'))).toEqual([]);
  }, 30_000);
});
