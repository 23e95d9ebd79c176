import { execFileSync, spawn, spawnSync, type ChildProcess, type SpawnOptions } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { killOnExit } from './bench-support.js';

/**
 * Keycloak 26.7.3 as the differential suite (issue 41) and the Keycloak bench (issue 44) use it: fetched from Maven
 * Central by Maven, cached under the user's home (never in the repository), and started in a process group of its own
 * that a failing or interrupted run takes down with it.
 */

export const KEYCLOAK_VERSION = '26.7.3';
export const KEYCLOAK_CACHE = process.env.REALMGATE_KEYCLOAK_CACHE ?? join(homedir(), 'kc');

/** Why Keycloak cannot run here (no Java 17+ or no Maven), or null when it can. */
export function missingTools(): string | null {
  // `java -version` writes to stderr.
  const java = spawnSync('java', ['-version'], { encoding: 'utf8' });
  if (java.error) return 'java is not installed';
  const major = /version "(\d+)/.exec(`${java.stderr}${java.stdout}`)?.[1];
  if (!major || Number(major) < 17) return `Java 17 or later is needed (found ${major ?? `an unknown version: ${java.status} ${java.stderr.slice(0, 300)}`})`;
  if (spawnSync('mvn', ['-v'], { stdio: 'ignore' }).error) return 'mvn (Maven) is not installed';
  return null;
}

/**
 * The unpacked distribution under `parent` (the cache by default), downloaded (Maven's own cache, then Maven Central)
 * into the cache and unzipped the first time only. The bench unpacks a copy of its own beside the suite's: Keycloak
 * rebuilds its distribution for each profile (start-dev, start), and each keeps its database in it.
 */
export function keycloakHome(log: (line: string) => void, parent = KEYCLOAK_CACHE): string {
  const home = join(parent, `keycloak-${KEYCLOAK_VERSION}`);
  if (existsSync(join(home, 'bin', 'kc.sh'))) return home;
  mkdirSync(KEYCLOAK_CACHE, { recursive: true });
  mkdirSync(parent, { recursive: true });
  const zip = join(KEYCLOAK_CACHE, `keycloak-quarkus-dist-${KEYCLOAK_VERSION}.zip`);
  if (!existsSync(zip)) {
    log(`fetching Keycloak ${KEYCLOAK_VERSION} with Maven into ${KEYCLOAK_CACHE}`);
    execFileSync('mvn', ['-q', 'dependency:copy', `-Dartifact=org.keycloak:keycloak-quarkus-dist:${KEYCLOAK_VERSION}:zip`, `-DoutputDirectory=${KEYCLOAK_CACHE}`], { stdio: 'inherit' });
  }
  log(`unzipping ${zip} into ${parent}`);
  execFileSync('unzip', ['-q', '-o', zip, '-d', parent], { stdio: 'inherit' });
  return home;
}

export interface GroupProcess {
  child: ChildProcess;
  /** The exit code (-1 for a signal) once the process has exited, else null. */
  exitCode(): number | null;
  /** SIGTERM to the whole group, SIGKILL after `graceMs` if it is still there; resolves once the leader exited. */
  stop(graceMs?: number): Promise<void>;
}

/**
 * `command` in a process group of its own (detached), so that everything it starts (kc.sh's JVM) ends with it. The
 * group is killed when this process exits, and on SIGINT, SIGTERM and SIGHUP (then this process exits 130), so an
 * interrupted or failing run leaves nothing behind.
 */
export function spawnGroup(command: string, args: string[], options: SpawnOptions = {}): GroupProcess {
  const child = spawn(command, args, { ...options, detached: true });
  let exited: number | null = null;
  const gone = new Promise<void>((done) => {
    child.on('exit', (code) => {
      exited = code ?? -1;
      done();
    });
    child.on('error', () => {
      exited = -1;
      done();
    });
  });
  const signalGroup = (signal: NodeJS.Signals) => {
    if (child.pid === undefined) return;
    try {
      process.kill(-child.pid, signal);
    } catch {
      // the group is gone already
    }
  };
  const forget = killOnExit(() => signalGroup('SIGKILL'));
  const stop = async (graceMs = 30_000) => {
    if (exited === null) {
      signalGroup('SIGTERM');
      const timer = setTimeout(() => signalGroup('SIGKILL'), graceMs);
      await gone;
      clearTimeout(timer);
    }
    // Whatever the leader left in its group (kc.sh waits for its JVM, but a crash may leave it orphaned).
    signalGroup('SIGKILL');
    forget();
  };
  return { child, exitCode: () => exited, stop };
}
