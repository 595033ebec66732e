/** Runs a program of the machine's (a real client in the proxy's tests): what it printed on stdout and stderr, or an
 *  error with its stderr when it fails or runs past its timeout (60 s unless told). */
import { execFile } from 'node:child_process';

export function program(
  cmd: string,
  args: string[],
  options: { timeout?: number; env?: NodeJS.ProcessEnv } = {},
): Promise<{ stdout: string; stderr: string }> {
  return new Promise((done, fail) => {
    execFile(
      cmd,
      args,
      { timeout: options.timeout ?? 60_000, env: options.env ?? process.env },
      (err, stdout, stderr) =>
        err ? fail(new Error(`${cmd} ${args.join(' ')} failed: ${err.message}\n${stderr}`)) : done({ stdout, stderr }),
    );
  });
}
