/**
 * The recorder's public API: record what an application's PostgreSQL transactions read and wrote, as a history
 * file (shared/spec/history-format.md) for `isocheck check`.
 *
 *   const recorder = new Recorder({ file: 'run.ndjson', meta: { workload: 'bank' } });
 *   await recorder.instrument(setupClient, ['accounts']);
 *   const db = recorder.pool(new pg.Pool({ connectionString }));   // or recorder.client(pgClient)
 *   ... the application runs db.query(...) as with pg ...
 *   recorder.finish();
 */
export { Recorder, type RecorderOptions } from './recorder.js';
export { RecordingClient, RecordingPool, isConnectionLoss, levelOf, type QueryOptions } from './client.js';
export { instrument, uninstrument, snapshotInit, toFormatValue, RAW_TYPES, WID_COLUMN, PREV_COLUMN, type TableInfo, type InstrumentResult } from './catalog.js';
export { analyze, loadRewriter, tableLookup, type Plan, type RecordedPlan, type TxnControl } from './rewrite.js';
