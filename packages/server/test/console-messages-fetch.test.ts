import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import JSZip from 'jszip';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { artifactPath, fetchMavenArtifact, mavenRepository } from '../../../scripts/maven-artifact.js';
import { writeMessages, type UiBuild } from '../../../scripts/ui-build.js';

/**
 * The console's messages without Maven (issue 43 item 5): the build fetches Keycloak's theme artifact over HTTP(S)
 * with its published SHA-1 checked. A loopback server stands in for Maven Central (REALMGATE_MAVEN_REPOSITORY).
 */
const VERSION = '99.1.0';
const ENTRY = 'theme/keycloak.v2/admin/messages/messages_en.properties';
const spec: UiBuild = {
  root: '/nonexistent',
  label: 'admin console',
  uiPackage: '@keycloak/keycloak-admin-ui',
  base: '/',
  alsoBundled: [],
  libFiles: [],
  messagesArtifact: 'keycloak-admin-ui',
  messagesEntry: ENTRY,
  extraMessages: { ownKey: 'Own text' },
};
const path = `/maven2/${artifactPath({ groupId: 'org.keycloak', artifactId: 'keycloak-admin-ui', version: VERSION })}`;

let server: Server;
let repository: string;
let jar: Buffer;
/** What the stand-in answers for the jar and its .sha1 (changed by the tests); requests it saw. */
let served: { jar: Buffer; sha1: string };
let requests: string[];
let work: string;
let env: NodeJS.ProcessEnv;

const sha1 = (body: Buffer) => createHash('sha1').update(body).digest('hex');

beforeAll(async () => {
  const zip = new JSZip();
  zip.file(ENTRY, '# the console\'s texts\nsave=Save\nwelcome=Welcome to {0}\\u0021\n');
  jar = await zip.generateAsync({ type: 'nodebuffer' });
  server = createServer((request, response) => {
    requests.push(request.url ?? '');
    if (request.url === path) return response.end(served.jar);
    if (request.url === `${path}.sha1`) return response.end(served.sha1);
    response.statusCode = 404;
    response.end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  repository = `http://127.0.0.1:${(server.address() as AddressInfo).port}/maven2`;
});
afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
});
beforeEach((context) => {
  work = mkdtempSync(join(tmpdir(), 'realmgate-maven-'));
  context.onTestFinished(() => rmSync(work, { recursive: true, force: true }));
  env = { REALMGATE_MAVEN_REPOSITORY: repository, REALMGATE_CACHE_DIR: join(work, 'cache') };
  served = { jar, sha1: `${sha1(jar)}  keycloak-admin-ui-${VERSION}.jar\n` };
  requests = [];
});

describe('the console messages fetched without Maven', () => {
  it('fetches the artifact and its .sha1, writes the English texts and caches the jar under the cache folder', async () => {
    const out = join(work, 'dist');
    expect(await writeMessages(spec, out, VERSION, env)).toBe(true);
    expect(JSON.parse(readFileSync(join(out, 'messages', 'en.json'), 'utf8'))).toEqual({ ownKey: 'Own text', save: 'Save', welcome: 'Welcome to {0}!' });
    expect(requests.sort()).toEqual([path, `${path}.sha1`]);
    const cached = join(work, 'cache', 'maven', 'org', 'keycloak', 'keycloak-admin-ui', VERSION, `keycloak-admin-ui-${VERSION}.jar`);
    expect(readFileSync(cached).equals(jar)).toBe(true);

    // The next build takes it from the cache: the repository may be gone (offline).
    requests = [];
    const again = await fetchMavenArtifact({ groupId: 'org.keycloak', artifactId: 'keycloak-admin-ui', version: VERSION }, { env: { ...env, REALMGATE_MAVEN_REPOSITORY: 'http://127.0.0.1:9/none' } });
    expect(again.source).toBe(cached);
    expect(again.body.equals(jar)).toBe(true);
    expect(requests).toEqual([]);
  });

  it('refuses a tampered jar (its SHA-1 is not the published one): nothing written, nothing cached, the reason said', async () => {
    const tampered = Buffer.from(jar);
    tampered[tampered.length - 30] ^= 0xff;
    served.jar = tampered;
    const errors = vi.spyOn(console, 'error').mockImplementation(() => {});
    try {
      await expect(fetchMavenArtifact({ groupId: 'org.keycloak', artifactId: 'keycloak-admin-ui', version: VERSION }, { env })).rejects.toThrow(
        `SHA-1 ${sha1(tampered)} is not the published ${sha1(jar)}; the file is refused`,
      );
      const out = join(work, 'dist');
      expect(await writeMessages(spec, out, VERSION, env)).toBe(false);
      expect(existsSync(join(out, 'messages', 'en.json'))).toBe(false);
      expect(existsSync(join(work, 'cache', 'maven', 'org', 'keycloak', 'keycloak-admin-ui', VERSION, `keycloak-admin-ui-${VERSION}.jar`))).toBe(false);
      expect(String(errors.mock.calls.at(-1)?.[0])).toMatch(/admin console: English messages not fetched \(.*is not the published.*\); the build goes on and the console shows message keys/);
    } finally {
      errors.mockRestore();
    }
  });

  it('fetches again when the cached jar was changed on disk', async () => {
    await fetchMavenArtifact({ groupId: 'org.keycloak', artifactId: 'keycloak-admin-ui', version: VERSION }, { env });
    const cached = join(work, 'cache', 'maven', 'org', 'keycloak', 'keycloak-admin-ui', VERSION, `keycloak-admin-ui-${VERSION}.jar`);
    const { writeFileSync } = await import('node:fs');
    writeFileSync(cached, 'changed');
    requests = [];
    const fetched = await fetchMavenArtifact({ groupId: 'org.keycloak', artifactId: 'keycloak-admin-ui', version: VERSION }, { env });
    expect(fetched.body.equals(jar)).toBe(true);
    expect(requests).toContain(path);
  });

  it('offline (nothing listening, nothing cached): the build goes on without texts and says so', async () => {
    const errors = vi.spyOn(console, 'error').mockImplementation(() => {});
    try {
      const out = join(work, 'dist');
      expect(await writeMessages(spec, out, VERSION, { ...env, REALMGATE_MAVEN_REPOSITORY: 'http://127.0.0.1:9/maven2' })).toBe(false);
      expect(existsSync(join(out, 'messages', 'en.json'))).toBe(false);
      expect(String(errors.mock.calls[0]?.[0])).toMatch(/English messages not fetched \(could not reach http:\/\/127\.0\.0\.1:9\/maven2\/.*\.sha1 .*offline\?\)/);
    } finally {
      errors.mockRestore();
    }
  });

  it('refuses a .sha1 that is not a checksum, a missing artifact, and a repository that is plain http off loopback', async () => {
    served.sha1 = '<html>not found</html>';
    await expect(fetchMavenArtifact({ groupId: 'org.keycloak', artifactId: 'keycloak-admin-ui', version: VERSION }, { env })).rejects.toThrow('is not a SHA-1 checksum');
    await expect(fetchMavenArtifact({ groupId: 'org.keycloak', artifactId: 'keycloak-admin-ui', version: '1.0.0' }, { env })).rejects.toThrow('answered 404');
    expect(() => mavenRepository({ REALMGATE_MAVEN_REPOSITORY: 'http://repo.example.com/maven2' })).toThrow('must be https');
    expect(mavenRepository({})).toBe('https://repo1.maven.org/maven2');
    expect(() => artifactPath({ groupId: 'org.keycloak', artifactId: '../x', version: '1' })).toThrow('not a Maven coordinate');
  });
});
