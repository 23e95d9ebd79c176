import { SignJWT, decodeJwt, generateKeyPair, decodeProtectedHeader } from 'jose';
import * as oidc from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, startServer, tokenRequest, type TestServer } from './support/server.js';
import { ALICE } from './support/alice.js';
import { masterAdminClient } from './support/admin-client.js';

let t: TestServer;
let confidentialSecret: string;
let userId: string;

const realmUrl = (realm = 'proto') => new URL(`${t.url}/realms/${realm}`);
const insecure = { execute: [oidc.allowInsecureRequests] };

beforeAll(async () => {
  t = await startServer();
  const kc = await masterAdminClient(t.url);
  await kc.realms.create({ realm: 'proto', enabled: true });
  await kc.realms.create({ realm: 'elsewhere', enabled: true });
  kc.setConfig({ realmName: 'proto' });
  const { id } = await kc.clients.create({
    clientId: 'backend',
    publicClient: false,
    serviceAccountsEnabled: true,
    directAccessGrantsEnabled: true,
    // It introspects its own tokens: Keycloak 26.6.2+ needs the audience check off for that.
    attributes: { 'allow.token.introspection.without.audience.check': 'true' },
  });
  confidentialSecret = (await kc.clients.getClientSecret({ id })).value!;
  const sa = await kc.clients.getServiceAccountUser({ id });
  const [management] = await kc.clients.find({ clientId: 'realm-management' });
  const viewUsers = await kc.clients.findRole({ id: management.id!, roleName: 'view-users' });
  await kc.users.addClientRoleMappings({ id: sa.id!, clientUniqueId: management.id!, roles: [{ id: viewUsers!.id!, name: 'view-users' }] });
  ({ id: userId } = await kc.users.create(ALICE));
  await kc.clients.create({ clientId: 'other-app', publicClient: false, directAccessGrantsEnabled: true, secret: 'other-secret-value' });
  kc.setConfig({ realmName: 'elsewhere' });
  await kc.users.create({ username: 'bob', enabled: true, credentials: [{ type: 'password', value: 'bob-password-1' }] });
});
afterAll(() => t?.close());

describe('discovery and JWKS', () => {
  it('publishes the realm issuer, endpoints and an RS256 key', async () => {
    const config = await oidc.discovery(realmUrl(), 'backend', confidentialSecret, undefined, insecure);
    const meta = config.serverMetadata();
    expect(meta.issuer).toBe(`${t.url}/realms/proto`);
    expect(meta.token_endpoint).toBe(`${t.url}/realms/proto/protocol/openid-connect/token`);
    const jwks = await (await fetch(meta.jwks_uri!)).json();
    expect(jwks.keys[0]).toMatchObject({ kty: 'RSA', alg: 'RS256', use: 'sig' });
    expect(jwks.keys[0].d).toBeUndefined();
  });
});

