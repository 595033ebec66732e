/**
 * The recording proxy (issue 20): a server speaking PostgreSQL's protocol to any client, recording what it runs.
 *
 *   startProxy({ db, listen, tables, out }) -> Recorder + instrument(tables) on a setup connection -> net.Server
 *   -> each client connection: ProxyConnection (connection.ts) with its own server connection and history session
 *   close(): stop accepting, close the connections (open transactions are written aborted, or unknown during
 *   COMMIT: Recorder.interrupt), write the `end` line.
 *
 * Tables that do not exist yet at start are instrumented by the Recorder's driver once they all exist, before the
 * first statement that uses them (so a client may create its schema through the proxy first).
 *
 * Clients authenticate with trust, or with MD5 when the proxy is given a password: without one, listen on
 * loopback (the default) unless the network is yours. Given a certificate and key (`tls`), the proxy accepts TLS
 * from clients that ask for it (SSLRequest answered 'S'); else it answers 'N' and they connect in clear (or give
 * up, with sslmode=require). The server is reached with the URL's credentials and its sslmode read as libpq reads
 * it (`require`: encrypted, the certificate not verified; `verify-ca`/`verify-full` with `sslrootcert`), not as
 * pg reads it by default (`require` as `verify-full`).
 */
import net from 'node:net';
import tls from 'node:tls';
import pg from 'pg';
import { parse as parseConnectionString } from 'pg-connection-string';
import { Recorder } from '../recorder/recorder.js';
import { missingTables } from '../recorder/driver.js';
import { RAW_TYPES } from '../recorder/catalog.js';
import { ProxyConnection, type ProxyContext } from './connection.js';
import { TypeCodecs } from './formats.js';
import { type CatalogQuery, resolveTypes } from './user-types.js';

export interface ProxyOptions {
  /** The server's connection URL. */
  db: string;
  /** Where to listen (default 127.0.0.1, port 6543; port 0: a free port). */
  host?: string;
  port?: number;
  /** The tables to record. */
  tables: string[];
  /** The history file. */
  out: string;
  meta?: Record<string, unknown>;
  /** A statement the recorder cannot record: refused with an error (default), or run unrecorded with a warning. */
  onUnsupported?: 'refuse' | 'pass';
  /** Clients must give this password (MD5 authentication); default: trust. */
  password?: string;
  /** The proxy's certificate and private key (PEM): clients may connect with TLS (sslmode=require). */
  tls?: { cert: string | Buffer; key: string | Buffer };
  onWarning?: (message: string) => void;
}

export interface RunningProxy {
  /** Tables that did not exist at start (instrumented once they all exist, before the first statement using them). */
  missing: string[];
  /** How to name a missing table that exists once quoted ('' when none does). */
  missingHint: string;
  host: string;
  port: number;
  /** A connection URL for clients (the server's user and database, the proxy's address). */
  url: string;
  /** Clients may use TLS. */
  tls: boolean;
  recorder: Recorder;
  /** Client connections open now. */
  readonly connections: number;
  /** Stops: the open transactions are written (aborted, or unknown during COMMIT), then the `end` line. */
  close(reason?: string): Promise<void>;
}

/** Startup parameters not passed to the server: the proxy's connection has its own user, database and encoding. */
const NOT_PASSED = new Set(['user', 'database', 'replication', 'client_encoding', 'options', 'application_name']);

/** A startup parameter as a `-c name=value` option (backslash before spaces and backslashes). */
const option = (k: string, v: string): string => `-c ${k}=${v.replace(/([\\ ])/g, '\\$1')}`;

/** The server's connection settings from its URL, sslmode read as libpq reads it (unless the URL says
 *  uselibpqcompat itself). */
export function serverConfig(url: string): pg.ClientConfig {
  const compat = /[?&]uselibpqcompat=/i.test(url) ? {} : { useLibpqCompat: true };
  const c = parseConnectionString(url, compat) as Record<string, unknown>;
  for (const k of Object.keys(c)) if (c[k] === null || c[k] === undefined) delete c[k];
  return c as pg.ClientConfig;
}

