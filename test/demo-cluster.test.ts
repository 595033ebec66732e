// `isocheck demo cluster` (issue 19) as a newcomer runs it (the CLI built into a folder of its own, as a child
// process): a primary and a hot standby on throwaway embedded servers, Twitter at READ COMMITTED with the reads
// routed to the standby, ends in a READ-YOUR-WRITES VIOLATION [violates RC] naming the servers, exit 0; every
// server is stopped at the end, and on Ctrl-C (exit 130, one line). Each run: a few seconds.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createConnection } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildPrivateCli } from './helpers/private-cli.js';

const STACK = /\n\s+at |Unhandled|internal error|node:internal/;
let work: string;
let cli: string;

beforeAll(() => {
  work = mkdtempSync(join(tmpdir(), 'isocheck-demo-cluster-'));
  cli = buildPrivateCli(work);
}, 180_000);

afterAll(() => {
  if (work) rmSync(work, { recursive: true, force: true });
});

interface Exit {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs the CLI; `onStdout` may signal it. Killed after 90 s (a hang fails the test, it does not stall it). */
function run(args: string[], onStdout?: (stdout: string, kill: (s: NodeJS.Signals) => void) => void): Promise<Exit> {
  const child = spawn(process.execPath, [cli, ...args], { cwd: work, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => {
    stdout += d;
    onStdout?.(stdout, (s) => child.kill(s));
  });
  child.stderr.on('data', (d) => (stderr += d));
  return new Promise((res) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), 90_000);
    child.on('close', (code) => {
      clearTimeout(timer);
      res({ code, stdout, stderr });
    });
  });
}

/** The ports of the servers the demo printed (`primary: embedded PostgreSQL 18.4 on 127.0.0.1:PORT`). */
const portsOf = (stdout: string): number[] =>
  [...stdout.matchAll(/^\s+(?:primary|standby\d+): .* on 127\.0\.0\.1:(\d+)/gm)].map((m) => Number(m[1]));

/** Whether something still listens on the port (a connection accepted within 2 s). */
function listening(port: number): Promise<boolean> {
  return new Promise((res) => {
    const socket = createConnection({ host: '127.0.0.1', port });
    const done = (v: boolean) => {
      socket.destroy();
      res(v);
    };
    socket.setTimeout(2000, () => done(false));
    socket.on('connect', () => done(true));
    socket.on('error', () => done(false));
  });
}

describe('isocheck demo cluster', () => {
  it(
    "a read on the standby misses the client's own write: READ-YOUR-WRITES VIOLATION [violates RC], the servers " +
      'named, all stopped',
    async () => {
      const t0 = Date.now();
      const r = await run(['demo', 'cluster']);
      expect(r.code, r.stderr + r.stdout).toBe(0);
      expect(r.stderr).not.toMatch(STACK);
      expect(r.stdout).toMatch(/READ-YOUR-WRITES VIOLATION \[violates RC\]/);
      expect(r.stdout).toMatch(/, on standby1$/m);
      expect(r.stdout).toMatch(/, on primary$/m);
      const ports = portsOf(r.stdout);
      expect(ports.length).toBeGreaterThanOrEqual(2);
      for (const p of ports) expect(await listening(p), `port ${p}`).toBe(false);
      expect(Date.now() - t0).toBeLessThan(60_000);
    },
  );

  it('Ctrl-C: one line, exit 130, every server stopped', async () => {
    let sent = false;
    const r = await run(['demo', 'cluster'], (stdout, kill) => {
      if (!sent && portsOf(stdout).length >= 2) {
        sent = true;
        kill('SIGINT');
      }
    });
    expect(sent, r.stdout).toBe(true);
    expect(r.code, r.stderr).toBe(130);
    expect(r.stderr).not.toMatch(STACK);
    expect(r.stderr.trim().split('\n').pop()).toMatch(/^isocheck: interrupted \(SIGINT\)/);
    for (const p of portsOf(r.stdout)) expect(await listening(p), `port ${p}`).toBe(false);
  });

  it('refuses --db and an unknown demo in one line', async () => {
    const a = await run(['demo', 'cluster', '--db', 'postgresql://x@127.0.0.1:1/x']);
    expect([a.code, a.stderr.trim()]).toEqual([
      2,
      expect.stringMatching(/^isocheck: demo cluster builds its own servers: leave out --db/),
    ]);
    const b = await run(['demo', 'ring']);
    expect([b.code, b.stderr.trim()]).toEqual([2, 'isocheck: demo ring: expected "demo" or "demo cluster"']);
  });
});
