/**
 * TPC-C (TPC Benchmark C, revision 5.11: clauses 1.3 tables, 2.4-2.8 transactions, 3.3.2 consistency,
 * 4.3.3.1 population; BenchBase's tpcc procedures; the paper's instrumented variant, section 6 of
 * "mixed-isolation SQL checking" / benchbase-histories tpccHistories) with every statement over one table.
 *
 * Mix (clause 5.2.3 minimums as BenchBase's sample weights): NewOrder 45, Payment 43, OrderStatus 4, Delivery 4,
 * StockLevel 4. Configurations: ser, si, rc, and ser+rc / si+rc with NewOrder and Payment at SER (SI), the
 * rest at RC (the paper's). Sizes per scale: see context.ts; statement splits: see procedures.ts.
 */
import { standardConfigs, type Queryable, type Workload, type WorkloadContext } from '../types.js';
import type { Rng } from '../lib/random.js';
import { tpccContext, type TpccContext } from './context.js';
import { generateTpcc } from './generate.js';
import { tpccInvariants } from './invariants.js';
import { loadTpcc } from './load.js';
import { delivery, newOrder, orderStatus, payment, stockLevel, SQL } from './procedures.js';
import { TPCC_TABLES, tpccSchema } from './schema.js';

export { tpccContext, type TpccContext, lastName } from './context.js';
export { tpccColumns, tpccSchema, TPCC_TABLES } from './schema.js';
export { generateTpcc, LOAD_TIME } from './generate.js';
export { loadTpcc } from './load.js';
export { tpccInvariants } from './invariants.js';
export * from './procedures.js';

export const TPCC_MIX: Record<string, number> = {
  NewOrder: 45,
  Payment: 43,
  OrderStatus: 4,
  Delivery: 4,
  StockLevel: 4,
};

export function asTpccContext(ctx: WorkloadContext): TpccContext {
  if (typeof ctx.districts !== 'number' || typeof ctx.customersPerDistrict !== 'number') return tpccContext(ctx.scale);
  return ctx as TpccContext;
}

export const tpcc: Workload = {
  name: 'tpcc',
  description:
    'TPC-C: NewOrder, Payment, OrderStatus, Delivery, StockLevel over 9 tables; joins split into single-table ' +
    'statements',
  tables: [...TPCC_TABLES],
  schema: () => tpccSchema(false),
  generate: (dir, seed, scale) => generateTpcc(dir, seed, scale, false),
  load: (client, files) => loadTpcc(client, files, false),
  readOnly: ['OrderStatus', 'StockLevel'],
  mix: TPCC_MIX,
  configs: standardConfigs(['NewOrder', 'Payment']),
  async transaction(type: string, db: Queryable, rng: Rng, context: WorkloadContext): Promise<void> {
    const ctx = asTpccContext(context);
    switch (type) {
      case 'NewOrder':
        return newOrder(db, rng, ctx);
      case 'Payment':
        return payment(db, rng, ctx);
      case 'OrderStatus':
        return orderStatus(db, rng, ctx);
      case 'Delivery':
        return delivery(db, rng, ctx);
      case 'StockLevel':
        await stockLevel(db, rng, ctx);
        return;
      default:
        throw new Error(`tpcc: unknown transaction type ${type}`);
    }
  },
  invariants: (db) => tpccInvariants(db, false),
  context: tpccContext,
  statements: { ...SQL },
};