export async function startProxy(opts: ProxyOptions): Promise<RunningProxy> {
  // a URL or a certificate that cannot be used fails before the history file is created
  const server = serverConfig(opts.db);
  const secureContext = opts.tls ? tls.createSecureContext({ cert: opts.tls.cert, key: opts.tls.key }) : undefined;
  const recorder = new Recorder({
    file: opts.out,
    meta: { proxy: true, ...(opts.meta ?? {}) },
    onWarning: opts.onWarning,
  });
  const setup = new pg.Client(server);
  let missing: string[] = [];
  let missingHint = '';
  try {
    await setup.connect();
    ({ missing, hint: missingHint } = await missingTables(setup, opts.tables));
    if (missing.length === 0) await recorder.instrument(setup, opts.tables);
  } catch (e) {
    recorder.abandon();
    throw e;
  } finally {
    await setup.end().catch(() => undefined);
  }
  // tables not created yet: the driver instruments them before the first statement that uses them once all exist
  const driver = recorder.driver({ pg, tables: opts.tables });
  const live = new Set<ProxyConnection>();
  // the database's own types, read from its catalog on a connection of the proxy's (user-types.ts), one at a time
  const types = new TypeCodecs();
  let catalog: Promise<pg.Client> | undefined;
  let resolving: Promise<void> = Promise.resolve();
  const catalogQuery: CatalogQuery = async (text, values) => {
    catalog ??= (async () => {
      const c = new pg.Client(server);
      c.on('error', () => undefined);
      await c.connect();
      return c;
    })();
    const r = await (await catalog).query({ text, values, rowMode: 'array', types: RAW_TYPES } as pg.QueryArrayConfig);
    return r.rows as (string | null)[][];
  };
  const ctx: ProxyContext = {
    recorder,
    onUnsupported: opts.onUnsupported ?? 'refuse',
    password: opts.password,
    tls: secureContext,
    async connectServer(params) {
      const options = [
        server.options,
        params.options,
        ...Object.entries(params)
          .filter(([k]) => !NOT_PASSED.has(k))
          .map(([k, v]) => option(k, v)),
      ]
        .filter(Boolean)
        .join(' ');
      const raw = new driver.Client({
        ...server,
        ...(options ? { options } : {}),
        ...(params.application_name ? { application_name: params.application_name } : {}),
      });
      const parameters = new Map<string, string>();
      const con = (raw as unknown as { connection: NodeJS.EventEmitter }).connection;
      const onStatus = (msg: { parameterName: string; parameterValue: string }): void =>
        void parameters.set(msg.parameterName, msg.parameterValue);
      con.on('parameterStatus', onStatus);
      try {
        await raw.connect();
      } finally {
        con.removeListener('parameterStatus', onStatus);
      }
      return { raw, parameters };
    },
    cancel(raw) {
      const c = raw as unknown as { processID: number | null; secretKey: number | null };
      if (c.processID === null || c.secretKey === null) return;
      const host = server.host ?? 'localhost';
      const port = Number(server.port ?? 5432);
      const sock = host.startsWith('/') ? net.connect(`${host}/.s.PGSQL.${port}`) : net.connect(port, host);
      const b = Buffer.alloc(16);
      b.writeInt32BE(16, 0);
      b.writeInt32BE(80877102, 4);
      b.writeInt32BE(c.processID, 8);
      b.writeInt32BE(c.secretKey, 12);
      sock.on('error', () => undefined);
      sock.end(b);
    },
    byKey(pid, secret) {
      for (const c of live) if (c.pid === pid && c.secret === secret) return c;
      return undefined;
    },
    opened: (c) => void live.add(c),
    closed: (c) => void live.delete(c),
    types,
    resolveTypes(oids) {
      resolving = resolving
        .then(() => resolveTypes(oids, types, catalogQuery))
        .catch((e: unknown) => {
          // (the catalog cannot be read: the types are not converted, refused in binary with the reason)
          for (const oid of oids) if (!types.known(oid)) types.add(oid, null);
          opts.onWarning?.(`isocheck proxy: could not read the types ${oids.join(', ')} from the catalog: ${e}`);
        });
      return resolving;
    },
  };
  const listener = net.createServer((socket) => new ProxyConnection(socket, ctx));
  const host = opts.host ?? '127.0.0.1';
  await new Promise<void>((resolve, reject) => {
    listener.once('error', reject);
    listener.listen(opts.port ?? 6543, host, () => {
      listener.removeListener('error', reject);
      resolve();
    });
  });
  const port = (listener.address() as net.AddressInfo).port;
  // the server's user and database at the proxy's address (built, not edited: the server's URL may name a unix
  // socket, postgresql://user@/db?host=/run/postgresql, which has no host for WHATWG's URL to replace)
  const u = new URL(`postgresql://${host.includes(':') ? `[${host}]` : host}:${port}`);
  if (server.user) u.username = encodeURIComponent(server.user);
  u.pathname = `/${encodeURIComponent(server.database ?? server.user ?? '')}`;
  let closing: Promise<void> | undefined;
  return {
    missing,
    missingHint,
    host,
    port,
    url: u.toString(),
    tls: secureContext !== undefined,
    recorder,
    get connections() {
      return live.size;
    },
    close(reason = 'the proxy was stopped') {
      closing ??= (async () => {
        await new Promise<void>((resolve) => {
          listener.close(() => resolve());
          recorder.interrupt(reason);
          for (const c of [...live]) c.destroy();
        });
        await (await catalog?.catch(() => undefined))?.end().catch(() => undefined);
      })();
      return closing;
    },
  };
}
