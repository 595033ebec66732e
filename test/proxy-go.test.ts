// isocheck proxy under a Go application over pgx v4 (Debian's golang-go and golang-github-jackc-pgx-v4-dev): a
// driver with its own protocol code that binds parameters and asks for results in binary (numeric, timestamps,
// dates, uuid, intervals, arrays, jsonb), caches prepared statements, pipelines batches and runs transactions on a
// pool. The same program (test/fixtures/proxy/pgx_app.go) runs on a database directly and through the proxy on a
// twin: the output is the same, the history is consistent and records the reads. Skipped, with the reason, when Go
// or pgx is not installed.
import { describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { check } from '../src/index.js';
import { twinServer } from './helpers/twin-databases.js';
import { program } from './helpers/program.js';

const GOPATH = '/usr/share/gocode';
const go = spawnSync('go', ['version'], { stdio: 'ignore', timeout: 10_000 }).status === 0;
const pgx = existsSync(join(GOPATH, 'src', 'github.com', 'jackc', 'pgx', 'v4'));
const ready = go && pgx;
const server = twinServer(ready);

const run = async (cmd: string, args: string[], env?: NodeJS.ProcessEnv): Promise<string> =>
  (await program(cmd, args, { timeout: 120_000, env })).stdout;

describe.skipIf(!ready)(
  `isocheck proxy under pgx (Go)${ready ? '' : ' (skipped: apt-get install golang-go golang-github-jackc-pgx-v4-dev)'}`,
  () => {
    it('gives the application what a direct connection gives, and records a consistent history', async () => {
      const dir = mkdtempSync(join(tmpdir(), 'isocheck-go-'));
      try {
        // Debian's Go packages are a GOPATH: built outside modules, with a build cache of the test's own
        const app = join(dir, 'pgx_app');
        const env = { ...process.env, GO111MODULE: 'off', GOPATH, GOCACHE: join(dir, 'cache'), GOFLAGS: '' };
        await run('go', ['build', '-o', app, resolve(import.meta.dirname, 'fixtures', 'proxy', 'pgx_app.go')], env);
        const twins = await server.twins('pgx');
        const { direct, proxied } = await twins.both((url) => run(app, [url]));
        expect(proxied).toBe(direct);
        const out = JSON.parse(proxied);
        expect(out).toMatchObject({
          row: ['n1', 100],
          ids: [1, 2, 3, 4, 5, 6, 7, 8],
          pool: ['3:115', '4:115', '5:115', '6:115'],
          batch: [2, 3, 3],
          copy: [3, expect.stringMatching(/violates unique constraint "acct_pkey" \(SQLSTATE 23505\)/), 27],
        });
        // (refused in binary before: 0A000, a binary parameter of type oid 602)
        expect(out.shapes).toEqual([
          [
            { X: 1, Y: 2 },
            { X: 3.5, Y: -4 },
          ],
          false,
          [
            { X: 0, Y: 0 },
            { X: 2, Y: 0 },
            { X: 0, Y: 2 },
          ],
        ]);
        // each binary value came back as sent (or as the server computed it)
        expect(out.types).toEqual([
          '24691357802e-6',
          '2000-01-01T23:59:59.123456Z',
          '1582-10-04',
          'a0eebc999c0b4ef8bb6d6bb9bd380a11',
          10800003000,
          0,
          0,
          expect.any(Array), // (the int8s, checked in the text below: 2^53 + 1 is not a JS number)
          ['a b', '', 'q"uo\\te', 'NULL'],
          '2024-02-29T12:00:00Z',
          1 / 3,
          { k: [1, 2] },
          true,
        ]);
        expect(proxied).toContain('[1,-2,9007199254740993]');
        const reads = await twins.reads();
        // the reads by key, each exact: the first, and the pool's 60 transactions (one read each)
        expect(reads.flat().filter(([where, partial]) => where === 'id = $1' && !partial).length).toBeGreaterThan(60);
        const own = await check(twins.file);
        expect(own.verdict, own.reason).toBe('consistent');
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    }, 180_000);
  },
);
