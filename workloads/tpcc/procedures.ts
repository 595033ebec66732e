/**
 * The five TPC-C transactions (spec clauses 2.4 NewOrder, 2.5 Payment, 2.6 OrderStatus, 2.7 Delivery,
 * 2.8 StockLevel), following BenchBase's tpcc procedures and the paper's history-instrumented variant
 * (benchbase-histories, tpccHistories), with every statement over ONE table:
 *
 * - NewOrder: the district's next order id is taken with `UPDATE district ... RETURNING` (BenchBase reads it with
 *   SELECT ... FOR UPDATE, then updates): one statement, and order ids stay unique at READ COMMITTED. Stock
 *   quantity is read and written back (client-side arithmetic, as the spec), s_ytd/s_order_cnt/s_remote_cnt are
 *   incremented in SQL. ol_amount = quantity x price exactly (bigint cents). 1% of orders end with an unused item
 *   id: the item read returns nothing and the transaction throws RollbackError (clause 2.4.2.3).
 * - Payment: warehouse and district YTD, customer balance/YTD payment are updated in SQL (`x = x + $1`, numeric
 *   parameters as strings); BC customers get the spec's c_data prefix (read, then written back).
 * - Customer by last name (60% in Payment and OrderStatus): read the candidates by (w, d, c_last), sort by c_first
 *   client-side and take position ceil(n/2) (clause 2.5.2.2).
 * - OrderStatus: all orders of the customer are read (no ORDER BY ... LIMIT 1), the newest is picked client-side,
 *   then its order lines by key.
 * - Delivery: for each district, read all NEW_ORDER rows of the district (the paper's choice: every candidate
 *   instead of LIMIT 1), delete the oldest, read the order's customer, set its carrier and the lines' delivery
 *   date, read the lines and sum ol_amount client-side (exact), credit the customer. A delete that finds no row
 *   (a concurrent Delivery took it, possible at READ COMMITTED) rolls back (RollbackError), as BenchBase does.
 * - StockLevel: the join order_line x stock of the spec is split (as the paper): read the order lines of the
 *   district's last 20 orders, then the stock rows of those items `s_i_id = ANY($2)` with the threshold predicate
 *   `s_quantity < $3` (kept in SQL as the paper's TPC-C, so the read has a WHERE over a mutable column), counting
 *   distinct items client-side. tpcc-pc drops the predicate and filters client-side.
 *
 * Random inputs (clause 2.x.1): warehouse uniform; district uniform; customer NURand(A, 1, C); items
 * NURand(A, 1, I); 5..15 lines; quantity 1..10; 1% remote supply warehouse and 15% remote customer (only with
 * more than one warehouse); h_amount 1.00..5000.00; carrier 1..10; threshold 10..20.
 */
import { RollbackError, type DbRow, type Queryable } from '../types.js';
import { nurand, randInt, type Rng } from '../lib/random.js';
import { fromUnits, toUnits } from '../lib/decimal.js';
import { lastName, type TpccContext } from './context.js';

const DIST_COLS = Array.from({ length: 10 }, (_, i) => `s_dist_${String(i + 1).padStart(2, '0')}`).join(', ');
const CUSTOMER_COLS =
  'c_id, c_first, c_middle, c_last, c_street_1, c_street_2, c_city, c_state, c_zip, c_phone, c_credit, ' +
  'c_credit_lim, c_discount, c_balance, c_ytd_payment, c_payment_cnt, c_since';

