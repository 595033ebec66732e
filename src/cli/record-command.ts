/**
 * `isocheck record --out FILE --tables a,b [--db URL] -- COMMAND...`: runs a Node.js application unmodified and
 * records its PostgreSQL transactions. The command runs with NODE_OPTIONS carrying `--import <the module hook>`
 * (src/recorder/hook.ts), so every node process it starts loads the hook; the first to load pg records
 * (process-recorder.ts: settings from ISOCHECK_RECORD_* variables, tables instrumented on the first statement once
 * they exist, the file finished at exit and on SIGINT/SIGTERM/SIGHUP).
 *
 * This process waits: Ctrl-C reaches the application from the terminal (its process group), SIGTERM and SIGHUP
 * sent to isocheck are passed on; the exit status is the application's (128 + the signal's number when a
 * signal ended it).
 */
import { spawn } from 'node:child_process';
import { existsSync, rmSync } from 'node:fs';
import { parse as parseConnectionString } from 'pg-connection-string';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { InputError } from '../history/input-errors.js';
import { RECORD_ENV } from '../recorder/record-env.js';
import { checkOutputFile } from './interrupt.js';
import { signalExitCode } from '../recorder/interrupted.js';

export interface RecordCommandOptions {
  /** The history file. */
  out: string;
  /** The tables to record, comma-separated. */
  tables: string;
  /** The application's database: given to it as DATABASE_URL and the PG* variables pg reads. */
  db?: string;
}

/** The PG* variables pg (libpq's names) reads for a connection URL's parts. */
function pgVariables(url: string): Record<string, string> {
  if (!/^postgres(ql)?:\/\//i.test(url))
    throw new InputError(`--db ${url}: expected a postgres:// or postgresql:// URL`);
  // read as pg reads it (a unix socket as ?host=/dir or a %2F-encoded host, percent-encoded parts)
  let c: ReturnType<typeof parseConnectionString>;
  try {
    c = parseConnectionString(url);
  } catch {
    throw new InputError(`--db ${url}: not a URL (postgresql://user:password@host:port/database)`);
  }
  const out: Record<string, string> = { DATABASE_URL: url };
  if (c.host) out.PGHOST = c.host;
  if (c.port) out.PGPORT = String(c.port);
  if (c.user) out.PGUSER = c.user;
  if (c.password) out.PGPASSWORD = c.password;
  if (c.database) out.PGDATABASE = c.database;
  return out;
}

/** The environment of the recorded command. */
export function recordEnvironment(
  opts: RecordCommandOptions,
  command: string[],
  base: NodeJS.ProcessEnv = process.env,
): NodeJS.ProcessEnv {
  const tables = opts.tables
    .split(',')
    .map((t) => t.trim())
    .filter((t) => t !== '');
  if (tables.length === 0) throw new InputError('--tables: name at least one table to record (comma-separated)');
  const hook = pathToFileURL(resolve(import.meta.dirname, '..', 'recorder', 'hook.js')).href;
  const env: NodeJS.ProcessEnv = { ...base, ...(opts.db ? pgVariables(opts.db) : {}) };
  delete env[RECORD_ENV.pid];
  env[RECORD_ENV.out] = resolve(opts.out);
  env[RECORD_ENV.tables] = tables.join(',');
  env[RECORD_ENV.meta] = JSON.stringify({ command });
  env.NODE_OPTIONS = [base.NODE_OPTIONS, `--import=${hook}`].filter(Boolean).join(' ');
  return env;
}

/** Runs the command, recording; resolves to its exit status. */
export async function runRecordCommand(command: string[], opts: RecordCommandOptions): Promise<number> {
  if (command.length === 0)
    throw new InputError('no command to record: isocheck record --out run.ndjson --tables accounts -- node app.js');
  checkOutputFile(opts.out, '--out');
  const env = recordEnvironment(opts, command);
  const file = env[RECORD_ENV.out]!;
  rmSync(file, { force: true }); // a file left from another run would read as this one's
  const child = spawn(command[0], command.slice(1), { stdio: 'inherit', env });
  const forward = (signal: NodeJS.Signals) => () => {
    if (signal !== 'SIGINT') child.kill(signal); // Ctrl-C reaches the application itself, from the terminal
  };
  const listeners = (['SIGINT', 'SIGTERM', 'SIGHUP'] as const).map((s) => [s, forward(s)] as const);
  for (const [s, l] of listeners) process.on(s, l);
  try {
    const status = await new Promise<number>((done, fail) => {
      child.once('error', (e: NodeJS.ErrnoException) => fail(spawnProblem(command[0], e)));
      child.once('exit', (code, signal) => done(code ?? (signal ? signalExitCode(signal) : 1)));
    });
    if (existsSync(file)) process.stderr.write(`isocheck: check it with: isocheck check ${opts.out}\n`);
    else
      process.stderr.write(
        `isocheck: no history written to ${opts.out}: no Node.js process of the command loaded pg, or the ` +
          `tables never existed (then said above)\n`,
      );
    return status;
  } finally {
    for (const [s, l] of listeners) process.removeListener(s, l);
  }
}

/** Why the command could not be started, as one line (a spawn error is the user's command, never our bug). */
function spawnProblem(command: string, e: NodeJS.ErrnoException): Error {
  // execvp reports EACCES, not ENOENT, when the command is nowhere on the PATH but a PATH directory cannot be read
  if (e.code === 'ENOENT') return new InputError(`cannot run ${command}: not found (is it on the PATH?)`);
  if (e.code === 'EACCES')
    return new InputError(
      `cannot run ${command}: not found or not allowed to run it (EACCES: is it on the PATH, executable, and ` +
        `every PATH directory readable?)`,
    );
  if (e.code) return new InputError(`cannot run ${command}: ${e.code} (${e.message})`);
  return e;
}
