/** The path of a program on the PATH, or undefined (tests of real clients skip without them). */
import { accessSync, constants } from 'node:fs';
import { delimiter, join } from 'node:path';

export function which(program: string): string | undefined {
  for (const d of (process.env.PATH ?? '').split(delimiter)) {
    if (!d) continue;
    const p = join(d, program);
    try {
      accessSync(p, constants.X_OK);
      return p;
    } catch {
      // not here
    }
  }
  return undefined;
}
