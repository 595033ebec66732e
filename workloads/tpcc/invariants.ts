/**
 * TPC-C consistency conditions (spec clause 3.3.2) checked after a run on a plain connection (any SQL allowed):
 *   1  W_YTD = sum(D_YTD) per warehouse
 *   2  D_NEXT_O_ID - 1 = max(O_ID) = max(NO_O_ID) per district (the NO part when the district has new orders)
 *   3  max(NO_O_ID) - min(NO_O_ID) + 1 = number of NEW_ORDER rows per district (when there are any)
 *   4  sum(O_OL_CNT) = number of ORDER_LINE rows per district
 *   5  O_CARRIER_ID is NULL iff the order has a NEW_ORDER row (tpcc-pc: an undelivered one)
 *   8  W_YTD = sum(H_AMOUNT) per warehouse
 *   9  D_YTD = sum(H_AMOUNT) per district
 * tpcc-pc keeps delivered NEW_ORDER rows (no_delivered = true): conditions 3 and 5 count the undelivered ones,
 * and condition 2 uses every NEW_ORDER row (each order has one).
 */
import type { DbRow, Queryable } from '../types.js';

const key = (...parts: unknown[]): string => parts.map(String).join('/');

async function map(
  db: Queryable,
  sql: string,
  k: (r: DbRow) => string,
  v: (r: DbRow) => unknown,
): Promise<Map<string, string>> {
  const m = new Map<string, string>();
  for (const r of (await db.query(sql)).rows) m.set(k(r), v(r) === null ? 'NULL' : String(v(r)));
  return m;
}

