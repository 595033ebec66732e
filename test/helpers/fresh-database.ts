/** A new, empty database on a test's server, by a counter per prefix: its URL. */
import type pg from 'pg';

const counters = new Map<string, number>();

export async function freshDatabase(admin: pg.Client, serverUrl: string, prefix: string): Promise<string> {
  const n = (counters.get(prefix) ?? 0) + 1;
  counters.set(prefix, n);
  const name = `${prefix}_${n}`;
  await admin.query(`CREATE DATABASE ${name}`);
  const u = new URL(serverUrl);
  u.pathname = `/${name}`;
  return u.toString();
}
