/**
 * Benchmark: what recording costs a real application. The bank example (examples/bank.mjs) written with an ORM
 * (examples/kysely, examples/drizzle) runs against the embedded PostgreSQL (or DATABASE_URL), same seed, each run
 * on a fresh database, the variants alternated round by round (so that the load of a shared machine hits all
 * alike) and the median of the rounds reported:
 *
 *   process runs (wall time of the whole process, as a user sees it):
 *     plain    node examples/<app> --iso L --txns N
 *     hook     the same with the module hook alone (node --import hook.js, ISOCHECK_RECORD_* set): the app recorded
 *     record   isocheck record --out ... --tables accounts -- node examples/<app> ...: the hook plus the CLI's start
 *     each also with --txns 0 (the set-up and the two withdrawals only): the fixed cost of a process, so that
 *     per transaction = (wall(N) - wall(0)) / (workers x N) shows what recording costs once started
 *   in-process runs (the drop-in driver, recorder.driver(), in one warm process; the first round is a warm-up):
 *     plain    makeApp(pg) / driver  makeApp(recorder.driver({ pg, tables: ['accounts'] })): wall and this process's
 *     CPU per transaction (the client's share; the rest of the machine runs the server)
 *
 * `--base DIST` adds the same recorded variants from another build (its compiled folder, e.g. a build of the commit
 * before a change), in the same rounds: before/after in one run. The table goes to --out (bench/results/
 * recorder-overhead.md). READ COMMITTED is the level where retries do not blur the comparison (updates wait for
 * each other instead of aborting); at REPEATABLE READ and SERIALIZABLE the retries (40001) vary from run to run.
 *
 * Run: npm run bench -- recorder [--apps kysely,drizzle] [--isos read-committed,repeatable-read,serializable]
 *        [--txns 100] [--workers 4] [--rounds 5] [--base DIST] [--no-process] [--no-inprocess] [--out FILE]
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import pg from 'pg';
import { openDatabase } from '../src/db/connect.js';
import { UsageError } from './usage-error.js';

interface Options {
  apps: string[];
  isos: string[];
  txns: number;
  workers: number;
  rounds: number;
  base?: string;
  process: boolean;
  inProcess: boolean;
  out: string;
}

/**
 * The repository (examples/ and bench/results/): above the compiled file when it is in the tree, else the working
 * directory.
 */
function repoRoot(): string {
  for (let d = import.meta.dirname; d !== dirname(d); d = dirname(d))
    if (existsSync(join(d, 'examples', 'bank.mjs'))) return d;
  return process.cwd();
}

function parseOptions(args: string[]): Options {
  const o: Options = {
    apps: ['kysely', 'drizzle'],
    isos: ['read-committed', 'repeatable-read', 'serializable'],
    txns: 100,
    workers: 4,
    rounds: 5,
    process: true,
    inProcess: true,
    out: join(repoRoot(), 'bench', 'results', 'recorder-overhead.md'),
  };
  for (let i = 0; i < args.length; i++) {
    const a = args[i];
    const value = (): string => {
      const v = args[++i];
      if (v === undefined) throw new UsageError(`${a} needs a value`);
      return v;
    };
    if (a === '--apps') o.apps = value().split(',');
    else if (a === '--isos') o.isos = value().split(',');
    else if (a === '--txns') o.txns = Number(value());
    else if (a === '--workers') o.workers = Number(value());
    else if (a === '--rounds') o.rounds = Number(value());
    else if (a === '--base') o.base = resolve(value());
    else if (a === '--out') o.out = resolve(value());
    else if (a === '--no-process') o.process = false;
    else if (a === '--no-inprocess') o.inProcess = false;
    else throw new UsageError(`recorder: unknown option ${a}`);
  }
  for (const app of o.apps)
    if (!['kysely', 'drizzle'].includes(app))
      throw new UsageError(`--apps: kysely or drizzle (the ESM examples), not ${app}`);
  for (const iso of o.isos)
    if (!['read-committed', 'repeatable-read', 'serializable'].includes(iso))
      throw new UsageError(`--isos: read-committed, repeatable-read, serializable, not ${iso}`);
  if (!(o.txns > 0 && o.workers > 0 && o.rounds > 0))
    throw new UsageError('--txns, --workers and --rounds are positive numbers');
  return o;
}