describe('grants through openid-client', () => {
  it('client_credentials gives a service-account token with Keycloak claims and no refresh token', async () => {
    const config = await oidc.discovery(realmUrl(), 'backend', undefined, oidc.ClientSecretBasic(confidentialSecret), insecure);
    const tokens = await oidc.clientCredentialsGrant(config);
    expect(tokens.refresh_token).toBeUndefined();
    const claims = decodeJwt(tokens.access_token);
    expect(claims).toMatchObject({
      iss: `${t.url}/realms/proto`,
      typ: 'Bearer',
      azp: 'backend',
      client_id: 'backend',
      preferred_username: 'service-account-backend',
      resource_access: { 'realm-management': { roles: expect.arrayContaining(['view-users', 'query-users']) } },
    });
    expect((claims.realm_access as { roles: string[] }).roles).toContain('default-roles-proto');
    expect(claims.sid).toBeUndefined();
    expect(typeof claims.jti).toBe('string');
    expect(claims.exp! - claims.iat!).toBe(300);
  });

  it('password grant, userinfo, introspection, refresh, reuse allowed by default as Keycloak 26', async () => {
    const config = await oidc.discovery(realmUrl(), 'backend', confidentialSecret, undefined, insecure);
    const tokens = await oidc.genericGrantRequest(config, 'password', { username: 'alice', password: 'wonderland-42', scope: 'openid' });
    const claims = decodeJwt(tokens.access_token);
    expect(claims).toMatchObject({
      sub: userId,
      preferred_username: 'alice',
      email: 'alice@example.com',
      email_verified: true,
      name: 'Alice Liddell',
      given_name: 'Alice',
      family_name: 'Liddell',
      azp: 'backend',
    });
    expect(claims.sid).toBe(tokens.session_state);
    expect(claims.scope).toContain('openid');
    expect(tokens.claims()?.sub).toBe(userId);

    const info = await oidc.fetchUserInfo(config, tokens.access_token, userId);
    expect(info).toMatchObject({ sub: userId, preferred_username: 'alice', email: 'alice@example.com', name: 'Alice Liddell' });

    const introspected = await oidc.tokenIntrospection(config, tokens.access_token);
    expect(introspected).toMatchObject({ active: true, sub: userId, client_id: 'backend', username: 'alice' });

    const refreshed = await oidc.refreshTokenGrant(config, tokens.refresh_token!);
    expect(refreshed.refresh_token).not.toBe(tokens.refresh_token);
    expect(decodeJwt(refreshed.access_token).sid).toBe(claims.sid);

    // Keycloak 26 without revokeRefreshToken: a used refresh token works again (two tabs sharing one), and the
    // session stays. Rotation (revokeRefreshToken) is tested in refresh-tokens.test.ts.
    const again = await oidc.refreshTokenGrant(config, tokens.refresh_token!);
    expect(decodeJwt(again.access_token).sid).toBe(claims.sid);
    expect(await oidc.tokenIntrospection(config, refreshed.access_token)).toMatchObject({ active: true });
    await oidc.refreshTokenGrant(config, refreshed.refresh_token!);
  });

  it('logs out with a refresh token (back-channel): the session and its tokens end', async () => {
    const config = await oidc.discovery(realmUrl(), 'backend', confidentialSecret, undefined, insecure);
    const tokens = await oidc.genericGrantRequest(config, 'password', { username: 'alice', password: 'wonderland-42' });
    const response = await fetch(`${t.url}/realms/proto/protocol/openid-connect/logout`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ client_id: 'backend', client_secret: confidentialSecret, refresh_token: tokens.refresh_token! }),
    });
    expect(response.status).toBe(204);
    await expect(oidc.refreshTokenGrant(config, tokens.refresh_token!)).rejects.toMatchObject({ error: 'invalid_grant' });
    await expect(oidc.fetchUserInfo(config, tokens.access_token, userId)).rejects.toBeTruthy();
  });

  it('revokes an access token (RFC 7009): introspection then says inactive', async () => {
    const config = await oidc.discovery(realmUrl(), 'backend', confidentialSecret, undefined, insecure);
    const tokens = await oidc.clientCredentialsGrant(config);
    await oidc.tokenRevocation(config, tokens.access_token);
    expect(await oidc.tokenIntrospection(config, tokens.access_token)).toMatchObject({ active: false });
    const admin = await api(t.url, 'GET', '/admin/realms/proto/users', tokens.access_token);
    expect(admin.status).toBe(401);
  });

  it('refuses bad credentials with OAuth errors', async () => {
    const wrongSecret = await tokenRequest(t.url, 'proto', { grant_type: 'client_credentials', client_id: 'backend', client_secret: 'nope' });
    expect(wrongSecret).toMatchObject({ status: 401, body: { error: 'unauthorized_client', error_description: 'Invalid client or Invalid client credentials' } });
    const wrongPassword = await tokenRequest(t.url, 'proto', { grant_type: 'password', client_id: 'backend', client_secret: confidentialSecret, username: 'alice', password: 'x' });
    expect(wrongPassword).toMatchObject({ status: 400, body: { error: 'invalid_grant', error_description: 'Invalid user credentials' } });
    const unknownGrant = await tokenRequest(t.url, 'proto', { grant_type: 'urn:nope', client_id: 'backend', client_secret: confidentialSecret });
    expect(unknownGrant).toMatchObject({ status: 400, body: { error: 'unsupported_grant_type' } });
    const noGrant = await tokenRequest(t.url, 'proto', { client_id: 'backend' });
    expect(noGrant).toMatchObject({ status: 400, body: { error: 'invalid_request' } });
    const publicNoDirect = await tokenRequest(t.url, 'proto', { grant_type: 'password', client_id: 'account-console', username: 'alice', password: 'wonderland-42' });
    expect(publicNoDirect).toMatchObject({ status: 400, body: { error: 'unauthorized_client' } });
    const unknownRealm = await tokenRequest(t.url, 'nope', { grant_type: 'client_credentials', client_id: 'backend', client_secret: confidentialSecret });
    expect(unknownRealm.status).toBe(404);
  });

  it('refuses a refresh token presented by another client', async () => {
    const tokens = await tokenRequest(t.url, 'proto', { grant_type: 'password', client_id: 'backend', client_secret: confidentialSecret, username: 'alice', password: 'wonderland-42' });
    const stolen = await tokenRequest(t.url, 'proto', { grant_type: 'refresh_token', client_id: 'other-app', client_secret: 'other-secret-value', refresh_token: tokens.body.refresh_token as string });
    expect(stolen).toMatchObject({ status: 400, body: { error: 'invalid_grant' } });
  });
});

