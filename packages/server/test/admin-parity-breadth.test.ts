import type KcAdminClient from '@keycloak/keycloak-admin-client';
import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { masterAdminClient, rejects, tokenOfUserWithRoles } from './support/admin-client.js';
import { realmExporter } from '../src/services/realm-export.js';
import { api, startServer, type TestServer } from './support/server.js';

/**
 * Admin-client methods the differential breadth run (test/keycloak/admin-client.keycloak.ts) found failing on
 * Realmgate and working on Keycloak 26.7.3, each as Keycloak answers it: an identity provider kind's factory, an
 * identity provider's reload-keys, the CRL cache clear, and the fields Keycloak's answers have that ours lacked.
 */
const REALM = 'breadth';

describe('admin API breadth (issue 41)', () => {
  let t: TestServer;
  let kc: KcAdminClient;
  let jwks: Server;
  let jwksUrl: string;
  let jwksFetches = 0;

  beforeAll(async () => {
    jwks = createServer((req, res) => {
      if (req.url === '/jwks') {
        jwksFetches++;
        res.setHeader('content-type', 'application/json');
        res.end('{"keys":[]}');
      } else {
        res.statusCode = 404;
        res.end();
      }
    });
    await new Promise<void>((done) => jwks.listen(0, '127.0.0.1', done));
    jwksUrl = `http://127.0.0.1:${(jwks.address() as { port: number }).port}/jwks`;
    t = await startServer();
    kc = await masterAdminClient(t.url);
    await kc.realms.create({ realm: REALM, enabled: true });
    kc.setConfig({ realmName: REALM });
    const endpoints = { authorizationUrl: 'http://127.0.0.1:59999/auth', tokenUrl: 'http://127.0.0.1:59999/token', clientId: 'rg', clientSecret: 'up-secret', clientAuthMethod: 'client_secret_post' };
    await kc.identityProviders.create({ alias: 'plain', providerId: 'oidc', config: endpoints });
    await kc.identityProviders.create({ alias: 'by-jwks', providerId: 'oidc', config: { ...endpoints, validateSignature: 'true', useJwksUrl: 'true', jwksUrl } });
    // Port 9 (discard): nothing listens on loopback there, so the fetch is refused.
    await kc.identityProviders.create({ alias: 'unreachable', providerId: 'oidc', config: { ...endpoints, validateSignature: 'true', useJwksUrl: 'true', jwksUrl: 'http://127.0.0.1:9/jwks' } });
    await kc.identityProviders.create({ alias: 'gh', providerId: 'github', config: { clientId: 'x', clientSecret: 'y' } });
  });

  afterAll(async () => {
    await t?.close();
    await new Promise((done) => jwks?.close(done));
  });

  it("answers an identity provider kind's factory with Keycloak's fields, 400 for a kind the server does not have", async () => {
    expect(await kc.identityProviders.findFactory({ providerId: 'oidc' })).toEqual({ name: 'OpenID Connect v1.0', id: 'oidc', configProperties: [], helpText: '', configMetadata: [] });
    expect(await kc.identityProviders.findFactory({ providerId: 'keycloak-oidc' })).toMatchObject({ id: 'keycloak-oidc', name: 'Keycloak OpenID Connect' });
    expect(await kc.identityProviders.findFactory({ providerId: 'github' })).toMatchObject({ id: 'github', name: 'GitHub' });
    await rejects(kc.identityProviders.findFactory({ providerId: 'saml' }), 400);
  });

  it("reload-keys fetches an OpenID Connect provider's JWKS again (true), false where no JWKS checks signatures, 500 when it cannot be read", async () => {
    const before = jwksFetches;
    expect(await kc.identityProviders.reloadKeys({ alias: 'by-jwks' })).toBe(true);
    expect(await kc.identityProviders.reloadKeys({ alias: 'by-jwks' })).toBe(true);
    // Fetched each time, never answered from the cache.
    expect(jwksFetches - before).toBe(2);
    expect(await kc.identityProviders.reloadKeys({ alias: 'plain' })).toBe(false);
    expect(await kc.identityProviders.reloadKeys({ alias: 'gh' })).toBe(false);
    const unreachable = await api(t.url, 'GET', `/admin/realms/${REALM}/identity-provider/instances/unreachable/reload-keys`, kc.accessToken!);
    expect(unreachable.status).toBe(500);
    expect((unreachable.body as { errorMessage: string }).errorMessage).toMatch(/unreachable/);
    await rejects(kc.identityProviders.reloadKeys({ alias: 'nope' }), 404);
  });

  it('reload-keys needs manage-identity-providers, as Keycloak; the factory view-identity-providers', async () => {
    const viewer = await tokenOfUserWithRoles(kc, t.url, 'idp-viewer', ['view-identity-providers']);
    expect((await api(t.url, 'GET', `/admin/realms/${REALM}/identity-provider/instances/by-jwks/reload-keys`, viewer)).status).toBe(403);
    expect((await api(t.url, 'GET', `/admin/realms/${REALM}/identity-provider/providers/oidc`, viewer)).status).toBe(200);
    const manager = await tokenOfUserWithRoles(kc, t.url, 'idp-manager', ['manage-identity-providers']);
    expect((await api(t.url, 'GET', `/admin/realms/${REALM}/identity-provider/instances/by-jwks/reload-keys`, manager)).body).toBe(true);
    const usersOnly = await tokenOfUserWithRoles(kc, t.url, 'users-only', ['view-users']);
    expect((await api(t.url, 'GET', `/admin/realms/${REALM}/identity-provider/providers/oidc`, usersOnly)).status).toBe(403);
  });

  it("lists an identity provider's capabilities as Keycloak's `types`: signing users in for OpenID Connect, none for social", async () => {
    expect((await kc.identityProviders.findOne({ alias: 'plain' }))!.types).toEqual(['USER_AUTHENTICATION']);
    expect((await kc.identityProviders.findOne({ alias: 'gh' }))!.types).toEqual([]);
  });

  it("answers the CRL cache clear (nothing is cached) and records it as the other clears", async () => {
    await kc.realms.updateConfigEvents({ realm: REALM }, { adminEventsEnabled: true });
    await kc.cache.clearCrlCache();
    const events = await kc.realms.findAdminEvents({ realm: REALM, operationTypes: 'ACTION' } as never);
    expect(events.map((e) => e.resourcePath)).toContain('clear-crl-cache');
    const viewer = await tokenOfUserWithRoles(kc, t.url, 'realm-viewer', ['view-realm']);
    expect((await api(t.url, 'POST', `/admin/realms/${REALM}/clear-crl-cache`, viewer)).status).toBe(403);
  });

  it('lists the key provider types as sub-component types of a component, as serverinfo does; none of other types', async () => {
    const realmId = (await kc.realms.findOne({ realm: REALM }))!.id!;
    const [component] = await kc.components.find({ parent: realmId, type: 'org.keycloak.keys.KeyProvider' });
    const types = await kc.components.listSubComponents({ id: component.id!, type: 'org.keycloak.keys.KeyProvider' });
    const info = await kc.serverInfo.find();
    expect(types).toEqual(info.componentTypes!['org.keycloak.keys.KeyProvider']);
    expect(types.map((t) => t.id)).toContain('rsa-generated');
    expect(await kc.components.listSubComponents({ id: component.id!, type: 'org.keycloak.storage.ldap.mappers.LDAPStorageMapper' })).toEqual([]);
    await rejects(kc.components.listSubComponents({ id: '00000000-0000-4000-8000-000000000000', type: 'org.keycloak.keys.KeyProvider' }), 404);
  });

  it("names a top-level organization group's parent (the organization), as Keycloak names one; a subgroup's is its group", async () => {
    await kc.realms.update({ realm: REALM }, { organizationsEnabled: true });
    const { id: orgId } = await kc.organizations.create({ name: 'parents', alias: 'parents', domains: [{ name: 'parents.test', verified: false }] });
    const groups = kc.organizations.groups(orgId!);
    const { id: top } = await groups.create({ name: 'top' });
    await api(t.url, 'POST', `/admin/realms/${REALM}/organizations/${orgId}/groups/${top}/children`, kc.accessToken!, { name: 'child' });
    const [listed] = await groups.find();
    expect(listed).toMatchObject({ id: top, name: 'top', parentId: orgId });
    const children = (await api(t.url, 'GET', `/admin/realms/${REALM}/organizations/${orgId}/groups/${top}/children`, kc.accessToken!)).body as { name: string; parentId: string }[];
    expect(children.map((c) => [c.name, c.parentId])).toEqual([['child', top]]);
  });

  it("adds the user's links to identity providers to the one-user answer when the realm has providers", async () => {
    const { id } = await kc.users.create({ username: 'linked', enabled: true });
    await kc.users.addToFederatedIdentity({ id, federatedIdentityId: 'plain', federatedIdentity: { identityProvider: 'plain', userId: 'up-1', userName: 'linked-up' } });
    expect((await kc.users.findOne({ id }))!.federatedIdentities).toEqual([{ identityProvider: 'plain', userId: 'up-1', userName: 'linked-up' }]);
    // A realm without providers: no such field, as Keycloak.
    await kc.realms.create({ realm: `${REALM}-none`, enabled: true });
    const { id: other } = await kc.users.create({ realm: `${REALM}-none`, username: 'alone', enabled: true });
    expect(await kc.users.findOne({ realm: `${REALM}-none`, id: other })).not.toHaveProperty('federatedIdentities');
  });
});

