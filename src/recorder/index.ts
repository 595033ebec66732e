/**
 * The recorder's public API (`import ... from 'isocheck/recorder'`): record what an application's PostgreSQL
 * transactions read and wrote, through the application's own `pg` (a peer dependency), as a history file
 * (docs/history-format.md) for `isocheck check`.
 *
 *   import pg from 'pg';
 *   import { Recorder } from 'isocheck/recorder';
 *   const recorder = new Recorder({ file: 'run.ndjson', meta: { workload: 'bank' } });
 *   await recorder.instrument(setupClient, ['accounts']);
 *   const db = recorder.pool(new pg.Pool({ connectionString }));   // or recorder.client(pgClient)
 *   ... the application runs db.query(...) as with pg ...
 *   recorder.finish();
 */
export {
  Recorder,
  RecorderStoppedError,
  type RecorderOptions,
  type InterruptResult,
  type ClusterOptions,
} from './recorder.js';
export { RecordingClient, RecordingPool, isConnectionLoss, type QueryOptions } from './client.js';
export { NamedSession, RoutingClient, type RouterOptions, type ServerConnection } from './sessions.js';
export { recordingDriver, applicationPg, type DriverOptions, type PgModule } from './driver.js';
// uninstrument() removes the hidden columns Recorder.instrument() added, once recording is over
export { uninstrument, WID_COLUMN, PREV_COLUMN, type TableInfo, type InstrumentResult } from './catalog.js';
export { UnsupportedStatementError, UnsupportedTableError } from './errors.js';
export { InputError } from '../history/input-errors.js';
