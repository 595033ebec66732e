/**
 * Connections a test opens and closes together: connect(url) gives a connected pg.Client (with an 'error'
 * listener: a server stopped under it must not crash the test process); closeAll() ends every one.
 */
import pg from 'pg';

export function connections(): { connect(url: string): Promise<pg.Client>; closeAll(): Promise<void> } {
  const open: pg.Client[] = [];
  return {
    async connect(url) {
      const c = new pg.Client({ connectionString: url });
      c.on('error', () => undefined);
      await c.connect();
      open.push(c);
      return c;
    },
    async closeAll() {
      await Promise.all(open.splice(0).map((c) => c.end().catch(() => undefined)));
    },
  };
}
