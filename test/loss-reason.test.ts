/**
 * The reason `isocheck run` gives when the database goes away (run-command.ts LossReason): the server's own words
 * whichever order pg reports the errors in. A CI run once said "Connection terminated unexpectedly" for
 * pg_terminate_backend because the bare end-of-socket event of one connection arrived before the FATAL of another.
 */
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { LossReason } from '../src/cli/run-command.js';

/** The error pg builds from the server's ErrorResponse. */
function fatal57P01(): Error {
  const e = new pg.DatabaseError('terminating connection due to administrator command', 0, 'error');
  e.code = '57P01';
  e.severity = 'FATAL';
  return e;
}
const ended = () => new Error('Connection terminated unexpectedly');
const notQueryable = () => new Error('Client has encountered a connection error and is not queryable');
const epipe = () => Object.assign(new Error('write EPIPE'), { code: 'EPIPE' });

describe('LossReason', () => {
  it("keeps the server's FATAL when a bare end of socket was offered first", () => {
    const r = new LossReason();
    r.offer(ended()); // connection A's 'end' (its FATAL went to the query in flight)
    r.offer(fatal57P01()); // connection B's FATAL, arrived while it was idle
    expect((r.why(notQueryable()) as Error).message).toBe('terminating connection due to administrator command');
  });

  it('prefers the cause that stopped the run when the server gave it', () => {
    const r = new LossReason();
    const other = fatal57P01();
    other.message = 'terminating connection due to idle-session timeout';
    r.offer(other);
    const cause = fatal57P01();
    expect(r.why(cause)).toBe(cause);
  });

  it('without any error from the server, the first error offered, not a socket code taken for a SQLSTATE', () => {
    const r = new LossReason();
    const first = ended();
    r.offer(first);
    r.offer(epipe());
    expect(r.why(notQueryable())).toBe(first);
    expect((new LossReason().why(epipe()) as Error).message).toBe('write EPIPE');
  });
});
