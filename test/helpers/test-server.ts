/** A test file's embedded server and an admin connection to it, started before its tests (unless `enabled` is false)
 *  and stopped after: `server` and `admin` are there once the file's tests run. */
import { afterAll, beforeAll } from 'vitest';
import pg from 'pg';
import { type EmbeddedServer, startEmbedded } from '../../src/db/embedded.js';

export function testServer(enabled = true): { readonly server: EmbeddedServer; readonly admin: pg.Client } {
  let server: EmbeddedServer | undefined;
  let admin: pg.Client | undefined;
  beforeAll(async () => {
    if (!enabled) return;
    server = await startEmbedded();
    admin = new pg.Client({ connectionString: server.url });
    await admin.connect();
  }, 60_000);
  afterAll(async () => {
    await admin?.end().catch(() => undefined);
    await server?.stop();
  });
  return {
    get server() {
      return server!;
    },
    get admin() {
      return admin!;
    },
  };
}
