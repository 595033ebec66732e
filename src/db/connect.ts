/**
 * Which PostgreSQL server a recording uses (configuration resolved in one place: explicit --db URL <- DATABASE_URL
 * <- a throwaway embedded server).
 *
 *   openDatabase({ db? }) -> probe the server (version) -> { url, description, serverVersionNum, close() }
 *
 * `description` says which server is used, for the CLI to print (the password is never shown).
 */
import pg from 'pg';
import { InputError } from '../history/input-errors.js';
import { startEmbedded, type EmbeddedOptions } from './embedded.js';
import { serverVersion } from '../recorder/server-version.js';

export interface Database {
  url: string;
  /** One line saying which server is used, e.g. `PostgreSQL 16.2 at db.example:5432/app (--db)`. */
  description: string;
  /** `server_version_num`, e.g. 180004. */
  serverVersionNum: number;
  /** True when the server is the throwaway embedded one. */
  embedded: boolean;
  /** Stops the embedded server (and removes its files); nothing for an external server. */
  close(): Promise<void>;
}

export interface OpenOptions {
  /** Connection URL; default: env DATABASE_URL; without either, an embedded server is started. */
  db?: string;
  embedded?: EmbeddedOptions;
}

/** The URL without its password, for messages. */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return url.replace(/:[^:@/]*@/, ':***@');
  }
}

function where(url: string): string {
  try {
    const u = new URL(url);
    return `${u.hostname || 'localhost'}:${u.port || '5432'}${u.pathname || ''}`;
  } catch {
    return redactUrl(url);
  }
}

/** Connects to the given server (or DATABASE_URL), or starts an embedded one. */
export async function openDatabase(options: OpenOptions = {}): Promise<Database> {
  const fromFlag = options.db !== undefined && options.db !== '';
  const url = fromFlag ? options.db! : process.env.DATABASE_URL;
  if (url) {
    const client = new pg.Client({ connectionString: url });
    let version: string;
    let versionNum: number;
    try {
      await client.connect();
      ({ version, versionNum } = await serverVersion(client));
    } catch (e) {
      const err = e as Error & { code?: string };
      throw new InputError(
        `cannot connect to ${redactUrl(url)} ` +
          `(${fromFlag ? '--db' : 'DATABASE_URL'}): ${err.message}${err.code ? ` [${err.code}]` : ''}`,
      );
    } finally {
      await client.end().catch(() => undefined);
    }
    if (versionNum < 140000) {
      throw new InputError(`${redactUrl(url)} runs PostgreSQL ${version}; recording needs PostgreSQL 14 or newer`);
    }
    return {
      url,
      description: `PostgreSQL ${version} at ${where(url)} (${fromFlag ? '--db' : 'DATABASE_URL'})`,
      serverVersionNum: versionNum,
      embedded: false,
      close: async () => undefined,
    };
  }
  const server = await startEmbedded(options.embedded);
  return {
    url: server.url,
    description: `embedded PostgreSQL ${server.version} on 127.0.0.1:${server.port} (throwaway, data in ${server.dir})`,
    serverVersionNum: server.versionNum,
    embedded: true,
    close: () => server.stop(),
  };
}
