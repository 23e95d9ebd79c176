import { execFileSync, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync, createWriteStream } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';

/**
 * Keycloak 26.7.3 for the differential suite (issue 41): fetched from Maven Central by Maven, cached under the
 * user's home (never in the repository), started once per run on loopback, stopped at the end.
 */

export const KEYCLOAK_VERSION = '26.7.3';
export const KEYCLOAK_CACHE = process.env.REALMGATE_KEYCLOAK_CACHE ?? join(homedir(), 'kc');
export const KEYCLOAK_PORT = Number(process.env.REALMGATE_KEYCLOAK_PORT ?? 8180);

/** Why the suite cannot run here (no Java 17+ or no Maven), or null when it can. */
export function missingTools(): string | null {
  // `java -version` writes to stderr.
  const java = spawnSync('java', ['-version'], { encoding: 'utf8' });
  if (java.error) return 'java is not installed';
  const major = /version "(\d+)/.exec(`${java.stderr}${java.stdout}`)?.[1];
  if (!major || Number(major) < 17) return `Java 17 or later is needed (found ${major ?? `an unknown version: ${java.status} ${java.stderr.slice(0, 300)}`})`;
  if (spawnSync('mvn', ['-v'], { stdio: 'ignore' }).error) return 'mvn (Maven) is not installed';
  return null;
}

/** The unpacked distribution, downloaded (Maven's own cache, then Maven Central) and unzipped the first time only. */
export function keycloakHome(log: (line: string) => void): string {
  const home = join(KEYCLOAK_CACHE, `keycloak-${KEYCLOAK_VERSION}`);
  if (existsSync(join(home, 'bin', 'kc.sh'))) return home;
  mkdirSync(KEYCLOAK_CACHE, { recursive: true });
  const zip = join(KEYCLOAK_CACHE, `keycloak-quarkus-dist-${KEYCLOAK_VERSION}.zip`);
  if (!existsSync(zip)) {
    log(`fetching Keycloak ${KEYCLOAK_VERSION} with Maven into ${KEYCLOAK_CACHE}`);
    execFileSync('mvn', ['-q', 'dependency:copy', `-Dartifact=org.keycloak:keycloak-quarkus-dist:${KEYCLOAK_VERSION}:zip`, `-DoutputDirectory=${KEYCLOAK_CACHE}`], { stdio: 'inherit' });
  }
  log(`unzipping ${zip}`);
  execFileSync('unzip', ['-q', '-o', zip, '-d', KEYCLOAK_CACHE], { stdio: 'inherit' });
  return home;
}

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
  const child: ChildProcess = spawn(
    join(home, 'bin', 'kc.sh'),
    ['start-dev', '--http-host=127.0.0.1', `--http-port=${KEYCLOAK_PORT}`, '--cache=local', '--log-console-output=default'],
    {
      // Its own process group, so the JVM that kc.sh starts ends with it.
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, KC_BOOTSTRAP_ADMIN_USERNAME: 'admin', KC_BOOTSTRAP_ADMIN_PASSWORD: password },
    },
  );
  child.stdout!.pipe(out);
  child.stderr!.pipe(out);
  let exited: number | null = null;
  child.on('exit', (code) => (exited = code ?? -1));
  const stop = async () => {
    if (exited !== null || child.pid === undefined) return;
    process.kill(-child.pid, 'SIGTERM');
    for (let i = 0; i < 300 && exited === null; i++) await new Promise((r) => setTimeout(r, 100));
    if (exited === null) process.kill(-child.pid, 'SIGKILL');
  };
  // A run that is interrupted (Ctrl-C, a CI timeout) takes its Keycloak with it.
  const killGroup = () => {
    if (exited === null && child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
  };
  process.once('exit', killGroup);
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const)
    process.once(signal, () => {
      killGroup();
      process.exit(130);
    });
  // Generous: the first start builds the server and creates the database (about four minutes on two busy cores).
  const deadline = Date.now() + 15 * 60_000;
  while (!(await answers(url))) {
    if (exited !== null) throw new Error(`Keycloak exited with ${exited} before it answered; see ${logFile}`);
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`Keycloak did not answer on ${url} in 15 minutes; see ${logFile}`);
    }
    await new Promise((r) => setTimeout(r, 1000));
  }
  return { url, adminPassword: password, stop };
}
