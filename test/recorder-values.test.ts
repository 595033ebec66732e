// Value conversions of the recorder: server text -> the format's JSON values, application parameters -> the
// recorded params (what node-postgres sends).
import { describe, expect, it } from 'vitest';
import { toFormatValue } from '../src/recorder/catalog.js';
import { recordParams } from '../src/recorder/events.js';
import { isConnectionLoss, levelOf } from '../src/recorder/client.js';
import { sqlStateOf } from '../src/recorder/sqlstate.js';

describe('toFormatValue', () => {
  it('gives numbers for int2/int4/float, exact strings for int8/numeric/time types, booleans for bool', () => {
    expect(toFormatValue('42', 'int4')).toBe(42);
    expect(toFormatValue('-7', 'int2')).toBe(-7);
    expect(toFormatValue('0.30000000000000004', 'float8')).toBe(0.30000000000000004);
    expect(toFormatValue('NaN', 'float8')).toBe('NaN');
    expect(toFormatValue('-Infinity', 'float4')).toBe('-Infinity');
    expect(toFormatValue('9007199254740993', 'int8')).toBe('9007199254740993');
    expect(toFormatValue('100.50', 'numeric')).toBe('100.50');
    expect(toFormatValue('t', 'bool')).toBe(true);
    expect(toFormatValue('false', 'bool')).toBe(false);
    expect(toFormatValue('2024-01-01 10:00:00+01', 'timestamptz')).toBe('2024-01-01 10:00:00+01');
    expect(toFormatValue('ab ', 'bpchar')).toBe('ab ');
    expect(toFormatValue('{1,2}', '_int4')).toBe('{1,2}');
    expect(toFormatValue(null, 'int4')).toBe(null);
  });
});

describe('recordParams', () => {
  it('records what node-postgres sends', () => {
    const d = new Date(Date.UTC(2024, 0, 2, 3, 4, 5));
    const [n, s, b, nul, big, nan, arr, obj, buf, date] = recordParams([
      1.5,
      'x',
      true,
      undefined,
      12345678901234567890n,
      NaN,
      [1, 2],
      { a: 1 },
      Buffer.from([1, 255]),
      d,
    ]);
    expect([n, s, b, nul, big, nan, arr, obj, buf]).toEqual([
      1.5,
      'x',
      true,
      null,
      '12345678901234567890',
      'NaN',
      '{"1","2"}',
      '{"a":1}',
      '\\x01ff',
    ]);
    expect(date).toMatch(/^2024-01-0[12]T\d\d:04:05\.000[+-]\d\d:\d\d$/);
  });
});

describe('levels and lost connections', () => {
  it('maps PostgreSQL levels to the format', () => {
    expect(['read uncommitted', 'read committed', 'repeatable read', 'serializable', undefined].map(levelOf)).toEqual([
      'RC',
      'RC',
      'SI',
      'SER',
      'RC',
    ]);
  });
  it('tells a lost connection from an ordinary error', () => {
    expect(isConnectionLoss({ code: '40001', severity: 'ERROR' })).toBe(false);
    expect(isConnectionLoss({ code: '23505', severity: 'ERROR' })).toBe(false);
    expect(isConnectionLoss({ code: '57P01', severity: 'FATAL' })).toBe(true);
    expect(isConnectionLoss({ code: '08006' })).toBe(true);
    expect(isConnectionLoss(new Error('Connection terminated unexpectedly'))).toBe(true);
    expect(isConnectionLoss({ code: 'ECONNRESET' })).toBe(true);
    // a socket's code of five capitals is not a SQLSTATE: a COMMIT that failed with it has an unknown outcome
    // (it was read as a SQLSTATE of no class that ends the connection, so the COMMIT was recorded as aborted)
    expect(isConnectionLoss({ code: 'EPIPE', message: 'write EPIPE' })).toBe(true);
    expect(isConnectionLoss({ code: 'EBADF' })).toBe(true);
  });
  it('reads a SQLSTATE only from errors the server gave', () => {
    expect(sqlStateOf({ code: '40001', severity: 'ERROR' })).toBe('40001');
    expect(sqlStateOf({ code: '25P02' })).toBe('25P02');
    expect(sqlStateOf({ code: 'XX000' })).toBe('XX000');
    expect(sqlStateOf({ code: 'EPIPE' })).toBeUndefined();
    expect(sqlStateOf({ code: 'ECONNRESET' })).toBeUndefined();
    expect(sqlStateOf({ code: '4000' })).toBeUndefined();
    expect(sqlStateOf({ code: 40001 })).toBeUndefined();
    expect(sqlStateOf(null)).toBeUndefined();
    expect(sqlStateOf(new Error('Connection terminated unexpectedly'))).toBeUndefined();
  });
});
