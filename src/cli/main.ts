/**
 * The `isocheck` command line: parses arguments, calls the typed command functions, maps errors to exit
 * codes (2 for the user's, a bug report request for ours). Heavy modules load lazily per command.
 */
import { Command, CommanderError } from 'commander';
import { InputError } from '../history/input-errors.js';
import { parseMemorySize } from '../checker/budget.js';
import { parseClient } from './run-clients.js';

// `isocheck ... | head` closes stdout early: that is not an error.
process.stdout.on('error', (e: NodeJS.ErrnoException) => {
  if (e.code === 'EPIPE') process.exit(process.exitCode ?? 0);
  throw e;
});

const program = new Command();

/** A number of seconds greater than 0 (`--timeout`), else the option's name and value in one line (exit 2). */
const positiveSeconds = (name: string) => (v: string) => {
  const n = Number(v);
  if (!Number.isFinite(n) || n <= 0) throw new InputError(`${name} ${v}: expected a positive number of seconds`);
  return n;
};

program
  .name('isocheck')
  .description(
    'Checks whether a SQL database gave each transaction the isolation level it asked for, by recording ' +
      'client histories and checking them against the axioms of each level (RC, RA, CC, PC, SI, SER).',
  )
  .version('0.1.0')
  .exitOverride()
  .configureOutput({ outputError: (str, write) => write(str) });

program
  .command('check')
  .description(
    "check recorded histories (NDJSON, optionally .gz) for consistency with each transaction's isolation level",
  )
  .argument('<files...>', 'history files (.ndjson, .ndjson.gz, a named pipe, or - for standard input, plain or gzip)')
  .option(
    '--iso <config>',
    'check at other levels than recorded: "SER" for all, or "Label=LEVEL,...,*=LEVEL" by transaction label',
  )
  .option(
    '--timeout <seconds>',
    'stop the search after this many seconds and report "unknown"',
    positiveSeconds('--timeout'),
  )
  .option('--json', 'print JSON: {file, verdict, anomalies, commitOrder?, stats} (an array for several files)')
  .option(
    '--levels',
    'report the level boundary: which levels hold with every transaction at one level (RC ✓ RA ✓ CC ✗ ...), ' +
      'the strongest, and with labels a strongest configuration by label (exit 0 when all are decided)',
  )
  .option('--check-aborted-reads', 'also check well-formedness of what aborted transactions read')
  .option('--no-shrink', 'do not search for a small inconsistent sub-history to explain a verdict')
  .option(
    '--report <file>',
    'also write a self-contained HTML report (verdict, explanation graph, timeline; with --levels the level ' +
      'boundary) to this file; with several histories, FILE.<history>.html each',
  )
  .option(
    '--max-line-mb <n>',
    'refuse a history with a line longer than this many MiB (default 64, at most 511)',
    (v) => {
      const n = Number(v);
      if (!Number.isFinite(n) || n <= 0 || n > 511)
        throw new InputError(`--max-line-mb ${v}: expected a number of MiB above 0 and at most 511`);
      return n;
    },
  )
  .option('--max-input-gb <n>', 'refuse a history larger than this many GiB after decompression (default 16)', (v) => {
    const n = Number(v);
    if (!Number.isFinite(n) || n <= 0 || n > 1024 * 1024)
      throw new InputError(`--max-input-gb ${v}: expected a positive number of GiB`);
    return n;
  })
  .option(
    '--max-memory <size>',
    'stop with "unknown" when reading or checking would hold more than this in memory: MB, or a size such as ' +
      "512MB, 4GB (default: V8's heap limit less 10%, and 85% of physical memory)",
    (v) => parseMemorySize(v),
  )
  .addHelpText(
    'after',
    `
Input:
  A history is read as it streams: a file, a named pipe, or - for standard input (gzip or not, told by
  its first bytes). Limits keep hostile files from exhausting memory or time; raise them for huge histories:
  --max-line-mb     longest line (default 64 MiB; the recorder writes one transaction per line)
  --max-input-gb    total size after decompression (default 16 GiB)

Levels (weakest first; each transaction is judged by its own level):
  RC   Read Committed      (PostgreSQL READ COMMITTED)
  RA   Read Atomic
  CC   Causal Consistency
  PC   Prefix Consistency
  SI   Snapshot Isolation  (PostgreSQL REPEATABLE READ)
  SER  Serializability     (PostgreSQL SERIALIZABLE)

The level boundary with --levels (each level with its commit order or its anomaly):
  isocheck check run.ndjson --levels                        RC ✓ RA ✓ CC ✓ PC ✓ SI ✗ SER ✗, strongest PC,
                                                            by label e.g. NewOrder=SER,Payment=SI,*=PC
  isocheck check run.ndjson --levels --report levels.html   the same in the HTML report, each anomaly drawn

What-if checks with --iso:
  isocheck check run.ndjson --iso SER                       would this run have been serializable?
  isocheck check run.ndjson --iso Payment=SER,NewOrder=SER,*=RC

Memory:
  A check that would outgrow its memory stops with "unknown" (exit 3) and a reason saying so (the "reason" of
  --json): "stopped: memory limit of 2,048 MB (--max-memory) reached while finding conflicts: 2,049 MB in use ...".
  The limit covers the JavaScript heap and the typed arrays (n x n bitsets: 200 MB each at 40,000 transactions).
  The heap alone also stays under V8's own limit less 10%: NODE_OPTIONS=--max-old-space-size=MB raises that.
  Named history files of 512 MB or more (gzip: 64 MB) are checked in a child Node process with a larger young
  generation (faster at a million transactions, docs/scale.md); ISOCHECK_RESPAWN=0 checks them in this process.

Exit status:
  0  every history is consistent (the output gives a witness commit order with --json)
  1  some history is inconsistent (the output names the anomaly and explains it)
  2  bad input or usage (malformed file, unknown option)
  3  some history could not be decided within --timeout or --max-memory (and none is inconsistent)

Examples:
  isocheck check histories/known/lost-update.SI.ndjson
  isocheck check --json --timeout 60 histories/runs/*.ndjson.gz
  zcat run.ndjson.gz | isocheck check -`,
  )
  .action(async (files: string[], opts) => {
    const { runCheckCommand } = await import('./check-command.js');
    process.exitCode = await runCheckCommand(files, opts);
  });

