import { SignJWT, calculateJwkThumbprint, createRemoteJWKSet, decodeJwt, exportJWK, generateKeyPair, jwtVerify } from 'jose';
import * as oidc from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { movableDate, type MovableClock } from './support/clock.js';
import { adminToken, api, eventually, startServer, tokenRequest, type TestServer } from './support/server.js';

/**
 * Issue 40, item 2: token exchange as Keycloak 26.7.3's standard (V2) one, internal to internal. `spa` signs dina
 * in; its access token has `gateway`, `off`, `pub` and `refresher` in its audience (audience mappers). `gateway`
 * trades it for its own token, for `backend` (in gateway's own audience) or down-scoped; every widening refused.
 */
const REALM = 'xchg';
const OTHER = 'xchg-other';
const PASSWORD = 'Exchange-password-4';
const GRANT = 'urn:ietf:params:oauth:grant-type:token-exchange';
const ACCESS = 'urn:ietf:params:oauth:token-type:access_token';
const REFRESH = 'urn:ietf:params:oauth:token-type:refresh_token';
const ID = 'urn:ietf:params:oauth:token-type:id_token';
const ON = { 'standard.token.exchange.enabled': 'true' };

let t: TestServer;
let admin: string;
let clock: MovableClock;
const basic = (id: string) => ({ authorization: `Basic ${Buffer.from(`${id}:${id}-secret`).toString('base64')}` });
const audienceMapper = (name: string, audience: string) => ({
  name, protocol: 'openid-connect', protocolMapper: 'oidc-audience-mapper', config: { 'included.client.audience': audience, 'access.token.claim': 'true' },
});

async function setUpRealm(realm: string): Promise<void> {
  const ok = (response: { status: number; body: unknown }) => expect(response.status, JSON.stringify(response.body)).toBeLessThan(300);
  ok(await api(t.url, 'POST', '/admin/realms', admin, { realm, enabled: true, eventsEnabled: true }));
  const confidential = (clientId: string, attributes: Record<string, string> = {}) =>
    api(t.url, 'POST', `/admin/realms/${realm}/clients`, admin, { clientId, publicClient: false, secret: `${clientId}-secret`, serviceAccountsEnabled: true, attributes });
  ok(await confidential('backend'));
  ok(await confidential('gateway', ON));
  ok(await confidential('off'));
  ok(await confidential('stranger', ON));
  ok(await confidential('refresher', { ...ON, 'standard.token.exchange.enableRefreshRequestedTokenType': 'SAME_SESSION' }));
  ok(await api(t.url, 'POST', `/admin/realms/${realm}/clients`, admin, { clientId: 'pub', publicClient: true, attributes: ON }));
  ok(await api(t.url, 'POST', `/admin/realms/${realm}/clients`, admin, { clientId: 'spa', publicClient: true, directAccessGrantsEnabled: true }));
  const id = async (clientId: string) => (await api(t.url, 'GET', `/admin/realms/${realm}/clients?clientId=${clientId}`, admin)).body[0].id as string;
  for (const audience of ['gateway', 'off', 'pub', 'refresher']) {
    ok(await api(t.url, 'POST', `/admin/realms/${realm}/clients/${await id('spa')}/protocol-mappers/models`, admin, audienceMapper(`aud-${audience}`, audience)));
  }
  ok(await api(t.url, 'POST', `/admin/realms/${realm}/clients/${await id('gateway')}/protocol-mappers/models`, admin, audienceMapper('aud-backend', 'backend')));
  ok(await api(t.url, 'POST', `/admin/realms/${realm}/users`, admin, { username: 'dina', email: 'dina@example.com', emailVerified: true, firstName: 'Dina', lastName: 'Lee', enabled: true, credentials: [{ type: 'password', value: PASSWORD }] }));
}

/** dina's access token from `spa` (password grant), with `scope`. */
async function subjectToken(realm = REALM, scope = 'openid phone'): Promise<string> {
  const response = await tokenRequest(t.url, realm, { grant_type: 'password', client_id: 'spa', username: 'dina', password: PASSWORD, scope });
  expect(response.status, JSON.stringify(response.body)).toBe(200);
  return response.body.access_token as string;
}

