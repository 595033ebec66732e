/**
 * Registry of the benchmark workloads by name: tpcc, tpcc-pc, twitter, smallbank (see each folder's index.ts
 * for what it implements and its sources: TPC-C spec, BenchBase, the paper's section 6).
 */
import type { Workload } from './types.js';
import { tpcc } from './tpcc/index.js';
import { tpccPc } from './tpcc-pc/index.js';
import { twitter } from './twitter/index.js';
import { smallbank } from './smallbank/index.js';

export * from './types.js';

export const workloads: Readonly<Record<string, Workload>> = {
  tpcc,
  'tpcc-pc': tpccPc,
  twitter,
  smallbank,
};

export function workloadNames(): string[] {
  return Object.keys(workloads);
}

/** The workload called `name`; throws with the known names otherwise. */
export function getWorkload(name: string): Workload {
  const w = workloads[name];
  if (!w) throw new Error(`unknown workload "${name}" (known: ${workloadNames().join(', ')})`);
  return w;
}

export { tpcc, tpccPc, twitter, smallbank };
