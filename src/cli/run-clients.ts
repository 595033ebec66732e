/**
 * `isocheck run WORKLOAD --client K/N --db URL`: the K-th of N client processes of one run against a shared
 * database (issue 19, "Load from several machines"). Each process records its own history; `isocheck merge` joins
 * them. The protocol, through a table of the run's database, `_isocheck_clients` (never recorded):
 *
 * 1. Client 1 creates `_isocheck_clients` and the workload's schema in one transaction: the database must not
 *    hold either (a fresh database per run; a table left by another run is an error, never joined). It loads the
 *    data and instruments the tables (the hidden wid column; its initial rows), then registers as `ready`.
 * 2. Client K > 1 waits until client 1 is `ready` (checking that client 1 runs the same workload, scale, seed and
 *    N), claims its row (`joining`: a second process with the same K is refused by the table's primary key, before
 *    it touches the tables: instrumenting makes the current rows the initial ones, so a client must never do it
 *    once another may have written), instruments (the columns exist: it reads the same initial rows) and becomes
 *    `ready`.
 * 3. Every client waits until all N are `ready`, then runs: no client writes before every client has read the
 *    initial rows, so every file has the same ones (merge checks it).
 * 4. Client K's sessions are (K-1)·S+1 .. K·S for S sessions per client, so wids never collide across files and a
 *    read in one file of another client's write resolves after the merge; each session's random choices are
 *    seeded by its number (`seed/session/<n>`), so N clients of S sessions run what one process of N·S would.
 * 5. Each client marks itself `done`; client 1 waits until all are done and checks the application's
 *    invariants (the others leave them to it).
 *
 * Every wait polls every 200 ms and ends after `waitSeconds` (default 120) with an error saying whom it waited
 * for; a signal stops it at once.
 */
import type pg from 'pg';
import { InputError } from '../history/input-errors.js';

export interface ClientSpec {
  /** 1-based. */
  k: number;
  n: number;
}

export const CLIENTS_TABLE = '_isocheck_clients';

/** `K/N` -> {k, n}. */
export function parseClient(text: string): ClientSpec {
  const m = /^\s*(\d+)\s*\/\s*(\d+)\s*$/.exec(text);
  const k = m ? Number(m[1]) : NaN;
  const n = m ? Number(m[2]) : NaN;
  if (!m || !Number.isSafeInteger(n) || n < 1 || k < 1 || k > n)
    throw new InputError(`--client ${text}: expected K/N with 1 <= K <= N (client K of N processes), e.g. 1/2`);
  return { k, n };
}

