/**
 * Benchmark: streaming a large history file (issue: the reader must not need the file as one string).
 * Generates a synthetic history of about SIZE_MB megabytes (register-style transactions over many keys),
 * then measures (1) a validating pass that keeps no transactions (bounded memory) and (2) a full load, each
 * with throughput (MB/s) and the process's peak resident memory. Run: npm run bench -- load [SIZE_MB]
 */
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import seedrandom from 'seedrandom';
import { HistoryWriter } from '../src/history/writer.js';
import { readHistory } from '../src/history/reader.js';

function generate(file: string, targetBytes: number): number {
  const rng = seedrandom('load-bench');
  const w = new HistoryWriter(file);
  w.header({ workload: 'synthetic', note: 'load benchmark' });
  w.table('t', ['id'], { id: 'int4', v: 'int4', note: 'text' });
  const keys = 10_000;
  const rows = Array.from({ length: keys }, (_, i) => ({ id: i, v: 0, note: 'initial' }));
  w.init('t', rows);
  const last = new Map<number, { wid: string; v: number }>();
  const sessions = 8;
  const seq = new Array(sessions + 1).fill(0);
  let n = 0;
  while (n % 1000 !== 0 || statSync(file).size < targetBytes) {
    const s = 1 + Math.floor(rng() * sessions);
    seq[s]++;
    const id = `s${s}.${seq[s]}`;
    const events = [];
    for (let e = 0; e < 4; e++) {
      const k = Math.floor(rng() * keys);
      const prev = last.get(k) ?? { wid: 'init', v: 0 };
      events.push({
        op: 'select' as const,
        table: 't',
        where: 'id = $1',
        params: [k],
        rows: [{ wid: prev.wid, row: { id: k, v: prev.v, note: 'x' } }],
      });
      const wid = `${id}.${e}`;
      events.push({
        op: 'update' as const,
        table: 't',
        where: 'id = $1',
        params: [k],
        wid,
        rows: [{ read: prev.wid, row: { id: k, v: prev.v + 1, note: 'x' } }],
      });
      last.set(k, { wid, v: prev.v + 1 });
    }
    w.txn({ id, session: s, seq: seq[s], iso: 'SER', status: 'committed', begin: n, end: n + 1, events });
    n++;
  }
  w.end();
  return n;
}

export async function runLoadBench(sizeMb: number): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'isocheck-bench-'));
  const file = join(dir, 'big.ndjson');
  try {
    const t0 = Date.now();
    const txns = generate(file, sizeMb * 1024 * 1024);
    const mb = statSync(file).size / 1024 / 1024;
    console.log(`generated ${mb.toFixed(1)} MB, ${txns} transactions in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
    for (const keep of [false, true]) {
      if (global.gc) global.gc();
      const rssBefore = process.memoryUsage().rss;
      let peak = rssBefore;
      const timer = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 20);
      const t1 = Date.now();
      const h = await readHistory(file, {
        keepTransactions: keep,
        onProgress: () => (peak = Math.max(peak, process.memoryUsage().rss)),
      });
      const secs = (Date.now() - t1) / 1000;
      clearInterval(timer);
      peak = Math.max(peak, process.memoryUsage().rss);
      const what = keep ? 'full load (model in memory)' : 'validating stream (no transactions kept)';
      console.log(
        `${what}: ${(mb / secs).toFixed(1)} ` +
          `MB/s, ${secs.toFixed(1)} s, peak RSS ${(peak / 1024 / 1024).toFixed(0)} MB ` +
          `(+${((peak - rssBefore) / 1024 / 1024).toFixed(0)} MB over the start), ${h.txns.length} transactions kept`,
      );
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