const positiveInt = (name: string) => (v: string) => {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1) throw new InputError(`${name} ${v}: expected a positive integer`);
  return n;
};

program
  .command('run')
  .description(
    'run a benchmark workload on PostgreSQL, record its client history, check invariants (and the history ' +
      'with --check)',
  )
  .argument('<workload>', 'tpcc, tpcc-pc, twitter or smallbank')
  .option('--db <url>', 'use this PostgreSQL server (default: $DATABASE_URL, else a throwaway embedded one)')
  .option('--sessions <n>', 'concurrent clients (default 3, 8 with --topology)', positiveInt('--sessions'))
  .option('--txns <n>', 'transactions per session (exact; default 10, 100 with --topology)', positiveInt('--txns'))
  .option('--seed <s>', 'seed for every random choice (data and clients)', '1')
  .option(
    '--iso <config>',
    'isolation configuration: ser, si, rc, ser+rc, si+rc, or Type=LEVEL,...,*=LEVEL (SER, SI, RC)',
    'ser',
  )
  .option(
    '--declare <config>',
    'record these levels as declared instead of the ones run (simulates a database that promises more than it gives)',
  )
  .option('--scale <n>', 'workload size (1 is small and contended)', positiveInt('--scale'), 1)
  .option('--out <file>', 'history file (default under histories/runs/)')
  .option(
    '--topology <kind>',
    'run on a cluster of embedded servers isocheck builds: replica (a primary and hot standbys; read-only ' +
      'transactions go to a standby), shards (a postgres_fdw coordinator and shards), pgpool (needs pgpool-II)',
  )
  .option('--standbys <n>', 'with --topology replica: hot standbys (default 1)', positiveInt('--standbys'))
  .option(
    '--apply-delay <ms>',
    'with --topology replica: recovery_min_apply_delay of the standbys in ms (default 100)',
    (v) => {
      const n = Number(v);
      if (!Number.isInteger(n) || n < 0)
        throw new InputError(`--apply-delay ${v}: expected milliseconds, an integer >= 0`);
      return n;
    },
  )
  .option('--shards <n>', 'with --topology shards: shards (default 2)', positiveInt('--shards'))
  .option(
    '--replica <url>',
    'your own cluster: a hot standby of the primary given with --db, to route read-only transactions to ' +
      '(repeatable; implies --topology replica)',
    (v: string, prev: string[] = []) => [...prev, v],
  )
  .option('--check', 'check the history right after the run')
  .option('--report <file>', 'check the history and write a self-contained HTML report to this file (implies --check)')
  .option('--timeout <seconds>', 'time limit of the check', positiveSeconds('--timeout'), 60)
  .option('--json', 'print the run summary (and check result) as JSON')
  .option(
    '--keep-db',
    "keep the run's database on the server afterwards (its name is printed and in the history's header, " +
      'meta.runDatabase)',
  )
  .option(
    '--client <K/N>',
    'run as client process K of N against the database of --db (a fresh one: client 1 creates the schema; all ' +
      'start together); merge the N files with isocheck merge',
    parseClient,
  )
  .option(
    '--client-wait <seconds>',
    'with --client: how long to wait for the other clients (default 120)',
    positiveInt('--client-wait'),
  )
  .addHelpText(
    'after',
    `
Interrupting (Ctrl-C, SIGTERM): the clients stop, each transaction in flight is written (unknown when its COMMIT
was sent, else aborted), the history gets its end line, and isocheck exits 130 (SIGINT) or 143 (SIGTERM) with
one line saying what the file holds. A database that goes away mid-run: one line, exit 2, the history kept.

Examples:
  isocheck run tpcc --iso ser+rc --check                  NewOrder/Payment SERIALIZABLE, the rest READ COMMITTED
  isocheck run smallbank --iso si --declare ser --check   snapshot isolation declared serializable: write skew
  isocheck run twitter --sessions 5 --txns 20 --seed 7 --out tw.ndjson`,
  )
  .action(async (workload: string, opts) => {
    const { runCommand } = await import('./run-command.js');
    process.exitCode = await runCommand(workload, opts);
  });

