/**
 * A candidate commit order: a topological order of so ∪ wr ∪ the forced edges (constraints.ts), choosing among
 * the transactions ready to commit the one the recorder saw commit first (its `end` time, else `begin`, else its
 * line in the file). When the forced edges have a cycle there is no commit order at all: the shortest cycle
 * through one of its transactions is returned instead, edge by edge.
 *
 *   model + forced edges -> CSR graph -> Kahn's algorithm with a heap on commit time -> order | cycle
 *
 * Every order returned is topological for so and wr (only hint edges are ever given up): verify.ts relies on it
 * (a reader's visible writers all precede it, so its verdict depends only on the order up to it, which is what
 * lets a repair round keep verdicts, and live-rows.ts skip rows).
 */
import { INIT, type CheckModel } from '../model/model.js';
import type { Arena } from './arena.js';
import type { ForcedEdges } from './constraints.js';
import type { Flat } from './flat.js';

/** Edge kinds: session order, reads from, forced by an axiom (constraints.ts), a hint from a failed order. */
export const SO = 0,
  WR = 1,
  FORCED = 2,
  HINT = 3;

/** One edge of a cycle: its kind, and for wr the read and index, for forced the index into ForcedEdges, for a hint
 *  its index. */
export interface GraphEdge {
  from: number;
  to: number;
  kind: number;
  a: number;
  b: number;
}

interface Graph {
  start: Int32Array;
  to: Int32Array;
  kind: Uint8Array;
  a: Int32Array;
  b: Int32Array;
}

function buildGraph(model: CheckModel, flat: Flat, forced: ForcedEdges, hints: readonly number[], arena: Arena): Graph {
  const { n, soPrev } = model;
  const { readStart, tripleStart, tripleFrom } = flat;
  const degree = arena.int32(n + 1);
  for (let t = 1; t < n; t++) degree[soPrev[t]]++;
  for (let j = 0; j < tripleFrom.length; j++) degree[tripleFrom[j]]++;
  for (let e = 0; e < forced.count; e++) degree[forced.from[e]]++;
  for (let h = 0; h < hints.length; h += 2) degree[hints[h]]++;
  const start = arena.int32(n + 1);
  for (let t = 0; t < n; t++) start[t + 1] = start[t] + degree[t];
  const m = start[n];
  const fill = arena.int32Copy(start.subarray(0, n));
  const to = arena.int32(m),
    kind = arena.uint8(m),
    a = arena.int32(m),
    b = arena.int32(m);
  const put = (from: number, target: number, k: number, x: number, y: number) => {
    const at = fill[from]++;
    to[at] = target;
    kind[at] = k;
    a[at] = x;
    b[at] = y;
  };
  for (let t = 1; t < n; t++) put(soPrev[t], t, SO, 0, 0);
  for (let t = 1; t < n; t++) {
    for (let r = readStart[t]; r < readStart[t + 1]; r++) {
      for (let j = tripleStart[r]; j < tripleStart[r + 1]; j++) put(tripleFrom[j], t, WR, r, j - tripleStart[r]);
    }
  }
  for (let e = 0; e < forced.count; e++) put(forced.from[e], forced.to[e], FORCED, e, 0);
  for (let h = 0; h < hints.length; h += 2) put(hints[h], hints[h + 1], HINT, h >> 1, 0);
  return { start, to, kind, a, b };
}

export type CandidateOrder =
  | { order: Int32Array; pos: Int32Array; cycle?: undefined }
  | { cycle: GraphEdge[]; order?: undefined; pos?: undefined };

/**
 * `hints`: more edges as (before, after) pairs, from the failures of an earlier candidate (linear-check.ts). They
 * are guesses, not facts: those that would close a cycle are given up, so a cycle is only ever returned for the
 * facts (so, wr, forced edges).
 */
