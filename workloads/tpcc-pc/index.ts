/**
 * TPC-C PC: the paper's conflict-free TPC-C variant (section 6, "TPC-C PC"; benchbase-histories tpccPCHistories).
 * Its histories have no conflicts: no read leaves out a row some version of which matches its WHERE.
 *
 * Changes with respect to ../tpcc (whose code is reused for everything else):
 * - DELETE is replaced by UPDATE: NEW_ORDER has a `no_delivered` flag; Delivery sets it instead of deleting.
 *   The initial population has a NEW_ORDER row for every order (delivered ones flagged), so every order id
 *   below D_NEXT_O_ID has one.
 * - Reads whose WHERE could match a version the read did not return are replaced by reads on keys:
 *   * Delivery: read D_NEXT_O_ID, then the NEW_ORDER rows by key `no_o_id = ANY(1 .. next-1)` (every one
 *     exists), pick the oldest undelivered client-side, flag it (UPDATE by key), then as tpcc.
 *   * OrderStatus: read D_NEXT_O_ID, then the district's ORDER rows by key `o_id = ANY(1 .. next-1)`, and pick
 *     the customer's newest client-side (tpcc reads by o_c_id, which a concurrent NewOrder's insert can match).
 *   * StockLevel: the stock rows by key only, the threshold `s_quantity < t` applied client-side.
 *   Reads kept as in tpcc are conflict-free: by primary key, customer by (w, d, c_last) (never written, no
 *   inserts), order lines of an order (all written by the order's NewOrder, which the reader saw), and order
 *   lines of the district's last 20 orders by key range below D_NEXT_O_ID (their NewOrders precede the read).
 * - As in the paper, Delivery flags by key, so at READ COMMITTED two Deliveries may deliver the same order (the
 *   second flag write is a no-op change, the customer is credited twice): RC allows it, the checker judges it.
 *
 * Mix, configurations and scale: as tpcc.
 */
import { standardConfigs, type Queryable, type Workload, type WorkloadContext } from '../types.js';
import type { Rng } from '../lib/random.js';
import {
  TPCC_MIX,
  TPCC_TABLES,
  SQL as TPCC_SQL,
  asTpccContext,
  chooseCustomer,
  deliverOrder,
  generateTpcc,
  getCustomer,
  loadTpcc,
  newOrder,
  nowTimestamp,
  payment,
  stockLevelItems,
  tpccContext,
  tpccInvariants,
  tpccSchema,
  type TpccContext,
} from '../tpcc/index.js';
import { randInt } from '../lib/random.js';

export const PC_SQL = {
  noInsertNewOrder: 'INSERT INTO new_order (no_w_id, no_d_id, no_o_id, no_delivered) VALUES ($1, $2, $3, false)',
  osGetDistrictOrders:
    'SELECT o_id, o_c_id, o_carrier_id, o_entry_d FROM oorder WHERE o_w_id = $1 AND o_d_id = $2 AND o_id = ANY($3)',
  dlGetNewOrders:
    'SELECT no_o_id, no_delivered FROM new_order WHERE no_w_id = $1 AND no_d_id = $2 AND no_o_id = ANY($3)',
  dlMarkDelivered: 'UPDATE new_order SET no_delivered = true WHERE no_w_id = $1 AND no_d_id = $2 AND no_o_id = $3',
  slGetStock: 'SELECT s_i_id, s_quantity FROM stock WHERE s_w_id = $1 AND s_i_id = ANY($2)',
} as const;

/** Statements tpcc-pc uses: tpcc's minus the ones it replaces, plus its own. */
const {
  noInsertNewOrder: _a,
  osGetCustomerOrders: _b,
  dlGetNewOrders: _c,
  dlDeleteNewOrder: _d,
  slGetLowStock: _e,
  ...KEPT
} = TPCC_SQL;

