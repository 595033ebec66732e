// isocheck run --client K/N and isocheck merge as a user runs them (issue 19, "Load from several machines"): two
// client processes of SmallBank against one embedded server's database, each recording its own file (sessions
// 1-2 and 3-4, the same initial rows), merged into one history that is consistent at the level run (SERIALIZABLE),
// with reads in one file of the other's writes; a pair whose initial rows differ is one line FILE:LINE and exit 2.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { startEmbedded, type EmbeddedServer } from '../src/db/embedded.js';
import { readHistory } from '../src/history/reader.js';
import { WID_COLUMN } from '../src/recorder/catalog.js';
import { buildPrivateCli } from './helpers/private-cli.js';

let work: string;
let cli: string;
let server: EmbeddedServer;

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), 'isocheck-clients-'));
  cli = buildPrivateCli(work);
  server = await startEmbedded();
  const admin = new pg.Client({ connectionString: server.url });
  await admin.connect();
  await admin.query('CREATE DATABASE shared_run');
  await admin.end();
}, 180_000);

afterAll(async () => {
  await server?.stop();
  if (work) rmSync(work, { recursive: true, force: true });
});

function run(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [cli, ...args], { cwd: work, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => (stdout += d));
  child.stderr.on('data', (d) => (stderr += d));
  const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
  return new Promise((resolve) =>
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    }),
  );
}