export const SQL = {
  // NewOrder
  noGetWarehouse: 'SELECT w_tax FROM warehouse WHERE w_id = $1',
  noNextOrderId:
    'UPDATE district SET d_next_o_id = d_next_o_id + 1 WHERE d_w_id = $1 AND d_id = $2 RETURNING d_next_o_id, d_tax',
  noGetCustomer: 'SELECT c_discount, c_last, c_credit FROM customer WHERE c_w_id = $1 AND c_d_id = $2 AND c_id = $3',
  noInsertOrder:
    'INSERT INTO oorder (o_w_id, o_d_id, o_id, o_c_id, o_carrier_id, o_ol_cnt, o_all_local, o_entry_d) VALUES ' +
    '($1, $2, $3, $4, NULL, $5, $6, $7)',
  noInsertNewOrder: 'INSERT INTO new_order (no_w_id, no_d_id, no_o_id) VALUES ($1, $2, $3)',
  noGetItem: 'SELECT i_price, i_name, i_data FROM item WHERE i_id = $1',
  noGetStock: `SELECT s_quantity, s_data, ${DIST_COLS} FROM stock WHERE s_w_id = $1 AND s_i_id = $2`,
  noUpdateStock:
    'UPDATE stock SET s_quantity = $1, s_ytd = s_ytd + $2, s_order_cnt = s_order_cnt + 1, s_remote_cnt = ' +
    's_remote_cnt + $3 WHERE s_w_id = $4 AND s_i_id = $5',
  noInsertOrderLine:
    'INSERT INTO order_line (ol_w_id, ol_d_id, ol_o_id, ol_number, ol_i_id, ol_delivery_d, ol_amount, ' +
    'ol_supply_w_id, ol_quantity, ol_dist_info) VALUES ($1, $2, $3, $4, $5, NULL, $6, $7, $8, $9)',
  // Payment
  payUpdateWarehouse: 'UPDATE warehouse SET w_ytd = w_ytd + $1 WHERE w_id = $2',
  payGetWarehouse: 'SELECT w_name, w_street_1, w_street_2, w_city, w_state, w_zip FROM warehouse WHERE w_id = $1',
  payUpdateDistrict: 'UPDATE district SET d_ytd = d_ytd + $1 WHERE d_w_id = $2 AND d_id = $3',
  payGetDistrict:
    'SELECT d_name, d_street_1, d_street_2, d_city, d_state, d_zip FROM district WHERE d_w_id = $1 AND d_id = $2',
  payGetCustomerData: 'SELECT c_data FROM customer WHERE c_w_id = $1 AND c_d_id = $2 AND c_id = $3',
  payUpdateCustomer:
    'UPDATE customer SET c_balance = c_balance - $1, c_ytd_payment = c_ytd_payment + $1, c_payment_cnt = ' +
    'c_payment_cnt + 1 WHERE c_w_id = $2 AND c_d_id = $3 AND c_id = $4',
  payUpdateCustomerBC:
    'UPDATE customer SET c_balance = c_balance - $1, c_ytd_payment = c_ytd_payment + $1, c_payment_cnt = ' +
    'c_payment_cnt + 1, c_data = $2 WHERE c_w_id = $3 AND c_d_id = $4 AND c_id = $5',
  payInsertHistory:
    'INSERT INTO history (h_c_d_id, h_c_w_id, h_c_id, h_d_id, h_w_id, h_date, h_amount, h_data) VALUES ($1, ' +
    '$2, $3, $4, $5, $6, $7, $8)',
  // Payment and OrderStatus
  getCustomerById: `SELECT ${CUSTOMER_COLS} FROM customer WHERE c_w_id = $1 AND c_d_id = $2 AND c_id = $3`,
  getCustomersByLastName: `SELECT ${CUSTOMER_COLS} FROM customer WHERE c_w_id = $1 AND c_d_id = $2 AND c_last = $3`,
  // OrderStatus
  osGetCustomerOrders:
    'SELECT o_id, o_carrier_id, o_entry_d FROM oorder WHERE o_w_id = $1 AND o_d_id = $2 AND o_c_id = $3',
  osGetOrderLines:
    'SELECT ol_number, ol_i_id, ol_supply_w_id, ol_quantity, ol_amount, ol_delivery_d FROM order_line WHERE ' +
    'ol_w_id = $1 AND ol_d_id = $2 AND ol_o_id = $3',
  // Delivery
  dlGetNewOrders: 'SELECT no_o_id FROM new_order WHERE no_w_id = $1 AND no_d_id = $2',
  dlDeleteNewOrder: 'DELETE FROM new_order WHERE no_w_id = $1 AND no_d_id = $2 AND no_o_id = $3',
  dlGetOrder: 'SELECT o_c_id FROM oorder WHERE o_w_id = $1 AND o_d_id = $2 AND o_id = $3',
  dlUpdateCarrier: 'UPDATE oorder SET o_carrier_id = $1 WHERE o_w_id = $2 AND o_d_id = $3 AND o_id = $4',
  dlUpdateDeliveryDate: 'UPDATE order_line SET ol_delivery_d = $1 WHERE ol_w_id = $2 AND ol_d_id = $3 AND ol_o_id = $4',
  dlGetOrderLineAmounts:
    'SELECT ol_number, ol_amount FROM order_line WHERE ol_w_id = $1 AND ol_d_id = $2 AND ol_o_id = $3',
  dlUpdateCustomer:
    'UPDATE customer SET c_balance = c_balance + $1, c_delivery_cnt = c_delivery_cnt + 1 WHERE c_w_id = $2 ' +
    'AND c_d_id = $3 AND c_id = $4',
  // StockLevel
  slGetDistrict: 'SELECT d_next_o_id FROM district WHERE d_w_id = $1 AND d_id = $2',
  slGetOrderLines:
    'SELECT ol_o_id, ol_number, ol_i_id FROM order_line WHERE ol_w_id = $1 AND ol_d_id = $2 AND ol_o_id >= $3 ' +
    'AND ol_o_id < $4',
  slGetLowStock: 'SELECT s_i_id, s_quantity FROM stock WHERE s_w_id = $1 AND s_i_id = ANY($2) AND s_quantity < $3',
} as const;

