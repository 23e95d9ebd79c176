import KcAdminClient from '@keycloak/keycloak-admin-client';
import { createRequire } from 'node:module';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { httpDatabases, startServer, type TestServer } from './support/server.js';
import { masterAdminClient } from './support/admin-client.js';

/**
 * Issue 16, point 5: the `keycloak.json` a client's "installation" download gives, read by keycloak-connect 26
 * (unchanged from npm) as a Node API would: its grant manager signs in by password and by client credentials,
 * checks the tokens' signature against the realm's keys, their issuer and type, and introspects them (on SQLite:
 * HTTP behaviour, issue 36).
 */

const require = createRequire(import.meta.url);
const Config = require('keycloak-connect/middleware/auth-utils/config.js');
const GrantManager = require('keycloak-connect/middleware/auth-utils/grant-manager.js');

describe.each(httpDatabases)('keycloak-connect with the installation keycloak.json (%s)', (database) => {
  let t: TestServer;
  let kc: KcAdminClient;
  let apiId: string;
  let webId: string;

  beforeAll(async () => {
    t = await startServer({ database });
    kc = await masterAdminClient(t.url);
    await kc.realms.create({ realm: 'node-app', enabled: true, sslRequired: 'none' });
    kc.setConfig({ realmName: 'node-app' });
    apiId = (await kc.clients.create({ clientId: 'node-api', serviceAccountsEnabled: true, directAccessGrantsEnabled: true, secret: 'node-api-secret-1', attributes: { 'allow.token.introspection.without.audience.check': 'true' } })).id;
    await kc.clients.createRole({ id: apiId, name: 'reader' });
    webId = (await kc.clients.create({ clientId: 'node-web', publicClient: true, directAccessGrantsEnabled: true })).id;
    await kc.users.create({ username: 'nora', enabled: true, email: 'nora@example.test', credentials: [{ type: 'password', value: 'Nora-pass-1', temporary: false }] });
  });
  afterAll(() => t?.close());

  const installation = (id: string) => kc.clients.getInstallationProviders({ id, providerId: 'keycloak-oidc-keycloak-json' }) as unknown as Promise<Record<string, unknown>>;

  it("gives Keycloak's keycloak.json for a confidential and a public client", async () => {
    expect(await installation(apiId)).toEqual({
      realm: 'node-app',
      'auth-server-url': `${t.url}/`,
      'ssl-required': 'none',
      resource: 'node-api',
      credentials: { secret: 'node-api-secret-1' },
      'use-resource-role-mappings': true,
      'confidential-port': 0,
    });
    const web = await installation(webId);
    expect(web).toMatchObject({ resource: 'node-web', 'public-client': true });
    expect(web).not.toHaveProperty('credentials');
    await expect(kc.clients.getInstallationProviders({ id: apiId, providerId: 'keycloak-oidc-jboss-subsystem' })).rejects.toMatchObject({ response: { status: 404 } });
  });

  it("keycloak-connect signs in by password and validates the grant against the realm's keys", async () => {
    const manager = new GrantManager(new Config(await installation(webId)));
    const grant = await manager.obtainDirectly('nora', 'Nora-pass-1', undefined, 'openid');
    expect(grant.access_token.content.preferred_username).toBe('nora');
    expect(grant.access_token.isExpired()).toBe(false);
    await expect(manager.obtainDirectly('nora', 'wrong-password')).rejects.toBeDefined();
    const info = await manager.userInfo(grant.access_token);
    expect(info).toMatchObject({ preferred_username: 'nora', email: 'nora@example.test' });
  });

  it('keycloak-connect obtains a client-credentials grant and introspects its token', async () => {
    const manager = new GrantManager(new Config(await installation(apiId)));
    const grant = await manager.obtainFromClientCredentials();
    expect(grant.access_token.content.azp).toBe('node-api');
    // Introspection with the client's secret from keycloak.json: the token is active, a forged one is not.
    expect(await manager.validateAccessToken(grant.access_token.token)).toBe(grant.access_token.token);
    const forged = `${grant.access_token.token.slice(0, -4)}AAAA`;
    expect(await manager.validateAccessToken(forged)).toBe(false);
  });
});
