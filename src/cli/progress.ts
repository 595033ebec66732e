/**
 * Progress of a long `isocheck check` (the stage it is in: reading, building the model, the linear check's steps,
 * the search) or of a running `isocheck proxy` (clients and transactions so far) on a terminal, with the time so
 * far, on one line of standard error that is rewritten in place and cleared at the end. Shown only when standard
 * error is a terminal and the run has lasted a second; never in a pipe or a CI log, where it would only be noise.
 * `note()` writes a line of its own (a warning) above it.
 */
export interface Progress {
  stage(name: string): void;
  note(line: string): void;
  done(): void;
}

export function terminalProgress(label: string, stream: NodeJS.WriteStream = process.stderr): Progress {
  if (!stream.isTTY) return { stage: () => {}, note: (line) => void stream.write(`${line}\n`), done: () => {} };
  const started = Date.now();
  let shown = false;
  let current = '';
  const draw = () => {
    const seconds = Math.floor((Date.now() - started) / 1000);
    const text = `${label}: ${current} (${seconds} s)`;
    const width = Math.max(20, (stream.columns || 100) - 1);
    stream.write(`\r\x1b[2K${text.length > width ? `${text.slice(0, width - 1)}…` : text}`);
    shown = true;
  };
  // Redrawn every second, so that the time moves while one stage runs long; unref'd: it never keeps the process up.
  const timer = setInterval(() => {
    if (Date.now() - started >= 1000 && current) draw();
  }, 1000);
  timer.unref();
  return {
    stage(name: string) {
      current = name;
      if (Date.now() - started >= 1000) draw();
    },
    note(line: string) {
      stream.write(`${shown ? '\r\x1b[2K' : ''}${line}\n`);
      if (shown) draw();
    },
    done() {
      clearInterval(timer);
      if (shown) stream.write('\r\x1b[2K');
      shown = false;
      current = '';
    },
  };
}
