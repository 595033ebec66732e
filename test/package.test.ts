// The package as a user installs it: `npm pack` of the project (built from its sources), installed into a fresh
// project in a private temp folder (mode 0700, as `mktemp -d` makes), then the installed CLI (`npx isocheck
// check` on a known history: exit 1 with the anomaly) and a TypeScript program importing `isocheck`,
// `isocheck/recorder` and `isocheck/db` that type-checks under `strict` (library types checked too) and runs:
// it records a transaction and a join on the embedded server through the application's own `pg`, gets a typed
// refusal for a data-modifying WITH, and checks what it recorded.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFileSync, spawnSync } from 'node:child_process';
import {
  cpSync,
  existsSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

const root = resolve(import.meta.dirname, '..');
const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc');
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
let work: string;
let project: string;
let tarball: string;
let packed: string[] = [];

const PROGRAM = `
import pg from 'pg';
import { check, readHistory, renderResult, resultJson, HistoryFormatError, InputError, EXIT, levelBoundary,
  type Anomaly, type CheckResult, type History, type IsolationLevel, type LevelBoundary, type Verdict } from 'isocheck';
import { Recorder, UnsupportedStatementError, type RecordingPool } from 'isocheck/recorder';
import { startEmbedded, type EmbeddedServer } from 'isocheck/db';

const [known, bad, out] = process.argv.slice(2);
const report: Record<string, unknown> = {};

// checking a file: the async check() loads what it needs
const result: CheckResult = await check(known);
const verdict: Verdict = result.verdict;
const first: Anomaly | undefined = result.anomalies[0];
const exit = verdict === 'inconsistent' ? EXIT.inconsistent : EXIT.consistent;
report.known = { verdict, anomaly: first?.type, exit };
report.rendered = renderResult(known, result).split('\\n')[0];
report.json = Object.keys(resultJson(known, result));
const asSer = await check(known, { iso: 'SER' });
report.levels = [...new Set<IsolationLevel>((await readHistory(known)).txns.map((t) => t.iso))];
report.asSer = asSer.verdict;
// the level boundary (check --levels)
const boundary: LevelBoundary = await levelBoundary(await readHistory(known));
report.strongest = boundary.strongest ?? 'none';

// a malformed file: a typed error with file and line
try {
  await check(bad);
  report.bad = 'no error';
} catch (e) {
  report.bad =
    e instanceof HistoryFormatError ? { file: e.file, line: e.line, isInput: e instanceof InputError } : String(e);
}

// recording through the application's own pg
const server: EmbeddedServer = await startEmbedded();
try {
  const setup = new pg.Client({ connectionString: server.url });
  await setup.connect();
  await setup.query('CREATE TABLE accounts (id int PRIMARY KEY, bal int NOT NULL)');
  await setup.query('CREATE TABLE owners (id int PRIMARY KEY, name text)');
  await setup.query('INSERT INTO accounts VALUES (1, 100), (2, 50)');
  const recorder = new Recorder({ file: out, meta: { app: 'package-test' } });
  await recorder.instrument(setup, ['accounts', 'owners']);
  await setup.end();
  const pool: RecordingPool = recorder.pool(new pg.Pool({ connectionString: server.url, max: 2 }));
  const c = await pool.connect();
  await c.query('BEGIN ISOLATION LEVEL SERIALIZABLE');
  const r = await c.query<{ bal: number }>('SELECT bal FROM accounts WHERE id = $1', [1]);
  await c.query('UPDATE accounts SET bal = $1 WHERE id = $2', [r.rows[0].bal - 10, 1]);
  await c.query('UPDATE accounts SET bal = bal + 10 WHERE id = $1', [2]);
  await c.query('COMMIT');
  const joined = await c.query('SELECT a.bal FROM accounts a JOIN owners o ON o.id = a.id');
  report.join = { rows: joined.rows.length, fields: joined.fields.map((f) => f.name) };
  try {
    await c.query('WITH gone AS (DELETE FROM owners RETURNING id) SELECT count(*) FROM gone');
    report.refused = 'recorded';
  } catch (e) {
    report.refused =
      e instanceof UnsupportedStatementError ? { sql: e.sql, reason: e.reason, hint: e.hint.length > 0 } : String(e);
  }
  c.release();
  await pool.end();
  recorder.finish();
} finally {
  await server.stop();
}
const history: History = await readHistory(out);
const recorded = await check(history);
report.recorded = { verdict: recorded.verdict, transactions: history.txns.length, iso: history.txns[0]?.iso };
console.log(JSON.stringify(report));
`;

beforeAll(() => {
  work = mkdtempSync(join(tmpdir(), 'isocheck-package-'));
  // the package, built from the sources in a staging copy (the suite's other tests use dist/ meanwhile)
  const stage = join(work, 'stage');
  for (const f of ['package.json', 'README.md', 'LICENSE', 'tsconfig.json', 'tsconfig.build.json'])
    cpSync(join(root, f), join(stage, f));
  for (const d of ['bin', 'scripts', 'src', 'workloads', 'bench', 'docs'])
    cpSync(join(root, d), join(stage, d), { recursive: true });
  symlinkSync(join(root, 'node_modules'), join(stage, 'node_modules'));
  // npm pack runs `prepare` (scripts/build.mjs: a clean build, without source maps when packing)
  const packOut = execFileSync(npm, ['pack', '--json', '--pack-destination', work], {
    cwd: stage,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const info = JSON.parse(packOut.slice(packOut.indexOf('['))) as { filename: string; files: { path: string }[] }[];
  tarball = join(work, info[0].filename);
  packed = info[0].files.map((f) => f.path);
  // a fresh project in a private folder
  project = mkdtempSync(join(tmpdir(), 'isocheck-consumer-'));
  writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'consumer', private: true, type: 'module' }));
  const install = spawnSync(
    npm,
    [
      'install',
      '--prefer-offline',
      '--no-audit',
      '--no-fund',
      '--loglevel=error',
      tarball,
      `pg@${readPkg().devDependencies.pg}`,
    ],
    {
      cwd: project,
      encoding: 'utf8',
      timeout: 300_000,
    },
  );
  if (install.status !== 0) throw new Error(`npm install of the tarball failed: ${install.stderr}`);
}, 400_000);

