/**
 * One artifact of a Maven repository (Maven Central unless REALMGATE_MAVEN_REPOSITORY names another), fetched over
 * HTTPS without Maven or any Java tooling, as npm ci fetches a package: the file and its published `.sha1`, the
 * file refused unless its SHA-1 is the published one, then kept in a cache under the user's home
 * (`$XDG_CACHE_HOME/realmgate/maven`, else `~/.cache/realmgate/maven`; REALMGATE_CACHE_DIR replaces
 * `…/realmgate`) so later builds, offline ones too, take it from there. Nothing of it is written into the repository.
 *
 * A repository URL must be https, or http to a loopback host (a test's stand-in for Maven Central).
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';

export const MAVEN_CENTRAL = 'https://repo1.maven.org/maven2';

export interface MavenCoordinates {
  groupId: string;
  artifactId: string;
  version: string;
  /** `jar` unless given. */
  packaging?: string;
}

/** Where artifacts are fetched from: REALMGATE_MAVEN_REPOSITORY or Maven Central, without a trailing slash. */
export function mavenRepository(env: NodeJS.ProcessEnv = process.env): string {
  const url = (env.REALMGATE_MAVEN_REPOSITORY || MAVEN_CENTRAL).replace(/\/+$/, '');
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new Error(`REALMGATE_MAVEN_REPOSITORY is not a URL: ${url}`);
  }
  const loopback = ['127.0.0.1', 'localhost', '[::1]'].includes(parsed.hostname);
  if (parsed.protocol !== 'https:' && !(parsed.protocol === 'http:' && loopback)) {
    throw new Error(`the Maven repository must be https (http only on a loopback host): ${url}`);
  }
  return url;
}

/** The cache folder of fetched artifacts (Maven's layout below it). */
export function mavenCacheDir(env: NodeJS.ProcessEnv = process.env): string {
  const base = env.REALMGATE_CACHE_DIR || join(env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'realmgate');
  return join(base, 'maven');
}

const NAME = /^[A-Za-z0-9_.-]+$/;

/** The artifact's path in a Maven repository: org/keycloak/keycloak-admin-ui/26.7.4/keycloak-admin-ui-26.7.4.jar. */
export function artifactPath({ groupId, artifactId, version, packaging = 'jar' }: MavenCoordinates): string {
  for (const part of [groupId, artifactId, version, packaging]) if (!NAME.test(part) || part.includes('..')) throw new Error(`not a Maven coordinate: ${part}`);
  return `${groupId.replaceAll('.', '/')}/${artifactId}/${version}/${artifactId}-${version}.${packaging}`;
}

const sha1 = (body: Buffer) => createHash('sha1').update(body).digest('hex');

/** A `.sha1` file's checksum: its first word, 40 hex digits (some repositories append the file name). */
function publishedSha1(text: string, url: string): string {
  const word = text.trim().split(/\s+/)[0]?.toLowerCase() ?? '';
  if (!/^[0-9a-f]{40}$/.test(word)) throw new Error(`${url} is not a SHA-1 checksum`);
  return word;
}

async function download(url: string, timeoutMs: number): Promise<Buffer> {
  let response: Response;
  try {
    response = await fetch(url, { signal: AbortSignal.timeout(timeoutMs), redirect: 'follow' });
  } catch (error) {
    const cause = error instanceof Error ? ((error.cause as Error | undefined)?.message ?? error.message) : String(error);
    throw new Error(`could not reach ${url} (${cause}); offline?`);
  }
  if (!response.ok) throw new Error(`${url} answered ${response.status}`);
  return Buffer.from(await response.arrayBuffer());
}

/** Writes through a temporary file and a rename, so a reader never sees half a file. */
function writeAtomically(file: string, body: Buffer | string): void {
  mkdirSync(dirname(file), { recursive: true });
  const partial = `${file}.partial-${process.pid}`;
  writeFileSync(partial, body);
  renameSync(partial, file);
}

export interface FetchedArtifact {
  body: Buffer;
  /** Where it came from: the cache, or the repository's URL. */
  source: string;
}

/**
 * The artifact's bytes, from the cache when the cached file still has its recorded SHA-1, else downloaded with its
 * `.sha1` and checked. A file whose SHA-1 differs from the published one is refused (an error naming both) and not
 * cached; a cached file that no longer matches is fetched again.
 */
export async function fetchMavenArtifact(coordinates: MavenCoordinates, options: { env?: NodeJS.ProcessEnv; timeoutMs?: number } = {}): Promise<FetchedArtifact> {
  const env = options.env ?? process.env;
  const path = artifactPath(coordinates);
  const cached = join(mavenCacheDir(env), ...path.split('/'));
  if (existsSync(cached) && existsSync(`${cached}.sha1`)) {
    const body = readFileSync(cached);
    if (sha1(body) === readFileSync(`${cached}.sha1`, 'utf8').trim()) return { body, source: cached };
    rmSync(cached, { force: true });
  }
  const url = `${mavenRepository(env)}/${path}`;
  const timeoutMs = options.timeoutMs ?? 120_000;
  const expected = publishedSha1((await download(`${url}.sha1`, timeoutMs)).toString('utf8'), `${url}.sha1`);
  const body = await download(url, timeoutMs);
  const actual = sha1(body);
  if (actual !== expected) throw new Error(`${url}: SHA-1 ${actual} is not the published ${expected}; the file is refused`);
  writeAtomically(cached, body);
  writeAtomically(`${cached}.sha1`, expected);
  return { body, source: url };
}
