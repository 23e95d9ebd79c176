import { decodeJwt } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, tokenRequest, type TestServer } from './support/server.js';
import { ALICE } from './support/alice.js';
import { masterAdminClient } from './support/admin-client.js';

/**
 * Pins the claims a default realm's tokens carry now that the built-in client scopes' protocol mappers produce them
 * (issue 15): captured from the fixed claims the token service wrote before the mappers, for a user (access, ID,
 * refresh token, userinfo, introspection) and a service account. Random values (ids, times, hashes) are replaced by
 * placeholders. Where the mapped tokens differ, the difference is Keycloak 26's and named in `KEYCLOAK_ADDS`.
 */

let t: TestServer;
let secret: string;
const ids: Record<string, string> = {};

const RANDOM = new Set(['jti', 'iat', 'exp', 'auth_time', 'sid', 'session_state', 'at_hash', 'reuse_id', 'nonce']);

/** The claims with random values replaced: `<number>`/`<string>`, the user's and service account's ids by name. */
function normalize(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(normalize);
  if (value && typeof value === 'object') {
    return Object.fromEntries(
      Object.entries(value)
        .sort(([a], [b]) => a.localeCompare(b))
        .map(([k, v]) => [k, RANDOM.has(k) ? `<${typeof v}>` : normalize(v)]),
    );
  }
  for (const [name, id] of Object.entries(ids)) if (value === id) return `<${name}>`;
  return typeof value === 'string' ? value.replace(/^http:\/\/127\.0\.0\.1:\d+/, '<base>') : value;
}

beforeAll(async () => {
  t = await startServer();
  const kc = await masterAdminClient(t.url);
  await kc.realms.create({ realm: 'pin', enabled: true });
  kc.setConfig({ realmName: 'pin' });
  const { id } = await kc.clients.create({
    clientId: 'app',
    publicClient: false,
    serviceAccountsEnabled: true,
    directAccessGrantsEnabled: true,
    webOrigins: ['https://app.example'],
    redirectUris: ['https://app.example/cb'],
    // It introspects its own tokens: Keycloak 26.6.2+ needs the audience check off for that.
    attributes: { 'allow.token.introspection.without.audience.check': 'true' },
  });
  secret = (await kc.clients.getClientSecret({ id })).value!;
  const { id: apiId } = await kc.clients.create({ clientId: 'orders-api', publicClient: false });
  await kc.clients.createRole({ id: apiId, name: 'reader' });
  const reader = await kc.clients.findRole({ id: apiId, roleName: 'reader' });
  ({ id: ids.user } = await kc.users.create(ALICE));
  await kc.users.addClientRoleMappings({ id: ids.user, clientUniqueId: apiId, roles: [{ id: reader!.id!, name: 'reader' }] });
  ids.serviceAccount = (await kc.clients.getServiceAccountUser({ id })).id!;
});
afterAll(() => t?.close());

async function userinfo(token: string) {
  const response = await fetch(`${t.url}/realms/pin/protocol/openid-connect/userinfo`, { headers: { authorization: `Bearer ${token}` } });
  return response.json();
}

async function introspect(token: string) {
  const response = await fetch(`${t.url}/realms/pin/protocol/openid-connect/token/introspect`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ token, client_id: 'app', client_secret: secret }),
  });
  return response.json();
}

const USER_ACCESS = {
  acr: '1',
  'allowed-origins': ['https://app.example'],
  aud: ['account', 'orders-api'],
  auth_time: '<number>',
  azp: 'app',
  email: 'alice@example.com',
  email_verified: true,
  exp: '<number>',
  family_name: 'Liddell',
  given_name: 'Alice',
  iat: '<number>',
  iss: '<base>/realms/pin',
  jti: '<string>',
  name: 'Alice Liddell',
  preferred_username: 'alice',
  realm_access: { roles: ['default-roles-pin', 'offline_access', 'uma_authorization'] },
  resource_access: { account: { roles: ['manage-account', 'manage-account-links', 'view-profile'] }, 'orders-api': { roles: ['reader'] } },
  scope: 'openid email profile',
  sid: '<string>',
  sub: '<user>',
  typ: 'Bearer',
};

