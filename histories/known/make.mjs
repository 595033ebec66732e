#!/usr/bin/env node
// Writes the known-answer histories of histories/known/ (docs/semantics.md §6 and the classic anomalies) and
// expected.json, their verdict per level. Run: node histories/known/make.mjs
//
// Registers are encoded as point SQL on table t(id int4 primary key, v int4): r(x,v) is
// `SELECT ... WHERE id = $1` that returned version v (0 is init's), w(x,v) a blind upsert (an insert event).
// Keys: x=1, y=2, z=3. A transaction is [session, ops, level?, label?]; levels default to the column's level.
import { writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const KEYS = { x: 1, y: 2, z: 3 };
const LEVELS = ['RC', 'RA', 'CC', 'PC', 'SI', 'SER'];

function registerCase(name, note, txns, initKeys = ['x', 'y']) {
  return (level) => {
    const lines = [];
    lines.push({ kind: 'history', format: 'isocheck-history', version: 1, meta: { case: name, note, level } });
    lines.push({ kind: 'table', name: 't', key: ['id'], columns: { id: 'int4', v: 'int4' } });
    lines.push({ kind: 'init', table: 't', rows: initKeys.map((k) => ({ id: KEYS[k], v: 0 })) });
    const writer = new Map(); // "x=1" -> wid
    const seqs = new Map();
    const parsed = txns.map(([session, ops, lvl, label], i) => {
      const id = `T${i + 1}`;
      const seq = (seqs.get(session) ?? 0) + 1;
      seqs.set(session, seq);
      const events = ops
        .split(/\s+/)
        .filter(Boolean)
        .map((op, j) => {
          const m = /^([rw])\((\w),(\d+)\)$/.exec(op);
          if (!m) throw new Error(`bad op ${op}`);
          return { rw: m[1], key: m[2], v: Number(m[3]), wid: `${id}.${j + 1}` };
        });
      for (const e of events) if (e.rw === 'w') writer.set(`${e.key}=${e.v}`, e.wid);
      return { id, session, seq, events, iso: lvl ?? level, label };
    });
    for (const t of parsed) {
      const events = t.events.map((e) => {
        const row = { id: KEYS[e.key], v: e.v };
        if (e.rw === 'w') return { op: 'insert', table: 't', wid: e.wid, rows: [{ row }] };
        const wid = e.v === 0 ? 'init' : writer.get(`${e.key}=${e.v}`);
        if (!wid) throw new Error(`${name}: nobody writes ${e.key}=${e.v}`);
        return { op: 'select', table: 't', where: 'id = $1', params: [KEYS[e.key]], rows: [{ wid, row }] };
      });
      lines.push({
        kind: 'txn',
        id: t.id,
        session: t.session,
        seq: t.seq,
        iso: t.iso,
        status: 'committed',
        ...(t.label ? { label: t.label } : {}),
        events,
      });
    }
    lines.push({ kind: 'end', transactions: parsed.length });
    return lines;
  };
}

const S = (ops, lvl, label) => [undefined, ops, lvl, label];
function sessions(list) {
  // Each transaction its own session unless a session number is given.
  return list.map((t, i) => [t[0] ?? i + 1, t[1], t[2], t[3]]);
}

const cases = [];
function add(name, note, txns, expected, initKeys) {
  cases.push({ name, note, make: registerCase(name, note, sessions(txns), initKeys), expected });
}
const v = (s) => Object.fromEntries(LEVELS.map((l, i) => [l, s[i] === '✓' ? 'consistent' : 'inconsistent']));

// docs/semantics.md §6
add(
  'write-skew',
  'T1[r(x,0) r(y,0) w(x,1)], T2[r(x,0) r(y,0) w(y,1)]',
  [S('r(x,0) r(y,0) w(x,1)'), S('r(x,0) r(y,0) w(y,1)')],
  v('✓✓✓✓✓✗'),
);
add('lost-update', 'T1[r(x,0) w(x,1)], T2[r(x,0) w(x,2)]', [S('r(x,0) w(x,1)'), S('r(x,0) w(x,2)')], v('✓✓✓✓✗✗'));
add(
  'long-fork',
  'T1[w(x,1)], T2[w(y,1)], T3[r(x,1) r(y,0)], T4[r(y,1) r(x,0)]',
  [S('w(x,1)'), S('w(y,1)'), S('r(x,1) r(y,0)'), S('r(y,1) r(x,0)')],
  v('✓✓✓✗✗✗'),
);
add(
  'causality-violation',
  'T1[w(x,1)], T2[r(x,1) w(x,2)], T4[r(x,2) w(y,1)], T3[r(y,1) r(x,1)]',
  [S('w(x,1)'), S('r(x,1) w(x,2)'), S('r(x,2) w(y,1)'), S('r(y,1) r(x,1)')],
  v('✓✓✗✗✗✗'),
);
add('fractured-read', 'T1[w(x,1) w(y,1)], T2[r(y,0) r(x,1)]', [S('w(x,1) w(y,1)'), S('r(y,0) r(x,1)')], v('✓✗✗✗✗✗'));
add(
  'fractured-read-reversed',
  'T1[w(x,1) w(y,1)], T2[r(x,1) r(y,0)]',
  [S('w(x,1) w(y,1)'), S('r(x,1) r(y,0)')],
  v('✗✗✗✗✗✗'),
);
add(
  'read-your-writes',
  'session S: T1[w(x,1)]; T2[r(x,0)]',
  [
    [1, 'w(x,1)'],
    [1, 'r(x,0)'],
  ],
  v('✗✗✗✗✗✗'),
);
add(
  'serial-chain',
  'T1[w(x,1)], T2[r(x,1) w(x,2)], T3[r(x,2)]',
  [S('w(x,1)'), S('r(x,1) w(x,2)'), S('r(x,2)')],
  v('✓✓✓✓✓✓'),
);
// Classic anomalies beyond the table.
add(
  'g-single-read-skew',
  'T1[r(x,0) r(y,1)], T2[w(x,1) w(y,1)]: T1 saw y after T2 but x before it (one anti-dependency)',
  [S('r(x,0) r(y,1)'), S('w(x,1) w(y,1)')],
  v('✓✗✗✗✗✗'),
);
add(
  'session-read-skew',
  'T1[w(x,1) w(y,1)]; session 2: T2[r(x,1)] then T3[r(y,0)]: T3 misses what its session already saw',
  [S('w(x,1) w(y,1)'), [2, 'r(x,1)'], [2, 'r(y,0)']],
  v('✓✓✗✗✗✗'),
);
add(
  'lost-update-three',
  'T1[r(x,0) w(x,1)], T2[r(x,0) w(x,2)], T3[r(x,2)]: the lost update stays visible to a reader',
  [S('r(x,0) w(x,1)'), S('r(x,0) w(x,2)'), S('r(x,2)')],
  v('✓✓✓✓✗✗'),
);
add(
  'write-skew-two-keys',
  'T1[r(x,0) w(y,1)], T2[r(y,0) w(x,1)]: each overwrites what the other read',
  [S('r(x,0) w(y,1)'), S('r(y,0) w(x,1)')],
  v('✓✓✓✓✓✗'),
);
add(
  'non-monotonic-read',
  'T1[w(x,1)], T2[r(x,1) r(x,0)]: T2 reads x again and gets an older version than it already saw',
  [S('w(x,1)'), S('r(x,1) r(x,0)')],
  v('✗✗✗✗✗✗'),
);
add(
  'session-non-monotonic-read',
  'T1[w(x,1)]; session 2: T2[r(x,1)] then T3[r(x,0)]: T3 reads an older version of x than its session already saw',
  [S('w(x,1)'), [2, 'r(x,1)'], [2, 'r(x,0)']],
  v('✓✓✗✗✗✗'),
);

// Mixed levels (docs/semantics.md §6).
const mixed = [];
function addMixed(name, note, txns, expected) {
  mixed.push({ name, note, make: () => registerCase(name, note, sessions(txns))('mixed'), expected });
}
addMixed(
  'write-skew-ser-si',
  'write skew, T1 SER and T2 SI: consistent (T1 before T2)',
  [S('r(x,0) r(y,0) w(x,1)', 'SER'), S('r(x,0) r(y,0) w(y,1)', 'SI')],
  'consistent',
);
addMixed(
  'write-skew-ser-ser',
  'write skew, both SER',
  [S('r(x,0) r(y,0) w(x,1)', 'SER'), S('r(x,0) r(y,0) w(y,1)', 'SER')],
  'inconsistent',
);
addMixed(
  'long-fork-pc-ra',
  'long fork with T3 at PC and T4 at RA: consistent',
  [S('w(x,1)', 'SER'), S('w(y,1)', 'SER'), S('r(x,1) r(y,0)', 'PC'), S('r(y,1) r(x,0)', 'RA')],
  'consistent',
);
addMixed(
  'long-fork-pc-pc',
  'long fork with T3 and T4 at PC',
  [S('w(x,1)', 'SER'), S('w(y,1)', 'SER'), S('r(x,1) r(y,0)', 'PC'), S('r(y,1) r(x,0)', 'PC')],
  'inconsistent',
);
addMixed(
  'lost-update-si-rc',
  'lost update with T1 SI and T2 RC: consistent',
  [S('r(x,0) w(x,1)', 'SI'), S('r(x,0) w(x,2)', 'RC')],
  'consistent',
);
addMixed(
  'lost-update-si-si',
  'lost update with T1 SI and T2 SI',
  [S('r(x,0) w(x,1)', 'SI'), S('r(x,0) w(x,2)', 'SI')],
  'inconsistent',
);
// Found by the benchmark in a PostgreSQL run of TPC-C at SER+RC (bench/RESULTS.md): SSI tracks rw-antidependencies
// only between SERIALIZABLE transactions, so the one into the RC writer T1 goes unnoticed.
addMixed(
  'ssi-rc-writer',
  'T1 (RC) w(x,1); T2 (SER) r(x,0) w(y,1) misses T1; T3 (SER, after T1 in its session) r(y,0) misses T2: ' +
    'T1 <so T3 < T2 < T1',
  [
    [1, 'w(x,1)', 'RC'],
    [2, 'r(x,0) w(y,1)', 'SER'],
    [1, 'r(y,0)', 'SER'],
  ],
  'inconsistent',
);
addMixed(
  'ssi-rc-writer-rc-reader',
  'the same with T3 at RC: consistent (T2, T1, T3)',
  [
    [1, 'w(x,1)', 'RC'],
    [2, 'r(x,0) w(y,1)', 'SER'],
    [1, 'r(y,0)', 'RC'],
  ],
  'consistent',
);
addMixed(
  'lost-update-ser-rc',
  'lost update with T1 SER and T2 RC: T1 is serialized after T2 would need T1 to see x=2; T2 after T1 is fine at RC',
  [S('r(x,0) w(x,1)', 'SER'), S('r(x,0) w(x,2)', 'RC')],
  'consistent',
);

const expected = {};
for (const c of cases) {
  for (const level of LEVELS) {
    const file = `${c.name}.${level}.ndjson`;
    writeFileSync(
      join(here, file),
      c
        .make(level)
        .map((l) => JSON.stringify(l))
        .join('\n') + '\n',
    );
    expected[file] = { case: c.name, level, verdict: c.expected[level], note: c.note };
  }
}
for (const c of mixed) {
  const file = `${c.name}.ndjson`;
  writeFileSync(
    join(here, file),
    c
      .make()
      .map((l) => JSON.stringify(l))
      .join('\n') + '\n',
  );
  expected[file] = { case: c.name, level: 'mixed', verdict: c.expected, note: c.note };
}
// Predicate cases written out in full (not registers).
for (const [file, spec] of Object.entries(predicateCases())) {
  writeFileSync(join(here, file), spec.lines.map((l) => JSON.stringify(l)).join('\n') + '\n');
  expected[file] = {
    case: spec.case,
    level: spec.level,
    verdict: spec.verdict,
    note: spec.note,
    ...(spec.anomaly ? { anomaly: spec.anomaly } : {}),
  };
}
writeFileSync(join(here, 'expected.json'), JSON.stringify(expected, null, 2) + '\n');
console.log(`wrote ${Object.keys(expected).length} histories to ${here}`);

function predicateCases() {
  const head = (name, note) => [
    { kind: 'history', format: 'isocheck-history', version: 1, meta: { case: name, note } },
    { kind: 'table', name: 'doctors', key: ['id'], columns: { id: 'int4', shift: 'int4', on_call: 'bool' } },
    {
      kind: 'init',
      table: 'doctors',
      rows: [
        { id: 1, shift: 1, on_call: true },
        { id: 2, shift: 1, on_call: true },
      ],
    },
  ];
  const out = {};
  // Predicate write skew (phantom): each transaction counts the on-call doctors of shift 2 (none), then
  // inserts one. Under SER the second should have seen the first's insert.
  for (const level of LEVELS) {
    const txn = (id, session, newId) => ({
      kind: 'txn',
      id,
      session,
      seq: 1,
      iso: level,
      status: 'committed',
      events: [
        { op: 'select', table: 'doctors', where: 'shift = $1 AND on_call', params: [2], rows: [] },
        { op: 'insert', table: 'doctors', wid: `${id}.2`, rows: [{ row: { id: newId, shift: 2, on_call: true } }] },
      ],
    });
    out[`phantom.${level}.ndjson`] = {
      case: 'phantom',
      level,
      verdict: level === 'SER' ? 'inconsistent' : 'consistent',
      note:
        'both transactions find no on-call doctor for shift 2 and insert one: ' +
        "a predicate read misses the other's insert",
      lines: [
        ...head('phantom', 'predicate write skew'),
        txn('T1', 1, 3),
        txn('T2', 2, 4),
        { kind: 'end', transactions: 2 },
      ],
    };
  }
  // Missing initial row: a row that matches and that nobody touched was not returned.
  for (const level of LEVELS) {
    out[`missing-initial-row.${level}.ndjson`] = {
      case: 'missing-initial-row',
      level,
      verdict: 'inconsistent',
      anomaly: 'missing-row',
      note: 'a select on shift 1 returns only doctor 1; doctor 2 matches and nobody ever changed it',
      lines: [
        ...head('missing-initial-row', 'missing row'),
        {
          kind: 'txn',
          id: 'T1',
          session: 1,
          seq: 1,
          iso: level,
          status: 'committed',
          events: [
            {
              op: 'select',
              table: 'doctors',
              where: 'shift = $1',
              params: [1],
              rows: [{ wid: 'init', row: { id: 1, shift: 1, on_call: true } }],
            },
          ],
        },
        { kind: 'end', transactions: 1 },
      ],
    };
  }
  // Phantom after a causal read: T2 saw T1's write of doctor 1 but its predicate read misses T1's insert.
  for (const level of LEVELS) {
    out[`missed-insert.${level}.ndjson`] = {
      case: 'missed-insert',
      level,
      verdict: 'inconsistent',
      anomaly: 'fractured-read',
      note:
        'T1 takes doctor 1 off call and inserts doctor 5 on call; ' +
        'T2 reads doctor 1 from T1, then its predicate read misses doctor 5',
      lines: [
        ...head('missed-insert', 'missed insert'),
        {
          kind: 'txn',
          id: 'T1',
          session: 1,
          seq: 1,
          iso: level,
          status: 'committed',
          events: [
            {
              op: 'update',
              table: 'doctors',
              where: 'id = $1',
              params: [1],
              wid: 'T1.1',
              rows: [{ read: 'init', row: { id: 1, shift: 1, on_call: false } }],
            },
            { op: 'insert', table: 'doctors', wid: 'T1.2', rows: [{ row: { id: 5, shift: 1, on_call: true } }] },
          ],
        },
        {
          kind: 'txn',
          id: 'T2',
          session: 2,
          seq: 1,
          iso: level,
          status: 'committed',
          events: [
            {
              op: 'select',
              table: 'doctors',
              where: 'id = $1',
              params: [1],
              rows: [{ wid: 'T1.1', row: { id: 1, shift: 1, on_call: false } }],
            },
            {
              op: 'select',
              table: 'doctors',
              where: 'on_call',
              rows: [{ wid: 'init', row: { id: 2, shift: 1, on_call: true } }],
            },
          ],
        },
        { kind: 'end', transactions: 2 },
      ],
    };
  }
  return out;
}
