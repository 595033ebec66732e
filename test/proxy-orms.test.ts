// isocheck proxy under real Python ORMs from Debian's packages, over psycopg2: Django (python3-django) and
// SQLAlchemy (python3-sqlalchemy). Each script (test/fixtures/proxy/) runs the ORM's everyday statements: get()
// (LIMIT 21), select_for_update, F() updates, bulk inserts, get_or_create, nested atomic blocks (savepoints),
// aggregates, iterator() / yield_per (server-side cursors: DECLARE, FETCH, CLOSE), once on a database directly and
// once through the proxy on a twin database: the output is the same, the history is consistent, and the reads are
// recorded as they should be. Skipped, with the reason, when an ORM is not installed.
import { describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import { join, resolve } from 'node:path';
import { check } from '../src/index.js';
import { type Read, twinServer } from './helpers/twin-databases.js';
import { program } from './helpers/program.js';

const fixtures = resolve(import.meta.dirname, 'fixtures', 'proxy');
const pythonWith = (module: string): string | undefined =>
  ['python3', '/usr/bin/python3'].find(
    (p) => spawnSync(p, ['-c', `import psycopg2, ${module}`], { stdio: 'ignore', timeout: 10_000 }).status === 0,
  );
const django = pythonWith('django');
const sqlalchemy = pythonWith('sqlalchemy');

const server = twinServer(django !== undefined || sqlalchemy !== undefined);

/** The script's output directly and through the proxy (each on a database of its own), and the reads recorded. */
async function directAndProxied(
  python: string,
  script: string,
  name: string,
): Promise<{ direct: string; proxied: string; reads: Read[][]; file: string }> {
  const twins = await server.twins(name);
  const { direct, proxied } = await twins.both(
    async (url) => (await program(python, [join(fixtures, script), url])).stdout,
  );
  return { direct, proxied, reads: await twins.reads(), file: twins.file };
}

describe.skipIf(!django)(
  `isocheck proxy under Django${django ? '' : ' (skipped: apt-get install python3-django)'}`,
  () => {
    it('gives the ORM what a direct connection gives, and records a consistent history', async () => {
      const { direct, proxied, reads, file } = await directAndProxied(django!, 'django_app.py', 'django');
      expect(proxied).toBe(direct);
      expect(JSON.parse(proxied)).toMatchObject({ sum: { s: 1000, n: 10 }, bulk: [1, 2, 3] });
      // get() and select_for_update().get() are LIMIT 21: one row back, exact reads
      expect(reads[0]).toEqual([
        ['id = 1', false, 1],
        ['id = 2', false, 1],
      ]);
      // iterator() in autocommit declares a WITH HOLD cursor in a transaction of its own: read whole there, exact
      // (docs/recording.md, "Cursors")
      expect(reads).toContainEqual([['bal >= 100', false, 9]]);
      const own = await check(file);
      expect(own.verdict, own.reason).toBe('consistent');
    }, 150_000);
  },
);

describe.skipIf(!sqlalchemy)(
  `isocheck proxy under SQLAlchemy${sqlalchemy ? '' : ' (skipped: apt-get install python3-sqlalchemy)'}`,
  () => {
    it('gives the ORM what a direct connection gives, and records a consistent history', async () => {
      const { direct, proxied, reads, file } = await directAndProxied(sqlalchemy!, 'sqlalchemy_app.py', 'sqlalchemy');
      expect(proxied).toBe(direct);
      expect(JSON.parse(proxied)).toMatchObject({ ids: [1, 2, 3], acct3: 100 });
      // yield_per reads through a server-side cursor in the transaction: fetched to its end, exact
      expect(reads.flat()).toContainEqual(['bal >= 100', false, 9]);
      const own = await check(file);
      expect(own.verdict, own.reason).toBe('consistent');
    }, 150_000);
  },
);