describe('token verification refuses forged and foreign tokens', () => {
  let good: string;
  beforeAll(async () => {
    const r = await tokenRequest(t.url, 'proto', { grant_type: 'password', client_id: 'backend', client_secret: confidentialSecret, username: 'alice', password: 'wonderland-42' });
    good = r.body.access_token as string;
  });
  const userinfo = async (token: string) => (await api(t.url, 'GET', '/realms/proto/protocol/openid-connect/userinfo', token)).status;

  it('accepts the genuine token (the checks below can fail)', async () => {
    expect(await userinfo(good)).toBe(200);
  });

  it('refuses alg none', async () => {
    const [, payload] = good.split('.');
    const header = Buffer.from(JSON.stringify({ alg: 'none', typ: 'JWT', kid: decodeProtectedHeader(good).kid })).toString('base64url');
    expect(await userinfo(`${header}.${payload}.`)).toBe(401);
  });

  it('refuses a token signed by another key under the same kid', async () => {
    const { privateKey } = await generateKeyPair('RS256');
    const forged = await new SignJWT(decodeJwt(good)).setProtectedHeader({ alg: 'RS256', kid: decodeProtectedHeader(good).kid }).sign(privateKey);
    expect(await userinfo(forged)).toBe(401);
  });

  it('refuses an HMAC token (algorithm confusion)', async () => {
    const forged = await new SignJWT(decodeJwt(good)).setProtectedHeader({ alg: 'HS256', kid: decodeProtectedHeader(good).kid }).sign(new TextEncoder().encode('x'.repeat(32)));
    expect(await userinfo(forged)).toBe(401);
  });

  it('refuses an expired token signed with the realm key', async () => {
    const realm = await t.server.context.storage.realms.byName('proto');
    const key = await t.server.context.keys.signingKey(realm!.id);
    const now = Math.floor(Date.now() / 1000);
    const expired = await new SignJWT({ ...decodeJwt(good), iat: now - 600, exp: now - 300 }).setProtectedHeader({ alg: 'RS256', kid: key.kid }).sign(key.key);
    expect(await userinfo(expired)).toBe(401);
  });

  it("refuses another realm's token", async () => {
    const other = await tokenRequest(t.url, 'elsewhere', { grant_type: 'password', client_id: 'admin-cli', username: 'bob', password: 'bob-password-1' });
    expect(other.status).toBe(200);
    expect(await userinfo(other.body.access_token as string)).toBe(401);
  });

  it('refuses a tampered payload', async () => {
    const [header, payload, signature] = good.split('.');
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString());
    claims.realm_access.roles.push('admin');
    const tampered = `${header}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}.${signature}`;
    expect(await userinfo(tampered)).toBe(401);
  });

  it('refuses a refresh token used as an access token', async () => {
    const r = await tokenRequest(t.url, 'proto', { grant_type: 'password', client_id: 'backend', client_secret: confidentialSecret, username: 'alice', password: 'wonderland-42' });
    expect(await userinfo(r.body.refresh_token as string)).toBe(401);
  });
});

