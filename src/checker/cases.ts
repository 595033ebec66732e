/**
 * Explanations by case analysis (docs/semantics.md §5) for contradictions that saturation alone does not show as
 * one cycle, such as a lost update or write skew under SI/SER, or a long fork under PC: the two transactions
 * must be ordered somehow, and each order forces a cycle.
 *
 *   saturated pco -> for a pair (a, b) unordered in pco: assume a < b, saturate; assume b < a, saturate
 *     both cyclic  -> the anomaly, with both cycles
 *     one cyclic   -> the other order is forced: keep it (with its reason) and look again
 *
 * Only for explanations: the verdict comes from the search in check.ts. Bounded by the budget and by the
 * number of pairs tried.
 */
import { ANOMALY_TEXT, type Anomaly, type ConsistencyType, type Edge } from './anomaly.js';
import { findReasonCycle } from './cycle.js';
import { levelName } from './levels.js';
import type { Budget } from './prefix.js';
import type { ForcedEdge, Relations } from './relations.js';
import { saturate } from './saturate.js';
import type { WritePartners } from './write-partners.js';

const MAX_TRANSACTIONS = 80;

interface Case {
  assume: string;
  edges: Edge[];
  forced: ForcedEdge[];
}

function tryOrder(rel: Relations, a: number, b: number, partners: WritePartners): { rel: Relations; cycle?: Case } {
  const next = rel.clone();
  next.assume(a, b);
  const ok = !next.pco.cyclic && saturate(next, partners);
  if (ok) return { rel: next };
  const cycle = findReasonCycle(next) ?? [];
  const { model } = rel;
  return {
    rel: next,
    cycle: {
      assume: `${model.txns[a].id} commits before ${model.txns[b].id}`,
      edges: cycle.map((e) => e.edge()),
      forced: cycle.filter((e) => e.forced).map((e) => e.forced!),
    },
  };
}

function classify(rel: Relations, c1: Case, c2: Case): ConsistencyType {
  const { model } = rel;
  const last = (c: Case) => c.forced[c.forced.length - 1];
  const f1 = last(c1);
  const f2 = last(c2);
  if (!f1 || !f2) return 'commit-order-cycle';
  const r1 = model.reads[f1.triple.read].txn;
  const r2 = model.reads[f2.triple.read].txn;
  const writes1 = model.writes[r1].has(f1.triple.key);
  const writes2 = model.writes[r2].has(f2.triple.key);
  if (r1 !== r2 && f1.triple.key === f2.triple.key && writes1 && writes2) return 'lost-update';
  if (r1 !== r2 && model.writes[r1].size > 0 && model.writes[r2].size > 0 && (f1.via === 'co' || f1.via === 'conflict') && (f2.via === 'co' || f2.via === 'conflict')) return 'write-skew';
  if (r1 !== r2 && !writes1 && !writes2 && (f1.via === 'prefix' || f2.via === 'prefix')) return 'long-fork';
  return 'commit-order-cycle';
}


export function explainByCases(base: Relations, partners: WritePartners, budget: Budget): Anomaly | undefined {
  const { model } = base;
  if (model.n > MAX_TRANSACTIONS) return undefined;
  let rel = base.clone();
  // Orders derived on the way (the opposite order forced a cycle), keyed by the kept edge "x,y".
  const derived = new Map<string, Case>();
  for (let round = 0; round < model.n; round++) {
    let progress = false;
    for (let a = 1; a < model.n; a++) {
      for (let b = a + 1; b < model.n; b++) {
        budget.tick();
        if (rel.pco.has(a, b) || rel.pco.has(b, a)) continue;
        if (model.writes[a].size === 0 && model.writes[b].size === 0) continue;
        const ab = tryOrder(rel, a, b, partners);
        const ba = tryOrder(rel, b, a, partners);
        if (ab.cycle && ba.cycle) {
          const type = classify(rel, ab.cycle, ba.cycle);
          // Only the derived orders the final cycles use (transitively), earliest first.
          const used: Case[] = [];
          const seen = new Set<string>();
          const visit = (c: Case) => {
            for (const e of c.edges) {
              if (e.kind !== 'assumed') continue;
              const k = `${e.from},${e.to}`;
              const d = derived.get(k);
              if (!d || seen.has(k)) continue;
              seen.add(k);
              visit(d);
              used.push(d);
            }
          };
          visit(ab.cycle);
          visit(ba.cycle);
          const txns = new Set<string>();
          const levels = new Set<string>();
          for (const c of [...used, ab.cycle, ba.cycle]) {
            for (const e of c.edges) {
              if (e.from !== 'init') txns.add(e.from);
              if (e.to !== 'init') txns.add(e.to);
              if (e.reader) txns.add(e.reader);
            }
            for (const f of c.forced) levels.add(levelName(f.level));
          }
          return {
            type,
            message: `${type === 'commit-order-cycle' ? 'no commit order works: each way of ordering two transactions forces a cycle' : ANOMALY_TEXT[type]}: ${model.txns[a].id} and ${model.txns[b].id} cannot be ordered either way`,
            txns: [...txns],
            levels: [...levels] as Anomaly['levels'],
            edges: [...ab.cycle.edges, ...ba.cycle.edges],
            details: { cases: [...used, ab.cycle, ba.cycle].map((c) => ({ assume: c.assume, edges: c.edges })) },
          };
        }
        if (ab.cycle) {
          derived.set(`${model.txns[b].id},${model.txns[a].id}`, ab.cycle);
          rel = ba.rel;
          progress = true;
        } else if (ba.cycle) {
          derived.set(`${model.txns[a].id},${model.txns[b].id}`, ba.cycle);
          rel = ab.rel;
          progress = true;
        }
      }
    }
    if (!progress) break;
  }
  return undefined;
}
