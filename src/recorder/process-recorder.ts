/**
 * The recording of a whole process, set up from environment variables: what `isocheck record -- node app.js`
 * (through the module hook, hook.ts) and `import pg from 'isocheck/pg'` use. One Recorder per process, created
 * when the application first loads pg; every copy of pg it loads is wrapped by a recording driver (driver.ts)
 * over that recorder; the tables are instrumented on the first statement once they exist; the file is finished
 * when the process exits.
 *
 *   ISOCHECK_RECORD_OUT     the history file to write
 *   ISOCHECK_RECORD_TABLES  the tables to record, comma-separated
 *   ISOCHECK_RECORD_META    optional JSON object for the header's meta (the command line, ...)
 *
 * Ending (nothing recorded is lost: lines are written as transactions end):
 * - process exit (the application ends, process.exit(), an uncaught error): Recorder.interrupt() writes each
 *   transaction still open (`unknown` if its COMMIT was sent, else `aborted`: the server rolls it back when the
 *   connection goes) and the `end` line; then one line on stderr says what the file holds.
 * - SIGINT, SIGTERM, SIGHUP: when the application has no listener of its own, the same at once, then the signal
 *   is raised again so the process ends as it would have (exit status 128 + the signal's number). When it has
 *   one, the application decides, and the file is finished when it exits.
 * - One process records: the first that loads pg. Its children (NODE_OPTIONS carries the hook to them) see
 *   ISOCHECK_RECORD_PID set and pass through.
 */
import { rmSync, statSync } from 'node:fs';
import { resolve } from 'node:path';
import { Recorder } from './recorder.js';
import { isRecordingDriver, type PgModule } from './driver.js';
import { WATCHED_SIGNALS } from './interrupted.js';
import { InputError } from '../history/input-errors.js';

import { RECORD_ENV } from './record-env.js';

export { RECORD_ENV };

interface ProcessRecording {
  recorder: Recorder;
  file: string;
  tables: string[];
  drivers: WeakMap<object, PgModule>;
  ended?: boolean;
}

let recording: ProcessRecording | undefined;
let passThrough = false;

function say(line: string): void {
  process.stderr.write(`isocheck: ${line}\n`);
}

function start(): ProcessRecording | undefined {
  const env = process.env;
  const owner = env[RECORD_ENV.pid];
  if (owner && owner !== String(process.pid)) return undefined; // a parent process records
  const out = env[RECORD_ENV.out];
  const tables = (env[RECORD_ENV.tables] ?? '')
    .split(',')
    .map((t) => t.trim())
    .filter((t) => t !== '');
  if (!out || tables.length === 0) {
    throw new InputError(
      `recording needs ${RECORD_ENV.out} (the history file) and ${RECORD_ENV.tables} (the tables, ` +
        `comma-separated) in the environment; or run the application with isocheck record --out FILE --tables ` +
        `a,b -- node app.js`,
    );
  }
  let meta: Record<string, unknown> = {};
  if (env[RECORD_ENV.meta]) {
    try {
      meta = JSON.parse(env[RECORD_ENV.meta]!) as Record<string, unknown>;
    } catch {
      throw new InputError(`${RECORD_ENV.meta} is not JSON: ${env[RECORD_ENV.meta]}`);
    }
  }
  env[RECORD_ENV.pid] = String(process.pid);
  const file = resolve(out);
  const recorder = new Recorder({ file, meta: { ...meta, tool: 'isocheck record', pid: process.pid } });
  const r: ProcessRecording = { recorder, file, tables, drivers: new WeakMap() };
  process.on('exit', () => end(r, 'the process exited'));
  for (const signal of WATCHED_SIGNALS) {
    const onSignal = (): void => {
      if (process.listenerCount(signal) > 1) return; // the application's own handler decides; 'exit' ends the file
      end(r, `the process received ${signal}`);
      process.removeListener(signal, onSignal);
      process.kill(process.pid, signal);
    };
    process.on(signal, onSignal);
  }
  return r;
}

/** Writes what is open and the `end` line, and says what the file holds (once). */
function end(r: ProcessRecording, reason: string): void {
  const { recorder, file } = r;
  if (r.ended) return;
  r.ended = true;
  if (!recorder.instrumented) {
    recorder.abandon();
    if (statSync(file, { throwIfNoEntry: false })?.size === 0) rmSync(file, { force: true });
    say(
      `nothing recorded: the tables ${r.tables.join(', ')} never all existed while the application ran ` +
        `statements (no history written)`,
    );
    return;
  }
  const open = recorder.interrupt(reason);
  const c = recorder.counts;
  const openNote =
    open.unknown + open.aborted > 0
      ? `; ${open.unknown + open.aborted} still open as ${reason}: ${open.unknown} written ` +
        `unknown, ${open.aborted} aborted`
      : '';
  say(
    `recorded ${recorder.transactions} transactions (${c.committed} committed, ${c.aborted} ` +
      `aborted, ${c.unknown} unknown${openNote}) in ${file}`,
  );
}

/**
 * The recording driver for this process over one copy of pg (the same module for the same copy). A module that
 * records already is returned as is; in a process that does not record (a child of the one that does), pg itself.
 */
export function processDriver(pg: PgModule): PgModule {
  if (isRecordingDriver(pg) || passThrough) return pg;
  recording ??= start();
  if (!recording) {
    passThrough = true;
    return pg;
  }
  let driver = recording.drivers.get(pg);
  if (!driver) {
    driver = recording.recorder.driver({ pg, tables: recording.tables });
    recording.drivers.set(pg, driver);
  }
  return driver;
}
