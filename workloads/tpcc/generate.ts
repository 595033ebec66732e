/**
 * TPC-C initial population (spec clause 4.3.3.1), scaled by tpccContext(scale), deterministic from (seed, scale):
 * one seedrandom stream per table. Initial HISTORY has one row per customer with H_AMOUNT 10.00, and
 * D_YTD = 10.00 x customers per district, W_YTD = sum of its D_YTD, C_BALANCE -10.00, C_YTD_PAYMENT 10.00, so
 * consistency conditions 1, 8 and 9 hold from the start (the spec's 30,000.00 / 300,000.00 at full size).
 * Orders: one per customer (o_c_id a random permutation), the last 30% undelivered (NULL carrier, a NEW_ORDER
 * row, non-zero amounts, NULL delivery date). With `pc`, every order gets a NEW_ORDER row, delivered ones with
 * no_delivered = true.
 */
import { join } from 'node:path';
import { mkdir } from 'node:fs/promises';
import { CsvWriter, type Cell } from '../lib/csv.js';
import { astring, chance, decimalIn, nstring, nurand, permutation, randInt, rngFor, type Rng } from '../lib/random.js';
import { fromUnits } from '../lib/decimal.js';
import { lastName, tpccContext, type TpccContext } from './context.js';
import { TPCC_TABLES, tpccColumns } from './schema.js';

/** Load time of the generated rows (fixed, so files are byte-identical across runs). */
export const LOAD_TIME = '2024-01-01 00:00:00';

function data(rng: Rng): string {
  // i_data / s_data: a-string [26..50]; 10% contain "ORIGINAL" at a random position (clause 4.3.3.1)
  const s = astring(rng, 26, 50);
  if (!chance(rng, 0.1)) return s;
  const at = randInt(rng, 0, s.length - 8);
  return `${s.slice(0, at)}ORIGINAL${s.slice(at + 8)}`;
}

function zip(rng: Rng): string {
  return `${nstring(rng, 4, 4)}11111`;
}

function state(rng: Rng): string {
  const L = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ';
  return L[randInt(rng, 0, 25)] + L[randInt(rng, 0, 25)];
}

function address(rng: Rng): Cell[] {
  return [astring(rng, 10, 20), astring(rng, 10, 20), astring(rng, 10, 20), state(rng), zip(rng)];
}

export async function generateTpcc(
  dir: string,
  seed: string,
  scale: number,
  pc: boolean,
): Promise<Record<string, string>> {
  const ctx: TpccContext = tpccContext(scale);
  const cols = tpccColumns(pc);
  const w: Record<string, CsvWriter> = {};
  for (const t of TPCC_TABLES) w[t] = new CsvWriter(cols[t]);
  const custYtd = 1000n * BigInt(ctx.customersPerDistrict); // 10.00 per customer, in cents

  const ri = rngFor(seed, 'tpcc/item');
  for (let i = 1; i <= ctx.items; i++) {
    w.item.row([i, astring(ri, 14, 24), decimalIn(ri, 100, 10000, 2), data(ri), randInt(ri, 1, 10000)]);
  }

  let hId = 0;
  for (let wid = 1; wid <= ctx.warehouses; wid++) {
    const rw = rngFor(seed, `tpcc/warehouse/${wid}`);
    w.warehouse.row([
      wid,
      fromUnits(custYtd * BigInt(ctx.districts)),
      decimalIn(rw, 0, 2000, 4),
      astring(rw, 6, 10),
      ...address(rw),
    ]);

    const rs = rngFor(seed, `tpcc/stock/${wid}`);
    for (let i = 1; i <= ctx.items; i++) {
      const dists = Array.from({ length: 10 }, () => astring(rs, 24, 24));
      w.stock.row([wid, i, randInt(rs, 10, 100), 0, 0, 0, data(rs), ...dists]);
    }

    for (let did = 1; did <= ctx.districts; did++) {
      const rd = rngFor(seed, `tpcc/district/${wid}/${did}`);
      w.district.row([
        wid,
        did,
        fromUnits(custYtd),
        decimalIn(rd, 0, 2000, 4),
        ctx.ordersPerDistrict + 1,
        astring(rd, 6, 10),
        ...address(rd),
      ]);

      const rc = rngFor(seed, `tpcc/customer/${wid}/${did}`);
      for (let cid = 1; cid <= ctx.customersPerDistrict; cid++) {
        const n =
          cid <= ctx.lastNames ? cid - 1 : nurand(rc, ctx.nurand.cLast.A, ctx.nurand.cLast.C, 0, ctx.lastNames - 1);
        w.customer.row([
          wid,
          did,
          cid,
          decimalIn(rc, 0, 5000, 4),
          chance(rc, 0.1) ? 'BC' : 'GC',
          lastName(n),
          astring(rc, 8, 16),
          '50000.00',
          '-10.00',
          '10.00',
          1,
          0,
          ...address(rc),
          nstring(rc, 16, 16),
          LOAD_TIME,
          'OE',
          astring(rc, 300, 500),
        ]);
        w.history.row([++hId, cid, did, wid, did, wid, LOAD_TIME, '10.00', astring(rc, 12, 24)]);
      }

      const ro = rngFor(seed, `tpcc/orders/${wid}/${did}`);
      const perm = permutation(ro, ctx.customersPerDistrict);
      const firstUndelivered = ctx.ordersPerDistrict - ctx.undeliveredPerDistrict + 1;
      for (let oid = 1; oid <= ctx.ordersPerDistrict; oid++) {
        const delivered = oid < firstUndelivered;
        const olCnt = randInt(ro, 5, 15);
        w.oorder.row([
          wid,
          did,
          oid,
          perm[(oid - 1) % perm.length],
          delivered ? randInt(ro, 1, 10) : null,
          olCnt,
          1,
          LOAD_TIME,
        ]);
        for (let n = 1; n <= olCnt; n++) {
          w.order_line.row([
            wid,
            did,
            oid,
            n,
            randInt(ro, 1, ctx.items),
            delivered ? LOAD_TIME : null,
            delivered ? '0.00' : decimalIn(ro, 1, 999999, 2),
            wid,
            5,
            astring(ro, 24, 24),
          ]);
        }
        if (pc) w.new_order.row([wid, did, oid, delivered]);
        else if (!delivered) w.new_order.row([wid, did, oid]);
      }
    }
  }

  await mkdir(dir, { recursive: true });
  const files: Record<string, string> = {};
  for (const t of TPCC_TABLES) {
    files[t] = join(dir, `${t}.csv`);
    await w[t].write(files[t]);
  }
  return files;
}