describe('a default realm issues the claims it issued before protocol mappers', () => {
  it('password grant: access token, ID token, refresh token, userinfo, introspection', async () => {
    const response = await tokenRequest(t.url, 'pin', { grant_type: 'password', client_id: 'app', client_secret: secret, username: 'alice', password: 'wonderland-42', scope: 'openid' });
    expect(response.status).toBe(200);
    const body = response.body as Record<string, string>;
    expect(normalize({ ...body, access_token: undefined, refresh_token: undefined, id_token: undefined })).toEqual({
      expires_in: 300,
      'not-before-policy': 0,
      refresh_expires_in: 1800,
      scope: 'openid email profile',
      session_state: '<string>',
      token_type: 'Bearer',
    });
    expect(normalize(decodeJwt(body.access_token))).toEqual(USER_ACCESS);
    expect(normalize(decodeJwt(body.id_token))).toEqual({
      acr: '1',
      at_hash: '<string>',
      aud: 'app',
      auth_time: '<number>',
      azp: 'app',
      email: 'alice@example.com',
      email_verified: true,
      exp: '<number>',
      family_name: 'Liddell',
      given_name: 'Alice',
      iat: '<number>',
      iss: '<base>/realms/pin',
      jti: '<string>',
      name: 'Alice Liddell',
      preferred_username: 'alice',
      sid: '<string>',
      sub: '<user>',
      typ: 'ID',
    });
    expect(normalize(decodeJwt(body.refresh_token))).toEqual({
      aud: '<base>/realms/pin',
      azp: 'app',
      exp: '<number>',
      iat: '<number>',
      iss: '<base>/realms/pin',
      jti: '<string>',
      reuse_id: '<string>',
      scope: 'openid email profile',
      sid: '<string>',
      sub: '<user>',
      typ: 'Refresh',
    });
    expect(normalize(await userinfo(body.access_token))).toEqual({
      email: 'alice@example.com',
      email_verified: true,
      family_name: 'Liddell',
      given_name: 'Alice',
      name: 'Alice Liddell',
      preferred_username: 'alice',
      sub: '<user>',
    });
    expect(normalize(await introspect(body.access_token))).toEqual({ ...USER_ACCESS, active: true, client_id: 'app', token_type: 'Bearer', username: 'alice' });
  });

  it('client_credentials: the service account token and its introspection', async () => {
    const response = await tokenRequest(t.url, 'pin', { grant_type: 'client_credentials', client_id: 'app', client_secret: secret });
    expect(response.status).toBe(200);
    const body = response.body as Record<string, string>;
    expect(body.refresh_token).toBeUndefined();
    expect(body.id_token).toBeUndefined();
    expect(body.scope).toBe('email profile');
    const access = {
      acr: '1',
      'allowed-origins': ['https://app.example'],
      aud: 'account',
      azp: 'app',
      client_id: 'app',
      email_verified: false,
      exp: '<number>',
      iat: '<number>',
      iss: '<base>/realms/pin',
      jti: '<string>',
      preferred_username: 'service-account-app',
      realm_access: { roles: ['default-roles-pin', 'offline_access', 'uma_authorization'] },
      resource_access: { account: { roles: ['manage-account', 'manage-account-links', 'view-profile'] } },
      scope: 'email profile',
      sub: '<serviceAccount>',
      typ: 'Bearer',
      ...KEYCLOAK_ADDS.serviceAccount,
    };
    expect(normalize(decodeJwt(body.access_token))).toEqual(access);
    expect(normalize(await introspect(body.access_token))).toEqual({ ...access, active: true, client_id: 'app', token_type: 'Bearer', username: 'service-account-app' });
  });
});

/**
 * What the mapped tokens carry beyond the fixed claims of before, as Keycloak 26's built-in scopes do: a client with
 * a service account gets the `service_account` scope, whose session-note mappers add the caller's host and address
 * (Keycloak writes both; Realmgate does no reverse lookup, so the host is the address). Nothing else differs.
 */
const KEYCLOAK_ADDS: { serviceAccount: Record<string, unknown> } = { serviceAccount: { clientAddress: '127.0.0.1', clientHost: '127.0.0.1' } };
