/**
 * TPC-C sizes from the scale, and the NURand constants (TPC-C spec clauses 2.1.6, 4.2, 4.3.2.3, 4.3.3.1).
 *
 * Scale s (integer >= 1) -> sizes; the default s = 1 is deliberately tiny so that transactions collide:
 *   districts per warehouse  min(10, s + 2)            s=1: 3     s>=8: 10 (spec)
 *   customers per district   min(3000, 50 s)           s=1: 50    s>=60: 3000 (spec)
 *   items                    min(100000, 500 s)        s=1: 500   s>=200: 100000 (spec)
 *   initial orders/district  = customers per district  (one per customer, o_c_id a permutation, as the spec)
 *   undelivered (new_order)  30% of the initial orders s=1: 15    spec: 900 of 3000
 *   warehouses               max(1, floor(s / 200))    s = 200 W is full-size TPC-C with W warehouses
 *   last names               customers/3 distinct names (at most 1000, the spec's), so a last name matches ~3
 *                            customers of a district at every scale (the spec: ~3 of 3000 per name)
 * NURand's A is the spec's (C_LAST 255, C_ID 1023, OL_I_ID 8191) at full size and shrinks with the range
 * (2^k - 1 nearest below A * range / spec range) so the skew stays comparable on small ranges; C is a fixed
 * per-range constant in [0, A] (the spec draws it at random once per run; same value at load and run time).
 */
import type { WorkloadContext } from '../types.js';

export interface NURandParams {
  A: number;
  C: number;
}

export interface TpccContext extends WorkloadContext {
  warehouses: number;
  districts: number;
  customersPerDistrict: number;
  items: number;
  ordersPerDistrict: number;
  undeliveredPerDistrict: number;
  /** Distinct last names (numbers 0 .. lastNames-1, spelled with the spec's syllables). */
  lastNames: number;
  nurand: { cLast: NURandParams; cId: NURandParams; olIId: NURandParams };
}

function scaledA(specA: number, specRange: number, range: number): number {
  if (range >= specRange) return specA;
  const k = Math.floor(Math.log2((specA * range) / specRange + 1));
  return Math.max(1, 2 ** k - 1);
}

function params(specA: number, specRange: number, range: number): NURandParams {
  const A = scaledA(specA, specRange, range);
  return { A, C: Math.floor((A * 41) / 100) };
}

export function tpccContext(scale: number): TpccContext {
  if (!Number.isInteger(scale) || scale < 1) throw new Error(`tpcc scale must be an integer >= 1, got ${scale}`);
  const customersPerDistrict = Math.min(3000, 50 * scale);
  const items = Math.min(100000, 500 * scale);
  const lastNames = Math.max(1, Math.min(1000, Math.floor(customersPerDistrict / 3)));
  return {
    scale,
    warehouses: Math.max(1, Math.floor(scale / 200)),
    districts: Math.min(10, scale + 2),
    customersPerDistrict,
    items,
    ordersPerDistrict: customersPerDistrict,
    undeliveredPerDistrict: Math.floor((customersPerDistrict * 3) / 10),
    lastNames,
    nurand: {
      cLast: params(255, 1000, lastNames),
      cId: params(1023, 3000, customersPerDistrict),
      olIId: params(8191, 100000, items),
    },
  };
}

const SYLLABLES = ['BAR', 'OUGHT', 'ABLE', 'PRI', 'PRES', 'ESE', 'ANTI', 'CALLY', 'ATION', 'EING'];

/** C_LAST for a number in 0..999: the syllables of its three digits (clause 4.3.2.3). */
export function lastName(n: number): string {
  return SYLLABLES[Math.floor(n / 100) % 10] + SYLLABLES[Math.floor(n / 10) % 10] + SYLLABLES[n % 10];
}