program
  .command('merge')
  .description(
    'join the histories several client processes recorded against one database into one history (sessions ' +
      'kept apart, tables and initial rows checked identical)',
  )
  .argument('<files...>', 'history files (.ndjson or .ndjson.gz), e.g. from isocheck run --client K/N')
  .requiredOption('-o, --out <file>', 'the merged history (.ndjson, or .ndjson.gz)')
  .option(
    '--json',
    'print JSON: {out, files: [{file, transactions, sessions: {old: new}, truncated}], transactions, sessions}',
  )
  .option('--max-line-mb <n>', 'refuse an input with a line longer than this many MiB (default 64, at most 511)')
  .option('--max-input-gb <n>', 'refuse an input larger than this many GiB after decompression (default 16)')
  .addHelpText(
    'after',
    `
Example (two client processes of one run, then the check):
  isocheck run smallbank --db postgres://host/bank --client 1/2 --out c1.ndjson   (on one machine)
  isocheck run smallbank --db postgres://host/bank --client 2/2 --out c2.ndjson   (on another)
  isocheck merge c1.ndjson c2.ndjson -o run.ndjson && isocheck check run.ndjson`,
  )
  .action(async (files: string[], opts) => {
    const { runMergeCommand } = await import('./merge-command.js');
    process.exitCode = await runMergeCommand(files, opts);
  });