function range(lo: number, hi: number): number[] {
  return Array.from({ length: Math.max(0, hi - lo + 1) }, (_, i) => lo + i);
}

async function nextOrderId(db: Queryable, w: number, d: number): Promise<number> {
  const rows = (await db.query(TPCC_SQL.slGetDistrict, [w, d])).rows;
  if (rows.length !== 1) throw new Error(`district ${w}/${d}: expected one row, got ${rows.length}`);
  return Number(rows[0].d_next_o_id);
}

async function orderStatusPC(db: Queryable, rng: Rng, ctx: TpccContext): Promise<void> {
  const w = randInt(rng, 1, ctx.warehouses);
  const d = randInt(rng, 1, ctx.districts);
  const cust = await getCustomer(db, w, d, chooseCustomer(rng, ctx));
  const next = await nextOrderId(db, w, d);
  const orders = (await db.query(PC_SQL.osGetDistrictOrders, [w, d, range(1, next - 1)])).rows.filter(
    (o) => Number(o.o_c_id) === Number(cust.c_id),
  );
  if (orders.length === 0) return;
  const newest = orders.reduce((a, b) => (Number(b.o_id) > Number(a.o_id) ? b : a));
  await db.query(TPCC_SQL.osGetOrderLines, [w, d, Number(newest.o_id)]);
}

async function deliveryPC(db: Queryable, rng: Rng, ctx: TpccContext): Promise<void> {
  const w = randInt(rng, 1, ctx.warehouses);
  const carrier = randInt(rng, 1, 10);
  const when = nowTimestamp();
  for (let d = 1; d <= ctx.districts; d++) {
    const next = await nextOrderId(db, w, d);
    const rows = (await db.query(PC_SQL.dlGetNewOrders, [w, d, range(1, next - 1)])).rows.filter(
      (r) => !r.no_delivered,
    );
    if (rows.length === 0) continue;
    const oId = Math.min(...rows.map((r) => Number(r.no_o_id)));
    await db.query(PC_SQL.dlMarkDelivered, [w, d, oId]);
    await deliverOrder(db, w, d, oId, carrier, when);
  }
}

async function stockLevelPC(db: Queryable, rng: Rng, ctx: TpccContext): Promise<number> {
  const { w, threshold, items } = await stockLevelItems(db, rng, ctx);
  if (items.length === 0) return 0;
  const stock = (await db.query(PC_SQL.slGetStock, [w, items])).rows;
  return new Set(stock.filter((s) => Number(s.s_quantity) < threshold).map((s) => Number(s.s_i_id))).size;
}

export const tpccPc: Workload = {
  name: 'tpcc-pc',
  description:
    'TPC-C PC: conflict-free TPC-C (Delivery flags instead of deleting; reads on keys instead of mutable columns)',
  tables: [...TPCC_TABLES],
  schema: () => tpccSchema(true),
  generate: (dir, seed, scale) => generateTpcc(dir, seed, scale, true),
  load: (client, files) => loadTpcc(client, files, true),
  mix: { ...TPCC_MIX },
  configs: standardConfigs(['NewOrder', 'Payment']),
  async transaction(type: string, db: Queryable, rng: Rng, context: WorkloadContext): Promise<void> {
    const ctx = asTpccContext(context);
    switch (type) {
      case 'NewOrder':
        return newOrder(db, rng, ctx, { insertNewOrder: PC_SQL.noInsertNewOrder });
      case 'Payment':
        return payment(db, rng, ctx);
      case 'OrderStatus':
        return orderStatusPC(db, rng, ctx);
      case 'Delivery':
        return deliveryPC(db, rng, ctx);
      case 'StockLevel':
        await stockLevelPC(db, rng, ctx);
        return;
      default:
        throw new Error(`tpcc-pc: unknown transaction type ${type}`);
    }
  },
  invariants: (db) => tpccInvariants(db, true),
  context: tpccContext,
  statements: { ...KEPT, ...PC_SQL },
};
