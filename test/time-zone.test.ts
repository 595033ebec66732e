// Which TimeZone settings the recorder takes as UTC (src/recorder/time-zone.ts): every spelling PostgreSQL accepts
// for a zone that is UTC at every instant, and none that has, or once had, another offset.
import { describe, expect, it } from 'vitest';
import { isUtcZone } from '../src/recorder/time-zone.js';

describe('isUtcZone', () => {
  it.each([
    'UTC',
    'utc',
    'Etc/UTC',
    'GMT',
    'Etc/GMT',
    'UCT',
    'Zulu',
    'Etc/Zulu',
    'Universal',
    'Greenwich',
    'GMT0',
    'GMT+0',
    'GMT-0',
    'Etc/GMT+0',
    'Etc/GMT-0',
    '+00:00',
    '-00:00',
    '+00',
    '0',
    '00:00',
    '+00:00:00',
    '0000',
    '<+00>-00',
    '<UTC>0',
    'UTC0',
    'UTC+0',
    ' UTC ',
  ])('%s is UTC', (z) => {
    expect(isUtcZone(z)).toBe(true);
  });
  it.each([
    'Europe/London',
    'Europe/Paris',
    'Africa/Abidjan',
    'Iceland',
    'posixrules',
    '+01:00',
    '-05',
    '<+01>-01',
    'UTC1',
    'GMT+1',
    'Etc/GMT+5',
    'EST5EDT',
    'UTC0BST',
    '<+00>-00<+01>',
    'America/New_York',
    'Z',
    '',
  ])('%s is not UTC', (z) => {
    expect(isUtcZone(z)).toBe(false);
  });
});