/** A build of isocheck: its compiled folder (with src/cli/main.js, src/recorder/hook.js). */
interface Build {
  name: string;
  dist: string;
}

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? NaN : s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

class Databases {
  private n = 0;
  constructor(
    private readonly admin: pg.Client,
    private readonly url: string,
  ) {}
  async fresh(): Promise<string> {
    const name = `recbench_${process.pid}_${++this.n}`;
    await this.admin.query(`CREATE DATABASE ${name}`);
    const u = new URL(this.url);
    u.pathname = `/${name}`;
    return u.toString();
  }
  async dropAll(): Promise<void> {
    for (let i = 1; i <= this.n; i++)
      await this.admin
        .query(`DROP DATABASE IF EXISTS recbench_${process.pid}_${i} WITH (FORCE)`)
        .catch(() => undefined);
  }
}

/** Runs a command to its end: wall milliseconds (it must exit 0). */
function timed(command: string[], env: NodeJS.ProcessEnv, cwd: string): Promise<number> {
  const t0 = performance.now();
  return new Promise((done, fail) => {
    const child = spawn(command[0], command.slice(1), { cwd, env, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.once('error', fail);
    child.once('exit', (code) =>
      code === 0
        ? done(performance.now() - t0)
        : fail(new Error(`${command.join(' ')} exited ${code}: ${stderr.slice(-2000)}`)),
    );
  });
}

interface ProcessVariant {
  name: string;
  /** The command and environment for an app at a level and a number of transactions per worker. */
  command(app: string, iso: string, txns: number, db: string, out: string): { argv: string[]; env: NodeJS.ProcessEnv };
}

function processVariants(builds: Build[], workers: number): ProcessVariant[] {
  const appArgs = (app: string, iso: string, txns: number, workers: number) => [
    join('examples', app, 'app.mjs'),
    '--iso',
    iso,
    '--txns',
    String(txns),
    '--workers',
    String(workers),
  ];
  const baseEnv = (db: string): NodeJS.ProcessEnv => {
    const env: NodeJS.ProcessEnv = { ...process.env, DATABASE_URL: db };
    delete env.ISOCHECK_RECORD_OUT;
    delete env.ISOCHECK_RECORD_PID;
    return env;
  };
  const out: ProcessVariant[] = [
    {
      name: 'plain',
      command: (app, iso, txns, db) => ({
        argv: [process.execPath, ...appArgs(app, iso, txns, workers)],
        env: baseEnv(db),
      }),
    },
  ];
  for (const b of builds) {
    const suffix = b.name === 'this' ? '' : `@${b.name}`;
    out.push({
      name: `hook${suffix}`,
      command: (app, iso, txns, db, file) => ({
        argv: [
          process.execPath,
          `--import=${pathToFileURL(join(b.dist, 'src', 'recorder', 'hook.js')).href}`,
          ...appArgs(app, iso, txns, workers),
        ],
        env: { ...baseEnv(db), ISOCHECK_RECORD_OUT: file, ISOCHECK_RECORD_TABLES: 'accounts' },
      }),
    });
    out.push({
      name: `record${suffix}`,
      command: (app, iso, txns, db, file) => ({
        argv: [
          process.execPath,
          join(b.dist, 'src', 'cli', 'main.js'),
          'record',
          '--out',
          file,
          '--tables',
          'accounts',
          '--',
          process.execPath,
          ...appArgs(app, iso, txns, workers),
        ],
        env: baseEnv(db),
      }),
    });
  }
  return out;
}

interface Bank {
  runBank(
    app: unknown,
    options: { iso: string; workers: number; txns: number; seed: number },
  ): Promise<{ results: unknown; retries: number }>;
}
interface App {
  close(): Promise<void>;
}
type MakeApp = (driver: unknown, url: string) => App;
interface RecorderModule {
  Recorder: new (options: {
    file: string;
    onWarning?: (m: string) => void;
  }) => { driver(o: { pg: unknown; tables: string[] }): unknown; finish(): void };
}

interface Sample {
  ms: number;
  cpuMs: number;
  retries: number;
}

/** Lines of the report, also printed as they come. */
class Report {
  readonly lines: string[] = [];
  add(line = ''): void {
    this.lines.push(line);
    console.log(line);
  }
}

const isoName = (iso: string): string => iso.replace(/-/g, ' ');
const fmt = (x: number, digits = 0): string => (Number.isFinite(x) ? x.toFixed(digits) : '-');

export async function runRecorderAppBench(args: string[]): Promise<void> {
  const o = parseOptions(args);
  const root = repoRoot();
  const builds: Build[] = [{ name: 'this', dist: resolve(import.meta.dirname, '..') }];
  if (o.base) {
    if (!existsSync(join(o.base, 'src', 'recorder', 'hook.js')))
      throw new UsageError(
        `--base ${o.base}: no src/recorder/hook.js there (give a compiled folder, as tsc --outDir writes it)`,
      );
    builds.push({ name: 'base', dist: o.base });
  }
  const db = await openDatabase({});
  const admin = new pg.Client({ connectionString: db.url });
  await admin.connect();
  const dbs = new Databases(admin, db.url);
  const dir = mkdtempSync(join(tmpdir(), 'isocheck-recbench-'));
  const report = new Report();
  let runs = 0;
  try {
    report.add('# Recording overhead on an ORM application');
    report.add();
    report.add(
      `Written by \`npm run bench -- recorder ${args.join(' ')}\` ` +
        `on ${new Date().toISOString().slice(0, 10)}: ${db.description}, ` +
        `Node ${process.version}, ${cpus().length} CPUs (${cpus()[0]?.model ?? '?'}). `,
    );
    report.add(
      `The bank example (examples/bank.mjs: transfers and audits, ${o.workers} workers x ${o.txns} ` +
        `transactions, seed 1), a fresh database per run, variants alternated round by round, medians ` +
        `of ${o.rounds} rounds${o.base ? `; \`@base\` is the build at ${o.base}` : ''}.`,
    );
    report.add();
    if (o.process) {
      const variants = processVariants(builds, o.workers);
      report.add('## Whole processes (wall time as a user sees it)');
      report.add();
      report.add(
        '`plain`: `node examples/<app>/app.mjs`; `hook`: with the module hook only (`node --import hook.js`, ' +
          'the ISOCHECK_RECORD_* variables set); `record`: `isocheck record -- node examples/<app>/app.mjs` (the ' +
          "hook and the CLI's own start). `fixed`: the same with `--txns 0` (start-up, set-up, the two " +
          'withdrawals); `per txn`: (wall - fixed) / transactions.',
      );
      report.add();
      report.add(`| app | level | variant | wall ms | x plain | fixed ms | per txn ms | x plain per txn |`);
      report.add(`|---|---|---|---|---|---|---|---|`);
      for (const app of o.apps) {
        // the fixed cost of a process: --txns 0
        const fixed = new Map<string, number[]>();
        for (let r = 0; r < o.rounds; r++) {
          for (const v of r % 2 ? [...variants].reverse() : variants) {
            const c = v.command(app, 'read-committed', 0, await dbs.fresh(), join(dir, `f${++runs}.ndjson`));
            const ms = await timed(c.argv, c.env, root);
            fixed.set(v.name, [...(fixed.get(v.name) ?? []), ms]);
          }
        }
        for (const iso of o.isos) {
          const walls = new Map<string, number[]>();
          for (let r = 0; r < o.rounds; r++) {
            for (const v of r % 2 ? [...variants].reverse() : variants) {
              const c = v.command(app, iso, o.txns, await dbs.fresh(), join(dir, `p${++runs}.ndjson`));
              const ms = await timed(c.argv, c.env, root);
              walls.set(v.name, [...(walls.get(v.name) ?? []), ms]);
            }
          }
          const n = o.workers * o.txns;
          const plainWall = median(walls.get('plain')!);
          const plainPer = (plainWall - median(fixed.get('plain')!)) / n;
          for (const v of variants) {
            const wall = median(walls.get(v.name)!);
            const f = median(fixed.get(v.name)!);
            const per = (wall - f) / n;
            report.add(
              `| ${app} | ${isoName(iso)} | ${v.name} | ${fmt(wall)} | ${fmt(wall / plainWall, 2)} ` +
                `| ${fmt(f)} | ${fmt(per, 3)} | ${fmt(per / plainPer, 2)} |`,
            );
          }
        }
      }
      report.add();
    }
    if (o.inProcess) {
      report.add('## In one process (the drop-in driver, `recorder.driver()`; warm: the first round is not counted)');
      report.add();
      report.add(
        "`per txn`: wall / transactions; `client CPU per txn`: this process's CPU (the ORM, pg, the recorder) " +
          "/ transactions; the server's work is the rest.",
      );
      report.add();
      report.add(
        `| app | level | variant | wall ms | x plain | per txn ms | client CPU per txn ms | x plain CPU | retries |`,
      );
      report.add(`|---|---|---|---|---|---|---|---|---|`);
      const bank = (await import(pathToFileURL(join(root, 'examples', 'bank.mjs')).href)) as Bank;
      const recorders = await Promise.all(
        builds.map(async (b) => ({
          build: b,
          module: (await import(pathToFileURL(join(b.dist, 'src', 'recorder', 'index.js')).href)) as RecorderModule,
        })),
      );
      for (const app of o.apps) {
        const makeApp = (
          (await import(pathToFileURL(join(root, 'examples', app, 'app.mjs')).href)) as { makeApp: MakeApp }
        ).makeApp;
        const variants: { name: string; driver: () => { pg: unknown; finish(): void } }[] = [
          { name: 'plain', driver: () => ({ pg, finish: () => undefined }) },
          ...recorders.map(({ build, module }) => ({
            name: build.name === 'this' ? 'driver' : `driver@${build.name}`,
            driver: () => {
              const rec = new module.Recorder({ file: join(dir, `i${++runs}.ndjson`), onWarning: () => undefined });
              return { pg: rec.driver({ pg, tables: ['accounts'] }), finish: () => rec.finish() };
            },
          })),
        ];
        for (const iso of o.isos) {
          const samples = new Map<string, Sample[]>();
          for (let r = 0; r <= o.rounds; r++) {
            for (const v of r % 2 ? [...variants].reverse() : variants) {
              const url = await dbs.fresh();
              const d = v.driver();
              const a = makeApp(d.pg, url);
              const c0 = process.cpuUsage();
              const t0 = performance.now();
              const { retries } = await bank.runBank(a, {
                iso: isoName(iso),
                workers: o.workers,
                txns: o.txns,
                seed: 1,
              });
              const ms = performance.now() - t0;
              const cpu = process.cpuUsage(c0);
              await a.close();
              d.finish();
              if (r > 0)
                samples.set(v.name, [
                  ...(samples.get(v.name) ?? []),
                  { ms, cpuMs: (cpu.user + cpu.system) / 1000, retries },
                ]);
            }
          }
          const n = o.workers * o.txns;
          const plain = samples.get('plain')!;
          for (const v of variants) {
            const s = samples.get(v.name)!;
            const wall = median(s.map((x) => x.ms));
            const cpuMs = median(s.map((x) => x.cpuMs));
            report.add(
              `| ${app} | ${isoName(iso)} | ${v.name} | ${fmt(wall)} ` +
                `| ${fmt(wall / median(plain.map((x) => x.ms)), 2)} | ${fmt(wall / n, 3)} | ${fmt(cpuMs / n, 3)} ` +
                `| ${fmt(cpuMs / median(plain.map((x) => x.cpuMs)), 2)} ` +
                `| ${fmt(median(s.map((x) => x.retries)))} |`,
            );
          }
        }
      }
      report.add();
    }
    mkdirSync(dirname(o.out), { recursive: true });
    writeFileSync(o.out, `${report.lines.join('\n')}\n`);
    console.log(`written to ${o.out}`);
  } finally {
    await dbs.dropAll();
    await admin.end();
    rmSync(dir, { recursive: true, force: true });
    await db.close();
  }
}
