/**
 * A statement run as a server portal fetched in parts, as a client fetches it with Executes of a row limit
 * (docs/recording.md, "Through isocheck proxy": the proxy hands a client's row limit to the server, so that rows
 * the client never fetches are never computed, and a read is recorded `partial` while rows may be left).
 *
 *   first part: Parse (unless prepared), Bind into the named portal, Describe it, Execute with the limit, Sync
 *   each next part: Execute of the same portal with its limit, Sync
 *
 * Each part is one round trip that pg's queue sees as a whole statement (it ends at ReadyForQuery), so other
 * statements may run between the parts. The portal lives until its transaction ends: the caller keeps it in a
 * transaction block (a Sync outside one would close it). PortalSuspended marks `suspended`: rows may be left.
 */
import type pg from 'pg';
import { RecordedQuery, type TextRow } from './events.js';
import type { RecordedPlan } from './rewrite.js';

/** What pg's Query does with a connection, as far as a part needs it. */
interface PartConnection {
  execute(x: { portal: string; rows: number }): void;
  sync(): void;
}

/** pg's Query internals this class takes over (pg/lib/query.js). */
interface QueryInternals {
  portal: string;
  rows?: number;
  prepare(connection: PartConnection): void;
}

export class PortalQuery extends RecordedQuery {
  /** The server suspended the portal (PortalSuspended): rows may be left for the next part. */
  suspended = false;
  /** The server's description of the portal's columns (from the first part's Describe). */
  fields: pg.FieldDef[] | undefined;
  private readonly next: boolean;

  constructor(
    plan: Pick<RecordedPlan, 'sql' | 'appRows' | 'added'>,
    values: unknown[],
    name: string | undefined,
    rowMode: 'array' | undefined,
    types: pg.CustomTypesConfig,
    portal: string,
    /** The part's row limit (0: all that is left). */
    rows: number,
    /** The first part's columns: this is a next part (an Execute of the portal, no Bind, no Describe). */
    described?: pg.FieldDef[],
  ) {
    super(plan, values, name, rowMode, types);
    const q = this as unknown as QueryInternals;
    q.portal = portal;
    q.rows = rows;
    this.next = described !== undefined;
    if (described) this.handleRowDescription({ fields: described });
  }

  /** Always the extended protocol (a part with no parameters and no limit would otherwise go as a Query). */
  requiresPreparation(): boolean {
    return true;
  }

  prepare(connection: PartConnection): void {
    if (this.next) this._getRows(connection, (this as unknown as QueryInternals).rows ?? 0);
    else (Object.getPrototypeOf(PortalQuery.prototype) as QueryInternals).prepare.call(this, connection);
  }

  /** The Execute with the part's limit, then Sync (pg would Flush and fetch the rest itself at PortalSuspended). */
  _getRows(connection: PartConnection, rows: number): void {
    connection.execute({ portal: (this as unknown as QueryInternals).portal, rows });
    connection.sync();
  }

  override handleRowDescription(msg: { fields: pg.FieldDef[] }): void {
    this.fields = msg.fields;
    super.handleRowDescription(msg);
  }

  handlePortalSuspended(): void {
    this.suspended = true;
  }

  override handleCommandComplete(msg: unknown): void {
    this.app.addCommandComplete(msg);
  }

  handleEmptyQuery(): void {}
}

/** A part's result as the application sees it: suspended while rows may be left, `more` fetches the next part. */
export type FetchedResult = pg.QueryResult & {
  suspended: boolean;
  /** The next part (up to `rows` rows, 0: all that is left). */
  more(rows: number): Promise<FetchedResult>;
};

/** The rows of a part, for what the recorder records of them. */
export type PartRows = (added: TextRow[], suspended: boolean) => void;
