import type KcAdminClient from '@keycloak/keycloak-admin-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { masterAdminClient, rejects, tokenOfUserWithRoles } from './support/admin-client.js';
import { api, startServer, tokenRequest, type TestServer } from './support/server.js';

/**
 * Issue 41: Keycloak's Client scopes → Evaluate tools through the official admin client: the example access token,
 * ID token and userinfo are the claims a real token of the same user, client and scope carries (only the per-token
 * values differ), the mappers and roles a scope brings, and who may ask.
 */
const REALM = 'evalr';
const PER_TOKEN = ['exp', 'iat', 'jti', 'sid', 'auth_time', 'at_hash', 'nonce', 'session_state'];
const claimsOf = (jwt: string) => JSON.parse(Buffer.from(jwt.split('.')[1], 'base64url').toString('utf8')) as Record<string, unknown>;
const stable = (claims: Record<string, unknown>) => Object.fromEntries(Object.entries(claims).filter(([k]) => !PER_TOKEN.includes(k)));

describe('client scope evaluation', () => {
  let t: TestServer;
  let kc: KcAdminClient;
  let app: string;
  let open: string;
  let user: string;

  beforeAll(async () => {
    t = await startServer();
    kc = await masterAdminClient(t.url);
    await kc.realms.create({ realm: REALM, enabled: true });
    kc.setConfig({ realmName: REALM });
    await kc.roles.create({ name: 'reader' });
    await kc.roles.create({ name: 'writer' });
    ({ id: user } = await kc.users.create({ username: 'eve', enabled: true, email: 'eve@example.com', emailVerified: true, firstName: 'Eve', lastName: 'Example', credentials: [{ type: 'password', value: 'Eve-pass-12', temporary: false }] }));
    await kc.users.addRealmRoleMappings({ id: user, roles: [(await kc.roles.findOneByName({ name: 'reader' }))!, (await kc.roles.findOneByName({ name: 'writer' }))!] as never });
    ({ id: app } = await kc.clients.create({ clientId: 'app', secret: 'app-secret-123', directAccessGrantsEnabled: true, fullScopeAllowed: false }));
    await kc.clients.addRealmScopeMappings({ id: app }, [(await kc.roles.findOneByName({ name: 'reader' }))!] as never);
    await kc.clients.addProtocolMapper({ id: app }, { name: 'team', protocol: 'openid-connect', protocolMapper: 'oidc-hardcoded-claim-mapper', config: { 'claim.name': 'team', 'claim.value': 'blue', 'jsonType.label': 'String', 'access.token.claim': 'true', 'id.token.claim': 'true', 'userinfo.token.claim': 'true' } });
    ({ id: open } = await kc.clients.create({ clientId: 'open-app', fullScopeAllowed: true }));
  });

  afterAll(async () => {
    await t?.close();
  });

  it('makes the access token, ID token and userinfo claims a real token of the same user and scope has, unsigned', async () => {
    const scope = 'openid address';
    const real = await tokenRequest(t.url, REALM, { grant_type: 'password', client_id: 'app', client_secret: 'app-secret-123', username: 'eve', password: 'Eve-pass-12', scope });
    expect(real.status).toBe(200);
    const { access_token, id_token } = real.body as { access_token: string; id_token: string };
    const userinfo = await fetch(`${t.url}/realms/${REALM}/protocol/openid-connect/userinfo`, { headers: { authorization: `Bearer ${access_token}` } }).then((r) => r.json());

    const access = await kc.clients.evaluateGenerateAccessToken({ id: app, scope, userId: user, audience: '' });
    expect(typeof access).toBe('object');
    expect(stable(access)).toEqual(stable(claimsOf(access_token)));
    expect(access).toMatchObject({ sub: user, azp: 'app', team: 'blue', realm_access: { roles: ['reader'] }, scope: expect.stringContaining('address') });
    expect(typeof access.sid).toBe('string');

    const id = await kc.clients.evaluateGenerateIdToken({ id: app, scope, userId: user });
    expect(stable(id)).toEqual(stable(claimsOf(id_token)));
    expect(id).toMatchObject({ typ: 'ID', aud: 'app', email: 'eve@example.com', team: 'blue' });
    expect(id.at_hash).toBeUndefined();

    expect(await kc.clients.evaluateGenerateUserInfo({ id: app, scope, userId: user })).toEqual(userinfo);

    // Without the optional scope, its claims are not made.
    const plain = await kc.clients.evaluateGenerateIdToken({ id: app, scope: 'openid', userId: user });
    expect(plain.address).toBeUndefined();
    expect(id.address).toBeDefined();
  });

  it('lists the mappers the scope applies, the client’s own first', async () => {
    const withAddress = (await kc.clients.evaluateListProtocolMapper({ id: app, scope: 'openid address' })) as unknown as { mapperName: string; containerName: string; containerType: string; containerId: string; protocolMapper: string; mapperId: string }[];
    expect(withAddress[0]).toMatchObject({ mapperName: 'team', containerType: 'client', containerName: '', containerId: app, protocolMapper: 'oidc-hardcoded-claim-mapper' });
    expect(withAddress.some((m) => m.containerName === 'address' && m.containerType === 'client-scope')).toBe(true);
    expect(withAddress.some((m) => m.containerName === 'email')).toBe(true);
    const without = (await kc.clients.evaluateListProtocolMapper({ id: app, scope: 'openid' })) as unknown as { containerName: string }[];
    expect(without.some((m) => m.containerName === 'address')).toBe(false);
  });

  it('splits a container’s roles into those the client’s tokens may carry and the others', async () => {
    const names = (roles: { name?: string }[]) => roles.map((r) => r.name).sort();
    const granted = await kc.clients.evaluatePermission({ id: app, roleContainer: REALM, type: 'granted', scope: 'openid' });
    expect(names(granted)).toEqual(['reader']);
    // Keycloak's brief representation: no attributes.
    expect(granted[0]).toMatchObject({ name: 'reader', clientRole: false, composite: false });
    expect(granted[0]).not.toHaveProperty('attributes');
    const notGranted = names(await kc.clients.evaluatePermission({ id: app, roleContainer: REALM, type: 'not-granted', scope: 'openid' }));
    expect(notGranted).toContain('writer');
    expect(notGranted).not.toContain('reader');
    // Full scope: every role of the container.
    expect(await kc.clients.evaluatePermission({ id: open, roleContainer: REALM, type: 'not-granted', scope: '' })).toEqual([]);
    // A client as the container, by its id.
    const [account] = await kc.clients.find({ clientId: 'account' });
    expect(names(await kc.clients.evaluatePermission({ id: open, roleContainer: account.id!, type: 'granted', scope: '' }))).toContain('manage-account');
    await rejects(kc.clients.evaluatePermission({ id: app, roleContainer: 'no-such-container', type: 'granted', scope: '' }), 404);
  });

  it('answers 404 without a user or for an unknown one, and asks view-users for an example, view-clients for all', async () => {
    await rejects(kc.clients.evaluateGenerateAccessToken({ id: app, scope: 'openid', userId: '', audience: '' }), 404);
    await rejects(kc.clients.evaluateGenerateIdToken({ id: app, scope: 'openid', userId: '00000000-0000-4000-8000-000000000000' }), 404);
    const viewClients = await tokenOfUserWithRoles(kc, t.url, 'view-clients-only', ['view-clients']);
    const base = `/admin/realms/${REALM}/clients/${app}/evaluate-scopes`;
    expect((await api(t.url, 'GET', `${base}/protocol-mappers?scope=openid`, viewClients)).status).toBe(200);
    expect((await api(t.url, 'GET', `${base}/generate-example-access-token?scope=openid&userId=${user}`, viewClients)).status).toBe(403);
    const viewUsers = await tokenOfUserWithRoles(kc, t.url, 'view-users-only', ['view-users']);
    expect((await api(t.url, 'GET', `${base}/generate-example-userinfo?scope=openid&userId=${user}`, viewUsers)).status).toBe(403);
    const both = await tokenOfUserWithRoles(kc, t.url, 'view-both', ['view-users', 'view-clients']);
    expect((await api(t.url, 'GET', `${base}/generate-example-userinfo?scope=openid&userId=${user}`, both)).status).toBe(200);
  });

  it('keeps the example access token to an audience the client’s token has, and refuses another (400)', async () => {
    await kc.clients.addProtocolMapper({ id: app }, { name: 'aud-open', protocol: 'openid-connect', protocolMapper: 'oidc-audience-mapper', config: { 'included.client.audience': 'open-app', 'access.token.claim': 'true' } });
    const kept = await kc.clients.evaluateGenerateAccessToken({ id: app, scope: 'openid', userId: user, audience: 'open-app' });
    expect(kept.aud).toBe('open-app');
    await rejects(kc.clients.evaluateGenerateAccessToken({ id: app, scope: 'openid', userId: user, audience: 'nobody' }), 400);
  });
});