export interface CoordinatorOptions {
  client: ClientSpec;
  /** What the clients must agree on (workload, scale, seed, configuration...): compared as text. */
  run: string;
  waitSeconds?: number;
  /** True once the run is stopping (a signal, a lost server): waits end at once. */
  stopped: () => boolean;
  log: (line: string) => void;
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export class ClientCoordinator {
  readonly first: boolean;
  private readonly waitMs: number;
  constructor(private readonly options: CoordinatorOptions) {
    this.first = options.client.k === 1;
    this.waitMs = (options.waitSeconds ?? 120) * 1000;
  }

  private get label(): string {
    return `client ${this.options.client.k}/${this.options.client.n}`;
  }

  /** Polls `test` until it returns a value (not undefined), or fails after the wait with `what` in the message. */
  private async until<T>(what: string, test: () => Promise<T | undefined>): Promise<T> {
    const deadline = Date.now() + this.waitMs;
    let said = false;
    for (;;) {
      if (this.options.stopped()) throw new Error('stopped');
      const v = await test();
      if (v !== undefined) return v;
      if (Date.now() >= deadline)
        throw new InputError(
          `${this.label}: waited ${this.waitMs / 1000} s for ${what}; gave up (start every client within the ` +
            `wait, --client-wait SECONDS)`,
        );
      if (!said) this.options.log(`${this.label}: waiting for ${what}`);
      said = true;
      await sleep(200);
    }
  }

  /** Client 1: creates the coordination table and the workload's schema, in one transaction. */
  async createSchema(c: pg.ClientBase, schema: string): Promise<void> {
    await c.query('BEGIN');
    try {
      await c.query(
        `CREATE TABLE ${CLIENTS_TABLE} (client int PRIMARY KEY, n int NOT NULL, run text NOT NULL, state text ` +
          `NOT NULL, at timestamptz NOT NULL DEFAULT clock_timestamp())`,
      );
      await c.query(schema);
      await c.query('COMMIT');
    } catch (e) {
      await c.query('ROLLBACK').catch(() => undefined);
      if ((e as { code?: string }).code === '42P07') {
        throw new InputError(
          `${this.label} sets up the run, and the database already ` +
            `has ${/relation "([^"]+)"/.exec((e as Error).message)?.[1] ?? 'its tables'} (another run's, running ` +
            `or left over): --client needs a fresh database per run (create one, or drop the workload's tables ` +
            `and ${CLIENTS_TABLE})`,
        );
      }
      throw e;
    }
  }

  /** Client K > 1: waits until client 1 has set up and instrumented the tables, for the same run. */
  async awaitSetup(c: pg.ClientBase): Promise<void> {
    const row = await this.until('client 1 to set up the database', async () => {
      const t = await c.query<{ t: string | null }>(`SELECT to_regclass($1)::text AS t`, [CLIENTS_TABLE]);
      if (t.rows[0].t === null) return undefined;
      const r = await c.query<{ n: number; run: string }>(`SELECT n, run FROM ${CLIENTS_TABLE} WHERE client = 1`);
      return r.rows[0];
    });
    if (row.n !== this.options.client.n)
      throw new InputError(
        `${this.label}: client 1 runs with ${row.n} clients, this one with ${this.options.client.n} (give ` +
          `every client the same N)`,
      );
    if (row.run !== this.options.run)
      throw new InputError(
        `${this.label}: client 1 runs ${row.run}, this one ${this.options.run} (give every client the same ` +
          `workload, configuration, scale and seed)`,
      );
    await this.register(c, 'joining');
  }

  /** Inserts this client's row; a second process with the same K is refused. */
  private async register(c: pg.ClientBase, state: string): Promise<void> {
    const { k, n } = this.options.client;
    try {
      await c.query(`INSERT INTO ${CLIENTS_TABLE} (client, n, run, state) VALUES ($1, $2, $3, $4)`, [
        k,
        n,
        this.options.run,
        state,
      ]);
    } catch (e) {
      if ((e as { code?: string }).code === '23505')
        throw new InputError(
          `${this.label}: client ${k} has already joined this run (two processes with --client ${k}/${n}, or ` +
            `a ${CLIENTS_TABLE} table left by an earlier run: use a fresh database)`,
        );
      throw e;
    }
  }

  /** Registers this client as instrumented, then waits until all N are. */
  async ready(c: pg.ClientBase): Promise<void> {
    const { k, n } = this.options.client;
    if (this.first)
      await this.register(c, 'ready'); // the row the others wait for: the tables are instrumented
    else await c.query(`UPDATE ${CLIENTS_TABLE} SET state = 'ready', at = clock_timestamp() WHERE client = $1`, [k]);
    await this.until(`all ${n} clients to be ready`, async () => {
      const r = await c.query<{ c: string }>(
        `SELECT count(*)::text AS c FROM ${CLIENTS_TABLE} WHERE state IN ('ready', 'done')`,
      );
      return Number(r.rows[0].c) >= n ? true : undefined;
    });
  }

  /** Marks this client done; client 1 then waits until every client is (false: the wait ran out). */
  async done(c: pg.ClientBase): Promise<boolean> {
    await c.query(`UPDATE ${CLIENTS_TABLE} SET state = 'done', at = clock_timestamp() WHERE client = $1`, [
      this.options.client.k,
    ]);
    if (!this.first) return true;
    try {
      await this.until(`all ${this.options.client.n} clients to finish`, async () => {
        const r = await c.query<{ c: string }>(`SELECT count(*)::text AS c FROM ${CLIENTS_TABLE} WHERE state = 'done'`);
        return Number(r.rows[0].c) >= this.options.client.n ? true : undefined;
      });
      return true;
    } catch (e) {
      if (e instanceof InputError) {
        this.options.log(`warning: ${e.message}; the application's invariants are not checked`);
        return false;
      }
      throw e;
    }
  }
}
