// The command line's entry point (bin/isocheck.js imports it): a large `check` starts again in a child Node with a
// larger young generation (respawn.ts); otherwise, and in that child, the command line itself (main.ts).
import { fileURLToPath } from 'node:url';
import { respawnIfLarge, watchParent } from './respawn.js';

watchParent();
if (!(await respawnIfLarge(fileURLToPath(import.meta.url)))) await import('./main.js');
