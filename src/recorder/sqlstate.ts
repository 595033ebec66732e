/**
 * Which errors the server gave: a SQLSTATE (PostgreSQL's five-character error code, protocol ErrorResponse field
 * `C`; docs/recording.md), told apart from the codes of the driver and the socket that have five characters too
 * (EPIPE, EBADF). The one reading shared by the recorder (what a failed transaction's error records, whether a
 * COMMIT's outcome is unknown), `isocheck run` (why the connections went away) and the proxy.
 */

/** The SQLSTATE of an error the server gave; undefined for any other error (a socket's EPIPE has five letters
 *  too: SQLSTATE classes are digits and capitals, and none begins with E). */
export function sqlStateOf(err: unknown): string | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) && !/^E[A-Z]{4}$/.test(code) ? code : undefined;
}

/**
 * For a server error (one with a SQLSTATE): whether it ends the connection (class 08, the server shutting down or
 * not yet accepting (57P01-57P03), or a FATAL or PANIC severity); undefined for another error.
 */
export function sqlStateConnectionLoss(err: unknown): boolean | undefined {
  const code = sqlStateOf(err);
  if (code === undefined) return undefined;
  const severity = (err as { severity?: unknown }).severity;
  return (
    code.startsWith('08') ||
    code === '57P01' ||
    code === '57P02' ||
    code === '57P03' ||
    severity === 'FATAL' ||
    severity === 'PANIC'
  );
}