describe('refresh tokens are MACed with the realm\'s HS512 key, as Keycloak\'s', () => {
  const password = () => tokenRequest(t.url, 'proto', { grant_type: 'password', client_id: 'backend', client_secret: confidentialSecret, username: 'alice', password: 'wonderland-42' });
  const refresh = (token: string) => tokenRequest(t.url, 'proto', { grant_type: 'refresh_token', client_id: 'backend', client_secret: confidentialSecret, refresh_token: token });
  const realmKeys = async () => {
    const realm = await t.server.context.storage.realms.byName('proto');
    return { realm: realm!, keys: t.server.context.keys };
  };

  it('HS512 under a kid the JWKS does not publish; it refreshes (the checks below can fail)', async () => {
    const r = await password();
    const header = decodeProtectedHeader(r.body.refresh_token as string);
    expect(header).toMatchObject({ alg: 'HS512', typ: 'JWT' });
    const jwks = (await api(t.url, 'GET', '/realms/proto/protocol/openid-connect/certs', null)).body as { keys: { kid: string }[] };
    expect(jwks.keys.map((k) => k.kid)).not.toContain(header.kid);
    expect(decodeJwt(r.body.refresh_token as string)).toMatchObject({ typ: 'Refresh', azp: 'backend', sub: userId });
    expect((await refresh(r.body.refresh_token as string)).status).toBe(200);
  });

  it('refuses a refresh token MACed with another secret, or with the realm\'s public key as the secret', async () => {
    const claims = decodeJwt((await password()).body.refresh_token as string);
    const { kid } = decodeProtectedHeader((await password()).body.refresh_token as string);
    const wrong = await new SignJWT(claims).setProtectedHeader({ alg: 'HS512', typ: 'JWT', kid }).sign(new TextEncoder().encode('y'.repeat(64)));
    expect(await refresh(wrong)).toMatchObject({ status: 400, body: { error: 'invalid_grant' } });
    const jwks = (await api(t.url, 'GET', '/realms/proto/protocol/openid-connect/certs', null)).body as { keys: { kid: string; n: string }[] };
    const confused = await new SignJWT(claims).setProtectedHeader({ alg: 'HS512', typ: 'JWT', kid: jwks.keys[0].kid }).sign(new TextEncoder().encode(jwks.keys[0].n));
    expect(await refresh(confused)).toMatchObject({ status: 400, body: { error: 'invalid_grant' } });
  });

  it('an access token MACed with the real refresh-token key is refused: HS512 is for refresh tokens only', async () => {
    const { realm, keys } = await realmKeys();
    const key = (await keys.refreshTokenKey(realm.id))!;
    const access = decodeJwt((await password()).body.access_token as string);
    const forged = await new SignJWT(access).setProtectedHeader({ alg: 'HS512', typ: 'JWT', kid: key.kid }).sign(key.secret);
    expect((await api(t.url, 'GET', '/realms/proto/protocol/openid-connect/userinfo', forged)).status).toBe(401);
    expect((await api(t.url, 'GET', '/admin/realms/proto/users', forged)).status).toBe(401);
  });

  it('a refresh token signed RS256 by the realm key (as issued before) still refreshes', async () => {
    const { realm, keys } = await realmKeys();
    const claims = decodeJwt((await password()).body.refresh_token as string);
    const key = await keys.signingKey(realm.id);
    const legacy = await new SignJWT(claims).setProtectedHeader({ alg: 'RS256', typ: 'JWT', kid: key.kid }).sign(key.key);
    expect((await refresh(legacy)).status).toBe(200);
  });

  it('after the realm key rotates, the refresh tokens MACed before still refresh, and new ones carry the new kid', async () => {
    // Realm `elsewhere`: the later tests read proto's key list.
    const realm = (await t.server.context.storage.realms.byName('elsewhere'))!;
    const login = async () => (await tokenRequest(t.url, 'elsewhere', { grant_type: 'password', client_id: 'admin-cli', username: 'bob', password: 'bob-password-1' })).body.refresh_token as string;
    const refreshed = async (token: string) => (await tokenRequest(t.url, 'elsewhere', { grant_type: 'refresh_token', client_id: 'admin-cli', refresh_token: token })).status;
    const before = await login();
    await t.server.context.keys.rotate(realm.id);
    expect(await refreshed(before)).toBe(200);
    const after = await login();
    expect(decodeProtectedHeader(after).kid).not.toBe(decodeProtectedHeader(before).kid);
    expect(await refreshed(after)).toBe(200);
  });
});

