// isocheck proxy under Python's other drivers, from Debian's packages: asyncpg (python3-asyncpg: its own protocol
// code, everything prepared and in binary) and psycopg 3 (python3-psycopg: server-side binding in text or binary,
// prepared statements, pipeline mode, server-side cursors whose portal it describes, COPY TO). Each script
// (test/fixtures/proxy/) runs on a database directly and through the proxy on a twin: the output is the same and the
// history consistent. Skipped, with the reason, when a driver is not installed.
import { describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import { join, resolve } from 'node:path';
import { check } from '../src/index.js';
import { twinServer } from './helpers/twin-databases.js';
import { program } from './helpers/program.js';

const fixtures = resolve(import.meta.dirname, 'fixtures', 'proxy');
const pythonWith = (module: string): string | undefined =>
  ['python3', '/usr/bin/python3'].find(
    (p) => spawnSync(p, ['-c', `import ${module}`], { stdio: 'ignore', timeout: 10_000 }).status === 0,
  );
const asyncpg = pythonWith('asyncpg');
const psycopg3 = pythonWith('psycopg');

const server = twinServer(asyncpg !== undefined || psycopg3 !== undefined);

/** The script's output directly and through the proxy, and the verdict on the history. */
async function directAndProxied(python: string, script: string, name: string) {
  const twins = await server.twins(name);
  const { direct, proxied } = await twins.both(
    async (url) => (await program(python, [join(fixtures, script), url])).stdout,
  );
  return { direct, proxied, verdict: await check(twins.file) };
}

describe.skipIf(!asyncpg)(
  `isocheck proxy under asyncpg${asyncpg ? '' : ' (skipped: apt-get install python3-asyncpg)'}`,
  () => {
    it('gives the application what a direct connection gives, and records a consistent history', async () => {
      const { direct, proxied, verdict } = await directAndProxied(asyncpg!, 'asyncpg_app.py', 'asyncpg');
      expect(proxied).toBe(direct);
      expect(JSON.parse(proxied)).toMatchObject({
        row: ['n1', 100],
        cursor: [[1], [2], [3]],
        dup: 'UniqueViolationError',
        copied: 'COPY 2',
        items: [
          ['c1', 5],
          ['c2', null],
        ],
        pool: [
          [3, 110],
          [4, 110],
          [5, 110],
          [6, 110],
        ],
      });
      expect(proxied).toContain('"03:04:05+05:30"');
      expect(proxied).toContain('"192.168.0.1/24", "2001:db8::/32", "08:00:2b:01:02:03"');
      expect(JSON.parse(proxied).own[0]).toBe('happy');
      // (refused in binary before: 0A000 "a binary parameter of type oid 602")
      expect(JSON.stringify(JSON.parse(proxied).shapes.slice(0, 3))).toBe(
        '[["closed",[[1,2],[3.5,-4]]],["polygon",[[0,0],[2,0],[0,2]]],["<Range [1, 3)>","<Range [10, 20)>"]]',
      );
      expect(verdict.verdict, verdict.reason).toBe('consistent');
    }, 150_000);
  },
);

describe.skipIf(!psycopg3)(
  `isocheck proxy under psycopg 3${psycopg3 ? '' : ' (skipped: apt-get install python3-psycopg)'}`,
  () => {
    it('gives the application what a direct connection gives, and records a consistent history', async () => {
      const { direct, proxied, verdict } = await directAndProxied(psycopg3!, 'psycopg3_app.py', 'psycopg3');
      expect(proxied).toBe(direct);
      const out = JSON.parse(proxied);
      // the same values in text and in binary
      expect(out.types1).toEqual(out.types0);
      expect(out).toMatchObject({ pipeline: 2, named: [2, 3, 4], copy: ['1\t2\n', '2\t4\n'], dup: 'UniqueViolation' });
      expect(out).toMatchObject({
        copied: 2,
        items: [
          ['w1', 8],
          ['w2', null],
        ],
      });
      expect(verdict.verdict, verdict.reason).toBe('consistent');
    }, 150_000);
  },
);