/** Timestamp for rows written by a transaction (wall clock, millisecond precision, UTC). */
export function nowTimestamp(): string {
  return new Date().toISOString().replace('T', ' ').replace('Z', '');
}

function one<T>(rows: T[], what: string): T {
  if (rows.length !== 1) throw new Error(`${what}: expected one row, got ${rows.length}`);
  return rows[0];
}

/** A warehouse other than `home` (uniform), or `home` when there is only one. */
function otherWarehouse(rng: Rng, ctx: TpccContext, home: number): number {
  if (ctx.warehouses === 1) return home;
  const w = randInt(rng, 1, ctx.warehouses - 1);
  return w >= home ? w + 1 : w;
}

export interface CustomerChoice {
  byName: boolean;
  cId: number;
  cLast: string;
}

/** 60% by last name NURand(255-ish, 0, names-1), else by id NURand(1023-ish, 1, C) (clauses 2.5.1.2, 2.6.1.2). */
export function chooseCustomer(rng: Rng, ctx: TpccContext): CustomerChoice {
  const byName = randInt(rng, 1, 100) <= 60;
  if (byName) {
    const n = nurand(rng, ctx.nurand.cLast.A, ctx.nurand.cLast.C, 0, ctx.lastNames - 1);
    return { byName, cId: 0, cLast: lastName(n) };
  }
  return { byName, cId: nurand(rng, ctx.nurand.cId.A, ctx.nurand.cId.C, 1, ctx.customersPerDistrict), cLast: '' };
}

/** Reads the customer by id, or the candidates by last name and picks the middle one sorted by c_first. */
export async function getCustomer(db: Queryable, w: number, d: number, choice: CustomerChoice): Promise<DbRow> {
  if (!choice.byName) {
    return one((await db.query(SQL.getCustomerById, [w, d, choice.cId])).rows, `customer ${w}/${d}/${choice.cId}`);
  }
  const rows = (await db.query(SQL.getCustomersByLastName, [w, d, choice.cLast])).rows;
  if (rows.length === 0) throw new Error(`no customer named ${choice.cLast} in district ${w}/${d}`);
  const first = (r: DbRow) => r.c_first as string;
  rows.sort((a, b) => (first(a) < first(b) ? -1 : first(a) > first(b) ? 1 : (a.c_id as number) - (b.c_id as number)));
  return rows[Math.ceil(rows.length / 2) - 1];
}

export interface NewOrderOptions {
  /** INSERT of the NEW_ORDER row, parameters ($1 w, $2 d, $3 o). */
  insertNewOrder: string;
}