describe('verifyEmail realms', () => {
  it('refuses the password grant while the e-mail is unverified, as Keycloak does', async () => {
    const kc = await masterAdminClient(t.url);
    await kc.realms.create({ realm: 'verified-only', enabled: true, verifyEmail: true });
    kc.setConfig({ realmName: 'verified-only' });
    await kc.users.create({ username: 'unverified', email: 'u@example.com', emailVerified: false, enabled: true, credentials: [{ type: 'password', value: 'pass-word-1' }] });
    await kc.users.create({ username: 'verified', email: 'v@example.com', emailVerified: true, enabled: true, credentials: [{ type: 'password', value: 'pass-word-1' }] });
    const grant = (username: string) => tokenRequest(t.url, 'verified-only', { grant_type: 'password', client_id: 'admin-cli', username, password: 'pass-word-1' });
    expect(await grant('unverified')).toMatchObject({ status: 400, body: { error: 'invalid_grant', error_description: 'Account is not fully set up' } });
    expect((await grant('verified')).status).toBe(200);
  });
});

describe('key rotation', () => {
  it('signs with the new key while tokens of the old one still verify, and lists both', async () => {
    const before = await tokenRequest(t.url, 'proto', { grant_type: 'client_credentials', client_id: 'backend', client_secret: confidentialSecret });
    const oldKid = decodeProtectedHeader(before.body.access_token as string).kid;
    const realm = await t.server.context.storage.realms.byName('proto');
    const newKid = await t.server.context.keys.rotate(realm!.id);
    expect(newKid).not.toBe(oldKid);
    const after = await tokenRequest(t.url, 'proto', { grant_type: 'client_credentials', client_id: 'backend', client_secret: confidentialSecret });
    expect(decodeProtectedHeader(after.body.access_token as string).kid).toBe(newKid);
    for (const token of [before.body.access_token, after.body.access_token] as string[]) {
      expect((await api(t.url, 'GET', '/realms/proto/protocol/openid-connect/userinfo', token)).status).toBe(200);
    }
    const jwks = await (await fetch(`${t.url}/realms/proto/protocol/openid-connect/certs`)).json();
    expect(jwks.keys.map((k: { kid: string }) => k.kid)).toEqual([newKid, oldKid]);
    const kc = await masterAdminClient(t.url);
    const keys = await kc.realms.getKeys({ realm: 'proto' });
    expect(keys.active).toEqual({ RS256: newKid });
    expect(keys.keys?.map((k) => [k.kid, k.status])).toEqual([[newKid, 'ACTIVE'], [oldKid, 'PASSIVE']]);
    expect(keys.keys?.[0].publicKey).toMatch(/^MII/);
  });
});
