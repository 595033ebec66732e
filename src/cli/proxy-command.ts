/**
 * `isocheck proxy [--db URL] [--listen HOST:PORT] --tables a,b --out FILE`: a PostgreSQL server for any client
 * (psql, JDBC, psycopg2, ...) that records what it runs (src/proxy/). Without --db it starts the embedded server.
 * Runs until SIGINT/SIGTERM/SIGHUP: then the transactions still open are written (aborted, or unknown during
 * COMMIT), the `end` line, one line saying what the history holds; exit 0.
 */
import { readFileSync } from 'node:fs';
import { createSecureContext } from 'node:tls';
import { InputError } from '../history/input-errors.js';
import { checkOutputFile, watchSignals } from './interrupt.js';
import { terminalProgress } from './progress.js';

export interface ProxyCommandOptions {
  db?: string;
  listen: string;
  tables: string;
  out: string;
  onUnsupported?: string;
  /** The proxy's TLS certificate and key (PEM files): clients may then connect with sslmode=require. */
  tlsCert?: string;
  tlsKey?: string;
}

/** The TLS certificate and key files when not given as options (e.g. --tls-cert): from the environment. */
export const TLS_CERT_ENV = 'ISOCHECK_PROXY_TLS_CERT';
export const TLS_KEY_ENV = 'ISOCHECK_PROXY_TLS_KEY';

/** The certificate and key for clients' TLS, read from their files; undefined without them. */
export function readTls(
  certFile: string | undefined,
  keyFile: string | undefined,
): { cert: Buffer; key: Buffer } | undefined {
  if (!certFile && !keyFile) return undefined;
  if (!certFile || !keyFile)
    throw new InputError(
      `--tls-cert and --tls-key (or ${TLS_CERT_ENV} and ${TLS_KEY_ENV}) go together: give both files, in PEM`,
    );
  const read = (file: string, what: string): Buffer => {
    try {
      return readFileSync(file);
    } catch (e) {
      throw new InputError(`${what} ${file}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
    }
  };
  const pair = { cert: read(certFile, '--tls-cert'), key: read(keyFile, '--tls-key') };
  try {
    createSecureContext(pair);
  } catch (e) {
    throw new InputError(`--tls-cert ${certFile} / --tls-key ${keyFile}: ${(e as Error).message}`);
  }
  return pair;
}

/** The password clients must give, from the environment (not the command line, which other users may read). */
export const PASSWORD_ENV = 'ISOCHECK_PROXY_PASSWORD';

/** `HOST:PORT`, `[v6]:PORT` or `PORT`. */
export function parseListen(s: string): { host: string; port: number } {
  const m = /^(?:\[([^\]]+)\]|([^:]*)):(\d+)$/.exec(s) ?? (/^(\d+)$/.test(s) ? [s, undefined, '127.0.0.1', s] : null);
  const port = m ? Number(m[3]) : NaN;
  if (!m || !Number.isInteger(port) || port < 0 || port > 65535)
    throw new InputError(`--listen ${s}: expected HOST:PORT, e.g. 127.0.0.1:6543`);
  return { host: m[1] ?? (m[2] || '127.0.0.1'), port };
}

export async function runProxyCommand(opts: ProxyCommandOptions): Promise<number> {
  const tables = opts.tables
    .split(',')
    .map((t) => t.trim())
    .filter((t) => t !== '');
  if (tables.length === 0) throw new InputError('--tables: name at least one table to record (comma-separated)');
  const { host, port } = parseListen(opts.listen);
  const onUnsupported = opts.onUnsupported ?? 'refuse';
  if (onUnsupported !== 'refuse' && onUnsupported !== 'pass')
    throw new InputError(`--on-unsupported ${onUnsupported}: expected refuse or pass`);
  const tls = readTls(opts.tlsCert ?? process.env[TLS_CERT_ENV], opts.tlsKey ?? process.env[TLS_KEY_ENV]);
  checkOutputFile(opts.out, '--out');
  const watch = watchSignals();
  // on a terminal, one line kept up to date: the clients connected and the transactions recorded so far
  const progress = terminalProgress('isocheck proxy');
  let ticker: NodeJS.Timeout | undefined;
  const { startProxy } = await import('../proxy/proxy.js');
  let stopServer: (() => Promise<void>) | undefined;
  let db = opts.db;
  try {
    if (!db) {
      const { startEmbedded } = await import('../db/embedded.js');
      const server = await startEmbedded();
      stopServer = () => server.stop();
      db = server.url;
      process.stderr.write(
        `isocheck: started an embedded PostgreSQL ${server.version} (removed when the proxy stops)\n`,
      );
    }
    const proxy = await startProxy({
      db,
      host,
      port,
      tables,
      out: opts.out,
      meta: { command: 'proxy' },
      onWarning: (message) => progress.note(`isocheck: warning: ${message}`),
      onUnsupported,
      password: process.env[PASSWORD_ENV] || undefined,
      tls,
    });
    watch.lastWords = () => `isocheck: stopped; ${proxy.recorder.transactions} transactions in ${opts.out}`;
    if (proxy.missing.length > 0)
      process.stderr.write(
        `isocheck: ${proxy.missing.join(', ')} not found yet: the tables are instrumented when they all ` +
          `exist, before the first statement that uses them${proxy.missingHint}\n`,
      );
    if (!process.env[PASSWORD_ENV] && !['127.0.0.1', 'localhost', '::1'].includes(host))
      process.stderr.write(
        `isocheck: warning: clients are not authenticated (trust): anyone who reaches ${host}:${proxy.port} ` +
          `can use the database (set ${PASSWORD_ENV} to require a password)\n`,
      );
    if (tls) process.stderr.write('isocheck: clients may connect with TLS (sslmode=require)\n');
    process.stderr.write(`isocheck: recording ${tables.join(', ')} to ${opts.out}; connect clients to:\n`);
    process.stdout.write(`${proxy.url}\n`);
    process.stderr.write('isocheck: Ctrl-C (or SIGTERM) to stop and finish the history\n');
    ticker = setInterval(() => {
      const c = proxy.connections;
      progress.stage(
        `${c} client${c === 1 ? '' : 's'} connected, ${proxy.recorder.transactions} transactions recorded`,
      );
    }, 1000);
    ticker.unref();
    await new Promise<void>((resolve) => watch.signal.addEventListener('abort', () => resolve(), { once: true }));
    clearInterval(ticker);
    progress.done();
    await proxy.close(`the proxy was stopped (${String(watch.signal.reason)})`);
    const c = proxy.recorder.counts;
    process.stderr.write(
      `isocheck: ${proxy.recorder.transactions} transactions (${c.committed} committed, ${c.aborted} aborted, ` +
        `${c.unknown} unknown) in ${opts.out}; check it with: isocheck check ${opts.out}\n`,
    );
    return 0;
  } finally {
    clearInterval(ticker);
    progress.done();
    watch.dispose();
    await stopServer?.();
  }
}