export async function newOrder(
  db: Queryable,
  rng: Rng,
  ctx: TpccContext,
  opts: NewOrderOptions = { insertNewOrder: SQL.noInsertNewOrder },
): Promise<void> {
  const w = randInt(rng, 1, ctx.warehouses);
  const d = randInt(rng, 1, ctx.districts);
  const c = nurand(rng, ctx.nurand.cId.A, ctx.nurand.cId.C, 1, ctx.customersPerDistrict);
  const olCnt = randInt(rng, 5, 15);
  const rollback = randInt(rng, 1, 100) === 1;
  const lines: { item: number; supplyW: number; quantity: number }[] = [];
  for (let n = 1; n <= olCnt; n++) {
    const item =
      n === olCnt && rollback ? ctx.items + 1 : nurand(rng, ctx.nurand.olIId.A, ctx.nurand.olIId.C, 1, ctx.items);
    const supplyW = ctx.warehouses > 1 && randInt(rng, 1, 100) === 1 ? otherWarehouse(rng, ctx, w) : w;
    lines.push({ item, supplyW, quantity: randInt(rng, 1, 10) });
  }
  const allLocal = lines.every((l) => l.supplyW === w) ? 1 : 0;
  const entry = nowTimestamp();

  one((await db.query(SQL.noGetWarehouse, [w])).rows, `warehouse ${w}`);
  const dist = one((await db.query(SQL.noNextOrderId, [w, d])).rows, `district ${w}/${d}`);
  const oId = Number(dist.d_next_o_id) - 1;
  one((await db.query(SQL.noGetCustomer, [w, d, c])).rows, `customer ${w}/${d}/${c}`);
  await db.query(SQL.noInsertOrder, [w, d, oId, c, olCnt, allLocal, entry]);
  await db.query(opts.insertNewOrder, [w, d, oId]);

  for (let n = 1; n <= olCnt; n++) {
    const line = lines[n - 1];
    const items = (await db.query(SQL.noGetItem, [line.item])).rows;
    if (items.length === 0)
      throw new RollbackError(`NewOrder: item ${line.item} not found (the 1% rollback, clause 2.4.2.3)`);
    const price = toUnits(items[0].i_price as string);
    const stock = one(
      (await db.query(SQL.noGetStock, [line.supplyW, line.item])).rows,
      `stock ${line.supplyW}/${line.item}`,
    );
    const q = Number(stock.s_quantity);
    const newQ = q >= line.quantity + 10 ? q - line.quantity : q - line.quantity + 91;
    const remote = line.supplyW === w ? 0 : 1;
    await db.query(SQL.noUpdateStock, [newQ, line.quantity, remote, line.supplyW, line.item]);
    const amount = fromUnits(price * BigInt(line.quantity));
    const distInfo = stock[`s_dist_${String(d).padStart(2, '0')}`];
    await db.query(SQL.noInsertOrderLine, [w, d, oId, n, line.item, amount, line.supplyW, line.quantity, distInfo]);
  }
}

export async function payment(db: Queryable, rng: Rng, ctx: TpccContext): Promise<void> {
  const w = randInt(rng, 1, ctx.warehouses);
  const d = randInt(rng, 1, ctx.districts);
  const local = ctx.warehouses === 1 || randInt(rng, 1, 100) <= 85;
  const cW = local ? w : otherWarehouse(rng, ctx, w);
  const cD = local ? d : randInt(rng, 1, ctx.districts);
  const choice = chooseCustomer(rng, ctx);
  const amount = fromUnits(BigInt(randInt(rng, 100, 500000)));

  await db.query(SQL.payUpdateWarehouse, [amount, w]);
  const wh = one((await db.query(SQL.payGetWarehouse, [w])).rows, `warehouse ${w}`);
  await db.query(SQL.payUpdateDistrict, [amount, w, d]);
  const di = one((await db.query(SQL.payGetDistrict, [w, d])).rows, `district ${w}/${d}`);
  const cust = await getCustomer(db, cW, cD, choice);
  const cId = Number(cust.c_id);
  if (cust.c_credit === 'BC') {
    const old = one((await db.query(SQL.payGetCustomerData, [cW, cD, cId])).rows, `customer ${cW}/${cD}/${cId}`)
      .c_data as string;
    const cData = `${cId} ${cD} ${cW} ${d} ${w} ${amount} | ${old}`.slice(0, 500);
    await db.query(SQL.payUpdateCustomerBC, [amount, cData, cW, cD, cId]);
  } else {
    await db.query(SQL.payUpdateCustomer, [amount, cW, cD, cId]);
  }
  const hData = `${wh.w_name}    ${di.d_name}`.slice(0, 24);
  await db.query(SQL.payInsertHistory, [cD, cW, cId, d, w, nowTimestamp(), amount, hData]);
}

