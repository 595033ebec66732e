/**
 * `isocheck/pg`: the application's pg, recording, for one line of glue (`import pg from 'isocheck/pg'` instead of
 * `import pg from 'pg'`). Configured from the environment as under `isocheck record` (ISOCHECK_RECORD_OUT,
 * ISOCHECK_RECORD_TABLES; process-recorder.ts): the tables are instrumented on the first statement once they
 * exist and the file is finished when the process exits. For a recorder of your own, use `recorder.driver()`
 * from `isocheck/recorder`. Under `isocheck record`, an application's `import pg from 'pg'` is sent here.
 */
import { createRequire } from 'node:module';
import { applicationPg, type PgModule } from './driver.js';
import { processDriver } from './process-recorder.js';

// under `isocheck record`, the ESM hook (esm-hooks.ts) names the copy of pg the application imported
const copy = new URL(import.meta.url).searchParams.get('pg');
const pg: PgModule = processDriver(copy ? (createRequire(copy)(copy) as PgModule) : applicationPg());
export default pg;
export const Client: PgModule['Client'] = pg.Client;
export const Pool: PgModule['Pool'] = pg.Pool;
export const Connection: PgModule['Connection'] = pg.Connection;
export const Query: PgModule['Query'] = pg.Query;
export const types: PgModule['types'] = pg.types;
export const defaults: PgModule['defaults'] = pg.defaults;
export const DatabaseError: PgModule['DatabaseError'] = pg.DatabaseError;
export const escapeIdentifier: PgModule['escapeIdentifier'] = pg.escapeIdentifier;
export const escapeLiteral: PgModule['escapeLiteral'] = pg.escapeLiteral;
export const Result: PgModule['Result'] = pg.Result;
export const TypeOverrides: PgModule['TypeOverrides'] = pg.TypeOverrides;
