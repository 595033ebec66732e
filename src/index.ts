/**
 * The isocheck library (`import ... from 'isocheck'`): read a recorded history, check it against each
 * transaction's isolation level, render the result for a terminal, as JSON or as an HTML report. Recording
 * lives in `isocheck/recorder`, the throwaway PostgreSQL server in `isocheck/db`. What is exported here is the
 * public API (semantic versioning applies to it); the modules behind it are not.
 *
 *   import { check, renderResult } from 'isocheck';
 *   const result = await check('run.ndjson', { iso: 'Payment=SER,*=RC', timeoutMs: 60_000 });
 *   if (result.verdict === 'inconsistent') console.log(renderResult('run.ndjson', result));
 *
 * The semantics (levels, axioms, witnesses, verdicts) are docs/semantics.md; the file format is
 * docs/history-format.md.
 */

// Checking
export { check, type CheckFileOptions as CheckOptions } from './checker/check-file.js';
export type { CheckResult, CheckStats, Verdict } from './checker/check.js';
export type {
  Anomaly,
  AnomalyType,
  ConsistencyType,
  ContradictionType,
  WellFormednessType,
  Edge,
  EdgeKind,
  EventRef,
  Assumption,
  Case,
} from './checker/anomaly.js';
export { ANOMALY_NAMES } from './checker/anomaly.js';
export { parseIsoOverride, effectiveLevel, LEVEL_DESCRIPTIONS, type IsoOverride } from './checker/levels.js';
// The level boundary (`check --levels`): which levels a history satisfies, the strongest, and by label
export {
  levelBoundary,
  type LevelBoundary,
  type LevelVerdict,
  type LabelConfiguration,
  type BoundaryOptions,
} from './checker/level-boundary.js';

// Histories: reading, writing, the format's types
export { readHistory, validateHistory, type ReadOptions } from './history/reader.js';
export { HistoryWriter, writeHistoryFile } from './history/writer.js';
export type { History, Txn, TableSchema, InitRow } from './history/history.js';
export {
  ISOLATION_LEVELS,
  TXN_STATUSES,
  INIT_WID,
  type IsolationLevel,
  type TxnStatus,
  type SqlValue,
  type Row,
  type ColumnTypes,
  type HistoryEvent,
  type SelectEvent,
  type InsertEvent,
  type UpdateEvent,
  type DeleteEvent,
  type TxnError,
  type Line,
  type HistoryLine,
  type TableLine,
  type InitLine,
  type TxnLine,
  type EndLine,
} from './history/format.js';

// Rendering: terminal text, the JSON of `--json`, the HTML report
export { renderResult, renderAnomaly, anomalyName, anomalyMessage, edgeReason } from './checker/explain/explain.js';
export { resultJson, anomalyJson } from './report/json.js';
export {
  renderReport,
  writeReport,
  renderLevelsReport,
  writeLevelsReport,
  type ReportOptions,
} from './report/html.js';

// Errors a caller can tell apart (every InputError is the input's fault, not isocheck's)
export { InputError, HistoryFormatError, type FormatProblem } from './history/input-errors.js';
export { UnsupportedStatementError, UnsupportedTableError } from './recorder/errors.js';

// Exit codes of `isocheck check`, for tools that wrap it
export { EXIT } from './cli/check-command.js';