const exchange = (clientId: string, subject: string, extra: Record<string, string> | URLSearchParams = {}, realm = REALM) => {
  const form = new URLSearchParams({ grant_type: GRANT, subject_token: subject, subject_token_type: ACCESS });
  for (const [k, v] of extra instanceof URLSearchParams ? extra : Object.entries(extra)) form.append(k, v);
  const headers = clientId === 'pub' ? {} : basic(clientId);
  if (clientId === 'pub') form.set('client_id', 'pub');
  return fetch(`${t.url}/realms/${realm}/protocol/openid-connect/token`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers }, body: form })
    .then(async (r) => ({ status: r.status, body: (await r.json()) as Record<string, any> }));
};

const events = (type: string) => api(t.url, 'GET', `/admin/realms/${REALM}/events?type=${type}&max=100`, admin).then((r) => r.body as { clientId: string; error?: string; details: Record<string, string> }[]);

describe('token exchange (standard V2)', () => {
  beforeAll(async () => {
    clock = movableDate();
    t = await startServer();
    admin = await adminToken(t.url);
    await setUpRealm(REALM);
    await setUpRealm(OTHER);
  });
  afterAll(async () => {
    await t?.close();
    clock.restore();
  });

  describe('as an attacker', () => {
    it('a client with the switch off is refused', async () => {
      const response = await exchange('off', await subjectToken());
      expect(response).toMatchObject({ status: 400, body: { error: 'invalid_request', error_description: 'Standard token exchange is not enabled for the requested client' } });
    });

    it('a client outside the subject token audience is refused (403 access_denied)', async () => {
      const response = await exchange('stranger', await subjectToken());
      expect(response).toMatchObject({ status: 403, body: { error: 'access_denied', error_description: 'Client is not within the token audience' } });
    });

    it('an audience the requester would not have is refused, never added', async () => {
      // stranger is a client of the realm, but not in gateway's own token's audience.
      const response = await exchange('gateway', await subjectToken(), { audience: 'stranger' });
      expect(response).toMatchObject({ status: 400, body: { error: 'invalid_request', error_description: 'Requested audience not available: stranger' } });
      const both = await exchange('gateway', await subjectToken(), new URLSearchParams([['audience', 'backend'], ['audience', 'stranger']]));
      expect(both.status).toBe(400);
    });

    it('a refused exchange leaves the requester no part in the user session', async () => {
      const subject = await subjectToken();
      const { sid, sub } = decodeJwt(subject) as { sid: string; sub: string };
      expect((await exchange('gateway', subject, { audience: 'stranger' })).status).toBe(400);
      const sessions = (await api(t.url, 'GET', `/admin/realms/${REALM}/users/${sub}/sessions`, admin)).body as { id: string; clients: Record<string, string> }[];
      const session = sessions.find((s) => s.id === sid)!;
      expect(Object.values(session.clients)).toEqual(['spa']);
      // The same request that succeeds gives gateway its part (the check above can fail).
      expect((await exchange('gateway', subject, { audience: 'backend' })).status).toBe(200);
      const after = (await api(t.url, 'GET', `/admin/realms/${REALM}/users/${sub}/sessions`, admin)).body as { id: string; clients: Record<string, string> }[];
      expect(Object.values(after.find((s) => s.id === sid)!.clients).sort()).toEqual(['gateway', 'spa']);
    });

    it('a DPoP-bound subject token of another client is refused (sender-constrained)', async () => {
      const keys = (await generateKeyPair('ES256', { extractable: true })) as CryptoKeyPair;
      const htu = `${t.server.context.config.hostname ?? t.url}/realms/${REALM}/protocol/openid-connect/token`;
      const dpop = await new SignJWT({ jti: crypto.randomUUID(), htm: 'POST', htu, iat: Math.floor(Date.now() / 1000) })
        .setProtectedHeader({ alg: 'ES256', typ: 'dpop+jwt', jwk: await exportJWK(keys.publicKey) })
        .sign(keys.privateKey);
      const bound = await tokenRequest(t.url, REALM, { grant_type: 'password', client_id: 'spa', username: 'dina', password: PASSWORD, scope: 'openid' }, { dpop });
      expect(bound.body.token_type).toBe('DPoP');
      const response = await exchange('gateway', bound.body.access_token as string);
      expect(response).toMatchObject({ status: 400, body: { error: 'invalid_request', error_description: 'Sender-constrained token exchange rejected as the token was not issued for the requesting client' } });
    });

    it('an unknown audience is refused', async () => {
      const response = await exchange('gateway', await subjectToken(), { audience: 'nobody' });
      expect(response).toMatchObject({ status: 400, body: { error: 'invalid_client', error_description: 'Audience not found' } });
    });

    it('a scope the subject token lacks is refused, and one the requester lacks', async () => {
      const widened = await exchange('gateway', await subjectToken(REALM, 'openid'), { scope: 'phone' });
      expect(widened).toMatchObject({ status: 400, body: { error: 'invalid_scope' } });
      const unknown = await exchange('gateway', await subjectToken(), { scope: 'admin-everything' });
      expect(unknown).toMatchObject({ status: 400, body: { error: 'invalid_scope', error_description: 'Invalid scopes: admin-everything' } });
    });

    it('a token of another realm, an expired-looking or garbage one is refused', async () => {
      expect(await exchange('gateway', await subjectToken(OTHER))).toMatchObject({ status: 400, body: { error: 'invalid_request', error_description: 'Invalid token' } });
      expect(await exchange('gateway', 'not.a.token')).toMatchObject({ status: 400, body: { error: 'invalid_request', error_description: 'Invalid token' } });
      // A real token with its payload changed (exp in the past): the signature no longer holds.
      const [h, p, s] = (await subjectToken()).split('.');
      const payload = { ...JSON.parse(Buffer.from(p, 'base64url').toString()), exp: 1 };
      expect((await exchange('gateway', `${h}.${Buffer.from(JSON.stringify(payload)).toString('base64url')}.${s}`)).status).toBe(400);
    });

    it('an expired subject token is refused', async () => {
      const subject = await subjectToken();
      clock.pass(((decodeJwt(subject).exp as number) - Math.floor(Date.now() / 1000) + 10) * 1000);
      expect(await exchange('gateway', subject)).toMatchObject({ status: 400, body: { error: 'invalid_request', error_description: 'Invalid token' } });
      admin = await adminToken(t.url); // the admin's token expired too
    });

    it('a token whose session ended is refused', async () => {
      const subject = await subjectToken();
      const sid = decodeJwt(subject).sid as string;
      expect((await api(t.url, 'DELETE', `/admin/realms/${REALM}/sessions/${sid}`, admin)).status).toBe(204);
      expect(await exchange('gateway', subject)).toMatchObject({ status: 400, body: { error_description: 'Invalid token' } });
    });

    it('a public client is refused', async () => {
      const response = await exchange('pub', await subjectToken());
      expect(response).toMatchObject({ status: 400, body: { error: 'invalid_client', error_description: 'Public client is not allowed to exchange token' } });
    });

    it('a refresh token is refused where the client does not allow it', async () => {
      const response = await exchange('gateway', await subjectToken(), { requested_token_type: REFRESH });
      expect(response).toMatchObject({ status: 400, body: { error: 'invalid_request', error_description: 'requested_token_type unsupported' } });
    });

    it('impersonation, external and delegation parameters are refused', async () => {
      for (const name of ['subject_issuer', 'requested_subject', 'requested_issuer', 'actor_token']) {
        const response = await exchange('gateway', await subjectToken(), { [name]: 'x' });
        expect(response).toMatchObject({ status: 400, body: { error: 'invalid_request', error_description: `Parameter '${name}' is not supported for standard token exchange` } });
      }
      const idToken = await exchange('gateway', await subjectToken(), { subject_token_type: 'urn:ietf:params:oauth:token-type:id_token' });
      expect(idToken.status).toBe(400);
    });

    it('records TOKEN_EXCHANGE_ERROR with Keycloak error names', async () => {
      const errors = await eventually(async () => {
        const list = await events('TOKEN_EXCHANGE_ERROR');
        return list.some((e) => e.error === 'not_allowed') && list.some((e) => e.error === 'client_not_found') ? list : null;
      });
      expect(errors.some((e) => e.error === 'invalid_token')).toBe(true);
    });
  });

  it('gateway trades dina’s token for its own, for backend', async () => {
    const subject = await subjectToken();
    const response = await exchange('gateway', subject, { audience: 'backend' });
    expect(response.status, JSON.stringify(response.body)).toBe(200);
    expect(response.body.issued_token_type).toBe(ACCESS);
    expect(response.body.refresh_token).toBeUndefined();
    const claims = decodeJwt(response.body.access_token);
    expect(claims).toMatchObject({ azp: 'gateway', aud: 'backend', sub: decodeJwt(subject).sub, preferred_username: 'dina' });
    // The new token works where an access token is taken (userinfo: the session has gateway's part now).
    const userinfo = await fetch(`${t.url}/realms/${REALM}/protocol/openid-connect/userinfo`, { headers: { authorization: `Bearer ${response.body.access_token}` } });
    expect(userinfo.status).toBe(200);
    const ok = await eventually(async () => (await events('TOKEN_EXCHANGE')).find((e) => e.clientId === 'gateway'));
    expect(ok.details).toMatchObject({ audience: 'backend', subject_token_client_id: 'spa', requested_token_type: ACCESS });
  });

  it('down-scoping: the scope asked for, within the subject token', async () => {
    const subject = await subjectToken(REALM, 'openid phone');
    const withPhone = await exchange('gateway', subject, { scope: 'phone' });
    expect(withPhone.status, JSON.stringify(withPhone.body)).toBe(200);
    expect(String(decodeJwt(withPhone.body.access_token).scope).split(' ')).toContain('phone');
    const without = await exchange('gateway', subject);
    expect(String(decodeJwt(without.body.access_token).scope).split(' ')).not.toContain('phone');
  });

  it('a refresh token where the client allows it, and it refreshes', async () => {
    const response = await exchange('refresher', await subjectToken(), { requested_token_type: REFRESH });
    expect(response.status, JSON.stringify(response.body)).toBe(200);
    expect(response.body.issued_token_type).toBe(REFRESH);
    expect(response.body.refresh_token).toBeTruthy();
    const refreshed = await tokenRequest(t.url, REALM, { grant_type: 'refresh_token', refresh_token: response.body.refresh_token }, basic('refresher'));
    expect(refreshed.status, JSON.stringify(refreshed.body)).toBe(200);
    expect(decodeJwt(refreshed.body.access_token as string).azp).toBe('refresher');
  });

  it('never an offline token: offline_access with a refresh token is refused (asked for, or a default scope); an access token only names it', async () => {
    const refused = await exchange('refresher', await subjectToken(), { requested_token_type: REFRESH, scope: 'offline_access' });
    expect(refused).toEqual({ status: 400, body: { error: 'invalid_request', error_description: 'Scope offline_access not allowed for token exchange' } });
    const errors = await events('TOKEN_EXCHANGE_ERROR');
    expect(errors.some((e) => e.clientId === 'refresher' && e.details.reason === 'Scope offline_access not allowed for token exchange')).toBe(true);
    // As Keycloak 26.7.3: the access token's scope lists it, and nothing offline comes with it.
    const access = await exchange('refresher', await subjectToken(), { scope: 'offline_access' });
    expect(access.status, JSON.stringify(access.body)).toBe(200);
    expect(String(access.body.scope).split(' ')).toContain('offline_access');
    expect(access.body.refresh_token).toBeUndefined();
    const { sub } = decodeJwt(access.body.access_token as string) as { sub: string };
    const refresherId = (await api(t.url, 'GET', `/admin/realms/${REALM}/clients?clientId=refresher`, admin)).body[0].id as string;
    expect((await api(t.url, 'GET', `/admin/realms/${REALM}/users/${sub}/offline-sessions/${refresherId}`, admin)).body).toEqual([]);
    // offline_access among the requester's default scopes: every refresh token it would get is offline, so refused.
    const offlineScope = ((await api(t.url, 'GET', `/admin/realms/${REALM}/client-scopes`, admin)).body as { id: string; name: string }[]).find((c) => c.name === 'offline_access')!;
    expect((await api(t.url, 'DELETE', `/admin/realms/${REALM}/clients/${refresherId}/optional-client-scopes/${offlineScope.id}`, admin)).status).toBe(204);
    expect((await api(t.url, 'PUT', `/admin/realms/${REALM}/clients/${refresherId}/default-client-scopes/${offlineScope.id}`, admin)).status).toBe(204);
    try {
      expect((await exchange('refresher', await subjectToken(), { requested_token_type: REFRESH })).body.error_description).toBe('Scope offline_access not allowed for token exchange');
    } finally {
      await api(t.url, 'DELETE', `/admin/realms/${REALM}/clients/${refresherId}/default-client-scopes/${offlineScope.id}`, admin);
      await api(t.url, 'PUT', `/admin/realms/${REALM}/clients/${refresherId}/optional-client-scopes/${offlineScope.id}`, admin);
    }
    expect((await exchange('refresher', await subjectToken(), { requested_token_type: REFRESH })).status).toBe(200);
  });

  it('with openid-client (genericGrantRequest) and a DPoP proof: the new token is bound to its key', async () => {
    const config = await oidc.discovery(new URL(`${t.url}/realms/${REALM}`), 'gateway', undefined, oidc.ClientSecretBasic('gateway-secret'), { execute: [oidc.allowInsecureRequests] });
    expect(config.serverMetadata().grant_types_supported).toContain(GRANT);
    const keys = (await generateKeyPair('ES256', { extractable: true })) as CryptoKeyPair;
    const answer = await oidc.genericGrantRequest(config, GRANT, { subject_token: await subjectToken(), subject_token_type: ACCESS, audience: 'backend' }, { DPoP: oidc.getDPoPHandle(config, keys) });
    expect(answer.token_type.toLowerCase()).toBe('dpop');
    expect(answer.issued_token_type).toBe(ACCESS);
    const claims = decodeJwt(answer.access_token);
    expect(claims.aud).toBe('backend');
    expect((claims.cnf as { jkt: string }).jkt).toBe(await calculateJwkThumbprint(await exportJWK(keys.publicKey), 'sha256'));
  });
  describe('requested_token_type id_token (as Keycloak 26: the ID token in access_token, token_type N_A)', () => {
    it('openid-client: gateway asks for an ID token of dina, signed by the realm, for gateway, without at_hash or other tokens', async () => {
      const config = await oidc.discovery(new URL(`${t.url}/realms/${REALM}`), 'gateway', undefined, oidc.ClientSecretBasic('gateway-secret'), { execute: [oidc.allowInsecureRequests] });
      const subject = await subjectToken(REALM, 'openid');
      const answer = await oidc.genericGrantRequest(config, GRANT, { subject_token: subject, subject_token_type: ACCESS, requested_token_type: ID });
      expect(answer.issued_token_type).toBe(ID);
      expect(answer.token_type.toUpperCase()).toBe('N_A');
      expect(answer.refresh_token).toBeUndefined();
      expect(answer.id_token).toBeUndefined();
      const { payload } = await jwtVerify(answer.access_token, createRemoteJWKSet(new URL(`${t.url}/realms/${REALM}/protocol/openid-connect/certs`)), { issuer: `${t.url}/realms/${REALM}`, audience: 'gateway' });
      expect(payload).toMatchObject({ typ: 'ID', azp: 'gateway', sub: decodeJwt(subject).sub, preferred_username: 'dina' });
      expect(payload.at_hash).toBeUndefined();
    });

    it('without openid in any scope, still an ID token (Keycloak generates it for this type)', async () => {
      const response = await exchange('gateway', await subjectToken(REALM, 'phone'), { requested_token_type: ID });
      expect(response.status, JSON.stringify(response.body)).toBe(200);
      expect(decodeJwt(response.body.access_token).typ).toBe('ID');
    });

    it('attacker: asking for more than the subject token had is refused for an ID token too', async () => {
      const subject = await subjectToken(REALM, 'openid');
      expect(await exchange('gateway', subject, { requested_token_type: ID, audience: 'stranger' })).toMatchObject({
        status: 400,
        body: { error: 'invalid_request', error_description: 'Requested audience not available: stranger' },
      });
      expect(await exchange('gateway', subject, { requested_token_type: ID, scope: 'phone' })).toMatchObject({ status: 400, body: { error: 'invalid_scope' } });
      expect(await exchange('stranger', subject, { requested_token_type: ID })).toMatchObject({ status: 403, body: { error: 'access_denied' } });
      expect(await exchange('gateway', subject, { requested_token_type: 'urn:ietf:params:oauth:token-type:saml2' })).toMatchObject({
        status: 400,
        body: { error: 'invalid_request', error_description: 'requested_token_type unsupported' },
      });
    });
  });
});
