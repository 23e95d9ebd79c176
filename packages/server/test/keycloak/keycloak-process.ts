import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, readFileSync, rmSync, writeFileSync, createWriteStream } from 'node:fs';
import { join } from 'node:path';
import { KEYCLOAK_CACHE, KEYCLOAK_VERSION, keycloakHome, spawnGroup } from '../../../../scripts/keycloak-dist.js';

/**
 * Keycloak 26.7.3 for the differential suite (issue 41): fetched from Maven Central by Maven, cached under the
 * user's home (never in the repository), started once per run on loopback, stopped at the end.
 */

export { KEYCLOAK_VERSION, KEYCLOAK_CACHE, missingTools } from '../../../../scripts/keycloak-dist.js';
export const KEYCLOAK_PORT = Number(process.env.REALMGATE_KEYCLOAK_PORT ?? 8180);

/**
 * The bootstrap administrator's password: random, made once and kept beside the cache (mode 600), because Keycloak
 * creates that administrator only in an empty database and the database is kept between runs (its first creation
 * costs minutes). A database without the file it was made with is started again from empty.
 */
function adminPassword(home: string): string {
  const file = join(KEYCLOAK_CACHE, 'admin-password');
  if (existsSync(file)) return readFileSync(file, 'utf8').trim();
  rmSync(join(home, 'data'), { recursive: true, force: true });
  const password = randomBytes(18).toString('base64url');
  writeFileSync(file, password, { mode: 0o600 });
  chmodSync(file, 0o600);
  return password;
}

export interface RunningKeycloak {
  url: string;
  adminPassword: string;
  stop(): Promise<void>;
}

async function answers(url: string): Promise<boolean> {
  try {
    const response = await fetch(`${url}/realms/master/.well-known/openid-configuration`, { signal: AbortSignal.timeout(2000) });
    return response.status === 200;
  } catch {
    return false;
  }
}

/** Starts Keycloak in development mode on 127.0.0.1 and waits until the master realm answers. */
export async function startKeycloak(log: (line: string) => void): Promise<RunningKeycloak> {
  const home = keycloakHome(log);
  const password = adminPassword(home);
  const url = `http://127.0.0.1:${KEYCLOAK_PORT}`;
  if (await answers(url)) throw new Error(`something already answers on ${url}; stop it or set REALMGATE_KEYCLOAK_PORT (or REALMGATE_KEYCLOAK_URL to use it)`);
  const logFile = join(KEYCLOAK_CACHE, 'last-run.log');
  const out = createWriteStream(logFile);
  log(`starting Keycloak ${KEYCLOAK_VERSION} on ${url} (its log: ${logFile})`);
  // Its own process group, so the JVM that kc.sh starts ends with it, also when the run is interrupted.
  const group = spawnGroup(
    join(home, 'bin', 'kc.sh'),
    ['start-dev', '--http-host=127.0.0.1', `--http-port=${KEYCLOAK_PORT}`, '--cache=local', '--log-console-output=default'],
    { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, KC_BOOTSTRAP_ADMIN_USERNAME: 'admin', KC_BOOTSTRAP_ADMIN_PASSWORD: password } },
  );
  group.child.stdout!.pipe(out);
  group.child.stderr!.pipe(out);
  const stop = () => group.stop();
  // Generous: the first start builds the server and creates the database (about four minutes on two busy cores).
  const deadline = Date.now() + 15 * 60_000;
  while (!(await answers(url))) {
    if (group.exitCode() !== null) throw new Error(`Keycloak exited with ${group.exitCode()} before it answered; see ${logFile}`);
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`Keycloak did not answer on ${url} in 15 minutes; see ${logFile}`);
    }
    await new Promise((r) => setTimeout(r, 1000));
  }
  return { url, adminPassword: password, stop };
}
