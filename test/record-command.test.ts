// `isocheck record -- node app.js` as a user runs it: the bank examples (ESM kysely, CommonJS knex) unmodified,
// recorded through the module hook, give the same results as an unrecorded run, and `isocheck check` works on the
// file; SIGTERM ends the application with every transaction written; the exit status is the application's.
import { beforeAll, describe, expect, it } from 'vitest';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, existsSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freshDatabase as freshDb } from './helpers/fresh-database.js';
import { buildPrivateCli } from './helpers/private-cli.js';
import { testServer } from './helpers/test-server.js';
import { readHistory } from '../src/history/reader.js';

const root = join(import.meta.dirname, '..');
const dir = mkdtempSync(join(tmpdir(), 'isocheck-record-'));
let bin: string;
const db = testServer();

beforeAll(() => {
  bin = buildPrivateCli(join(dir, 'cli'));
}, 180_000);

const freshDatabase = (): Promise<string> => freshDb(db.admin, db.server.url, 'rec');

const isocheck = (args: string[], env: NodeJS.ProcessEnv = {}) =>
  spawnSync(process.execPath, [bin, ...args], {
    cwd: root,
    encoding: 'utf8',
    timeout: 60_000,
    env: { ...process.env, ...env },
  });

describe('isocheck record', () => {
  it.each([
    ['ESM (kysely)', 'examples/kysely/app.mjs'],
    ['CommonJS (knex)', 'examples/knex/app.cjs'],
  ])(
    'records an unmodified %s application: same results as unrecorded, checkable, write skew as SER',
    async (_, app) => {
      const args = [app, '--iso', 'repeatable-read', '--txns', '10', '--seed', '3'];
      const plain = spawnSync(process.execPath, args, {
        cwd: root,
        encoding: 'utf8',
        timeout: 60_000,
        env: { ...process.env, DATABASE_URL: await freshDatabase() },
      });
      expect(plain.status, plain.stderr).toBe(0);
      const out = join(dir, `${app.split('/')[1]}.ndjson`);
      const rec = isocheck([
        'record',
        '--out',
        out,
        '--tables',
        'accounts',
        '--db',
        await freshDatabase(),
        '--',
        process.execPath,
        ...args,
      ]);
      expect(rec.status, rec.stderr).toBe(0);
      expect(rec.stdout).toBe(plain.stdout);
      expect(JSON.parse(rec.stdout).withdrawals).toEqual([true, true]);
      expect(rec.stderr).toMatch(/isocheck: recorded \d+ transactions \(\d+ committed, \d+ aborted, 0 unknown\) in /);
      expect(rec.stderr).toContain(`isocheck check ${out}`);
      const own = isocheck(['check', out]);
      expect(own.status, own.stdout).toBe(0);
      // the seed rows, the two withdrawals, 4 workers × 10 transactions, the final read of the balances
      expect(Number(/CONSISTENT \((\d+) committed/.exec(own.stdout)?.[1])).toBe(1 + 2 + 40 + 1);
      const ser = isocheck(['check', '--iso', 'SER', out]);
      expect(ser.status).toBe(1);
      expect(ser.stdout).toMatch(/WRITE SKEW \[violates SER\]/);
    },
  );

  it('on SIGTERM writes what is open and the end line, and exits as the signal ended the application', async () => {
    const out = join(dir, 'term.ndjson');
    const child = spawn(
      process.execPath,
      [
        bin,
        'record',
        '--out',
        out,
        '--tables',
        'accounts',
        '--db',
        await freshDatabase(),
        '--',
        process.execPath,
        'examples/knex/app.cjs',
        '--txns',
        '100000',
      ],
      { cwd: root, stdio: ['ignore', 'ignore', 'pipe'] },
    );
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const exited = new Promise<number | null>((done) => child.on('exit', (code) => done(code)));
    // wait until transfers are being recorded (the file may come and go at first: `isocheck record` checks that
    // it can write there by creating it and removing it again, and a recorder removes a file it left empty)
    const recorded = (): number => {
      try {
        return readFileSync(out, 'utf8').split('\n').length;
      } catch {
        return 0;
      }
    };
    for (let i = 0; i < 200 && recorded() <= 40; i++) await new Promise((r) => setTimeout(r, 50));
    child.kill('SIGTERM');
    expect(await exited).toBe(143);
    expect(stderr).toMatch(/isocheck: recorded \d+ transactions \(\d+ committed/);
    const lines = readFileSync(out, 'utf8').trim().split('\n');
    expect(JSON.parse(lines.at(-1)!)).toMatchObject({ kind: 'end' });
    const r = isocheck(['check', '--json', out]);
    expect(JSON.parse(r.stdout).verdict).toBe('consistent');
  });

  it("isocheck/pg: the application's pg, recording, set up from the environment (one line of glue)", async () => {
    // in the built package's folder, so that `isocheck/pg` resolves through package.json's exports
    const script = join(dir, 'cli', 'use-pg.mjs');
    writeFileSync(
      script,
      [
        `import pg, { Pool, types } from 'isocheck/pg';`,
        `const pool = new Pool({ connectionString: process.env.DATABASE_URL, max: 1 });`,
        `await pool.query('CREATE TABLE t (id int PRIMARY KEY, v int)');`,
        `await pool.query('INSERT INTO t VALUES (1, 1)');`,
        `const c = await pool.connect();`,
        `await c.query('BEGIN ISOLATION LEVEL SERIALIZABLE');`,
        `await c.query('UPDATE t SET v = v + 1 WHERE id = 1');`,
        `await c.query('COMMIT');`,
        `c.release();`,
        `console.log(JSON.stringify({ pool: Pool.name, types: types === pg.types, v: (await ` +
          `pool.query('SELECT v FROM t')).rows }));`,
        `await pool.end();`,
      ].join('\n'),
    );
    const out = join(dir, 'glue.ndjson');
    const r = spawnSync(process.execPath, [script], {
      encoding: 'utf8',
      timeout: 60_000,
      env: {
        ...process.env,
        DATABASE_URL: await freshDatabase(),
        ISOCHECK_RECORD_OUT: out,
        ISOCHECK_RECORD_TABLES: 't',
      },
    });
    expect(r.status, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({ pool: 'Pool', types: true, v: [{ v: 2 }] });
    const h = await readHistory(out);
    expect(h.txns.map((t) => [t.iso, t.status, t.events.map((e) => e.op)])).toEqual([
      ['RC', 'committed', ['insert']],
      ['SER', 'committed', ['update']],
      ['RC', 'committed', ['select']],
    ]);
  });

  it("exits with the application's status; says when nothing was recorded; teaches in --help", () => {
    const out = join(dir, 'none.ndjson');
    const r = isocheck([
      'record',
      '--out',
      out,
      '--tables',
      'accounts',
      '--',
      process.execPath,
      '-e',
      'process.exit(3)',
    ]);
    expect(r.status).toBe(3);
    expect(r.stderr).toMatch(/no history written/);
    expect(existsSync(out)).toBe(false);
    expect(isocheck(['record', '--out', out, '--', 'node']).status).toBe(2); // no --tables
    expect(isocheck(['record', '--out', out, '--tables', 'accounts', '--', 'no-such-command-isocheck']).stderr).toMatch(
      /cannot run no-such-command-isocheck: not found/,
    );
    const help = isocheck(['record', '--help']).stdout;
    for (const word of [
      '--out',
      '--tables',
      '--db',
      'NODE_OPTIONS',
      'Examples:',
      'isocheck record --out run.ndjson --tables accounts -- node app.js',
      'isocheck check',
    ])
      expect(help).toContain(word);
  });
});
