/**
 * The database's own types in binary format: enums, domains, composite types, range and multirange types and arrays
 * of them, which drivers that
 * introspect the catalog (asyncpg) bind and read in binary. When a client first uses such a type's oid in binary,
 * the proxy reads the type from the catalog (pg_type, pg_attribute), on a connection of its own (outside the
 * client's transactions: a catalog read there would take their snapshot), and keeps its codec (formats.ts
 * TypeCodecs):
 *
 *   enum       its label's text (enum_send)
 *   domain     its base type's codec
 *   array      an array of its element type's codec
 *   composite  a record of its columns' codecs (binary-record.ts), when every column has one
 *   range      a range of its subtype's codec (binary-range.ts; pg_range), and a multirange of its range's
 *
 * Any other type (a base type of an extension) is known not to be converted: refused in binary, as before. The
 * codecs are forgotten when a client of the proxy creates, alters or drops a type or domain (connection.ts), so a
 * composite altered since is read again; one altered by another connection is not seen, but its values then fail
 * to convert (an error, never other bytes: the codecs check what they read).
 */
import { recordCodec } from './binary-record.js';
import { arrayCodec, type Codec, multirangeCodec, rangeCodec, textual, type TypeCodecs } from './formats.js';

/** A catalog query on the proxy's own connection: its rows, each an array of text values. */
export type CatalogQuery = (sql: string, values: unknown[]) => Promise<(string | null)[][]>;

const TYPES_SQL =
  'SELECT oid::int4::text, typtype::text, typbasetype::int4::text, typelem::int4::text, typrelid::int4::text, ' +
  'typsend::text FROM pg_type WHERE oid = ANY($1::oid[])';
const COLUMNS_SQL =
  'SELECT attrelid::int4::text, atttypid::int4::text FROM pg_attribute ' +
  'WHERE attrelid = ANY($1::oid[]) AND attnum > 0 AND NOT attisdropped ORDER BY attrelid, attnum';
/** A range type's subtype; a multirange type's range type (asked only for one: PostgreSQL 14 on). */
const RANGES_SQL = 'SELECT rngtypid::int4::text, rngsubtype::int4::text FROM pg_range WHERE rngtypid = ANY($1::oid[])';
const MULTIRANGES_SQL =
  'SELECT rngmultitypid::int4::text, rngtypid::int4::text FROM pg_range WHERE rngmultitypid = ANY($1::oid[])';

interface TypeRow {
  oid: number;
  typtype: string;
  base: number;
  elem: number;
  rel: number;
  send: string;
  /** A range's subtype, a multirange's range type (0: neither). */
  of: number;
}

/** Finds the codecs of these types (and of the types they are made of) in the catalog, into `types`. */
export async function resolveTypes(oids: number[], types: TypeCodecs, query: CatalogQuery): Promise<void> {
  const rows = new Map<number, TypeRow>();
  const columns = new Map<number, number[]>();
  // read every type reachable from these (base types, elements, columns), breadth first
  let wanted = [...new Set(oids)].filter((o) => !types.known(o));
  while (wanted.length > 0) {
    const found = await query(TYPES_SQL, [wanted]);
    const next = new Set<number>();
    const relations: number[] = [];
    for (const [oid, typtype, base, elem, rel, send] of found) {
      const r = {
        oid: Number(oid),
        typtype: typtype!,
        base: Number(base),
        elem: Number(elem),
        rel: Number(rel),
        send: send!,
        of: 0,
      };
      rows.set(r.oid, r);
      if (r.typtype === 'd') next.add(r.base);
      if (r.send === 'array_send') next.add(r.elem);
      if (r.typtype === 'c') relations.push(r.rel);
    }
    for (const [kind, sql] of [
      ['r', RANGES_SQL],
      ['m', MULTIRANGES_SQL],
    ]) {
      const of = [...rows.values()].filter((r) => r.typtype === kind && r.of === 0).map((r) => r.oid);
      if (of.length === 0) continue;
      for (const [oid, made] of await query(sql, [of])) {
        rows.get(Number(oid))!.of = Number(made);
        next.add(Number(made));
      }
    }
    if (relations.length > 0) {
      for (const [rel, att] of await query(COLUMNS_SQL, [relations])) {
        const list = columns.get(Number(rel)) ?? [];
        list.push(Number(att));
        columns.set(Number(rel), list);
        next.add(Number(att));
      }
    }
    // (a type the catalog does not show, e.g. made in a client's transaction not committed yet, stays unknown: read
    // again at its next use)
    wanted = [...next].filter((o) => !types.known(o) && !rows.has(o));
  }
  const building = new Set<number>();
  const build = (oid: number): Codec | undefined => {
    if (types.known(oid)) return types.codecFor(oid);
    const r = rows.get(oid);
    if (!r || building.has(oid)) return undefined;
    building.add(oid);
    let codec: Codec | undefined;
    if (r.typtype === 'e') codec = textual;
    else if (r.typtype === 'd') codec = build(r.base);
    else if (r.send === 'array_send') {
      const e = build(r.elem);
      codec = e ? arrayCodec(r.elem, e, types) : undefined;
    } else if ((r.typtype === 'r' || r.typtype === 'm') && r.of !== 0) {
      const of = build(r.of);
      codec = of ? (r.typtype === 'r' ? rangeCodec(of) : multirangeCodec(of)) : undefined;
    } else if (r.typtype === 'c') {
      const cols = (columns.get(r.rel) ?? []).map((o) => ({ oid: o, codec: build(o) }));
      if (cols.every((c): c is { oid: number; codec: Codec } => c.codec !== undefined)) codec = recordCodec(cols);
    }
    types.add(oid, codec ?? null);
    return codec;
  };
  for (const oid of rows.keys()) build(oid);
}