program
  .command('scenario')
  .description(
    "run PostgreSQL isolation-tester specs (every permutation, or --permutation N), record each run's history " +
      'and check it',
  )
  .argument('<specs...>', 'isolation-tester spec files (.spec)')
  .option(
    '--db <url>',
    'PostgreSQL server (default: DATABASE_URL, else a throwaway embedded PostgreSQL); each spec runs in a ' +
      'fresh database created there',
  )
  .option('--iso <config>', 'check at other levels than recorded: "SER" for all, or "*=LEVEL"')
  .option(
    '--json',
    'print JSON: an array of {spec, permutation, steps, file, verdict, anomalies, commitOrder?, stats, errors}',
  )
  .option(
    '--timeout <seconds>',
    'stop each check after this many seconds and report "unknown"',
    positiveSeconds('--timeout'),
  )
  .option(
    '--out <dir>',
    'directory for the histories, <spec>-<permutation>.ndjson (default: a new temp directory, printed)',
  )
  .option('--permutation <n>', 'run only permutation N (1-based, as numbered in the output) of each spec', (v) => {
    const n = Number(v);
    if (!Number.isInteger(n) || n < 1) throw new InputError(`--permutation ${v}: expected a positive integer`);
    return n;
  })
  .option('--verbose', "print each permutation's steps, results, waits and errors as the isolation tester does")
  .option(
    '--topology <kind>',
    'run on a cluster of embedded servers: shards (every session through a postgres_fdw coordinator, the ' +
      'tables sharded by key) or replica (sessions that only read on a hot standby)',
  )
  .option('--standbys <n>', 'with --topology replica: hot standbys (default 1)', positiveInt('--standbys'))
  .option('--shards <n>', 'with --topology shards: shards (default 2)', positiveInt('--shards'))
  .addHelpText(
    'after',
    `
Exit status (as isocheck check):
  0  every permutation's history is consistent
  1  some history is inconsistent
  2  bad input, or some permutation could not be recorded (the recorder refused a statement or a table), or the
     database went away (the permutation being recorded is kept, with what was in flight)
  3  some history could not be decided within --timeout
  130/143  interrupted (SIGINT/SIGTERM): the permutation being recorded is kept (in-flight transactions written
     unknown when their COMMIT was sent, else aborted); one line says where

Examples:
  isocheck scenario test/scenarios/hermitage/*.spec
  isocheck scenario --iso SER test/scenarios/hermitage/g2-item.rr.spec    write skew: SI, not SER
  isocheck scenario postgresql/src/test/isolation/specs/read-only-anomaly.spec   PostgreSQL's own suite
  isocheck scenario --topology shards test/scenarios/topology/transfer.ser.spec   a fractured read at SERIALIZABLE`,
  )
  .action(async (files: string[], opts) => {
    const { runScenarioCommand } = await import('./scenario-command.js');
    process.exitCode = await runScenarioCommand(files, opts);
  });

program
  .command('record')
  .description(
    'run a Node.js application unmodified and record its PostgreSQL transactions (every pg it loads records)',
  )
  .argument('<command...>', 'the application, after --: node app.js, npm start, npx tsx app.ts, ...')
  .requiredOption('--out <file>', 'history file to write (.ndjson, or .ndjson.gz)')
  .requiredOption(
    '--tables <list>',
    'tables to record, comma-separated (each needs a primary key or a unique NOT NULL index)',
  )
  .option(
    '--db <url>',
    'the database the application uses: given to it as DATABASE_URL and PGHOST, PGPORT, PGUSER, PGPASSWORD, PGDATABASE',
  )
  .addHelpText(
    'after',
    `
How it works:
  The command runs with NODE_OPTIONS=--import <isocheck's hook>, so the application's own pg (require('pg') or
  import pg from 'pg', also inside knex, TypeORM, Sequelize, drizzle, kysely) is replaced by a recording driver
  with the same API. Nothing in the application changes. The tables are instrumented (a hidden write-id column,
  their rows written as the initial state) on the first statement that reads or writes once they all exist, so
  an application that creates its schema first is recorded from then on. Statements the recorder cannot trace
  fail with an error saying why (see README, "Recording your own application").

Ending:
  When the application exits the history gets its end line (transactions still open are written unknown if their
  COMMIT was sent, else aborted) and one line says what it holds. Ctrl-C and SIGTERM do the same before the
  application ends (when it handles the signal itself, when it exits). The exit status is the application's.
  One process records: the first that loads pg (not its children).

Examples:
  isocheck record --out run.ndjson --tables accounts -- node app.js
  isocheck check run.ndjson                          consistent at the levels the application ran at?
  isocheck check --iso SER run.ndjson                would it have been serializable?
  isocheck record --out shop.ndjson --tables orders,order_lines,stock --db postgres://localhost/shop -- npm start
  DATABASE_URL=postgres://localhost/bank isocheck record --out bank.ndjson --tables accounts -- ` +
      `node examples/knex/app.cjs --iso repeatable-read`,
  )
  .action(async (command: string[], opts) => {
    const { runRecordCommand } = await import('./record-command.js');
    process.exitCode = await runRecordCommand(command, opts);
  });