afterAll(() => {
  for (const d of [work, project]) if (d) rmSync(d, { recursive: true, force: true });
});

function readPkg(): { devDependencies: Record<string, string> } {
  return JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
}

describe('the packed package', () => {
  it('ships the compiled code, types, docs and license, and no tests, histories or benchmarks', () => {
    expect(packed).toContain('dist/src/index.js');
    expect(packed).toContain('dist/src/index.d.ts');
    expect(packed).toContain('dist/src/recorder/index.d.ts');
    expect(packed).toContain('dist/src/db/index.d.ts');
    expect(packed).toContain('dist/src/cli/main.js');
    expect(packed).toContain('dist/src/cli/entry.js'); // bin/isocheck.js imports it
    expect(packed).toContain('docs/semantics.md');
    expect(packed).toContain('LICENSE');
    expect(
      packed.filter((f) => /^(test|histories|bench|dist\/bench|dist\/test)\//.test(f) || f.endsWith('.map')),
    ).toEqual([]);
    // a bound against shipping something unintended (each module is a .js and a .d.ts): 328 on 25 November
    expect(packed.length).toBeLessThan(400);
    // no compiled module points at a source map the package does not hold
    const index = readFileSync(join(project, 'node_modules', 'isocheck', 'dist', 'src', 'index.js'), 'utf8');
    expect(index).not.toMatch(/sourceMappingURL/);
  });

  it('installed: npx isocheck check on a known history exits 1 and names the anomaly', () => {
    const r = spawnSync(
      'npx',
      ['--no', 'isocheck', 'check', join(root, 'histories', 'known', 'lost-update.SI.ndjson')],
      { cwd: project, encoding: 'utf8', timeout: 120_000 },
    );
    expect(r.stderr).not.toMatch(/\n\s+at /);
    expect(r.status, r.stdout + r.stderr).toBe(1);
    expect(r.stdout).toMatch(/LOST UPDATE \[violates SI\]/);
  });

  it('installed: a strict TypeScript program importing isocheck, isocheck/recorder and isocheck/db type-checks ' +
    'and runs', () => {
    writeFileSync(join(project, 'main.ts'), PROGRAM);
    writeFileSync(
      join(project, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          target: 'ES2022',
          module: 'NodeNext',
          moduleResolution: 'NodeNext',
          strict: true,
          skipLibCheck: false,
          outDir: 'out',
          types: ['node'],
        },
        files: ['main.ts'],
      }),
    );
    // @types/node comes with the package's dependencies (@types/pg needs it)
    expect(existsSync(join(project, 'node_modules', '@types', 'node'))).toBe(true);
    const compiled = spawnSync(process.execPath, [tsc, '-p', 'tsconfig.json'], { cwd: project, encoding: 'utf8' });
    expect(compiled.stdout + compiled.stderr).toBe('');
    expect(compiled.status).toBe(0);
    const bad = join(project, 'bad.ndjson');
    writeFileSync(
      bad,
      '{"kind":"history","format":"isocheck-history","version":1,"meta":{}}\n' +
        '{"kind":"table","name":"t","key":["id"],"columns":{"id":"int4"}}\n{"kind":"txn"}\n',
    );
    const run = spawnSync(
      process.execPath,
      [
        join(project, 'out', 'main.js'),
        join(root, 'histories', 'known', 'lost-update.SI.ndjson'),
        bad,
        join(project, 'run.ndjson'),
      ],
      {
        cwd: project,
        encoding: 'utf8',
        timeout: 180_000,
      },
    );
    expect(run.status, run.stdout + run.stderr).toBe(0);
    const report = JSON.parse(run.stdout.trim().split('\n').at(-1)!);
    expect(report.known).toEqual({ verdict: 'inconsistent', anomaly: 'lost-update', exit: 1 });
    expect(report.rendered).toMatch(/lost-update\.SI\.ndjson: INCONSISTENT/);
    expect(report.json).toEqual(expect.arrayContaining(['file', 'verdict', 'anomalies', 'notes', 'stats']));
    expect(report.levels).toEqual(['SI']);
    expect(report.asSer).toBe('inconsistent');
    expect(report.strongest).toBe('PC'); // lost-update.SI: consistent up to PC, not at SI
    expect(report.bad).toEqual({ file: bad, line: 3, isInput: true });
    expect(report.join).toEqual({ rows: 0, fields: ['bal'] });
    expect(report.refused).toMatchObject({
      sql: 'WITH gone AS (DELETE FROM owners RETURNING id) SELECT count(*) FROM gone',
      hint: true,
    });
    expect(report.refused.reason).toMatch(/WITH/i);
    expect(report.recorded).toEqual({ verdict: 'consistent', transactions: 2, iso: 'SER' });
    expect(readdirSync(project)).toContain('run.ndjson');
  }, 240_000);
});
