/**
 * Progress of a long check (src/cli/progress.ts): on a terminal, after a second, the stage on one rewritten line
 * of standard error, cleared at the end; nothing at all when standard error is not a terminal (pipes, CI logs),
 * and nothing for a check that ends within the second. isocheck proxy uses it too (clients and transactions so far),
 * its warnings written above the line.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { terminalProgress } from '../src/cli/progress.js';

function fakeStream(isTTY: boolean) {
  const written: string[] = [];
  return {
    stream: { isTTY, columns: 200, write: (s: string) => written.push(s) } as unknown as NodeJS.WriteStream,
    written,
  };
}

afterEach(() => {
  vi.useRealTimers();
});

describe('terminal progress', () => {
  it('shows the stage on a terminal once the run has lasted a second, and clears the line at the end', () => {
    vi.useFakeTimers();
    const { stream, written } = fakeStream(true);
    const p = terminalProgress('isocheck check h.ndjson', stream);
    p.stage('reading: line 100,000');
    expect(written).toEqual([]);
    vi.advanceTimersByTime(1500);
    p.stage('linear check: verifying every axiom under it');
    expect(written.at(-1)).toContain('isocheck check h.ndjson: linear check: verifying every axiom under it (1 s)');
    vi.advanceTimersByTime(2000);
    expect(written.at(-1)).toContain('(3 s)');
    p.done();
    expect(written.at(-1)).toBe('\r\x1b[2K');
  });

  it('writes nothing when the run ends within a second', () => {
    vi.useFakeTimers();
    const { stream, written } = fakeStream(true);
    const p = terminalProgress('x', stream);
    p.stage('building the model');
    p.done();
    vi.advanceTimersByTime(5000);
    expect(written).toEqual([]);
  });

  it('writes nothing when standard error is not a terminal', () => {
    vi.useFakeTimers();
    const { stream, written } = fakeStream(false);
    const p = terminalProgress('x', stream);
    vi.advanceTimersByTime(5000);
    p.stage('searching');
    p.done();
    expect(written).toEqual([]);
  });

  it('writes a note (a warning) above the line, then draws the line again; off a terminal, the note as is', () => {
    vi.useFakeTimers();
    const { stream, written } = fakeStream(true);
    const p = terminalProgress('isocheck proxy', stream);
    p.note('isocheck: warning: before the line is shown');
    expect(written).toEqual(['isocheck: warning: before the line is shown\n']);
    vi.advanceTimersByTime(1500);
    p.stage('2 clients connected, 10 transactions recorded');
    p.note('isocheck: warning: w');
    expect(written.slice(-2)).toEqual([
      '\r\x1b[2Kisocheck: warning: w\n',
      '\r\x1b[2Kisocheck proxy: 2 clients connected, 10 transactions recorded (1 s)',
    ]);
    const plain = fakeStream(false);
    terminalProgress('x', plain.stream).note('isocheck: warning: w');
    expect(plain.written).toEqual(['isocheck: warning: w\n']);
  });
});
