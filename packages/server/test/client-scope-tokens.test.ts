import KcAdminClient from '@keycloak/keycloak-admin-client';
import { decodeJwt } from 'jose';
import * as oidc from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, tokenRequest, type TestServer } from './support/server.js';
import { ALICE } from './support/alice.js';
import { masterAdminClient } from './support/admin-client.js';

/**
 * The scope parameter chooses the optional client scopes, and the built-in scopes' mappers write the claims, end to
 * end through openid-client (the mapper types one by one: protocol-mappers.test.ts).
 */

let t: TestServer;
let secret: string;
let kc: KcAdminClient;
let userId: string;
const insecure = { execute: [oidc.allowInsecureRequests] };
let config: oidc.Configuration;

beforeAll(async () => {
  t = await startServer();
  kc = await masterAdminClient(t.url);
  await kc.realms.create({ realm: 'scopes', enabled: true, organizationsEnabled: true });
  kc.setConfig({ realmName: 'scopes' });
  const { id } = await kc.clients.create({ clientId: 'app', publicClient: false, serviceAccountsEnabled: true, directAccessGrantsEnabled: true, redirectUris: ['https://app.example/cb'] });
  secret = (await kc.clients.getClientSecret({ id })).value!;
  const { id: apiId } = await kc.clients.create({ clientId: 'orders-api', publicClient: false });
  await kc.clients.createRole({ id: apiId, name: 'reader' });
  const reader = (await kc.clients.findRole({ id: apiId, roleName: 'reader' }))!;
  ({ id: userId } = await kc.users.create(ALICE));
  await kc.users.addClientRoleMappings({ id: userId, clientUniqueId: apiId, roles: [{ id: reader.id!, name: 'reader' }] });
  config = await oidc.discovery(new URL(`${t.url}/realms/scopes`), 'app', secret, undefined, insecure);
});
afterAll(() => t?.close());

const password = (scope: string) => oidc.genericGrantRequest(config, 'password', { username: 'alice', password: 'wonderland-42', scope });

