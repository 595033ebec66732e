// The throwaway server: C collation and UTF8, a free port, and its directory removed on stop(), on process exit
// and on SIGTERM/SIGINT (checked in child processes); the exit code a program sets survives the exit hooks.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import pg from 'pg';
import { EmbeddedStartError, startEmbedded } from '../src/db/embedded.js';

const root = resolve(import.meta.dirname, '..');
let work: string;
let child: string | undefined;
let skipReason: string | undefined;

const CHILD = (embeddedPath: string) => `
import { startEmbedded } from ${JSON.stringify(embeddedPath)};
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
const mode = process.argv[2];
const s = await startEmbedded();
const pid = Number(readFileSync(join(s.dir, 'data', 'postmaster.pid'), 'utf8').split('\\n')[0]);
process.stdout.write(JSON.stringify({ dir: s.dir, pid }) + '\\n');
if (mode === 'exitcode') {
  await s.stop();
  process.exitCode = 3;
} else if (mode === 'exit') {
  process.exit(5);
} else if (mode === 'forget') {
  // no stop(), nothing pending: the process ends by itself and the exit hook stops the server
} else {
  setInterval(() => {}, 1000);
}
`;

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function runChild(
  mode: string,
  signal?: NodeJS.Signals,
): Promise<{ code: number | null; signal: NodeJS.Signals | null; dir: string; pid: number }> {
  const p = spawn(process.execPath, [child!, mode], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  p.stderr.on('data', (d) => (err += d));
  const info = await new Promise<{ dir: string; pid: number }>((res, rej) => {
    p.stdout.on('data', (d) => {
      out += d;
      const line = out.split('\n')[0];
      if (out.includes('\n')) res(JSON.parse(line));
    });
    p.on('exit', () => rej(new Error(`child exited before starting the server: ${err}`)));
  });
  if (signal) p.kill(signal);
  const [code, sig] = await new Promise<[number | null, NodeJS.Signals | null]>((res) =>
    p.on('close', (c, s) => res([c, s])),
  );
  return { code, signal: sig, ...info };
}

beforeAll(async () => {
  mkdirSync(join(root, 'node_modules', '.cache'), { recursive: true });
  work = mkdtempSync(join(root, 'node_modules', '.cache', 'isocheck-db-'));
  try {
    const { build } = await import('rolldown');
    const src = join(work, 'child.ts');
    writeFileSync(src, CHILD(join(root, 'src', 'db', 'embedded.ts')));
    await build({
      input: src,
      platform: 'node',
      external: (id) => !id.startsWith('.') && !id.startsWith('/'),
      resolve: { extensionAlias: { '.js': ['.ts', '.js'] } },
      output: { file: join(work, 'child.mjs'), format: 'esm' },
      logLevel: 'silent',
    });
    child = join(work, 'child.mjs');
  } catch (e) {
    skipReason = `cannot bundle the child script (${(e as Error).message})`;
  }
});

afterAll(() => {
  if (work) rmSync(work, { recursive: true, force: true });
});

describe('startEmbedded', () => {
  it('starts PostgreSQL 18 with C collation on a free port and removes everything on stop()', async () => {
    const s = await startEmbedded();
    expect(s.versionNum).toBeGreaterThanOrEqual(180000);
    expect(s.url).toMatch(/^postgresql:\/\/postgres:[0-9a-f]+@127\.0\.0\.1:\d+\/postgres$/);
    const c = new pg.Client({ connectionString: s.url });
    await c.connect();
    const r = await c.query(
      `SELECT datcollate, datctype, pg_encoding_to_char(encoding) AS enc FROM pg_database WHERE datname = ` +
        `current_database()`,
    );
    expect(r.rows[0]).toEqual({ datcollate: 'C', datctype: 'C', enc: 'UTF8' });
    await c.end();
    expect(existsSync(s.dir)).toBe(true);
    await s.stop();
    expect(existsSync(s.dir)).toBe(false);
    await s.stop(); // idempotent
  });

  it('explains a port in use', async () => {
    const s = await startEmbedded();
    try {
      const err = await startEmbedded({ port: s.port }).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(EmbeddedStartError);
      expect((err as Error).message).toMatch(/port \d+ is in use.*--db/);
      expect((err as Error).message).not.toContain('\n');
      rmSync((err as EmbeddedStartError).logFile ?? '', { force: true });
    } finally {
      await s.stop();
    }
  });

  for (const [mode, signal] of [
    ['wait', 'SIGTERM'],
    ['wait', 'SIGINT'],
    ['exit', undefined],
  ] as const) {
    it(`removes the server when the process ${signal ? `gets ${signal}` : 'exits'}`, async (ctx) => {
      if (skipReason) return ctx.skip(skipReason);
      const r = await runChild(mode, signal);
      expect(existsSync(r.dir)).toBe(false);
      for (let i = 0; i < 100 && alive(r.pid); i++) await new Promise((res) => setTimeout(res, 50));
      expect(alive(r.pid)).toBe(false);
      if (mode === 'exit') expect(r.code).toBe(5);
      else expect(r.code !== 0 || r.signal !== null).toBe(true);
    });
  }

  it('lets a program that forgets stop() end, and stops the server then', async (ctx) => {
    if (skipReason) return ctx.skip(skipReason);
    const r = await runChild('forget');
    expect(r.code).toBe(0);
    expect(existsSync(r.dir)).toBe(false);
    for (let i = 0; i < 100 && alive(r.pid); i++) await new Promise((res) => setTimeout(res, 50));
    expect(alive(r.pid)).toBe(false);
  });

  it('keeps the exit code a program set', async (ctx) => {
    if (skipReason) return ctx.skip(skipReason);
    const r = await runChild('exitcode');
    expect(r.code).toBe(3);
    expect(existsSync(r.dir)).toBe(false);
  });
});