export async function orderStatus(db: Queryable, rng: Rng, ctx: TpccContext): Promise<void> {
  const w = randInt(rng, 1, ctx.warehouses);
  const d = randInt(rng, 1, ctx.districts);
  const cust = await getCustomer(db, w, d, chooseCustomer(rng, ctx));
  const orders = (await db.query(SQL.osGetCustomerOrders, [w, d, Number(cust.c_id)])).rows;
  if (orders.length === 0) return; // possible only for customers without an initial order (not generated)
  const newest = orders.reduce((a, b) => (Number(b.o_id) > Number(a.o_id) ? b : a));
  await db.query(SQL.osGetOrderLines, [w, d, Number(newest.o_id)]);
}

/** The part of Delivery after choosing the order: customer, carrier, delivery dates, amount, balance. */
export async function deliverOrder(
  db: Queryable,
  w: number,
  d: number,
  oId: number,
  carrier: number,
  when: string,
): Promise<void> {
  const order = one((await db.query(SQL.dlGetOrder, [w, d, oId])).rows, `order ${w}/${d}/${oId}`);
  await db.query(SQL.dlUpdateCarrier, [carrier, w, d, oId]);
  await db.query(SQL.dlUpdateDeliveryDate, [when, w, d, oId]);
  const lines = (await db.query(SQL.dlGetOrderLineAmounts, [w, d, oId])).rows;
  const total = lines.reduce<bigint>((acc, l) => acc + toUnits(l.ol_amount as string), 0n);
  await db.query(SQL.dlUpdateCustomer, [fromUnits(total), w, d, Number(order.o_c_id)]);
}

export async function delivery(db: Queryable, rng: Rng, ctx: TpccContext): Promise<void> {
  const w = randInt(rng, 1, ctx.warehouses);
  const carrier = randInt(rng, 1, 10);
  const when = nowTimestamp();
  for (let d = 1; d <= ctx.districts; d++) {
    const rows = (await db.query(SQL.dlGetNewOrders, [w, d])).rows;
    if (rows.length === 0) continue; // no undelivered order in this district (clause 2.7.4.2: skipped)
    const oId = Math.min(...rows.map((r) => Number(r.no_o_id)));
    const deleted = await db.query(SQL.dlDeleteNewOrder, [w, d, oId]);
    if (deleted.rowCount !== 1)
      throw new RollbackError(`Delivery: new order ${w}/${d}/${oId} was delivered concurrently`);
    await deliverOrder(db, w, d, oId, carrier, when);
  }
}

/** StockLevel's random inputs, and the district's last 20 orders' item ids. */
export async function stockLevelItems(
  db: Queryable,
  rng: Rng,
  ctx: TpccContext,
): Promise<{ w: number; threshold: number; items: number[] }> {
  const w = randInt(rng, 1, ctx.warehouses);
  const d = randInt(rng, 1, ctx.districts);
  const threshold = randInt(rng, 10, 20);
  const next = Number(one((await db.query(SQL.slGetDistrict, [w, d])).rows, `district ${w}/${d}`).d_next_o_id);
  const lines = (await db.query(SQL.slGetOrderLines, [w, d, next - 20, next])).rows;
  const items = [...new Set(lines.map((l) => Number(l.ol_i_id)))].sort((a, b) => a - b);
  return { w, threshold, items };
}

export async function stockLevel(db: Queryable, rng: Rng, ctx: TpccContext): Promise<number> {
  const { w, threshold, items } = await stockLevelItems(db, rng, ctx);
  if (items.length === 0) return 0;
  const low = (await db.query(SQL.slGetLowStock, [w, items, threshold])).rows;
  return new Set(low.map((s) => Number(s.s_i_id))).size;
}

export const TPCC_TYPES = ['NewOrder', 'Payment', 'OrderStatus', 'Delivery', 'StockLevel'] as const;