describe('credential moves (the console Credentials tab)', () => {
  let t: TestServer;
  let kc: KcAdminClient;
  let userId: string;
  const otp = (label: string) => ({ type: 'otp', userLabel: label, secretData: JSON.stringify({ value: 'JBSWY3DPEHPK3PXPJBSWY3DP' }), credentialData: JSON.stringify({ subType: 'totp', digits: 6, period: 30, algorithm: 'HmacSHA1', secretEncoding: 'BASE32' }) });
  const order = async (id = userId) => (await kc.users.getCredentials({ id })).map((c) => c.userLabel ?? c.type);

  beforeAll(async () => {
    t = await startServer();
    kc = await masterAdminClient(t.url);
    await kc.realms.create({ realm: 'moves', enabled: true });
    kc.setConfig({ realmName: 'moves' });
    ({ id: userId } = await kc.users.create({ username: 'mover', enabled: true, credentials: [{ type: 'password', value: 'Mover-pass-1', temporary: false }, otp('phone'), otp('tablet')] }));
  });

  afterAll(async () => {
    await t?.close();
  });

  const idOf = async (label: string, id = userId) => (await kc.users.getCredentials({ id })).find((c) => (c.userLabel ?? c.type) === label)!.id!;

  it('moves a credential first, or after another, the password too; the order is kept', async () => {
    expect(await order()).toEqual(['password', 'phone', 'tablet']);
    await kc.users.moveCredentialPositionUp({ id: userId, credentialId: await idOf('tablet') });
    expect(await order()).toEqual(['tablet', 'password', 'phone']);
    await kc.users.moveCredentialPositionDown({ id: userId, credentialId: await idOf('password'), newPreviousCredentialId: await idOf('phone') });
    expect(await order()).toEqual(['tablet', 'phone', 'password']);
    // A password reset keeps the password's place (and its id).
    const passwordId = await idOf('password');
    await kc.users.resetPassword({ id: userId, credential: { type: 'password', value: 'Mover-pass-2', temporary: false } });
    expect(await order()).toEqual(['tablet', 'phone', 'password']);
    expect(await idOf('password')).toBe(passwordId);
  });

  it("answers 404 for a credential the user does not have (another user's included), nothing for a move after itself, 403 without manage-users", async () => {
    const { id: other } = await kc.users.create({ username: 'other', enabled: true, credentials: [otp('theirs')] });
    const theirs = await idOf('theirs', other);
    await rejects(kc.users.moveCredentialPositionUp({ id: userId, credentialId: theirs }), 404);
    await rejects(kc.users.moveCredentialPositionDown({ id: userId, credentialId: await idOf('phone'), newPreviousCredentialId: theirs }), 404);
    await rejects(kc.users.moveCredentialPositionUp({ id: userId, credentialId: '00000000-0000-4000-8000-000000000000' }), 404);
    const phone = await idOf('phone');
    // After itself: nothing moves (Keycloak's 204).
    await kc.users.moveCredentialPositionDown({ id: userId, credentialId: phone, newPreviousCredentialId: phone });
    const viewer = await tokenOfUserWithRoles(kc, t.url, 'viewer', ['view-users']);
    expect((await api(t.url, 'POST', `/admin/realms/moves/users/${userId}/credentials/${phone}/moveToFirst`, viewer)).status).toBe(403);
    expect(await order()).toEqual(['tablet', 'phone', 'password']);
    expect(await order(other)).toEqual(['theirs']);
  });

  it('a realm export writes the credentials in that order, and its import keeps it', async () => {
    await kc.users.moveCredentialPositionUp({ id: userId, credentialId: await idOf('phone') });
    expect(await order()).toEqual(['phone', 'tablet', 'password']);
    const realm = (await t.server.context.storage.realms.byName('moves'))!;
    const { users } = await (await realmExporter(t.server.context, realm)).users(null, 100);
    const mover = users.find((u) => u.username === 'mover')!;
    expect((mover.credentials as Record<string, unknown>[]).map((c) => (c.userLabel as string | undefined) ?? c.type)).toEqual(['phone', 'tablet', 'password']);
    await kc.realms.create({ realm: 'moves-copy', enabled: true, users: [{ ...mover, realmRoles: [] } as never] });
    const [copy] = await kc.users.find({ realm: 'moves-copy', username: 'mover', exact: true });
    kc.setConfig({ realmName: 'moves-copy' });
    try {
      expect(await order(copy.id)).toEqual(['phone', 'tablet', 'password']);
    } finally {
      kc.setConfig({ realmName: 'moves' });
    }
  });
});