describe('the scope parameter', () => {
  it('without optional scopes: the default ones; scope is openid and the default scopes shown in tokens', async () => {
    const tokens = await password('openid');
    expect(tokens.scope).toBe('openid email profile');
    const access = decodeJwt(tokens.access_token);
    expect(access).toMatchObject({ scope: 'openid email profile', sub: userId, acr: '1', aud: ['account', 'orders-api'], resource_access: { 'orders-api': { roles: ['reader'] } } });
    expect(access.phone_number).toBeUndefined();
    expect(access.address).toBeUndefined();
    const id = decodeJwt(tokens.id_token!);
    // The roles scope writes to the access token only; its audience-resolve too.
    expect(id.realm_access).toBeUndefined();
    expect(id.aud).toBe('app');
  });

  it('phone, address and microprofile-jwt add their claims to the tokens and userinfo', async () => {
    const tokens = await password('openid phone address microprofile-jwt');
    expect(tokens.scope).toBe('openid address email microprofile-jwt phone profile');
    const access = decodeJwt(tokens.access_token);
    // No phone attributes: the phone scope applies but writes nothing; address is written even when empty.
    expect(access.phone_number).toBeUndefined();
    expect(access.address).toEqual({});
    expect(access.upn).toBe('alice');
    expect(access.groups).toEqual(expect.arrayContaining(['default-roles-scopes', 'offline_access', 'uma_authorization']));
    const id = decodeJwt(tokens.id_token!);
    expect(id).toMatchObject({ upn: 'alice', address: {} });
    const info = (await oidc.fetchUserInfo(config, tokens.access_token, oidc.skipSubjectCheck)) as Record<string, unknown>;
    expect(info).toMatchObject({ sub: userId, upn: 'alice', address: {}, preferred_username: 'alice' });
    expect(info.groups).toEqual(expect.arrayContaining(['default-roles-scopes']));
  });

  it('offline_access is an optional scope: in the token scope when asked for and held', async () => {
    const tokens = await password('openid offline_access');
    expect(tokens.scope).toBe('openid email offline_access profile');
    expect(decodeJwt(tokens.refresh_token!).typ).toBe('Offline');
  });

  it('a scope that is not one of the client\'s is refused: password and client_credentials grants (invalid_scope)', async () => {
    await kc.realms.update({ realm: 'scopes' }, { eventsEnabled: true });
    const refused = await tokenRequest(t.url, 'scopes', { grant_type: 'password', client_id: 'app', client_secret: secret, username: 'alice', password: 'wonderland-42', scope: 'openid bogus' });
    expect(refused).toEqual({ status: 400, body: { error: 'invalid_scope', error_description: 'Invalid scopes: openid bogus' } });
    const cc = await tokenRequest(t.url, 'scopes', { grant_type: 'client_credentials', client_id: 'app', client_secret: secret, scope: 'bogus' });
    expect(cc).toEqual({ status: 400, body: { error: 'invalid_scope', error_description: 'Invalid scopes: bogus' } });
    // Recorded as Keycloak records it: the grant's error event, invalid_request, the reason in the details.
    const events = await kc.realms.findEvents({ realm: 'scopes', type: ['LOGIN_ERROR', 'CLIENT_LOGIN_ERROR'] });
    expect(events.map((e) => [e.type, e.error, e.details?.reason])).toEqual(
      expect.arrayContaining([
        ['LOGIN_ERROR', 'invalid_request', 'Invalid scopes: openid bogus'],
        ['CLIENT_LOGIN_ERROR', 'invalid_request', 'Invalid scopes: bogus'],
      ]),
    );
  });

  it('the authorization endpoint sends invalid_scope back to the client', async () => {
    const url = new URL(`${t.url}/realms/scopes/protocol/openid-connect/auth`);
    url.search = new URLSearchParams({ client_id: 'app', redirect_uri: 'https://app.example/cb', response_type: 'code', scope: 'openid nope', state: 's1' }).toString();
    const response = await fetch(url, { redirect: 'manual' });
    expect(response.status).toBe(302);
    const location = new URL(response.headers.get('location')!);
    expect(location.origin + location.pathname).toBe('https://app.example/cb');
    expect(Object.fromEntries(location.searchParams)).toMatchObject({ error: 'invalid_scope', error_description: 'Invalid scopes: openid nope', state: 's1' });
  });

  it('a refresh keeps the granted scope, may narrow it, and may not widen it', async () => {
    const tokens = await password('openid phone');
    expect(decodeJwt(tokens.refresh_token!).scope).toBe('openid email phone profile');
    const again = await oidc.refreshTokenGrant(config, tokens.refresh_token!);
    expect(again.scope).toBe('openid email phone profile');
    const narrowed = await tokenRequest(t.url, 'scopes', { grant_type: 'refresh_token', client_id: 'app', client_secret: secret, refresh_token: tokens.refresh_token!, scope: 'openid profile' });
    expect(narrowed.status).toBe(200);
    expect(narrowed.body.scope).toBe('openid email profile');
    const widened = await tokenRequest(t.url, 'scopes', { grant_type: 'refresh_token', client_id: 'app', client_secret: secret, refresh_token: tokens.refresh_token!, scope: 'openid address' });
    expect(widened).toEqual({ status: 400, body: { error: 'invalid_scope', error_description: 'Invalid scopes: openid address' } });
  });

  it('the service account: the service_account scope\'s notes, no ID token', async () => {
    const tokens = await oidc.clientCredentialsGrant(config, { scope: 'phone' });
    expect(tokens.scope).toBe('email phone profile');
    expect(tokens.id_token).toBeUndefined();
    expect(decodeJwt(tokens.access_token)).toMatchObject({ client_id: 'app', clientHost: '127.0.0.1', clientAddress: '127.0.0.1', preferred_username: 'service-account-app' });
  });
});

describe('organization scope', () => {
  it('writes the aliases of the user\'s organizations when the scope is asked for', async () => {
    const { id: orgId } = (await kc.organizations.create({ name: 'Acme', alias: 'acme', enabled: true, domains: [{ name: 'acme.example', verified: false }] })) as { id: string };
    await kc.organizations.addMember({ orgId, userId });
    const tokens = await password('openid organization');
    expect(tokens.scope).toBe('openid email organization profile');
    expect(decodeJwt(tokens.access_token).organization).toEqual(['acme']);
    expect(decodeJwt(tokens.id_token!).organization).toEqual(['acme']);
    expect(decodeJwt((await password('openid')).access_token).organization).toBeUndefined();
  });
});

describe('serverinfo', () => {
  it('lists the protocol mapper types with their config properties, and the built-in mappers', async () => {
    kc.setConfig({ realmName: 'master' });
    const info = await kc.serverInfo.find();
    const types = info.protocolMapperTypes!['openid-connect'];
    expect(types.map((t) => t.id)).toEqual(expect.arrayContaining(['oidc-audience-mapper', 'oidc-usermodel-attribute-mapper', 'oidc-group-membership-mapper']));
    const audience = types.find((t) => t.id === 'oidc-audience-mapper')!;
    expect(audience.properties.map((p) => p.name)).toEqual(expect.arrayContaining(['included.client.audience', 'included.custom.audience', 'access.token.claim']));
    expect(info.builtinProtocolMappers!['openid-connect'].length).toBeGreaterThan(10);
    kc.setConfig({ realmName: 'scopes' });
  });
});
