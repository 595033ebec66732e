/** An embedded server holding the tests' tables, and isocheck proxy recording them (the proxy tests' setup). */
import pg from 'pg';
import { startEmbedded, type EmbeddedServer } from '../../src/db/embedded.js';
import { startProxy, type RunningProxy } from '../../src/proxy/proxy.js';

export async function proxiedServer(
  setupSql: string[],
  tables: string[],
  out: string,
): Promise<{ server: EmbeddedServer; proxy: RunningProxy }> {
  const server = await startEmbedded();
  try {
    const setup = new pg.Client({ connectionString: server.url });
    await setup.connect();
    for (const sql of setupSql) await setup.query(sql);
    await setup.end();
    const proxy = await startProxy({ db: server.url, port: 0, tables, out, onWarning: () => undefined });
    return { server, proxy };
  } catch (e) {
    await server.stop();
    throw e;
  }
}