describe('registered cluster nodes of a client', () => {
  let t: TestServer;
  let kc: KcAdminClient;
  let app: Server;
  let port: number;
  let clientId: string;
  const received: { path: string; action: string; resource: string }[] = [];

  beforeAll(async () => {
    app = createServer((req, res) => {
      let body = '';
      req.on('data', (chunk) => (body += chunk));
      req.on('end', () => {
        const claims = JSON.parse(Buffer.from(body.split('.')[1] ?? '', 'base64url').toString('utf8') || '{}') as { action: string; resource: string };
        received.push({ path: req.url ?? '', action: claims.action, resource: claims.resource });
        res.statusCode = 204;
        res.end();
      });
    });
    await new Promise<void>((done) => app.listen(0, '127.0.0.1', done));
    port = (app.address() as { port: number }).port;
    t = await startServer();
    kc = await masterAdminClient(t.url);
    await kc.realms.create({ realm: 'nodes', enabled: true });
    kc.setConfig({ realmName: 'nodes' });
    ({ id: clientId } = await kc.clients.create({ clientId: 'clustered', adminUrl: 'http://${application.session.host}/app' }));
  });

  afterAll(async () => {
    await t?.close();
    await new Promise((done) => app?.close(done));
  });

  it('registers nodes, shows them on the client, tells each its availability check, and unregisters them', async () => {
    const before = Math.floor(Date.now() / 1000);
    await kc.clients.addClusterNode({ id: clientId, node: `127.0.0.1:${port}` });
    // Port 9: nothing listens there on loopback, so that node fails.
    await kc.clients.addClusterNode({ id: clientId, node: '127.0.0.1:9' });
    const nodes = (await kc.clients.findOne({ id: clientId }))!.registeredNodes as Record<string, number>;
    expect(Object.keys(nodes).sort()).toEqual([`127.0.0.1:${port}`, '127.0.0.1:9']);
    expect(nodes[`127.0.0.1:${port}`]).toBeGreaterThanOrEqual(before);
    expect(await kc.clients.testNodesAvailable({ id: clientId })).toEqual({ successRequests: [`http://127.0.0.1:${port}/app`], failedRequests: ['http://127.0.0.1:9/app'] });
    expect(received).toEqual([{ path: '/app/k_test_available', action: 'TEST_AVAILABLE', resource: 'clustered' }]);
    await kc.clients.deleteClusterNode({ id: clientId, node: '127.0.0.1:9' });
    await rejects(kc.clients.deleteClusterNode({ id: clientId, node: '127.0.0.1:9' }), 404);
    expect(Object.keys((await kc.clients.findOne({ id: clientId }))!.registeredNodes as object)).toEqual([`127.0.0.1:${port}`]);
    await kc.clients.deleteClusterNode({ id: clientId, node: `127.0.0.1:${port}` });
    expect(await kc.clients.findOne({ id: clientId })).not.toHaveProperty('registeredNodes');
    // No node, nothing sent.
    expect(await kc.clients.testNodesAvailable({ id: clientId })).toEqual({});
  });

  it('refuses a node that is no host (400) and callers without manage-clients (403); nothing is stored', async () => {
    for (const node of ['', 'a/b', 'x'.repeat(300)]) await rejects(kc.clients.addClusterNode({ id: clientId, node }), 400);
    const viewer = await tokenOfUserWithRoles(kc, t.url, 'client-viewer', ['view-clients']);
    expect((await api(t.url, 'POST', `/admin/realms/nodes/clients/${clientId}/nodes`, viewer, { node: '127.0.0.1' })).status).toBe(403);
    expect((await api(t.url, 'GET', `/admin/realms/nodes/clients/${clientId}/test-nodes-available`, viewer)).status).toBe(403);
    expect(await kc.clients.findOne({ id: clientId })).not.toHaveProperty('registeredNodes');
    await rejects(kc.clients.addClusterNode({ id: '00000000-0000-4000-8000-000000000000', node: '127.0.0.1' }), 404);
  });
});