export function candidateOrder(
  model: CheckModel,
  flat: Flat,
  forced: ForcedEdges,
  arena: Arena,
  check: () => void,
  hints: readonly number[] = [],
): CandidateOrder {
  const { n, txns } = model;
  const g = buildGraph(model, flat, forced, hints, arena);
  const indeg = arena.int32(n);
  for (let i = 0; i < g.to.length; i++) indeg[g.to[i]]++;
  const time = arena.float64(n);
  for (let t = 1; t < n; t++) time[t] = txns[t].end ?? txns[t].begin ?? txns[t].line;
  // Binary heap of ready transactions by (time, id).
  const heap = arena.int32(n);
  let size = 0;
  const less = (x: number, y: number) => time[x] < time[y] || (time[x] === time[y] && x < y);
  const push = (t: number) => {
    let i = size++;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (!less(t, heap[p])) break;
      heap[i] = heap[p];
      i = p;
    }
    heap[i] = t;
  };
  const pop = (): number => {
    const top = heap[0];
    const last = heap[--size];
    let i = 0;
    for (;;) {
      let c = 2 * i + 1;
      if (c >= size) break;
      if (c + 1 < size && less(heap[c + 1], heap[c])) c++;
      if (!less(heap[c], last)) break;
      heap[i] = heap[c];
      i = c;
    }
    heap[i] = last;
    return top;
  };
  const order = arena.int32(n);
  const done = arena.uint8(n);
  let placed = 0;
  if (indeg[INIT] === 0) push(INIT);
  // Hints still waiting for their `before` transaction; when the order is stuck, every cycle left goes through
  // one of them (so, wr and forced edges alone were acyclic in the first round): the one whose `after` the
  // recorder saw commit first is given up (a guess that contradicts the others), and the order goes on.
  const dropped = new Uint8Array(hints.length >> 1);
  for (;;) {
    while (size > 0) {
      if ((placed & 65535) === 65535) check();
      const t = pop();
      order[placed++] = t;
      done[t] = 1;
      for (let e = g.start[t]; e < g.start[t + 1]; e++) {
        if (g.kind[e] === HINT && dropped[g.a[e]]) continue; // counted when it was given up
        if (--indeg[g.to[e]] === 0) push(g.to[e]);
      }
    }
    if (placed === n) break;
    let give = -1;
    for (let h = 0; h < hints.length; h += 2) {
      if (dropped[h >> 1] || done[hints[h]] || done[hints[h + 1]]) continue;
      if (give < 0 || less(hints[h + 1], hints[give + 1])) give = h;
    }
    if (give < 0) break;
    dropped[give >> 1] = 1;
    if (--indeg[hints[give + 1]] === 0) push(hints[give + 1]);
  }
  if (placed === n) {
    const pos = arena.int32(n);
    for (let i = 0; i < n; i++) pos[order[i]] = i;
    return { order, pos };
  }
  return { cycle: shortestCycle(g, n, indeg, time) };
}

/**
 * A short cycle among the transactions Kahn's algorithm could not place: inside the smallest strongly connected
 * component of them that has more than one transaction (Tarjan's algorithm, iterative), preferably one closed by
 * a single forced edge (it reads best: one axiom instance, the rest so and wr), else the shortest cycle through
 * one of its transactions.
 */
function shortestCycle(g: Graph, n: number, indeg: Int32Array, time: Float64Array): GraphEdge[] {
  const comp = components(g, n, (t) => indeg[t] > 0);
  const inside = (t: number) => comp.id[t] === comp.smallest;
  const edge = (id: number): GraphEdge => ({
    from: edgeSource(g, id),
    to: g.to[id],
    kind: g.kind[id],
    a: g.a[id],
    b: g.b[id],
  });
  const via = new Int32Array(n).fill(-1);
  // The forced edges inside the component, each tried as the one edge of a cycle closed by so and wr: in the order
  // of the graph, or in a large component (where each search may cross all of it) those between transactions
  // closest in recorded time first, within a budget of visits. An anomaly's transactions run together: a fractured
  // read injected in 1M transactions left a component of most of the history's second half, and 2,000 searches in
  // the graph's order took 29 s before the one that closed the cycle.
  const from: number[] = [];
  const edges: number[] = [];
  for (const u of comp.members) {
    for (let e = g.start[u]; e < g.start[u + 1]; e++) {
      if (g.kind[e] !== FORCED || !inside(g.to[e])) continue;
      from.push(u);
      edges.push(e);
    }
  }
  const large = comp.members.length > LARGE_COMPONENT;
  const tries = Int32Array.from(edges.keys());
  if (large) {
    const gap = (i: number) => Math.abs(time[from[i]] - time[g.to[edges[i]]]);
    tries.sort((a, b) => gap(a) - gap(b) || a - b);
  }
  let budget = large ? SINGLE_EDGE_VISITS * comp.members.length : Infinity;
  for (let k = 0; k < tries.length && k < MAX_SINGLE_EDGE_TRIES && budget > 0; k++) {
    const i = tries[k];
    const found = pathOf(g, g.to[edges[i]], from[i], inside, via, true, budget);
    budget -= found.visited;
    if (found.path) return [edges[i], ...found.path].map(edge);
  }
  const start = comp.members[0];
  for (let e = g.start[start]; e < g.start[start + 1]; e++) {
    if (!inside(g.to[e])) continue;
    const path = g.to[e] === start ? [] : pathOf(g, g.to[e], start, inside, via, false).path;
    if (path) return [e, ...path].map(edge);
  }
  throw new Error('no cycle in a strongly connected component');
}