describe('isocheck run --client K/N, then isocheck merge', () => {
  it('two client processes of smallbank share one database; ' +
    'the merged history is consistent at SERIALIZABLE', async () => {
    const url = new URL(server.url);
    url.pathname = '/shared_run';
    const common = [
      'run',
      'smallbank',
      '--db',
      url.toString(),
      '--iso',
      'ser',
      '--sessions',
      '2',
      '--txns',
      '8',
      '--client-wait',
      '30',
      '--json',
    ];
    const [c1, c2] = await Promise.all([
      run([...common, '--client', '1/2', '--out', 'c1.ndjson']),
      run([...common, '--client', '2/2', '--out', 'c2.ndjson']),
    ]);
    expect(c1.stderr + c1.stdout).not.toMatch(/internal error/);
    expect([c1.code, c2.code], c1.stderr + c2.stderr).toEqual([0, 0]);
    expect(JSON.parse(c1.stdout).invariantViolations).toEqual([]);
    expect(JSON.parse(c2.stdout).invariantsSkipped).toMatch(/client 1/);

    const [h1, h2] = [await readHistory(join(work, 'c1.ndjson')), await readHistory(join(work, 'c2.ndjson'))];
    expect(new Set(h1.txns.map((t) => t.session))).toEqual(new Set([1, 2]));
    expect(new Set(h2.txns.map((t) => t.session))).toEqual(new Set([3, 4]));
    expect(h2.init).toEqual(h1.init);
    const merged = spawnSync(process.execPath, [cli, 'merge', 'c1.ndjson', 'c2.ndjson', '-o', 'run.ndjson', '--json'], {
      cwd: work,
      encoding: 'utf8',
    });
    expect(merged.status, merged.stderr).toBe(0);
    expect(JSON.parse(merged.stdout)).toMatchObject({
      out: 'run.ndjson',
      sessions: 4,
      renumbered: false,
      files: [
        { file: 'c1.ndjson', sessions: { 1: 1, 2: 2 } },
        { file: 'c2.ndjson', sessions: { 3: 3, 4: 4 } },
      ],
    });
    const h = await readHistory(join(work, 'run.ndjson'));
    expect(h.truncated).toBe(false);
    expect(h.txns.length).toBe(h1.txns.length + h2.txns.length);
    // some read in one file names a write the other process made, and resolves in the merge
    const writes = (x: typeof h1) =>
      new Set(x.txns.flatMap((t) => t.events.flatMap((e) => (e.op === 'select' ? [] : [e.wid]))));
    const reads = (x: typeof h1) =>
      x.txns.flatMap((t) =>
        t.events.flatMap((e) =>
          e.op === 'select' ? e.rows.map((r) => r.wid) : e.rows.map((r) => ('read' in r ? r.read : '')),
        ),
      );
    const [w1, w2] = [writes(h1), writes(h2)];
    expect(reads(h1).some((w) => w2.has(w)) || reads(h2).some((w) => w1.has(w))).toBe(true);
    const checked = spawnSync(process.execPath, [cli, 'check', '--timeout', '20', 'run.ndjson'], {
      cwd: work,
      encoding: 'utf8',
    });
    expect(checked.stdout).toMatch(/CONSISTENT/);
    expect(checked.status, checked.stdout + checked.stderr).toBe(0);

    // the same pair with one initial balance changed in the second file: one line naming file, line, table, column
    const text = readFileSync(join(work, 'c2.ndjson'), 'utf8').split('\n');
    const at = text.findIndex((l) => l.includes('"kind":"init"') && l.includes('"table":"checking"'));
    text[at] = text[at].replace(/"bal":"([0-9.]+)"/, (_m, v: string) => `"bal":"${v}1"`);
    writeFileSync(join(work, 'bad.ndjson'), text.join('\n'));
    const bad = spawnSync(process.execPath, [cli, 'merge', 'c1.ndjson', 'bad.ndjson', '-o', 'bad-run.ndjson'], {
      cwd: work,
      encoding: 'utf8',
    });
    expect(bad.status).toBe(2);
    expect(bad.stderr.trim().split('\n')).toHaveLength(1);
    const limits = spawnSync(
      process.execPath,
      [cli, 'merge', 'c1.ndjson', 'c2.ndjson', '-o', 'limits.ndjson', '--max-line-mb', '1', '--max-input-gb', '0.5'],
      { cwd: work, encoding: 'utf8' },
    );
    expect(limits.status, limits.stderr).toBe(0);
    const badLimit = spawnSync(
      process.execPath,
      [cli, 'merge', 'c1.ndjson', 'c2.ndjson', '-o', 'x.ndjson', '--max-line-mb', 'lots'],
      { cwd: work, encoding: 'utf8' },
    );
    expect([badLimit.status, badLimit.stderr]).toEqual([
      2,
      'isocheck: --max-line-mb lots: expected a number above 0 and at most 511\n',
    ]);
    expect(bad.stderr).toMatch(
      new RegExp(
        `^isocheck: bad\\.ndjson:${at + 1}: initial row of table "checking" with key \\(\\d+\\) differs from ` +
          `c1\\.ndjson:\\d+: column "bal" is "[0-9.]+" there, "[0-9.]+1" here`,
      ),
    );
  }, 60_000);

  it('refuses, in one line with exit 2: client 1 in a database that has the tables, a client of another run, a ' +
    'client that joined already, --check', async () => {
    const url = new URL(server.url);
    url.pathname = '/shared_run'; // used by the test above
    const args = [
      'run',
      'smallbank',
      '--db',
      url.toString(),
      '--iso',
      'ser',
      '--sessions',
      '2',
      '--txns',
      '8',
      '--client-wait',
      '5',
    ];
    const again = await run([...args, '--client', '1/2', '--out', 'again.ndjson']);
    expect(again.code).toBe(2);
    expect(again.stderr).toMatch(
      new RegExp(
        String.raw`^isocheck: client 1\/2 sets up the run, and the database already has \S+ .*--client needs a ` +
          'fresh database per run',
        'm',
      ),
    );
    const other = await run([...args, '--seed', '9', '--client', '2/2', '--out', 'other.ndjson']);
    expect(other.code).toBe(2);
    expect(other.stderr).toMatch(
      new RegExp(
        String.raw`^isocheck: client 2\/2: client 1 runs smallbank --iso ser --scale 1 --seed 1 --sessions 2, ` +
          'this one smallbank --iso ser --scale 1 --seed 9 --sessions 2',
        'm',
      ),
    );
    const db = new pg.Client({ connectionString: url.toString() });
    await db.connect();
    const written = async () =>
      Number((await db.query(`SELECT count(*) FROM checking WHERE ${WID_COLUMN} IS NOT NULL`)).rows[0].count);
    const before = await written();
    expect(before).toBeGreaterThan(0);
    const twice = await run([...args, '--client', '2/2', '--out', 'twice.ndjson']);
    expect(twice.code).toBe(2);
    expect(twice.stderr).toMatch(/^isocheck: client 2\/2: client 2 has already joined this run/m);
    expect(await written()).toBe(before); // refused before instrumenting (which would make the rows initial again)
    await db.end();
    const checked = await run([...args, '--client', '2/2', '--check']);
    expect(checked.code).toBe(2);
    expect(checked.stderr).toMatch(/^isocheck: --client with --check: .*merge the N files/m);
    for (const r of [again, other, twice, checked]) expect(r.stderr).not.toMatch(/internal error|\n\s+at /);
  }, 30_000);
});
