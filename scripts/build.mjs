// `npm run build` (and `prepare`, which npm runs after `npm ci` and before `npm pack`): compiles the sources to
// dist/, removed first so that no module deleted from the sources lingers in it or in the package. When npm packs
// or publishes, without source maps: the package ships no sources for them to point at.
import { rmSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
rmSync(new URL('../dist', import.meta.url), { recursive: true, force: true });
const packing = ['pack', 'publish'].includes(process.env.npm_command ?? '');
try {
  // npm puts node_modules/.bin on the PATH of scripts
  execFileSync('tsc', ['-p', 'tsconfig.build.json', ...(packing ? ['--sourceMap', 'false'] : [])], {
    cwd: root,
    stdio: 'inherit',
    shell: process.platform === 'win32',
  });
} catch {
  process.exit(1);
}