export async function tpccInvariants(db: Queryable, pc: boolean): Promise<string[]> {
  const out: string[] = [];
  // Comparisons are done in SQL text of exact numerics (numeric -> text normalised by ::numeric(14,2)).
  const wYtd = await map(
    db,
    'SELECT w_id, w_ytd::numeric(14,2)::text AS v FROM warehouse',
    (r) => key(r.w_id),
    (r) => r.v,
  );
  const dYtd = await map(
    db,
    'SELECT d_w_id, d_id, d_ytd::numeric(14,2)::text AS v FROM district',
    (r) => key(r.d_w_id, r.d_id),
    (r) => r.v,
  );
  const dNext = await map(
    db,
    'SELECT d_w_id, d_id, d_next_o_id AS v FROM district',
    (r) => key(r.d_w_id, r.d_id),
    (r) => r.v,
  );
  const sumD = await map(
    db,
    'SELECT d_w_id, sum(d_ytd)::numeric(14,2)::text AS v FROM district GROUP BY d_w_id',
    (r) => key(r.d_w_id),
    (r) => r.v,
  );
  const hW = await map(
    db,
    'SELECT h_w_id, sum(h_amount)::numeric(14,2)::text AS v FROM history GROUP BY h_w_id',
    (r) => key(r.h_w_id),
    (r) => r.v,
  );
  const hD = await map(
    db,
    'SELECT h_w_id, h_d_id, sum(h_amount)::numeric(14,2)::text AS v FROM history GROUP BY h_w_id, h_d_id',
    (r) => key(r.h_w_id, r.h_d_id),
    (r) => r.v,
  );
  const maxO = await map(
    db,
    'SELECT o_w_id, o_d_id, max(o_id) AS v FROM oorder GROUP BY o_w_id, o_d_id',
    (r) => key(r.o_w_id, r.o_d_id),
    (r) => r.v,
  );
  const olCnt = await map(
    db,
    'SELECT o_w_id, o_d_id, sum(o_ol_cnt) AS v FROM oorder GROUP BY o_w_id, o_d_id',
    (r) => key(r.o_w_id, r.o_d_id),
    (r) => r.v,
  );
  const olRows = await map(
    db,
    'SELECT ol_w_id, ol_d_id, count(*) AS v FROM order_line GROUP BY ol_w_id, ol_d_id',
    (r) => key(r.ol_w_id, r.ol_d_id),
    (r) => r.v,
  );
  const allNo = await map(
    db,
    'SELECT no_w_id, no_d_id, max(no_o_id) AS v FROM new_order GROUP BY no_w_id, no_d_id',
    (r) => key(r.no_w_id, r.no_d_id),
    (r) => r.v,
  );
  const open = pc ? 'WHERE NOT no_delivered' : '';
  const noStats = (
    await db.query(
      `SELECT no_w_id, no_d_id, max(no_o_id) AS mx, min(no_o_id) AS mn, count(*) AS n FROM new_order ${open} ` +
        `GROUP BY no_w_id, no_d_id`,
    )
  ).rows;
  const noByDistrict = new Map(noStats.map((r) => [key(r.no_w_id, r.no_d_id), r]));

  for (const [w, ytd] of wYtd) {
    if (ytd !== (sumD.get(w) ?? '0.00'))
      out.push(`condition 1: warehouse ${w}: W_YTD ${ytd} != sum(D_YTD) ${sumD.get(w)}`);
    if (ytd !== (hW.get(w) ?? '0.00'))
      out.push(`condition 8: warehouse ${w}: W_YTD ${ytd} != sum(H_AMOUNT) ${hW.get(w)}`);
  }
  for (const [d, next] of dNext) {
    const expected = String(Number(next) - 1);
    if ((maxO.get(d) ?? '0') !== expected)
      out.push(`condition 2: district ${d}: D_NEXT_O_ID - 1 = ${expected} != max(O_ID) ${maxO.get(d)}`);
    const maxNo = pc ? allNo.get(d) : noByDistrict.get(d)?.mx?.toString();
    if (maxNo !== undefined && maxNo !== expected)
      out.push(`condition 2: district ${d}: D_NEXT_O_ID - 1 = ${expected} != max(NO_O_ID) ${maxNo}`);
    const st = noByDistrict.get(d);
    if (st && Number(st.mx) - Number(st.mn) + 1 !== Number(st.n)) {
      out.push(
        `condition 3: district ${d}: max(NO_O_ID) - min(NO_O_ID) + 1 = ${Number(st.mx) - Number(st.mn) + 1} ` +
          `!= ${st.n} ${pc ? 'undelivered ' : ''}NEW_ORDER rows`,
      );
    }
    if ((olCnt.get(d) ?? '0') !== (olRows.get(d) ?? '0'))
      out.push(`condition 4: district ${d}: sum(O_OL_CNT) ${olCnt.get(d)} != ORDER_LINE rows ${olRows.get(d)}`);
    if (dYtd.get(d) !== (hD.get(d) ?? '0.00'))
      out.push(`condition 9: district ${d}: D_YTD ${dYtd.get(d)} != sum(H_AMOUNT) ${hD.get(d)}`);
  }

  // condition 5 (row by row, on both tables)
  const orders = (await db.query('SELECT o_w_id, o_d_id, o_id, o_carrier_id FROM oorder')).rows;
  const newOrders = (await db.query(`SELECT no_w_id, no_d_id, no_o_id${pc ? ', no_delivered' : ''} FROM new_order`))
    .rows;
  const undelivered = new Set(
    newOrders.filter((r) => !pc || !r.no_delivered).map((r) => key(r.no_w_id, r.no_d_id, r.no_o_id)),
  );
  const orderKeys = new Set<string>();
  let bad5 = 0;
  for (const o of orders) {
    const k = key(o.o_w_id, o.o_d_id, o.o_id);
    orderKeys.add(k);
    if ((o.o_carrier_id === null) !== undelivered.has(k) && bad5++ < 5) {
      out.push(
        `condition 5: order ${k}: O_CARRIER_ID ${o.o_carrier_id} ` +
          `but ${undelivered.has(k) ? 'an undelivered' : 'no undelivered'} NEW_ORDER row`,
      );
    }
  }
  for (const n of newOrders) {
    const k = key(n.no_w_id, n.no_d_id, n.no_o_id);
    if (!orderKeys.has(k)) out.push(`NEW_ORDER row ${k} has no ORDER row`);
  }
  if (pc) {
    const withNo = new Set(newOrders.map((r) => key(r.no_w_id, r.no_d_id, r.no_o_id)));
    for (const k of orderKeys) if (!withNo.has(k)) out.push(`tpcc-pc: order ${k} has no NEW_ORDER row`);
  }
  return out;
}
