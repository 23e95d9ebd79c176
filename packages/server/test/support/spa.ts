import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import KcAdminClient from '@keycloak/keycloak-admin-client';
import { ADMIN_PASSWORD, ADMIN_USERNAME, REPO_ROOT } from './server.js';

/** A library file from node_modules, served unchanged. */
export const libraryFile = (path: string) => readFileSync(join(REPO_ROOT, 'node_modules', path), 'utf8');

/**
 * A single-page app's origin for browser tests: a second loopback port (another origin than the server's, the
 * same site, as an app and its identity server on sibling hosts), serving fixed files by path.
 */
export async function startSpa(files: Record<string, string>): Promise<{ origin: string; close(): Promise<void> }> {
  const server = createServer((request, response) => {
    const path = new URL(request.url ?? '/', 'http://spa').pathname;
    const body = files[path];
    if (body === undefined) return void response.writeHead(404).end();
    const type = path.endsWith('.js') ? 'text/javascript' : 'text/html';
    response.writeHead(200, { 'content-type': `${type}; charset=utf-8`, 'cache-control': 'no-store' }).end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    origin: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/**
 * A realm with a public client for the app (PKCE, redirects and post-logout redirects under the app's origin,
 * web origins `+`) and one user; returns the admin client, set to that realm.
 */
export async function spaRealm(
  serverUrl: string,
  options: { realm: string; clientId: string; appOrigin: string; user: { username: string; password: string; email: string; firstName?: string; lastName?: string } },
): Promise<KcAdminClient> {
  const kc = new KcAdminClient({ baseUrl: serverUrl, realmName: 'master' });
  await kc.auth({ username: ADMIN_USERNAME, password: ADMIN_PASSWORD, grantType: 'password', clientId: 'admin-cli' });
  await kc.realms.create({ realm: options.realm, enabled: true, eventsEnabled: true });
  kc.setConfig({ realmName: options.realm });
  await kc.clients.create({
    clientId: options.clientId,
    publicClient: true,
    redirectUris: [`${options.appOrigin}/*`],
    webOrigins: ['+'],
    attributes: { 'pkce.code.challenge.method': 'S256', 'post.logout.redirect.uris': '+' },
  });
  const { password, ...profile } = options.user;
  await kc.users.create({ ...profile, emailVerified: true, enabled: true, credentials: [{ type: 'password', value: password }] });
  return kc;
}