/** Strongly connected components of the nodes `keep` accepts; the smallest one with two nodes or more. */
function components(
  g: Graph,
  n: number,
  keep: (t: number) => boolean,
): { id: Int32Array; smallest: number; members: number[] } {
  const id = new Int32Array(n).fill(-1);
  const low = new Int32Array(n);
  const num = new Int32Array(n).fill(-1);
  const onStack = new Uint8Array(n);
  const stack: number[] = [];
  let counter = 0,
    comps = 0;
  let smallest = -1,
    smallestSize = Infinity;
  const work: number[] = [];
  const edgeAt: number[] = [];
  for (let s = 0; s < n; s++) {
    if (!keep(s) || num[s] >= 0) continue;
    work.push(s);
    edgeAt.push(g.start[s]);
    num[s] = low[s] = counter++;
    stack.push(s);
    onStack[s] = 1;
    while (work.length) {
      const u = work[work.length - 1];
      const e = edgeAt[edgeAt.length - 1];
      if (e < g.start[u + 1]) {
        edgeAt[edgeAt.length - 1]++;
        const v = g.to[e];
        if (!keep(v)) continue;
        if (num[v] < 0) {
          num[v] = low[v] = counter++;
          stack.push(v);
          onStack[v] = 1;
          work.push(v);
          edgeAt.push(g.start[v]);
        } else if (onStack[v] && num[v] < low[u]) low[u] = num[v];
        continue;
      }
      work.pop();
      edgeAt.pop();
      if (work.length) {
        const p = work[work.length - 1];
        if (low[u] < low[p]) low[p] = low[u];
      }
      if (low[u] === num[u]) {
        let size = 0;
        let v: number;
        do {
          v = stack.pop()!;
          onStack[v] = 0;
          id[v] = comps;
          size++;
        } while (v !== u);
        if (size > 1 && size < smallestSize) {
          smallest = comps;
          smallestSize = size;
        }
        comps++;
      }
    }
  }
  const members: number[] = [];
  for (let t = 0; t < n; t++) if (id[t] === smallest) members.push(t);
  return { id, smallest, members };
}

const MAX_SINGLE_EDGE_TRIES = 2000;
/** Above this many transactions a component's searches for a single-forced-edge cycle go closest first, bounded. */
const LARGE_COMPONENT = 4096;
/** The visits those searches may make together, per transaction of the component. */
const SINGLE_EDGE_VISITS = 16;

/** Edge ids of a shortest path from `from` to `to` over nodes `left` accepts (only so and wr edges when
 *  `unforced`), if any, found by visiting at most `limit` transactions, and how many it visited. `via` is scratch
 *  space of -1s, left as it was found. */
function pathOf(
  g: Graph,
  from: number,
  to: number,
  left: (t: number) => boolean,
  via: Int32Array,
  unforced: boolean,
  limit = Infinity,
): { path?: number[]; visited: number } {
  const queue = [from];
  const touched = [from];
  via[from] = -2;
  let found = false;
  for (let qi = 0; qi < queue.length && !found && touched.length < limit; qi++) {
    const u = queue[qi];
    for (let e = g.start[u]; e < g.start[u + 1]; e++) {
      const v = g.to[e];
      if ((unforced && g.kind[e] === FORCED) || via[v] !== -1 || !left(v)) continue;
      via[v] = e;
      touched.push(v);
      if (v === to) {
        found = true;
        break;
      }
      queue.push(v);
    }
  }
  let path: number[] | undefined;
  if (found) {
    path = [];
    for (let x = to; x !== from; x = edgeSource(g, via[x])) path.push(via[x]);
    path.reverse();
  }
  for (const t of touched) via[t] = -1;
  return { path, visited: touched.length };
}

function edgeSource(g: Graph, e: number): number {
  let lo = 0,
    hi = g.start.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >>> 1;
    if (g.start[mid] <= e) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}
