// Connection URLs as users write them, a unix socket included (`postgresql://user:pw@/db?host=/run/postgresql`,
// which WHATWG's URL refuses: credentials and no host): another database for `isocheck run`, the PG* variables of
// `isocheck record`. The proxy's own address for clients of a socket URL: proxy-pg.test.ts.
import { describe, expect, it } from 'vitest';
import { recordEnvironment } from '../src/cli/record-command.js';
import { withDatabase } from '../src/db/topology.js';

describe('connection URLs', () => {
  it('withDatabase replaces the database and keeps the rest', () => {
    expect(withDatabase('postgresql://u:p@127.0.0.1:5432/postgres', 'bank')).toBe(
      'postgresql://u:p@127.0.0.1:5432/bank',
    );
    expect(withDatabase('postgres://u@h:5/db?sslmode=require', 'x')).toBe('postgres://u@h:5/x?sslmode=require');
    expect(withDatabase('postgresql://u@[::1]:5', 'x')).toBe('postgresql://u@[::1]:5/x');
    expect(withDatabase('postgresql://u:p@/postgres?host=%2Frun%2Fpostgresql&port=5433', 'run_1')).toBe(
      'postgresql://u:p@/run_1?host=%2Frun%2Fpostgresql&port=5433',
    );
    expect(withDatabase('postgresql:///postgres?host=/tmp', 'a b')).toBe('postgresql:///a%20b?host=/tmp');
  });

  it('isocheck record gives the application the PG* variables pg would read from the URL', () => {
    const env = (db: string) =>
      recordEnvironment({ out: 'run.ndjson', tables: 'accounts', db }, ['node', 'app.js'], {});
    expect(env('postgresql://ann:s%40cret@db.example:6432/bank')).toMatchObject({
      PGHOST: 'db.example',
      PGPORT: '6432',
      PGUSER: 'ann',
      PGPASSWORD: 's@cret',
      PGDATABASE: 'bank',
    });
    expect(env('postgresql://ann:pw@/bank?host=%2Frun%2Fpostgresql&port=5433')).toMatchObject({
      PGHOST: '/run/postgresql',
      PGPORT: '5433',
      PGUSER: 'ann',
      PGPASSWORD: 'pw',
      PGDATABASE: 'bank',
    });
    expect(env('postgresql://u@[::1]:5/x').PGHOST).toBe('::1');
    expect(() => env('mysql://u@h/x')).toThrow(/expected a postgres:\/\/ or postgresql:\/\/ URL/);
  });
});
