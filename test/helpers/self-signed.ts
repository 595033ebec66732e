/** A self-signed certificate for localhost made by the openssl CLI, for the TLS tests of the proxy. */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';

/**
 * Writes `name.key` and `name.crt` into dir (RSA 2048, two days, CN=localhost); their paths, or undefined when
 * openssl is missing or fails (the tests then skip TLS with a reason).
 */
export function selfSignedCertificate(
  openssl: string | undefined,
  dir: string,
  name = 'proxy',
): { key: string; cert: string } | undefined {
  if (!openssl) return undefined;
  const key = join(dir, `${name}.key`);
  const cert = join(dir, `${name}.crt`);
  const args = ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '2', '-subj', '/CN=localhost'];
  const r = spawnSync(openssl, [...args, '-keyout', key, '-out', cert], { stdio: 'ignore', timeout: 30_000 });
  return r.status === 0 ? { key, cert } : undefined;
}