program
  .command('proxy')
  .description('a PostgreSQL server for clients in any language (psql, JDBC, psycopg2, ...) that records what they run')
  .requiredOption('--out <file>', 'history file to write (.ndjson, or .ndjson.gz)')
  .requiredOption(
    '--tables <list>',
    'tables to record, comma-separated (each needs a primary key or a unique NOT NULL index)',
  )
  .option('--db <url>', 'the server to connect to (default: start the embedded one)')
  .option('--listen <host:port>', 'where clients connect (trust authentication: keep it on loopback)', '127.0.0.1:6543')
  .option('--tls-cert <file>', 'certificate (PEM) for clients connecting with TLS (sslmode=require); with --tls-key')
  .option('--tls-key <file>', 'private key (PEM) of --tls-cert')
  .option(
    '--on-unsupported <what>',
    'a statement the recorder cannot record: refuse (an error to the client, SQLSTATE 0A000) or pass (run it ' +
      'unrecorded, with a warning)',
    'refuse',
  )
  .addHelpText(
    'after',
    `
Clients connect to the proxy as to PostgreSQL (the URL it prints); each statement is rewritten as the pg recorder
rewrites it, and clients receive exactly the server's results. One history session per client connection.
COPY ... FROM STDIN into a recorded table (psql's \\copy, loaders) is recorded as one write of its rows,
COPY table or (query) TO STDOUT as a read of them.
Ctrl-C or SIGTERM stops it: open transactions are written (aborted, or unknown during COMMIT), then the end line.
Clients are trusted unless ISOCHECK_PROXY_PASSWORD is set: then they must give that password (MD5).
With --tls-cert and --tls-key (or ISOCHECK_PROXY_TLS_CERT/KEY) clients may connect with TLS. A client whose
application_name is isocheck:NAME records into the history session NAME (one for all its connections).

Examples:
  isocheck proxy --db postgres://localhost/bank --tables accounts --out run.ndjson
  psql postgresql://postgres@127.0.0.1:6543/bank -c 'UPDATE accounts SET bal = bal - 1 WHERE id = 1'
  isocheck check run.ndjson`,
  )
  .action(async (opts) => {
    const { runProxyCommand } = await import('./proxy-command.js');
    process.exitCode = await runProxyCommand(opts);
  });

program
  .command('demo')
  .description(
    'record and check two short runs on a throwaway PostgreSQL: a consistent TPC-C run and a SmallBank write ' +
      "skew; `demo cluster`: a read replica's read-your-writes violation",
  )
  .argument('[what]', '"cluster": a primary and a hot standby, reads routed to the standby')
  .option('--db <url>', 'use this PostgreSQL server instead of the embedded one')
  .action(async (what: string | undefined, opts) => {
    if (what !== undefined && what !== 'cluster')
      throw new InputError(`demo ${what}: expected "demo" or "demo cluster"`);
    const { runDemo } = await import('./demo-command.js');
    process.exitCode = await runDemo({ ...opts, cluster: what === 'cluster' });
  });

async function main(): Promise<void> {
  try {
    await program.parseAsync(process.argv);
  } catch (e) {
    if (e instanceof CommanderError) {
      process.exitCode = e.exitCode === 0 ? 0 : 2;
      return;
    }
    if (e instanceof InputError) {
      console.error(`isocheck: ${e.message}`);
      process.exitCode = 2;
      return;
    }
    const missing = /Cannot find (?:package|module) '(pg)'/.exec(String((e as Error).message));
    if ((e as NodeJS.ErrnoException).code === 'ERR_MODULE_NOT_FOUND' && missing) {
      // pg is a peer dependency: npm installs it, yarn 1 and --legacy-peer-deps do not
      console.error(
        `isocheck: this command needs the "${missing[1]}" package (a peer dependency of isocheck): npm ` +
          `install ${missing[1]}`,
      );
      process.exitCode = 2;
      return;
    }
    console.error(
      `isocheck: internal error (a bug in isocheck; please report it with the command and ` +
        `input):\n${(e as Error).stack ?? e}`,
    );
    process.exitCode = 70;
  }
}

await main();
