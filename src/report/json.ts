/**
 * A check's result as the JSON that `isocheck check --json` prints and CI reads (README, "check"; the schema is
 * docs/json-output.md): `{file, verdict, report?, reason?, anomalies, commitOrder?, subHistory?, notes, stats}`.
 * Each anomaly is its data (checker/anomaly.ts) with its `name`, the literature's names and a `message` rendered
 * by explain.ts; each edge gets its `reason` the same way.
 */
import type { Anomaly, Edge } from '../checker/anomaly.js';
import type { CheckResult } from '../checker/check.js';
import { anomalyMessage, anomalyName, blockedText, edgeReason, literatureNames } from '../checker/explain/explain.js';

const withReason = (e: Edge) => ({ ...e, reason: edgeReason(e) });

/** One anomaly as `--json` prints it. */
export function anomalyJson(a: Anomaly): Record<string, unknown> {
  const out: Record<string, unknown> = {
    ...a,
    name: anomalyName(a.type),
    literature: literatureNames(a.type),
    message: anomalyMessage(a),
  };
  if ('edges' in a) out.edges = a.edges.map(withReason);
  if ('cases' in a) out.cases = a.cases.map((c) => ({ ...c, edges: c.edges.map(withReason) }));
  if (a.type === 'no-consistent-order' && a.stuck)
    out.stuck = { ...a.stuck, blocked: a.stuck.blocked.map((b) => ({ ...b, reason: blockedText(b) })) };
  return out;
}

export function resultJson(
  file: string,
  result: CheckResult,
  extra: { report?: string } = {},
): Record<string, unknown> {
  return {
    file,
    verdict: result.verdict,
    ...(extra.report ? { report: extra.report } : {}),
    ...(result.reason ? { reason: result.reason } : {}),
    anomalies: result.anomalies.map(anomalyJson),
    ...(result.commitOrder ? { commitOrder: result.commitOrder } : {}),
    ...(result.subHistory ? { subHistory: result.subHistory } : {}),
    notes: result.notes,
    stats: result.stats,
  };
}
